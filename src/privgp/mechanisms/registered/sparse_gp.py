"""``--mechanism sparse-gp``: the DP sparse GP of seed 001 (Honkela, Alg. 1): noisy sufficient statistics
on public inducing inputs (a grid over the public box), the noise-aware posterior (eqs. 9-15), and its
predictive mean and +-2 sd on the grid (plan: :mod:`privgp.mechanisms.sparse_gp_release`).

Files: ``prediction.npz`` / ``prediction.csv`` (the public grid, the latent predictive mean and standard
deviation, and mean -+ 2 sd in model units: the response map's (g(z) - g(T)) / B, clipped to [-1, 1]);
``inducing.csv`` (the inducing inputs Z, the mean m of q(u) and the standard deviations sqrt(diag S));
``prediction.png`` (1-D: the mean with a +-2 sd band; 2-D: maps of the mean and of the sd). Everything
written is post-processing of the released statistics; no private value is plotted.
"""
from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import CertificateMismatch, InvalidParameterError
from ...formatting import format_upper
from ..discrete_noise import DISCRETE_GAUSSIAN
from ..interface import (
    KERNEL,
    LENGTHSCALE,
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
    chosen_by,
    file_mismatch,
    grid_axes,
    grid_text,
    released_array,
)
from ..posterior_release import default_lengthscale
from ..release import grid_sizes
from ..sparse_gp import CHUNK
from ..sparse_gp_release import (
    DEFAULT_INDUCING,
    DEFAULT_NOISE_STD,
    SparseGpPlan,
    SparseGpReleased,
    n_inducing,
    plan_sparse_gp,
)
from ..sparse_gp_sensitivity import KERNEL_BOUNDS


def _ratio(text: str) -> Any:
    """argparse type of --noise-ratio (argparse reports an ArgumentTypeError's own words, naming the flag)."""
    if text == "min-sensitivity":
        return text
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a positive number or 'min-sensitivity'; got {text!r}")
    return value


NOISE_STD = Option("noise-std", f"observation noise std in model units, y in [-1, 1] (default {DEFAULT_NOISE_STD:g}, "
                   "chosen without any data)", float, "S", default=DEFAULT_NOISE_STD)
INDUCING = Option("inducing", "inducing inputs along the longest side of the box, a regular grid over the box "
                  f"(default {DEFAULT_INDUCING[1]} in 1-D, {DEFAULT_INDUCING[2]} in 2-D)", int, "M")
KERNEL_BOUND = Option("kernel-bound", "rule for R_k >= ||k(x)||: auto = the tightest proven (default), trivial = eq. 4, "
                      "separation = eq. 8, grid-1d = eq. 7 corrected, grid-1d-printed = eq. 7 as printed", None,
                      choices=tuple(KERNEL_BOUNDS), default="auto")
NOISE_RATIO = Option("noise-ratio", "sigma_a / sigma_b, a number or 'min-sensitivity' (default 1, the paper's choice)",
                     _ratio, "C", default=1.0)
S2 = Option("s2", "the S_2 covariance correction (default symmetric; paper = eq. 14 as printed)", None,
            choices=("symmetric", "paper", "none"), default="symmetric")


class SparseGp(Mechanism):
    """``privgp release --mechanism sparse-gp``: publish a smooth map with its uncertainty, the predictive
    mean and +-2 sd of a sparse GP fitted to noisy sufficient statistics on a public grid of inducing
    inputs (seed 001, Alg. 1; exact discrete Gaussian noise on lattice statistics, zCDP)."""

    name = "sparse-gp"
    help = ("a smooth map with its uncertainty: the predictive mean and +-2 sd of a sparse GP fitted to noisy "
            "sufficient statistics on a public grid of inducing inputs (seed 001, Alg. 1; exact discrete Gaussian "
            "noise on lattice statistics, zCDP)")
    options = (KERNEL, LENGTHSCALE, NOISE_STD, INDUCING, KERNEL_BOUND, NOISE_RATIO, S2)
    plan_type = SparseGpPlan
    picture = "prediction.png"
    reads_cell_statistics = True   # its sufficient statistics (A, B of eq. 3), reduced where the records live
    order = 20

    def plan(self, request: Request) -> SparseGpPlan:
        # the memory the release needs, before the plan builds the inducing inputs and their kernel bound
        m, d = int(np.prod(grid_sizes(request.domain, request.grid_points()))), n_inducing(request.domain,
                                                                                          request.given("inducing"))
        need = 8.0 * (m * (d + 6) + CHUNK * (d + 2) + 4 * d * d)
        if need > request.memory_limit:
            raise InvalidParameterError("memory", f"at most the limit of {request.memory_limit / 2**30:.3g} GiB (grid "
                                        f"{m} points, {d} inducing inputs); use fewer --inducing, a coarser grid or "
                                        "raise --memory-limit", f"an estimated {need / 2**30:.3g} GiB")
        return plan_sparse_gp(request.n, request.domain, request.response_map, epsilon=self.epsilon(request),
                              delta=request.delta, kernel=self.option(request, "kernel"),
                              lengthscale=request.given("lengthscale"), noise_std=self.option(request, "noise_std"),
                              inducing=request.given("inducing"), grid=request.grid_points(),
                              kernel_bound=self.option(request, "kernel_bound"),
                              noise_ratio=self.option(request, "noise_ratio"), correction=self.option(request, "s2"))

    def rebuild(self, recorded: Recorded) -> SparseGpPlan:
        """Through :func:`plan_sparse_gp`, called as ``privgp release`` called it (the noise calibrated again to
        the recorded target (epsilon, delta))."""
        s = recorded.setting
        rule = s("noise_ratio_rule")
        noise = "float"   # certificates before 2026-11-29 state no noise: the paper's float noise
        if recorded.has("noise"):
            noise = s("noise")
            if noise != DISCRETE_GAUSSIAN:
                raise CertificateMismatch("public_settings.noise", f"{DISCRETE_GAUSSIAN!r} or absent (float noise), found "
                                          f"{noise!r}")
        return plan_sparse_gp(recorded.n, recorded.domain(), recorded.response_map(), epsilon=s("target_epsilon"),
                              delta=s("delta"), kernel=s("kernel"), lengthscale=s("lengthscale"),
                              noise_std=s("noise_std"), inducing=_inducing_setting(recorded),
                              grid=recorded.grid_points(), kernel_bound=s("kernel_bound_method"),
                              noise_ratio=s("noise_ratio") if rule == "given" else rule, rho=s("rho"),
                              correction=s("correction"), _noise=noise)

    npz = "prediction.npz"
    data_files = ("prediction.npz", "prediction.csv", "inducing.csv")

    def released_from_arrays(self, arrays: dict[str, np.ndarray], plan: SparseGpPlan) -> SparseGpReleased:
        """The released prediction from prediction.npz: q(u) = N(m, S) on the plan's public inducing inputs Z (S a
        covariance matrix), and the predictive mean and sd on the plan's grid RECOMPUTED from them (eq. 17, public
        post-processing). A release with exact noise (since 2026-11-29) also holds the statistics a and B that m and S
        came from: :meth:`_from_statistics`. An earlier release does not, so its m and S are not tied to epsilon."""
        from ...models.gp.sparse_posterior import predict_from_released

        Z = np.asarray(plan.spec.inducing_points, dtype=float)
        grid, k = tuple(int(m) for m in plan.grid), Z.shape[0]
        m = released_array(arrays, self.npz, "m", (k,))
        S = released_array(arrays, self.npz, "S", (k, k))
        scale = max(1.0, float(np.abs(S).max()))
        if not np.allclose(S, S.T, rtol=0.0, atol=1e-12 * scale) or np.linalg.eigvalsh(0.5 * (S + S.T)).min() < -1e-9 * scale:
            raise file_mismatch(f"{self.npz}.S", "not a covariance matrix (symmetric, positive semidefinite)")
        if plan.lattice is not None:   # since 2026-11-29 (red team 21a M1): m and S tied to the stated noise
            return self._from_statistics(arrays, plan, m, S)
        axes = grid_axes(plan.domain, grid)
        mesh = np.meshgrid(*axes, indexing="ij")
        pts = np.stack([x.ravel() for x in mesh], axis=-1)
        mean, sd = predict_from_released(Z, plan.spec.kernel, plan.spec.signal_variance, m, S, pts)
        stored = [np.asarray(arrays[k], dtype=float).ravel() for k in ("mean", "sd") if k in arrays]
        if len(stored) == 2 and not (np.array_equal(stored[0], mean) and np.array_equal(stored[1], sd)):
            # privgp before 2026-11-29 computed them with BLAS's own threads: those bits, where they are the file's
            again = predict_from_released(Z, plan.spec.kernel, plan.spec.signal_variance, m, S, pts, one_thread=False)
            if np.array_equal(stored[0], again[0]) and np.array_equal(stored[1], again[1]):
                mean, sd = again
        return SparseGpReleased(axes, mean.reshape(grid), sd.reshape(grid), Z, m, S,
                                a_released=np.zeros(0), B_released=np.zeros(0), repair_shift=0.0)

    def _from_statistics(self, arrays: dict[str, np.ndarray], plan: SparseGpPlan, m: np.ndarray,
                         S: np.ndarray) -> SparseGpReleased:
        """A release with exact noise (red team 21a M1): its released statistics a and B must be whole steps of the
        certificate's lattices (B symmetric), and m and S the noise-aware posterior (eqs. 9-15) of them told the
        certificate's noise stds, bit for bit; the prediction then follows (eq. 17). A smaller epsilon claimed over
        a release's files therefore fails (statistics drawn with less noise by other code cannot be told apart:
        verify checks agreement, not how the noise was drawn)."""
        lat = plan.lattice
        assert lat is not None
        k = plan.spec.n_inducing
        a = released_array(arrays, self.npz, "a", (k,))
        B = released_array(arrays, self.npz, "B", (k, k))
        for name, x, unit in (("a", a, lat.unit_a), ("B", B, lat.unit_b)):
            steps = x / unit   # a power of two: exact
            if not np.array_equal(steps, np.rint(steps)) or np.any(np.abs(steps) > 2.0**62):
                raise file_mismatch(f"{self.npz}.{name}", f"whole steps of the certificate's lattice ({unit:.3g})")
        if not np.array_equal(B, B.T):
            raise file_mismatch(f"{self.npz}.B", "a symmetric matrix")
        rel = plan.from_released(a, B)
        if not (np.array_equal(rel.m, m) and np.array_equal(rel.S, S)):
            raise file_mismatch(f"{self.npz}.m", "the noise-aware posterior (eqs. 9-15) of its released statistics a "
                                "and B under the certificate's noise stds (sigma_a, sigma_b)")
        return rel

    def files(self, released: SparseGpReleased, plan: SparseGpPlan, coordinates: Sequence[str]) -> list[OutputFile]:
        names = list(coordinates)
        rm = plan.response_map
        axes = {f"axis_{nm}": ax for nm, ax in zip(names, released.axes)}
        mu, sd = released.mean.ravel(), released.sd.ravel()
        # a release with exact noise also publishes its noisy statistics (whole lattice steps): verify recomputes m and
        # S from them under the certificate's noise (red team 21a M1); post-processing of the one noisy output
        stats = {} if plan.lattice is None else {"a": released.a_released, "B": released.B_released}
        return [
            NpzFile("prediction.npz", dict(mean=released.mean, sd=released.sd, Z=released.Z, m=released.m,
                                           S=released.S, **stats, coordinates=np.array(names),
                                           threshold=np.float64(rm.threshold), clip=np.float64(rm.clip),
                                           transform=np.array(rm.transform), **axes)),
            CsvFile("prediction.csv", names + ["mean", "sd", "lower_2sd", "upper_2sd"],
                    np.column_stack([released.grid_points(), mu, sd, mu - 2 * sd, mu + 2 * sd])),
            CsvFile("inducing.csv", names + ["m", "sd"],
                    np.column_stack([released.Z, released.m, np.sqrt(np.maximum(np.diag(released.S), 0))])),
        ]

    def fields(self, released: SparseGpReleased, plan: SparseGpPlan) -> ReleasedField:
        """The released predictive mean (model units, threshold 0), with its +-2 sd band."""
        mean = np.asarray(released.mean, dtype=float)
        sd = np.asarray(released.sd, dtype=float)
        return ReleasedField(axes=released.axes, values=mean[None], noun="predictive mean", plural="predictive means",
                             band=(mean - 2 * sd, mean + 2 * sd), band_label="predictive mean \u00b1 2 sd", sd=sd,
                             sd_covers="predictive")

    def report_text(self, plan: SparseGpPlan, ctx: PictureContext) -> MechanismReport:
        resp = ctx.response
        thr = ctx.value(plan.response_map.threshold)
        k = plan.spec.kernel.describe()
        released = (f"The predictive mean (and standard deviation) of {resp.label} over the public domain from a "
                    f"sparse Gaussian-process model fitted to noisy summaries of the private records, and where the "
                    f"mean exceeds the threshold {thr}.")
        how = ("Each record contributes to a few summary numbers on a fixed, public set of reference locations (the "
               "\u201cinducing inputs\u201d, laid out on a grid over the domain before seeing the data). Random noise "
               "calibrated to how much one record can move these summaries is added once; everything shown is "
               "computed from the noisy summaries only, with a model that knows how much noise was added. Responses "
               "were first clipped to a public bound, so no single record can move the summaries far.")
        noise = ("noise calibrated by the exact Gaussian privacy profile (Balle & Wang 2018)" if plan.lattice is None
                 else "exact discrete Gaussian noise on statistics rounded to public lattices, calibrated by its "
                 "zero-concentrated DP curve (Canonne, Kamath & Steinke 2020)")
        statement = ("Honkela, Gaussian Processes with Differential Privacy, Alg. 1: one Gaussian mechanism on "
                     f"the sufficient statistics with L2 sensitivity {format_upper(plan.sensitivity, 6)} (eq. 6, with the "
                     f"kernel bound R_k = {plan.spec.kernel_bound:.6g} by {plan.spec.kernel_bound_method}) and "
                     f"{noise}; the prediction is post-processing.")
        rows = (("kernel", str(k["kernel"]), chosen_by(str(k["kernel"]), "exponential")),
                ("lengthscale", f"{k.get('lengthscale', float('nan')):.6g}",
                 chosen_by(float(k.get("lengthscale", float("nan"))), float(default_lengthscale(plan.domain)))),
                ("inducing inputs", str(plan.spec.n_inducing), "a public grid over the domain"),
                ("noise std of the model", f"{plan.noise_std:g}",
                 chosen_by(float(plan.noise_std), float(DEFAULT_NOISE_STD))),
                ("noise added (sigma_a)", f"{plan.noise.sigma_a:.6g}", "calibrated to the target (epsilon, delta)"),
                ("grid", grid_text(plan.grid, " \u00d7 "), "resolution of the released map"))
        return MechanismReport(released=released, how=how, statement=statement, hyperparameters=rows,
                               account_command=None,
                               references=("A. Honkela, Gaussian Processes with Differential Privacy (the seed paper "
                                           "001 of privgp).",))

    def summary(self, plan: SparseGpPlan) -> dict:
        k = plan.spec.kernel.describe()
        return {"kernel": k["kernel"], "lengthscale": k.get("lengthscale"), "noise_std": plan.noise_std,
                "inducing_points": plan.spec.n_inducing, "kernel_bound": plan.spec.kernel_bound_method,
                "R_k": plan.spec.kernel_bound, "sensitivity": plan.sensitivity, "sigma_a": plan.noise.sigma_a,
                "sigma_b": plan.noise.sigma_b, "correction": plan.spec.correction,
                "target_epsilon": plan.target_epsilon,
                **({} if plan.lattice is None else {"noise": DISCRETE_GAUSSIAN, "lattice": plan.lattice.to_dict()})}

    def summary_lines(self, plan: SparseGpPlan) -> list[str]:
        k = plan.spec.kernel.describe()
        return [
            f"  mechanism   DP sparse GP (seed 001, Alg. 1): "
            f"{'Gaussian mechanism' if plan.lattice is None else 'discrete Gaussian noise on lattice statistics, zCDP'}"
            f", sensitivity {format_upper(plan.sensitivity, 4)} (eq. 6, R_k = {plan.spec.kernel_bound:.4g} by "
            f"{plan.spec.kernel_bound_method}), sigma_a = {plan.noise.sigma_a:.4g}",
            f"  settings    {k['kernel']} kernel, lengthscale {k.get('lengthscale', float('nan')):.4g}, noise std "
            f"{plan.noise_std:g}, {plan.spec.n_inducing} inducing inputs on a grid over the box, S_2 "
            f"{plan.spec.correction}",
            f"  grid        {grid_text(plan.grid)}",
        ]


def _inducing_setting(recorded: Recorded) -> int:
    """The ``inducing`` argument (points along the longest side) of the recorded inducing grid."""
    try:
        Z = np.asarray(recorded.setting("inducing_points"), dtype=float)
    except (TypeError, ValueError):
        raise CertificateMismatch("public_settings.inducing_points", "a list of points") from None
    if Z.ndim != 2 or Z.shape[0] < 1:
        raise CertificateMismatch("public_settings.inducing_points", "a list of points")
    return 1 if Z.shape[0] == 1 else max(len(np.unique(Z[:, j])) for j in range(Z.shape[1]))
