"""``--mechanism posterior-sample``: L exact GP posterior sample paths on the grid (seed 000). The plan
and the sampler are :mod:`privgp.mechanisms.posterior_release`; this class is what the command, the
picture, the report and ``privgp verify`` need of it."""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import CertificateMismatch, InvalidParameterError
from ...formatting import format_upper
from ..interface import (
    CONVERSION,
    KERNEL,
    LENGTHSCALE,
    SIGMA,
    VERIFY_MEMORY_LIMIT,
    CsvFile,
    Mechanism,
    MechanismReport,
    NpzFile,
    Option,
    OutputFile,
    PictureContext,
    Recorded,
    ReleasedField,
    Request,
    grid_axes,
    grid_text,
    released_array,
)
from ..posterior_release import (
    DEFAULT_EPSILON,
    DEFAULT_SIGMA,
    DEFAULT_SNAP,
    PosteriorSamplePlan,
    ReleasedPaths,
    default_lengthscale,
    plan_posterior_sample,
)
from ..release import default_delta

R = Option("r", "effective ridge r (noise-to-signal ratio); without --epsilon it is used as given, with --epsilon "
           "eta is calibrated (posterior-sample); the ridge of the posterior mean (functional)", float, "R")
ETA = Option("eta", "scale of added prior GP noise (Prop. 2; default 0)", float, "ETA")
L_PATHS = Option("L", "number of released paths (default: 1)", int, "L", default=1)
SENSITIVITY = Option("sensitivity", "Delta_n lemma: auto = B.7 for the 1-D exponential kernel, else B.1 (default: "
                     "auto)", None, choices=("auto", "generic", "exp1d"), default="auto")
SNAP = Option("snap", "move each input to the nearest point of the grid lattice refined R times per axis (a fixed "
              "public per-record map, so the guarantee holds for the original data) and sample by circulant "
              "embedding (functional: compute the mean) with one unknown per occupied site; 0 = no snapping (dense or "
              "1-D Markov sampling: planned and accounted, not released, its float addition leaks). Default: 1", int,
              "R")
PATH_FILES = ("paths.npz", "paths.csv")


def snap_of(mech: Mechanism, request: Request) -> int | None:
    """The snapping refinement of a request (default by dimension; 0 = none)."""
    given = request.given("snap")
    if given is None:
        return DEFAULT_SNAP[request.domain.dim] or None
    # red team 21d: snap="none" or [1] was a raw traceback, 1.5 silently 1
    if isinstance(given, bool) or not isinstance(given, (int, np.integer)) or int(given) < 0:
        raise InvalidParameterError("--snap", "an integer >= 0 (0: no snapping, which is not released)", given)
    return int(given) or None


def sigma_of(request: Request) -> float:
    """The kernel scale: as given, else privgp's default."""
    sigma = request.given("sigma")
    return DEFAULT_SIGMA if sigma is None else float(sigma)


def path_files(released: Any, plan: Any, coordinates: Sequence[str]) -> list[OutputFile]:
    """paths.npz (the paths, the grid axes, level and response map) and paths.csv (a row per grid point)."""
    names = list(coordinates)
    rm = plan.response_map
    meta = dict(coordinates=np.array(names), level=np.float64(released.level), threshold=np.float64(rm.threshold),
                clip=np.float64(rm.clip), transform=np.array(rm.transform))
    axes = {f"axis_{nm}": ax for nm, ax in zip(names, released.axes)}
    flat = released.paths.reshape(released.paths.shape[0], -1).T
    return [NpzFile("paths.npz", {"paths": released.paths, **axes, **meta}),
            CsvFile("paths.csv", names + [f"path_{i + 1}" for i in range(flat.shape[1])],
                    np.column_stack([released.grid_points(), flat]))]


def paths_from_arrays(arrays: dict[str, np.ndarray], plan: Any) -> ReleasedPaths:
    """The released paths of paths.npz as the plan gives them: ``plan.L`` (1 without one) paths on its grid over
    its domain, level 0 (model units), for ``privgp verify``. The paths themselves are random draws: their number,
    shape and grid are what a certificate can be checked against."""
    grid = tuple(int(m) for m in getattr(plan.grid, "sizes", plan.grid))   # a PublicGrid (functional) or sizes
    paths = released_array(arrays, "paths.npz", "paths", (int(getattr(plan, "L", 1)), *grid))
    return ReleasedPaths(axes=grid_axes(plan.domain, grid), paths=paths, level=0.0)


def path_fields(released: ReleasedPaths, plan: PosteriorSamplePlan) -> ReleasedField:
    """The L released paths for the picture (model units, threshold 0)."""
    caveat = ("" if plan.L > 1 else "The map is one random draw: its boundary is one plausible boundary, not a "
              "confident one, and the draw carries no uncertainty of its own; release several paths (--L) for a vote "
              "map that shows where the draws agree.")
    return ReleasedField(axes=released.axes, values=released.paths, noun="posterior sample path",
                         plural="posterior sample paths", caveat=caveat)


def snap_line(snap: int | None) -> str:
    return ("" if snap is None else
            f"; inputs snapped to the grid{'' if snap == 1 else f' refined {snap}x'} (public per-record map)")


def account_command(plan: PosteriorSamplePlan) -> tuple[str, ...]:
    """``privgp account`` arguments that recompute this release's epsilon from its public settings
    (numbers written exactly, so the calculator reproduces the certificate bit for bit)."""
    dom = plan.domain
    return ("account", "--n", str(plan.n), "--kernel", plan.kernel, "--lengthscale", repr(float(plan.lengthscale)),
            "--box", *(repr(float(v)) for pair in zip(dom.lower, dom.upper) for v in pair),
            "--r", repr(float(plan.r)), "--sigma", repr(float(plan.sigma)), "--eta", repr(float(plan.eta)),
            "--L", str(plan.L), "--delta", repr(float(plan.delta)), "--sensitivity", plan.sensitivity,
            "--constants", plan.constants, "--conversion", plan.conversion)


def snap_setting(recorded: Recorded) -> int | None:
    """The snapping refinement recorded in ``public_settings.preprocessing`` ("none" or "inputs snapped to
    the grid lattice refined Rx per axis ...")."""
    text = recorded.setting("preprocessing")
    if text == "none":
        return None
    m = re.fullmatch(r"inputs snapped to the grid lattice refined (\d+)x per axis \(fixed public per-record map\)",
                     str(text))
    if m is None:
        raise CertificateMismatch("public_settings.preprocessing", f"'none' or a snapping rule, found {text!r}")
    return int(m.group(1))


class PosteriorSample(Mechanism):
    """``privgp release --mechanism posterior-sample``: publish L random maps, each one exact draw from
    the GP posterior given the private records; the randomness of the draw is the privacy (seed 000,
    Thm 3.1 / Prop. 2 with the proven sensitivity lemmas B.1 and B.7)."""

    name = "posterior-sample"
    help = ("L exact GP posterior sample paths on the grid (seed 000: Thm 3.1 / Prop. 2, Lemma B.1 in 2-D, "
            "Lemma B.7 for the 1-D exponential kernel, proven constants)")
    options = (KERNEL, LENGTHSCALE, SIGMA, CONVERSION, R, ETA, L_PATHS, SENSITIVITY, SNAP)
    plan_type = PosteriorSamplePlan
    default_epsilon = DEFAULT_EPSILON
    order = 10

    def plan(self, request: Request) -> PosteriorSamplePlan:
        r = request.given("r")
        target = request.epsilon
        if target is None and r is None:
            target = self.default_epsilon
        return plan_posterior_sample(
            request.n, request.domain, request.response_map, kernel=self.option(request, "kernel"),
            lengthscale=request.given("lengthscale"), sigma=sigma_of(request), r=r,
            eta=request.given("eta"), L=self.option(request, "L"), delta=request.delta, target_epsilon=target,
            sensitivity=self.option(request, "sensitivity"), conversion=self.option(request, "conversion"),
            grid=request.grid_points(), snap=snap_of(self, request), memory_limit=request.memory_limit)

    def reads_statistics(self, options: Mapping[str, Any], dim: int) -> bool:
        """With snapping (the 2-D default) the posterior depends on the records only through per-site counts
        and sums on the grid lattice, so the release reads them from one pass."""
        snap = options.get("snap")
        return (DEFAULT_SNAP.get(dim, 1) if snap is None else int(snap)) >= 1

    def rebuild(self, recorded: Recorded) -> PosteriorSamplePlan:
        """Through :func:`plan_posterior_sample`, called as ``privgp release`` called it (a calibrated r or
        eta is calibrated again from the recorded target)."""
        s = recorded.setting
        source = s("hyperparameters")
        if source == "given":
            r, eta, target = s("r"), s("eta"), None
        elif source == "calibrated r":
            r, eta, target = None, s("eta"), s("target_epsilon")
        elif source == "calibrated eta":
            r, eta, target = s("r"), None, s("target_epsilon")
        else:
            raise CertificateMismatch("public_settings.hyperparameters",
                                      f"'given', 'calibrated r' or 'calibrated eta', found {source!r}")
        return plan_posterior_sample(recorded.n, recorded.domain(), recorded.response_map(), kernel=s("kernel"),
                                     lengthscale=s("lengthscale"), sigma=s("sigma"), r=r, eta=eta, L=s("L"),
                                     delta=s("delta"), target_epsilon=target, sensitivity=s("sensitivity"),
                                     conversion=s("conversion"), grid=recorded.grid_points(),
                                     snap=snap_setting(recorded), memory_limit=VERIFY_MEMORY_LIMIT)

    def files(self, released: ReleasedPaths, plan: PosteriorSamplePlan, coordinates: Sequence[str]) -> list[OutputFile]:
        return path_files(released, plan, coordinates)

    npz = "paths.npz"
    data_files = ("paths.npz", "paths.csv")

    def released_from_arrays(self, arrays: dict[str, np.ndarray], plan: PosteriorSamplePlan) -> ReleasedPaths:
        return paths_from_arrays(arrays, plan)

    def fields(self, released: ReleasedPaths, plan: PosteriorSamplePlan) -> ReleasedField:
        return path_fields(released, plan)

    def summary(self, plan: PosteriorSamplePlan) -> dict:
        return {"L": plan.L, "r": plan.r, "sigma": plan.sigma, "eta": plan.eta, "lengthscale": plan.lengthscale,
                "kernel": plan.kernel, "hyperparameters": plan.hyperparameter_source,
                "target_epsilon": plan.target_epsilon, "sensitivity": plan.sensitivity}

    def summary_lines(self, plan: PosteriorSamplePlan) -> list[str]:
        lemma = plan.certificate.details.get("lemma_Delta")
        return [
            f"  mechanism   {plan.L} exact posterior sample path(s); {lemma}",
            f"  settings    {plan.kernel} kernel, lengthscale {plan.lengthscale:.4g}, r={plan.r:.4g} "
            f"({plan.hyperparameter_source}"
            + (f" for target epsilon {format_upper(plan.target_epsilon, 6)}" if plan.target_epsilon else "")
            + f"), sigma={plan.sigma:g}, eta={plan.eta:.4g}",
            f"  grid        {grid_text(plan.grid)}" + snap_line(plan.snap),
        ]

    def report_text(self, plan: PosteriorSamplePlan, ctx: PictureContext) -> MechanismReport:
        resp, rm = ctx.response, plan.response_map
        thr = ctx.value(rm.threshold)
        maps = "One random map" if plan.L == 1 else f"{plan.L} random maps"
        each = "an exact random draw" if plan.L == 1 else "each an exact, independent random draw"
        scale = (f"log({resp.label}) \u2212 log({thr})" if rm.transform == "log" else f"{resp.label} \u2212 {thr}")
        released = (f"{maps} of {resp.label} over the public domain, {each} (a \u201cposterior sample path\u201d) "
                    f"from a Gaussian-process model of the private records, and where "
                    f"{'it exceeds' if plan.L == 1 else 'each exceeds'} the threshold {thr}.")
        how = ("A Gaussian-process model describes how the response varies over the domain. After it has seen the "
               "records the model is still uncertain, and the release is a random draw from that uncertainty, not "
               "the model's best guess: one record changes the distribution of the draw only slightly, and the "
               "draw's own randomness covers that change. Before fitting, each response was put on a bounded scale, "
               f"{scale} clipped to \u00b1{rm.clip:g}" + (f" and divided by {rm.clip:g}" if rm.clip != 1 else "")
               + ", so that no single record can pull the map far. The excursion set (where the released map is "
               "above the threshold) is computed from the draw and carries the same guarantee.")
        lemma = plan.certificate.details.get("lemma_Delta", "")
        statement = ("Maciazek (2026), Theorem 3.1"
                     + (" and Proposition 2 (extra prior noise \u03b7 > 0)" if plan.eta > 0 else "")
                     + ": a R\u00e9nyi-DP bound for one exact draw from the posterior of a Gaussian process with a "
                     f"normalised kernel and bounded responses, with the bounds V_n (Proposition 3) and \u0394_n "
                     f"({lemma}) of Appendix B, and proven constants; the L independent draws compose additively in "
                     "R\u00e9nyi DP (eq. (3)).")
        cal = plan.calibration or {}
        goal = "" if plan.target_epsilon is None else format_upper(plan.target_epsilon, 6)   # at most: rounded up
        target = (f"the smallest {cal.get('parameter')} whose certified \u03b5 is at most the target "
                  f"{goal} at \u03b4 = {format_upper(plan.delta)}, computed from public quantities "
                  "only (n, the domain, the kernel and the other settings)") if cal else ""
        given = "set by the data holder"
        rows = [
            ("kernel", plan.kernel, "privgp's default" if plan.kernel == "exponential" else given),
            ("lengthscale", f"{plan.lengthscale:.6g}",
             "one fifth of the public domain's diameter (privgp's default rule; uses the domain only)"
             if math.isclose(plan.lengthscale, default_lengthscale(plan.domain), rel_tol=1e-12) else given),
            ("r (noise-to-signal ratio)", f"{plan.r:.6g}",
             ("calibrated: " + target) if plan.hyperparameter_source == "calibrated r" else given),
            ("\u03c3 (kernel scale)", f"{plan.sigma:g}",
             "privgp's default, chosen in a study on synthetic data (n = 211), not on these records"
             if math.isclose(plan.sigma, DEFAULT_SIGMA) else given),
            ("\u03b7 (extra prior noise)", f"{plan.eta:.6g}",
             ("calibrated: " + target) if plan.hyperparameter_source == "calibrated eta" else
             ("none (privgp's default)" if plan.eta == 0 else given)),
            ("L (number of paths)", str(plan.L), "privgp's default" if plan.L == 1 else given),
            ("\u03b4", format_upper(plan.delta, 6), "min(10\u207b\u2076, 1/(10 n)) (privgp's default; n is public)"
             if math.isclose(plan.delta, default_delta(plan.n), rel_tol=1e-12) else given),
            ("grid", grid_text(plan.grid, " \u00d7 "), "resolution of the released map (the guarantee does not "
             "depend on it)"),
        ]
        if plan.snap is not None:
            rows.append(("snapping", f"refinement {plan.snap}",
                         "each location moved to the nearest point of the grid lattice before fitting: a fixed, "
                         "public map of each record on its own, so the guarantee holds for the original records"))
        return MechanismReport(
            released=released, how=how, statement=statement, hyperparameters=tuple(rows),
            account_command=account_command(plan),
            references=("Maciazek (2026), Differential Privacy of Gaussian Process Posterior Sampling (the seed "
                        "paper 000 of privgp).",))
