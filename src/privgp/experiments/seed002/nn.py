"""Seed 002 (DPConvCNP, Räisä, Markou et al. 2024) experiments of the ``nn`` extra, at reduced scale
(the functional-mechanism experiments of part 1 are in :mod:`.seed002`).

* ``seed002-tune``: Optuna search of the DP-SVGP's DP-SGD settings and initial hyperparameters over
  Table S1's ranges (App. D) on simulated tasks; writes ``dpsvgp_tuned.json``.
* ``seed002-nll``: NLL per target point vs N and vs eps of the DPConvCNP, the DP-SVGP and the
  non-private oracle on EQ-GP and sawtooth tasks (Fig. 6 protocol: contexts U[-2, 2], 512 targets
  in [-2, 2], delta = 1e-3, 95 % intervals over the test tasks), and meta-test time per task (Fig. 5).
* ``seed002-fits``: example fits at several eps (Fig. 2 style).
* ``seed002-sim2real``: the simulated-data model on a real data set (Fig. 7 protocol; sklearn's
  diabetes data instead of the !Kung census, which cannot be downloaded here).

The DPConvCNP is the shipped reduced model (``privgp.nn.pretrained.load``) unless ``checkpoint`` names
another; the DP-SVGP uses the shipped tuned settings unless ``tuned`` names a JSON file.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ... import validation as v
from ..common import as_tuple, import_torch, new_figure, save_figure, write_run_record, write_table

FAMILY_KERNEL = {"eq": "eq", "sawtooth": "periodic", "matern32": "matern32"}
COLORS = {"DPConvCNP": "tab:green", "DP-SVGP": "tab:purple", "oracle": "tab:blue"}


def _torch(threads: int):
    return import_torch("this seed-002 experiment", threads)


def _spec(family: str, eq_lengthscale: float, sawtooth_frequency: float):
    from ...nn.tasks import default_specs

    spec = default_specs(target_range=(-2.0, 2.0))[family]
    if family == "eq":
        return spec.fixed(lengthscale=eq_lengthscale)
    if family == "sawtooth":
        return spec.fixed(frequency=sawtooth_frequency)
    return spec


def _settings(family: str, tuned: str | None):
    from ...nn.dpsvgp import DpsvgpSettings
    from ...nn.evaluate import tuned_settings

    if tuned is None:
        return tuned_settings(family)
    d = json.loads(Path(tuned).read_text())[family]["settings"]
    return DpsvgpSettings(**{**d, "inducing_range": tuple(d["inducing_range"])})


def _model(checkpoint: str | None):
    from ...nn.pretrained import load

    return load(checkpoint)


# ------------------------------------------------------------------------------------------------
def tune(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, families=("eq", "sawtooth"),
         n_trials: int = 16, n_datasets: int = 16, n_context: int = 128, epochs: int = 200,
         eq_lengthscale: float = 0.71, sawtooth_frequency: float = 0.5, threads: int = 1) -> dict:
    """Tune the DP-SVGP per family (App. D) at a reduced budget: ``n_trials`` TPE trials (paper 200),
    ``n_datasets`` simulated context sets of size ``n_context`` with eps ~ U[0.9, 4] (paper 64 with
    N ~ U[1, 512]), epochs fixed to ``epochs`` (Table S1's lower end; the paper tunes 200-1000)."""
    torch = _torch(threads)
    from ...nn.dpsvgp import tune as tune_dpsvgp
    from ...nn.tasks import sample_batch

    if quick:
        n_trials, n_datasets, n_context, epochs = 2, 2, 16, 2
    t0 = time.perf_counter()
    result, rows = {}, []
    for fam in as_tuple(families):
        spec = _spec(fam, eq_lengthscale, sawtooth_frequency)
        b = sample_batch(spec, n_datasets, n_context, 1, torch.Generator().manual_seed(seed + 7))
        t1 = time.perf_counter()
        best, records = tune_dpsvgp(FAMILY_KERNEL[fam], b.xc.double().numpy(), b.yc.double().numpy(),
                                    b.epsilon.double().numpy(), spec.delta, n_trials=n_trials, seed=seed,
                                    fixed={"epochs": epochs})
        result[fam] = {"settings": best.to_dict(), "trials": n_trials, "datasets": n_datasets, "n_context": n_context,
                       "seconds": round(time.perf_counter() - t1, 1),
                       "task": {"lengthscale": eq_lengthscale} if fam == "eq" else {"frequency": sawtooth_frequency}}
        rows += [{"family": fam, **r} for r in records]
    (Path(out_dir) / "dpsvgp_tuned.json").write_text(json.dumps(result, indent=2) + "\n")
    write_table(pd.DataFrame(rows).drop(columns=["inducing_range"]), out_dir, "trials")
    config = {"families": as_tuple(families), "n_trials": n_trials, "n_datasets": n_datasets, "n_context": n_context,
              "epochs": epochs, "eq_lengthscale": eq_lengthscale, "sawtooth_frequency": sawtooth_frequency,
              "epsilon": "U[0.9, 4]", "delta": 1e-3, "quick": quick, "seed": seed}
    write_run_record(out_dir, "seed002-tune", config, result, seconds=time.perf_counter() - t0)
    return {fam: r["settings"] for fam, r in result.items()}


# ------------------------------------------------------------------------------------------------
def nll(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, families=("eq", "sawtooth"),
        n_values=(50, 100, 200, 400), eps_for_n: float = 1.0, eps_values=(1.0, 2.0, 3.0, 4.0), n_for_eps: int = 100,
        tasks: int = 256, n_target: int = 512, dpsvgp: bool = True, dpsvgp_tasks: int | None = None,
        eq_lengthscale: float = 0.71,
        sawtooth_frequency: float = 0.5, timing_repeats: int = 32, dpsvgp_timing_repeats: int = 3,
        checkpoint: str | None = None, tuned: str | None = None, dpsvgp_from: str | None = None,
        threads: int = 1) -> dict:
    """NLL vs N (at eps_for_n) and vs eps (at n_for_eps) for each family and method, and the
    meta-test wall time per task at each N. Every method sees the same test tasks; the DP-SVGP
    (DP-SGD per task, the costly part) runs on the first ``dpsvgp_tasks`` of them (default: all).
    ``dpsvgp_from`` (earlier run directories of this experiment, comma-separated, with the same tasks
    and DP-SVGP settings, checked) reuses their DP-SVGP rows instead of refitting, e.g. after
    retraining the DPConvCNP."""
    torch = _torch(threads)
    from ...nn.evaluate import dpconvcnp_nll, dpsvgp_nll, mean_ci, oracle_nll, time_dpconvcnp, time_dpsvgp
    from ...nn.tasks import TaskBatch, sample_batch

    dpsvgp = v.switch("dpsvgp", dpsvgp)
    if quick:
        n_values, eps_values, n_for_eps, tasks, n_target, timing_repeats, dpsvgp_timing_repeats = (8, 16), (1.0,), 8, 4, 16, 2, 1
    model = _model(checkpoint)
    t0 = time.perf_counter()
    rows, timing = [], []
    same = {"families": as_tuple(families), "n_values": as_tuple(n_values), "eps_for_n": eps_for_n,
            "eps_values": as_tuple(eps_values), "n_for_eps": n_for_eps, "tasks": tasks, "n_target": n_target,
            "eq_lengthscale": eq_lengthscale, "sawtooth_frequency": sawtooth_frequency, "seed": seed,
            "dpsvgp_tasks": min(dpsvgp_tasks or tasks, tasks), "quick": quick,
            "dpsvgp_settings": {f: _settings(f, tuned).to_dict() for f in as_tuple(families)} if dpsvgp else None}
    reused = _reuse_dpsvgp(dpsvgp_from, same) if (dpsvgp and dpsvgp_from) else None
    points = nll_points(n_values, eps_for_n, eps_values, n_for_eps)
    for fam in as_tuple(families):
        spec = _spec(fam, eq_lengthscale, sawtooth_frequency)
        settings = _settings(fam, tuned) if dpsvgp else None
        if quick and settings is not None:
            settings = type(settings)(**{**settings.to_dict(), "epochs": 2, "inducing_range": settings.inducing_range})
        for k, (sweep, n, eps) in enumerate(points):
            g = nll_task_generator(seed, k, fam)
            b = sample_batch(spec.fixed(epsilon=eps), tasks, n, n_target, g)
            res = {"DPConvCNP": dpconvcnp_nll(model, b, torch.Generator().manual_seed(seed + 1)),
                   "oracle": oracle_nll(b)}
            if reused is not None:
                rows += [r for r in reused["nll"] if r["family"] == fam and r["sweep"] == sweep and r["N"] == n
                         and r["epsilon"] == eps]
            elif settings is not None:
                k_sv = min(dpsvgp_tasks or tasks, tasks)
                sub = TaskBatch(b.xc[:k_sv], b.yc[:k_sv], b.xt[:k_sv], b.yt[:k_sv], b.epsilon[:k_sv], b.delta,
                                b.mu[:k_sv], b.family)
                res["DP-SVGP"] = dpsvgp_nll(settings, sub, torch.Generator().manual_seed(seed + 2))
            for method, vals in res.items():
                m, ci = mean_ci(vals)
                rows.append({"family": fam, "sweep": sweep, "N": n, "epsilon": eps, "method": method, "nll": m,
                             "ci95": ci, "tasks": len(vals)})
            if sweep == "N":
                tb = sample_batch(spec.fixed(epsilon=eps), max(timing_repeats, dpsvgp_timing_repeats), n, n_target, g)
                tc = time_dpconvcnp(model, tb, timing_repeats)
                timing.append({"family": fam, "N": n, "method": "DPConvCNP", "seconds_per_task": float(np.median(tc)),
                               "repeats": len(tc)})
                if reused is not None:
                    timing += [r for r in reused["timing"] if r["family"] == fam and r["N"] == n]
                elif settings is not None:
                    ts = time_dpsvgp(settings, tb, dpsvgp_timing_repeats)
                    timing.append({"family": fam, "N": n, "method": "DP-SVGP", "seconds_per_task": float(np.median(ts)),
                                   "repeats": len(ts), "epochs": settings.epochs, "steps": settings.steps(n)})
    df, tdf = pd.DataFrame(rows), pd.DataFrame(timing)
    write_table(df, out_dir, "nll")
    write_table(tdf, out_dir, "timing")
    _plot_nll(df, out_dir / "nll.png", eps_for_n, n_for_eps)
    config = {**same, "delta": 1e-3, "context_range": [-2, 2], "target_range": [-2, 2], "dpsvgp": bool(dpsvgp),
              "checkpoint": checkpoint or "shipped", "tuned": tuned or "shipped", "threads": threads,
              "dpsvgp_from": dpsvgp_from}
    summary = {"nll": rows, "timing": timing}
    write_run_record(out_dir, "seed002-nll", config, summary, seconds=time.perf_counter() - t0)
    return {"rows": len(rows), "timing": timing}


def nll_points(n_values, eps_for_n: float, eps_values, n_for_eps: int) -> list[tuple[str, int, float]]:
    """The (sweep, N, eps) points of ``seed002-nll`` in their order (the k of :func:`nll_task_generator`)."""
    points = [("N", int(n), float(eps_for_n)) for n in as_tuple(n_values)]
    return points + [("epsilon", int(n_for_eps), float(e)) for e in as_tuple(eps_values)]


def nll_task_generator(seed: int, k: int, family: str):
    """The generator that draws ``seed002-nll``'s test tasks of point k (the DPConvCNP's release noise
    comes from a fresh generator seeded ``seed + 1``)."""
    import torch

    return torch.Generator().manual_seed(seed * 1000 + 17 * k + (0 if family == "eq" else 500))


def _reuse_dpsvgp(run_dirs, same: dict) -> dict:
    """DP-SVGP rows of earlier seed002-nll runs (one or several directories, e.g. one per family)
    whose task settings and, family by family, DP-SVGP settings match."""
    from ...errors import InvalidParameterError
    from ...jsonable import to_jsonable

    want = to_jsonable(same)
    out: dict[str, list] = {"nll": [], "timing": []}
    for run_dir in as_tuple(run_dirs):
        cfg = json.loads((Path(run_dir) / "run.json").read_text())
        rec, cfg = cfg, cfg["config"]
        fams = [f for f in cfg["families"] if f in want["families"]]
        bad = [k for k, val in want.items() if k not in ("families", "dpsvgp_settings")
               and json.dumps(cfg.get(k), sort_keys=True) != json.dumps(val, sort_keys=True)]
        bad += [f"dpsvgp_settings[{f}]" for f in fams if json.dumps(cfg["dpsvgp_settings"][f], sort_keys=True)
                != json.dumps(want["dpsvgp_settings"][f], sort_keys=True)]
        if bad or not fams:
            raise InvalidParameterError("dpsvgp_from", f"seed002-nll runs with the same {bad or 'families'}", run_dir)
        out["nll"] += [r for r in rec["summary"]["nll"] if r["method"] == "DP-SVGP" and r["family"] in fams]
        out["timing"] += [r for r in rec["summary"]["timing"] if r["method"] == "DP-SVGP" and r["family"] in fams]
    return out


def _plot_nll(df: pd.DataFrame, path: Path, eps_for_n: float, n_for_eps: int) -> None:
    fams = list(dict.fromkeys(df["family"]))
    fig, axes = new_figure(len(fams), 2, figsize=(9, 3.2 * len(fams)), squeeze=False)
    for i, fam in enumerate(fams):
        for j, (sweep, xcol) in enumerate((("N", "N"), ("epsilon", "epsilon"))):
            ax = axes[i][j]
            sub = df[(df.family == fam) & (df.sweep == sweep)]
            for method, g in sub.groupby("method"):
                ax.errorbar(g[xcol], g["nll"], yerr=g["ci95"], marker="o", ms=3, capsize=2, label=method,
                            color=COLORS.get(method))
            ax.set_xlabel(xcol if xcol == "N" else "epsilon")
            ax.set_ylabel("NLL per target point")
            ax.set_title(f"{fam}: " + (f"vs N (eps = {eps_for_n:g})" if sweep == "N" else f"vs eps (N = {n_for_eps})"))
            if xcol == "N":
                ax.set_xscale("log")
            ax.legend(fontsize=7)
    save_figure(fig, path)


# ------------------------------------------------------------------------------------------------
def draw_fit(ax, fam: str, batch, xt: np.ndarray, m: np.ndarray, s: np.ndarray, *, oracle_band: bool,
             context_size: float) -> None:
    """One panel of a fits figure: the DPConvCNP's mean and 95% band at ``xt``, the non-DP oracle (EQ; with its
    band when ``oracle_band``), the held-out targets and the (private) context of task 0 of ``batch``."""
    from ...nn.oracle import gp_oracle

    xc, yc = batch.xc[0].numpy(), batch.yc[0].numpy()
    ax.fill_between(xt, m - 1.96 * s, m + 1.96 * s, color=COLORS["DPConvCNP"], alpha=0.25)
    ax.plot(xt, m, color=COLORS["DPConvCNP"], label="DPConvCNP (95 %)")
    if fam == "eq":
        mo, so = gp_oracle("eq", xc[None].astype(float), yc[None].astype(float), xt[None],
                           float(batch.params["lengthscale"][0]), float(batch.params["noise_std"][0]))
        ax.plot(xt, mo[0], "--", color=COLORS["oracle"], lw=1, label="non-DP oracle mean")
        if oracle_band:
            ax.plot(xt, mo[0] - 1.96 * so[0], ":", color=COLORS["oracle"], lw=1)
            ax.plot(xt, mo[0] + 1.96 * so[0], ":", color=COLORS["oracle"], lw=1)
    ax.scatter(batch.xt[0], batch.yt[0], s=3, color="0.6", label="held-out targets")
    ax.scatter(xc, yc, s=context_size, color="k", label="context (private)")


def fits(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, families=("eq", "sawtooth"),
         eps_values=(1.0, 3.0), n_context: int = 100, eq_lengthscale: float = 0.71, sawtooth_frequency: float = 0.5,
         checkpoint: str | None = None, threads: int = 1) -> dict:
    """Fig. 2 style: one context set per family; DPConvCNP predictive bands at several eps, the
    non-DP oracle (EQ), and the truth's noisy targets."""
    torch = _torch(threads)
    from ...nn.tasks import sample_batch

    model = _model(checkpoint)
    fams, epss = as_tuple(families), as_tuple(eps_values)
    fig, axes = new_figure(len(fams), len(epss), figsize=(4.2 * len(epss), 3.0 * len(fams)), squeeze=False)
    xt = np.linspace(-2.5, 2.5, 400)
    for i, fam in enumerate(fams):
        spec = _spec(fam, eq_lengthscale, sawtooth_frequency)
        b = sample_batch(spec, 1, n_context, 200, torch.Generator().manual_seed(seed + 31 * i))
        xc, yc = b.xc[0].numpy(), b.yc[0].numpy()
        for j, eps in enumerate(epss):
            ax = axes[i][j]
            rep, _ = model.release(xc, yc, eps, spec.delta, generator=torch.Generator().manual_seed(seed + 100 * i + j))
            m, s = model.predict(rep, xt)
            draw_fit(ax, fam, b, xt, m, s, oracle_band=True, context_size=6)
            ax.set_title(f"{fam}, N = {n_context}, eps = {eps:g}, delta = {spec.delta:g}", fontsize=9)
            ax.set_ylim(-3.5, 3.5)
            if i == 0 and j == 0:
                ax.legend(fontsize=6, loc="lower left")
    save_figure(fig, Path(out_dir) / "fits.png")
    config = {"families": fams, "eps_values": epss, "n_context": n_context, "eq_lengthscale": eq_lengthscale,
              "sawtooth_frequency": sawtooth_frequency, "checkpoint": checkpoint or "shipped", "seed": seed, "quick": quick}
    write_run_record(out_dir, "seed002-fits", config, {"png": "fits.png"})
    return {"png": str(Path(out_dir) / "fits.png")}


# ------------------------------------------------------------------------------------------------
def sim2real(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, n_values=(30, 60, 100, 200, 300),
             epsilon: float = 1.0, delta: float = 1e-3, repeats: int = 256, dpsvgp: bool = True,
             dpsvgp_repeats: int | None = None, checkpoint: str | None = None, tuned: str | None = None,
             dpsvgp_from: str | None = None, y_scale: float = 1.0, threads: int = 1) -> dict:
    """Fig. 7 protocol on sklearn's diabetes data (442 patients; disease progression one year after
    baseline from BMI, and from s5 = log serum triglycerides): x min-max scaled to [-1, 1], y
    standardised (statistics assumed public, as in App. E.2); for each N, N random patients form the
    private context and the rest are targets; ``repeats`` random splits; mean NLL +- 95 % interval.
    The DPConvCNP is the shipped model (trained on three families, the Matérn-3/2 simulator with contexts in
    [-1, 1] among them) unless ``checkpoint`` names another, e.g. a dedicated sim-to-real model
    (``seed002-train --set families=matern32 --set matern32_noise=0.3,0.8``); the DP-SVGP uses a
    Matérn-3/2 kernel with the settings tuned for the EQ task (no separate sim-to-real tuning) and
    runs on the first ``dpsvgp_repeats`` splits (default: all); ``dpsvgp_from`` reuses the DP-SVGP rows
    of an earlier run with the same splits and settings (checked). ``splits.csv`` holds every split's NLL
    of every method the run fitted; ``paired.csv`` the DPConvCNP minus the DP-SVGP on the splits both were
    scored on, mean and standard error (also for reused DP-SVGP rows, where the earlier run wrote ``splits.csv``).

    ``y_scale`` (a public choice, default 1; the authors' Howell script uses 1.5) multiplies the
    standardised responses before the methods see them; every NLL is still reported on the
    standardised scale (change of variables: NLL = NLL on the scaled data - log y_scale), so runs
    with different scales are comparable."""
    torch = _torch(threads)
    from ...accounting.gaussian import gdp_mu
    from ...nn.evaluate import dpconvcnp_nll, dpsvgp_nll, mean_ci, paired_mean_se
    from ...nn.tasks import TaskBatch
    from ...validation import positive

    positive("y_scale", y_scale)
    dpsvgp = v.switch("dpsvgp", dpsvgp)
    x_all, tasks_xy = _diabetes()
    if quick:
        n_values, repeats = (30,), 4
    model = _model(checkpoint)
    settings = _settings("eq", tuned) if dpsvgp else None
    if settings is not None:
        settings = type(settings)(**{**settings.to_dict(), "kernel": "matern32", "inducing_range": (-1.0, 1.0),
                                     **({"epochs": 2} if quick else {})})
    t0 = time.perf_counter()
    rows = []
    same = {"n_values": as_tuple(n_values), "epsilon": epsilon, "delta": delta, "repeats": repeats, "seed": seed,
            "dpsvgp_repeats": min(dpsvgp_repeats or repeats, repeats), "quick": quick,
            "dpsvgp_settings": settings.to_dict() if settings is not None else None}
    if y_scale != 1.0:  # runs before this option existed used 1 and do not record it
        same["y_scale"] = float(y_scale)
    log_scale = float(np.log(y_scale))
    reused = None
    reused_splits = None
    if settings is not None and dpsvgp_from:
        from ...errors import InvalidParameterError
        from ...jsonable import to_jsonable

        rec = json.loads((Path(dpsvgp_from) / "run.json").read_text())
        bad = [k for k, val in to_jsonable(same).items()
               if json.dumps(rec["config"].get(k), sort_keys=True) != json.dumps(val, sort_keys=True)]
        if bad:
            raise InvalidParameterError("dpsvgp_from", f"a seed002-sim2real run with the same {bad}", dpsvgp_from)
        reused = [r for r in rec["summary"]["nll"] if r["method"] == "DP-SVGP"]
        if (Path(dpsvgp_from) / "splits.csv").is_file():
            prev = pd.read_csv(Path(dpsvgp_from) / "splits.csv")
            reused_splits = prev[prev.method == "DP-SVGP"]
    rng = np.random.default_rng(seed)
    examples = {}
    split_rows: list[dict] = []
    paired: list[dict] = []
    for name, (x, y) in tasks_xy.items():
        for n in as_tuple(n_values):
            idx = np.stack([rng.permutation(len(x)) for _ in range(repeats)])
            ci, ti = idx[:, :n], idx[:, n:]
            f32 = torch.float32
            ys = y_scale * y
            b = TaskBatch(xc=torch.as_tensor(x[ci], dtype=f32), yc=torch.as_tensor(ys[ci], dtype=f32),
                          xt=torch.as_tensor(x[ti], dtype=f32), yt=torch.as_tensor(ys[ti], dtype=f32),
                          epsilon=torch.full((repeats,), float(epsilon)), delta=delta,
                          mu=torch.full((repeats,), float(gdp_mu(epsilon, delta)), dtype=f32), family="real")
            res = {"DPConvCNP": dpconvcnp_nll(model, b, torch.Generator().manual_seed(seed + 1))}
            if reused is not None:
                rows += [r for r in reused if r["task"] == name and r["N"] == int(n)]
            elif settings is not None:
                k = min(dpsvgp_repeats or repeats, repeats)
                sub = TaskBatch(b.xc[:k], b.yc[:k], b.xt[:k], b.yt[:k], b.epsilon[:k], delta, b.mu[:k], "real")
                res["DP-SVGP"] = dpsvgp_nll(settings, sub, torch.Generator().manual_seed(seed + 2))
            per_split = {method: np.asarray(vals, dtype=float) - log_scale for method, vals in res.items()}
            for method, vals in per_split.items():
                m, c = mean_ci(vals)
                rows.append({"task": name, "N": int(n), "epsilon": epsilon, "method": method, "nll": m, "ci95": c,
                             "repeats": len(vals)})
                split_rows += [{"task": name, "N": int(n), "split": i, "method": method, "nll": float(x)}
                               for i, x in enumerate(vals)]
            if "DP-SVGP" not in per_split and reused_splits is not None:
                r = reused_splits[(reused_splits.task == name) & (reused_splits.N == int(n))].sort_values("split")
                per_split["DP-SVGP"] = r.nll.to_numpy()
            if "DP-SVGP" in per_split:
                k = len(per_split["DP-SVGP"])
                d, se = paired_mean_se(per_split["DPConvCNP"][:k], per_split["DP-SVGP"])
                paired.append({"task": name, "N": int(n), "splits": k, "DPConvCNP - DP-SVGP": d, "se": se})
            examples[(name, int(n))] = (x[ci[0]], y[ci[0]])
    df = pd.DataFrame(rows)
    write_table(df, out_dir, "nll")
    pd.DataFrame(split_rows).to_csv(out_dir / "splits.csv", index=False)
    if paired:
        write_table(pd.DataFrame(paired), out_dir, "paired")
    _plot_sim2real(df, model, examples, x_all, tasks_xy, epsilon, delta, seed, out_dir / "sim2real.png", y_scale)
    config = {**same, "y_scale": float(y_scale), "data": "sklearn.datasets.load_diabetes (scaled=False), BSD-3-Clause (scikit-learn)",
              "tasks": {"progression_from_bmi": "target ~ bmi", "progression_from_s5": "target ~ s5"},
              "preprocessing": "x min-max to [-1, 1]; y standardised, times y_scale; NLL on the standardised scale",
              "dpsvgp": bool(dpsvgp),
              "checkpoint": checkpoint or "shipped", "dpsvgp_from": dpsvgp_from}
    write_run_record(out_dir, "seed002-sim2real", config, {"nll": rows, "paired": paired},
                     seconds=time.perf_counter() - t0)
    return {"rows": len(rows)}


def _diabetes():
    from sklearn.datasets import load_diabetes

    d = load_diabetes(scaled=False)
    cols = list(d.feature_names)
    y = (d.target - d.target.mean()) / d.target.std()
    out = {}
    for name, col in (("progression_from_bmi", "bmi"), ("progression_from_s5", "s5")):
        x = d.data[:, cols.index(col)].astype(float)
        x = 2 * (x - x.min()) / (x.max() - x.min()) - 1
        out[name] = (x, y.astype(float))
    return None, out


def _plot_sim2real(df, model, examples, x_all, tasks_xy, epsilon, delta, seed, path, y_scale=1.0):
    import torch

    names = list(tasks_xy)
    fig, axes = new_figure(2, len(names), figsize=(4.5 * len(names), 6.2), squeeze=False)
    for j, name in enumerate(names):
        ax = axes[0][j]
        for method, g in df[df.task == name].groupby("method"):
            ax.errorbar(g["N"], g["nll"], yerr=g["ci95"], marker="o", ms=3, capsize=2, label=method, color=COLORS.get(method))
        ax.set_xlabel("N (context size)")
        ax.set_ylabel("NLL per target point")
        ax.set_title(f"{name} (eps = {epsilon:g}" + (f", y x {y_scale:g})" if y_scale != 1.0 else ")"), fontsize=9)
        ax.legend(fontsize=7)
        ax = axes[1][j]
        n = max(k[1] for k in examples if k[0] == name)
        xc, yc = examples[(name, n)]
        rep, _ = model.release(xc, y_scale * yc, epsilon, delta, generator=torch.Generator().manual_seed(seed + 5))
        xs = np.linspace(-1, 1, 200)
        m, s = model.predict(rep, xs)
        m, s = np.asarray(m) / y_scale, np.asarray(s) / y_scale  # back on the standardised scale
        x, y = tasks_xy[name]
        ax.scatter(x, y, s=3, color="0.6", label="all patients")
        ax.scatter(xc, yc, s=4, color="k", label=f"context (N = {n})")
        ax.plot(xs, m, color=COLORS["DPConvCNP"], label="DPConvCNP")
        ax.fill_between(xs, m - 1.96 * s, m + 1.96 * s, color=COLORS["DPConvCNP"], alpha=0.25)
        ax.set_xlabel("scaled input")
        ax.set_ylabel("standardised progression")
        ax.legend(fontsize=6)
    save_figure(fig, path)
