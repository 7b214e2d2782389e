"""``--mechanism discretised-gaussian``: seed 002's App. A.5 "Gaussian mechanism on discretisation
points" (eq. 37), implemented as the paper states it, for the comparison only: the density and signal
channels r_d(p) = sum_i k(x_i, p), r_s(p) = sum_i y_i k(x_i, p) of an RBF SetConv at m public points p,
each released with N(0, s^2) noise; eq. 37 gives mu = sqrt(m (Delta_s^2 + Delta_d^2)) / s with
Delta_s^2 = 4 C^2 C_k^2, Delta_d^2 = C_k^2 (C = 1 after clipping, C_k = sup k = 1). The field is
r_s / r_d at the points, interpolated onto the release grid (the noisy grid's released field and files).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ... import validation as v
from ...accounting import GaussianEvent, PrivacyCertificate, calibrate_gaussian
from ...models.domain import Box
from ..interface import (
    LENGTHSCALE,
    MechanismReport,
    Option,
    PictureContext,
    Recorded,
    Request,
    grid_axes,
    grid_text,
)
from ..release import ResponseMap, default_delta, grid_sizes
from .grid import (
    CHUNK_FLOATS,
    DEFAULT_MEMORY_LIMIT,
    EQ37_PER_POINT,
    GridField,
    GridFieldMechanism,
    NoisyGridPlan,
    _gauss_matrix,
    cell_sizes,
    check_hyperparameter_source,
    check_memory,
    release_assumptions,
)

#: why it is not released (red team 20a, H1): the noisy grids were made exact for the same reason (red team 21)
FLOAT_NOISE = ("its Gaussian noise is added in floating point to the released channels, whose low-order bits tell "
               "whether a record lies at a point (Mironov 2012; red team 20a: delta(5) >= 0.0185 where 1e-6 is "
               "certified), so its (epsilon, delta) does not hold as computed; it stays for planning, accounting and "
               "simulation (privgp account, privgp experiment); use --mechanism auto (the default, a tuned noisy "
               "grid) or grid, which release the same kind of map with exact discrete noise")


@dataclass(frozen=True, eq=False)
class DiscretisedGaussianPlan:
    """Seed 002, App. A.5, eq. (37): SetConv density and signal channels at m public points, Gaussian
    noise per value, mu = sqrt(m (4 + 1)) / s. For the comparison only (the paper's own verdict: the
    noise grows with m)."""

    n: int
    domain: Box
    response_map: ResponseMap
    points: tuple[int, ...]
    lengthscale: float
    grid: tuple[int, ...]
    target_epsilon: float
    delta: float
    noise_std: float
    event: GaussianEvent = field(repr=False)
    certificate: PrivacyCertificate = field(repr=False)
    hyperparameter_source: str = "given"
    mechanism: str = "discretised-gaussian"
    L: int = 1

    check = NoisyGridPlan.check

    def point_axes(self) -> tuple[np.ndarray, ...]:
        return tuple(lo + (np.arange(c) + 0.5) * w / c for lo, w, c in zip(self.domain.lower, self.domain.widths, self.points))

    def channels(self, X: np.ndarray, y: np.ndarray, chunk: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(r_d, r_s) at the points: sums over records of k(x_i, p) and y_i k(x_i, p), RBF kernel; records in
        chunks whose kernel block holds at most :data:`CHUNK_FLOATS` values."""
        axes = self.point_axes()
        chunk = max(1, CHUNK_FLOATS // int(np.prod(self.points))) if chunk is None else chunk
        r_d = np.zeros(self.points)
        r_s = np.zeros(self.points)
        for i in range(0, X.shape[0], chunk):
            xs, ys = X[i:i + chunk], y[i:i + chunk]
            per_axis = [_gauss_matrix(xs[:, j], ax, self.lengthscale) for j, ax in enumerate(axes)]
            k = per_axis[0] if len(axes) == 1 else np.einsum("ia,ib->iab", *per_axis)
            r_d += k.sum(axis=0)
            r_s += np.tensordot(ys, k, axes=(0, 0))
        return r_d, r_s

    def draw(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> GridField:
        rng = v.generator("rng", rng)
        r_d, r_s = self.channels(X, y)
        d = r_d + rng.normal(0.0, self.noise_std, r_d.shape)
        s = r_s + rng.normal(0.0, self.noise_std, r_s.shape)
        return self.post_process(d, s)

    #: the released statistics :meth:`post_process` takes, in its order (field.npz: ``released_<name>``)
    statistics_names = ("density", "signal")

    @property
    def statistics_shape(self) -> tuple[int, ...]:
        return tuple(self.points)

    def post_process(self, d: np.ndarray, s: np.ndarray) -> GridField:
        """The released map and its sd from the released density and signal channels (public: anyone can redo it
        from them): their ratio, clipped to [-1, 1], at the points, interpolated on the release grid."""
        from scipy.interpolate import RegularGridInterpolator  # noqa: PLC0415

        denom = np.maximum(d, max(1.0, 2.0 * self.noise_std))
        m = np.clip(s / denom, -1.0, 1.0)
        sd = self.noise_std * np.sqrt(1.0 + m * m) / denom
        axes = grid_axes(self.domain, self.grid)
        pa = self.point_axes()
        mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
        interp = lambda f: RegularGridInterpolator(pa, f, bounds_error=False, fill_value=None)(mesh)
        return GridField(axes=axes, field=np.clip(interp(m), -1, 1), sd=np.maximum(interp(sd), 0.0),
                         statistics={"density": d, "signal": s})

    def scaled(self, n: int) -> DiscretisedGaussianPlan:
        """The same plan for ``n`` records with the noise std scaled by n / self.n: its released statistics are
        sums over records, so the map it gives from n records is what this plan gives from self.n (the release
        forecast simulates large n this way)."""
        return replace(self, n=n, noise_std=self.noise_std * n / self.n)

    def describe(self) -> str:
        return (f"Gaussian mechanism on {int(np.prod(self.points))} discretisation points (seed 002 eq. 37): n={self.n}, "
                f"RBF lengthscale {self.lengthscale:.4g}, noise std {self.noise_std:.4g}, domain {self.domain.describe()}")

    def check_verifiable(self) -> None:
        """``privgp verify``: a release of it does not hold its certificate (:data:`FLOAT_NOISE`): NOT VERIFIED."""
        from ...errors import CertificateMismatch  # noqa: PLC0415

        raise CertificateMismatch("mechanism", f"discretised-gaussian: {FLOAT_NOISE}; withdraw its files")

    def public_settings(self) -> dict:
        return {"mechanism": self.mechanism, "n": self.n, "dim": self.domain.dim, "domain": self.domain.to_dict(),
                "response_map": self.response_map.to_dict(), "points": list(self.points),
                "lengthscale": self.lengthscale, "grid": list(self.grid), "target_epsilon": self.target_epsilon,
                "delta": self.delta, "sensitivity": self.event.sensitivity, "noise_std": self.noise_std,
                "hyperparameters": self.hyperparameter_source}


def plan_discretised_gaussian(n: int, domain: Box, response_map: ResponseMap, *, epsilon: float,
                              delta: float | None = None, points: int = 8, lengthscale: float | None = None,
                              grid: int = 81, hyperparameter_source: str = "given",
                              memory_limit: float = DEFAULT_MEMORY_LIMIT) -> DiscretisedGaussianPlan:
    """Plan seed 002's eq. (37) release: m = prod(points) values per channel, s = sqrt(5 m) / mu*(eps, delta).
    The arrays (one chunk's kernel block, the interpolation onto the map grid) must fit ``memory_limit``."""
    n = v.integer("n", n, minimum=2)
    epsilon = v.positive("epsilon", epsilon)
    delta = default_delta(n) if delta is None else v.probability("delta", delta)
    pts = cell_sizes(domain, points, "points")
    gsz = grid_sizes(domain, grid)
    hyperparameter_source = check_hyperparameter_source(hyperparameter_source, auto=False)   # auto never picks it
    need = 8.0 * (2 * CHUNK_FLOATS + 8 * float(np.prod(pts)) + 10 * float(np.prod(gsz)) + 2 * n)
    check_memory("discretised Gaussian mechanism", need, memory_limit,
                  "use fewer points (--points) or a coarser map (--grid)")
    ell = float(domain.widths.max() / max(pts)) if lengthscale is None else v.positive("lengthscale", lengthscale)
    sens = math.sqrt(int(np.prod(pts))) * EQ37_PER_POINT
    event, cert = calibrate_gaussian(sens, epsilon, delta, extra_assumptions=release_assumptions(
        domain, "the discretisation points, the RBF lengthscale and the map grid"))
    s = event.noise_std
    return DiscretisedGaussianPlan(n=n, domain=domain, response_map=response_map, points=pts, lengthscale=ell,
                                   grid=gsz, target_epsilon=float(epsilon), delta=float(delta),
                                   noise_std=s, event=event, certificate=cert,
                                   hyperparameter_source=hyperparameter_source)


DEFAULT_POINTS = 6
POINTS = Option("points", f"discretisation points along the longest side (default {DEFAULT_POINTS}); --lengthscale "
                "sets the RBF lengthscale (default: the point spacing)", int, "M", default=DEFAULT_POINTS)


class DiscretisedGaussian(GridFieldMechanism):
    """``privgp release --mechanism discretised-gaussian``: publish noisy kernel-smoothed density and signal
    values at m public points, Gaussian noise on each value (seed 002 App. A.5, eq. (37)); for comparison
    only: its noise grows with m."""

    name = "discretised-gaussian"
    not_publishable = FLOAT_NOISE
    help = ("noisy kernel-smoothed density and signal channels (SetConv) at m public points, Gaussian noise per "
            "value (seed 002 App. A.5, eq. (37); mu = sqrt(5 m) / s); for comparison only, its noise grows with m; "
            "not released: its float noise leaks (privgp account and the experiments plan and simulate it)")
    options = (POINTS, LENGTHSCALE)
    plan_type = DiscretisedGaussianPlan
    noun, plural = "discretised-Gaussian map", "discretised-Gaussian maps"
    order = 40

    def plan(self, request: Request) -> DiscretisedGaussianPlan:
        return plan_discretised_gaussian(request.n, request.domain, request.response_map,
                                         epsilon=self.epsilon(request), delta=request.delta,
                                         points=self.option(request, "points"),
                                         lengthscale=request.given("lengthscale"), grid=request.grid_points(),
                                         memory_limit=request.memory_limit)

    def rebuild(self, recorded: Recorded) -> DiscretisedGaussianPlan:
        s = recorded.setting
        return plan_discretised_gaussian(recorded.n, recorded.domain(), recorded.response_map(),
                                         epsilon=s("target_epsilon"), delta=s("delta"),
                                         points=recorded.grid_points("points"), lengthscale=s("lengthscale"),
                                         grid=recorded.grid_points(), hyperparameter_source=s("hyperparameters"))

    def report_text(self, plan: DiscretisedGaussianPlan, ctx: PictureContext) -> MechanismReport:
        resp = ctx.response
        m = int(plan.event.sensitivity ** 2 / 5 + 0.5)
        released = (f"One map of {resp.label}: the ratio of two smoothed totals (signal and density) released with "
                    f"Gaussian noise at {m} public points and interpolated, and where it exceeds the threshold "
                    f"{ctx.value(plan.response_map.threshold)}.")
        how = ("At each of the public points the kernel-weighted total of the clipped responses and the kernel-weighted "
               "number of records were computed and released with Gaussian noise; each value is protected on its own "
               "and the protections add up over the points (seed 002, App. A.5), so the noise grows with the number "
               "of points.")
        statement = (f"Seed 002 (R\u00e4is\u00e4, Markou et al.), App. A.5, eq. (37): \u03bc = sqrt(m (\u0394_s\u00b2 + "
                     f"\u0394_d\u00b2)) / s with \u0394_s\u00b2 = 4, \u0394_d\u00b2 = 1, m = {m}, s = "
                     f"{plan.noise_std:.6g}; (\u03b5, \u03b4) from the exact Gaussian-DP profile.")
        rows = (("points", grid_text(plan.points, " \u00d7 "), "set by the data holder or privgp's default"),
                ("RBF lengthscale", f"{plan.lengthscale:.6g}", "set by the data holder or the point spacing (default)"),
                ("noise standard deviation", f"{plan.noise_std:.6g}", "calibrated from \u03b5 and \u03b4"))
        return MechanismReport(released=released, how=how, statement=statement, hyperparameters=rows,
                               account_command=None,
                               references=("J. Räisä, S. Markou et al., Noise-Aware Differentially Private Regression "
                                           "via Meta-Learning (seed paper 002), App. A.5.",))

    def summary(self, plan: DiscretisedGaussianPlan) -> dict:
        return {"L": 1, "points": list(plan.points), "lengthscale": plan.lengthscale, "noise_std": plan.noise_std,
                "sensitivity": plan.event.sensitivity, "target_epsilon": plan.target_epsilon}

    def summary_lines(self, plan: DiscretisedGaussianPlan) -> list[str]:
        return [f"  mechanism   Gaussian mechanism at {grid_text(plan.points)} discretisation points "
                f"(seed 002 eq. 37; noise std {plan.noise_std:.4g})",
                f"  settings    RBF lengthscale {plan.lengthscale:.4g}",
                f"  grid        {grid_text(plan.grid)}"]
