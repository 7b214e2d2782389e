"""Figure 6 of seed 000 (App. C): shadow histograms of the release statistics with the fitted App. C
densities (the paper's attack), L = 3 paths, four (r, sigma) columns, one seed. The game's setting is
that of :mod:`.lira_sweep` (n = 10, x0 = 1/2, M_xi = 0, lengthscale 1, delta = 0.05).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...audit.membership.attacks import fit_paper_attack
from ...audit.membership.game import play
from ...formatting import format_upper
from ..common import new_figure, save_figure, write_run_record
from . import lira_sweep as sw

FIG6_L = 3
FIG6_COLUMNS = ((0.1, 0.5), (0.1, 50.0), (1.0, 5.0), (5.0, 0.5))


def fig6_column(item: tuple[float, float, int, int], *, bins: int = 60) -> dict:
    """Shadow histograms of f_hat and log v_hat (in/out) with the fitted App. C densities, one column."""
    r, sigma, seed, size = item
    game = sw.game_at(r, sigma, FIG6_L)
    data, rng = play(game, size, size, seed)
    att = fit_paper_attack(data, rng)       # the "paper" attack of audit.attacks.fit_attack
    assert att.v_in is not None and att.v_out is not None   # L = 3 > 1: the v_hat densities are fitted
    eps = float(game.certified_epsilon(sw.DELTA).epsilon)
    out: dict[str, Any] = {"r": r, "sigma": sigma, "epsilon_certified": eps, "columns": {}}
    for stat, pops, dens in (("fhat", (data.shadow_in.fhat, data.shadow_out.fhat), (att.f_in, att.f_out)),
                             ("log_vhat", (np.log(data.shadow_in.vhat), np.log(data.shadow_out.vhat)),
                              (att.v_in, att.v_out))):
        lo = min(np.quantile(p, 0.001) for p in pops)
        hi = max(np.quantile(p, 0.999) for p in pops)
        edges = np.linspace(lo, hi, bins + 1)
        centres = 0.5 * (edges[1:] + edges[:-1])
        fine = np.linspace(lo, hi, 600)
        out["columns"][stat] = {
            "edges": edges, "centres": centres,
            "hist_in": np.histogram(pops[0], edges, density=True)[0],
            "hist_out": np.histogram(pops[1], edges, density=True)[0],
            "fine": fine, "density_in": np.exp(dens[0].logpdf(fine)), "density_out": np.exp(dens[1].logpdf(fine)),
            "density_in_centres": np.exp(dens[0].logpdf(centres)),
            "density_out_centres": np.exp(dens[1].logpdf(centres))}
    return out


def fig6(out_dir: Path, *, quick: bool, executor, seed: int = 0) -> dict:
    """Fig. 6: shadow histograms and fitted latent densities for L = 3 at four (r, sigma)."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    size = sw.QUICK["size"] * 5 if quick else sw.SIZE
    cols = executor.map(fig6_column, [(r, s, seed, size) for r, s in FIG6_COLUMNS], desc="fig6: fits")
    fig, axes = new_figure(2, len(cols), figsize=(4.2 * len(cols), 7.0))
    rows = []
    for j, col in enumerate(cols):
        for i, (stat, label) in enumerate((("fhat", "f_hat(x0)"), ("log_vhat", "log v_hat(x0)"))):
            c = col["columns"][stat]
            ax = axes[i, j]
            w = np.diff(c["edges"])
            ax.bar(c["centres"], c["hist_in"], width=w, alpha=0.35, color="tab:red", label="in (shadow)")
            ax.bar(c["centres"], c["hist_out"], width=w, alpha=0.35, color="tab:blue", label="out (shadow)")
            ax.plot(c["fine"], c["density_in"], color="tab:red", lw=1.4, label="fitted in")
            ax.plot(c["fine"], c["density_out"], color="tab:blue", lw=1.4, label="fitted out")
            ax.set_xlabel(label)
            if i == 0:
                ax.set_title(f"r = {col['r']:g}, sigma = {col['sigma']:g}, epsilon <= {format_upper(col['epsilon_certified'])}",
                             fontsize=10)
            if i == j == 0:
                ax.legend(fontsize=7)
            rows.append(pd.DataFrame({"r": col["r"], "sigma": col["sigma"], "statistic": stat,
                                      "bin_left": c["edges"][:-1], "bin_right": c["edges"][1:],
                                      "hist_in": c["hist_in"], "hist_out": c["hist_out"],
                                      "fitted_in": c["density_in_centres"], "fitted_out": c["density_out_centres"],
                                      "epsilon_certified": col["epsilon_certified"]}))
    fig.suptitle(f"Shadow distributions at x0 = 1/2 (n = {sw.N}, L = {FIG6_L}, M_xi = 0, delta = {sw.DELTA:g})", fontsize=11)
    png = save_figure(fig, out_dir / "fig6.png", dpi=100)
    table = pd.concat(rows, ignore_index=True)
    table.to_csv(out_dir / "fig6.csv", index=False)
    summary = {"png": str(png), "csv": str(out_dir / "fig6.csv"),
               "epsilon_certified": {f"r={c['r']:g},sigma={c['sigma']:g}": c["epsilon_certified"] for c in cols}}
    seconds = round(time.perf_counter() - t0, 3)
    write_run_record(out_dir, "fig6", {"n": sw.N, "x0": sw.X0, "lengthscale": sw.LENGTHSCALE, "M_xi": sw.M_XI, "L": FIG6_L,
                                       "columns": [list(c) for c in FIG6_COLUMNS], "datasets": size, "seed": seed,
                                       "delta": sw.DELTA, "quick": quick}, summary, seconds)
    return summary
