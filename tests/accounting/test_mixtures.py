"""Divergences between a Gaussian and a Gaussian mixture (privgp.accounting.mixtures).

Closed forms where they exist (one component: the Gil et al. Renyi formula, the Gaussian/GDP
profile), independent mpmath references for mixtures (tests/data/sgld_reference.json, written by
scripts/generate_sgld_reference.py), and laws: joint convexity, the Chernoff bound above the exact
tail, a single distinguishing event never beating the exact profile.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.accounting.divergences import renyi_gaussian_1d
from privgp.accounting.gaussian import gdp_delta, gdp_epsilon
from privgp.accounting.mixtures import (
    Mixture1D,
    PairTable,
    chernoff_tail_bound,
    hockey_stick_delta,
    hockey_stick_epsilon,
    log_tail_probability,
    renyi_divergence,
)
from privgp.accounting.mixtures import test_epsilon_lower_bound as event_bound
from privgp.audit.samplers.sgld_model import CyclicSGLD
from privgp.errors import InvalidParameterError

REF = json.loads((Path(__file__).resolve().parents[1] / "data" / "sgld_reference.json").read_text())

means = st.floats(-3, 3)
sds = st.floats(0.2, 3.0)


@given(means, sds, means, sds, st.floats(1.05, 8.0))
def test_one_component_equals_closed_form(m1, s1, m2, s2, nu):
    P, Q = Mixture1D.gaussian(m1, s1), Mixture1D.gaussian(m2, s2)
    exact = float(renyi_gaussian_1d(nu, m1, s1, m2, s2))
    got = renyi_divergence(nu, P, Q)
    if math.isinf(exact):
        assert math.isinf(got)
    else:
        assert got == pytest.approx(exact, rel=1e-7, abs=1e-12)


@given(st.floats(0.05, 4.0), st.floats(1e-6, 0.3), st.floats(0.0, 4.0))
def test_equal_variances_give_the_gaussian_profile(mu, delta, eps):
    P, Q = Mixture1D.gaussian(0.0, 1.0), Mixture1D.gaussian(mu, 1.0)
    assert hockey_stick_delta(eps, P, Q) == pytest.approx(float(gdp_delta(mu, eps)), rel=1e-8, abs=1e-15)
    assert hockey_stick_epsilon(delta, P, Q) == pytest.approx(float(gdp_epsilon(mu, delta)), rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("row", REF["small"]["divergences"], ids=lambda r: f"K{r['K']}-nu{r['nu']}")
def test_renyi_against_mpmath_small_case(row):
    law = CyclicSGLD(5, 1.0, 4.0, 1.0, 3.0).law(5 * row["K"])
    G, M = law.gaussian(), law.mixture()
    table = PairTable.build(G, M, orders=(row["nu"],))
    for direction, key in (("PQ", "D12"), ("QP", "D21")):
        got = table.renyi(row["nu"], direction)
        if row[key] == "inf":
            assert math.isinf(got)
        else:
            assert got == pytest.approx(float(row[key]), rel=1e-9)


@pytest.mark.parametrize("row", REF["small"]["hockey"], ids=lambda r: f"K{r['K']}-eps{r['eps']}")
def test_hockey_stick_against_mpmath_small_case(row):
    law = CyclicSGLD(5, 1.0, 4.0, 1.0, 3.0).law(5 * row["K"])
    G, M = law.gaussian(), law.mixture()
    assert hockey_stick_delta(row["eps"], G, M) == pytest.approx(float(row["d12"]), rel=1e-9, abs=1e-15)
    assert hockey_stick_delta(row["eps"], M, G) == pytest.approx(float(row["d21"]), rel=1e-9, abs=1e-15)
    d = float(row["d21"])
    if d > 1e-12 and row["eps"] > 0:   # the inverse recovers eps
        assert hockey_stick_epsilon(d, M, G) == pytest.approx(row["eps"], rel=1e-7)


@st.composite
def mixtures(draw, k_max=4):
    k = draw(st.integers(1, k_max))
    m = np.array([draw(means) for _ in range(k)])
    s = np.array([draw(sds) for _ in range(k)])
    return m, s


@settings(max_examples=30)
@given(mixtures(), means, sds, st.floats(1.1, 4.0))
def test_joint_convexity_bound(mix, m0, s0, nu):
    """exp((nu-1) D_nu) is convex in the first argument: D(mix || G) <= log(mean_r e^((nu-1) D(comp_r || G)))/(nu-1)."""
    m, s = mix
    G = Mixture1D.gaussian(m0, s0)
    comps = renyi_gaussian_1d(nu, m, s, m0, s0)
    got = renyi_divergence(nu, Mixture1D(m, s), G)
    if np.isinf(comps).any():
        assert math.isinf(got)
        return
    bound = math.log(np.mean(np.exp((nu - 1) * comps))) / (nu - 1)
    assert got <= bound * (1 + 1e-8) + 1e-12


@settings(max_examples=40)
@given(st.lists(st.floats(0.0, 4.0), min_size=1, max_size=6), st.floats(0.3, 2.0))
def test_chernoff_bound_above_exact_tail(gaps, sd):
    gaps = np.array(gaps)
    sd_arr = np.full(gaps.shape, sd)
    exact = math.exp(log_tail_probability(0.0, -gaps, sd_arr))
    assert chernoff_tail_bound(gaps, sd_arr) >= exact * (1 - 1e-12)


@settings(max_examples=25)
@given(mixtures(3), means, sds, st.floats(1e-4, 0.2), st.floats(-2, 2))
def test_one_event_never_beats_the_exact_profile(mix, m0, s0, delta, thr):
    """log((P(S) - delta)/Q(S)) <= eps(delta) of the pair, for S = {x > thr} (definition of (eps, delta)-DP)."""
    m, s = mix
    P, Q = Mixture1D.gaussian(m0, s0), Mixture1D(m, s)
    lb = float(event_bound(P.sf(thr), Q.sf(thr), delta))
    eps = hockey_stick_epsilon(delta, P, Q)
    assert lb <= eps + 1e-7


def test_mixture_basics_and_errors():
    M = Mixture1D([0.0, 2.0], [1.0, 0.5], weights=[3.0, 1.0])
    assert M.mean() == pytest.approx(0.5)
    assert M.variance() == pytest.approx(0.75 * 1 + 0.25 * 0.25 + 0.75 * 0.25 + 0.25 * 2.25)
    assert float(M.cdf(np.inf)) == 1.0 and float(M.sf(np.inf)) == 0.0
    assert M.interval_probability(-np.inf, np.inf) == pytest.approx(1.0)
    x = np.linspace(-3, 4, 7)
    lp, dlp = M.logpdf_and_dlogpdf(x)
    assert np.allclose(dlp, (M.logpdf(x + 1e-6) - M.logpdf(x - 1e-6)) / 2e-6, rtol=1e-6)
    assert np.exp(M.logpdf(np.array([50.0])))[0] >= 0 and np.isfinite(M.logpdf(np.array([1e3])))[0]
    with pytest.raises(InvalidParameterError, match="sds"):
        Mixture1D([0.0], [0.0])
    with pytest.raises(InvalidParameterError, match="order"):
        renyi_divergence(1.0, M, M)
    with pytest.raises(InvalidParameterError, match="delta"):
        hockey_stick_epsilon(0.0, M, M)
    with pytest.raises(InvalidParameterError, match="P"):
        hockey_stick_delta(0.1, "not a mixture", M)
    T = PairTable.build(M, Mixture1D.gaussian(0, 1), orders=(2.0,))
    with pytest.raises(InvalidParameterError, match="order"):
        T.renyi(3.0, "QP")
