"""Rényi-DP bounds for one released posterior sample path (seed 000, Thm 3.1, Prop. 2, Lemma A.3).

Pure maths on numpy arrays (everything broadcasts). Out-of-range orders give +inf, never 0 or NaN.
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidParameterError, NumericalError
from ..validation import any_true, where_any


def _nan_check(name, arr):
    if any_true(np.isnan(arr)):
        raise NumericalError(f"{name}: NaN produced from finite inputs")
    return arr


_TINY = np.finfo(float).tiny   # the smallest normal float

#: below this, :func:`_small_log_gap` sums a series; above, y - log1p(y) and -log1p(-y) - y lose at most 4 bits
_SERIES_BELOW = 0.125
#: terms of the atanh series in w = u^2 <= 1/225 (y < 1/8): the first left out is below 2^-60 of the sum
_SERIES_TERMS = 7


def _small_log_gap(y, sign):
    """sign = +1: h(y) = -log(1 - y) - y (0 <= y < 1); sign = -1: g(y) = y - log(1 + y) (y >= 0), elementwise
    on a 1-D array. Both are >= 0 and computed without cancellation. Below y = 1/8 from
    log(1 + sign' y) = 2 atanh(u), u = y / (2 + sign' y) (sign' = -sign):

        h(y) = y^2 / (2 - y) + 2 v^3 (1/3 + v^2/5 + v^4/7 + ...),  v = y / (2 - y)
        g(y) = y^2 / (2 + y) - 2 u^3 (1/3 + u^2/5 + u^4/7 + ...),  u = y / (2 + y)

    (g's second term is below y/6 of its first: no bits lost); above, the logarithm (at most 4 bits lost)."""
    denom = 2.0 - y if sign > 0 else 2.0 + y         # 2 - sign y, made once (the same bits: a - (-b) is a + b)
    u = y / denom
    w = u * u
    acc = w * (1.0 / (2 * _SERIES_TERMS + 1))        # the series' last coefficient times w (Horner, from the top)
    acc += 1.0 / (2 * _SERIES_TERMS - 1)
    for j in range(_SERIES_TERMS - 2, 0, -1):
        acc *= w
        acc += 1.0 / (2 * j + 1)
    out = y * y / denom + sign * 2.0 * (u * w) * acc
    large = np.flatnonzero(~(y < _SERIES_BELOW))       # indices, not a mask: far cheaper where the mask is irregular
    if large.size:
        z = y[large]
        out[large] = (-np.log1p(-np.minimum(z, 1.0)) - z) if sign > 0 else (z - np.log1p(z))
    return out


def _values_at(x, shape, at):
    """``np.broadcast_to(x, shape).reshape(-1)[at]`` (``at``: flat indices into ``shape``), without copying ``x`` where
    it already has that shape."""
    x = np.asarray(x)
    if x.shape == shape:
        return x.reshape(-1)[at]
    return np.broadcast_to(x, shape)[np.unravel_index(at, shape)]


def _psi_raw(am1, tau):
    """psi_alpha(tau) with am1 = alpha - 1 > 0 and tau >= 0 already checked; call under
    np.errstate(all="ignore"). :func:`_psi_prepared` with the per-tau pieces computed here.

    Lemma A.3's closed form subtracts logarithms; where they cancel more than 8 bits (small tau or small
    alpha - 1: red team 21, F2, 3e-4 relative low at tau = 1.1e-12, alpha - 1 = 0.0143) each branch is
    evaluated as a sum of two non-negative terms instead, with s = tau / (1 + tau), a = alpha - 1 and
    g, h of :func:`_small_log_gap`:

        2 psi = max{ h(s) + g(a s) / a,  g(tau) + h(a tau) / a }

    (log(1 + tau) = -log(1 - s) and (1 + alpha tau) / (1 + tau) = 1 + a s). Elsewhere the direct form is kept
    (the same numbers as before). tests/accounting/test_psi_rounding.py checks both against mpmath."""
    return _psi_prepared(am1, *_psi_parts(tau))


def _psi_parts(tau):
    """The pieces of psi_alpha(tau) that depend on tau alone: tau, 1 + tau, 1/2 log(1 + tau), its negative and the
    mask tau = 0 (None where no tau is 0) (for :func:`_psi_prepared`)."""
    half_log = 0.5 * np.log1p(tau)
    return tau, 1.0 + tau, half_log, -half_log, _mask_or_none(tau == 0.0)


def _mask_or_none(mask):
    """``mask``, or None where it is false everywhere (a np.where with it would change nothing)."""
    return mask if any_true(mask) else None


def _psi_prepared(am1, tau, one_tau, half_log, minus_half_log, tau_zero):
    """:func:`_psi_raw` given :func:`_psi_parts` (computed once per setting by :func:`rdp_curve`, not at every order a
    search tries; the same numbers elementwise, so the same bits)."""
    x = tau * am1                                                  # inf where tau = inf (am1 > 0)
    two_am1 = 2.0 * am1
    log_first = np.log1p(x / one_tau) / two_am1                    # >= 0
    log_second = np.log1p(-np.minimum(x, 1.0)) / two_am1           # <= 0 (-inf where x >= 1)
    out = np.maximum(half_log - log_first, minus_half_log - log_second)
    # more than 8 bits cancel: the result is below 2^-8 of the terms' sizes (false at tau = 0, x >= 1, tau = inf)
    cancels = 256.0 * out < half_log + log_first - log_second
    if any_true(cancels):
        if not (isinstance(out, np.ndarray) and out.flags.c_contiguous and out.flags.writeable):
            out = np.array(out, dtype=float, order="C")   # a writable C-ordered array of the broadcast shape
        # indices rather than the mask: indexing by an irregular mask costs about 6 ns per value, by indices
        # about 1 ns per index (issue 30; a quarter of the 10^5 settings' orders cancel)
        at = np.flatnonzero(cancels)
        t = _values_at(tau, out.shape, at)
        a = _values_at(am1, out.shape, at)
        s = t / (1.0 + t)
        out.reshape(-1)[at] = 0.5 * np.maximum(_small_log_gap(s, 1) + _small_log_gap(a * s, -1) / a,
                                               _small_log_gap(t, -1) + _small_log_gap(a * t, 1) / a)
    out = where_any(x >= 1.0, np.inf, out)                         # out of range, tau = inf included
    if tau_zero is not None:
        out = np.where(tau_zero, 0.0, out)
    # psi_alpha >= 0 (lambda = 1 lies in the interval); clears round-off below 0 for tiny tau.
    return np.maximum(out, 0.0)


def psi_alpha(alpha: ArrayLike, tau: ArrayLike) -> np.ndarray:
    """psi_alpha(tau) of Lemma A.3 (closed form of the max over lambda in [1/(1+tau), 1+tau]):

        max{ 1/2 log(1+tau) - log((1+alpha tau)/(1+tau)) / (2(alpha-1)),
            -1/2 log(1+tau) - log(1 - tau(alpha-1))     / (2(alpha-1)) }

    Defined for tau >= 0 and 1 < alpha < 1 + 1/tau; +inf where tau (alpha - 1) >= 1.
    """
    alpha = np.asarray(alpha, dtype=float)
    tau = np.asarray(tau, dtype=float)
    am1 = alpha - 1.0
    if any_true(~(am1 > 0.0)):
        raise InvalidParameterError("alpha", "> 1 (Rényi order)", alpha if alpha.ndim == 0 else alpha[~(am1 > 0)])
    if any_true(~(tau >= 0.0)):
        raise InvalidParameterError("tau", ">= 0", tau)
    with np.errstate(all="ignore"):
        out = _psi_raw(am1, tau)
    return _nan_check("psi_alpha", out)


def tau_tilde(V: ArrayLike, r: ArrayLike, sigma: ArrayLike, eta: ArrayLike = 0.0) -> np.ndarray:
    """tau~_n(r, eta) = sigma^2 V / (sigma^2 r^2 + eta^2 (V + r^2))  (Prop. 2).

    eta = 0 gives V / r^2 (Thm 3.1); sigma = inf gives V / r^2 (covariance-only limit, sec. 4).
    """
    V, r, sigma, eta = (np.asarray(a, dtype=float) for a in (V, r, sigma, eta))
    r2 = r * r
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(np.isinf(sigma), 0.0, (eta / sigma) ** 2)  # eta^2 / sigma^2
        out = V / (r2 + ratio * (V + r2))
    return _nan_check("tau_tilde", out)


def alpha_max_of_tau(tau: ArrayLike) -> np.ndarray:
    """Upper end 1 + 1/tau~ of the admissible orders of the single-draw bound (Thm 3.1, Prop. 2; the
    range of Lemma A.3's psi_alpha); +inf when tau~ = 0. The one home of this formula."""
    tau = np.asarray(tau, dtype=float)
    # np.errstate only where a tau is 0 (entering one costs a few microseconds; issue 30)
    with np.errstate(divide="ignore") if any_true(tau == 0.0) else nullcontext():
        return 1.0 + 1.0 / tau


def alpha_max(V: ArrayLike, r: ArrayLike, sigma: ArrayLike, eta: ArrayLike = 0.0) -> np.ndarray:
    """Upper end 1 + 1/tau~ of the admissible orders (Thm 3.1: 1 + r^2/V_n); +inf when tau~ = 0."""
    return alpha_max_of_tau(tau_tilde(V, r, sigma, eta))


def _arrays(*args: ArrayLike) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(a, dtype=float) for a in args)


def bound_coefficients(V: ArrayLike, Delta: ArrayLike, r: ArrayLike, sigma: ArrayLike,
                       eta: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-setting constants of the bound, so that it can be evaluated at many orders cheaply:
    (tau~, V, r^2, eta^2/sigma^2, m) with m = 1/2 (V + r^2) Delta^2 / sigma^2 (0 when sigma = inf,
    the covariance-only limit, or Delta = 0). See :func:`rdp_from_coefficients`."""
    V, Delta, r, sigma, eta = _arrays(V, Delta, r, sigma, eta)
    # one np.errstate for all (entering one costs a few microseconds, issue 30): overflow and underflow are checked
    # or handled below, and divide / invalid cannot arise from the validated inputs but through inf / 0 = inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        r2 = r * r
        if any_true(np.isinf(r2) & np.isfinite(r)):
            raise InvalidParameterError("r", "with r^2 in the float range (r < 1.3e154)", r)
        # Divide through by sigma^2 so that sigma = inf is the limit, not inf/inf.
        inv_s2 = np.where(np.isinf(sigma), 0.0, 1.0 / (sigma * sigma))
        if any_true(np.isinf(inv_s2)):
            raise InvalidParameterError("sigma", "at least 1e-154 (1/sigma^2 must be in the float range)", sigma)
        eta2_s2 = np.where(np.isinf(sigma), 0.0, (eta * eta) * inv_s2)  # eta^2 / sigma^2
        tau = V / (r2 + eta2_s2 * (V + r2))                              # tau~ of Prop. 2 (= tau_tilde)
        zero = (Delta == 0.0) | (inv_s2 == 0.0)
        m = np.where(zero, 0.0, 0.5 * (V + r2) * (Delta * Delta) * inv_s2)
        # Delta^2 underflows (to 0: the mean term vanished) long before m does: there, the same as a square,
        # rounded up to the smallest normal float when m itself is below the float range
        root = np.sqrt(V + r2) * Delta * np.sqrt(inv_s2)
        m = np.where(zero | (m >= _TINY), m, np.maximum(0.5 * root * root, _TINY))
    if any_true(np.isnan(tau)) or any_true(np.isnan(m)):
        raise NumericalError("bound coefficients: NaN produced from finite inputs")
    return tau, V, r2, eta2_s2, m


def _mean_raw(alpha, V, r2, eta2_s2, m):
    """alpha m / ((r^2 - (alpha-1) V) + eta^2/sigma^2 (V + r^2)), i.e. the mean term of eq. (4) /
    Prop. 2 divided through by sigma^2; +inf when the denominator is <= 0. Under errstate."""
    return _mean_prepared(alpha, alpha - 1.0, V, r2, eta2_s2 * (V + r2), m, _mask_or_none(m == 0.0))


def _mean_prepared(alpha, am1, V, r2, noise_part, m, m_zero):
    """:func:`_mean_raw` given am1 = alpha - 1, the per-setting pieces eta^2/sigma^2 (V + r^2) and the mask m = 0
    (None where no m is 0)."""
    denom = (r2 - am1 * V) + noise_part
    out = alpha * m / denom
    if m_zero is not None:
        out = np.where(m_zero, 0.0, out)
    return where_any(denom <= 0.0, np.inf, out)


def rdp_raw(alpha: np.ndarray, tau: np.ndarray, V: np.ndarray, r2: np.ndarray, eta2_s2: np.ndarray,
            m: np.ndarray) -> np.ndarray:
    """The single-draw bound from :func:`bound_coefficients`; alpha > 1 is NOT checked here (the
    caller guarantees it) and the caller sets np.errstate. NaN is left for the caller to detect."""
    return 2.0 * _psi_raw(alpha - 1.0, tau) + _mean_raw(alpha, V, r2, eta2_s2, m)


def rdp_curve(tau: np.ndarray, V: np.ndarray, r2: np.ndarray, eta2_s2: np.ndarray,
              m: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`rdp_raw` as a function of alpha alone, for a search that evaluates many orders of the same
    settings: the pieces that do not depend on alpha (1 + tau, log(1 + tau), eta^2/sigma^2 (V + r^2) and the masks)
    are computed once here. Each piece is the same elementwise operation on the same numbers as in
    :func:`rdp_raw`, so every value is the same to the bit (tests/accounting/test_rdp_curve.py). Call the curve
    under np.errstate(all="ignore")."""
    with np.errstate(all="ignore"):
        psi_parts = _psi_parts(tau)
        mean_parts = (V, r2, eta2_s2 * (V + r2), m, _mask_or_none(m == 0.0))

    def curve(alpha: np.ndarray) -> np.ndarray:
        am1 = alpha - 1.0
        return 2.0 * _psi_prepared(am1, *psi_parts) + _mean_prepared(alpha, am1, *mean_parts)
    return curve


def rdp_from_coefficients(alpha: np.ndarray, tau: np.ndarray, V: np.ndarray, r2: np.ndarray,
                          eta2_s2: np.ndarray, m: np.ndarray) -> np.ndarray:
    """:func:`rdp_raw` under np.errstate(all="ignore")."""
    with np.errstate(all="ignore"):
        return rdp_raw(alpha, tau, V, r2, eta2_s2, m)


def _check_alpha(alpha):
    if any_true(~(alpha > 1.0)):
        raise InvalidParameterError("alpha", "> 1 (Rényi order)", alpha)


def rdp_posterior_sample(alpha: ArrayLike, V: ArrayLike, Delta: ArrayLike, r: ArrayLike, sigma: ArrayLike,
                         eta: ArrayLike = 0.0) -> np.ndarray:
    """Single-draw RDP bound of seed 000, Prop. 2 (Thm 3.1 when eta = 0), eq. (4):

        eps_alpha <= 2 psi_alpha(tau~) + alpha/2 (V + r^2) Delta^2
                                           / (sigma^2 (r^2 - (alpha-1) V) + eta^2 (V + r^2))

    with tau~ = sigma^2 V / (sigma^2 r^2 + eta^2 (V + r^2)) (= V / r^2 when eta = 0).
    V >= V_n(r) and Delta >= Delta_n(r) are upper bounds (App. B); the bound is non-decreasing in
    both, so upper bounds give a valid bound. Valid for 1 < alpha < 1 + 1/tau~, +inf outside.
    sigma = inf gives the covariance-only bound 2 psi_alpha(V / r^2) (sec. 4). alpha <= 1 raises.
    """
    alpha = np.asarray(alpha, dtype=float)
    _check_alpha(alpha)
    out = rdp_from_coefficients(alpha, *bound_coefficients(V, Delta, r, sigma, eta))
    return _nan_check("rdp_posterior_sample", out)


def rdp_covariance_term(alpha: ArrayLike, V: ArrayLike, r: ArrayLike, sigma: ArrayLike,
                        eta: ArrayLike = 0.0) -> np.ndarray:
    """The covariance (determinant) part 2 psi_alpha(tau~) of the bound alone (Prop. 2 proof)."""
    alpha, V, r, sigma, eta = _arrays(alpha, V, r, sigma, eta)
    return 2.0 * psi_alpha(alpha, tau_tilde(V, r, sigma, eta))


def rdp_mean_term(alpha: ArrayLike, V: ArrayLike, Delta: ArrayLike, r: ArrayLike, sigma: ArrayLike,
                  eta: ArrayLike = 0.0) -> np.ndarray:
    """The posterior-mean part of the bound alone (bounds alpha/2 delta^T K~_alpha^+ delta of eq. 12,
    Prop. 2 proof); +inf outside the admissible range, alpha <= 1 raises."""
    alpha = np.asarray(alpha, dtype=float)
    _check_alpha(alpha)
    _, V, r2, eta2_s2, m = bound_coefficients(V, Delta, r, sigma, eta)
    with np.errstate(all="ignore"):
        out = _mean_raw(alpha, V, r2, eta2_s2, m)
    return _nan_check("rdp_mean_term", out)
