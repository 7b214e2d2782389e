"""Exact discrete Laplace and discrete Gaussian noise in integer arithmetic (Canonne, Kamath & Steinke 2020,
Algorithms 1-3).

Why: continuous Laplace noise added in floating point leaks through the low-order bits of its result
(Mironov 2012). A count of 1 plus noise that lands in (-0.5, 0.5) is always a multiple of 2^-53, a count
of 0 plus noise almost never is, so one released number can tell whether a record is in a cell -- whatever
epsilon the certificate states (red team 21: delta(5) >= 0.29 for a "pure 5-DP" noisy grid). The discrete
Laplace law on the integers,

    P(Z = z) = (1 - e^{-1/b}) / (1 + e^{-1/b}) * e^{-|z| / b},        z in Z,

added to an integer statistic of L1 sensitivity Delta is exactly (Delta / b)-DP (the ratio of the two
probabilities at any output is at most e^{Delta / b}; Ghosh, Roughgarden & Sundararajan 2012), and the
sampler below draws it exactly: it uses only uniform integers (``Generator.integers``, unbiased) and integer
comparisons, never a float, for a rational scale b = t / s (t, s positive integers). The result is an
integer, so converting it to a float afterwards is post-processing.

Algorithm 1 draws Bernoulli(exp(-gamma)) for a rational gamma in [0, 1] by counting how many successive
Bernoulli(gamma / k) succeed (the count is odd with probability exp(-gamma)); Algorithm 2 builds the
discrete Laplace variable from a uniform remainder U in {0..t-1} accepted with probability exp(-U / t),
a geometric V with P(V >= v) = e^{-v}, X = U + t V, Y = floor(X / s) and a random sign (rejecting -0).
Vectorised: every round redraws the entries not yet accepted.

The discrete Gaussian N_Z(0, sigma^2), P(Z = z) proportional to e^{-z^2 / (2 sigma^2)}, for an integer sigma = T
(:func:`discrete_gaussian`; Algorithm 3): a discrete Laplace proposal Y of scale t = T + 1, accepted with
probability exp(-(|Y| - sigma^2 / t)^2 / (2 sigma^2)), a Bernoulli of exp(-rational) drawn exactly with Python
integers (the rational's terms reach 2^100). For integer shifts mu, nu, D_alpha(N_Z(mu, sigma^2) || N_Z(nu,
sigma^2)) <= alpha (mu - nu)^2 / (2 sigma^2) (their Thm 4): the continuous Gaussian's Renyi curve, i.e.
(mu - nu)^2 / (2 sigma^2)-zCDP, and independent coordinates add.
"""
from __future__ import annotations

import numpy as np

from .. import validation as v
from ..errors import InvalidParameterError

#: the ``noise`` a certificate states for a release drawn with this module's discrete Gaussian (the noisy grid, the
#: sparse GP); a certificate without it drew float noise
DISCRETE_GAUSSIAN = "discrete-gaussian"

#: the largest t the sampler takes: t k and U + t V stay inside int64 while k, V < 2^6 (each further step has
#: probability below 1/64! resp. e^-64; a run that gets there stops with an error instead of wrapping around);
#: s only divides, so it may be any int64
MAX_T = 2**56
_LIMIT = 2**62


def _bernoulli_exp_fraction(num: np.ndarray | int, den: int, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
    """Bernoulli(exp(-num / den)) for integers 0 <= num <= den, elementwise over a 1-D ``num`` (or ``size`` draws
    of one integer ``num``) (Algorithm 1): K = 1, 2, ... while a Bernoulli(num / (den K)) succeeds; the result is 1
    where the final K is odd. Every entry still going has the same K, so each round is one draw of uniform integers
    below the one bound den K for those entries (numpy's generator gives the same integers for one bound as for an
    array of it: tests/mechanisms/test_discrete_noise.py pins the stream)."""
    num = np.asarray(num, dtype=np.int64)
    n = int(size) if size is not None else num.shape[0]
    odd = np.zeros(n, dtype=bool)
    idx = np.arange(n)
    k = 1
    while idx.size:
        if k > _LIMIT // den:  # pragma: no cover - probability below 1 / 64! per draw
            raise ArithmeticError("discrete Laplace sampler: integer range exceeded")
        success = rng.integers(0, den * k, size=idx.size) < (num if num.ndim == 0 else num[idx])
        odd[idx[~success]] = k % 2 == 1         # the final K of the entries that stop here is k
        idx = idx[success]
        k += 1
    return odd


def _geometric_exp_minus_one(size: int, rng: np.random.Generator) -> np.ndarray:
    """V with P(V >= v) = e^{-v} (v = 0, 1, ...): the number of Bernoulli(exp(-1)) successes before the first
    failure."""
    v_ = np.zeros(size, dtype=np.int64)
    idx = np.arange(size)
    while idx.size:
        success = _bernoulli_exp_fraction(1, 1, rng, size=idx.size)
        idx = idx[success]
        v_[idx] += 1
    return v_


def discrete_laplace(t: int, s: int, size, rng: np.random.Generator) -> np.ndarray:
    """``size`` independent draws of the discrete Laplace law of scale b = t / s (P(z) proportional to
    e^{-|z| s / t}), as int64, exactly (Algorithm 2 of Canonne, Kamath & Steinke 2020)."""
    rng = v.generator("rng", rng)
    t, s = v.integer("t", t, minimum=1), v.integer("s", s, minimum=1)
    if t > MAX_T or s > _LIMIT:
        raise InvalidParameterError("t and s", "t <= 2^56 and s <= 2^62 (the sampler's integer range)", f"t={t}, s={s}")
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    total = int(np.prod(shape))
    out = np.zeros(total, dtype=np.int64)
    pending = np.arange(total)
    while pending.size:
        m = pending.size
        u = rng.integers(0, t, size=m)
        keep = _bernoulli_exp_fraction(u, t, rng)                  # accept U with probability exp(-U / t)
        geo = _geometric_exp_minus_one(m, rng)
        if int(geo.max()) > _LIMIT // t:  # pragma: no cover - probability below e^-64 per draw
            raise ArithmeticError("discrete Laplace sampler: integer range exceeded")
        x = u + t * geo
        y = x // s
        negative = rng.integers(0, 2, size=m) == 1
        keep &= ~(negative & (y == 0))                              # -0 would count zero twice
        out[pending[keep]] = np.where(negative[keep], -y[keep], y[keep])
        pending = pending[~keep]
    return out.reshape(shape)


def discrete_laplace_pmf(z, b: float) -> np.ndarray:
    """P(Z = z) of the discrete Laplace law of scale b (for tests and plots; floats)."""
    q = np.exp(-1.0 / b)
    return (1.0 - q) / (1.0 + q) * q ** np.abs(np.asarray(z, dtype=float))


def _uniform_below(bound: int, rng: np.random.Generator) -> int:
    """A uniform integer in [0, bound) for a Python int ``bound`` >= 1 of any size: 62-bit chunks, rejection."""
    bits = bound.bit_length()
    while True:
        x = 0
        for _ in range(-(-bits // 62)):
            x = (x << 62) | int(rng.integers(0, 2**62))
        x >>= (-(-bits // 62)) * 62 - bits
        if x < bound:
            return x


def _bernoulli_exp(num: int, den: int, rng: np.random.Generator) -> bool:
    """Bernoulli(exp(-num / den)) for Python ints num >= 0, den >= 1, exactly: Bernoulli(e^-1) for each whole unit
    of num / den (stop at the first failure), then Algorithm 1 for the remainder in [0, 1)."""
    while num > den:
        k = 1
        while _uniform_below(k, rng) < 1:           # Bernoulli(1 / k)
            k += 1
        if k % 2 == 0:
            return False
        num -= den
    k = 1
    while _uniform_below(den * k, rng) < num:        # Bernoulli(num / (den k))
        k += 1
    return k % 2 == 1


def discrete_gaussian(T: int, size, rng: np.random.Generator) -> np.ndarray:
    """``size`` independent draws of the discrete Gaussian N_Z(0, T^2) (an integer sigma = T) as int64, exactly
    (Algorithm 3 of Canonne, Kamath & Steinke 2020; module docstring)."""
    rng = v.generator("rng", rng)
    T = v.integer("T", T, minimum=1)
    if T + 1 > MAX_T:
        raise InvalidParameterError("T", "an integer <= 2^56 - 1 (the sampler's integer range)", T)
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    total = int(np.prod(shape))
    out = np.zeros(total, dtype=np.int64)
    t, s2 = T + 1, T * T
    den = 2 * s2 * t * t
    filled = 0
    while filled < total:
        proposals = discrete_laplace(t, 1, max(16, 2 * (total - filled)), rng)
        for y in proposals.tolist():
            if _bernoulli_exp((abs(y) * t - s2) ** 2, den, rng):
                out[filled] = y
                filled += 1
                if filled == total:
                    break
    return out.reshape(shape)


def discrete_gaussian_pmf(z, sigma: float, terms: int = 0) -> np.ndarray:
    """P(Z = z) of N_Z(0, sigma^2) (for tests; floats): the weights normalised over |z| <= 12 sigma + 10."""
    width = int(12 * sigma) + 10 + terms
    grid = np.arange(-width, width + 1)
    norm = np.sum(np.exp(-0.5 * (grid / sigma) ** 2))
    return np.exp(-0.5 * (np.asarray(z, dtype=float) / sigma) ** 2) / norm
