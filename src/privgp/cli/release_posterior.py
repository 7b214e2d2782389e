"""``privgp release --mechanism posterior-sample`` (the default): L exact GP posterior sample paths
(seed 000). The options, the plan, the outputs, the picture's fields and the report's words of this
mechanism; the command itself (data, domain, ledger, atomic outputs, picture, report) is
:mod:`privgp.cli.release`."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ..accounting import PrivacyCertificate
from ..errors import InvalidParameterError

# privgp's defaults, shared with the library (DEFAULT_*: see privgp.mechanisms.posterior_release)
from ..mechanisms.posterior_release import (  # noqa: F401
    DEFAULT_EPSILON,
    DEFAULT_GRID,
    DEFAULT_SIGMA,
    DEFAULT_SNAP,
    PosteriorSamplePlan,
    ReleasedPaths,
    default_lengthscale,
    plan_posterior_sample,
)
from ..mechanisms.release import default_delta
from . import release_publish as publish
from .release_figure import PictureContext, ReleasedField, format_upper
from .release_report import MechanismReport

NAME = "posterior-sample"
HELP = ("L exact GP posterior sample paths on the grid (seed 000: Thm 3.1 / Prop. 2, Lemma B.1 in 2-D, "
        "Lemma B.7 for the 1-D exponential kernel, proven constants)")
FILES = ("paths.npz", "paths.csv")
#: the release's picture (drawn by the command from :func:`fields`)
#: options of this mechanism only (none: its options are shared with the other mechanisms, which refuse
#: the ones they cannot use in their own plan)
OWN_OPTIONS: tuple[str, ...] = ()
PICTURE = "excursion.png"


def add_arguments(group) -> None:
    group.add_argument("--r", type=float, metavar="R", help="effective ridge r (noise-to-signal ratio); "
                       "without --epsilon it is used as given, with --epsilon eta is calibrated")
    group.add_argument("--eta", type=float, metavar="ETA", help="scale of added prior GP noise (Prop. 2; default 0)")
    group.add_argument("--L", type=int, default=1, metavar="L", help="number of released paths (default: 1)")
    group.add_argument("--sensitivity", choices=["auto", "generic", "exp1d"], default="auto",
                       help="Delta_n lemma: auto = B.7 for the 1-D exponential kernel, else B.1 (default: auto)")
    group.add_argument("--snap", type=int, metavar="R",
                       help="move each input to the nearest point of the grid lattice refined R times per axis "
                            "(a fixed public per-record map, so the guarantee holds for the original data) and "
                            "sample by circulant embedding (functional: compute the mean) with one unknown per "
                            "occupied site; 0 = no snapping, exact dense sampling (2-D grids up to 8000 points). "
                            "Default: 1 in 2-D, 0 in 1-D")


def plan(args, data, domain, rmap, *, memory_limit: float) -> PosteriorSamplePlan:
    snap = DEFAULT_SNAP[domain.dim] if args.snap is None else args.snap
    if snap < 0:
        raise InvalidParameterError("--snap", "an integer >= 0", snap)
    target = args.epsilon
    if target is None and args.r is None:
        target = DEFAULT_EPSILON
    return plan_posterior_sample(data.n, domain, rmap, kernel=args.kernel, lengthscale=args.lengthscale,
                                 sigma=DEFAULT_SIGMA if args.sigma is None else args.sigma, r=args.r, eta=args.eta,
                                 L=args.L, delta=args.delta, target_epsilon=target, sensitivity=args.sensitivity,
                                 conversion=args.conversion, grid=args.grid or DEFAULT_GRID[domain.dim],
                                 snap=snap or None, memory_limit=memory_limit)


def write(out: Path, released: ReleasedPaths, plan: PosteriorSamplePlan, data) -> list[str]:
    """The data files (the picture and the report are the command's)."""
    _write_paths(out, released, plan, list(data.coordinates))
    return list(FILES)


def fields(released: ReleasedPaths, plan: PosteriorSamplePlan) -> ReleasedField:
    """The L released paths for the picture (model units, threshold 0)."""
    caveat = ("" if plan.L > 1 else "The map is one random draw: its boundary is one plausible boundary, not a "
              "confident one, and the draw carries no uncertainty of its own; release several paths (--L) for a vote "
              "map that shows where the draws agree.")
    return ReleasedField(axes=released.axes, values=released.paths, noun="posterior sample path",
                         plural="posterior sample paths", caveat=caveat)


def summary(plan: PosteriorSamplePlan) -> dict:
    return {"L": plan.L, "r": plan.r, "sigma": plan.sigma, "eta": plan.eta, "lengthscale": plan.lengthscale,
            "kernel": plan.kernel, "hyperparameters": plan.hyperparameter_source,
            "target_epsilon": plan.target_epsilon, "sensitivity": plan.sensitivity}


def summary_lines(plan: PosteriorSamplePlan, data) -> list[str]:
    lemma = plan.certificate.details.get("lemma_Delta")
    return [
        f"  mechanism   {plan.L} exact posterior sample path(s); {lemma}",
        f"  settings    {plan.kernel} kernel, lengthscale {plan.lengthscale:.4g}, r={plan.r:.4g} "
        f"({plan.hyperparameter_source}" + (f" for target epsilon {plan.target_epsilon:g}" if plan.target_epsilon else "")
        + f"), sigma={plan.sigma:g}, eta={plan.eta:.4g}",
        f"  grid        {' x '.join(map(str, plan.grid))}"
        + ("" if plan.snap is None else
           f"; inputs snapped to the grid{'' if plan.snap == 1 else f' refined {plan.snap}x'} (public per-record map)"),
    ]


def _write_paths(out: Path, rel: ReleasedPaths, plan: PosteriorSamplePlan, names) -> None:
    meta = dict(coordinates=np.array(names), level=np.float64(rel.level),
                threshold=np.float64(plan.response_map.threshold), clip=np.float64(plan.response_map.clip),
                transform=np.array(plan.response_map.transform))
    axes = {f"axis_{nm}": ax for nm, ax in zip(names, rel.axes)}
    np.savez(out / "paths.npz", paths=rel.paths, **axes, **meta)
    pts = rel.grid_points()
    flat = rel.paths.reshape(rel.paths.shape[0], -1).T
    header = ",".join(list(names) + [f"path_{i + 1}" for i in range(flat.shape[1])])
    np.savetxt(out / "paths.csv", np.column_stack([pts, flat]), delimiter=",", header=header,
               comments="", fmt="%.10g")


# -- the report's words ------------------------------------------------------------------------

def account_command(plan: PosteriorSamplePlan) -> tuple[str, ...]:
    """``privgp account`` arguments that recompute this release's epsilon from its public settings
    (numbers written exactly, so the calculator reproduces the certificate bit for bit)."""
    dom = plan.domain
    return ("account", "--n", str(plan.n), "--kernel", plan.kernel, "--lengthscale", repr(float(plan.lengthscale)),
            "--lower", *(repr(float(v)) for v in dom.lower), "--upper", *(repr(float(v)) for v in dom.upper),
            "--r", repr(float(plan.r)), "--sigma", repr(float(plan.sigma)), "--eta", repr(float(plan.eta)),
            "--L", str(plan.L), "--delta", repr(float(plan.delta)), "--sensitivity", plan.sensitivity,
            "--constants", plan.constants, "--conversion", plan.conversion)


def report_text(plan: PosteriorSamplePlan, ctx: PictureContext) -> MechanismReport:
    """What this mechanism says in the report (public facts only)."""
    resp, rm = ctx.response, plan.response_map
    thr = resp.value(rm.threshold)
    maps = "One random map" if plan.L == 1 else f"{plan.L} random maps"
    each = "an exact random draw" if plan.L == 1 else "each an exact, independent random draw"
    scale = (f"log({resp.label}) \u2212 log({thr})" if rm.transform == "log" else f"{resp.label} \u2212 {thr}")
    released = (f"{maps} of {resp.label} over the public domain, {each} (a \u201cposterior sample path\u201d) "
                f"from a Gaussian-process model of the private records, and where {'it exceeds' if plan.L == 1 else 'each exceeds'} "
                f"the threshold {thr}.")
    how = ("A Gaussian-process model describes how the response varies over the domain. After it has seen the "
           "records the model is still uncertain, and the release is a random draw from that uncertainty, not the "
           "model's best guess: one record changes the distribution of the draw only slightly, and the draw's own "
           "randomness covers that change. Before fitting, each response was put on a bounded scale, "
           f"{scale} clipped to \u00b1{rm.clip:g}" + (f" and divided by {rm.clip:g}" if rm.clip != 1 else "")
           + ", so that no single record can pull the "
           "map far. The excursion set (where the released map is above the threshold) is computed from the draw "
           "and carries the same guarantee.")
    lemma = plan.certificate.details.get("lemma_Delta", "")
    statement = ("Maciazek (2026), Theorem 3.1" + (" and Proposition 2 (extra prior noise \u03b7 > 0)" if plan.eta > 0 else "")
                 + ": a R\u00e9nyi-DP bound for one exact draw from the posterior of a Gaussian process with a normalised "
                 f"kernel and bounded responses, with the bounds V_n (Proposition 3) and \u0394_n ({lemma}) of "
                 "Appendix B, and proven constants; the L independent draws compose additively in R\u00e9nyi DP "
                 "(eq. (3)).")
    cal = plan.calibration or {}
    target = (f"the smallest {cal.get('parameter')} whose certified \u03b5 is at most the target "
              f"{plan.target_epsilon:g} at \u03b4 = {format_upper(plan.delta)}, computed from public quantities only "
              "(n, the domain, the kernel and the other settings)") if cal else ""
    given = "set by the data holder"
    rows = [
        ("kernel", plan.kernel, "privgp's default" if plan.kernel == "exponential" else given),
        ("lengthscale", f"{plan.lengthscale:.6g}",
         "one fifth of the public domain's diameter (privgp's default rule; uses the domain only)"
         if math.isclose(plan.lengthscale, default_lengthscale(plan.domain), rel_tol=1e-12) else given),
        ("r (noise-to-signal ratio)", f"{plan.r:.6g}", ("calibrated: " + target) if plan.hyperparameter_source == "calibrated r" else given),
        ("\u03c3 (kernel scale)", f"{plan.sigma:g}",
         "privgp's default, chosen in a study on synthetic data (n = 211), not on these records"
         if math.isclose(plan.sigma, DEFAULT_SIGMA) else given),
        ("\u03b7 (extra prior noise)", f"{plan.eta:.6g}",
         ("calibrated: " + target) if plan.hyperparameter_source == "calibrated eta" else
         ("none (privgp's default)" if plan.eta == 0 else given)),
        ("L (number of paths)", str(plan.L), "privgp's default" if plan.L == 1 else given),
        ("\u03b4", f"{plan.delta:.6g}", "min(10\u207b\u2076, 1/(10 n)) (privgp's default; n is public)"
         if math.isclose(plan.delta, default_delta(plan.n), rel_tol=1e-12) else given),
        ("grid", " \u00d7 ".join(map(str, plan.grid)),
         "resolution of the released map (the guarantee does not depend on it)"),
    ]
    if plan.snap is not None:
        rows.append(("snapping", f"refinement {plan.snap}",
                     "each location moved to the nearest point of the grid lattice before fitting: a fixed, public "
                     "map of each record on its own, so the guarantee holds for the original records"))
    return MechanismReport(
        released=released, how=how, statement=statement, hyperparameters=tuple(rows),
        account_command=account_command(plan),
        references=("Maciazek (2026), Differential Privacy of Gaussian Process Posterior Sampling (the seed paper "
                    "000 of privgp).",))


def snap_setting(doc: dict) -> int | None:
    """The snapping refinement recorded in ``public_settings.preprocessing`` ("none" or "inputs snapped to
    the grid lattice refined Rx per axis ...")."""
    text = publish.setting(doc, "preprocessing")
    if text == "none":
        return None
    m = re.fullmatch(r"inputs snapped to the grid lattice refined (\d+)x per axis \(fixed public per-record map\)",
                     str(text))
    if m is None:
        raise publish.CertificateMismatch("public_settings.preprocessing", f"'none' or a snapping rule, found {text!r}")
    return int(m.group(1))


def rebuild_plan(doc: dict) -> PosteriorSamplePlan:
    """The plan of a release rebuilt from its certificate.json's public settings through
    :func:`plan_posterior_sample`, called as ``privgp release`` called it (a calibrated r or eta is
    calibrated again from the recorded target)."""
    def s(key):
        return publish.setting(doc, key)

    source = s("hyperparameters")
    if source == "given":
        r, eta, target = s("r"), s("eta"), None
    elif source == "calibrated r":
        r, eta, target = None, s("eta"), s("target_epsilon")
    elif source == "calibrated eta":
        r, eta, target = s("r"), None, s("target_epsilon")
    else:
        raise publish.CertificateMismatch("public_settings.hyperparameters",
                                          f"'given', 'calibrated r' or 'calibrated eta', found {source!r}")
    return plan_posterior_sample(publish.recorded_n(doc), publish.domain_setting(doc), publish.response_map_setting(doc),
                                 kernel=s("kernel"), lengthscale=s("lengthscale"), sigma=s("sigma"), r=r, eta=eta,
                                 L=s("L"), delta=s("delta"), target_epsilon=target, sensitivity=s("sensitivity"),
                                 conversion=s("conversion"), grid=publish.grid_points_setting(doc),
                                 snap=snap_setting(doc), memory_limit=publish.VERIFY_MEMORY_LIMIT)


def verify(doc: dict) -> PrivacyCertificate:
    """Check a release's certificate.json (as a dict): rebuild the plan from its public settings
    (:func:`rebuild_plan`: n from ``dataset.n``, domain, response map, kernel, lengthscale, r, sigma,
    eta, L, delta, sensitivity lemma, conversion, grid, snapping; the constants are always the proven
    ones) and compare it with everything recorded (:func:`~privgp.cli.release_publish.verify_against_plan`).
    Returns the rebuilt certificate; raises CertificateMismatch (a NumericalError) on any disagreement."""
    return publish.verify_against_plan(doc, rebuild_plan(doc))
