"""``--mechanism auto``: the mechanism and its public settings chosen from public inputs only.

The choice uses n, epsilon, delta and the box (never the data): the Gaussian noise std s of the
noisy-grid statistics follows from (epsilon, delta) (exact GDP calibration), and the shipped table
``data/auto_grid.json`` -- written by ``scripts/tune_auto_grid.py`` on pilot simulations of public
synthetic fields (seeds that the utility study does not use) -- gives the number of cells and the
smoothing bandwidth with the best mean excursion IoU at the nearest tabulated (log n, log s).

Why the noisy grid: in the utility study (``privgp experiment utility``; docs/results.md, "Maps worth
publishing") the tuned noisy grid is at least as good as every seed mechanism at their tuned
settings in every (n, epsilon) cell measured; where that changes, this module is where the choice
between mechanisms goes. The released object, certificate and verification are the noisy grid's
(:mod:`privgp.mechanisms.registered.grid`); the certificate records that auto chose it, and why.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources

from ...accounting.gaussian import gaussian_noise_std
from ...models.domain import Box
from ..interface import Mechanism, Request, registry
from ..release import ResponseMap, default_delta
from .grid import DEFAULT_MEMORY_LIMIT, GRID_SENSITIVITY, NoisyGridPlan, plan_grid

TABLE = "auto_grid.json"


@lru_cache(maxsize=1)
def table() -> dict:
    """The shipped tuning table (see scripts/tune_auto_grid.py)."""
    return json.loads(resources.files("privgp.mechanisms").joinpath("data", TABLE).read_text(encoding="utf-8"))


def choose_grid_settings(n: int, noise_std: float) -> dict:
    """The table entry nearest to (n, noise std) in (log n, log s); public inputs only."""
    entries = table()["entries"]
    ln, ls = math.log(n), math.log(noise_std)
    return min(entries, key=lambda e: (math.log(e["n"]) - ln) ** 2 + (math.log(e["noise_std"]) - ls) ** 2)


def cells_for_box(cells: int, domain: Box) -> int:
    """Cells along the longest side of ``domain`` for a table entry tuned on the unit square with ``cells`` per
    side: the same cell AREA as a fraction of the box, i.e. ``cells * sqrt(longest / shortest side)``."""
    w = domain.widths
    return max(1, int(round(cells * math.sqrt(float(w.max() / w.min())))))


def plan_auto(n: int, domain: Box, response_map: ResponseMap, *, epsilon: float, delta: float | None = None,
              grid: int = 121, memory_limit: float = DEFAULT_MEMORY_LIMIT) -> NoisyGridPlan:
    """The noisy-grid plan with the tuned cells and bandwidth for this (n, epsilon, delta)."""
    delta = default_delta(n) if delta is None else delta
    s = float(gaussian_noise_std(GRID_SENSITIVITY, epsilon, delta))
    entry = choose_grid_settings(n, s)
    cells = cells_for_box(int(entry["cells"]), domain)
    why = (f"auto: tuned on public pilot simulations (table entry n={entry['n']}, noise std {entry['noise_std']:g}; "
           f"pilot IoU {entry['pilot_iou']:.2f})")
    return plan_grid(n, domain, response_map, epsilon=epsilon, delta=delta, cells=cells,
                     bandwidth=float(entry["bandwidth"]), grid=grid, hyperparameter_source=why,
                     memory_limit=memory_limit)


class Auto(Mechanism):
    """Chooses the mechanism and its public settings from public inputs only; its plan is the chosen
    mechanism's, which then releases, writes, certifies, reports and verifies it (:meth:`resolve`). The
    certificate names the chosen mechanism and records, in its settings, that auto chose them and why."""

    name = "auto"
    help = ("privgp chooses the mechanism and its settings from public inputs only (n, epsilon, delta, box) by "
            "forecasts on public synthetic data; today the tuned noisy grid, which was at least as good as every "
            "seed mechanism in the utility study (privgp experiment utility)")
    reads_cell_statistics = True
    forecast_reps = 8
    order = 60

    def plan(self, request: Request) -> NoisyGridPlan:
        return plan_auto(request.n, request.domain, request.response_map, epsilon=self.epsilon(request),
                         delta=request.delta, grid=request.grid_points(), memory_limit=request.memory_limit)

    def resolve(self, plan: NoisyGridPlan) -> Mechanism:
        return registry()[plan.mechanism]

    def _chosen(self, *args, **kwargs):
        raise TypeError("auto releases through the mechanism it chose: use resolve(plan)")

    rebuild = files = fields = report_text = summary = summary_lines = _chosen
