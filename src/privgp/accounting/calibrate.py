"""Calibration of one hyperparameter for a target (epsilon, delta) (seed 000, Thm 3.1 / Prop. 2).

* :func:`calibrate_r`: the smallest effective ridge r at fixed sigma (and eta, L);
* :func:`calibrate_eta`: the smallest GP-noise level eta (Prop. 2) at fixed (sigma, r);
* :func:`calibrate_L`: the largest number L of released paths.

Each search evaluates the vectorised accountant on a grid, brackets the boundary of the feasible
set {epsilon <= target} and refines it, always keeping the feasible end of the bracket. The value
returned is then re-checked with a fresh call to :func:`epsilon_posterior_sampling`; a value that
fails the re-check is never returned. A target that no admissible value reaches raises
:class:`~privgp.errors.InfeasibleTargetError` saying why.

"Smallest r" / "smallest eta" is exact up to the refinement tolerance when epsilon is monotone in
the parameter (the accountant's epsilon decreases in r, sigma and eta and increases in L; the tests
check these laws); otherwise it is the smallest feasible grid value, still feasible.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validation as v
from ..errors import InfeasibleTargetError, InvalidParameterError, NumericalError
from .posterior_sampling import EpsilonResult, epsilon_posterior_sampling

GRID = 129          # first pass over the whole range
REFINE = 33         # points per refinement round inside the bracket
ROUNDS = 3          # refinement rounds: the bracket shrinks by (REFINE - 1)^ROUNDS


@dataclass(frozen=True)
class CalibrationResult:
    """The calibrated value of one parameter and the certified result at it.

    parameter: "r", "eta" or "L"; value: the calibrated value (an int for L); result: the
    EpsilonResult at the chosen setting (scalar arrays); checked: the chosen setting was
    re-evaluated independently of the search and meets the target (always True for a returned
    result: a failed re-check raises instead).
    """

    parameter: str
    value: float
    target_epsilon: float
    target_delta: float
    result: EpsilonResult
    checked: bool

    @property
    def epsilon(self) -> float:
        return float(self.result.epsilon)

    def to_dict(self) -> dict:
        return {"parameter": self.parameter, "value": self.value, "target_epsilon": self.target_epsilon,
                "target_delta": self.target_delta, "checked": self.checked, "result": self.result.item()}


def _targets(target_epsilon, delta):
    return v.positive("target_epsilon", target_epsilon), v.probability("delta", delta)


def _opts(kernel, lengthscale, domain, M_Y, sensitivity, rkhs_norm, constants, conversion) -> dict:
    return dict(kernel=kernel, lengthscale=lengthscale, domain=domain, M_Y=M_Y, sensitivity=sensitivity,
                rkhs_norm=rkhs_norm, constants=constants, conversion=conversion)


def _finish(parameter: str, value, target: float, delta: float, setting: dict, opts: dict) -> CalibrationResult:
    """Re-check the chosen value with a fresh accountant call; never return an infeasible value."""
    res = epsilon_posterior_sampling(setting["n"], setting["r"], setting["sigma"], delta, eta=setting["eta"],
                                     L=setting["L"], **opts)
    eps = float(res.epsilon)
    if not eps <= target:
        raise NumericalError(f"calibration of {parameter}: the chosen value {value} gives epsilon {eps} > "
                             f"target {target} on re-check")
    return CalibrationResult(parameter, value, target, delta, res, True)


def _first_feasible(values: np.ndarray, eps: np.ndarray, target: float, f, log: bool) -> float:
    """Smallest feasible value: the first feasible grid point, then refinement of the bracket
    [last infeasible, first feasible] keeping its feasible end. ``f(values) -> eps``."""
    feas = eps <= target
    i = int(np.argmax(feas))
    if i == 0:
        return float(values[0])
    lo, hi = float(values[i - 1]), float(values[i])  # eps(lo) > target >= eps(hi)
    for _ in range(ROUNDS):
        inner = (np.geomspace(lo, hi, REFINE) if log and lo > 0 else np.linspace(lo, hi, REFINE))[1:-1]
        e = f(inner)
        ok = e <= target
        if np.any(ok):
            j = int(np.argmax(ok))
            hi = float(inner[j])
            if j > 0:
                lo = float(inner[j - 1])
        else:
            lo = float(inner[-1])
    return hi


def calibrate_r(target_epsilon, delta, *, n, sigma, eta=0.0, L=1, kernel="exponential", lengthscale=None,
                domain=None, M_Y=1.0, sensitivity="generic", rkhs_norm=None, constants="proven",
                conversion="improved", r_bounds=(1e-3, 1e4)) -> CalibrationResult:
    """Smallest effective ridge r in ``r_bounds`` with certified epsilon <= target_epsilon at delta
    (sigma, eta and L fixed; sigma = inf allowed). Raises InfeasibleTargetError when even the
    largest r in range misses the target."""
    target, delta = _targets(target_epsilon, delta)
    n = v.integer("n", n, minimum=1)
    sigma = v.positive("sigma", sigma, allow_inf=True)
    eta = v.nonnegative("eta", eta)
    L = v.integer("L", L, minimum=1)
    try:
        r_lo, r_hi = (float(b) for b in r_bounds)
    except (TypeError, ValueError):
        raise InvalidParameterError("r_bounds", "a pair (r_min, r_max)", r_bounds) from None
    if not (0 < r_lo < r_hi < np.inf):
        raise InvalidParameterError("r_bounds", "0 < r_min < r_max < inf", r_bounds)
    opts = _opts(kernel, lengthscale, domain, M_Y, sensitivity, rkhs_norm, constants, conversion)

    def f(r):
        return np.asarray(epsilon_posterior_sampling(n, r, sigma, delta, eta=eta, L=L, **opts).epsilon)

    grid = np.geomspace(r_lo, r_hi, GRID)
    eps = f(grid)
    if not np.any(eps <= target):
        best = int(np.argmin(eps))
        msg = (f"no r in [{r_lo:g}, {r_hi:g}] reaches epsilon <= {target:g} at delta = {delta:g} with "
               f"n = {n}, sigma = {sigma:g}, eta = {eta:g}, L = {L}: the smallest epsilon found is "
               f"{eps[best]:.4g} (at r = {grid[best]:.4g})")
        if np.isfinite(sigma):
            cov_only = float(epsilon_posterior_sampling(n, r_hi, np.inf, delta, eta=eta, L=L, **opts).epsilon)
            if cov_only > target:
                msg += (f"; the covariance term alone (sigma = inf) already gives epsilon {cov_only:.4g} at "
                        f"r = {r_hi:g}, so no sigma helps: allow larger r, fewer draws L or a looser target")
            else:
                msg += "; a larger sigma, a larger r_max or GP noise eta > 0 may reach it"
        else:
            msg += " (sigma = inf: this is the covariance term alone; allow larger r or fewer draws L)"
        raise InfeasibleTargetError(msg)
    r = _first_feasible(grid, eps, target, f, log=True)
    return _finish("r", r, target, delta, dict(n=n, r=r, sigma=sigma, eta=eta, L=L), opts)


def calibrate_eta(target_epsilon, delta, *, n, r, sigma, L=1, kernel="exponential", lengthscale=None,
                  domain=None, M_Y=1.0, sensitivity="generic", rkhs_norm=None, constants="proven",
                  conversion="improved", eta_max=1e4) -> CalibrationResult:
    """Smallest GP-noise level eta in [0, eta_max] (release f_D + g, g ~ GP(0, eta^2 k), Prop. 2)
    with certified epsilon <= target_epsilon at delta; 0 when no noise is needed."""
    target, delta = _targets(target_epsilon, delta)
    n = v.integer("n", n, minimum=1)
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma, allow_inf=True)
    L = v.integer("L", L, minimum=1)
    eta_max = v.positive("eta_max", eta_max)
    opts = _opts(kernel, lengthscale, domain, M_Y, sensitivity, rkhs_norm, constants, conversion)

    def f(eta):
        return np.asarray(epsilon_posterior_sampling(n, r, sigma, delta, eta=eta, L=L, **opts).epsilon)

    grid = np.concatenate([[0.0], np.geomspace(eta_max * 1e-9, eta_max, GRID - 1)])
    eps = f(grid)
    if not np.any(eps <= target):
        msg = (f"no eta in [0, {eta_max:g}] reaches epsilon <= {target:g} at delta = {delta:g} with n = {n}, "
               f"r = {r:g}, sigma = {sigma:g}, L = {L}: epsilon is {eps[0]:.4g} at eta = 0 and "
               f"{eps[-1]:.4g} at eta = {eta_max:g}")
        if not np.isfinite(sigma):
            msg += " (sigma = inf: eta has no effect on the covariance-only bound; increase r instead)"
        else:
            msg += "; allow a larger eta_max or increase r"
        raise InfeasibleTargetError(msg)
    eta = _first_feasible(grid, eps, target, f, log=True)
    return _finish("eta", eta, target, delta, dict(n=n, r=r, sigma=sigma, eta=eta, L=L), opts)


def calibrate_L(target_epsilon, delta, *, n, r, sigma, eta=0.0, kernel="exponential", lengthscale=None,
                domain=None, M_Y=1.0, sensitivity="generic", rkhs_norm=None, constants="proven",
                conversion="improved", L_max=10**6) -> CalibrationResult:
    """Largest number L <= L_max of independently released paths with certified epsilon <=
    target_epsilon at delta (the result is capped at L_max). Raises when even L = 1 misses it."""
    target, delta = _targets(target_epsilon, delta)
    n = v.integer("n", n, minimum=1)
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma, allow_inf=True)
    eta = v.nonnegative("eta", eta)
    L_max = v.integer("L_max", L_max, minimum=1)
    opts = _opts(kernel, lengthscale, domain, M_Y, sensitivity, rkhs_norm, constants, conversion)

    def f(L):
        return np.asarray(epsilon_posterior_sampling(n, r, sigma, delta, eta=eta, L=L, **opts).epsilon)

    grid = np.unique(np.round(np.geomspace(1, L_max, 64)).astype(np.int64))
    eps = f(grid)
    if not eps[0] <= target:
        raise InfeasibleTargetError(
            f"even one released path (L = 1) gives epsilon {eps[0]:.4g} > {target:g} at delta = {delta:g} "
            f"(n = {n}, r = {r:g}, sigma = {sigma:g}, eta = {eta:g}); increase r, sigma or eta, or loosen the target")
    bad = np.flatnonzero(~(eps <= target))
    if bad.size == 0:
        L = int(grid[-1])
    else:
        lo, hi = int(grid[bad[0] - 1]), int(grid[bad[0]])  # eps(lo) <= target < eps(hi)
        while hi - lo > 1:
            span = np.unique(np.linspace(lo, hi, min(hi - lo + 1, REFINE)).round().astype(np.int64))[1:-1]
            e = f(span)
            ok = e <= target
            j = int(np.argmin(ok)) if not np.all(ok) else span.size  # first infeasible
            lo = int(span[j - 1]) if j > 0 else lo
            hi = int(span[j]) if j < span.size else hi
        L = lo
    return _finish("L", L, target, delta, dict(n=n, r=r, sigma=sigma, eta=eta, L=L), opts)
