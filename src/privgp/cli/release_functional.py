"""``privgp release --mechanism functional``: the GP posterior mean with ridge r plus GP noise c g of the
same kernel (the functional mechanism of Hall et al. 2013 with the Gaussian-DP analysis of seed 002,
Thm 4.1). The options, the plan and the outputs of this mechanism; the command itself (data, domain,
response map, ledger, atomic outputs) is :mod:`privgp.cli.release`.

Shared options it uses: --kernel, --lengthscale, --epsilon, --delta, --grid, --memory-limit, and --r /
--sensitivity / --snap (registered by the posterior-sample group; here r is the ridge of the posterior
mean, the sensitivity lemma bounds its RKHS sensitivity, and --snap R moves each input to the grid
lattice refined R times, a public per-record map, so that the mean costs one unknown per occupied site
whatever n is; default as for posterior sampling: 1 in 2-D, 0 = none in 1-D, where the exponential
kernel's mean is O(n + m) anyway). Options of the posterior-sample mechanism that do not apply
(--sigma, --eta, --L > 1, --conversion mironov) are refused with a one-line error.
"""
from __future__ import annotations

from pathlib import Path

from ..domain import PublicGrid
from ..errors import InvalidParameterError, PrivgpError
from ..mechanisms import functional as fm
from ..mechanisms.posterior_release import default_lengthscale
from ..mechanisms.release import default_delta, grid_sizes
from . import release_posterior as rp
from . import release_publish as publish
from .release_figure import PictureContext, ReleasedField
from .release_report import MechanismReport, chosen_by

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
    for flag in ("sigma", "eta"):
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
    snap = rp.DEFAULT_SNAP[domain.dim] if getattr(args, "snap", None) is None else args.snap
    if snap < 0:
        raise InvalidParameterError("--snap", "an integer >= 0", snap)
    grid = PublicGrid.on_box(domain, grid_sizes(domain, args.grid or rp.DEFAULT_GRID[domain.dim]))
    noise = None if r is not None else (DEFAULT_NOISE_BOUND if args.noise_bound is None else args.noise_bound)
    return fm.plan_functional(data.n, domain, grid, kernel=args.kernel,
                              lengthscale=default_lengthscale(domain) if args.lengthscale is None else args.lengthscale,
                              r=r, noise_std=noise, epsilon=DEFAULT_EPSILON if args.epsilon is None else args.epsilon,
                              delta=default_delta(data.n) if args.delta is None else args.delta,
                              sensitivity=getattr(args, "sensitivity", "auto"),
                              accounting=args.noise_analysis or "gdp", response_map=rmap, memory_limit=memory_limit,
                              snap=snap or None)


def write(out: Path, released: fm.FunctionalRelease, plan: fm.FunctionalPlan, data) -> list[str]:
    """paths.npz / paths.csv (the released function as one 'path'), as posterior-sample."""
    names = list(data.coordinates)
    rp._write_paths(out, released, plan, names)
    return list(rp.FILES)


def fields(released: fm.FunctionalRelease, plan: fm.FunctionalPlan) -> ReleasedField:
    """The released function (posterior mean + GP noise) for the picture (model units, threshold 0)."""
    return ReleasedField(axes=released.axes, values=released.paths, noun="function (posterior mean + GP noise)",
                         plural="functions (posterior mean + GP noise)")


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
           "Responses were first put on a clipped, bounded scale."
           + ("" if plan.snap is None else " Each record's location was first moved to the nearest point of a fixed "
              "public lattice (the map's grid" + ("" if plan.snap == 1 else f" refined {plan.snap} times") + "), a rule "
              "applied to each record separately, so the guarantee holds for the original records."))
    statement = (f"R\u00e4is\u00e4, Markou et al., Thm 4.1: the functional mechanism with noise multiplier c = "
                 f"\u0394/\u03bc is \u03bc-GDP; \u0394 \u2264 {plan.sensitivity:.6g} ({plan.lemma}); the exact "
                 "Gaussian-DP privacy profile gives (\u03b5, \u03b4) with no RDP conversion.")
    rows = (("kernel", plan.kernel, chosen_by(plan.kernel, "exponential")),
            ("lengthscale", f"{plan.lengthscale:.6g}", chosen_by(float(plan.lengthscale),
                                                                  float(default_lengthscale(plan.domain)))),
            ("r (ridge)", f"{plan.r:.6g}", plan.hyperparameter_source),
            ("noise multiplier c", f"{plan.multiplier:.6g}", f"calibrated ({plan.accounting}) to the target epsilon"),
            ("grid", " \u00d7 ".join(map(str, plan.grid.sizes)), "resolution of the released map"))
    return MechanismReport(released=released, how=how, statement=statement, hyperparameters=rows, account_command=None,
                           references=("J. Räisä, S. Markou et al., Noise-Aware Differentially Private Regression "
                                       "via Meta-Learning (seed paper 002).",
                                       "R. Hall, A. Rinaldo and L. Wasserman, Differential Privacy for Functions and "
                                       "Functional Data, JMLR 2013."))


def rebuild_plan(doc: dict) -> fm.FunctionalPlan:
    """The plan rebuilt from certificate.json's public settings through :func:`~privgp.mechanisms.functional.plan_functional`,
    called as ``privgp release`` called it (a calibrated r calibrated again from the recorded noise bound; the
    multiplier c calibrated again to the recorded target). The sensitivity lemma is the one of the recorded
    ``sensitivity_lemma`` (each choice is rebuilt and the one naming it kept)."""
    def s(key):
        return publish.setting(doc, key)

    domain = publish.domain_setting(doc)
    source = s("hyperparameters")
    if source == "given r":
        r, noise = s("r"), None
    elif source == "calibrated r":
        cal = doc.get("calibration")
        if not isinstance(cal, dict) or "target_noise_std" not in cal:
            raise publish.CertificateMismatch("calibration.target_noise_std", "missing (the calibrated r cannot be "
                                              "rebuilt)")
        r, noise = None, cal["target_noise_std"]
    else:
        raise publish.CertificateMismatch("public_settings.hyperparameters", f"'given r' or 'calibrated r', found "
                                          f"{source!r}")
    ps = doc["public_settings"]
    extra = {"snap": ps["snap"]} if "snap" in ps else {}
    grid = PublicGrid.on_box(domain, grid_sizes(domain, publish.grid_points_setting(doc)))
    lemma = s("sensitivity_lemma")

    def build(choice):
        return fm.plan_functional(
            publish.recorded_n(doc), domain, grid, kernel=s("kernel"), lengthscale=s("lengthscale"), r=r,
            noise_std=noise, epsilon=s("target_epsilon"), delta=s("delta"), sensitivity=choice,
            accounting=s("accounting"), response_map=publish.response_map_setting(doc),
            memory_limit=publish.VERIFY_MEMORY_LIMIT, **extra)

    plan = build("generic")
    if plan.lemma != lemma:
        try:
            other = build("exp1d")
        except PrivgpError:  # Lemma B.7 outside its kernel and dimension: the generic plan's lemma is compared
            return plan
        if other.lemma == lemma:
            return other
    return plan


def verify(doc: dict):
    """Rebuild the plan from the public settings (:func:`rebuild_plan`: n, domain, response map, kernel,
    lengthscale, r or its noise bound, target (epsilon, delta), sensitivity lemma, noise analysis, grid) and
    compare it with everything recorded, the event's sensitivity and noise multiplier included
    (:func:`~privgp.cli.release_publish.verify_against_plan`)."""
    return publish.verify_against_plan(doc, rebuild_plan(doc))


def summary(plan: fm.FunctionalPlan) -> dict:
    return {"L": plan.L, "r": plan.r, "multiplier": plan.multiplier, "sensitivity_bound": plan.sensitivity,
            "noise_analysis": plan.accounting, "lengthscale": plan.lengthscale, "kernel": plan.kernel,
            "hyperparameters": plan.hyperparameter_source, "target_epsilon": plan.epsilon,
            "sensitivity": plan.lemma, "snap": plan.snap}


def summary_lines(plan: fm.FunctionalPlan, data) -> list[str]:
    return [
        f"  mechanism   posterior mean + GP noise, mu-GDP (seed 002, Thm 4.1); RKHS sensitivity <= "
        f"{plan.sensitivity:.4g} ({plan.lemma})",
        f"  settings    {plan.kernel} kernel, lengthscale {plan.lengthscale:.4g}, r={plan.r:.4g} "
        f"({plan.hyperparameter_source}"
        + (f" for noise std <= {plan.calibration['target_noise_std']:g}" if plan.calibration else "")
        + f"), noise std c={plan.multiplier:.4g} ({plan.accounting})",
        f"  grid        {' x '.join(map(str, plan.grid.sizes))}"
        + ("" if plan.snap is None else
           f"; inputs snapped to the grid{'' if plan.snap == 1 else f' refined {plan.snap}x'} (public per-record map)"),
    ]
