"""``privgp release --mechanism auto`` (the default): privgp chooses the mechanism and its public settings
from public inputs only (n, epsilon, delta, box, grid), using forecasts computed on public synthetic data
(:mod:`privgp.mechanisms.auto`). The plan it returns is the chosen mechanism's; the command then
releases, writes, certifies and reports with that mechanism's module (the certificate names the chosen
mechanism and records, in its settings, that auto chose them and why)."""
from __future__ import annotations

from ..errors import InvalidParameterError
from ..mechanisms.auto import plan_auto
from ..mechanisms.grid import NoisyGridPlan
from . import release_grid

NAME = "auto"
HELP = ("privgp chooses the mechanism and its settings from public inputs only (n, epsilon, delta, box) by "
        "forecasts on public synthetic data; today the tuned noisy grid, which was at least as good as every "
        "seed mechanism in the utility study (privgp experiment utility)")
DEFAULT_EPSILON = release_grid.DEFAULT_EPSILON
OWN_OPTIONS: tuple[str, ...] = ()
#: the module whose hooks (write, picture, report, verify) serve the chosen plan
RESOLVES_TO = {"grid": release_grid}


def add_arguments(group) -> None:
    """No options of its own: auto chooses every mechanism setting."""


def plan(args, data, domain, rmap, *, memory_limit: float) -> NoisyGridPlan:
    release_grid.refuse_unused(args, NAME)
    for flag in ("lengthscale",):
        if getattr(args, flag, None) is not None:
            raise InvalidParameterError("--" + flag, "left out with --mechanism auto (auto chooses it; name a "
                                        "mechanism to set it)", getattr(args, flag))
    return plan_auto(data.n, domain, rmap, epsilon=DEFAULT_EPSILON if args.epsilon is None else args.epsilon,
                     delta=args.delta, grid=release_grid.DEFAULT_GRID[domain.dim] if args.grid is None else args.grid,
                     memory_limit=memory_limit)
