"""``privgp release --mechanism functional``: the GP posterior mean with ridge r plus GP noise c g of the
same kernel (the functional mechanism of Hall et al. 2013 with the Gaussian-DP analysis of seed 002,
Thm 4.1). The options, the plan and the outputs of this mechanism; the command itself (data, domain,
response map, ledger, atomic outputs) is :mod:`privgp.cli.release`.

Shared options it uses: --kernel, --lengthscale, --epsilon, --delta, --grid, and --r / --sensitivity
(registered by the posterior-sample group; here r is the ridge of the posterior mean and the
sensitivity lemma bounds its RKHS sensitivity). Options of the posterior-sample mechanism that do not
apply (--sigma, --eta, --L > 1, --snap, --conversion mironov) are refused with a one-line error.
"""
from __future__ import annotations

from pathlib import Path

from ..domain import PublicGrid
from ..errors import InvalidParameterError
from ..mechanisms import functional as fm
from ..mechanisms.posterior_release import default_lengthscale
from ..mechanisms.release import default_delta, grid_sizes
from . import release_posterior as rp
from .release_figure import PictureContext, ReleasedField
from .release_publish import verify_recompute
from .release_report import MechanismReport

NAME = "functional"
HELP = ("the GP posterior mean plus GP noise of the same kernel (functional mechanism; seed 002, Thm 4.1: "
        "c = Delta / mu with Delta the posterior mean's RKHS sensitivity, <= seed 000's Delta_n)")
DEFAULT_EPSILON = 5.0
#: without --r: the smallest r whose noise std c is at most this (model units, |y| <= 1)
DEFAULT_NOISE_BOUND = 0.2
#: options of this mechanism only (refused with another --mechanism)
OWN_OPTIONS = ("noise_bound", "noise_analysis")
PICTURE = rp.PICTURE


def add_arguments(group) -> None:
    group.add_argument("--noise-bound", type=float, metavar="C",
                       help="without --r: calibrate the smallest ridge r whose noise std c is <= C, from public "
                            f"quantities only (model units, |y| <= 1; default {DEFAULT_NOISE_BOUND:g})")
    group.add_argument("--noise-analysis", choices=sorted(fm.MULTIPLIERS),
                       help="how c is chosen for the target epsilon: gdp (seed 002 Thm 4.1, default and tightest), "
                            "rdp (Jiang et al. 2023), hall (Hall et al. 2013 Thm 3.3, epsilon <= 1 only)")


def plan(args, data, domain, rmap, *, memory_limit: float) -> fm.FunctionalPlan:
    for flag in ("sigma", "eta", "snap"):
        if getattr(args, flag, None) is not None:
            raise InvalidParameterError("--" + flag, "left out with --mechanism functional (a posterior-sample option)",
                                        getattr(args, flag))
    if getattr(args, "L", 1) != 1:
        raise InvalidParameterError("--L", "1 with --mechanism functional (one released function per release)", args.L)
    if getattr(args, "conversion", "improved") != "improved":
        raise InvalidParameterError("--conversion", "left out with --mechanism functional (its guarantee is the exact "
                                    "Gaussian-DP profile, no RDP conversion)", args.conversion)
    r = getattr(args, "r", None)
    if r is not None and args.noise_bound is not None:
        raise InvalidParameterError("--noise-bound", "left out when --r is given", args.noise_bound)
    grid = PublicGrid.on_box(domain, grid_sizes(domain, args.grid or rp.DEFAULT_GRID[domain.dim]))
    noise = None if r is not None else (DEFAULT_NOISE_BOUND if args.noise_bound is None else args.noise_bound)
    return fm.plan_functional(data.n, domain, grid, kernel=args.kernel,
                              lengthscale=default_lengthscale(domain) if args.lengthscale is None else args.lengthscale,
                              r=r, noise_std=noise, epsilon=DEFAULT_EPSILON if args.epsilon is None else args.epsilon,
                              delta=default_delta(data.n) if args.delta is None else args.delta,
                              sensitivity=getattr(args, "sensitivity", "auto"),
                              accounting=args.noise_analysis or "gdp", response_map=rmap, memory_limit=memory_limit)


def write(out: Path, released: fm.FunctionalRelease, plan: fm.FunctionalPlan, data) -> list[str]:
    """paths.npz / paths.csv (the released function as one 'path'), as posterior-sample."""
    names = list(data.coordinates)
    rp._write_paths(out, released, plan, names)
    return list(rp.FILES)


def fields(released: fm.FunctionalRelease, plan: fm.FunctionalPlan) -> ReleasedField:
    """The released function (posterior mean + GP noise) for the picture (model units, threshold 0)."""
    return ReleasedField(axes=released.axes, values=released.paths, noun="released function",
                         plural="released functions")


def report_text(plan: fm.FunctionalPlan, ctx: PictureContext) -> MechanismReport:
    """What this mechanism says in the report (public facts only)."""
    resp = ctx.response
    thr = resp.value(plan.response_map.threshold)
    released = (f"One map of {resp.label} over the public domain: a smooth estimate fitted to the private records "
                f"(a Gaussian-process posterior mean) plus random smooth noise, and where it exceeds the threshold "
                f"{thr}.")
    how = ("The estimate is a smooth function of the records; how far one record can move it is bounded in the "
           "function's own norm (its RKHS sensitivity). Random noise drawn from a Gaussian process with the same "
           "kernel, scaled to that bound, is added once to the whole function (the functional mechanism). "
           "Responses were first put on a clipped, bounded scale.")
    statement = (f"R\u00e4is\u00e4, Markou et al., Thm 4.1: the functional mechanism with noise multiplier c = "
                 f"\u0394/\u03bc is \u03bc-GDP; \u0394 \u2264 {plan.sensitivity:.6g} ({plan.lemma}); the exact "
                 "Gaussian-DP privacy profile gives (\u03b5, \u03b4) with no RDP conversion.")
    given = "set by the data holder"
    rows = (("kernel", plan.kernel, given), ("lengthscale", f"{plan.lengthscale:.6g}", given),
            ("r (ridge)", f"{plan.r:.6g}", plan.hyperparameter_source),
            ("noise multiplier c", f"{plan.multiplier:.6g}", f"calibrated ({plan.accounting}) to the target epsilon"),
            ("grid", " \u00d7 ".join(map(str, plan.grid.sizes)), "resolution of the released map"))
    return MechanismReport(released=released, how=how, statement=statement, hyperparameters=rows, account_command=None,
                           references=("J. Räisä, S. Markou et al., Noise-Aware Differentially Private Regression "
                                       "via Meta-Learning (seed paper 002).",
                                       "R. Hall, A. Rinaldo and L. Wasserman, Differential Privacy for Functions and "
                                       "Functional Data, JMLR 2013."))


def verify(doc: dict):
    """Recompute the certificate from its recorded event (exact GDP profile)."""
    return verify_recompute(doc)


def summary(plan: fm.FunctionalPlan) -> dict:
    return {"L": plan.L, "r": plan.r, "multiplier": plan.multiplier, "sensitivity_bound": plan.sensitivity,
            "noise_analysis": plan.accounting, "lengthscale": plan.lengthscale, "kernel": plan.kernel,
            "hyperparameters": plan.hyperparameter_source, "target_epsilon": plan.epsilon,
            "sensitivity": plan.lemma}


def summary_lines(plan: fm.FunctionalPlan, data) -> list[str]:
    return [
        f"  mechanism   posterior mean + GP noise, mu-GDP (seed 002, Thm 4.1); RKHS sensitivity <= "
        f"{plan.sensitivity:.4g} ({plan.lemma})",
        f"  settings    {plan.kernel} kernel, lengthscale {plan.lengthscale:.4g}, r={plan.r:.4g} "
        f"({plan.hyperparameter_source}"
        + (f" for noise std <= {plan.calibration['target_noise_std']:g}" if plan.calibration else "")
        + f"), noise std c={plan.multiplier:.4g} ({plan.accounting})",
        f"  grid        {' x '.join(map(str, plan.grid.sizes))}",
    ]
