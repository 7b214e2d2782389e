"""Three mechanisms that release a function, at the same (epsilon, delta), on the same tasks.

Posterior sampling (seed 000), the functional mechanism (seed 002: posterior mean + c g) and the DP
sparse GP (seed 001; its column is a slot until that mechanism is on main), with the non-private
posterior mean as the epsilon = inf reference, on: the 1-D GP fields and the 2-D plume fields of
seed 000 (App. D, D.1) and the Baltimore house sales (reference: the non-private posterior mean
of the private half). Design, hyperparameter choice and metrics: :mod:`privgp.tasks.comparison`.

Outputs: ``mechanisms.csv``/``.md`` (one row per task, mechanism and epsilon: mean and standard
error of RMSE, IoU and band coverage over all releases; the chosen public settings), ``pilot.csv``
(every pilot candidate's score), ``mechanisms.png`` (RMSE and IoU against epsilon, one line per
mechanism, one column per task) and ``run.json``. All sweeps go through the executor.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InvalidParameterError
from ..tasks import comparison as cmp
from .common import as_tuple, new_figure, save_figure, write_run_record, write_table

TASKS = ("1d", "2d", "baltimore")
PRIVATE = ("posterior_sampling", "functional")
STYLE = {"posterior_sampling": ("C0", "o", "posterior sampling (seed 000)"),
         "functional": ("C1", "s", "functional mechanism (seed 002)"),
         "dp_sparse_gp": ("C2", "^", "DP sparse GP (seed 001)"),
         "non_private": ("k", None, "non-private posterior mean")}


def _workloads(tasks, quick: bool, datasets: int, pilot: int, seed: int) -> dict[str, cmp.Workload]:
    out = {}
    for i, name in enumerate(tasks):
        rng = np.random.default_rng(np.random.SeedSequence([seed, 12, i]))
        if name == "1d":
            out[name] = cmp.synthetic_1d(datasets, pilot, n=100, grid=101 if quick else 201, rng=rng)
        elif name == "2d":
            out[name] = cmp.synthetic_2d(datasets, pilot, n=400, grid=21 if quick else 41, rng=rng)
        elif name == "baltimore":
            out[name] = cmp.baltimore(datasets, max(2, pilot // 3), grid=31 if quick else 61, split_seed=seed)
        else:
            raise InvalidParameterError("tasks", f"a subset of {TASKS}", name)
    return out


def run(out_dir: Path, *, quick: bool, executor, seed: int = 0, epsilons=(0.5, 1.0, 2.0, 4.0, 8.0, 16.0),
        delta: float = 1e-3, datasets: int | None = None, pilot: int | None = None, tasks=TASKS, chunk: int = 20) -> dict:
    """The comparison (module docstring). ``datasets``: evaluation datasets per task (Baltimore: releases
    of its one private dataset); ``pilot``: pilot datasets (Baltimore: pilot releases x3)."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    epsilons = tuple(float(e) for e in as_tuple(epsilons))
    if quick:
        epsilons = epsilons if len(epsilons) <= 2 else (1.0, 8.0)
    tasks = tuple(str(t) for t in as_tuple(tasks))
    datasets = (6 if quick else 200) if datasets is None else int(datasets)
    pilot = (3 if quick else 24) if pilot is None else int(pilot)
    wl = _workloads(tasks, quick, datasets, pilot, seed)
    ridges = (0.3, 3.0) if quick else tuple(np.geomspace(0.1, 30.0, 10).round(4))
    sigmas = (0.1, 1.0) if quick else (0.03, 0.1, 0.3, 1.0)

    # -- stage 1: pilot selection (one job per candidate), all tasks and epsilons in one map -------------
    settings = []   # (task, mechanism, epsilon)
    for tname, w in wl.items():
        ells = w.lengthscales[::2] if quick else w.lengthscales
        settings.append((tname, "non_private", math.inf, cmp.candidates("non_private", ells, ridges=ridges)))
        for mech in PRIVATE:
            c = cmp.candidates(mech, ells, sigmas=sigmas, ridges=ridges)
            for e in epsilons:
                settings.append((tname, mech, e, c))
    jobs, owner = [], []
    for si, (tname, mech, e, cands) in enumerate(settings):
        eps_job = 1.0 if math.isinf(e) else e  # non-private ignores epsilon
        for j in cmp.pilot_jobs(wl[tname], mech, cands, eps_job, delta, [seed, 13, si]):
            jobs.append(j)
            owner.append(si)
    results = executor.map(cmp.evaluate_job, jobs, desc="pilot")
    chosen, pilot_rows = {}, []
    for si, (tname, mech, e, cands) in enumerate(settings):
        res = [r for r, o in zip(results, owner) if o == si]
        best, score = cmp.choose(cands, res)
        chosen[si] = best
        for c, r in zip(cands, res):
            pilot_rows.append({"task": tname, "mechanism": mech, "epsilon": e, **c,
                               "pilot_rmse": float(np.mean(r["metrics"]["rmse"])), "chosen": c == best})

    # -- stage 2: evaluation on the evaluation datasets ----------------------------------------------------
    jobs, owner = [], []
    for si, (tname, mech, e, _) in enumerate(settings):
        w = wl[tname]
        B = w.X.shape[0]
        per = max(1, chunk // w.repeats) if w.repeats > 1 else chunk
        if w.repeats > 1:  # one dataset released many times: split the repeats instead
            for ci, lo in enumerate(range(0, w.repeats, chunk)):
                w_c = cmp.with_repeats(w, min(chunk, w.repeats - lo))
                jobs.append((cmp.batch_of(w_c, np.arange(B)), mech, chosen[si], 1.0 if math.isinf(e) else e, delta,
                             [seed, 14, si, ci]))
                owner.append(si)
        else:
            for ci, lo in enumerate(range(0, B, per)):
                jobs.append((cmp.batch_of(w, np.arange(lo, min(B, lo + per))), mech, chosen[si],
                             1.0 if math.isinf(e) else e, delta, [seed, 14, si, ci]))
                owner.append(si)
    results = executor.map(cmp.evaluate_job, jobs, desc="releases")
    rows = []
    for si, (tname, mech, e, _) in enumerate(settings):
        parts = [r for r, o in zip(results, owner) if o == si]
        used = parts[0]["used"]
        rows.append({"task": wl[tname].name, "mechanism": mech, "epsilon": e, "delta": delta if not math.isinf(e) else math.nan,
                     **cmp.summarise(parts), **{f"chosen_{k}": val for k, val in chosen[si].items()},
                     **{f"used_{k}": val for k, val in used.items()}, "status": "ok"})
    for tname, w in wl.items():
        for e in epsilons:
            rows.append({"task": w.name, "mechanism": "dp_sparse_gp", "epsilon": e, "delta": delta,
                         "status": "pending: " + cmp.PENDING["dp_sparse_gp"]})
    table = pd.DataFrame(rows)
    write_table(table, out_dir, "mechanisms", floatfmt=".4g")
    write_table(pd.DataFrame(pilot_rows), out_dir, "pilot", floatfmt=".4g")
    png = _plot(table, wl, out_dir / "mechanisms.png", delta)

    ok = table[table["status"] == "ok"]
    best = {}
    for (task, e), g in ok[np.isfinite(ok["epsilon"])].groupby(["task", "epsilon"]):
        i = g["rmse"].idxmin()
        best[f"{task} @ eps={e:g}"] = {"lowest_rmse": g.loc[i, "mechanism"], "rmse": float(g.loc[i, "rmse"]),
                                       "highest_iou": g.loc[g["iou"].idxmax(), "mechanism"]}
    summary = {"png": str(png), "rows": int(len(table)), "best": best,
               "dp_sparse_gp": "pending: " + cmp.PENDING["dp_sparse_gp"]}
    config = {"epsilons": list(epsilons), "delta": delta, "datasets": datasets, "pilot": pilot, "tasks": list(tasks),
              "chunk": chunk, "sigma_candidates": list(sigmas), "ridge_candidates": [float(r) for r in ridges],
              "workloads": {k: w.describe() for k, w in wl.items()}, "quick": quick, "seed": seed,
              "selection": "per task and epsilon, the pilot candidate with the smallest mean RMSE to the pilot reference",
              "posterior_sampling": "L = 1, eta = 0, r = smallest certified at epsilon (improved conversion), proven constants",
              "functional": "c = Delta_n(r) / mu(epsilon, delta) (Thm 4.1), Delta_n via Lemma B.7 (1-D) / B.1 (2-D)"}
    write_run_record(out_dir, "mechanisms", config, summary, round(time.perf_counter() - t0, 1))
    return summary


def _plot(table: pd.DataFrame, wl, path: Path, delta: float) -> Path:
    tasks = [w.name for w in wl.values()]
    fig, axes = new_figure(2, len(tasks), figsize=(4.6 * len(tasks), 7.2), squeeze=False)
    for j, task in enumerate(tasks):
        sub = table[(table["task"] == task) & (table["status"] == "ok")]
        for metric, ax in (("rmse", axes[0, j]), ("iou", axes[1, j])):
            for mech, g in sub.groupby("mechanism", sort=False):
                color, marker, label = STYLE[mech]
                if mech == "non_private":
                    ax.axhline(float(g[metric].iloc[0]), color=color, ls="--", lw=1.2, label=label)
                    continue
                g = g.sort_values("epsilon")
                ax.errorbar(g["epsilon"], g[metric], yerr=1.96 * g[metric + "_se"], color=color, marker=marker,
                            lw=1.6, ms=4, capsize=2, label=label)
            ax.plot([], [], color=STYLE["dp_sparse_gp"][0], marker="^", ls=":", label="DP sparse GP (seed 001): pending")
            ax.set_xscale("log")
            ax.grid(True, which="both", alpha=0.3)
            ax.set_xlabel(f"epsilon (delta = {delta:g})")
        axes[0, j].set_title(task, fontsize=10)
        axes[0, j].set_ylabel("RMSE to " + ("f*" if wl[list(wl)[j]].reference.startswith("true") else "non-private mean"))
        axes[1, j].set_ylabel("excursion IoU")
    axes[0, 0].legend(fontsize=7)
    return save_figure(fig, path)
