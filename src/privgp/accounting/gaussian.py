"""The exact privacy profile of the Gaussian mechanism / mu-GDP (the one home of these formulas).

A mechanism is mu-GDP (Dong, Roth & Su 2022, Def. 2.6) when distinguishing neighbours is no easier
than distinguishing N(0, 1) from N(mu, 1). The Gaussian mechanism M(D) = f(D) + N(0, s^2 I) with
L2 sensitivity Delta is mu-GDP with mu = Delta / s. Its exact (epsilon, delta) profile is

    delta(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)

(Balle & Wang 2018, Thm 8; Dong et al. 2022, Cor. 2.13; seed 002, eq. (5)). It is tight: no
smaller delta holds for every neighbouring pair, and a mechanism that is mu-GDP is
(epsilon, delta(epsilon))-DP for every epsilon >= 0 at once. mu-GDP composes exactly:
mu = sqrt(sum_i mu_i^2) (Dong et al. 2022, Cor. 3.3). Its Renyi curve is alpha mu^2 / 2.

Numerics. delta(epsilon) is evaluated as exp(log Phi(a)) * (1 - exp(epsilon + log Phi(b) - log Phi(a)))
with log Phi from scipy.special.log_ndtr, so that it keeps full relative precision where the two terms
nearly cancel (large epsilon, small delta); where they cancel below the evaluation's resolution (mu
below about 1e-12) delta is bounded by Phi(a) and delta(0) = erf(mu / (2 sqrt 2)) instead. The inverses
are bracketed bisections in numpy (vectorised) that return the *feasible* end of the final bracket:
:func:`gdp_epsilon` never returns an epsilon whose delta exceeds the target, :func:`gdp_mu` never a mu
whose delta exceeds it. A point counts as feasible only if it is feasible after allowing for a bound on
the floating-point error of the evaluation (``_surely_feasible``): a bisection that compared rounded
values could end a few ulp on the wrong side of the exact root (seen against mpmath at epsilon = 0.1,
delta = 1e-3).
dp_accounting's ``GaussianPrivacyLoss``/``get_smallest_gaussian_noise`` is the independent reference
in the tests (tests/accounting/test_events.py, tests/accounting/test_functional_noise.py).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidParameterError, NumericalError

BISECTION_STEPS = 200


def _arrays(**kw):
    return {k: np.asarray(a, dtype=float) for k, a in kw.items()}


def _check_mu(mu):
    if np.any(~(mu >= 0)) or np.any(np.isinf(mu)):
        raise InvalidParameterError("mu", "finite and >= 0 (the GDP parameter)", mu)


def _log_gdp_delta_parts(mu, eps):
    """(log delta(eps), an upper bound on its floating-point error) for validated arrays. Where the two terms
    cancel below the evaluation's resolution (the computed gap is >= 0, which it never is in exact arithmetic:
    mu below about 1e-12), log delta is not resolved and this returns an upper bound on it instead, the least of
    log Phi(a) and log delta(0) = log erf(mu / (2 sqrt 2)), with its rounding in the error bound (red team 18d:
    delta 0 was returned there, and calibrations to a tiny delta certified (3.6e-14, 1e-300) where the exact
    delta is 3.6e-31)."""
    from scipy.special import erf, log_ndtr  # here, not at import: `import privgp.ledger` stays light

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        safe = np.where(mu > 0, mu, 1.0)
        la = log_ndtr(-eps / safe + safe / 2.0)
        lb = log_ndtr(-eps / safe - safe / 2.0)
        gap = eps + lb - la              # log of e^eps Phi(b) / Phi(a), < 0 in exact arithmetic
        out = la + np.log(-np.expm1(np.minimum(gap, 0.0)))
        unresolved = (gap >= 0.0) & np.isfinite(la)
        cap = np.minimum(la, np.log(erf(safe / (2.0 * np.sqrt(2.0)))))   # upper bounds on log delta(eps)
        out = np.where(unresolved, cap, out)
        out = np.where(np.isinf(eps), -np.inf, out)
        out = np.where(np.isneginf(la), -np.inf, out)  # delta <= Phi(a) = 0 in floats (mu ~ 1e-300: no inf - inf)
        out = np.where(mu > 0, out, -np.inf)
        # round-off: log_ndtr is accurate to a few ulp of its value; an absolute error e_g of gap moves
        # log(1 - e^gap) by about e_g / (e^-gap - 1), large where the two terms nearly cancel
        big = np.maximum.reduce([np.ones_like(la), np.abs(eps), np.abs(la), np.abs(lb)])
        e_g = 16.0 * np.finfo(float).eps * np.where(np.isfinite(big), big, 0.0)
        err = 16.0 * np.finfo(float).eps * np.where(np.isfinite(la), np.abs(la), 0.0) \
            + e_g * (1.0 + 1.0 / np.maximum(np.expm1(-np.minimum(gap, 0.0)), 1e-300))
        # the cap: log_ndtr and log(erf) to a few ulp of their values, erf's argument rounded (relative 2 ulp)
        err = np.where(unresolved, 16.0 * np.finfo(float).eps * np.maximum(np.abs(cap), 1.0), err)
        err = np.where(np.isfinite(out), err, 0.0)
    return out, err


def log_gdp_delta(mu: ArrayLike, epsilon: ArrayLike) -> np.ndarray:
    """log delta(epsilon) of a mu-GDP mechanism (see the module docstring); -inf when mu = 0."""
    return _checked_parts(mu, epsilon, "log_gdp_delta")[2]


def _checked_parts(mu: ArrayLike, epsilon: ArrayLike, caller: str
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(mu, epsilon, log delta, its error bound) of checked inputs, broadcast (``_log_gdp_delta_parts``)."""
    a = _arrays(mu=mu, epsilon=epsilon)
    mu_a, eps = np.broadcast_arrays(a["mu"], a["epsilon"])
    _check_mu(mu_a)
    if np.any(~(eps >= 0)):
        raise InvalidParameterError("epsilon", ">= 0", eps)
    out, err = _log_gdp_delta_parts(mu_a, eps)
    if np.isnan(out).any():
        raise NumericalError(f"{caller}: NaN from valid inputs")
    return mu_a, eps, out, err


def _surely_feasible(mu, eps, log_target):
    """delta_mu(eps) <= target even after allowing for the floating-point error of its evaluation."""
    mu, eps = np.broadcast_arrays(np.asarray(mu, float), np.asarray(eps, float))
    out, err = _log_gdp_delta_parts(mu, eps)
    if np.isnan(out).any():
        raise NumericalError("log_gdp_delta: NaN from valid inputs")
    return out + err <= log_target


def gdp_delta(mu: ArrayLike, epsilon: ArrayLike) -> np.ndarray:
    """Exact delta(epsilon) of a mu-GDP mechanism (Gaussian mechanism with mu = Delta / s)."""
    return np.exp(log_gdp_delta(mu, epsilon))


def gdp_delta_upper(mu: ArrayLike, epsilon: ArrayLike) -> np.ndarray:
    """An upper bound on delta(epsilon) of a mu-GDP mechanism (Balle & Wang 2018, Thm 8; module docstring):
    the certified delta at an epsilon (:func:`privgp.accounting.delta`). About 1e-14 relative above the exact
    value, up to ~1e-9 where the two terms nearly cancel (the error bound grows there).

    exp(log delta + its error bound) (``_log_gdp_delta_parts``, the bound :func:`gdp_epsilon` uses),
    rounded up once more for exp, and capped by two other upper bounds, Phi(-epsilon/mu + mu/2) (the first
    term) and delta(0) = erf(mu / (2 sqrt 2)) (delta decreases in epsilon), which serve where the two terms
    cancel below the evaluation's resolution (mu ~ 1e-10 or below). Never 0 where delta(epsilon) > 0 (mu > 0,
    epsilon finite): where delta(epsilon) is below the smallest positive float, that float. 0 only where
    delta(epsilon) = 0 (mu = 0 or epsilon = inf)."""
    from scipy.special import erf, log_ndtr

    mu, eps, out, err = _checked_parts(mu, epsilon, "gdp_delta_upper")
    positive = (mu > 0) & np.isfinite(eps)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        u = np.finfo(float).eps
        first = log_ndtr(-eps / np.where(positive, mu, 1.0) + mu / 2.0)
        first = np.where(np.isfinite(first), first * (1.0 - 16.0 * u), first)    # log Phi(a) (< 0), rounded up
        at_zero = erf(mu / (2.0 * np.sqrt(2.0))) * (1.0 + 16.0 * u)              # delta(0), rounded up
        log_up = out + err
        log_up = log_up + 4.0 * u * np.where(np.isfinite(log_up), np.abs(log_up), 0.0)  # the sum's rounding
        up = np.minimum.reduce([np.where(np.isneginf(out), np.inf, np.exp(log_up)), np.exp(first), at_zero])
        up = np.nextafter(up * (1.0 + 4.0 * u), np.inf)                             # exp's rounding
    up = np.where(positive, np.maximum(up, np.nextafter(0.0, 1.0)), 0.0)
    return np.minimum(up, 1.0)


def _epsilon_upper(mu, delta):
    """An epsilon with delta(epsilon) <= delta: Phi(-eps/mu + mu/2) <= exp(-(eps/mu - mu/2)^2 / 2)
    for eps >= mu^2/2, so eps = mu^2/2 + mu sqrt(2 log(1/delta)) suffices (doubled for margin)."""
    with np.errstate(over="ignore", divide="ignore"):
        inv = 1.0 / delta
        # log(1 / delta), or -log(delta) where 1 / delta overflows (delta below ~5.6e-309: inf made epsilon +inf)
        log_inv = np.where(np.isfinite(inv), np.log(np.where(np.isfinite(inv), inv, 1.0)), -np.log(delta))
        return 2.0 * (0.5 * mu * mu + mu * np.sqrt(2.0 * log_inv)) + 1.0


def _bisect(feasible: Callable[[np.ndarray], np.ndarray], good: np.ndarray, bad: np.ndarray,
            rtol: float) -> np.ndarray:
    """Vectorised bisection between a feasible end ``good`` and an infeasible end ``bad`` of a monotone
    condition; returns the feasible end once the bracket is narrower than ``rtol`` (relative)."""
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (good + bad)
        ok = feasible(mid)
        good = np.where(ok, mid, good)
        bad = np.where(ok, bad, mid)
        if np.all(np.abs(good - bad) <= rtol * np.maximum(np.maximum(np.abs(good), np.abs(bad)), 1e-300)):
            break
    return good


def gdp_epsilon(mu: ArrayLike, delta: ArrayLike) -> np.ndarray:
    """Smallest epsilon >= 0 with delta(epsilon) <= delta for a mu-GDP mechanism (vectorised).

    Bisection on a bracket [lo, hi] with delta(lo) > delta >= delta(hi); returns hi (the feasible
    end), with relative width below 1e-13. 0 when delta(0) <= delta already.
    """
    a = _arrays(mu=mu, delta=delta)
    mu, dl = np.broadcast_arrays(a["mu"], a["delta"])
    _check_mu(mu)
    if np.any(~((dl > 0) & (dl < 1))):
        raise InvalidParameterError("delta", "in the open interval (0, 1)", dl)
    log_target = np.log(dl)
    zero = np.zeros(mu.shape)
    done = _surely_feasible(mu, zero, log_target)
    hi = _bisect(lambda e: _surely_feasible(mu, e, log_target), _epsilon_upper(mu, dl), zero, 1e-13)
    out = np.where(done, 0.0, hi)
    if not np.all(_surely_feasible(mu, out, log_target)):  # re-check: never report an infeasible epsilon
        raise NumericalError("gdp_epsilon: bisection ended on an infeasible value")
    return out


def gdp_mu(epsilon: ArrayLike, delta: ArrayLike) -> np.ndarray:
    """Largest mu with delta_mu(epsilon) <= delta (vectorised): the GDP parameter a Gaussian mechanism
    may have to be (epsilon, delta)-DP. delta_mu(epsilon) increases in mu, so this is a bracketed
    root; the returned value is the feasible (lower) end of the final bracket, re-checked."""
    a = _arrays(epsilon=epsilon, delta=delta)
    eps, dl = np.broadcast_arrays(a["epsilon"], a["delta"])
    if np.any(~(eps >= 0)) or np.any(np.isinf(eps)):
        raise InvalidParameterError("epsilon", "finite and >= 0", eps)
    if np.any(~((dl > 0) & (dl < 1))):
        raise InvalidParameterError("delta", "in the open interval (0, 1)", dl)
    log_target = np.log(dl)
    lo = np.zeros(eps.shape)
    hi = np.ones(eps.shape)
    for _ in range(200):  # grow hi until infeasible
        bad = _surely_feasible(hi, eps, log_target)
        if not bad.any():
            break
        hi = np.where(bad, 2.0 * hi, hi)
    lo = _bisect(lambda m: _surely_feasible(m, eps, log_target), lo, hi, 1e-14)
    tiny = lo == 0.0   # the largest feasible mu is below 2^-200 (a tiny epsilon and delta): search by halving
    if tiny.any():     # (elsewhere the answer is the bisection's above, unchanged)
        m = np.where(tiny, 1.0, 0.0)
        for _ in range(1100):   # down to the smallest positive double
            low = tiny & (m > 0) & ~_surely_feasible(m, eps, log_target)
            if not low.any():
                break
            m = np.where(low, m / 2.0, m)
        lo = np.where(tiny, _bisect(lambda x: _surely_feasible(x, eps, log_target), m, 2.0 * m, 1e-14), lo)
    if not np.all(_surely_feasible(lo, eps, log_target)):
        raise NumericalError("gdp_mu: bisection ended on an infeasible value")
    return lo


def gaussian_noise_std(sensitivity: ArrayLike, epsilon: ArrayLike, delta: ArrayLike) -> np.ndarray:
    """Smallest noise standard deviation s of a Gaussian mechanism with L2 sensitivity Delta that is
    (epsilon, delta)-DP: s = Delta / mu*(epsilon, delta) (analytic Gaussian mechanism, Balle & Wang
    2018, Thm 8 / Alg. 1, by bisection instead of their closed-form search)."""
    s = np.asarray(sensitivity, dtype=float)
    if np.any(~(s > 0)) or np.any(np.isinf(s)):
        raise InvalidParameterError("sensitivity", "finite and > 0", s)
    mu = gdp_mu(epsilon, delta)
    with np.errstate(divide="ignore", over="ignore"):
        std = s / mu
    if np.any(~np.isfinite(std)):   # mu below the smallest double's share of Delta (red team 18g)
        raise InvalidParameterError("epsilon", "and delta large enough for a finite noise std (the Gaussian "
                                    "mechanism needs noise beyond the largest float here)", epsilon)
    return std


def compose_mu(mus: ArrayLike, counts: ArrayLike | None = None) -> float:
    """mu of the composition of mu_i-GDP mechanisms, each used counts_i times: sqrt(sum c_i mu_i^2)."""
    return float(compose_mu_rows(mus, counts))


def compose_mu_rows(mus: ArrayLike, counts: ArrayLike | None = None) -> np.ndarray:
    """:func:`compose_mu` along the last axis (one composition per row; Dong, Roth & Su 2022, Cor. 3.3):
    sqrt(sum_k c_k mu_k^2), the one home of this formula."""
    mus = np.asarray(mus, dtype=float)
    c = np.ones_like(mus) if counts is None else np.asarray(counts, dtype=float)
    _check_mu(mus)
    if np.any(~(c >= 0)) or np.any(np.isinf(c)) or np.any(c != np.floor(c)):   # (1, -1) gave mu 0 (red team 18d)
        raise InvalidParameterError("counts", "whole numbers >= 0 (how many times each mechanism is used)", counts)
    # scaled by the row's largest mu: its square neither underflows to 0 (mu = 1e-170) nor overflows
    scale = np.max(np.abs(mus), axis=-1, keepdims=True) if mus.size else np.ones(mus.shape[:-1] + (1,))
    safe = np.where(scale > 0, scale, 1.0)
    r = mus / safe
    return safe[..., 0] * np.sqrt(np.sum(c * r * r, axis=-1))
