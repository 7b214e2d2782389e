"""Seed 003 (LOOD), the 1-D toys: Figs 4a, 7, 11 and 12 (App. C.3, F.1).

Setup of App. F.1: D = {(x_i, sin x_i)}, i = 1..10, x_i ~ N(0, 1); noise sigma^2 = 0.01; RBF kernel
exp(-(x - x')^2 / 2) (``RBF(gamma=0.5)``). The differing record S = (S_x, sin S_x).

* Fig. 11a / Algorithm 1: |grad_Q M(Q)|_{Q=S}| over S_x in [-5, 5] (analytic gradient of the mean
  distance, Prop. 5.1); S* = its argmax (a grid search refined by Brent's method; the paper runs
  gradient descent). The paper's S* = 3.899 depends on its unknown draw of the x_i.
* Fig. 11b and Fig. 7: for S = S*, the mean distance M(Q), the variance ratio Sigma_D(Q)/Sigma_D'(Q)
  and the KL LOOD over queries Q: M peaks at Q* != S*, while KL and the variance ratio peak at S*.
* Fig. 12: M(Q) for S_x in {-5, 0, 5}: far from the data the optimum is (close to) S.
* Fig. 4a: D = (x, sin x) with x uniform on [-5, 5] (20 points), KL LOOD over all queries for a few
  differing records: the maximum is at the differing record.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from ...audit.lood.models import GPPosterior
from ...audit.lood.queries import lood_value_and_grad, optimize_queries
from ...errors import InvalidParameterError
from ...models.nngp import RBF
from ..common import new_figure, save_figure, write_run_record, write_table

NOISE = 0.01
KERNEL = RBF(0.5)   # exp(-(x - x')^2 / 2) in 1-D


def toy_data(rng: np.random.Generator, n: int = 10):
    x = rng.standard_normal(n)
    return x[:, None], np.sin(x)[:, None]


def grad_mean_at_S(P: GPPosterior, sx: float) -> float:
    pair = P.add([[sx]], [[np.sin(sx)]])
    return float(abs(lood_value_and_grad(pair, np.array([[sx]]), "mean_distance")[1][0, 0]))


def algorithm1(P: GPPosterior, grid: np.ndarray) -> tuple[float, np.ndarray]:
    """S* = argmax_{S_x} |grad_Q M(Q)|_{Q=S}| on [grid[0], grid[-1]] (App. F.1, Algorithm 1)."""
    g = np.array([grad_mean_at_S(P, s) for s in grid])
    i = int(np.argmax(g))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(lambda s: -grad_mean_at_S(P, s), bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-10})
    return float(res.x), g


def curves(P: GPPosterior, sx: float, Q: np.ndarray) -> dict:
    """M(Q), Sigma/Sigma' and KL(Q) on a query grid for S = (sx, sin sx)."""
    pair = P.add([[sx]], [[np.sin(sx)]])
    Qc = Q[:, None]
    var = P.var(Qc)
    var_p = var - (P.cov(Qc, [[sx]])[:, 0] ** 2) / (pair.V[0, 0] + NOISE)
    mean = P.add_each(Qc, [[sx]], [[np.sin(sx)]], "mean_distance")[:, 0]
    kl = P.add_each(Qc, [[sx]], [[np.sin(sx)]], "kl")[:, 0]
    return {"M": mean, "ratio": var / var_p, "kl": kl, "pair": pair}


def _refine_max(pair, q0: float, objective: str, rng, steps: int = 400) -> float:
    """Adam from the grid's argmax (lr 0.01: a fraction of the grid spacing)."""
    res = optimize_queries(pair, 1, objective=objective, steps=steps, lr=0.01, init=np.array([[q0]]), rng=rng)
    return float(res.best_Q[0, 0])


def run(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, n_grid: int | None = None) -> dict:
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    rng = np.random.default_rng(seed)
    n_grid = (201 if quick else 2001) if n_grid is None else n_grid
    if isinstance(n_grid, bool) or not isinstance(n_grid, int) or n_grid < 11:
        raise InvalidParameterError("n_grid", "an integer >= 11 (grid points of S and Q)", n_grid)
    steps = 150 if quick else 400
    X, Y = toy_data(rng)
    P = GPPosterior(KERNEL, X, Y, NOISE)
    s_grid = np.linspace(-5.0, 5.0, n_grid)
    q_grid = np.linspace(-6.0, 8.0, n_grid)

    # Fig. 11a / Algorithm 1
    s_star, gnorm = algorithm1(P, s_grid)
    # Fig. 7 / 11b at S*
    c = curves(P, s_star, q_grid)
    q_star_M = _refine_max(c["pair"], float(q_grid[np.argmax(c["M"])]), "mean_distance", rng, steps)
    q_star_kl = _refine_max(c["pair"], float(q_grid[np.argmax(c["kl"])]), "kl", rng, steps)
    ratio_peak = float(q_grid[np.argmax(c["ratio"])])
    # Fig. 12
    fig12: list[dict[str, Any]] = []
    for sx in (-5.0, 0.0, 5.0):
        cc = curves(P, sx, q_grid)
        qm = _refine_max(cc["pair"], float(q_grid[np.argmax(cc["M"])]), "mean_distance", rng, steps)
        fig12.append({"S_x": sx, "argmax_M": qm, "max_M": float(cc["pair"].lood([[qm]], "mean_distance")),
                      "M_at_S": float(cc["pair"].at_differing("mean_distance")), "curve": cc["M"]})
    # Fig. 4a
    x4 = np.sort(rng.uniform(-5, 5, 20))
    P4 = GPPosterior(KERNEL, x4[:, None], np.sin(x4)[:, None], NOISE)
    S4 = np.array([-4.2, -1.3, 0.7, 3.6])
    fig4: list[dict[str, Any]] = []
    for sx in S4:
        kl = P4.add_each(q_grid[:, None], [[sx]], [[np.sin(sx)]], "kl")[:, 0]
        pair = P4.add([[sx]], [[np.sin(sx)]])
        qk = _refine_max(pair, float(q_grid[np.argmax(kl)]), "kl", rng, steps)
        fig4.append({"S_x": float(sx), "argmax_kl": qk, "kl_at_S": pair.at_differing(), "curve": kl})

    # -- figures -----------------------------------------------------------------------------
    fig, ax = new_figure(1, 2, figsize=(11, 3.8))
    ax[0].plot(s_grid, gnorm)
    ax[0].axvline(s_star, ls="--", color="k", lw=0.8)
    ax[0].set_xlabel("differing point S_x")
    ax[0].set_ylabel("|grad_Q M(Q)| at Q = S")
    ax[0].set_title(f"Fig. 11a: Algorithm 1, S* = {s_star:.3f} (paper: 3.899, other draw)", fontsize=9)
    ax[1].plot(q_grid, c["M"])
    ax[1].axvline(s_star, ls="--", color="r", lw=0.8, label="S*")
    ax[1].axvline(q_star_M, ls=":", color="k", lw=1.0, label="Q* (argmax M)")
    ax[1].set_xlabel("query Q")
    ax[1].set_ylabel("mean distance M(Q)")
    ax[1].legend(fontsize=8)
    ax[1].set_title("Fig. 11b: M(Q) under S*", fontsize=9)
    save_figure(fig, out_dir / "fig11.png")

    fig, ax = new_figure(1, 3, figsize=(14, 3.8))
    for a, key, lab in zip(ax, ("M", "ratio", "kl"), ("mean distance M(Q)", "Sigma_D(Q) / Sigma_D'(Q)", "KL LOOD")):
        a.plot(q_grid, c[key])
        a.scatter(X[:, 0], np.full(X.shape[0], a.get_ylim()[0]), color="r", s=12, zorder=3, label="D (x_i)")
        a.axvline(s_star, ls="--", color="r", lw=0.8, label="S*")
        a.set_xlabel("query Q")
        a.set_ylabel(lab)
    ax[0].axvline(q_star_M, ls=":", color="k", lw=1.0, label="argmax M")
    ax[2].axvline(q_star_kl, ls=":", color="g", lw=1.0, label="argmax KL")
    for a in ax:
        a.legend(fontsize=7)
    ax[1].set_yscale("log")
    fig.suptitle("Fig. 7: 1-D sine toy (App. F.1), differing record S* from Algorithm 1", fontsize=10)
    save_figure(fig, out_dir / "fig7.png")

    fig, ax = new_figure(1, 3, figsize=(14, 3.6))
    for a, row in zip(ax, fig12):
        a.plot(q_grid, row["curve"])
        a.axvline(row["S_x"], ls="--", color="r", lw=0.8, label="S")
        a.axvline(row["argmax_M"], ls=":", color="k", label="Q*")
        a.set_title(f"S_x = {row['S_x']:g}: Q* = {row['argmax_M']:.3f}", fontsize=9)
        a.set_xlabel("query Q")
        a.legend(fontsize=7)
    ax[0].set_ylabel("mean distance M(Q)")
    save_figure(fig, out_dir / "fig12.png")

    fig, ax = new_figure(1, 1, figsize=(7, 3.8))
    for row in fig4:
        line, = ax.plot(q_grid, row["curve"], label=f"S_x = {row['S_x']:g}")
        ax.axvline(row["S_x"], ls="--", color=line.get_color(), lw=0.8)
    ax.scatter(x4, np.zeros_like(x4), color="k", s=10, zorder=3, label="D")
    ax.set_xlabel("query Q")
    ax.set_ylabel("KL LOOD")
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.legend(fontsize=7)
    ax.set_title("Fig. 4a: KL LOOD over queries (RBF); dashed = differing record", fontsize=9)
    save_figure(fig, out_dir / "fig4a.png")

    rows = ([{"figure": "11a/7", "S_x": s_star, "quantity": "argmax M(Q)", "value": q_star_M},
             {"figure": "7", "S_x": s_star, "quantity": "argmax KL(Q)", "value": q_star_kl},
             {"figure": "7", "S_x": s_star, "quantity": "argmax Sigma/Sigma' (grid)", "value": ratio_peak}]
            + [{"figure": "12", "S_x": r["S_x"], "quantity": "argmax M(Q)", "value": r["argmax_M"]} for r in fig12]
            + [{"figure": "4a", "S_x": r["S_x"], "quantity": "argmax KL(Q)", "value": r["argmax_kl"]} for r in fig4])
    table = pd.DataFrame(rows)
    write_table(table, out_dir, "seed003_toy")
    summary = {"S_star": s_star, "paper_S_star": 3.899, "argmax_M_at_S_star": q_star_M,
               "argmax_KL_at_S_star": q_star_kl, "argmax_variance_ratio_grid": ratio_peak,
               "M_at_Q_star_over_M_at_S_star": float(c["pair"].lood([[q_star_M]], "mean_distance")
                                                     / c["pair"].at_differing("mean_distance")),
               "fig12_argmax_minus_S": {f"{r['S_x']:g}": r["argmax_M"] - r["S_x"] for r in fig12},
               "fig4a_max_abs_argmax_minus_S": float(max(abs(r["argmax_kl"] - r["S_x"]) for r in fig4)),
               "x_D": X[:, 0]}
    write_run_record(out_dir, "seed003-toy", {"seed": seed, "quick": quick, "n_grid": n_grid, "noise": NOISE,
                                              "kernel": KERNEL.describe(), "n_D": 10, "fig4a_n_D": 20,
                                              "fig4a_S_x": S4},
                     summary, round(time.perf_counter() - t0, 3))
    return summary
