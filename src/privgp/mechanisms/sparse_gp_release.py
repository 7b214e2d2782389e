"""The DP sparse GP (seed 001) as a release plan: the protocol of :mod:`privgp.mechanisms.release`
(plan with every public quantity, ``check``, ``draw``; :func:`~privgp.mechanisms.release.release`
charges the ledger between the two).

Same inputs as a posterior-sample release: private coordinates inside a public box and raw responses
mapped to [-1, 1] by a public :class:`~privgp.mechanisms.release.ResponseMap` (so R_y = 1, with the
clipping done by the map). Public settings fixed from the box and the arguments only: inducing
inputs Z on a regular grid over the box (``inducing`` points along the longest side), kernel and
lengthscale (default: one fifth of the box diameter), signal variance 1, observation noise std
``noise_std`` in model units, the R_k rule, sigma_a / sigma_b, rho and the S_2 correction.

Noise (since 2026-11-29): exact discrete Gaussian noise on the statistics rounded to public lattices, in integer
arithmetic, calibrated to the target (epsilon, delta) on its zCDP curve (:mod:`privgp.mechanisms.sparse_gp_lattice`):
the float noise of seed 001's eq. 5 leaks through its low-order bits (red team 20f: delta(5) >= 0.10 with one
inducing point). A certificate without a ``noise`` setting (an earlier privgp's) is rebuilt with the paper's float
noise calibrated by the exact Gaussian profile. Either way the certificate (:func:`~privgp.accounting.certify`) is
re-checked to be <= the target.

Released (all post-processing of the one noisy output (a~, B~)): the noisy statistics,
q(u) = N(m, S) on Z, and the latent predictive mean and standard deviation on the public grid.
Caveat (docs/results.md, seed 001 Fig. 2): the noise-aware sd is overconfident under strong privacy,
mostly because the regulariser lambda of eq. 10 acts as unmodelled extra precision.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..accounting import PrivacyCertificate, certify
from ..accounting.events import GaussianEvent, ZcdpEvent
from ..errors import InvalidParameterError
from ..models.domain import Box
from .discrete_noise import DISCRETE_GAUSSIAN
from .posterior_release import default_lengthscale
from .release import ResponseMap, default_delta, grid_sizes
from .sparse_gp import (
    MECHANISM,
    NoiseCalibration,
    SparseGpSpec,
    StatisticsReduction,
    SufficientStatistics,
    calibrate_noise,
    privatise,
    sparse_gp_spec,
    sufficient_statistics,
)
from .sparse_gp_lattice import (
    LATTICE_MAX_RECORDS,
    LatticeNoise,
    LatticeReduction,
    lattice_noise,
    lattice_statistics,
    privatise_lattice,
)

DEFAULT_NOISE_STD = 0.3
DEFAULT_INDUCING = {1: 15, 2: 8}


def default_inducing(domain: Box, inducing: int | None) -> int:
    """The inducing points along the box's longest side: ``inducing``, or the default for its dimension."""
    return DEFAULT_INDUCING.get(domain.dim, 8) if inducing is None else v.integer("inducing", inducing, minimum=1)


def n_inducing(domain: Box, inducing: int | None) -> int:
    """How many inducing inputs :func:`plan_sparse_gp` lays out for ``inducing`` (before building them)."""
    points = default_inducing(domain, inducing)
    return 1 if points == 1 else int(np.prod(grid_sizes(domain, points)))


def inducing_grid(domain: Box, points: int) -> np.ndarray:
    """A regular grid of inducing inputs over the public box (corners included), ``points`` along
    its longest side (:func:`~privgp.mechanisms.release.grid_sizes`)."""
    axes = [np.linspace(a, b, m) for a, b, m in zip(domain.lower, domain.upper, grid_sizes(domain, points))]
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=-1)


@dataclass(frozen=True)
class SparseGpReleased:
    """What a sparse-GP release publishes: the grid ``axes``, the latent predictive ``mean`` and
    ``sd`` on it (shape of the grid), q(u) = N(``m``, ``S``) on the inducing inputs ``Z``, and the
    released statistics (a~, B~) they were computed from."""

    axes: tuple[np.ndarray, ...]
    mean: np.ndarray
    sd: np.ndarray
    Z: np.ndarray
    m: np.ndarray
    S: np.ndarray
    a_released: np.ndarray
    B_released: np.ndarray
    repair_shift: float

    def grid_points(self) -> np.ndarray:
        mesh = np.meshgrid(*self.axes, indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=-1)


@dataclass(frozen=True, eq=False)
class SparseGpPlan:
    """Every public quantity of one DP sparse-GP release (seed 001, Alg. 1)."""

    def float_noise_leak(self) -> str | None:
        """None for a release drawn with exact discrete noise (privgp's since 2026-11-29). A float-noise plan (an
        earlier privgp's certificate rebuilt) with two or more inducing points: no attack was found (the solve mixes
        every statistic), but its (epsilon, delta) holds for exact arithmetic only: ``privgp verify`` notes it, so
        ``--strict`` fails (walk-through 21). One inducing point: :meth:`check_verifiable` (measured to leak)."""
        if self.lattice is not None:
            return None
        return ("its noise was drawn in floating point (privgp before 2026-11-29), so its (epsilon, delta) holds for "
                "exact arithmetic only; no attack was found with two or more inducing points (red team 20f; not a "
                "proof); a release now draws exact discrete noise on lattice statistics")

    def check_verifiable(self) -> None:
        """``privgp verify``: a float-noise release with one inducing point does not hold its certificate (red team 20f:
        its m and S give the noisy statistics exactly, delta(5) >= 0.10 where 1e-6 was certified): NOT VERIFIED."""
        if self.lattice is None and self.spec.n_inducing == 1:
            from ..errors import CertificateMismatch  # noqa: PLC0415

            raise CertificateMismatch("public_settings.inducing_points", "sparse-gp with one inducing point and float "
                                      "noise (privgp before 2026-11-29): its released m and S give its noisy statistics "
                                      "exactly, whose low-order bits told neighbouring data sets apart (red team 20f: "
                                      "delta(5) >= 0.10 where 1e-6 was certified); withdraw its files")

    def unpublishable(self) -> str | None:
        """Why this plan may not be released (:func:`~privgp.mechanisms.interface.check_publishable`): float noise,
        which only rebuilds an earlier certificate or simulates (red team 21a L1); None for a release's plan."""
        if self.lattice is not None:
            return None
        return ("a sparse-GP plan drawing float noise, which privgp builds only to rebuild a certificate written before "
                "2026-11-29 or to simulate; a release draws exact discrete noise (plan_sparse_gp's default)")

    n: int
    domain: Box
    response_map: ResponseMap
    spec: SparseGpSpec
    noise_std: float
    delta: float
    target_epsilon: float
    grid: tuple[int, ...]
    noise: NoiseCalibration
    certificate: PrivacyCertificate
    mechanism: str = "sparse-gp"
    #: the exact discrete noise of a release (:mod:`privgp.mechanisms.sparse_gp_lattice`); None: float noise
    #: (certificates before 2026-11-29; the forecast's simulations at scaled n)
    lattice: LatticeNoise | None = None

    @property
    def event(self) -> GaussianEvent | ZcdpEvent:
        return self.noise.event

    @property
    def epsilon(self) -> float:
        return float(self.certificate.epsilon)

    def axes(self) -> tuple[np.ndarray, ...]:
        return tuple(np.linspace(a, b, m) for a, b, m in zip(self.domain.lower, self.domain.upper, self.grid))

    def check(self, X: ArrayLike, z: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """X inside the box with n rows; responses mapped to [-1, 1]. (Z is this plan's grid over the public box,
        public by construction: no check against the records, whose outcome would depend on them.)"""
        X = self.domain.check_contains("coordinates", X)
        if X.shape[0] != self.n:
            raise InvalidParameterError("coordinates", f"{self.n} rows (the n the release was planned for)", X.shape[0])
        return X, self.response_map.apply(v.responses("responses", z, self.n))

    def draw(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> SparseGpReleased:
        if self.lattice is not None:
            A, B, _, _ = lattice_statistics(X, y, self.spec, self.lattice)
            return self.from_released(*privatise_lattice(A, B, self.lattice, v.generator("rng", rng)))
        stats = sufficient_statistics(X, y, self.spec, check_inducing=False)
        return self.from_released(*privatise(stats, self.noise, v.generator("rng", rng)))

    def scaled(self, n: int) -> SparseGpPlan:
        """The same plan for ``n`` records with the noise stds scaled by n / self.n: its statistics are sums over
        records, so the release forecast simulates large n at n records with the same signal-to-noise ratio of the
        privacy noise (less data for the model: a conservative forecast). Not a plan to release with."""
        f = n / self.n
        return replace(self, n=n, lattice=None, noise=replace(self.noise, sigma_a=self.noise.sigma_a * f,
                                                              sigma_b=self.noise.sigma_b * f))

    def simulation(self) -> SparseGpPlan:
        """The same plan drawing float Gaussian noise of the very stds its discrete noise has, on unrounded statistics
        (lattice 2^-16 of the bounds: the same law to that rounding): for simulations on public synthetic data (the
        forecast, the studies), where the exact sampler's integer arithmetic (about 60 ms a release of 40 inducing
        inputs) would be paid hundreds of times. Not a plan to release with."""
        return replace(self, lattice=None)

    def reduction(self) -> StatisticsReduction | LatticeReduction:
        """The public reduction of the records to what the release depends on, its sufficient statistics
        (A, B of eq. 3; on the lattices, as integers, for a release): ``--data`` folders, DuckDB and a Dask cluster
        compute them where the records live."""
        return StatisticsReduction(self.spec) if self.lattice is None else LatticeReduction(self.spec, self.lattice)

    def check_statistics(self, A: np.ndarray, B: np.ndarray, n: int, n_clipped: int) -> None:
        """What the sensitivity assumes of statistics reduced elsewhere: n records, |A_j| <= n R_y sigma_f^2 (each
        record adds k(z_j, x) y with |k| <= sigma_f^2, |y| <= R_y), B symmetric with 0 <= B_jj <= n sigma_f^4, and
        0 <= n_clipped <= n (checked before the charge). On the lattices (a release): integers, B exactly symmetric,
        the same bounds in lattice steps (2^16 a kernel value or response)."""
        if not isinstance(n, (int, np.integer)) or int(n) != self.n:   # red team 21a L3: 100.5 passed as 100
            raise InvalidParameterError("statistics", f"sufficient statistics of {self.n} records", n)
        m, k2 = self.spec.n_inducing, float(self.spec.signal_variance)
        if not isinstance(n_clipped, (int, np.integer)) or not 0 <= int(n_clipped) <= self.n:
            raise InvalidParameterError("statistics", f"a whole clipped count between 0 and {self.n}", n_clipped)
        if self.lattice is not None:
            A, B = np.asarray(A), np.asarray(B)
            if A.shape != (m,) or B.shape != (m, m) or A.dtype != np.int64 or B.dtype != np.int64:
                raise InvalidParameterError("statistics", f"int64 lattice statistics A of shape ({m},) and B of shape "
                                            f"({m}, {m})", (A.shape, A.dtype.name, B.shape, B.dtype.name))
            # |y~ k~| and k~^2 are at most 2^16 2^16 lattice steps a record; |B_jl| <= sqrt(B_jj B_ll) (red team 21a
            # L3: each bound on both sides, no abs() that wraps at the most negative int64, every entry of B)
            top = self.n * 2**32
            if (np.any(A < -top) or np.any(A > top) or np.any(B < -top) or np.any(B > top)
                    or not np.array_equal(B, B.T) or np.any(np.diag(B) < 0)):
                raise InvalidParameterError("statistics", "|A_j| <= n 2^32, B symmetric with 0 <= B_jj and |B_jl| <= "
                                            "n 2^32 (lattice steps)", "outside those")
            return
        A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
        tol = 1e-9 * max(1.0, self.n * k2 * k2)
        if A.shape != (m,) or B.shape != (m, m) or not (np.all(np.isfinite(A)) and np.all(np.isfinite(B))):
            raise InvalidParameterError("statistics", f"finite A of shape ({m},) and B of shape ({m}, {m})",
                                        (A.shape, B.shape))
        if np.any(np.abs(A) > self.n * self.spec.response_bound * k2 * (1 + 1e-9)):
            raise InvalidParameterError("statistics", "|A_j| <= n R_y sigma_f^2 (responses clipped to |y| <= R_y)",
                                        float(np.max(np.abs(A))))
        d = np.diag(B)
        if np.any(np.abs(B - B.T) > tol) or np.any(d < -tol) or np.any(d > self.n * k2 * k2 + tol):
            raise InvalidParameterError("statistics", "B symmetric with 0 <= B_jj <= n sigma_f^4", "outside those")

    def draw_from_statistics(self, A: np.ndarray, B: np.ndarray, n: int, n_clipped: int,
                             rng: np.random.Generator) -> SparseGpReleased:
        """The release from sufficient statistics reduced in one pass (:meth:`reduction`): that of :meth:`draw`."""
        rng = v.generator("rng", rng)
        if self.lattice is not None:
            return self.from_released(*privatise_lattice(np.asarray(A, dtype=np.int64), np.asarray(B, dtype=np.int64),
                                                          self.lattice, rng))
        B = np.asarray(B, dtype=float)
        stats = SufficientStatistics(np.asarray(A, dtype=float), 0.5 * (B + B.T), int(n), int(n_clipped))
        return self.from_released(*privatise(stats, self.noise, rng))

    def from_released(self, a: np.ndarray, B: np.ndarray) -> SparseGpReleased:
        """Everything published, from the released statistics (a~, B~) alone (post-processing): the noise-aware
        posterior q(u) = N(m, S) told the stds drawn (eqs. 9-15), and the prediction on the grid (eq. 17)."""
        from ..blas_threads import one_blas_thread
        from ..models.gp.sparse_posterior import noise_aware_posterior, predict_from_released

        spec = self.spec
        with one_blas_thread():   # the same bits whatever the machine's threads (verify)
            post = noise_aware_posterior(spec.inducing_points, spec.kernel, a, B, scale=self.noise_std**2,
                                         sigma_a=self.noise.sigma_a, sigma_b=self.noise.sigma_b, rho=spec.rho,
                                         correction=spec.correction, signal_variance=spec.signal_variance)
        axes = self.axes()
        mesh = np.meshgrid(*axes, indexing="ij")
        pts = np.stack([m.ravel() for m in mesh], axis=-1)
        # from the released m and S by the very function privgp verify recomputes them with (eq. 17; bit for bit
        # the same numbers, so the released prediction.npz verifies exactly, not only to 1e-9)
        mu, sd = predict_from_released(np.asarray(spec.inducing_points, dtype=float), spec.kernel,
                                       spec.signal_variance, post.mean, post.covariance, pts)
        return SparseGpReleased(axes, mu.reshape(self.grid), sd.reshape(self.grid), spec.inducing_points,
                                post.mean, post.covariance, a, B, post.repair_shift)

    def describe(self) -> str:
        k = self.spec.kernel.describe()
        return (f"DP sparse GP release: n={self.n}, |Z|={self.spec.n_inducing}, {k['kernel']} kernel "
                f"(lengthscale {k.get('lengthscale', float('nan')):.4g}), sigma={self.noise_std:.4g}, "
                f"sigma_a={self.noise.sigma_a:.4g}, domain {self.domain.describe()}")

    @property
    def sensitivity(self) -> float:
        """The L2 sensitivity the event is computed with: eq. 6, at R_k + g_k sqrt(d) on the lattices."""
        return self.spec.sensitivity() if self.lattice is None else self.lattice.sensitivity

    def public_settings(self) -> dict:
        return {"mechanism": MECHANISM, "n": self.n, "dim": self.domain.dim, "domain": self.domain.to_dict(),
                "response_map": self.response_map.to_dict(), **self.spec.to_dict(), "noise_std": self.noise_std,
                "sensitivity": self.sensitivity, "sigma_a": self.noise.sigma_a, "sigma_b": self.noise.sigma_b,
                "delta": self.delta, "target_epsilon": self.target_epsilon, "grid": list(self.grid),
                **({} if self.lattice is None else {"noise": DISCRETE_GAUSSIAN, "lattice": self.lattice.to_dict()})}


def plan_sparse_gp(n: int, domain: Box, response_map: ResponseMap, *, epsilon: float, delta: float | None = None,
                   kernel: str = "squared_exponential", lengthscale: float | None = None,
                   noise_std: float = DEFAULT_NOISE_STD, inducing: int | None = None, grid: int = 81,
                   kernel_bound: str = "auto", noise_ratio: float | str = 1.0, rho: float = 0.01,
                   correction: str = "symmetric", _noise: str = DISCRETE_GAUSSIAN) -> SparseGpPlan:
    """Plan a DP sparse-GP release (seed 001): its public settings, certified at (epsilon, delta) for this n
    (see the module docstring). Only public inputs enter. Its noise is exact discrete Gaussian noise on lattice
    statistics, calibrated on its zCDP curve (:mod:`privgp.mechanisms.sparse_gp_lattice`); ``_noise="float"``
    rebuilds a certificate written before 2026-11-29 (the paper's float noise, calibrated on the exact GDP profile)."""
    n = v.integer("n", n, minimum=2)
    if _noise not in (DISCRETE_GAUSSIAN, "float"):
        raise InvalidParameterError("noise", f"{DISCRETE_GAUSSIAN!r} or 'float' (certificates before 2026-11-29)",
                                    _noise)
    if _noise == DISCRETE_GAUSSIAN and n > LATTICE_MAX_RECORDS:
        raise InvalidParameterError("n", "at most 2^28 records for a sparse-GP release (its integer statistics and "
                                    "noise stay within int64)", n)
    if not isinstance(domain, Box):
        raise InvalidParameterError("domain", "a privgp.models.domain.Box", type(domain).__name__)
    if not isinstance(response_map, ResponseMap):
        raise InvalidParameterError("response_map", "a ResponseMap", type(response_map).__name__)
    eps = v.positive("epsilon", epsilon)
    delta = default_delta(n) if delta is None else v.probability("delta", delta)
    lengthscale = default_lengthscale(domain) if lengthscale is None else v.positive("lengthscale", lengthscale)
    sigma = v.scale("noise_std", noise_std)
    inducing = default_inducing(domain, inducing)
    Z = inducing_grid(domain, inducing) if inducing > 1 else np.array([0.5 * (np.asarray(domain.lower) +
                                                                            np.asarray(domain.upper))])
    spec = sparse_gp_spec(Z, response_bound=1.0, kernel=kernel, lengthscale=lengthscale, kernel_bound=kernel_bound,
                          noise_ratio=noise_ratio, rho=rho, correction=correction)
    sizes = grid_sizes(domain, grid)
    lattice = None
    if _noise == DISCRETE_GAUSSIAN:
        lattice = lattice_noise(spec, epsilon=eps, delta=delta)
        noise = lattice.calibration(eps, delta)
    else:
        noise = calibrate_noise(spec.sensitivity(), eps, delta, spec.noise_ratio)
    public = {"inducing_points": spec.n_inducing, "kernel_bound": f"{kernel_bound} (R_k = {spec.kernel_bound:.6g})",
              "response_bound": "1 (responses mapped to [-1, 1])", "noise_ratio": spec.noise_ratio}
    assumptions: tuple[str, ...] = ("inducing inputs, kernel, lengthscale, noise std and the response map are public, fixed "
                   "without the private data", "responses clipped to [-1, 1] by the public response map",
                   "replace-one neighbours of a public size n")
    if lattice is not None:
        assumptions += ("kernel values and responses rounded to public lattices (2^-16 of their bounds) and "
                        "summed exactly; exact discrete Gaussian noise in integer arithmetic "
                        "(privgp.mechanisms.sparse_gp_lattice)",)
    # the calibrations land on the feasible side: this certificate (the same accountant) meets the target
    cert = certify(noise.event, delta=delta, mechanism=MECHANISM, public=public, extra_assumptions=assumptions)
    return SparseGpPlan(n, domain, response_map, spec, sigma, delta, eps, sizes, noise, cert, lattice=lattice)
