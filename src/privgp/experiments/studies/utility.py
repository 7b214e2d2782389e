"""``privgp experiment utility``: which mechanism publishes the most useful map, measured on data with a
known answer (issue "Maps worth publishing"; the library part is :mod:`privgp.tasks.utility_study`).

Grid: n in {10^2, ..., 10^6} x epsilon in {0.5, 1, 2, 5, 10}, delta = 1e-7 fixed (<= min(1e-6, 1/(10 n)) at
every n), three synthetic field families (bump, blobs, rough) on the unit square, every release
mechanism at its default public settings, plus the embedded Baltimore sales (n = 211). ``reps`` data sets
per (family, n) up to n = 10^4 (default 20) and ``reps_large`` above (default 5); every data set is
released by every mechanism at every epsilon (paired). The tuned settings of ``auto`` come from pilot
simulations with their own seeds (scripts/tune_auto_grid.py), never from these data sets.

Outputs: ``releases.csv`` (one row per release), ``summary.csv/.md`` (mean and standard error per family,
n, epsilon, mechanism), ``which.csv/.md`` (per n and epsilon: mean IoU over the families of every
mechanism, the best seed mechanism, auto's margin over it and over the grid baseline), ``baltimore.csv/.md``,
``which_mechanism.png`` and ``run.json``. ``--quick``: n in {10^2, 10^3}, epsilon in {1, 5}, 2 data sets.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...datasets.fields import FAMILIES, SyntheticField
from ...models.domain import Box
from ...tasks.utility_study import IDENTITY, MECHANISMS, PILOT_CANDIDATES, TUNED, pilot_scores, release_scores
from ..common import as_tuple, new_figure, save_figure, write_run_record, write_table

NS = (100, 1_000, 10_000, 100_000, 1_000_000)
EPSILONS = (0.5, 1.0, 2.0, 5.0, 10.0)
DELTA = 1e-7
GRID = 41
STUDY_SEED = 424242
#: the pilot data sets of the pilot-tuned GP mechanisms use other seeds than the evaluation
PILOT_SEED_OFFSET = 1_000_003
PILOT_REPS = 2


def _synthetic_job(job: tuple) -> list[dict]:
    family, n, rep, epsilons, mechanisms, seed, settings = job
    rng = np.random.default_rng(np.random.SeedSequence([seed, FAMILIES.index(family), n, rep]))
    field = SyntheticField(family, Box.unit(2))
    X, y = field.records(n, rng)
    rows = release_scores(X, y, field.domain, IDENTITY, mechanisms, epsilons, DELTA, GRID, rng, truth=field,
                          settings=settings)
    return [{"family": family, "n": n, "rep": rep, **r} for r in rows]


def _pilot_job(job: tuple) -> list[dict]:
    family, n, rep, epsilons, seed = job
    rng = np.random.default_rng(np.random.SeedSequence([seed + PILOT_SEED_OFFSET, FAMILIES.index(family), n, rep]))
    field = SyntheticField(family, Box.unit(2))
    X, y = field.records(n, rng)
    return [{"family": family, "n": n, **r} for r in pilot_scores(X, y, field, epsilons, DELTA, GRID, rng)]


def choose_pilot_settings(pilot: pd.DataFrame) -> dict:
    """(mechanism, n, epsilon) -> the candidate with the best mean pilot IoU (over families and data sets)."""
    out = {}
    mean = pilot.groupby(["mechanism", "n", "epsilon", "candidate"])["iou"].mean().reset_index()
    for (mech, n, eps), part in mean.groupby(["mechanism", "n", "epsilon"]):
        best = int(part.sort_values(["iou", "candidate"], ascending=[False, True]).iloc[0]["candidate"])
        out[(mech, int(n), float(eps))] = PILOT_CANDIDATES[mech][best]
    return out


def _baltimore_job(job: tuple) -> list[dict]:
    from ...datasets.baltimore import PUBLIC_BOX
    from ...datasets.tabular import load_embedded_baltimore
    from ...mechanisms.release import ResponseMap

    rep, epsilons, mechanisms, seed = job
    data = load_embedded_baltimore()
    rng = np.random.default_rng(np.random.SeedSequence([seed, 99, rep]))
    rmap = ResponseMap(threshold=50.0, clip=1.0, transform="log")
    rows = release_scores(np.asarray(data.X, float), np.asarray(data.response, float), PUBLIC_BOX, rmap, mechanisms,
                          epsilons, DELTA, GRID, rng, truth=None)
    return [{"family": "baltimore", "n": data.n, "rep": rep, **r} for r in rows]


def _majority_share() -> float:
    """Share of the Baltimore sales on the majority side of the $50k threshold: what the trivial constant map
    ("the majority side everywhere") scores on ``records_correct_side``."""
    from ...datasets.tabular import load_embedded_baltimore

    above = float(np.mean(np.asarray(load_embedded_baltimore().response, dtype=float) > 50.0))
    return max(above, 1.0 - above)


def _mean_se(df: pd.DataFrame, keys: list[str], cols: list[str]) -> pd.DataFrame:
    g = df.groupby(keys, sort=False)
    out = g[cols].mean()
    se = g[cols].std(ddof=1) / np.sqrt(g.size().to_numpy()[:, None])
    for c in cols:
        out[c + "_se"] = se[c]
    out["releases"] = g.size()
    return out.reset_index()


def which_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Per (n, epsilon): every mechanism's IoU averaged over the synthetic families (se combined), the best
    seed/single mechanism, auto's margin over the best single mechanism and over the grid baseline."""
    syn = summary[summary["family"] != "baltimore"]
    rows = []
    for (n, eps), part in syn.groupby(["n", "epsilon"], sort=True):
        row: dict[str, Any] = {"n": int(n), "epsilon": float(eps)}
        for mech, m in part.groupby("mechanism"):
            row[mech] = float(m["iou"].mean())
            row[mech + "_se"] = float(np.sqrt(np.sum(m["iou_se"] ** 2)) / len(m))
        singles = [m for m in MECHANISMS + TUNED if m != "auto" and m in row]
        best = max(singles, key=lambda m: row[m])
        row["best_single"] = best
        if "auto" in row:
            row["auto_minus_best"] = row["auto"] - row[best]
            row["auto_minus_grid"] = row["auto"] - row.get("grid", math.nan)
            row["auto_ok"] = bool(row["auto_minus_best"] >= -0.03 and row["auto_minus_grid"] >= 0)
        rows.append(row)
    return pd.DataFrame(rows)


#: short legend labels (a mechanism not listed is labelled by its name)
SHORT = {"posterior-sample": "post. sample", "sparse-gp": "sparse GP", "functional": "functional",
         "discretised-gaussian": "eq. 37", "grid": "grid (8 cells)", "laplace-grid": "Laplace grid (8 cells)",
         "auto": "auto",
         "posterior-sample:pilot": "post. sample (pilot-tuned)", "sparse-gp:pilot": "sparse GP (pilot-tuned)"}


def _plot(which: pd.DataFrame, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig, axes = new_figure(1, 2, figsize=(14, 5.2), layout="constrained")
    ns = sorted(which["n"].unique())
    eps = sorted(which["epsilon"].unique())
    mechs = [m for m in MECHANISMS + TUNED if m in which.columns]
    cmap = plt.get_cmap("tab20" if len(mechs) > 10 else "tab10")
    colours = {m: cmap(i % cmap.N) for i, m in enumerate(mechs)}
    ax = axes[0]
    for m in mechs:
        for j, e in enumerate((eps[-1], eps[0])):
            part = which[which["epsilon"] == e].sort_values("n")
            ax.errorbar(part["n"], part[m], yerr=part[m + "_se"], marker="o", ms=3, capsize=2, color=colours[m],
                        ls="-" if j == 0 else ":", lw=2.2 if m == "auto" else 1.3,
                        label=SHORT.get(m, m) if j == 0 else None)
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("records n")
    ax.set_ylabel("excursion IoU against the truth\n(mean over bump, blobs, rough; \u00b1 1 se)")
    ax.set_title(f"solid: \u03b5 = {eps[-1]:g}, dotted: \u03b5 = {eps[0]:g} (\u03b4 = {DELTA:g})", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax = axes[1]
    grid = np.full((len(eps), len(ns)), np.nan)
    best = {}
    for _, r in which.iterrows():
        i, j = eps.index(r["epsilon"]), ns.index(r["n"])
        grid[i, j] = r[r["best_single"]]
        best[(i, j)] = (r["best_single"], r.get("auto", math.nan))
    im = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0, vmax=1, aspect="auto")
    for (i, j), (m, a) in best.items():
        label = SHORT.get(m, m).replace(" (", "\n(")
        ax.text(j, i, f"{label}\n{grid[i, j]:.2f}\nauto {a:.2f}", ha="center", va="center", fontsize=7.5,
                color="white" if grid[i, j] < 0.6 else "black")
    ax.set_xticks(range(len(ns)), [f"$10^{int(round(math.log10(n)))}$" for n in ns])
    ax.set_yticks(range(len(eps)), [f"{e:g}" for e in eps])
    ax.set_xlabel("records n")
    ax.set_ylabel("\u03b5")
    ax.set_title("which mechanism when: the best seed/baseline mechanism\n(its IoU) and auto's IoU", fontsize=10)
    fig.colorbar(im, ax=ax, label="IoU of the best single mechanism")
    return save_figure(fig, path)


def run(out_dir: Path, *, quick: bool, executor, seed: int = 0, ns=None, epsilons=None, reps: int | None = None,
        reps_large: int | None = None, families=FAMILIES, mechanisms=MECHANISMS + TUNED,
        baltimore_reps: int | None = None) -> dict:
    """The utility study (module docstring)."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    ns = tuple(int(x) for x in as_tuple(ns)) if ns is not None else ((100, 1_000) if quick else NS)
    epsilons = tuple(float(e) for e in as_tuple(epsilons)) if epsilons is not None else ((1.0, 5.0) if quick else EPSILONS)
    reps = (2 if quick else 20) if reps is None else int(reps)
    reps_large = (2 if quick else 5) if reps_large is None else int(reps_large)
    baltimore_reps = (2 if quick else 20) if baltimore_reps is None else int(baltimore_reps)
    families = tuple(as_tuple(families))
    mechanisms = tuple(as_tuple(mechanisms))
    base = STUDY_SEED + seed
    # the largest data sets first, so that the pool's tail is short
    settings: dict = {}
    tuned = [m for m in mechanisms if m in TUNED]
    if tuned:   # stage 1: pilot data sets (own seeds) choose the tuned mechanisms' public settings
        pjobs = [(f, n, r, epsilons, base) for n in sorted(ns, reverse=True) for f in families
                 for r in range(1 if quick else PILOT_REPS)]
        pilot = pd.DataFrame([row for p in executor.map(_pilot_job, pjobs, desc="utility study (pilot)") for row in p])
        pilot = pilot[pilot["mechanism"].isin(tuned)]
        settings = choose_pilot_settings(pilot)
        chosen = pd.DataFrame([{"mechanism": m, "n": n, "epsilon": e, **p} for (m, n, e), p in sorted(settings.items())])
        write_table(chosen, out_dir, "pilot_choices")
    jobs = [(f, n, r, epsilons, mechanisms, base, settings) for n in sorted(ns, reverse=True) for f in families
            for r in range(reps if n <= 10_000 else reps_large)]
    parts = executor.map(_synthetic_job, jobs, desc="utility study")
    balt = executor.map(_baltimore_job, [(r, epsilons, tuple(m for m in mechanisms if m not in TUNED), base)
                                         for r in range(baltimore_reps)],
                        desc="utility study (Baltimore)")
    releases = pd.DataFrame([row for p in parts + balt for row in p])
    releases.to_csv(out_dir / "releases.csv", index=False)
    syn = releases[releases["family"] != "baltimore"]
    summary = _mean_se(syn, ["family", "n", "epsilon", "mechanism"], ["iou", "rmse", "iou_nonprivate"])
    write_table(summary, out_dir, "summary")
    which = which_table(summary)
    write_table(which, out_dir, "which")
    bal = _mean_se(releases[releases["family"] == "baltimore"], ["epsilon", "mechanism"],
                   ["iou_nonprivate", "rmse_nonprivate", "records_correct_side"])
    write_table(bal, out_dir, "baltimore")
    fig = _plot(which, out_dir / "which_mechanism.png")
    seconds = time.perf_counter() - t0
    config = {"pilot_candidates": {m: list(c) for m, c in PILOT_CANDIDATES.items()}, "pilot_reps": PILOT_REPS,
              "ns": list(ns), "epsilons": list(epsilons), "delta": DELTA, "grid": GRID, "families": list(families),
              "mechanisms": list(mechanisms), "reps": reps, "reps_large": reps_large, "baltimore_reps": baltimore_reps,
              "seed": base, "quick": quick}
    ok = which.get("auto_ok")
    summ = {"cells": len(which), "auto_ok_cells": None if ok is None else int(ok.sum()),
            "releases": len(releases), "baltimore_majority_side_share": _majority_share()}
    write_run_record(out_dir, "utility", config, summ, seconds)
    return {"releases": len(releases), "which": str(out_dir / "which.md"), "figure": str(fig), "seconds": seconds, **summ}
