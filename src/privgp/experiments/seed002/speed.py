"""Seed 002, Figure 5: speed versus quality of fit at deployment.

The paper runs the DP-SVGP for different numbers of DP-SGD steps (the authors' notebook: EQ l = 0.71,
eps = 1, N = 200, epochs {1, 3, 10, 30, 100, 300}; sawtooth 1/tau = 0.5, epochs {1, ..., 100}) and sets
its NLL and wall time per task beside the DPConvCNP's one forward pass. ``seed002-fig5`` does the same
with the shipped model and the shipped tuned DP-SVGP settings, only the number of epochs varied
(steps = epochs / (B / N)), on the first ``tasks`` of ``seed002-nll``'s test tasks of that (N, eps)
(the same generators; at 200 epochs the DP-SVGP column is then that run's, which the experiment
checks when ``nll_run`` is given). Wall time: the median over ``timing_repeats`` single-task fits
(release + predict for the DPConvCNP), one torch thread; the PRV accountant's noise multiplier is
computed before the clock starts, as in ``seed002-nll``.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..common import as_tuple, new_figure, save_figure, write_run_record, write_table
from .nn import COLORS, _model, _settings, _spec, _torch, nll_points, nll_task_generator


def fig5(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, families=("eq", "sawtooth"),
         epochs=(1, 3, 10, 30, 100, 200, 300), n_context: int = 200, epsilon: float = 1.0, tasks: int = 64,
         timing_repeats: int = 2, nll_tasks: int = 256, nll_n_values=(25, 50, 100, 200), nll_eps_values=(1, 2, 4),
         nll_n_for_eps: int = 50, n_target: int = 512, eq_lengthscale: float = 0.71, sawtooth_frequency: float = 0.5,
         nll_run: str | None = None, checkpoint: str | None = None, tuned: str | None = None,
         threads: int = 1) -> dict:
    """NLL and wall time per task of the DP-SVGP at each number of epochs and of the DPConvCNP."""
    torch = _torch(threads)
    from ...errors import InvalidParameterError
    from ...nn.evaluate import dpconvcnp_nll, dpsvgp_nll, mean_ci, time_dpconvcnp, time_dpsvgp
    from ...nn.tasks import TaskBatch, sample_batch

    if quick:
        epochs, n_context, tasks, timing_repeats, nll_tasks, n_target = (1, 3), 16, 4, 1, 8, 16
        nll_n_values, nll_eps_values, nll_n_for_eps = (8, 16), (1.0,), 8
    model = _model(checkpoint)
    points = nll_points(nll_n_values, 1.0, nll_eps_values, nll_n_for_eps)
    try:
        k = points.index(("N", int(n_context), float(epsilon)))
    except ValueError:
        raise InvalidParameterError("n_context", f"a point of the seed002-nll sweep {points}", n_context) from None
    t0 = time.perf_counter()
    rows = []
    for fam in as_tuple(families):
        spec = _spec(fam, eq_lengthscale, sawtooth_frequency).fixed(epsilon=float(epsilon))
        full = sample_batch(spec, nll_tasks, int(n_context), n_target, nll_task_generator(seed, k, fam))
        b = TaskBatch(full.xc[:tasks], full.yc[:tasks], full.xt[:tasks], full.yt[:tasks], full.epsilon[:tasks],
                      full.delta, full.mu[:tasks], full.family, {p: a[:tasks] for p, a in full.params.items()})
        cnp = dpconvcnp_nll(model, full, torch.Generator().manual_seed(seed + 1))[:tasks]  # the nll run's releases
        tc = time_dpconvcnp(model, b, min(len(b), 8 * timing_repeats))
        m, ci = mean_ci(cnp)
        rows.append({"family": fam, "method": "DPConvCNP", "epochs": None, "steps": None, "nll": m, "ci95": ci,
                     "tasks": len(cnp), "seconds_per_task": float(np.median(tc)), "timing_repeats": len(tc)})
        base = _settings(fam, tuned)
        for ep in as_tuple(epochs):
            st = type(base)(**{**base.to_dict(), "epochs": int(ep), "inducing_range": base.inducing_range})
            vals = dpsvgp_nll(st, b, torch.Generator().manual_seed(seed + 2))
            ts = time_dpsvgp(st, b, timing_repeats)
            m, ci = mean_ci(vals)
            rows.append({"family": fam, "method": "DP-SVGP", "epochs": int(ep), "steps": st.steps(int(n_context)),
                         "nll": m, "ci95": ci, "tasks": len(vals), "seconds_per_task": float(np.median(ts)),
                         "timing_repeats": len(ts)})
    df = pd.DataFrame(rows)
    check = _check_nll_run(df, nll_run, n_context, epsilon, tasks) if nll_run else None
    write_table(df, out_dir, "fig5")
    (Path(out_dir) / "page_fig5.md").write_text(_page(df))
    _plot(df, Path(out_dir) / "fig5.png", n_context, epsilon)
    config = {"families": as_tuple(families), "epochs": [int(e) for e in as_tuple(epochs)], "n_context": n_context,
              "epsilon": epsilon, "delta": 1e-3, "tasks": tasks, "timing_repeats": timing_repeats,
              "nll_tasks": nll_tasks, "nll_point": k, "n_target": n_target, "eq_lengthscale": eq_lengthscale,
              "sawtooth_frequency": sawtooth_frequency, "checkpoint": checkpoint or "shipped",
              "tuned": tuned or "shipped", "nll_run": nll_run, "seed": seed, "quick": quick, "threads": threads}
    write_run_record(out_dir, "seed002-fig5", config, {"rows": rows, "nll_run_check": check},
                     seconds=time.perf_counter() - t0)
    return {"rows": len(rows), "nll_run_check": check}


def _check_nll_run(df: pd.DataFrame, nll_run: str, n: int, eps: float, tasks: int) -> dict:
    """The 200-epoch DP-SVGP rows against a seed002-nll run's (same tasks, seeds and settings)."""
    from ...errors import InvalidParameterError

    run = Path(nll_run)
    cfg = json.loads((run / "run.json").read_text())["config"]
    if cfg["dpsvgp_tasks"] != tasks:
        raise InvalidParameterError("nll_run", f"a seed002-nll run with dpsvgp_tasks = {tasks}", nll_run)
    ref = pd.read_csv(run / "nll.csv")
    out = {}
    for fam in sorted(set(df.family)):
        ours = df[(df.family == fam) & (df.method == "DP-SVGP") & (df.epochs == cfg["dpsvgp_settings"][fam]["epochs"])]
        theirs = ref[(ref.family == fam) & (ref.method == "DP-SVGP") & (ref.sweep == "N") & (ref.N == n)
                     & (ref.epsilon == eps)]
        if len(ours) == 1 and len(theirs) == 1:
            out[fam] = {"ours": float(ours.nll.iloc[0]), "nll_run": float(theirs.nll.iloc[0]),
                        "difference": float(ours.nll.iloc[0] - theirs.nll.iloc[0])}
    return out


def _page(df: pd.DataFrame) -> str:
    head = ["family", "method", "epochs", "DP-SGD steps", "NLL (64 tasks)", "seconds per task"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in df.itertuples(index=False):
        ep = "—" if r.method == "DPConvCNP" else str(int(r.epochs))
        steps = "—" if r.method == "DPConvCNP" else str(int(r.steps))
        nll = f"{r.nll:.3f} ± {r.ci95:.3f}".replace("-", "−")
        sec = f"{r.seconds_per_task:.2g}" if r.seconds_per_task < 0.1 else f"{r.seconds_per_task:.2f}"
        out.append("| " + " | ".join([r.family, r.method, ep, steps, nll, sec]) + " |")
    head_line = out[0].replace("NLL (64 tasks)", f"NLL ({int(df.tasks.iloc[0])} tasks)")
    return "\n".join([head_line] + out[1:]) + "\n"


def _plot(df: pd.DataFrame, path: Path, n: int, eps: float) -> None:
    fams = list(dict.fromkeys(df.family))
    fig, axes = new_figure(1, len(fams), figsize=(4.4 * len(fams), 3.4), squeeze=False)
    for j, fam in enumerate(fams):
        ax = axes[0][j]
        sub = df[df.family == fam]
        sv = sub[sub.method == "DP-SVGP"].sort_values("seconds_per_task")
        ax.errorbar(sv.seconds_per_task, sv.nll, yerr=sv.ci95, marker="o", ms=3, capsize=2, color=COLORS["DP-SVGP"],
                    label="DP-SVGP (epochs annotated)")
        for r in sv.itertuples(index=False):
            ax.annotate(str(int(r.epochs)), (r.seconds_per_task, r.nll), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        cn = sub[sub.method == "DPConvCNP"]
        ax.errorbar(cn.seconds_per_task, cn.nll, yerr=cn.ci95, marker="s", ms=4, capsize=2,
                    color=COLORS["DPConvCNP"], label="DPConvCNP")
        ax.set_xscale("log")
        ax.set_xlabel("wall seconds per task")
        ax.set_ylabel("NLL per target point")
        ax.set_title(f"{fam}, N = {n}, eps = {eps:g}", fontsize=9)
        ax.legend(fontsize=7)
    save_figure(fig, path)
