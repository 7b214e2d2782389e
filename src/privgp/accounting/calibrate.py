"""The one calibrator: the smallest (or largest) value of one parameter whose event meets a target.

:func:`calibrate` evaluates the accountant on a grid of the parameter (vectorised when a
``make_batch`` is given), brackets the boundary of the feasible set {epsilon <= target} and refines
it, always keeping the feasible end of the bracket. The value returned is then re-checked with a
fresh event from ``make_event`` and a fresh accountant call; a value that fails the re-check is
never returned. A target that no admissible value reaches raises
:class:`~privgp.errors.InfeasibleTargetError` saying why.

:func:`feasible_side` is the last step of every closed-form calibration (the exact Gaussian / GDP
noise of :mod:`privgp.accounting.gaussian`, a functional-mechanism multiplier): the value is moved
towards more privacy in relative steps of 2^-40 until the certificate's epsilon, recomputed by the
accountant, is <= the target (the bisections round the last digits, and the accountant rounds
epsilon up). :func:`calibrate_gaussian` is the Gaussian mechanism's calibrator built on it.

``direction="smallest"``: the parameter makes the release more private as it grows (a noise level:
r, eta, a noise std); the result is the smallest feasible value. ``"largest"``: it makes the release
less private as it grows (a number of releases L, a GDP mu); the result is the largest feasible
value. "Smallest"/"largest" is exact up to the refinement tolerance when epsilon is monotone in the
parameter (the tests check these laws for the seed-000 event); otherwise it is the first feasible
grid value from the private end, still feasible.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from .. import portable
from .. import validation as v
from ..errors import InfeasibleTargetError, InvalidParameterError, NumericalError
from ..formatting import format_upper
from . import accountant
from .accountant import Guarantee
from .certificate import PrivacyCertificate, certify
from .events import EventBatch, GaussianEvent, PrivacyEvent
from .gaussian import gaussian_noise_std

GRID = 129          # first pass over the whole range
REFINE = 33         # points per refinement round inside the bracket
ROUNDS = 3          # refinement rounds: the bracket shrinks by (REFINE - 1)^ROUNDS
DIRECTIONS = ("smallest", "largest")
SCALES = ("log", "linear")
#: relative step of :func:`feasible_side`, and how many steps it takes at most (2^-40 x 200 ~ 2e-10)
FEASIBLE_STEP = 2.0 ** -40
FEASIBLE_STEPS = 200


@dataclass(frozen=True)
class CalibrationResult:
    """The calibrated value of one parameter, the event at it and its re-checked guarantee."""

    parameter: str
    value: float
    target_epsilon: float
    target_delta: float
    event: PrivacyEvent
    guarantee: Guarantee
    checked: bool

    @property
    def epsilon(self) -> float:
        return float(self.guarantee.epsilon)

    def to_dict(self) -> dict:
        return {"parameter": self.parameter, "value": self.value, "target_epsilon": self.target_epsilon,
                "target_delta": self.target_delta, "epsilon_at_value": self.epsilon, "checked": self.checked,
                "event": self.event.to_dict(), "guarantee": self.guarantee.to_dict()}


#: the calibrator's geometric grids: privgp.portable's (the same on every CPU), or numpy's inside
#: :func:`numpy_grids` (privgp before 2026-11-27: the last bits depend on the CPU)
_NUMPY_GRIDS = False


@contextmanager
def numpy_grids() -> Iterator[None]:
    """Calibrate with ``numpy.geomspace``'s grids, as privgp before 2026-11-27 did, so that ``privgp verify``
    rebuilds a value such a privgp calibrated on a CPU where numpy's log10 and power are its own (AVX-512)."""
    global _NUMPY_GRIDS
    before, _NUMPY_GRIDS = _NUMPY_GRIDS, True
    try:
        yield
    finally:
        _NUMPY_GRIDS = before


@dataclass
class GridWatch:
    """Set by the calibrator while watched (:func:`grids_watched`): ``differed`` once a grid it drew differs in
    any bit from ``numpy.geomspace``'s on this CPU."""
    differed: bool = False


#: the open watches of :func:`grids_watched`
_WATCHES: list[GridWatch] = []


@contextmanager
def grids_watched() -> Iterator[GridWatch]:
    """Watch the calibrator's geometric grids. Where none differed from numpy's, every calibration watched is the
    one :func:`numpy_grids` would have made on this CPU, to the bit: ``privgp verify`` then need not rebuild a
    refused certificate a second time with numpy's grids (issue 30: that doubled the cost of every forgery)."""
    watch = GridWatch()
    _WATCHES.append(watch)
    try:
        yield watch
    finally:
        _WATCHES.remove(watch)


def _geomspace(lo: float, hi: float, num: int) -> np.ndarray:
    if _NUMPY_GRIDS:
        return np.geomspace(lo, hi, num)
    grid = portable.geomspace(lo, hi, num)
    if _WATCHES and grid.tobytes() != np.geomspace(lo, hi, num).tobytes():
        for watch in _WATCHES:
            watch.differed = True
    return grid


def _grid(lo: float, hi: float, scale: str, integer: bool, points: int) -> np.ndarray:
    if integer:
        g = np.unique(np.round(_geomspace(max(lo, 1), hi, points) if scale == "log"
                               else np.linspace(lo, hi, points)).astype(np.int64))
        return g.astype(float)
    if scale == "log":
        if lo == 0.0:
            return np.concatenate([[0.0], _geomspace(hi * 1e-9, hi, points - 1)])
        return _geomspace(lo, hi, points)
    return np.linspace(lo, hi, points)


def _inner(lo: float, hi: float, scale: str, integer: bool) -> np.ndarray:
    if integer:
        return np.unique(np.linspace(lo, hi, int(min(hi - lo + 1, REFINE))).round())[1:-1]
    pts = _geomspace(lo, hi, REFINE) if (scale == "log" and lo > 0) else np.linspace(lo, hi, REFINE)
    return pts[1:-1]


def calibrate(make_event: Callable[[float], PrivacyEvent], parameter: str, bounds: tuple[float, float],
              target_epsilon: float, target_delta: float, *,
              direction: str = "smallest", integer: bool = False, scale: str = "log",
              make_batch: Callable[[np.ndarray], EventBatch] | None = None, conversion: str = "improved",
              infeasible_hint: Callable[[np.ndarray, np.ndarray], str] | None = None) -> CalibrationResult:
    """Calibrate ``parameter`` in ``bounds = (lo, hi)`` so that the event meets (target_epsilon, target_delta).

    ``make_event(value)`` builds the event at one value; ``make_batch(values)`` (optional) builds an
    :class:`EventBatch` for an array of values (one vectorised accountant call per grid). ``lo`` may
    be 0 on the log scale (0 is then the first grid point). ``infeasible_hint(grid, eps)`` may add
    a sentence to the error raised when no value meets the target.
    """
    target = v.positive("target_epsilon", target_epsilon)
    delta = v.probability("target_delta", target_delta)
    if direction not in DIRECTIONS:
        raise InvalidParameterError("direction", f"one of {DIRECTIONS}", direction)
    if scale not in SCALES:
        raise InvalidParameterError("scale", f"one of {SCALES}", scale)
    try:
        lo, hi = (v.real(f"{parameter} bounds", b) for b in bounds)   # 10**400 was a raw OverflowError
    except (TypeError, ValueError):   # InvalidParameterError is a ValueError: one message for every bad pair
        raise InvalidParameterError(f"{parameter} bounds", "a pair (lower, upper) of real numbers", bounds) from None
    if not (0 <= lo < hi < np.inf) or (scale == "log" and not integer and lo < 0):
        raise InvalidParameterError(f"{parameter} bounds", "0 <= lower < upper < inf", bounds)

    def eps_of(values: np.ndarray) -> np.ndarray:
        if make_batch is not None:
            return np.asarray(accountant.epsilon(make_batch(values), delta, conversion=conversion).epsilon,
                              dtype=float).reshape(values.shape)
        return np.array([accountant.epsilon(make_event(int(x) if integer else float(x)), delta,
                                            conversion=conversion).epsilon for x in values], dtype=float)

    grid = _grid(lo, hi, scale, integer, GRID)
    eps = eps_of(grid)
    feas = eps <= target
    hint = ""
    if infeasible_hint is not None and not feas.any():
        hint = infeasible_hint(grid, eps)
    if direction == "smallest":
        if not feas.any():
            best = int(np.argmin(eps))
            raise InfeasibleTargetError(
                f"no {parameter} in [{lo:g}, {hi:g}] reaches epsilon <= {target:g} at delta = {delta:g}: the "
                f"smallest epsilon found is {format_upper(eps[best], 4, nan='nan')} (at {parameter} = {grid[best]:.4g})" + hint)
        i = int(np.argmax(feas))
        if i == 0:
            value = grid[0]
        else:
            bad, good = grid[i - 1], grid[i]      # eps(bad) > target >= eps(good), bad < good
            value = _refine(eps_of, bad, good, target, scale, integer)
    else:
        if not feas[0]:
            raise InfeasibleTargetError(
                f"even the smallest {parameter} = {grid[0]:g} gives epsilon {format_upper(eps[0], 4, nan='nan')} > {target:g} at "
                f"delta = {delta:g}" + hint)
        if feas.all():
            value = grid[-1]
        else:
            j = int(np.argmin(feas))
            good, bad = grid[j - 1], grid[j]     # eps(good) <= target < eps(bad), good < bad
            value = _refine(eps_of, bad, good, target, scale, integer)
    value = int(round(value)) if integer else float(value)
    event = make_event(value)
    g = accountant.epsilon(event, delta, conversion=conversion)
    if not float(g.epsilon) <= target:
        raise NumericalError(f"calibration of {parameter}: the chosen value {value} gives epsilon {float(g.epsilon)} "
                             f"> target {target} on re-check")
    return CalibrationResult(parameter, value, target, delta, event, g, True)


def _refine(eps_of: Callable[[np.ndarray], np.ndarray], bad: float, good: float, target: float, scale: str, integer: bool) -> float:
    """Shrink the bracket between an infeasible and a feasible value, keeping the feasible end."""
    for _ in range(ROUNDS if not integer else 64):
        lo, hi = min(bad, good), max(bad, good)
        if integer and hi - lo <= 1:
            break
        inner = _inner(lo, hi, scale, integer)
        if inner.size == 0:
            break
        ok = eps_of(inner) <= target
        if good > bad:   # feasible set above: find the first feasible inner point
            if ok.any():
                j = int(np.argmax(ok))
                good = float(inner[j])
                bad = float(inner[j - 1]) if j > 0 else bad
            else:
                bad = float(inner[-1])
        else:            # feasible set below: find the last feasible inner point
            if not ok.all():
                j = int(np.argmin(ok))
                bad = float(inner[j])
                good = float(inner[j - 1]) if j > 0 else good
            else:
                good = float(inner[-1])
    return good


def feasible_side(make_event: Callable[[float], PrivacyEvent], value: float, target_epsilon: float,
                  delta: float, *, parameter: str, direction: str = "smallest", conversion: str = "improved",
                  **certify_kw: Any) -> tuple[float, PrivacyEvent, PrivacyCertificate]:
    """Move a calibrated value just far enough towards more privacy that the certificate meets the target:
    (value', event, certificate) with ``certify(make_event(value'), delta).epsilon <= target_epsilon``.

    ``value`` is a calibrated value that may sit a few ulp on the wrong side of the boundary (a closed
    form or a bisection; the accountant rounds epsilon up). It is moved towards more privacy -- raised
    by a factor 1 + 2^-40 (``direction="smallest"``: a noise level) or lowered by 1 - 2^-40
    (``"largest"``: a GDP mu) -- until the certificate, recomputed by the accountant, meets the target;
    the first value that does is returned, never one that does not. ``certify_kw`` (mechanism, public,
    extra_assumptions) go to :func:`~privgp.accounting.certify` for the returned certificate."""
    target = v.positive("target_epsilon", target_epsilon)
    delta = v.probability("delta", delta)
    if direction not in DIRECTIONS:
        raise InvalidParameterError("direction", f"one of {DIRECTIONS}", direction)
    factor = 1.0 + FEASIBLE_STEP if direction == "smallest" else 1.0 - FEASIBLE_STEP
    value = float(value)
    for _ in range(FEASIBLE_STEPS):
        event = make_event(value)
        cert = certify(event, delta, conversion=conversion, **certify_kw)
        if float(cert.epsilon) <= target:
            return value, event, cert
        value *= factor
    raise NumericalError(f"calibration of {parameter}: no value within {FEASIBLE_STEPS} steps of 2^-40 of the "
                         f"calibrated one certifies epsilon <= {target!r} at delta = {delta:g}")


def calibrate_gaussian(sensitivity: float, epsilon: float, delta: float,
                       **certify_kw: Any) -> tuple[GaussianEvent, PrivacyCertificate]:
    """The Gaussian event with L2 ``sensitivity`` and the smallest noise std whose certified epsilon
    (exact GDP profile; Balle & Wang 2018, Thm 8) is <= ``epsilon`` at ``delta``: the analytic
    calibration :func:`~privgp.accounting.gaussian.gaussian_noise_std`, then :func:`feasible_side`.
    ``certify_kw`` (mechanism, public, extra_assumptions) go to the returned certificate."""
    sens = v.positive("sensitivity", sensitivity)
    epsilon = v.positive("epsilon", epsilon)
    delta = v.probability("delta", delta)
    s0 = float(gaussian_noise_std(sens, epsilon, delta))
    _, event, cert = feasible_side(lambda s: GaussianEvent(sensitivity=sens, noise_std=s), s0, epsilon, delta,
                                   parameter="noise_std", **certify_kw)
    return cast(GaussianEvent, event), cert


__all__ = ["FEASIBLE_STEP", "CalibrationResult", "calibrate", "calibrate_gaussian", "feasible_side"]
