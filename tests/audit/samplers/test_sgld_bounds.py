"""Seed 004's bounds against exact values.

* Lemma 4.2 (posterior RDP, as printed) >= the exact Renyi divergence (Gil et al. form, mpmath) for
  random in-domain neighbouring pairs (hypothesis, corners included) - also through the event class;
* Lemmas A.2, A.4 and eq. (15) against the exact laws at the paper's step (ceil(k.) + 1) n,
  for the Figure-1 parameters and for random settings that satisfy the lemmas' conditions;
* Claims D.29 / Lemma 4.3 sample sizes, Theorem 1's constants (eq. (10) and Claim D.30 hold at n_p).
"""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.accounting import accountant
from privgp.accounting.events import event_from_dict
from privgp.accounting.linear_regression import (
    LinearRegressionPosteriorEvent,
    claim_d29_conditions,
    claim_d30_sample_size,
    lemma42_alpha_max,
    lemma42_epsilon1,
    lemma43_epsilon,
    lemma43_min_n,
)
from privgp.audit.samplers.sgld_bounds import (
    eq15_lower_bound,
    eq16_epsilon_prime,
    kdot,
    lemma_a2_gap_lower_bound,
    lemma_a3_variance_bounds,
    lemma_a4_variance_bounds,
    lemma_a5_conditions,
    paper_step,
    theorem1_constants,
)
from privgp.audit.samplers.sgld_model import CyclicSGLD
from privgp.errors import InvalidParameterError

log_uniform = lambda lo, hi: st.floats(math.log(lo), math.log(hi)).map(math.exp)  # noqa: E731
unit = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 1.0))  # corners of the box often


def exact_posterior_renyi(nu, n, alpha, beta, x_h, x_l, c, gamma1, u):
    """D_nu(p(theta|D) || p(theta|D^)) in mpmath for the pair encoded by u in [0, 1]^6:
    core sum z = sum_{i<n} x_i^2, core weighted ratio q/z, and (x, y/x), (x^, y^/x^) of the differing record."""
    with mp.workdps(40):
        w = n ** gamma1
        rlo, rhi = max(c - w, 1e-12), c + w
        z = (n - 1) * (x_l ** 2 + (x_h ** 2 - x_l ** 2) * u[0])
        qz = rlo + (rhi - rlo) * u[1]
        x, r = x_l + (x_h - x_l) * u[2], rlo + (rhi - rlo) * u[3]
        xh, rh = x_l + (x_h - x_l) * u[4], rlo + (rhi - rlo) * u[5]
        z, qz, x, r, xh, rh, a, b, nu = map(mp.mpf, (z, qz, x, r, xh, rh, alpha, beta, nu))
        A, Ah = a + b * (z + x * x), a + b * (z + xh * xh)
        m1, m2 = b * (z * qz + x * x * r) / A, b * (z * qz + xh * xh * rh) / Ah
        v1, v2 = 1 / A, 1 / Ah
        vs = nu * v2 + (1 - nu) * v1
        if vs <= 0:
            return math.inf
        return float(mp.log(mp.sqrt(v2 / v1)) + mp.log(v2 / vs) / (2 * (nu - 1)) + nu * (m1 - m2) ** 2 / (2 * vs))


@st.composite
def domain_settings(draw):
    x_l = draw(log_uniform(0.1, 3.0))
    x_h = x_l * draw(st.floats(1.0, 3.0))
    beta = draw(log_uniform(0.05, 20.0))
    nu = draw(st.floats(1.01, 20.0))
    n_min = math.ceil(1 + 10.0 * (x_h / x_l) ** 2 * nu) + 1   # Lemma 4.2's corrected condition
    n = n_min + draw(st.integers(0, 10 ** 7))
    return dict(nu=nu, n=n, alpha=draw(log_uniform(0.01, 20.0)), beta=beta, x_h=x_h, x_l=x_l,
                c=draw(log_uniform(0.05, 1e8)), gamma1=draw(st.floats(0.01, 0.49)))


@settings(max_examples=80)
@given(domain_settings(), st.lists(unit, min_size=6, max_size=6))
def test_lemma42_bounds_exact_divergence(p, u):
    bound = float(lemma42_epsilon1(p["nu"], p["n"], p["alpha"], p["beta"], p["x_h"], p["x_l"], p["c"], p["gamma1"]))
    assert math.isfinite(bound)
    exact = exact_posterior_renyi(u=u, **p)
    assert exact <= bound
    ev = LinearRegressionPosteriorEvent(p["n"], p["alpha"], p["beta"], p["x_h"], p["x_l"], p["c"], p["gamma1"])
    assert float(ev.rdp(p["nu"])) == pytest.approx(bound, rel=1e-12)


def test_lemma42_on_the_figure1_pair_and_pinned_values():
    """The worst-case posterior bound of docs/notes/seed004_sgld.md, sec. 3."""
    F = dict(n=1149019, alpha=0.1, beta=1.0, x_h=1.8, x_l=0.9, c=1165165.0, gamma1=0.1)
    nu = 1 + 2 * math.log(100) / 1.6
    assert float(lemma42_epsilon1(nu, **F)) == pytest.approx(6.4278e-3, rel=1e-4)
    assert float(lemma43_epsilon(nu, 0.01, **F)) == pytest.approx(0.8064, abs=1e-4)
    assert float(lemma43_epsilon(10.0, 0.01, **F)) == pytest.approx(0.5213, abs=1e-4)
    ev = LinearRegressionPosteriorEvent(**F)
    g = accountant.epsilon(ev, 0.01, conversion="mironov")
    assert g.epsilon == pytest.approx(0.1403, abs=2e-4) and g.alpha == pytest.approx(63.95, rel=1e-2)
    assert accountant.epsilon(ev, 0.01).epsilon <= g.epsilon        # the improved conversion is never worse
    assert event_from_dict(ev.to_dict()) == ev
    # the D1/D2 pair itself is in the domain: its exact divergence is far below the bound
    exact = exact_posterior_renyi(nu=2.0, u=[1, 0.5, 1, 0.5, 0, 0.5], **F)
    assert exact == pytest.approx(1.5537e-9, rel=2e-3)
    assert ev.rdp(2.0) > 1e3 * exact
    assert ev.rdp(ev.alpha_max * 1.0001) == math.inf


def test_event_and_sample_size_errors():
    with pytest.raises(InvalidParameterError, match="n"):
        LinearRegressionPosteriorEvent(5, 0.1, 1.0, 1.8, 0.9, 10.0, 0.1)
    with pytest.raises(InvalidParameterError, match="gamma1"):
        LinearRegressionPosteriorEvent(10 ** 4, 0.1, 1.0, 1.8, 0.9, 10.0, 0.6)
    with pytest.raises(InvalidParameterError, match="x_l"):
        LinearRegressionPosteriorEvent(10 ** 4, 0.1, 1.0, 0.9, 1.8, 10.0, 0.1)


@pytest.mark.parametrize("eps,delta,c", [(1.6, 0.01, 1165165.0), (0.5, 1e-5, 100.0), (2.0, 0.1, 1e4)])
def test_lemma43_min_n_is_minimal_and_d29_is_sufficient(eps, delta, c):
    kw = dict(alpha=0.1, beta=1.0, x_h=1.8, x_l=0.9, c=c, gamma1=0.1)
    nu = 1 + 2 * math.log(1 / delta) / eps
    n = lemma43_min_n(eps, delta, **kw)
    assert float(lemma43_epsilon(nu, delta, n, **kw)) <= eps < float(lemma43_epsilon(nu, delta, n - 1, **kw))
    # Claim D.29's conditions are sufficient: wherever they all hold, Lemma 4.3 gives eps
    for m in (n, 2 * n, 10 * n, 1000 * n):
        if all(claim_d29_conditions(m, eps, delta, **kw).values()):
            assert float(lemma43_epsilon(nu, delta, m, **kw)) <= eps


# ------------------------------------------------------------------------------------------------
# SGLD lemmas against the exact laws
# ------------------------------------------------------------------------------------------------

def _check_lemmas(s: CyclicSGLD):
    k = math.ceil(kdot(s))
    law = s.law((k + 1) * s.n)
    r = np.arange(1, s.n + 1)
    assert np.all(lemma_a2_gap_lower_bound(s, k) <= law.gaps * (1 + 1e-12))
    assert np.all(law.vars2 <= lemma_a4_variance_bounds(s, r) * (1 + 1e-12))
    assert eq15_lower_bound(s) <= float(np.min(law.gaps ** 2 / law.vars2)) * (1 + 1e-12)
    for kk in range(1, math.floor(kdot(s)) + 1, max(1, math.floor(kdot(s)) // 5)):
        lk = s.law((kk + 1) * s.n)
        assert np.all(lk.vars2 <= lemma_a3_variance_bounds(s, kk, r) * (1 + 1e-12))
    return law


def test_lemmas_at_figure1_parameters_pinned_values():
    """T2 of docs/notes/seed004_sgld.md, sec. 5."""
    s = CyclicSGLD(1149019, 0.1, 1.0, 1.8, 1165165.0)
    assert kdot(s) == pytest.approx(27.24077241, rel=1e-9) and paper_step(s) == 33321551
    law = _check_lemmas(s)
    assert lemma_a2_gap_lower_bound(s, 28) == pytest.approx(8.8261573e-4, rel=1e-7)
    assert law.gaps[0] == pytest.approx(8.8263317e-4, rel=1e-7)
    assert lemma_a4_variance_bounds(s, [1, 2, s.n]) == pytest.approx([6.2590344e-7, 1.0086682e-6, 1.8699539e-6], rel=1e-7)
    assert eq15_lower_bound(s) == pytest.approx(7.7399599e-6, rel=1e-7)
    assert law.indicator() == pytest.approx(1.783838, rel=1e-6)
    assert eq16_epsilon_prime(s, 0.01) < 0   # the figure's parameters make Lemma A.6 vacuous (gamma2 < 1 + gamma1)
    assert all(lemma_a5_conditions(s).values())


def test_lemmas_second_pinned_case():
    """T2's second case (docs/notes/seed004_sgld.md, sec. 5)."""
    s = CyclicSGLD(10 ** 4, 1.0, 4.0, 1.0, (10 ** 4) ** 1.4)
    assert kdot(s) == pytest.approx(20.19360938, rel=1e-9) and paper_step(s) == 220000
    law = _check_lemmas(s)
    assert law.gaps[0] ** 2 / law.vars2[0] == pytest.approx(10822.149, rel=1e-6)
    assert eq16_epsilon_prime(s, 0.01) == pytest.approx(0.04400419526 + math.log(0.49), rel=1e-9)


@settings(max_examples=15)
@given(st.integers(20, 4000), log_uniform(0.05, 5.0), log_uniform(1.0, 10.0), st.floats(3.05, 30.0), log_uniform(1.0, 1e6))
def test_lemmas_hold_for_random_settings(n, alpha, x_h, xb, c):
    beta = xb / x_h ** 2
    s = CyclicSGLD(n, alpha, beta, x_h, c)
    if not all(lemma_a5_conditions(s).values()) or kdot(s) <= 0:
        return
    _check_lemmas(s)


def test_theorem1_constants_deliver_both_halves():
    eps, eps_p, delta = 1.0, 2.0, 0.01
    kw = dict(alpha=1.0, beta=4.0, x_h=1.0, gamma1=0.1, gamma2=1.2)
    T = theorem1_constants(eps, eps_p, delta, **kw)
    assert T.n_p == max(T.n1, T.n2, T.n3, T.n_eps_prime)
    with mp.workdps(50):   # eq. (10): the SGLD half, eps'' >= eps'
        xb = mp.mpf(4)
        epp = mp.exp(-2 / xb) * mp.mpf(1) / (2 * T.v1) * (3 / (32 * xb)) ** 2 * (T.c_p / T.n_p) ** 2 + mp.log(mp.mpf("0.49"))
        assert epp >= eps_p * (1 - 1e-20)
    # the posterior half: Claim D.30's n makes Lemma 4.3 give (eps, delta) with c = n^gamma2 and x_l = x_h / 2
    n = float(T.n_p)
    assert float(lemma43_epsilon(T.nu1, delta, n, 1.0, 4.0, 1.0, 0.5, n ** 1.2, 0.1)) <= eps
    assert claim_d30_sample_size(eps, delta, alpha=1.0, beta=4.0, x_h=1.0, x_l=0.5, gamma1=0.1, gamma2=1.2) <= n
    big = theorem1_constants(eps, eps_p, delta, **{**kw, "gamma2": 1.11})   # overflows float64 in n_p's exponent
    assert big.log10_n_p > T.log10_n_p


def test_theorem1_rejects_out_of_range():
    with pytest.raises(InvalidParameterError, match="gamma2"):
        theorem1_constants(1.0, 1.0, 0.01, alpha=1.0, beta=4.0, x_h=1.0, gamma1=0.1, gamma2=1.05)
    with pytest.raises(InvalidParameterError, match="x_h"):
        theorem1_constants(1.0, 1.0, 0.01, alpha=1.0, beta=2.0, x_h=1.0, gamma1=0.1, gamma2=1.2)
    with pytest.raises(InvalidParameterError, match="delta"):
        theorem1_constants(1.0, 1.0, 0.6, alpha=1.0, beta=4.0, x_h=1.0, gamma1=0.1, gamma2=1.2)


def test_alpha_max_matches_lemma_condition():
    am = float(lemma42_alpha_max(1001, 2.0, 1.0, 0.5))
    assert am == pytest.approx(1000 * 0.25 / 10)      # corrected: n > 1 + 10 nu x_h^2/x_l^2, beta does not enter
    assert float(lemma42_alpha_max(1001, 2.0, 1.0, 0.5, printed=True)) == pytest.approx(1000 * 0.25 * 2.0 / 10)
    assert np.isinf(lemma42_epsilon1(am, 1001, 1.0, 2.0, 1.0, 0.5, 10.0, 0.1))
