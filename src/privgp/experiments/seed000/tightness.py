"""The tightness table: how loose each part of the seed-000 certificate is where epsilon is moderate.

Settings with a certified epsilon between 0.5 and 10 (delta = 1e-3, proven constants, improved
conversion): for each kernel/dimension/noise combination the ridge r is calibrated to a target
epsilon (1, 3 or 8) with :func:`privgp.mechanisms.posterior_sample.calibrate_r`, so the table covers
the regime where an audit can say something (in the Figure 2 sweep the certified epsilon is mostly
10^2 .. 10^9). Per setting (:func:`privgp.audit.tightness.settings.audit_setting`):

* epsilon certified, and with the published constants (NOT covered by the lemmas);
* epsilon of the worst neighbouring pair found by the adversarial search at the certificate's order:
  its exact Renyi curve (eq. 12, L-fold) converted the same way, minimised over alpha;
* the likelihood-ratio test on that pair: a 95%-confidence LOWER bound on epsilon (and the point
  estimate at the same threshold); for the 1-D exponential kernel also the membership game's attacks
  (LiRA ``paper`` and ``exact``; x0 = 1/2, M_xi = 0, uniform covariates);
* the ratios found / bound of the mean term and of the covariance term at that order (separate
  searches), and the largest mean shift ||mu_D - mu_D'||_{H_-} found against the proven Delta_n and
  the published one (Delta_n / sqrt 2).

Every searched value is a lower estimate of a supremum, so each ratio says at most how loose a part
is: a ratio near 1 means that part of the bound is tight.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ...models.domain import Box
from ...models.kernels import make_kernel
from ..common import new_figure, save_figure, write_run_record, write_table

DELTA = 1e-3
#: (label, kernel, lengthscale, dim, n, sigma, L, sensitivity, target epsilon)
SETTINGS = (
    ("exp-1d B.7 eps1", "exponential", 1.0, 1, 10, 1.0, 1, "exp1d", 1.0),
    ("exp-1d B.7 eps3", "exponential", 1.0, 1, 10, 1.0, 1, "exp1d", 3.0),
    ("exp-1d B.7 eps8", "exponential", 1.0, 1, 10, 1.0, 1, "exp1d", 8.0),
    ("exp-1d B.7 sigma0.2", "exponential", 1.0, 1, 10, 0.2, 1, "exp1d", 3.0),
    ("exp-1d B.7 sigma=inf", "exponential", 1.0, 1, 10, math.inf, 1, "exp1d", 3.0),
    ("exp-1d B.7 L3", "exponential", 1.0, 1, 10, 1.0, 3, "exp1d", 3.0),
    ("exp-1d B.1", "exponential", 1.0, 1, 10, 1.0, 1, "generic", 3.0),
    ("matern32-1d B.1", "matern32", 0.5, 1, 10, 1.0, 1, "generic", 3.0),
    ("se-1d B.1", "squared_exponential", 0.3, 1, 10, 1.0, 1, "generic", 3.0),
    ("exp-2d B.1", "exponential", 0.5, 2, 10, 1.0, 1, "generic", 3.0),
    ("matern52-2d B.1", "matern52", 0.5, 2, 10, 1.0, 1, "generic", 3.0),
    ("se-2d B.1", "squared_exponential", 0.3, 2, 10, 1.0, 1, "generic", 3.0),
)
QUICK_SETTINGS = (("exp-1d B.7 eps3", "exponential", 1.0, 1, 4, 1.0, 1, "exp1d", 3.0),
                  ("matern52-2d B.1", "matern52", 0.5, 2, 4, 1.0, 1, "generic", 3.0))
FULL = dict(restarts=4, shift_restarts=6, n_samples=200_000, lira_size=10_000, maxiter=150)
QUICK = dict(restarts=1, shift_restarts=1, n_samples=4_000, lira_size=400, maxiter=25, test_points=1)

COLUMNS = (("label", "setting"), ("r", "r"), ("epsilon_certified", "ε certified"),
           ("epsilon_published_not_covered", "ε published (not covered)"), ("epsilon_pair", "ε worst pair"),
           ("epsilon_lr_lower", "LR test ε ≥ (95%)"), ("epsilon_lr_point", "LR test ε (point)"),
           ("lira_paper_lower", "LiRA ε ≥"), ("lira_exact_lower", "exact LiRA ε ≥"),
           ("ratio_epsilon_pair", "ε pair / certified"), ("ratio_mean", "mean found / term"),
           ("ratio_cov", "cov found / term"), ("ratio_Delta_proven", "Δ found / proven"),
           ("ratio_Delta_published", "Δ found / published"))


def _task(item):
    """One row (module level: runs in worker processes)."""
    from ...audit.tightness.settings import audit_setting
    from ...mechanisms.posterior_sample import calibrate_r

    (label, kernel, ell, dim, n, sigma, L, sens, target), sizes, seed = item
    domain = Box.unit(dim)
    r = calibrate_r(target, DELTA, n=n, sigma=sigma, L=L, kernel=kernel, lengthscale=ell, domain=domain,
                    sensitivity=sens).value
    res = audit_setting(kernel=make_kernel(kernel, ell), domain=domain, n=n, r=float(r), sigma=sigma, L=L,
                        delta=DELTA, sensitivity=sens, rng=np.random.default_rng(seed), label=label, **sizes)
    row = res.to_dict()
    row["target_epsilon"] = target
    row["worst_pair"] = res.worst.pair.to_dict()
    return row


def _fmt(x, col):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, str):
        return x
    if col.startswith("ratio"):
        return f"{x:.3f}"
    if col == "r":
        return f"{x:.4g}"
    return f"{x:.3g}"


def markdown(df: pd.DataFrame) -> str:
    """The results-page table (the quoted numbers; tests/test_results_doc.py reads them back)."""
    cols = [(c, h) for c, h in COLUMNS if c in df.columns]
    lines = ["| " + " | ".join(h for _, h in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(_fmt(row[c], c) for c, _ in cols) + " |")
    return "\n".join(lines)


def _plot(df: pd.DataFrame, path: Path) -> Path:
    fig, ax = new_figure(1, 1, figsize=(11, 4.6))
    parts = (("ratio_epsilon_pair", "ε worst pair / ε certified"), ("ratio_lower", "LR lower bound / ε certified"),
             ("ratio_mean", "mean part found / mean term"), ("ratio_cov", "cov part found / cov term"),
             ("ratio_Delta_proven", "Δ found / Δ proven"))
    x = np.arange(len(df))
    w = 0.8 / len(parts)
    for i, (col, lab) in enumerate(parts):
        vals = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
        ax.bar(x + (i - len(parts) / 2 + 0.5) * w, np.nan_to_num(vals), w, label=lab)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(x, df["label"], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("found / certified (1 = tight)")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title(f"Tightness of the certificate (δ = {DELTA:g}, proven constants, improved conversion)", fontsize=10)
    return save_figure(fig, path)


def run(out_dir: Path, *, quick: bool, executor, seed: int = 0) -> dict:
    t0 = time.perf_counter()
    out = Path(out_dir)
    settings = QUICK_SETTINGS if quick else SETTINGS
    sizes = QUICK if quick else FULL
    rows = executor.map(_task, [(s, sizes, seed + i) for i, s in enumerate(settings)], desc="tightness")
    pairs = {row["label"]: row.pop("worst_pair") for row in rows}
    df = pd.DataFrame(rows)
    bad = df[~(df["epsilon_lr_lower"] <= df["epsilon_certified"]) | ~(df["rdp_found"] <= df["rdp_bound"] * (1 + 1e-9))]
    if len(bad):
        raise RuntimeError("a found divergence or an empirical lower bound exceeds the certificate:\n" + bad.to_string())
    write_table(df, out, "tightness")
    (out / "tightness_table.md").write_text(markdown(df) + "\n")
    png = _plot(df, out / "tightness.png")
    summary = {"settings": len(df), "png": png.name,
               "epsilon_certified_range": [float(df["epsilon_certified"].min()), float(df["epsilon_certified"].max())],
               "max_ratio_epsilon_pair": float(df["ratio_epsilon_pair"].max()),
               "max_ratio_lower": float(df["ratio_lower"].max()), "worst_pairs": pairs}
    write_run_record(out, "tightness", {"delta": DELTA, "constants": "proven", "conversion": "improved",
                                        "settings": [list(s) for s in settings], "sizes": sizes, "seed": seed,
                                        "quick": quick}, summary, time.perf_counter() - t0)
    return {k: v for k, v in summary.items() if k != "worst_pairs"}
