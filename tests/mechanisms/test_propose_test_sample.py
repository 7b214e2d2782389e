"""Propose-Test-Sample (seed 004, Algorithm 1): parameter checks, the Laplace tests, n_min, the draw.

On data that sit well inside a domain the algorithm reaches step 19 and its output is distributed as
the exact posterior of W (Monte Carlo, stated standard errors); with too few records it returns null.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from privgp.accounting import accountant
from privgp.accounting.linear_regression import claim_d29_conditions
from privgp.errors import InvalidParameterError
from privgp.mechanisms.propose_test_sample import PtsParams, n_min, propose_test_sample, pts_select
from privgp.models.gp.linear_regression import BayesianLinearRegression

# 1 + rho2 > rho1 keeps the noise of m~ (scale ~ n^(rho1 - 1) / eps) below the window n2^rho2 (Claim C.4)
PARAMS = dict(epsilon=20.0, delta=0.01, x_l=0.5, x_h=1.0, alpha=1.0, beta=3.0, rho1=1.02, rho2=0.05, gamma1=0.1)


def _data(n, rng, c=1.0):
    x = rng.uniform(0.5, 1.0, n)
    return x, x * (c + rng.uniform(-0.05, 0.05, n))


def test_reaches_step_19_and_draws_from_the_posterior_of_W():
    rng = np.random.default_rng(11)
    x, y = _data(6000, rng)
    p = PtsParams(**PARAMS)
    mean, var = BayesianLinearRegression(1.0, 3.0).posterior(x, y)
    thetas, reached = [], 0
    ratio = y / x
    for _ in range(400):
        res = propose_test_sample(x, y, p, rng)
        assert res.event == p.event()
        if res.stopped_at is None:
            reached += 1
            assert res.n_W >= res.n_min
            if np.all(np.abs(ratio - res.m_check) <= res.n2 ** p.rho2):   # W = D
                thetas.append(res.theta)
    assert reached >= 360 and len(thetas) >= 300
    thetas = np.array(thetas)
    # given W = D the draw is independent of the noisy tests: theta ~ p(theta | D)
    se = math.sqrt(float(var) / thetas.size)
    assert abs(thetas.mean() - float(mean)) <= 5 * se
    assert abs(thetas.var() - float(var)) <= 5 * float(var) * math.sqrt(2.0 / thetas.size)


def test_n_min_is_the_smallest_n_meeting_claim_d29():
    p = PtsParams(**PARAMS)
    nm = n_min(p, 30.0, 100, 95.0)
    kw = dict(alpha=1.0, beta=3.0, x_h=1.0, x_l=0.5, c=30.0, gamma1=0.1)
    assert all(claim_d29_conditions(int(nm), 20.0, 0.01, **kw).values())
    assert not all(claim_d29_conditions(int(nm) - 1, 20.0, 0.01, **kw).values())
    assert nm > 100 ** 0.5
    assert n_min(p, 1.0, 10 ** 6, 10 ** 6) == pytest.approx(1000.0)   # the domain condition dominates
    assert n_min(p, -1.0, 6000, 5990.0) == math.inf


def test_too_few_records_return_null_but_still_charge():
    rng = np.random.default_rng(2)
    x, y = _data(30, rng, c=30.0)
    p = PtsParams(**PARAMS)
    res = propose_test_sample(x, y, p, rng)
    assert res.theta is None and res.stopped_at == "n_W < n_min"
    g = accountant.epsilon(res.event, 2 * 0.01)
    assert g.epsilon == pytest.approx(100.0) and res.to_dict()["event"]["epsilon"] == 100.0
    tiny = propose_test_sample(x[:1], y[:1], p, rng)
    assert tiny.stopped_at == "n2 <= 1"


def test_outliers_are_filtered_out_of_W():
    rng = np.random.default_rng(5)
    x, y = _data(6000, rng)
    y[:20] = 1e6       # ratios far above n1~^rho1 are dropped from V, then outside the window of W
    sel = pts_select(x, y, PtsParams(**PARAMS), rng)
    assert sel.stopped_at is None
    assert not np.isin(np.arange(20), sel.W).any() and sel.W.shape[0] == 5980


def test_parameter_errors_before_any_noise():
    with pytest.raises(InvalidParameterError, match="beta"):
        PtsParams(**{**PARAMS, "beta": 1.0})
    with pytest.raises(InvalidParameterError, match="gamma1"):
        PtsParams(**{**PARAMS, "gamma1": 0.05})
    with pytest.raises(InvalidParameterError, match="delta"):
        PtsParams(**{**PARAMS, "delta": 0.5})
    with pytest.raises(InvalidParameterError, match="rho1"):
        PtsParams(**{**PARAMS, "rho1": 1.6})
    p = PtsParams(**PARAMS)
    with pytest.raises(InvalidParameterError, match="y"):
        propose_test_sample([1.0, 1.0], [1.0], p, np.random.default_rng(0))
    with pytest.raises(InvalidParameterError, match="rng"):
        propose_test_sample([1.0], [1.0], p, 0)
