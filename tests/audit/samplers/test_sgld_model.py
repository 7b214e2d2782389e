"""Seed 004: the SGLD simulator and the exact iterate laws of cyclic SGLD on D1 / D2.

* closed forms (epoch ends and inside an epoch) against the step-by-step moment recursion;
* the n! shuffles of D2 collapse to n laws (by the position r of the odd record);
* Monte Carlo runs of eq. (3) against the exact laws - means, variances and P(theta > mu_t) within
  5 standard errors (SEs from the exact moments) - for cyclic, reshuffled and with-replacement
  orders, batch sizes 1 and 2, prior and fixed initialisation (exact mixtures by enumeration);
* structural invariants (t = 0, t -> inf, c^2 scaling).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import ndtr

from privgp.audit.samplers.sgld_model import (
    CyclicSGLD,
    RatioDomain,
    counterexample_datasets,
    cyclic_batches,
    fixed_order_law,
    posterior_pair,
    ptr_datasets,
    simulate_sgld,
)
from privgp.errors import InvalidParameterError
from privgp.models.gp.linear_regression import BayesianLinearRegression

SMALL = dict(n=5, alpha=1.0, beta=4.0, x_h=1.0, c=3.0)


def _order_with_odd_at(n, r):
    order = list(range(n - 1))
    order.insert(r - 1, n - 1)   # the odd record is the last one of D2
    return order


@pytest.mark.parametrize("init", ["prior", "fixed"])
@pytest.mark.parametrize("eta_scale", [None, 0.5])
def test_closed_form_matches_step_recursion(init, eta_scale):
    s = CyclicSGLD(**SMALL, init=init, theta0=1.3, eta=None if eta_scale is None else eta_scale * 2 / 21 ** 2)
    (x1, y1), (x2, y2) = counterexample_datasets(5, 3.0, 1.0)
    for t in (0, 1, 3, 5, 7, 10, 13, 24, 52):
        law = s.law(t)
        m1, v1 = fixed_order_law(x1, y1, cyclic_batches(range(5), t), alpha=1.0, beta=4.0, eta=s.eta, init=init, theta0=1.3)
        assert law.mu_inf + law.mean1 == pytest.approx(m1, rel=1e-12, abs=1e-12)
        assert law.var1 == pytest.approx(v1, rel=1e-12)
        for r in range(1, 6):
            m, var = fixed_order_law(x2, y2, cyclic_batches(_order_with_odd_at(5, r), t), alpha=1.0, beta=4.0,
                                     eta=s.eta, init=init, theta0=1.3)
            assert law.mu_inf + law.mean1 - law.gaps[r - 1] == pytest.approx(m, rel=1e-12, abs=1e-12)
            assert law.vars2[r - 1] == pytest.approx(var, rel=1e-12)


def test_shuffles_collapse_to_n_orders():
    """Every permutation of D2 with the odd record at position r has the same law (sec. 4.2)."""
    (x2, y2) = counterexample_datasets(4, 2.0, 1.0)[1]
    s = CyclicSGLD(4, 1.0, 4.0, 1.0, 2.0)
    law = s.law(11)
    for perm in itertools.permutations(range(4)):
        r = perm.index(3) + 1
        m, var = fixed_order_law(x2, y2, cyclic_batches(perm, 11), alpha=1.0, beta=4.0, eta=s.eta)
        assert m == pytest.approx(law.mu_inf + law.mean1 - law.gaps[r - 1], rel=1e-12)
        assert var == pytest.approx(law.vars2[r - 1], rel=1e-12)


def test_small_case_pinned_values():
    """Values of T1 in docs/notes/seed004_sgld.md, sec. 5 (also pinned to exact rationals in test_sgld_reference)."""
    s = CyclicSGLD(**SMALL)
    assert s.law(15).mu_inf + s.law(15).mean1 == pytest.approx(1.4828082912, rel=1e-9)
    assert s.law(40).indicator() == pytest.approx(2.519436e-01, rel=1e-6)
    assert s.law(40).tail_probability() == pytest.approx(0.307856, abs=1e-6)
    _, Q, V = s.epoch_map()
    assert V == pytest.approx([0.0188335, 0.01905667, 0.01930271, 0.01957398, 0.01987305], rel=1e-6)


# ------------------------------------------------------------------------------------------------
# Monte Carlo against exact laws
# ------------------------------------------------------------------------------------------------

def _mixture_moments(weights, means, variances):
    w = np.asarray(weights, float) / np.sum(weights)
    m = np.asarray(means, float)
    v = np.asarray(variances, float)
    mean = float(w @ m)
    c = m - mean
    var = float(w @ (v + c * c))
    mu4 = float(w @ (c ** 4 + 6 * c * c * v + 3 * v * v))
    return mean, var, mu4


def _check_mc(samples, weights, means, variances, threshold, z=5.0):
    """Sample mean, variance and P(theta > threshold) within z standard errors of the exact mixture."""
    N = samples.shape[0]
    mean, var, mu4 = _mixture_moments(weights, means, variances)
    w = np.asarray(weights, float) / np.sum(weights)
    p = float(w @ ndtr((np.asarray(means) - threshold) / np.sqrt(variances)))
    assert abs(samples.mean() - mean) <= z * math.sqrt(var / N)
    assert abs(samples.var() - var) <= z * math.sqrt((mu4 - var * var) / N)
    assert abs(np.mean(samples > threshold) - p) <= z * math.sqrt(p * (1 - p) / N)


@pytest.mark.parametrize("t", [15, 52])
def test_monte_carlo_cyclic_matches_exact_laws(t):
    s = CyclicSGLD(**SMALL)
    law = s.law(t)
    (x1, y1), (x2, y2) = counterexample_datasets(5, 3.0, 1.0)
    rng = np.random.default_rng(20240 + t)
    th2 = simulate_sgld(x2, y2, alpha=1.0, beta=4.0, eta=s.eta, steps=t, chains=200_000, rng=rng)
    mu_t = law.mu_inf + law.mean1
    _check_mc(th2, np.ones(5), mu_t - law.gaps, law.vars2, mu_t)
    th1 = simulate_sgld(x1, y1, alpha=1.0, beta=4.0, eta=s.eta, steps=t, chains=100_000, rng=rng)
    _check_mc(th1, [1.0], [mu_t], [law.var1], mu_t)


def _enumerated_mixture(x, y, steps, *, scheme, batch, eta, init="prior", theta0=0.0):
    """Exact mixture of the iterate for small n by enumerating every record sequence of the scheme."""
    n = x.shape[0]
    comps = []
    if scheme == "replacement":
        for seq in itertools.product(range(n), repeat=steps * batch):
            batches = [np.array(seq[j * batch:(j + 1) * batch]) for j in range(steps)]
            comps.append((1.0, *fixed_order_law(x, y, batches, alpha=1.0, beta=4.0, eta=eta, init=init, theta0=theta0)))
    else:  # reshuffle: one permutation per epoch (batches never straddle epochs here: n % batch == 0)
        epochs = math.ceil(steps * batch / n)
        for perms in itertools.product(itertools.permutations(range(n)), repeat=epochs):
            flat = np.concatenate(perms)
            batches = [flat[j * batch:(j + 1) * batch] for j in range(steps)]
            comps.append((1.0, *fixed_order_law(x, y, batches, alpha=1.0, beta=4.0, eta=eta, init=init, theta0=theta0)))
    w, m, v = (np.array(a) for a in zip(*comps))
    return w, m, v


@pytest.mark.parametrize("scheme,batch,steps,init", [("replacement", 1, 6, "prior"), ("replacement", 2, 3, "fixed"),
                                                     ("reshuffle", 1, 5, "prior"), ("reshuffle", 2, 3, "fixed")])
def test_monte_carlo_other_orders_match_enumerated_laws(scheme, batch, steps, init):
    x = np.array([1.0, 0.5, 0.8, 1.0])
    y = np.array([3.0, 1.0, 2.0, 2.5])
    eta = 0.02
    w, m, v = _enumerated_mixture(x, y, steps, scheme=scheme, batch=batch, eta=eta, init=init, theta0=0.7)
    rng = np.random.default_rng(7 + steps)
    th = simulate_sgld(x, y, alpha=1.0, beta=4.0, eta=eta, steps=steps, chains=200_000, rng=rng, order=scheme,
                       batch=batch, init=init, theta0=0.7)
    _check_mc(th, w, m, v, threshold=float(np.average(m, weights=w)))


def test_cyclic_batch_two_matches_fixed_order_mixture():
    x = np.array([1.0, 0.5, 0.8, 1.0])
    y = np.array([3.0, 1.0, 2.0, 2.5])
    comps = [fixed_order_law(x, y, cyclic_batches(p, 5, batch=2), alpha=1.0, beta=4.0, eta=0.03)
             for p in itertools.permutations(range(4))]
    m, v = (np.array(a) for a in zip(*comps))
    th = simulate_sgld(x, y, alpha=1.0, beta=4.0, eta=0.03, steps=5, chains=200_000, rng=np.random.default_rng(3),
                       batch=2)
    _check_mc(th, np.ones(len(m)), m, v, threshold=float(m.mean()))


# ------------------------------------------------------------------------------------------------
# Invariants
# ------------------------------------------------------------------------------------------------

def test_limits_and_posterior():
    s = CyclicSGLD(**SMALL)
    law0 = s.law(0)
    assert law0.indicator() == 0.0 and law0.var1 == pytest.approx(1.0) and law0.mean1 == -s.mu_inf
    inf = s.law(math.inf)
    # stationary D1 law: the posterior mean (Claim D.1) and variance eta/(1 - lambda^2) = 1/(A - 1/2) (eq. (43) corrected)
    (mu1, var1), (gap, var2) = posterior_pair(s)
    assert inf.mean1 == 0.0 and s.mu_inf == pytest.approx(mu1, rel=1e-15)
    assert inf.var1 == pytest.approx(1.0 / (s.A - 0.5), rel=1e-13)
    m, v = BayesianLinearRegression(1.0, 4.0).posterior(*counterexample_datasets(5, 3.0, 1.0)[1])
    assert mu1 - gap == pytest.approx(float(m), rel=1e-14) and var2 == pytest.approx(float(v), rel=1e-14)
    assert s.law(5 * 400).indicator() == pytest.approx(inf.indicator(), rel=1e-9)


@pytest.mark.parametrize("t", [3, 25, 48])
def test_c_squared_scaling(t):
    a = CyclicSGLD(7, 0.3, 5.0, 1.0, 1.0).law(t)
    b = CyclicSGLD(7, 0.3, 5.0, 1.0, 37.0).law(t)
    assert b.indicator() == pytest.approx(37.0 ** 2 * a.indicator(), rel=1e-12)
    assert np.allclose(a.vars2, b.vars2, rtol=1e-14)


def test_gaps_positive_at_epoch_ends_lemma_a2():
    """Lemma A.2: mu_t > mu_t^r for every r at epoch ends; inside the first epoch the components that have
    not met the odd record coincide with D1 (gap exactly 0)."""
    s = CyclicSGLD(1149019, 0.1, 1.0, 1.8, 1165165)
    for t in (1149019, 25 * 1149019, 25 * 1149019 + 777, math.inf):
        assert np.all(s.law(t).gaps > 0)
    inside = s.law(1000)
    assert np.all(inside.gaps[:1000] > 0) and np.all(inside.gaps[1000:] == 0)


def test_domain_and_datasets():
    (x1, y1), (x2, y2) = counterexample_datasets(10, 50.0, 1.8)
    dom = RatioDomain(10, 0.1, 1.8, 0.9, 50.0)
    assert dom.contains(x1, y1) and dom.contains(x2, y2)
    assert not dom.contains(x1, y1 + 5.0)       # |y/x - c| > n^gamma1
    assert not dom.contains(x1[:9], y1[:9])    # wrong size
    (x3, y3), (x4, y4) = ptr_datasets(100, 1.15, 1.0)
    assert y3[0] == pytest.approx(100 ** 1.15) and x4[-1] == 0.5


def test_bad_input_errors():
    with pytest.raises(InvalidParameterError, match="eta"):
        CyclicSGLD(5, 1.0, 4.0, 1.0, 3.0, eta=1.0)
    with pytest.raises(InvalidParameterError, match="init"):
        CyclicSGLD(5, 1.0, 4.0, 1.0, 3.0, init="zero")
    with pytest.raises(InvalidParameterError, match="order"):
        simulate_sgld([1.0], [1.0], alpha=1, beta=1, eta=0.1, steps=1, chains=1, rng=np.random.default_rng(0), order="x")
    with pytest.raises(InvalidParameterError, match="batch"):
        simulate_sgld([1.0], [1.0], alpha=1, beta=1, eta=0.1, steps=1, chains=1, rng=np.random.default_rng(0), batch=2)
    with pytest.raises(InvalidParameterError, match="rng"):
        simulate_sgld([1.0], [1.0], alpha=1, beta=1, eta=0.1, steps=1, chains=1, rng=0)
    with pytest.raises(InvalidParameterError, match="t"):
        CyclicSGLD(**SMALL).law(-1)
