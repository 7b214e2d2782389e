"""Posterior-sample release: the mechanism of seed 000 (sec. 2-3, App. A.1) joined to its accounting.

A release publishes L independent exact draws f_D^(1..L) from the GP posterior
Pi_D = GP(mu_D, sigma^2 k_D) of a private dataset D = (X, y) (plus, optionally, independent prior
noise g ~ GP(0, eta^2 k), Prop. 2), evaluated on a grid over the public domain. Its excursion
sets {x : f(x) >= 0} are post-processing and inherit the guarantee (seed 000, sec. 5).

The guarantee (Thm 3.1 / Prop. 2 with V_n, Delta_n from App. B, composed over L draws by eq. (3))
holds under assumptions this module enforces:

* bounded responses |y_i| <= M_Y = 1: raw responses z_i are mapped by the public
  :class:`ResponseMap` y_i = clip(g(z_i) - g(T), -B, B) / B (App. D.2), with g a public transform
  (identity or log), T a public threshold and B a public clipping bound;
* a public domain Omega_X containing every input (given by the user, never computed from the
  coordinates; inputs outside it are an error) -- its diameter enters kappa (Prop. 3);
* hyperparameters (kernel, lengthscale, r, sigma, eta, L) independent of the private data: given,
  or calibrated from a target (epsilon, delta) using only public quantities (n, domain, ...).
  Choosing them on the private data would need its own privacy accounting (seed 000, sec. 6);
* replace-one neighbours of a fixed, public size n: the certificate is computed for the n, delta
  and domain of *this* release, never carried over from another one.

This module plans, certifies and samples; it writes nothing (see :mod:`privgp.cli.release`).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..accounting import PrivacyCertificate
from ..accounting.calibrate import CalibrationResult
from ..accounting.posterior_sampling import PosteriorSampleEvent
from ..accounting.sensitivity import choose_lemma
from ..errors import InfeasibleTargetError, InvalidParameterError
from ..models.domain import Box
from ..models.kernels import make_kernel
from .posterior_sample import calibrate_eta, calibrate_r, certify_posterior_sample
from .release import ResponseMap, default_delta, grid_sizes, occupied_site_points

if TYPE_CHECKING:
    from ..models.sampling.grid import LatticeSites

#: largest number of grid points sampled densely (O(m^3)); larger grids need snapping (``snap``)
DENSE_MAX_POINTS = 8000
#: default limit on the estimated peak memory of the sampler (bytes); a release above it is refused
#: before anything is charged, naming the option that would work
DEFAULT_MEMORY_LIMIT = 4 * 2**30
#: privgp's defaults for a posterior-sample release, shared by ``privgp release`` and the library
#: (:func:`plan_posterior_sample`, :class:`~privgp.mechanisms.sparse_gp_estimator.DPPosteriorSampler`):
#: the kernel; the target epsilon when no r is given; the kernel scale sigma (with responses scaled to
#: [-1, 1], sigma = 0.1 gave the best one-path IoU at fixed epsilon in a synthetic (plume) study with
#: n = 211 -- chosen without any private data); grid points along the longest side and the snapping
#: refinement, per dimension (0: no snapping)
DEFAULT_KERNEL = "exponential"
DEFAULT_EPSILON = 5.0
DEFAULT_SIGMA = 0.1
DEFAULT_GRID = {1: 201, 2: 121}
DEFAULT_SNAP = {1: 1, 2: 1}   # 1-D: 1 since 2026-11-29 (red team 21c: unsnapped samplers leak)
#: red team 21c: without snapping the samplers release fl(mean + noise), the mean a deterministic float of the records
FLOAT_PATH_LEAK = ("posterior-sample without snapping (--snap 0) draws its path as the posterior mean plus noise in one "
                   "float addition, whose low-order bits tell two neighbouring data sets apart (red team 21c: delta(5) = "
                   "1 measured with the dense sampler, >= 0.15 with the 1-D exponential kernel's, where 1e-6 is "
                   "certified); use --snap 1 (inputs moved to the grid lattice, a public per-record map; the 2-D "
                   "default), whose sampler draws the path through a solve")
MECHANISM = "posterior sample paths (seed 000, Thm 3.1 / Prop. 2, L-fold composition eq. (3))"


def default_lengthscale(domain: Box) -> float:
    """One fifth of the public domain's diameter: a rule that looks only at the public domain."""
    return domain.diameter / 5.0


@dataclass(frozen=True)
class PosteriorSamplePlan:
    """Every public quantity of one posterior-sample release, fixed before any private value is used
    (the seed-000 implementation of :class:`privgp.mechanisms.release.ReleasePlan`)."""

    n: int
    domain: Box
    response_map: ResponseMap
    kernel: str
    lengthscale: float
    r: float
    sigma: float
    eta: float
    L: int
    delta: float
    sensitivity: str
    constants: str
    conversion: str
    grid: tuple[int, ...]
    hyperparameter_source: str            # "given", "calibrated r", "calibrated eta"
    certificate: PrivacyCertificate
    calibration: dict | None = None
    target_epsilon: float | None = None
    snap: int | None = None               # inputs snapped to the grid lattice refined snap times
    memory_limit: float = DEFAULT_MEMORY_LIMIT
    mechanism: str = "posterior-sample"

    def check(self, X: ArrayLike, z: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        return check_data(self, X, z)

    def draw(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> ReleasedPaths:
        return draw_paths(self, X, y, rng)

    def unpublishable(self) -> str | None:
        """Why a release of it would not hold its certificate as computed (red team 21c), or None: without snapping
        (``--snap 0``, and 1-D's default before 2026-11-29) the dense and the 1-D exponential samplers release
        the posterior mean plus noise in one float addition (:data:`FLOAT_PATH_LEAK`). The snapped sampler (the
        grid lattice) draws by Matheron's rule through a solve: no attack found (red teams 20f, 21c; not a proof)."""
        return None if _method(self) == "circulant" else FLOAT_PATH_LEAK

    def check_verifiable(self) -> None:
        """``privgp verify``: a release drawn by a sampler measured to leak (:meth:`unpublishable`): NOT VERIFIED."""
        if (why := self.unpublishable()) is not None:
            from ..errors import CertificateMismatch  # noqa: PLC0415

            raise CertificateMismatch("public_settings.snap", f"{why}; withdraw its files")

    #: its ``scaled`` keeps the noise (the release is not a sum over records)
    scaled_noise = False

    def scaled(self, n: int) -> PosteriorSamplePlan:
        """The same plan (same noise, calibrated for self.n) for ``n`` records: the release forecast simulates a
        large n at n records; fewer records and the same noise give a noisier map, so the forecast is
        conservative. Not a plan to release with (its certificate is self.n's)."""
        return dataclasses.replace(self, n=n)

    def site_rule(self) -> LatticeSites | None:
        """With snapping: the public rule reducing records to this plan's private input, per-site counts and
        sums of the responses on the grid lattice (:class:`~privgp.models.sampling.grid.LatticeSites`);
        the posterior depends on the snapped records only through them. None without snapping."""
        from ..models.sampling.grid import LatticeSites

        return None if self.snap is None else LatticeSites.of(self.axes(), self.snap)

    def check_statistics(self, sums: np.ndarray, counts: np.ndarray) -> None:
        """Before the charge, from per-site statistics: n as planned, the sampler feasible for the occupied sites."""
        _check_sampler(self, occupied_site_points(self, sums, counts))

    def draw_from_statistics(self, sums: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> ReleasedPaths:
        """The L released paths from per-site sums and counts of the clipped responses (:meth:`site_rule`):
        the law of :meth:`draw` on the records they summarise."""
        from ..models.sampling.grid import grid_paths_from_sites

        rule = self.site_rule()
        if rule is None:
            raise InvalidParameterError("snap", "an integer >= 1 to release from per-site statistics", self.snap)
        paths = grid_paths_from_sites(make_kernel(self.kernel, self.lengthscale), rule, sums, counts, self.axes(),
                                      r=self.r, sigma=self.sigma, rng=v.generator("rng", rng), L=self.L, eta=self.eta,
                                      memory_limit=self.memory_limit)
        return ReleasedPaths(axes=self.axes(), paths=np.asarray(paths, dtype=float).reshape((self.L,) + tuple(self.grid)))

    @property
    def event(self) -> PosteriorSampleEvent:
        """The privacy event of the whole release (L draws), what the ledger stores."""
        return self.certificate.event  # type: ignore[return-value]

    def axes(self) -> tuple[np.ndarray, ...]:
        """The public grid over the domain (corners included)."""
        return tuple(np.linspace(a, b, m) for a, b, m in zip(self.domain.lower, self.domain.upper, self.grid))

    @property
    def epsilon(self) -> float:
        return float(self.certificate.epsilon)

    def public_settings(self) -> dict:
        out = {"n": self.n, "dim": self.domain.dim, "domain": self.domain.to_dict(),
               "response_map": self.response_map.to_dict(), "kernel": self.kernel,
               "lengthscale": self.lengthscale, "r": self.r, "sigma": self.sigma, "eta": self.eta,
               "L": self.L, "delta": self.delta, "sensitivity": self.sensitivity,
               "constants": self.constants, "conversion": self.conversion, "grid": list(self.grid),
               "hyperparameters": self.hyperparameter_source,
               "preprocessing": ("none" if self.snap is None else
                                 f"inputs snapped to the grid lattice refined {self.snap}x per axis "
                                 "(fixed public per-record map)")}
        if self.target_epsilon is not None:
            out["target_epsilon"] = self.target_epsilon
        return out

    def describe(self) -> str:
        """One public line for the ledger."""
        return (f"posterior sample release: n={self.n}, L={self.L}, {self.kernel} kernel "
                f"(lengthscale {self.lengthscale:.4g}), r={self.r:.4g}, sigma={self.sigma:.4g}, "
                f"eta={self.eta:.4g}, domain {self.domain.describe()}")


def _eta(eta: Any) -> float:
    """A given prior-noise level eta: >= 0 and at most :data:`privgp.validation.SCALE_RANGE`'s upper end (the
    samplers square it)."""
    eta = v.nonnegative("eta", eta)
    if eta > v.SCALE_RANGE[1]:
        raise InvalidParameterError("eta", f"at most {v.SCALE_RANGE[1]:g} (its square must be finite in float64)", eta)
    return eta


def plan_posterior_sample(n: int, domain: Box, response_map: ResponseMap, *, kernel: str = DEFAULT_KERNEL,
                 lengthscale: float | None = None, sigma: float | None = None, r: float | None = None,
                 eta: float | None = None, L: int = 1, delta: float | None = None,
                 target_epsilon: float | None = None, sensitivity: str = "auto",
                 conversion: str = "improved", grid: int | None = None, snap: int | str | None = "auto",
                 r_bounds: tuple[float, float] | None = None,
                 memory_limit: float = DEFAULT_MEMORY_LIMIT) -> PosteriorSamplePlan:
    """Plan a release of L posterior sample paths (seed 000): its public settings, calibrated and certified for
    this n, delta and domain, before any data is read.

    Hyperparameters: with ``target_epsilon`` and no ``r``, r is the smallest value meeting the
    target at the given sigma, eta, L (``calibrate_r``); with ``target_epsilon`` and ``r``, eta is
    the smallest noise level meeting it (``calibrate_eta``; ``eta`` must then be None); without a
    target, r must be given. The certificate is always recomputed by ``certify`` for the final
    setting, and a calibrated epsilon is checked to be <= the target. Only public inputs enter.

    Defaults are ``privgp release``'s (:data:`DEFAULT_SIGMA`, :data:`DEFAULT_GRID` and
    :data:`DEFAULT_SNAP` for the domain's dimension, so a release snaps its inputs to the grid
    lattice): ``sigma=None``, ``grid=None`` and ``snap="auto"`` select them; ``snap=None`` or 0 means
    no snapping (dense or 1-D Markov sampling), which plans, accounts, audits and simulates but is not released
    (:data:`FLOAT_PATH_LEAK`, red team 21c).
    """
    n = v.integer("n", n, minimum=2)
    if not isinstance(domain, Box):
        raise InvalidParameterError("domain", "a privgp.models.domain.Box", type(domain).__name__)
    k = make_kernel(kernel, 1.0)  # validates the name
    kernel = k.name
    lengthscale = default_lengthscale(domain) if lengthscale is None else v.positive("lengthscale", lengthscale)
    # the samplers square sigma and eta (a value near 1e154 or above overflowed only in sample_y, after the charge)
    sigma = DEFAULT_SIGMA if sigma is None else v.scale("sigma", sigma)
    if grid is None:
        grid = DEFAULT_GRID.get(domain.dim, DEFAULT_GRID[2])
    if isinstance(snap, str):
        if snap != "auto":
            raise InvalidParameterError("snap", "'auto', None or an integer >= 0", snap)
        snap = DEFAULT_SNAP.get(domain.dim, 1)
    snap = None if snap is None or (isinstance(snap, (int, np.integer)) and not isinstance(snap, bool) and snap == 0) \
        else snap
    L = v.integer("L", L, minimum=1)
    delta = default_delta(n) if delta is None else v.probability("delta", delta)
    sens = choose_lemma(sensitivity, kernel, domain.dim)
    constants = "proven"
    sizes = grid_sizes(domain, grid)
    if snap is not None:
        snap = v.integer("snap", snap, minimum=1)
    elif not (kernel == "exponential" and domain.dim == 1) and int(np.prod(sizes)) > DENSE_MAX_POINTS:
        raise InvalidParameterError("grid", f"at most {DENSE_MAX_POINTS} points without snapping "
                                    "(use snap / --snap R for larger grids)", f"{' x '.join(map(str, sizes))}")
    common: dict[str, Any] = dict(kernel=kernel, lengthscale=lengthscale, domain=domain, M_Y=1.0, sensitivity=sens,
                  rkhs_norm=None, constants=constants)
    calibration = None
    if target_epsilon is None:
        if r is None:
            raise InvalidParameterError("r", "given when no target epsilon is given", None)
        r = v.positive("r", r)
        eta = 0.0 if eta is None else _eta(eta)
        source = "given"
    else:
        target_epsilon = v.positive("target_epsilon", target_epsilon)
        if r is None:
            eta = 0.0 if eta is None else _eta(eta)
            kw: dict[str, Any] = dict(n=n, sigma=sigma, eta=eta, L=L, conversion=conversion, **common)
            if r_bounds is not None:
                kw["r_bounds"] = r_bounds
            cal = calibrate_r(target_epsilon, delta, **kw)
            r = float(cal.value)
            source = "calibrated r"
        else:
            if eta is not None:
                raise InvalidParameterError("eta", "left out when both a target epsilon and r are given "
                                            "(eta is then calibrated)", eta)
            r = v.positive("r", r)
            cal = calibrate_eta(target_epsilon, delta, n=n, r=r, sigma=sigma, L=L, conversion=conversion,
                                **common)
            eta = float(cal.value)
            source = "calibrated eta"
        calibration = _calibration_dict(cal)
    cert = certify_posterior_sample(n, r, sigma, delta, eta=eta, L=L, conversion=conversion, **common)
    if not (math.isfinite(float(cert.epsilon)) and cert.covered):
        raise InfeasibleTargetError(f"no finite certified epsilon for this setting (n={n}, r={r:g}, "
                                    f"sigma={sigma:g}, eta={eta:g}, L={L}, delta={delta:g}); increase r")
    if target_epsilon is not None and not float(cert.epsilon) <= target_epsilon:
        # calibration must land on the feasible side; never release above the target
        raise InvalidParameterError("calibrated setting", f"certified epsilon <= target {target_epsilon:g}",
                                    float(cert.epsilon))
    return PosteriorSamplePlan(n=n, domain=domain, response_map=response_map, kernel=kernel, lengthscale=lengthscale,
                       r=float(r), sigma=sigma, eta=float(eta), L=L, delta=delta, sensitivity=sens,
                       constants=constants, conversion=conversion, grid=sizes, hyperparameter_source=source,
                       certificate=cert, calibration=calibration, target_epsilon=target_epsilon,
                       snap=snap, memory_limit=v.positive("memory_limit", memory_limit))


def _calibration_dict(cal: CalibrationResult) -> dict[str, Any]:
    return {"parameter": cal.parameter, "value": float(cal.value), "target_epsilon": float(cal.target_epsilon),
            "target_delta": float(cal.target_delta), "epsilon_at_value": float(cal.epsilon),
            "rechecked": bool(cal.checked),
            "rule": f"smallest {cal.parameter} meeting the target, from public quantities only"}


@dataclass(frozen=True)
class ReleasedPaths:
    """L released paths on the grid ``axes`` (model units: the excursion level is 0)."""

    axes: tuple[np.ndarray, ...]
    paths: np.ndarray        # (L, len(axes[0])[, len(axes[1])])
    level: float = 0.0

    def excursion(self) -> np.ndarray:
        """Indicators f^(l)(x) >= level, same shape as ``paths``."""
        return self.paths >= self.level

    def grid_points(self) -> np.ndarray:
        mesh = np.meshgrid(*self.axes, indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=-1)


def _method(plan: PosteriorSamplePlan) -> str:
    if plan.snap is not None:
        return "circulant"
    return "exp1d" if (plan.kernel == "exponential" and plan.domain.dim == 1) else "dense"


def check_data(plan: PosteriorSamplePlan, X: ArrayLike, z: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Every check of the private inputs that can fail, before any charge: X inside ``plan.domain``
    with ``plan.n`` rows, responses mappable by the plan's ResponseMap, and the sampler feasible —
    circulant embedding exact on this grid, estimated peak memory under ``plan.memory_limit`` (for
    the circulant sampler: with its Cholesky fallback's Gram matrix when that fits the limit, else the
    structured CG solve alone, which :func:`draw_paths` then never leaves).
    Returns the inputs the sampler uses (snapped to the grid lattice when ``plan.snap``) and the
    responses mapped to [-1, 1]. Error messages may name counts of the private data (for the data
    holder; not for publication)."""
    from ..models.sampling import snap_to_lattice

    X = plan.domain.check_contains("coordinates", X)
    if X.shape[0] != plan.n:
        raise InvalidParameterError("coordinates", f"{plan.n} rows (the n the release was certified for)",
                                    X.shape[0])
    y = plan.response_map.apply(v.responses("responses", z, plan.n))
    if plan.snap is not None:
        X = snap_to_lattice(X, plan.axes(), refine=plan.snap)
    _check_sampler(plan, X)
    return X, y


def _check_sampler(plan: PosteriorSamplePlan, X: np.ndarray) -> None:
    """The sampler is feasible for the (snapped) inputs X: exact circulant embedding, memory under the limit."""
    from ..models.sampling import plan_sampler

    axes = plan.axes()
    method = _method(plan)
    try:
        sp = plan_sampler(make_kernel(plan.kernel, plan.lengthscale), X, axes, L=plan.L, method=method,
                          refine=plan.snap, memory_limit=plan.memory_limit)
    except InvalidParameterError as exc:
        raise InvalidParameterError(
            "grid", f"a grid on which the circulant embedding of the {plan.kernel} kernel is exact ({exc.requirement}); "
            "try a coarser grid (--grid) or a shorter lengthscale (red team 21d: matern32 at a lengthscale of twice "
            "the box passes at 51 points, not at 201); unsnapped (dense) sampling, grids up to "
            f"{DENSE_MAX_POINTS} points, plans and accounts but is not released (its float addition leaks)",
            "x".join(map(str, plan.grid))) from None
    if sp.bytes > plan.memory_limit:
        if method == "dense":
            hint = ("snap the inputs to the grid (snap=1 / --snap 1): the circulant sampler needs one unknown per "
                    "occupied grid site, whatever n is")
        elif method == "circulant":
            hint = "use fewer paths L, a coarser lattice (a smaller snap refinement) or a coarser grid"
        else:
            hint = "use fewer paths L or a coarser grid"
        raise InvalidParameterError(
            "memory", f"at most the limit of {plan.memory_limit / 2**30:.3g} GiB for the {sp.method} sampler "
            f"({sp.unknowns} unknowns, {sp.grid_points} grid points, L = {plan.L}); {hint}, or raise the "
            "limit (memory_limit / --memory-limit)", f"an estimated {sp.gib:.3g} GiB")


def draw_paths(plan: PosteriorSamplePlan, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> ReleasedPaths:
    """The L released paths: exact posterior draws of D = (X, y) on the grid (X, y from
    :func:`check_data`, i.e. already snapped when ``plan.snap``).

    The sampler is chosen from public settings only (:func:`privgp.models.sampling.exact_paths`): O(n + m)
    Markov sampler for the 1-D exponential kernel; with ``plan.snap`` = R the inputs were moved to
    the grid lattice refined R times (a fixed public per-record map, so replace-one neighbours stay
    neighbours) and are sampled by circulant embedding with one unknown per occupied site (its linear
    system solved by conjugate gradients with FFT products, the dense Cholesky factor as fallback only
    when that fits ``plan.memory_limit``, as :func:`check_data` estimated); otherwise the dense joint
    sampler (distinct inputs only). All are exact (to rounding: :func:`privgp.models.sampling.grid.grid_paths`).
    """
    from ..models.sampling import exact_paths

    rng = v.generator("rng", rng)
    paths = exact_paths(make_kernel(plan.kernel, plan.lengthscale), X, y, plan.axes(), r=plan.r, sigma=plan.sigma,
                        rng=rng, L=plan.L, eta=plan.eta, method=_method(plan), refine=plan.snap,
                        memory_limit=plan.memory_limit)
    paths = np.asarray(paths, dtype=float).reshape((plan.L,) + tuple(plan.grid))
    return ReleasedPaths(axes=plan.axes(), paths=paths)


def sample_release(plan: PosteriorSamplePlan, X: ArrayLike, z: ArrayLike, rng: np.random.Generator) -> ReleasedPaths:
    """check_data + draw_paths WITHOUT charging any ledger (for experiments and tests; a release to
    publish goes through :func:`privgp.mechanisms.release.release`)."""
    X, y = check_data(plan, X, z)
    return draw_paths(plan, X, y, rng)
