"""The exact discrete Laplace sampler (privgp.mechanisms.discrete_noise): its law against the pmf (chi-square),
integer outputs, reproducibility and its parameter checks."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from privgp.errors import InvalidParameterError
from privgp.mechanisms.discrete_noise import discrete_laplace, discrete_laplace_pmf


def _pmf_pvalue(z, values, pmf) -> float:
    """Chi-square p-value of the draws ``z`` against ``pmf`` on ``values`` (cells with > 5 expected; the rest
    pooled)."""
    expected = pmf(values) * z.size
    observed = np.array([np.sum(z == v) for v in values])
    keep = expected > 5
    obs = np.append(observed[keep], z.size - observed[keep].sum())
    exp = np.append(expected[keep], z.size - expected[keep].sum())
    return float(chisquare(obs, exp).pvalue)


@pytest.mark.parametrize("t, s", [(1, 1), (3, 1), (5, 2), (1, 4), (7, 3), (2**24 + 3, 2**24)])
def test_the_draws_follow_the_discrete_laplace_pmf(t, s):
    b = t / s
    z = discrete_laplace(t, s, 60_000, np.random.default_rng(t * 1000 + s))
    assert z.dtype == np.int64
    width = int(np.ceil(10 * b)) + 2
    assert _pmf_pvalue(z, np.arange(-width, width + 1), lambda x: discrete_laplace_pmf(x, b)) > 1e-4
    # the law is symmetric: P(Z = 0) is not counted twice (the sampler rejects -0)
    assert np.mean(z == 0) == pytest.approx(discrete_laplace_pmf(0, b), abs=5 * np.sqrt(discrete_laplace_pmf(0, b) / z.size))


def test_a_wrong_zero_rule_would_be_caught():
    """The chi-square above can fail: a sampler that kept -0 (P(0) doubled, renormalised) differs at this size."""
    b = 0.5
    values = np.arange(-6, 7)
    p = discrete_laplace_pmf(values, b)
    p_wrong = p.copy()
    p_wrong[values == 0] *= 2
    p_wrong /= p_wrong.sum()
    n = 60_000
    rng = np.random.default_rng(0)
    z = rng.choice(values, size=n, p=p_wrong)
    observed = np.array([np.sum(z == v) for v in values])
    keep = p * n > 5
    assert chisquare(observed[keep], p[keep] / p[keep].sum() * observed[keep].sum()).pvalue < 1e-6


def test_shapes_reproducibility_and_checks():
    a = discrete_laplace(5, 2, (3, 4), np.random.default_rng(1))
    b = discrete_laplace(5, 2, (3, 4), np.random.default_rng(1))
    assert a.shape == (3, 4) and np.array_equal(a, b)
    for bad in ((0, 1), (1, 0), (2**57, 1), (1.5, 1)):
        with pytest.raises(InvalidParameterError):
            discrete_laplace(*bad, 3, np.random.default_rng(0))
    with pytest.raises(InvalidParameterError, match="rng"):
        discrete_laplace(1, 1, 3, np.random.RandomState(0))


@pytest.mark.parametrize("T", [1, 2, 3, 7])
def test_the_discrete_gaussian_draws_follow_its_pmf(T):
    from privgp.mechanisms.discrete_noise import discrete_gaussian, discrete_gaussian_pmf

    z = discrete_gaussian(T, 30_000, np.random.default_rng(100 + T))
    assert z.dtype == np.int64
    assert _pmf_pvalue(z, np.arange(-6 * T - 3, 6 * T + 4), lambda x: discrete_gaussian_pmf(x, T)) > 1e-4


def test_the_discrete_gaussian_at_a_release_scale_and_its_checks():
    from privgp.mechanisms.discrete_noise import discrete_gaussian

    T = 2**25 + 17
    z = discrete_gaussian(T, 4000, np.random.default_rng(7))
    assert abs(np.std(z) / T - 1) < 0.05 and abs(np.mean(z)) / T < 0.1 and np.mean(z % 2 == 0) == pytest.approx(0.5, abs=0.05)
    for bad in (0, 2**56, 1.5):
        with pytest.raises(InvalidParameterError):
            discrete_gaussian(bad, 3, np.random.default_rng(0))


def _reference_laplace(t, s, size, rng):
    """Algorithms 1 and 2 transcribed entry by entry (each entry's own K, an array of bounds): what the sampler
    drew before it was made faster (2026-11-27). Releases and forecasts drawn then must be drawn again the same."""
    def bernoulli_exp_fraction(num, den):
        k = np.ones(num.shape, dtype=np.int64)
        going = np.ones(num.shape, dtype=bool)
        while going.any():
            idx = np.flatnonzero(going)
            success = rng.integers(0, den * k[idx]) < num[idx]
            k[idx[success]] += 1
            going[idx[~success]] = False
        return (k % 2) == 1

    def geometric(m):
        v_, going = np.zeros(m, dtype=np.int64), np.ones(m, dtype=bool)
        while going.any():
            idx = np.flatnonzero(going)
            success = bernoulli_exp_fraction(np.ones(idx.size, dtype=np.int64), 1)
            v_[idx[success]] += 1
            going[idx[~success]] = False
        return v_

    out, pending = np.zeros(size, dtype=np.int64), np.arange(size)
    while pending.size:
        m = pending.size
        u = rng.integers(0, t, size=m)
        keep = bernoulli_exp_fraction(u, t)
        y = (u + t * geometric(m)) // s
        negative = rng.integers(0, 2, size=m) == 1
        keep &= ~(negative & (y == 0))
        out[pending[keep]] = np.where(negative[keep], -y[keep], y[keep])
        pending = pending[~keep]
    return out


@pytest.mark.parametrize("t, s, size", [(26843547, 1, 400), (26843547, 33554432, 400), (1, 1, 50), (3, 7, 100),
                                        (2**56, 2**62, 20), (5, 1, 0)])
def test_the_sampler_draws_what_algorithms_1_and_2_draw_entry_by_entry(t, s, size):
    for seed in range(20):
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        assert np.array_equal(discrete_laplace(t, s, size, a), _reference_laplace(t, s, size, b))
        assert a.integers(0, 2**62) == b.integers(0, 2**62)      # and leaves the generator in the same state
