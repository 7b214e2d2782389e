"""Figures 2, 3 and 5 of seed 000 (sec. 4, App. C): LiRA membership inference against the certified
epsilon, with an attack that is optimal for the threat model and empirical epsilon lower bounds.

The sweeps (grid points, seeds, the audited tasks, the lower <= certified check) are in
:mod:`.lira_sweep`; this module draws the figures from them:

* Fig. 2: excess TPR @ FPR = 10% against the certified epsilon (L = 1 sweep), and the certified epsilon
  against r (right panel, shared with the ``fig2-bound`` experiment);
* Fig. 3: excess TPR @ FPR = 10% against the number of paths L (r = 1, sigma = 5), with the non-private
  benchmark and epsilon(L);
* Fig. 5: both at FPR = 1%. ``sweeps_from=(L1_RUNS_CSV, L_RUNS_CSV)`` draws it from the per-point rows of
  earlier ``fig2``/``fig3`` runs (the same grid points, seeds and sizes, so the same data; checked)
  instead of auditing every point again.

Fig. 6 (shadow histograms) is :mod:`.lira_histograms`. Certified epsilons use the proven Lemma B.7
constants and the improved RDP conversion; ``constants="published"`` puts the paper's (uncovered)
values on the epsilon axis.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ...accounting.conversion import check_conversion
from ...errors import InvalidParameterError
from ..common import new_figure, save_figure, write_table
from . import lira_sweep as sw


def _sigma_label(s: float) -> str:
    return "sigma = inf" if math.isinf(s) else f"sigma = {s:g}"


def _band(ax, x, mean, std, **kw):
    line, = ax.plot(x, mean, **kw)
    ax.fill_between(x, mean - std.fillna(0.0), mean + std.fillna(0.0), color=line.get_color(), alpha=0.18, lw=0)
    return line


def plot_vs_epsilon(ax, summ: pd.DataFrame, fpr: str, xcol: str) -> None:
    """Excess TPR@fpr against the certified epsilon, one curve (with +-1 std band) per sigma."""
    colors: dict = {}
    for attack, style in (("paper", "-"), ("exact", "--")):
        sub = summ[summ["attack"] == attack]
        for sigma, g in sub.groupby("sigma", sort=True):
            g = g.sort_values(xcol)
            kw = dict(ls=style, marker="o" if attack == "paper" else None, ms=3, lw=1.5 if attack == "paper" else 1.0)
            if sigma in colors:
                kw["color"] = colors[sigma]
            line = _band(ax, g[xcol], g[f"excess@{fpr}_mean"], g[f"excess@{fpr}_std"],
                         label=f"{_sigma_label(sigma)} ({attack}, {int(g['seeds'].max())} seeds)", **kw)
            colors.setdefault(sigma, line.get_color())
    ax.set_xscale("log")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xlabel("certified epsilon (delta = 0.05)" if xcol == "epsilon_certified"
                  else "epsilon with the published constants (NOT covered by the lemmas)")
    ax.set_ylabel(f"excess TPR @ FPR = {fpr} (TPR - {fpr})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def _fig2_right(ax, constants: str, conversion: str) -> pd.DataFrame:
    from .fig1 import epsilon_vs_r, plot_epsilon_vs_r
    from .fig2_bound import BOUND_OPTS, EPS_GUIDE, crossings

    sigmas = tuple(sorted(set(sw.FIG2_SIGMAS)))
    df = epsilon_vs_r(np.geomspace(0.01, 10.0, 121), sigmas, n=sw.N, delta=sw.DELTA, constants=constants, **BOUND_OPTS)
    plot_epsilon_vs_r(ax, df, conversion, f"certified epsilon vs r (L = 1, {conversion} conversion)")
    ax.axhline(EPS_GUIDE, ls="--", color="k", lw=1)
    cross = crossings(sigmas, constants=constants, conversion=conversion)
    for (_, row), line in zip(cross.iterrows(), ax.get_lines()):
        if math.isfinite(row["r_at_epsilon_10"]):
            ax.axvline(row["r_at_epsilon_10"], ls="--", color=line.get_color(), lw=0.8)
    ax.set_ylabel("epsilon")
    ax.legend(fontsize=8)
    return cross


def fig2(out_dir: Path, *, quick: bool, executor, seed: int = 0, constants: str = "proven",
         conversion: str = "improved") -> dict:
    """Fig. 2: excess TPR@FPR=0.1 vs certified epsilon (left), certified epsilon vs r (right)."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    sw.check_constants(constants)
    check_conversion(conversion)   # checked after the sweep had written its tables (red team, experiment CLI)
    df, summ, checked = sw.l1_sweep(out_dir, quick, executor, seed, "fig2")
    fig, (axl, axr) = new_figure(1, 2, figsize=(13, 4.8))
    plot_vs_epsilon(axl, summ, "0.1", sw.eps_column(constants))
    axl.set_title(f"MIA success vs epsilon (n = {sw.N}, L = 1, delta = {sw.DELTA:g}); bands: +-1 std over seeds",
                  fontsize=10)
    cross = _fig2_right(axr, constants, conversion)
    png = save_figure(fig, out_dir / "fig2.png")
    write_table(cross, out_dir, "fig2_crossings")
    return sw.finish(out_dir, "fig2", t0, quick, seed, constants, df, summ, checked, png,
                   {"sigmas": sw.grid("fig2_sigmas", sw.FIG2_SIGMAS, quick), "r": sw.grid("fig2_r", sw.FIG2_R, quick), "L": 1,
                    "exact_seeds": 1 if quick else sw.FIG2_EXACT_SEEDS, "conversion_right_panel": conversion})


def plot_vs_L(ax, summ: pd.DataFrame, fpr: str, eps_col: str = "epsilon_certified") -> None:
    """Excess TPR@fpr against L for both attacks, the non-private benchmark, and epsilon (the certified
    one, or with ``eps_col="epsilon_published_not_covered"`` the paper's uncovered one) on a second axis."""
    for attack, style in (("paper", "-o"), ("exact", "--s")):
        g = summ[summ["attack"] == attack].sort_values("L")
        _band(ax, g["L"], g[f"excess@{fpr}_mean"], g[f"excess@{fpr}_std"], ls=style[:-1] or "-",
              marker=style[-1], ms=3, label=f"{attack} attack")
    b = summ[summ["attack"] == "benchmark"]
    if len(b):
        m, s = float(b[f"excess@{fpr}_mean"].iloc[0]), float(np.nan_to_num(b[f"excess@{fpr}_std"].iloc[0]))
        ax.axhline(m, color="k", ls=":", label="non-private benchmark (exact mu0, v0)")
        ax.axhspan(m - s, m + s, color="k", alpha=0.08, lw=0)
    ax.set_xscale("log")
    ax.set_xlabel("number of released paths L")
    ax.set_ylabel(f"excess TPR @ FPR = {fpr}")
    ax.grid(True, which="both", alpha=0.3)
    ax2 = ax.twinx()
    g = summ[summ["attack"] == "paper"].sort_values("L")
    label = ("certified epsilon" if eps_col == "epsilon_certified"
             else "epsilon, published constants (NOT covered by the lemmas)")
    ax2.plot(g["L"], g[eps_col], color="tab:red", lw=1.2, label=label)
    ax2.set_ylabel(f"{label} (delta = {sw.DELTA:g})", color="tab:red")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper left")


def fig3(out_dir: Path, *, quick: bool, executor, seed: int = 0, constants: str = "proven") -> dict:
    """Fig. 3: excess TPR@FPR=0.1 vs L (r = 1, sigma = 5) with the non-private benchmark and epsilon(L)."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    sw.check_constants(constants)
    df, summ, checked = sw.l_sweep(out_dir, quick, executor, seed, "fig3")
    fig, ax = new_figure(1, 1, figsize=(7, 4.8))
    plot_vs_L(ax, summ, "0.1", sw.eps_column(constants))
    ax.set_title(f"Releasing L paths: r = {sw.FIG3_R:g}, sigma = {sw.FIG3_SIGMA:g}, n = {sw.N}, delta = {sw.DELTA:g}", fontsize=10)
    png = save_figure(fig, out_dir / "fig3.png")
    return sw.finish(out_dir, "fig3", t0, quick, seed, constants, df, summ, checked, png,
                   {"r": sw.FIG3_R, "sigma": sw.FIG3_SIGMA, "L": sw.grid("fig3_L", sw.FIG3_L, quick)})


def fig5(out_dir: Path, *, quick: bool, executor, seed: int = 0, constants: str = "proven",
         sweeps_from=None) -> dict:
    """Fig. 5: as Figs 2 (left) and 3 at FPR = 1%. ``sweeps_from``: (L = 1 runs CSV, L-sweep runs CSV)
    of earlier fig2 / fig3 runs with the same seed and size, used instead of re-auditing every point."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    sw.check_constants(constants)
    left_from, right_from = _sweep_sources(sweeps_from)
    df2, summ2, c2 = sw.l1_sweep(out_dir, quick, executor, seed, "fig5_left", runs_from=left_from)
    df3, summ3, c3 = sw.l_sweep(out_dir, quick, executor, seed, "fig5_right", runs_from=right_from)
    fig, (axl, axr) = new_figure(1, 2, figsize=(13, 4.8))
    plot_vs_epsilon(axl, summ2, "0.01", sw.eps_column(constants))
    axl.set_title(f"MIA success vs epsilon at FPR = 1% (n = {sw.N}, L = 1)", fontsize=10)
    plot_vs_L(axr, summ3, "0.01", sw.eps_column(constants))
    axr.set_title(f"Releasing L paths at FPR = 1% (r = {sw.FIG3_R:g}, sigma = {sw.FIG3_SIGMA:g})", fontsize=10)
    png = save_figure(fig, out_dir / "fig5.png")
    df = pd.concat([df2.assign(panel="left"), df3.assign(panel="right")], ignore_index=True)
    summ = pd.concat([summ2.assign(panel="left"), summ3.assign(panel="right")], ignore_index=True)
    return sw.finish(out_dir, "fig5", t0, quick, seed, constants, df, summ, c2 + c3, png,
                     {"left": {"sigmas": sw.grid("fig2_sigmas", sw.FIG2_SIGMAS, quick),
                               "r": sw.grid("fig2_r", sw.FIG2_R, quick)},
                      "right": {"r": sw.FIG3_R, "sigma": sw.FIG3_SIGMA, "L": sw.grid("fig3_L", sw.FIG3_L, quick)},
                      "sweeps_from": None if sweeps_from is None else [str(left_from), str(right_from)]})


def _sweep_sources(sweeps_from):
    if sweeps_from is None:
        return None, None
    if isinstance(sweeps_from, (str, Path)) or len(sweeps_from) != 2:
        raise InvalidParameterError("sweeps_from", "two CSV files: the L = 1 runs and the L-sweep runs",
                                    sweeps_from)
    return Path(sweeps_from[0]), Path(sweeps_from[1])
