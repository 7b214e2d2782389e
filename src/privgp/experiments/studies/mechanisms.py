"""Three mechanisms that release a function, at the same (epsilon, delta), on the same tasks.

Posterior sampling (seed 000), the functional mechanism (seed 002: posterior mean + c g) and the DP
sparse GP (seed 001: the predictive mean of the noise-aware sparse GP, with its +-2 sd band), with
the non-private posterior mean as the epsilon = inf reference, on: the 1-D GP fields and the 2-D
plume fields of seed 000 (App. D, D.1) and the Baltimore house sales (reference: the non-private
posterior mean of the private half). Design, neighbouring relation, hyperparameter choice and
metrics: :mod:`privgp.tasks.comparison`.

Outputs: ``mechanisms.csv``/``.md`` (one row per task, mechanism and epsilon: mean and standard
error of RMSE, IoU, band coverage and band half-width over all releases; the chosen public
settings), ``pilot.csv`` (every pilot candidate's score), ``mechanisms.png`` (RMSE, IoU and band
coverage against epsilon, one line per mechanism, one column per task) and ``run.json``. All
sweeps go through the executor.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import InvalidParameterError
from ...tasks import comparison as cmp
from ..common import as_tuple, new_figure, save_figure, write_run_record, write_table

TASKS = ("1d", "2d", "baltimore")
PRIVATE = ("posterior_sampling", "functional", "dp_sparse_gp")
SPARSE_NOISE_STDS = (0.03, 0.1, 0.3, 1.0)
#: the first columns of mechanisms.csv (the chosen and used settings follow)
FRONT = ("task", "mechanism", "epsilon", "delta", "releases", "rmse", "rmse_se", "iou", "iou_se", "coverage",
         "coverage_se", "band_half_width", "band_half_width_se", "repaired", "repaired_se")
STYLE = {"posterior_sampling": ("C0", "o", "posterior sampling (seed 000)"),
         "functional": ("C1", "s", "functional mechanism (seed 002)"),
         "dp_sparse_gp": ("C2", "^", "DP sparse GP (seed 001)"),
         "non_private": ("k", None, "non-private posterior mean"),
         "non_private_sparse_gp": ("C2", None, "non-private sparse GP (same settings search)")}


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
    noise_stds = (0.3,) if quick else SPARSE_NOISE_STDS

    # -- stage 1: pilot selection (one job per candidate), all tasks and epsilons in one map -------------
    settings = []   # (task, mechanism, epsilon, candidates); seeds follow the position in this list
    for tname, w in wl.items():
        ells = w.lengthscales[::2] if quick else w.lengthscales
        settings.append((tname, "non_private", math.inf, cmp.candidates("non_private", ells, ridges=ridges)))
        for mech in PRIVATE[:2]:
            c = cmp.candidates(mech, ells, sigmas=sigmas, ridges=ridges)
            for e in epsilons:
                settings.append((tname, mech, e, c))
    # the DP sparse GP was added after the first run: appended last, so that the two-mechanism
    # settings keep their seeds (and their results) from that run
    for tname, w in wl.items():
        c = cmp.candidates("dp_sparse_gp", w.lengthscales[::2] if quick else w.lengthscales, noise_stds=noise_stds,
                           inducing=(w.inducing[0], w.inducing[-1]) if quick else w.inducing)
        for e in epsilons:
            settings.append((tname, "dp_sparse_gp", e, c))
    for tname, w in wl.items():   # and its noise-free reference (Titsias), last as well
        c = cmp.candidates("non_private_sparse_gp", w.lengthscales[::2] if quick else w.lengthscales,
                           noise_stds=noise_stds, inducing=(w.inducing[0], w.inducing[-1]) if quick else w.inducing)
        settings.append((tname, "non_private_sparse_gp", math.inf, c))
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
        for cand, r in zip(cands, res):
            pilot_rows.append({"task": tname, "mechanism": mech, "epsilon": e, **cand,
                               "pilot_rmse": float(np.mean(r["metrics"]["rmse"])), "chosen": cand == best})

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
    rank = {m: i for i, m in enumerate(("non_private", "non_private_sparse_gp") + PRIVATE)}
    for si in sorted(range(len(settings)), key=lambda i: (list(wl).index(settings[i][0]), rank[settings[i][1]], settings[i][2])):
        tname, mech, e, _ = settings[si]
        parts = [r for r, o in zip(results, owner) if o == si]
        used = parts[0]["used"]
        rows.append({"task": wl[tname].name, "mechanism": mech, "epsilon": e, "delta": delta if not math.isinf(e) else math.nan,
                     **cmp.summarise(parts), **{f"chosen_{k}": val for k, val in chosen[si].items()},
                     **{f"used_{k}": val for k, val in used.items()}, "status": "ok"})
    table = pd.DataFrame(rows)
    front = [c for c in FRONT if c in table.columns]
    table = table[front + [c for c in table.columns if c not in front]]
    write_table(table, out_dir, "mechanisms", floatfmt=".4g")
    write_table(pd.DataFrame(pilot_rows), out_dir, "pilot", floatfmt=".4g")
    png = _plot(table, wl, out_dir / "mechanisms.png", delta)

    ok = table[table["status"] == "ok"]
    best = {}
    for (task, e), g in ok[np.isfinite(ok["epsilon"])].groupby(["task", "epsilon"]):
        i = g["rmse"].idxmin()
        best[f"{task} @ eps={e:g}"] = {"lowest_rmse": g.loc[i, "mechanism"], "rmse": float(g.loc[i, "rmse"]),
                                       "highest_iou": g.loc[g["iou"].idxmax(), "mechanism"],
                                       "rmse_by_mechanism": {m: float(x) for m, x in zip(g["mechanism"], g["rmse"])}}
    summary = {"png": str(png), "rows": int(len(table)), "best": best}
    config = {"epsilons": list(epsilons), "delta": delta, "datasets": datasets, "pilot": pilot, "tasks": list(tasks),
              "chunk": chunk, "sigma_candidates": list(sigmas), "ridge_candidates": [float(r) for r in ridges],
              "sparse_gp_kernel_candidates": list(cmp.SPARSE_GP_KERNELS),
              "sparse_gp_noise_std_candidates": list(noise_stds),
              "sparse_gp_inducing_candidates": "per task, inducing_candidates in workloads (points along the "
                                               "longest side of the box, a regular grid over it)"
                                               + (" (quick: first and last)" if quick else ""),
              "workloads": {k: w.describe() for k, w in wl.items()}, "quick": quick, "seed": seed,
              "selection": "per task and epsilon, the pilot candidate with the smallest mean RMSE to the pilot reference",
              "neighbouring_relation": "replace-one, public n, |y| <= 1, for all three mechanisms",
              "posterior_sampling": "L = 1, eta = 0, r = smallest certified at epsilon (improved conversion), proven constants",
              "functional": "c = Delta_n(r) / mu(epsilon, delta) (Thm 4.1), Delta_n via Lemma B.7 (1-D) / B.1 (2-D)",
              "dp_sparse_gp": "seed 001 Alg. 1 via plan_sparse_gp: R_y = 1, R_k auto (tightest proven), sigma_a = sigma_b, "
                              "rho = 0.01, S_2 symmetric, exact Gaussian calibration; released function = predictive "
                              "mean, band = mean -+ 2 sd (latent f)"}
    write_run_record(out_dir, "mechanisms", config, summary, round(time.perf_counter() - t0, 1))
    return summary


def _plot(table: pd.DataFrame, wl, path: Path, delta: float) -> Path:
    """Rows: RMSE, excursion IoU, band coverage (mechanisms with a band) against epsilon; one column per task."""
    tasks = [w.name for w in wl.values()]
    rows = (("rmse", "RMSE to "), ("iou", "excursion IoU"), ("coverage", "band coverage of "))
    fig, axes = new_figure(len(rows), len(tasks), figsize=(4.6 * len(tasks), 10.2), squeeze=False)
    for j, (key, task) in enumerate(zip(wl, tasks)):
        truth = wl[key].reference.startswith("true")
        sub = table[(table["task"] == task) & (table["status"] == "ok")]
        for i, (metric, ylabel) in enumerate(rows):
            ax = axes[i, j]
            for mech, g in sub.groupby("mechanism", sort=False):
                if metric not in g or not np.isfinite(g[metric]).any():
                    continue
                color, marker, label = STYLE[mech]
                if mech.startswith("non_private"):
                    ax.axhline(float(g[metric].iloc[0]), color=color, ls="--", lw=1.2, label=label)
                    continue
                g = g.sort_values("epsilon")
                ax.errorbar(g["epsilon"], g[metric], yerr=1.96 * g[metric + "_se"], color=color, marker=marker,
                            lw=1.6, ms=4, capsize=2, label=label)
            if metric == "coverage":
                ax.axhline(0.95, color="0.4", ls=":", lw=1.0, label="nominal 0.95")
                ax.set_ylim(0, 1.02)
            ax.set_xscale("log")
            eps = sorted(e for e in sub["epsilon"].unique() if np.isfinite(e))
            ax.set_xticks(eps, [f"{e:g}" for e in eps])
            ax.xaxis.set_minor_formatter("")
            ax.grid(True, which="both", alpha=0.3)
            ax.set_xlabel(f"epsilon (delta = {delta:g})")
            ref = "f*" if truth else "non-private mean"
            ax.set_ylabel(ylabel + (ref if ylabel.endswith("of ") or ylabel.endswith("to ") else ""))
        axes[0, j].set_title(task, fontsize=10)
        if not truth:
            axes[2, j].text(0.5, 0.03, "reference is not the truth: not a calibration check", fontsize=8,
                            ha="center", transform=axes[2, j].transAxes)
    axes[0, 0].legend(fontsize=7)
    axes[2, 0].legend(fontsize=7)
    return save_figure(fig, path)
