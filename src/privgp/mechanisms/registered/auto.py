"""``--mechanism auto``: the mechanism and its public settings chosen from public inputs only.

The choice uses n, epsilon, delta and the box (never the data), in two steps.

1. **Which noise.** The noisy grid's per-cell sums and counts have L2 sensitivity 2 and L1 sensitivity 4
   (proofs in :mod:`~privgp.mechanisms.registered.grid` and :mod:`~privgp.mechanisms.registered.laplace_grid`).
   Gaussian noise calibrated to (epsilon, delta) on the exact GDP profile has std s_G = 2 / mu(epsilon, delta);
   Laplace noise of scale 4 / epsilon has std s_L = 4 sqrt(2) / epsilon and is epsilon-DP, hence
   (epsilon, delta)-DP for every delta. auto takes the one with the smaller std: the Laplace grid wherever
   s_L <= s_G -- at every epsilon >= 0.005 for delta <= 1e-6 (privgp's default deltas: s_L / s_G = 0.36-0.78
   for epsilon in [0.1, 50]; below epsilon = 0.0041 at delta = 1e-6 the Gaussian's is smaller) -- and the
   Gaussian grid where a large delta makes its noise smaller (for instance delta = 1e-3 at epsilon <= 1).
2. **Which settings.** The shipped table for that noise and dimension (``data/auto_laplace_grid.json`` or
   ``data/auto_grid.json``; in 1-D ``data/auto_laplace_grid_1d.json`` or ``data/auto_grid_1d.json``, where n
   records fill k cells, not k^2), written by ``scripts/tune_auto_grid.py [--noise laplace] [--dim 1]`` on pilot
   simulations of public synthetic fields with seeds the utility study does not use, gives the number of cells
   and the smoothing bandwidth with the best mean excursion IoU at the nearest tabulated (log n, log std).

Why only grids: in the utility study (``privgp experiment utility``; README, "Maps worth publishing") the
tuned grids are at least as good as every seed mechanism at their tuned settings in every (n, epsilon) cell
measured; where that changes, this module is where the choice between mechanisms goes. The release,
certificate and verification are the chosen mechanism's; its certificate records that auto chose the
settings, and why.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from typing import Any

from ...accounting.gaussian import gaussian_noise_std
from ...errors import CertificateMismatch
from ...models.domain import Box
from ..interface import VERIFY_MEMORY_LIMIT, Mechanism, Recorded, Request, registry
from ..release import ResponseMap, default_delta
from .grid import DEFAULT_MEMORY_LIMIT, GRID_SENSITIVITY, NoisyGridPlan, plan_grid
from .laplace_grid import L1_SENSITIVITY, LaplaceGridPlan, plan_laplace_grid

#: the shipped tuning tables, by noise and dimension
TABLES = {("gaussian", 2): "auto_grid.json", ("laplace", 2): "auto_laplace_grid.json",
          ("gaussian", 1): "auto_grid_1d.json", ("laplace", 1): "auto_laplace_grid_1d.json"}


@lru_cache(maxsize=4)
def table(noise: str = "gaussian", dim: int = 2) -> dict:
    """The shipped tuning table for ``noise`` in ``dim`` dimensions (see scripts/tune_auto_grid.py)."""
    name = TABLES[noise, dim]
    text = resources.files("privgp.mechanisms").joinpath("data", name).read_text(encoding="utf-8")
    return json.loads(text)


def choose_grid_settings(n: int, noise_std: float, noise: str = "gaussian", dim: int = 2) -> dict:
    """The entry of the table for ``noise`` and ``dim`` nearest to (n, noise std) in (log n, log std); public
    inputs only."""
    entries = table(noise, dim)["entries"]
    ln, ls = math.log(n), math.log(noise_std)
    return min(entries, key=lambda e: (math.log(e["n"]) - ln) ** 2 + (math.log(e["noise_std"]) - ls) ** 2)


def _log_phi_minus(x: float) -> float:
    """log Phi(-x) (standard normal), -inf where it underflows."""
    t = 0.5 * math.erfc(x / math.sqrt(2.0))
    return math.log(t) if t > 0 else -math.inf


def gaussian_delta_at_laplace_std(epsilon: float) -> float:
    """delta(epsilon) of the Gaussian grid if its noise std were the Laplace grid's, 4 sqrt(2) / epsilon: the
    exact GDP profile Phi(-a + b) - e^eps Phi(-a - b) at mu = 2 / std = epsilon / (2 sqrt 2), i.e. a = eps / mu
    = 2 sqrt 2, b = mu / 2 (Dong, Roth & Su 2022, Cor. 2.13; math.erfc, no scipy: it decides only which of two
    calibrated mechanisms runs, never a guarantee)."""
    a, b = 2.0 * math.sqrt(2.0), epsilon / (4.0 * math.sqrt(2.0))
    first = math.exp(_log_phi_minus(a - b))
    second = math.exp(min(epsilon + _log_phi_minus(a + b), 700.0))
    return max(first - second, 0.0)


def choose_noise(epsilon: float, delta: float) -> str:
    """'laplace' where its noise std is at most the Gaussian grid's at (epsilon, delta), else 'gaussian'.
    delta(epsilon) of a mu-GDP mechanism grows with mu, so the Gaussian calibration needs std >= the Laplace std
    exactly when the Gaussian with the Laplace std is not (epsilon, delta)-DP: its delta(epsilon) >= delta."""
    return "laplace" if gaussian_delta_at_laplace_std(epsilon) >= delta else "gaussian"


def cells_for_box(cells: int, domain: Box) -> int:
    """Cells along the longest side of ``domain`` for a table entry tuned on the unit square with ``cells`` per
    side: the same cell AREA as a fraction of the box, i.e. ``cells * sqrt(longest / shortest side)``."""
    w = domain.widths
    return max(1, int(round(cells * math.sqrt(float(w.max() / w.min())))))


def plan_auto(n: int, domain: Box, response_map: ResponseMap, *, epsilon: float, delta: float | None = None,
              grid: int = 121, memory_limit: float = DEFAULT_MEMORY_LIMIT,
              table_dim: int | None = None) -> NoisyGridPlan | LaplaceGridPlan:
    """The plan of the grid with the smaller noise at (epsilon, delta), with its tuned cells and bandwidth.
    ``table_dim``: the table's dimension (default the box's; 2 in 1-D is the rule before 2026-11-26, only to
    verify a release made under it)."""
    delta = default_delta(n) if delta is None else delta
    noise = choose_noise(epsilon, delta)
    std = (L1_SENSITIVITY * math.sqrt(2.0) / epsilon if noise == "laplace"
           else float(gaussian_noise_std(GRID_SENSITIVITY, epsilon, delta)))
    entry = choose_grid_settings(n, std, noise, domain.dim if table_dim is None else table_dim)
    cells = cells_for_box(int(entry["cells"]), domain)
    why = (f"auto: tuned on public pilot simulations (table entry n={entry['n']}, noise std {entry['noise_std']:g}; "
           f"pilot IoU {entry['pilot_iou']:.2f})")
    if noise == "laplace":
        why += f"; Laplace noise, its std {std:.4g} at most the Gaussian grid's at this (epsilon, delta)"
        return plan_laplace_grid(n, domain, response_map, epsilon=epsilon, delta=delta, cells=cells,
                                 bandwidth=float(entry["bandwidth"]), grid=grid, hyperparameter_source=why,
                                 memory_limit=memory_limit)
    return plan_grid(n, domain, response_map, epsilon=epsilon, delta=delta, cells=cells,
                     bandwidth=float(entry["bandwidth"]), grid=grid, hyperparameter_source=why,
                     memory_limit=memory_limit)


def check_auto_choice(recorded: Recorded, plan: Any) -> str | None:
    """``privgp verify``: a grid release whose settings say ``auto`` chose them must hold the settings
    :func:`plan_auto` chooses for its public inputs (n, epsilon, delta, box, grid); else CertificateMismatch.
    A 1-D release holding what the 2-D table chose (privgp before 2026-11-26) passes with a note (returned)."""
    source = recorded.setting("hyperparameters") if recorded.has("hyperparameters") else ""
    if not (isinstance(source, str) and source.startswith("auto")):
        return None
    grid = recorded.setting("grid")

    def chosen(table_dim: int | None):
        again = plan_auto(plan.n, plan.domain, plan.response_map, epsilon=float(plan.target_epsilon),
                          delta=plan.delta, grid=max(int(g) for g in grid), memory_limit=VERIFY_MEMORY_LIMIT,
                          table_dim=table_dim)
        same = (again.mechanism, tuple(again.cells), again.bandwidth, again.hyperparameter_source,
                tuple(again.grid)) == (plan.mechanism, tuple(plan.cells), plan.bandwidth, source, tuple(plan.grid))
        return again, same

    again, same = chosen(None)
    if same:
        return None
    if plan.domain.dim == 1 and chosen(2)[1]:
        return ("public_settings.hyperparameters: auto's choice by the 2-D table, as privgp before 2026-11-26 chose "
                "for 1-D data (today's 1-D table chooses other cells)")
    raise CertificateMismatch("public_settings.hyperparameters", f"says auto chose these settings, but auto "
                              f"chooses {again.mechanism} with cells {list(again.cells)}, bandwidth "
                              f"{again.bandwidth:g} for these public inputs")


class Auto(Mechanism):
    """Chooses the mechanism and its public settings from public inputs only; its plan is the chosen
    mechanism's, which then releases, writes, certifies, reports and verifies it (:meth:`resolve`). The
    certificate names the chosen mechanism and records, in its settings, that auto chose them and why."""

    name = "auto"
    help = ("privgp chooses the mechanism and its settings from public inputs only (n, epsilon, delta, box): the "
            "noisy grid with the smaller noise at this (epsilon, delta) -- Laplace (pure epsilon-DP) at privgp's "
            "default deltas -- with cells and smoothing tuned on public synthetic data; the tuned grids were at "
            "least as good as every seed mechanism in the utility study (privgp experiment utility)")
    reads_cell_statistics = True
    forecast_reps = 8
    order = 60

    def plan(self, request: Request) -> NoisyGridPlan | LaplaceGridPlan:
        return plan_auto(request.n, request.domain, request.response_map, epsilon=self.epsilon(request),
                         delta=request.delta, grid=request.grid_points(), memory_limit=request.memory_limit)

    def resolve(self, plan: NoisyGridPlan | LaplaceGridPlan) -> Mechanism:
        return registry()[plan.mechanism]

    def _chosen(self, *args, **kwargs):
        raise TypeError("auto releases through the mechanism it chose: use resolve(plan)")

    rebuild = files = fields = report_text = summary = summary_lines = _chosen
