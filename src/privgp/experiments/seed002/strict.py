"""Seed 002, Figures S6-S7 (stricter privacy: eps in {1/3, 1}, delta in {1e-5, 1e-3}) with the
shipped DPConvCNP, i.e. without the paper's retraining, or with a model retrained on the stricter budgets
(``checkpoint``; ``seed002-train --set epsilon=1/3,1 --set delta=1e-5``): the training mu range is read from
the checkpoint's schedule, and ``paired.csv`` sets that model against the shipped one on the same tasks and
release-noise seeds (mean difference and standard error).

The paper trains new amortised models on eps ~ U[1/3, 1] at fixed delta = 1e-5 or 1e-3 for these
figures. The shipped model was trained on eps ~ U[0.9, 4] at delta = 1e-3 (mu = gdp_mu(eps, delta) in
[0.36, 1.21]); three of the four (eps, delta) pairs here have mu below that range (0.10, 0.15, 0.27), so
the model and its amortised C(mu, N), t(mu, N) are evaluated outside what they were trained on.

``seed002-s6`` scores, per family (EQ l = 0.71, sawtooth 1/tau = 0.5; contexts U[-2, 2], 512 targets in
[-2, 2]) and per (eps, delta, N): the shipped DPConvCNP, the oracle (exact GP for EQ; the noise floor
for the sawtooth), the context-free predictive N(0, v) with v the family's marginal variance (a model
worse than it has learnt nothing usable from the release), and on EQ the Fig. S1 lower-bound model at the
shipped model's own C, t (:mod:`.gap`). Figure S7's analogue (``fits.png``): one context set per family
and N, released at eps = 1/3 and 1 with delta = 1e-5.
"""
from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from ...formatting import format_upper
from ..common import as_tuple, new_figure, save_figure, write_run_record, write_table
from .gap import BOUND, BOUND_OTHER
from .nn import COLORS, _model, _spec, _torch, draw_fit

#: marginal variance of y: EQ s_v^2 + s_n^2; sawtooth (2/pi)^2 (1 + 1/4) / 2 + s_n^2 (two harmonics)
MARGINAL_VAR = {"eq": 1.0 + 0.2**2, "sawtooth": (2 / math.pi) ** 2 * (1 + 0.25) / 2 + 0.2**2}


def _training_budget(checkpoint: str | None) -> tuple[float, float, float]:
    """The eps range and delta the model was trained on (its checkpoint's schedule; §5.1's defaults where the
    schedule does not name them, as for the shipped model)."""
    from ...nn.pretrained import training_record
    from ...nn.tasks import DELTA, EPSILON_RANGE

    train = training_record(checkpoint).get("train_config", {})
    lo, hi = train.get("epsilon", EPSILON_RANGE)
    return float(lo), float(hi), float(train.get("delta", DELTA))


def s6(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, families=("eq", "sawtooth"),
       eps_values=(1 / 3, 1.0), deltas=(1e-5, 1e-3), n_values=(25, 50, 100, 200), tasks: int = 256,
       n_target: int = 512, fit_n_values=(25, 100, 200), eq_lengthscale: float = 0.71,
       sawtooth_frequency: float = 0.5, checkpoint: str | None = None, threads: int = 1) -> dict:
    """NLL per target point at the stricter (eps, delta) of Figs. S6 and example fits (Fig. S7)."""
    torch = _torch(threads)
    from ...accounting.gaussian import gdp_mu
    from ...nn.evaluate import dpconvcnp_nll, mean_ci, oracle_nll, paired_mean_se
    from ...nn.model import gaussian_nll, noise_scales
    from ...nn.tasks import sample_batch
    from .gap import _bound_nll

    if quick:
        eps_values, deltas, n_values, tasks, n_target, fit_n_values = (1 / 3,), (1e-5,), (16,), 4, 16, (16,)
    model = _model(checkpoint)
    shipped = _model(None) if checkpoint is not None else None   # scored on the same tasks, for the paired table
    paired: list[dict] = []
    eps_lo, eps_hi, delta_t = _training_budget(checkpoint)
    mu_lo, mu_hi = float(gdp_mu(eps_lo, delta_t)), float(gdp_mu(eps_hi, delta_t))
    bound = BOUND if checkpoint is None else BOUND_OTHER
    lam = float(model.encoder.lengthscale.detach())
    grid = model.encoder.grid.double().numpy()
    with torch.no_grad():
        factor = model.encoder.noise_factor().numpy()
    t0 = time.perf_counter()
    rows = []
    k = 0
    for fam in as_tuple(families):
        base = _spec(fam, eq_lengthscale, sawtooth_frequency)
        for delta in as_tuple(deltas):
            for eps in as_tuple(eps_values):
                spec = replace(base, delta=float(delta)).fixed(epsilon=float(eps))
                for n in as_tuple(n_values):
                    b = sample_batch(spec, tasks, int(n), n_target, torch.Generator().manual_seed(seed * 1000 + 900 + 17 * k))
                    k += 1
                    vals = {"DPConvCNP": dpconvcnp_nll(model, b, torch.Generator().manual_seed(seed + 1)),
                            "oracle": oracle_nll(b)}
                    yt = b.yt.double().numpy()
                    v = MARGINAL_VAR[fam]
                    vals["context-free"] = gaussian_nll(yt, 0.0, math.sqrt(v)).mean(1)
                    if fam == "eq":
                        with torch.no_grad():
                            noise = model.encoder.sample_noise(tasks, torch.Generator().manual_seed(seed + 1))[:, 0].numpy()
                            c, t = model.encoder.clip_and_split(b.mu, torch.full((tasks,), float(n)))
                            s_sig, _ = noise_scales(b.mu.double() * (1 - 1e-12), c.double(), t.double())
                        vals.update(_bound_nll(b, grid, lam, {bound: s_sig.numpy()}, noise, factor))
                    mu = float(gdp_mu(float(eps), float(delta)))
                    if shipped is not None:
                        ship = dpconvcnp_nll(shipped, b, torch.Generator().manual_seed(seed + 1))
                        d, se = paired_mean_se(vals["DPConvCNP"], ship)
                        paired.append({"family": fam, "epsilon": float(eps), "delta": float(delta), "N": int(n),
                                       "tasks": len(ship), "shipped": float(np.mean(ship)),
                                       "this model": float(np.mean(vals["DPConvCNP"])),
                                       "this model - shipped": d, "se": se})
                    for method, arr in vals.items():
                        m, ci = mean_ci(arr)
                        rows.append({"family": fam, "epsilon": float(eps), "delta": float(delta), "N": int(n), "mu": mu,
                                     "in_training_range": bool(mu_lo <= mu <= mu_hi), "method": method, "nll": m,
                                     "ci95": ci, "tasks": len(arr)})
    df = pd.DataFrame(rows)
    write_table(df, out_dir, "s6")
    if paired:
        write_table(pd.DataFrame(paired), out_dir, "paired")
    (Path(out_dir) / "page_s6.md").write_text(_page(df))
    _plot(df, Path(out_dir) / "s6.png")
    _fits(model, Path(out_dir) / "fits.png", as_tuple(families), as_tuple(eps_values), as_tuple(fit_n_values),
          min(as_tuple(deltas)), eq_lengthscale, sawtooth_frequency, seed)
    config = {"families": as_tuple(families), "eps_values": as_tuple(eps_values), "deltas": as_tuple(deltas),
              "n_values": as_tuple(n_values), "tasks": tasks, "n_target": n_target, "fit_n_values": as_tuple(fit_n_values),
              "eq_lengthscale": eq_lengthscale, "sawtooth_frequency": sawtooth_frequency,
              "context_range": [-2, 2], "target_range": [-2, 2], "marginal_var": MARGINAL_VAR,
              "training_mu_range": [mu_lo, mu_hi], "training_budget": {"epsilon": [eps_lo, eps_hi], "delta": delta_t},
              "checkpoint": checkpoint or "shipped", "seed": seed, "quick": quick,
              "threads": threads}
    write_run_record(out_dir, "seed002-s6", config, {"nll": rows, "paired": paired}, seconds=time.perf_counter() - t0)
    return {"rows": len(rows)}


def _pm(mean: float, half: float) -> str:
    return f"{mean:.3f} ± {half:.3f}".replace("-", "−")


def _page(df: pd.DataFrame) -> str:
    methods = ["DPConvCNP", "context-free", BOUND if BOUND in set(df.method) else BOUND_OTHER, "oracle"]
    head = ["family", "ε", "δ", "N", "μ", "μ in training range", *methods]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (fam, eps, delta, n), g in df.groupby(["family", "epsilon", "delta", "N"], sort=False):
        g = g.set_index("method")
        cells = [fam, "1/3" if abs(eps - 1 / 3) < 1e-12 else format_upper(eps, 6), format_upper(delta, 6), str(n),
                 format_upper(g['mu'].iloc[0], 3),
                 "yes" if g["in_training_range"].iloc[0] else "no"]
        cells += [_pm(g.loc[m, "nll"], g.loc[m, "ci95"]) if m in g.index else "—" for m in methods]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _plot(df: pd.DataFrame, path: Path) -> None:
    from matplotlib.ticker import NullFormatter

    fams = list(dict.fromkeys(df.family))
    settings = list(dict.fromkeys(zip(df.epsilon, df.delta)))
    fig, axes = new_figure(len(fams), len(settings), figsize=(3.4 * len(settings), 3.0 * len(fams)), squeeze=False,
                           sharey="row")
    colors = {**COLORS, "context-free": "tab:red", BOUND: "tab:gray", BOUND_OTHER: "tab:gray"}
    for i, fam in enumerate(fams):
        for j, (eps, delta) in enumerate(settings):
            ax = axes[i][j]
            sub = df[(df.family == fam) & (df.epsilon == eps) & (df.delta == delta)]
            for method, g in sub.groupby("method", sort=False):
                g = g.sort_values("N")
                ax.errorbar(g["N"], g["nll"], yerr=g["ci95"], marker="o", ms=3, capsize=2, label=method,
                            color=colors.get(method))
            ax.set_xscale("log")
            ns = sorted(set(sub.N))
            ax.set_xticks(ns)
            ax.set_xticklabels([str(n) for n in ns])
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_title(f"{fam}: eps = {format_upper(eps)}, delta = {format_upper(delta, 6)}", fontsize=9)
            ax.set_xlabel("N")
            if j == 0:
                ax.set_ylabel("NLL per target point")
    axes[0][0].legend(fontsize=6)
    save_figure(fig, path)


def _fits(model, path: Path, fams, epss, n_values, delta: float, eq_lengthscale: float, sawtooth_frequency: float,
          seed: int) -> None:
    """Fig. S7 analogue: rows (family, eps), columns N; one context set per (family, N)."""
    import torch

    from ...nn.tasks import sample_batch

    rows = [(f, e) for f in fams for e in epss]
    fig, axes = new_figure(len(rows), len(n_values), figsize=(3.8 * len(n_values), 2.6 * len(rows)), squeeze=False)
    xt = np.linspace(-2.5, 2.5, 400)
    for i, (fam, eps) in enumerate(rows):
        spec = _spec(fam, eq_lengthscale, sawtooth_frequency)
        for j, n in enumerate(n_values):
            b = sample_batch(spec, 1, int(n), 200, torch.Generator().manual_seed(seed + 53 * j + (0 if fam == "eq" else 7)))
            xc, yc = b.xc[0].numpy(), b.yc[0].numpy()
            rep, _ = model.release(xc, yc, float(eps), delta, generator=torch.Generator().manual_seed(seed + 100 * i + j))
            m, s = model.predict(rep, xt)
            ax = axes[i][j]
            draw_fit(ax, fam, b, xt, m, s, oracle_band=False, context_size=5)
            ax.set_title(f"{fam}, N = {n}, eps = {format_upper(eps)}, delta = {format_upper(delta, 6)}", fontsize=8)
            ax.set_ylim(-3.5, 3.5)
            if i == 0 and j == 0:
                ax.legend(fontsize=6, loc="lower left")
    save_figure(fig, path)
