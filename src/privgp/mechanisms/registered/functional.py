"""``--mechanism functional``: the GP posterior mean with ridge r plus GP noise c g of the same kernel
(the functional mechanism of Hall et al. 2013 with the Gaussian-DP analysis of seed 002, Thm 4.1); the
plan is :mod:`privgp.mechanisms.functional`.

Options: --kernel, --lengthscale, and --r / --sensitivity / --snap as for posterior sampling (here r is
the ridge of the posterior mean, the sensitivity lemma bounds its RKHS sensitivity, and --snap R moves
each input to the grid lattice refined R times, a public per-record map, so that the mean costs one
unknown per occupied site whatever n is; default 1 (posterior-sample's DEFAULT_SNAP)), --noise-bound and
--noise-analysis. Planned and accounted only: ``privgp release`` refuses it (its float noise leaks).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import CertificateMismatch, InvalidParameterError, PrivgpError
from ...formatting import format_upper
from ...models.domain import PublicGrid
from .. import functional as fm
from ..interface import (
    KERNEL,
    LENGTHSCALE,
    VERIFY_MEMORY_LIMIT,
    Mechanism,
    MechanismReport,
    Option,
    OutputFile,
    PictureContext,
    Recorded,
    ReleasedField,
    Request,
    chosen_by,
    grid_text,
)
from ..posterior_release import DEFAULT_SNAP, default_lengthscale
from ..release import default_delta, grid_sizes
from .posterior_sample import SENSITIVITY, SNAP, R, path_files, paths_from_arrays, snap_line, snap_of

#: without --r: the smallest r whose noise std c is at most this (model units, |y| <= 1)
DEFAULT_NOISE_BOUND = 0.2
NOISE_BOUND = Option("noise-bound", "without --r: calibrate the smallest ridge r whose noise std c is <= C, from "
                     f"public quantities only (model units, |y| <= 1; default {DEFAULT_NOISE_BOUND:g})", float, "C")
NOISE_ANALYSIS = Option("noise-analysis", "how c is chosen for the target epsilon: gdp (seed 002 Thm 4.1, default and "
                        "tightest), rdp (Jiang et al. 2023), hall (Hall et al. 2013 Thm 3.3, epsilon <= 1 only)", None,
                        choices=tuple(sorted(fm.MULTIPLIERS)), default="gdp")


class Functional(Mechanism):
    """``privgp release --mechanism functional``: publish the GP posterior mean map plus random noise that
    is itself a GP of the same kernel, scaled to the mean's sensitivity (the functional mechanism;
    seed 002, Thm 4.1)."""

    name = "functional"
    not_publishable = fm.FUNCTIONAL_FLOAT_LEAK
    help = ("the GP posterior mean plus GP noise of the same kernel (functional mechanism; seed 002, Thm 4.1: "
            "c = Delta / mu with Delta the posterior mean's RKHS sensitivity, <= seed 000's Delta_n); not released: "
            "its float noise leaks (privgp account and the experiments plan and simulate it)")
    options = (KERNEL, LENGTHSCALE, R, SENSITIVITY, SNAP, NOISE_BOUND, NOISE_ANALYSIS)
    plan_type = fm.FunctionalPlan
    order = 30

    def plan(self, request: Request) -> fm.FunctionalPlan:
        domain = request.domain
        r = request.given("r")
        if r is not None and request.given("noise_bound") is not None:
            raise InvalidParameterError("--noise-bound", "left out when --r is given", request.given("noise_bound"))
        grid = PublicGrid.on_box(domain, grid_sizes(domain, request.grid_points()))
        noise = None if r is not None else (DEFAULT_NOISE_BOUND if request.given("noise_bound") is None
                                            else request.given("noise_bound"))
        lengthscale = request.given("lengthscale")
        return fm.plan_functional(
            request.n, domain, grid, kernel=self.option(request, "kernel"),
            lengthscale=default_lengthscale(domain) if lengthscale is None else lengthscale, r=r, noise_std=noise,
            epsilon=self.epsilon(request), delta=default_delta(request.n) if request.delta is None else request.delta,
            sensitivity=self.option(request, "sensitivity"), accounting=self.option(request, "noise_analysis"),
            response_map=request.response_map, memory_limit=request.memory_limit, snap=snap_of(self, request))

    def reads_statistics(self, options: Mapping[str, Any], dim: int) -> bool:
        """With snapping (the 2-D default) the posterior mean depends on per-lattice-site counts and sums only."""
        snap = options.get("snap")
        return (DEFAULT_SNAP.get(dim, 1) if snap is None else int(snap)) >= 1

    def rebuild(self, recorded: Recorded) -> fm.FunctionalPlan:
        """Through :func:`~privgp.mechanisms.functional.plan_functional`, called as ``privgp release`` called it (a
        calibrated r calibrated again from the recorded noise bound; the multiplier c calibrated again to the
        recorded target). The sensitivity lemma is the recorded ``sensitivity_lemma`` (each choice is rebuilt
        and the one naming it kept)."""
        s = recorded.setting
        domain = recorded.domain()
        source = s("hyperparameters")
        if source == "given r":
            r, noise = s("r"), None
        elif source == "calibrated r":
            cal = recorded.doc.get("calibration")
            if not isinstance(cal, dict) or "target_noise_std" not in cal:
                raise CertificateMismatch("calibration.target_noise_std", "missing (the calibrated r cannot be "
                                          "rebuilt)")
            r, noise = None, cal["target_noise_std"]
        else:
            raise CertificateMismatch("public_settings.hyperparameters", f"'given r' or 'calibrated r', found "
                                      f"{source!r}")
        extra = {"snap": s("snap")} if recorded.has("snap") else {}
        grid = PublicGrid.on_box(domain, grid_sizes(domain, recorded.grid_points()))
        lemma = s("sensitivity_lemma")

        def build(choice: str) -> fm.FunctionalPlan:
            return fm.plan_functional(
                recorded.n, domain, grid, kernel=s("kernel"), lengthscale=s("lengthscale"), r=r, noise_std=noise,
                epsilon=s("target_epsilon"), delta=s("delta"), sensitivity=choice, accounting=s("accounting"),
                response_map=recorded.response_map(), memory_limit=VERIFY_MEMORY_LIMIT, **extra)

        plan = build("generic")
        if plan.lemma != lemma:
            try:
                other = build("exp1d")
            except PrivgpError:  # Lemma B.7 outside its kernel and dimension: the generic plan's lemma is compared
                return plan
            if other.lemma == lemma:
                return other
        return plan

    npz = "paths.npz"
    data_files = ("paths.npz", "paths.csv")

    def released_from_arrays(self, arrays: dict[str, np.ndarray], plan: fm.FunctionalPlan) -> Any:
        """The one released function, as paths.npz holds it (checked: one 'path' on the plan's grid)."""
        return paths_from_arrays(arrays, plan)

    def files(self, released: fm.FunctionalRelease, plan: fm.FunctionalPlan,
              coordinates: Sequence[str]) -> list[OutputFile]:
        """paths.npz / paths.csv (the released function as one 'path'), as posterior-sample."""
        return path_files(released, plan, coordinates)

    def fields(self, released: fm.FunctionalRelease, plan: fm.FunctionalPlan) -> ReleasedField:
        return ReleasedField(axes=released.axes, values=released.paths, noun="function (posterior mean + GP noise)",
                             plural="functions (posterior mean + GP noise)")

    def report_text(self, plan: fm.FunctionalPlan, ctx: PictureContext) -> MechanismReport:
        resp = ctx.response
        thr = ctx.value(ctx.response_map.threshold)
        released = (f"One map of {resp.label} over the public domain: a smooth estimate fitted to the private records "
                    f"(a Gaussian-process posterior mean) plus random smooth noise, and where it exceeds the threshold "
                    f"{thr}.")
        how = ("The estimate is a smooth function of the records; how far one record can move it is bounded in the "
               "function's own norm (its RKHS sensitivity). Random noise drawn from a Gaussian process with the same "
               "kernel, scaled to that bound, is added once to the whole function (the functional mechanism). "
               "Responses were first put on a clipped, bounded scale."
               + ("" if plan.snap is None else " Each record's location was first moved to the nearest point of a "
                  "fixed public lattice (the map's grid" + ("" if plan.snap == 1 else f" refined {plan.snap} times")
                  + "), a rule applied to each record separately, so the guarantee holds for the original records."))
        statement = (f"R\u00e4is\u00e4, Markou et al., Thm 4.1: the functional mechanism with noise multiplier c = "
                     f"\u0394/\u03bc is \u03bc-GDP; \u0394 \u2264 {format_upper(plan.sensitivity, 6)} ({plan.lemma}); the exact "
                     "Gaussian-DP privacy profile gives (\u03b5, \u03b4) with no RDP conversion.")
        rows = (("kernel", plan.kernel, chosen_by(plan.kernel, "exponential")),
                ("lengthscale", f"{plan.lengthscale:.6g}", chosen_by(float(plan.lengthscale),
                                                                      float(default_lengthscale(plan.domain)))),
                ("r (ridge)", f"{plan.r:.6g}", plan.hyperparameter_source),
                ("noise multiplier c", f"{plan.multiplier:.6g}", f"calibrated ({plan.accounting}) to the target "
                 "epsilon"),
                ("grid", grid_text(plan.grid.sizes, " \u00d7 "), "resolution of the released map"))
        return MechanismReport(released=released, how=how, statement=statement, hyperparameters=rows,
                               account_command=None,
                               references=("J. Räisä, S. Markou et al., Noise-Aware Differentially Private Regression "
                                           "via Meta-Learning (seed paper 002).",
                                           "R. Hall, A. Rinaldo and L. Wasserman, Differential Privacy for Functions "
                                           "and Functional Data, JMLR 2013."))

    def summary(self, plan: fm.FunctionalPlan) -> dict:
        return {"L": plan.L, "r": plan.r, "multiplier": plan.multiplier, "sensitivity_bound": plan.sensitivity,
                "noise_analysis": plan.accounting, "lengthscale": plan.lengthscale, "kernel": plan.kernel,
                "hyperparameters": plan.hyperparameter_source, "target_epsilon": plan.epsilon,
                "sensitivity": plan.lemma, "snap": plan.snap}

    def summary_lines(self, plan: fm.FunctionalPlan) -> list[str]:
        return [
            f"  mechanism   posterior mean + GP noise, mu-GDP (seed 002, Thm 4.1); RKHS sensitivity <= "
            f"{format_upper(plan.sensitivity, 4)} ({plan.lemma})",
            f"  settings    {plan.kernel} kernel, lengthscale {plan.lengthscale:.4g}, r={plan.r:.4g} "
            f"({plan.hyperparameter_source}"
            + (f" for noise std <= {plan.calibration['target_noise_std']:g}" if plan.calibration else "")
            + f"), noise std c={plan.multiplier:.4g} ({plan.accounting})",
            f"  grid        {grid_text(plan.grid.sizes)}" + snap_line(plan.snap),
        ]
