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

import math
from dataclasses import dataclass, field

import numpy as np

from .. import validation as v
from ..accounting import calibrate_eta, calibrate_r, certify
from ..accounting.curves import RdpCurve
from ..domain import Box
from ..errors import InfeasibleTargetError, InvalidParameterError
from ..kernels import make_kernel

TRANSFORMS = ("identity", "log")
SENSITIVITIES = ("auto", "generic", "exp1d")
#: largest number of grid points sampled densely (O(m^3)); larger grids need snapping (``snap``)
DENSE_MAX_POINTS = 8000
MECHANISM = "posterior sample paths (seed 000, Thm 3.1 / Prop. 2, L-fold composition eq. (3))"


def default_delta(n: int) -> float:
    """delta = n^(-1.1), the choice of seed 000's real-data study; n is public (replace-one DP)."""
    n = v.integer("n", n, minimum=2)
    return float(n) ** -1.1


def default_lengthscale(domain: Box) -> float:
    """One fifth of the public domain's diameter: a rule that looks only at the public domain."""
    return domain.diameter / 5.0


def resolve_sensitivity(sensitivity: str, kernel: str, dim: int) -> str:
    """'auto': Lemma B.7 for the exponential kernel on an interval, Lemma B.1 otherwise."""
    if sensitivity not in SENSITIVITIES:
        raise InvalidParameterError("sensitivity", f"one of {SENSITIVITIES}", sensitivity)
    if sensitivity == "auto":
        return "exp1d" if (kernel == "exponential" and dim == 1) else "generic"
    return sensitivity


@dataclass(frozen=True)
class ResponseMap:
    """y = clip(g(z) - g(T), -B, B) / B with public T (threshold, response units) and B (clip,
    transformed units); |y| <= 1 = M_Y (seed 000, App. D.2). y > 0 iff g(z) > g(T), up to saturation."""

    threshold: float
    clip: float
    transform: str = "identity"

    def __post_init__(self):
        if self.transform not in TRANSFORMS:
            raise InvalidParameterError("transform", f"one of {TRANSFORMS}", self.transform)
        t = v.positive("threshold", self.threshold) if self.transform == "log" else \
            v.finite_array("threshold", self.threshold, ndim=0).item()
        object.__setattr__(self, "threshold", float(t))
        object.__setattr__(self, "clip", v.positive("clip", self.clip))

    @property
    def centre(self) -> float:
        """g(T): the centring constant on the transformed scale."""
        return math.log(self.threshold) if self.transform == "log" else self.threshold

    def transformed(self, z) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        if self.transform == "log":
            if np.any(~(z > 0)):
                raise InvalidParameterError("responses", "> 0 for transform 'log'",
                                            f"{int(np.sum(~(z > 0)))} value(s) <= 0")
            return np.log(z)
        return z

    def apply(self, z) -> np.ndarray:
        """Model responses in [-1, 1]."""
        return np.clip(self.transformed(z) - self.centre, -self.clip, self.clip) / self.clip

    def to_response_units(self, f) -> np.ndarray:
        """g^-1(g(T) + B f): a released path on the response's own scale (post-processing;
        meaningful inside the clipping range)."""
        u = self.centre + self.clip * np.asarray(f, dtype=float)
        return np.exp(u) if self.transform == "log" else u

    def to_dict(self) -> dict:
        return {"threshold": self.threshold, "clip": self.clip, "transform": self.transform,
                "centre": self.centre, "M_Y": 1.0,
                "formula": "y = clip(g(z) - g(threshold), -clip, clip) / clip, g = " + self.transform}


def grid_sizes(domain: Box, points: int) -> tuple[int, ...]:
    """Grid points per axis: ``points`` along the longest side, and on the others as many as keep
    the spacing (nearly) equal: round(width / h) + 1 with h = longest / (points - 1), at least 2."""
    points = v.integer("grid", points, minimum=2)
    w = domain.widths
    h = w.max() / (points - 1)
    return tuple(int(max(2, np.floor(wi / h + 0.5) + 1)) for wi in w)


@dataclass(frozen=True)
class ReleasePlan:
    """Every public quantity of one release, fixed before any private value is used."""

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
    certificate: object                   # privgp.accounting PrivacyCertificate
    curve: RdpCurve = field(repr=False)   # RDP curve of the whole release (L draws), for the ledger
    calibration: dict | None = None
    target_epsilon: float | None = None
    snap: int | None = None               # inputs snapped to the grid lattice refined snap times

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


def plan_release(n: int, domain: Box, response_map: ResponseMap, *, kernel: str = "exponential",
                 lengthscale: float | None = None, sigma: float = 1.0, r: float | None = None,
                 eta: float | None = None, L: int = 1, delta: float | None = None,
                 target_epsilon: float | None = None, sensitivity: str = "auto",
                 conversion: str = "improved", grid: int = 81, snap: int | None = None,
                 r_bounds=None) -> ReleasePlan:
    """Fix the public settings of a release and certify it for this n, delta and domain.

    Hyperparameters: with ``target_epsilon`` and no ``r``, r is the smallest value meeting the
    target at the given sigma, eta, L (``calibrate_r``); with ``target_epsilon`` and ``r``, eta is
    the smallest noise level meeting it (``calibrate_eta``; ``eta`` must then be None); without a
    target, r must be given. The certificate is always recomputed by ``certify`` for the final
    setting, and a calibrated epsilon is checked to be <= the target. Only public inputs enter.
    """
    n = v.integer("n", n, minimum=2)
    if not isinstance(domain, Box):
        raise InvalidParameterError("domain", "a privgp.domain.Box", type(domain).__name__)
    k = make_kernel(kernel, 1.0)  # validates the name
    kernel = k.name
    lengthscale = default_lengthscale(domain) if lengthscale is None else v.positive("lengthscale", lengthscale)
    sigma = v.positive("sigma", sigma)
    L = v.integer("L", L, minimum=1)
    delta = default_delta(n) if delta is None else v.probability("delta", delta)
    sens = resolve_sensitivity(sensitivity, kernel, domain.dim)
    constants = "proven"
    sizes = grid_sizes(domain, grid)
    if snap is not None:
        snap = v.integer("snap", snap, minimum=1)
    elif not (kernel == "exponential" and domain.dim == 1) and int(np.prod(sizes)) > DENSE_MAX_POINTS:
        raise InvalidParameterError("grid", f"at most {DENSE_MAX_POINTS} points without snapping "
                                    "(use snap / --snap R for larger grids)", f"{' x '.join(map(str, sizes))}")
    common = dict(kernel=kernel, lengthscale=lengthscale, domain=domain, M_Y=1.0, sensitivity=sens,
                  rkhs_norm=None, constants=constants)
    calibration = None
    if target_epsilon is None:
        if r is None:
            raise InvalidParameterError("r", "given when no target epsilon is given", None)
        r = v.positive("r", r)
        eta = 0.0 if eta is None else v.nonnegative("eta", eta)
        source = "given"
    else:
        target_epsilon = v.positive("target_epsilon", target_epsilon)
        if r is None:
            eta = 0.0 if eta is None else v.nonnegative("eta", eta)
            kw = dict(n=n, sigma=sigma, eta=eta, L=L, conversion=conversion, **common)
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
    cert = certify(n, r, sigma, delta, eta=eta, L=L, conversion=conversion, **common)
    if not (math.isfinite(float(cert.epsilon)) and cert.covered):
        raise InfeasibleTargetError(f"no finite certified epsilon for this setting (n={n}, r={r:g}, "
                                    f"sigma={sigma:g}, eta={eta:g}, L={L}, delta={delta:g}); increase r")
    if target_epsilon is not None and not float(cert.epsilon) <= target_epsilon:
        # calibration must land on the feasible side; never release above the target
        raise InvalidParameterError("calibrated setting", f"certified epsilon <= target {target_epsilon:g}",
                                    float(cert.epsilon))
    curve = cert.rdp_curve()
    return ReleasePlan(n=n, domain=domain, response_map=response_map, kernel=kernel, lengthscale=lengthscale,
                       r=float(r), sigma=sigma, eta=float(eta), L=L, delta=delta, sensitivity=sens,
                       constants=constants, conversion=conversion, grid=sizes, hyperparameter_source=source,
                       certificate=cert, curve=curve, calibration=calibration, target_epsilon=target_epsilon,
                       snap=snap)


def _calibration_dict(cal) -> dict:
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


def sample_release(plan: ReleasePlan, X, z, rng: np.random.Generator) -> ReleasedPaths:
    """Draw the L released paths: exact posterior draws of D = (X, ResponseMap(z)) on the grid.

    X must lie in ``plan.domain`` and have ``plan.n`` rows; ``rng`` supplies all randomness (a
    release with no seed should pass ``np.random.default_rng()``: fresh OS entropy).
    The sampler is chosen from public settings only: O(n + m) Markov sampler for the 1-D
    exponential kernel; with ``plan.snap`` = R the inputs are first moved to the grid lattice
    refined R times (a fixed public per-record map, so replace-one neighbours stay neighbours) and
    sampled by circulant embedding; otherwise the dense joint sampler. All three are exact.
    """
    from ..sampling import exp1d_paths, grid_paths, snap_to_lattice

    rng = v.generator("rng", rng)
    X = plan.domain.check_contains("coordinates", X)
    if X.shape[0] != plan.n:
        raise InvalidParameterError("coordinates", f"{plan.n} rows (the n the release was certified for)",
                                    X.shape[0])
    y = plan.response_map.apply(v.responses("responses", z, plan.n))
    axes = plan.axes()
    if plan.snap is not None:
        X = snap_to_lattice(X, axes, refine=plan.snap)
        paths = grid_paths(make_kernel(plan.kernel, plan.lengthscale), X, y, axes, r=plan.r, sigma=plan.sigma,
                           rng=rng, L=plan.L, eta=plan.eta, method="circulant", refine=plan.snap)
    elif plan.kernel == "exponential" and plan.domain.dim == 1:
        paths = exp1d_paths(X, y, axes[0], lengthscale=plan.lengthscale, r=plan.r, sigma=plan.sigma,
                            rng=rng, L=plan.L, eta=plan.eta)
    else:
        paths = grid_paths(make_kernel(plan.kernel, plan.lengthscale), X, y, axes, r=plan.r, sigma=plan.sigma,
                           rng=rng, L=plan.L, eta=plan.eta, method="dense")
    paths = np.asarray(paths, dtype=float).reshape((plan.L,) + tuple(plan.grid))
    return ReleasedPaths(axes=axes, paths=paths)
