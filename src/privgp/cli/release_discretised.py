"""``privgp release --mechanism discretised-gaussian``: seed 002's App. A.5 Gaussian mechanism on
discretisation points (eq. 37), as the paper states it, for the comparison only
(:class:`privgp.mechanisms.grid.DiscretisedGaussianPlan`)."""
from __future__ import annotations

from pathlib import Path

from ..accounting import PrivacyCertificate
from ..mechanisms.grid import DiscretisedGaussianPlan, GridField, plan_discretised_gaussian
from . import release_grid
from . import release_publish as publish
from .release_figure import PictureContext, ReleasedField
from .release_report import MechanismReport

NAME = "discretised-gaussian"
HELP = ("seed 002 App. A.5, eq. (37): SetConv density and signal channels at m public points with Gaussian "
        "noise per value (mu = sqrt(5 m) / s); for comparison only, its noise grows with m")
DEFAULT_POINTS = 6
OWN_OPTIONS = ("points",)
PICTURE = release_grid.PICTURE
FILES = release_grid.FILES


def add_arguments(group) -> None:
    group.add_argument("--points", type=int, metavar="M",
                       help=f"discretisation points along the longest side (default {DEFAULT_POINTS}); "
                            "--lengthscale sets the RBF lengthscale (default: the point spacing)")


def plan(args, data, domain, rmap, *, memory_limit: float) -> DiscretisedGaussianPlan:
    release_grid.refuse_unused(args, NAME)
    return plan_discretised_gaussian(data.n, domain, rmap,
                                     epsilon=release_grid.DEFAULT_EPSILON if args.epsilon is None else args.epsilon,
                                     delta=args.delta, points=DEFAULT_POINTS if args.points is None else args.points,
                                     lengthscale=args.lengthscale,
                                     grid=release_grid.DEFAULT_GRID[domain.dim] if args.grid is None else args.grid,
                                     memory_limit=memory_limit)


def plan_from_settings(doc: dict) -> DiscretisedGaussianPlan:
    def s(key):
        return publish.setting(doc, key)

    return plan_discretised_gaussian(publish.recorded_n(doc), publish.domain_setting(doc),
                                     publish.response_map_setting(doc), epsilon=s("target_epsilon"), delta=s("delta"),
                                     points=publish.grid_points_setting(doc, "points"), lengthscale=s("lengthscale"),
                                     grid=publish.grid_points_setting(doc), hyperparameter_source=s("hyperparameters"))


def write(out: Path, released: GridField, plan: DiscretisedGaussianPlan, data) -> list[str]:
    release_grid.write_field(out, released, plan, list(data.coordinates))
    return list(FILES)


def fields(released: GridField, plan) -> ReleasedField:
    return ReleasedField(axes=released.axes, values=released.field[None], noun="discretised-Gaussian map",
                         plural="discretised-Gaussian maps", sd=released.sd)


def report_text(plan: DiscretisedGaussianPlan, ctx: PictureContext) -> MechanismReport:
    resp = ctx.response
    m = int(plan.event.sensitivity ** 2 / 5 + 0.5)
    released = (f"One map of {resp.label}: the ratio of two smoothed totals (signal and density) released with Gaussian "
                f"noise at {m} public points and interpolated, and where it exceeds the threshold "
                f"{resp.value(plan.response_map.threshold)}.")
    how = ("At each of the public points the kernel-weighted total of the clipped responses and the kernel-weighted "
           "number of records were computed and released with Gaussian noise; each value is protected on its own and "
           "the protections add up over the points (seed 002, App. A.5), so the noise grows with the number of points.")
    statement = (f"Seed 002 (R\u00e4is\u00e4, Markou et al.), App. A.5, eq. (37): \u03bc = sqrt(m (\u0394_s\u00b2 + "
                 f"\u0394_d\u00b2)) / s with \u0394_s\u00b2 = 4, \u0394_d\u00b2 = 1, m = {m}, s = {plan.noise_std:.6g}; "
                 "(\u03b5, \u03b4) from the exact Gaussian-DP profile.")
    rows = (("points", " \u00d7 ".join(map(str, plan.points)), "set by the data holder or privgp's default"),
            ("RBF lengthscale", f"{plan.lengthscale:.6g}", "set by the data holder or the point spacing (default)"),
            ("noise standard deviation", f"{plan.noise_std:.6g}", "calibrated from \u03b5 and \u03b4"))
    return MechanismReport(released=released, how=how, statement=statement, hyperparameters=rows, account_command=None,
                           references=("J. Räisä, S. Markou et al., Noise-Aware Differentially Private Regression via "
                                       "Meta-Learning (seed paper 002), App. A.5.",))


def verify(doc: dict) -> PrivacyCertificate:
    return publish.verify_against_plan(doc, plan_from_settings(doc))


def summary(plan: DiscretisedGaussianPlan) -> dict:
    return {"L": 1, "points": list(plan.points), "lengthscale": plan.lengthscale, "noise_std": plan.noise_std,
            "sensitivity": plan.event.sensitivity, "target_epsilon": plan.target_epsilon}


def summary_lines(plan: DiscretisedGaussianPlan, data) -> list[str]:
    return [f"  mechanism   Gaussian mechanism at {' x '.join(map(str, plan.points))} discretisation points "
            f"(seed 002 eq. 37; noise std {plan.noise_std:.4g})",
            f"  settings    RBF lengthscale {plan.lengthscale:.4g}",
            f"  grid        {' x '.join(map(str, plan.grid))}"]
