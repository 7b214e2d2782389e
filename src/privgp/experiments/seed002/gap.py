"""Seed 002, Figure S1 (App. G, "Quantifying performance gaps"): how much of the DPConvCNP's gap to the
non-private oracle the mechanism itself forces, at this machine's scale.

``seed002-s1`` scores, on the same EQ-GP test tasks (contexts U[-2, 2], targets in [-2, 2],
delta = 1e-3) and, for the bounds, the same release-noise draws as the DPConvCNP:

* the non-private oracle (the exact GP predictive, :func:`privgp.nn.oracle.gp_oracle`);
* the paper's **lower bound model** (Fig. S1, black): the exact GP predictive given the inputs and
  the signal channel released without clipping, r_s = Phi y + s_s g_s
  (:func:`privgp.nn.oracle.signal_channel_predictive`), at the paper's fixed C = 2, t = 0.5
  (s_s = 2 C / (mu sqrt(t)), Eq. 12);
* the same bound at the **scored model's** own amortised C(mu, N), t(mu, N): what an ideal model
  could make of that model's signal channel if it were not clipped and the density channel were exact
  (labelled "shipped C, t" for the shipped model, "model's C, t" for another ``checkpoint``);
* the DPConvCNP (the shipped one: its NLL is the one ``seed002-nll`` reports where the tasks coincide).

Both bounds use the shipped encoder's lengthscale lambda and grid, and the signal-noise draw
(L z, z from the generator seeded ``seed + 1``) that the DPConvCNP's release used on each task, so
the differences are paired per task. The paper's three other models (signal noise only; clipping;
clipping and density noise, each trained at fixed C, t) are not trained here (hours of CPU each).

With ``nll_run`` (a ``seed002-nll`` run directory), its EQ points are scored on its very tasks
(same generators) and the DPConvCNP's and the oracle's means are checked against its ``nll.csv``.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..common import as_tuple, new_figure, save_figure, write_run_record, write_table
from .nn import _model, _spec, _torch, nll_points, nll_task_generator

PAPER_BOUND = "lower bound, C = 2, t = 0.5"
BOUND = "lower bound, shipped C, t"          # the Fig. S1 lower bound at the model's own C, t (shipped model)
BOUND_OTHER = "lower bound, model's C, t"   # ... at another checkpoint's
COLORS = {"oracle": "tab:blue", PAPER_BOUND: "black", BOUND: "tab:gray", BOUND_OTHER: "tab:gray",
          "DPConvCNP": "tab:green"}


def methods(checkpoint: str | None) -> tuple[str, str, str, str]:
    """The scored methods; the model's own bound is named for the shipped model or for another checkpoint."""
    return ("oracle", PAPER_BOUND, BOUND if checkpoint is None else BOUND_OTHER, "DPConvCNP")


def s1(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, lengthscales=(0.25, 0.71, 2.0),
       eps_values=(1.0, 3.0), n_values=(25, 50, 100, 200), tasks: int = 256, n_target: int = 512,
       clip: float = 2.0, split: float = 0.5, nll_run: str | None = None, checkpoint: str | None = None,
       threads: int = 1) -> dict:
    """NLL per target point of the oracle, the two lower-bound models and the DPConvCNP for every
    (lengthscale, eps, N) of the grid (the paper: l in {0.25, 0.71, 2}, eps in {1, 3}, 512 tasks), plus
    ``nll_run``'s EQ points on its own tasks (checked: the oracle's mean NLL, and the DPConvCNP's unless
    ``checkpoint`` names another model than the shipped one that ``nll_run`` scored)."""
    torch = _torch(threads)
    from ...errors import InvalidParameterError
    from ...nn.evaluate import dpconvcnp_nll, mean_ci, oracle_nll
    from ...nn.model import noise_scales
    from ...nn.tasks import sample_batch

    if quick:
        lengthscales, eps_values, n_values, tasks, n_target = (0.71,), (1.0,), (8, 16), 4, 16
    model = _model(checkpoint)
    names = methods(checkpoint)
    own, short_own = names[2], "shipped" if checkpoint is None else "model"
    t0 = time.perf_counter()
    # the points: (lengthscale, eps, N, source, generator seed)
    points: list[tuple[float, float, int, str, Any]] = []
    reference = None
    if nll_run is not None:
        run = Path(nll_run)
        if not (run / "run.json").is_file():
            raise InvalidParameterError("nll_run", "a seed002-nll run directory (with run.json)", nll_run)
        cfg = json.loads((run / "run.json").read_text())["config"]
        if "eq" not in cfg["families"] or cfg["tasks"] != tasks or cfg["n_target"] != n_target or cfg["seed"] != seed:
            raise InvalidParameterError("nll_run", f"a seed002-nll run with EQ tasks, tasks = {tasks}, "
                                        f"n_target = {n_target}, seed = {seed}", nll_run)
        reference = pd.read_csv(run / "nll.csv")
        for k, (_, n, eps) in enumerate(nll_points(cfg["n_values"], cfg["eps_for_n"], cfg["eps_values"],
                                                   cfg["n_for_eps"])):
            key = (float(cfg["eq_lengthscale"]), float(eps), int(n))
            if all(p[:3] != key for p in points):
                points.append((*key, "seed002-nll", nll_task_generator(seed, k, "eq")))
    k_own = 0
    for ls in as_tuple(lengthscales):
        for eps in as_tuple(eps_values):
            for n in as_tuple(n_values):
                key = (float(ls), float(eps), int(n))
                if all(p[:3] != key for p in points):
                    points.append((*key, "own", torch.Generator().manual_seed(seed * 1000 + 700 + 17 * k_own)))
                    k_own += 1
    points.sort(key=lambda p: p[:3])

    lam = float(model.encoder.lengthscale.detach())
    grid = model.encoder.grid.double().numpy()
    jitter = model.cfg.jitter
    with torch.no_grad():
        factor = model.encoder.noise_factor().numpy()   # L_P of the release noise (float64)
    rows, pairs = [], []
    for ls, eps, n, source, gen in points:
        spec = _spec("eq", ls, 0.5).fixed(epsilon=eps)
        b = sample_batch(spec, tasks, n, n_target, gen)
        vals = {"oracle": oracle_nll(b), "DPConvCNP": dpconvcnp_nll(model, b, torch.Generator().manual_seed(seed + 1))}
        with torch.no_grad():
            # the very signal-noise draws of the DPConvCNP's releases above (same generator, first use)
            noise = model.encoder.sample_noise(tasks, torch.Generator().manual_seed(seed + 1))[:, 0].numpy()
            mu = b.mu
            c_ship, t_ship = model.encoder.clip_and_split(mu, torch.full((tasks,), float(n)))
            s_ship, _ = noise_scales(mu.double() * (1 - 1e-12), c_ship.double(), t_ship.double())
            s_paper, _ = noise_scales(mu.double(), torch.full((tasks,), float(clip), dtype=torch.float64),
                                      torch.full((tasks,), float(split), dtype=torch.float64))
        vals.update(_bound_nll(b, grid, lam, {PAPER_BOUND: s_paper.numpy(), own: s_ship.numpy()}, noise, factor))
        rec = {"lengthscale": ls, "epsilon": eps, "N": n, "tasks_from": source, "tasks": tasks,
               f"clip_{short_own}": float(c_ship.mean()), f"split_{short_own}": float(t_ship.mean()),
               f"sigma_signal_{short_own}": float(s_ship.mean()), "sigma_signal_paper": float(s_paper.mean())}
        for method in names:
            m, ci = mean_ci(vals[method])
            rows.append({**{k: rec[k] for k in ("lengthscale", "epsilon", "N", "tasks_from", "tasks")},
                         "method": method, "nll": m, "ci95": ci})
        gap = vals["DPConvCNP"] - vals["oracle"]
        for name, short in ((PAPER_BOUND, "paper"), (own, short_own)):
            rec[f"bound_{short}_minus_oracle"], rec[f"bound_{short}_minus_oracle_ci95"] = mean_ci(vals[name] - vals["oracle"])
            rec[f"dpconvcnp_minus_bound_{short}"], rec[f"dpconvcnp_minus_bound_{short}_ci95"] = mean_ci(
                vals["DPConvCNP"] - vals[name])
            rec[f"share_{short}"] = float((vals[name] - vals["oracle"]).mean() / gap.mean())
        pairs.append(rec)
        if reference is not None and source == "seed002-nll":
            ref = reference[(reference.family == "eq") & (reference.N == n) & (reference.epsilon == eps)]
            # the tasks are checked by the oracle's NLL; the DPConvCNP's only when it is the model of nll_run
            for method in ("DPConvCNP", "oracle") if checkpoint is None else ("oracle",):
                want = ref[ref.method == method]["nll"].to_numpy()
                if not np.any(np.abs(want - vals[method].mean()) < 1e-9):
                    raise InvalidParameterError("nll_run", f"a run whose {method} NLL at N = {n}, eps = {eps:g} equals "
                                                f"this checkpoint's ({vals[method].mean()!r}; it has {want})", nll_run)
    df, pdf = pd.DataFrame(rows), pd.DataFrame(pairs)
    write_table(df, out_dir, "s1")
    write_table(pdf, out_dir, "gaps")
    (Path(out_dir) / "page_s1.md").write_text(_page_table(df, pdf, names, short_own))
    _plot(df, Path(out_dir) / "s1.png", names, [float(x) for x in as_tuple(lengthscales)],
          [float(x) for x in as_tuple(eps_values)], [int(x) for x in as_tuple(n_values)])
    config = {"lengthscales": as_tuple(lengthscales), "eps_values": as_tuple(eps_values),
              "n_values": as_tuple(n_values), "tasks": tasks, "n_target": n_target, "clip": clip, "split": split,
              "delta": 1e-3, "context_range": [-2, 2], "target_range": [-2, 2], "noise_std": 0.2,
              "encoder_lengthscale": lam, "grid": [float(grid[0]), float(grid[-1]), len(grid)], "jitter": jitter,
              "nll_run": nll_run, "checkpoint": checkpoint or "shipped", "seed": seed, "quick": quick,
              "threads": threads}
    write_run_record(out_dir, "seed002-s1", config, {"nll": rows, "gaps": pairs}, seconds=time.perf_counter() - t0)
    return {"points": len(points)}


def _bound_nll(b, grid: np.ndarray, lam: float, sigmas: dict[str, np.ndarray], noise: np.ndarray,
               factor: np.ndarray) -> dict[str, np.ndarray]:
    """Per-task NLL of the lower-bound model at each named array of per-task signal-noise scales."""
    from ...blas_threads import one_blas_thread
    from ...nn.model import gaussian_nll
    from ...nn.oracle import signal_channel_predictive

    xc, yc, xt, yt = (t.double().numpy() for t in (b.xc, b.yc, b.xt, b.yt))
    out = {name: np.empty(len(b)) for name in sigmas}
    with one_blas_thread():  # small matrices: BLAS threads only add contention
        for i in range(len(b)):
            m, s = signal_channel_predictive("eq", xc[i], yc[i], xt[i], float(b.params["lengthscale"][i]),
                                             float(b.params["noise_std"][i]), grid=grid, encoder_lengthscale=lam,
                                             sigma_signal=[float(sig[i]) for sig in sigmas.values()], noise=noise[i],
                                             noise_factor=factor)
            for j, name in enumerate(sigmas):
                out[name][i] = gaussian_nll(yt[i], m[j], s[j]).mean()
    return out


def _page_table(df: pd.DataFrame, pdf: pd.DataFrame, names, short: str) -> str:
    """One row per point: each method's mean ± 95 % interval and the paired differences (``short``: "shipped"
    for the shipped model's own bound, "model" for another checkpoint's)."""
    whose = "shipped" if short == "shipped" else "model's"
    head = ["ℓ", "ε", "N", "tasks from", "oracle", "bound C = 2, t = 0.5", f"bound, {whose} C, t", "DPConvCNP",
            f"DPConvCNP − bound ({whose})", f"{whose} C, t", "gap share: paper bound", f"gap share: {whose} bound"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in pdf.itertuples(index=False):
        sub = df[(df.lengthscale == r.lengthscale) & (df.epsilon == r.epsilon) & (df.N == r.N)].set_index("method")

        cells = [f"{r.lengthscale:g}", f"{r.epsilon:g}", str(r.N), "seed002-nll" if r.tasks_from == "seed002-nll" else "own",
                 *(_pm(sub.loc[m, 'nll'], sub.loc[m, 'ci95']) for m in names),
                 _pm(getattr(r, f"dpconvcnp_minus_bound_{short}"), getattr(r, f"dpconvcnp_minus_bound_{short}_ci95"),
                     sign=True),
                 f"{getattr(r, f'clip_{short}'):.2f}, {getattr(r, f'split_{short}'):.2f}",
                 f"{100 * r.share_paper:.0f} %", f"{100 * getattr(r, f'share_{short}'):.0f} %"]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _pm(mean: float, half: float, sign: bool = False) -> str:
    return (f"{mean:+.3f}" if sign else f"{mean:.3f}").replace("-", "−") + f" ± {half:.3f}"


def _plot(df: pd.DataFrame, path: Path, names, ls_values, eps_values, n_values) -> None:
    """The grid's panels (rows eps, columns l); the extra points of ``nll_run`` are in the tables only."""
    from matplotlib.ticker import NullFormatter

    fig, axes = new_figure(len(eps_values), len(ls_values), figsize=(3.6 * len(ls_values), 3.0 * len(eps_values)),
                           squeeze=False, sharey="row")
    for i, eps in enumerate(eps_values):
        for j, ls in enumerate(ls_values):
            ax = axes[i][j]
            sub = df[(df.lengthscale == ls) & (df.epsilon == eps) & df.N.isin(n_values)]
            for method in names:
                g = sub[sub.method == method].sort_values("N")
                ax.errorbar(g["N"], g["nll"], yerr=g["ci95"], marker="o", ms=3, capsize=2, label=method,
                            color=COLORS[method])
            ax.set_xscale("log")
            ax.set_xticks(list(n_values))
            ax.set_xticklabels([str(n) for n in n_values])
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_title(f"EQ, l = {ls:g}, eps = {eps:g}", fontsize=9)
            ax.set_xlabel("N")
            if j == 0:
                ax.set_ylabel("NLL per target point")
    axes[0][0].legend(fontsize=7)
    save_figure(fig, path)
