"""Privacy accounting at numeric edges (audit of the overflow, rounding and underflow paths): every
certified number is an upper bound on the exact value (mpmath, 50+ digits), never 0 or NaN from an
over- or underflow; out of range is an error naming the parameter."""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.accounting import GaussianEvent, GdpEvent, PosteriorSampleEvent, PureDpEvent, delta, epsilon
from privgp.accounting.composed_batch import ComposedBatch
from privgp.accounting.events import EventBatch, gaussian_batch
from privgp.accounting.gaussian import gdp_epsilon
from privgp.accounting.sensitivity import phi_n, sqrt_phi_n, v_bar
from privgp.errors import InvalidParameterError, NumericalError

mp.mp.dps = 60


def gdp_delta_ref(mu, eps):
    """Balle & Wang 2018, Thm 8: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), in mpmath."""
    m, e = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2)


def rr_epsilon_ref(eps0, dl):
    """Exact epsilon(delta) of randomized response with odds e^eps0 (Kairouz, Oh & Viswanath 2015)."""
    e, d = mp.mpf(eps0), mp.mpf(dl)
    v = 1 - d * (1 + mp.exp(-e))
    return max(mp.mpf(0), e + mp.log(v)) if v > 0 else mp.mpf(0)


# -- 1. Delta_n of Lemmas B.1 / B.7 without overflow; V_n of Prop. 3 without cancellation ---------------

def test_phi_overflow_no_longer_certifies_epsilon_zero():
    ev = PosteriorSampleEvent(n=2, r=1e80, sigma=1.0, M_Y=1e160)
    ref = 2 * mp.mpf(1e160) * (1 + 1 / mp.mpf(1e80)) * mp.sqrt(ev.V) / (ev.V + mp.mpf(1e80) ** 2)  # Lemma B.1
    assert ev.Delta == pytest.approx(float(ref), rel=1e-14)
    # the mean term alone is a 2-GDP release: no valid bound is below its exact epsilon
    assert epsilon(ev, 1e-6).epsilon >= float(gdp_epsilon(ev.Delta, 1e-6))


@settings(max_examples=200, deadline=None)
@given(st.floats(-3, 150), st.floats(-12, 0), st.sampled_from([1, 2, 10, 1000]))
def test_sqrt_phi_n_matches_mpmath_and_is_positive(log_r, log_kappa, n):
    r, kappa = 10.0 ** log_r, 10.0 ** log_kappa
    V = float(v_bar(n, r, kappa))
    R, W = mp.mpf(r), mp.mpf(V)
    ref = 1 / (2 * R) if W >= R * R else mp.sqrt(W) / (W + R * R)   # sqrt of Lemma B.1's Phi_n
    got = float(sqrt_phi_n(V, r))
    assert got > 0 and abs(got - ref) <= 1e-14 * ref
    if float(ref) ** 2 > 1e-300:
        assert abs(float(phi_n(V, r)) - ref ** 2) <= 1e-14 * ref ** 2


@pytest.mark.parametrize("r", [1e-9, 1e-5, 1e-3])
def test_v_bar_without_cancellation(r):
    # kappa = 1: V = 1 - (n-1)/(n-1+r^2) = r^2/(n-1+r^2) (Prop. 3); 1 - (...) gave 0 at r = 1e-9
    ref = mp.mpf(r) ** 2 / (1 + mp.mpf(r) ** 2)
    assert float(v_bar(2, r, 1.0)) == pytest.approx(float(ref), rel=1e-14)
    ev = PosteriorSampleEvent(n=2, r=r, sigma=1.0, kappa=1.0)
    assert ev.Delta > 0 and ev.tau > 0.5 and epsilon(ev, 1e-6).epsilon > 1.0


def test_out_of_range_r_and_sigma_are_errors_not_zero():
    with pytest.raises(InvalidParameterError, match="r "):
        PosteriorSampleEvent(n=2, r=1e160, sigma=1.0, M_Y=1e300)
    with pytest.raises(NumericalError, match="Delta_n"):  # r^3 overflows in Lemma B.4's bound
        PosteriorSampleEvent(n=2, r=1e110, sigma=1.0, M_Y=1e200, kappa=1.0, kernel="constant", sensitivity="constant")
    with pytest.raises(InvalidParameterError, match="sigma"):
        PosteriorSampleEvent(n=2, r=1.0, sigma=1e-160)


def test_mean_coefficient_does_not_underflow_to_zero():
    ev = PosteriorSampleEvent(n=2, r=1e100, sigma=1.0)   # Delta ~ 2e-200: Delta^2 underflows
    m = ev._params()["m"]
    ref = mp.mpf(0.5) * (ev.V + mp.mpf(1e100) ** 2) * mp.mpf(ev.Delta) ** 2   # m = (V + r^2) Delta^2 / (2 sigma^2)
    assert m == pytest.approx(float(ref), rel=1e-13)


# -- 2. delta() of the exact Gaussian profile is an upper bound; the profile composition meets its delta ---

@settings(max_examples=150, deadline=None)
@given(st.floats(-4, 1.5), st.floats(0, 1), st.floats(0.0, 20.0))
def test_gdp_delta_is_an_upper_bound(log_mu, t, scale):
    mu = 10.0 ** log_mu
    eps = t * scale * mu * (mu + 6.0)         # from 0 to far in the tail
    got = delta(GdpEvent(mu), eps).delta
    ref = gdp_delta_ref(mu, eps)
    assert got >= ref
    assert got > 0
    if ref > 1e-300:
        assert got <= ref * (1 + 1e-6) + 5e-324


def test_gdp_delta_audit_cases():
    mu, eps = 0.0012618606802686496, 0.007170406427785195
    assert delta(GdpEvent(mu), eps).delta >= gdp_delta_ref(mu, eps)
    assert delta(GdpEvent(1e-4), 0.01).delta > 0      # the exact delta (~1e-2174) underflows
    assert delta(GdpEvent(0.0), 0.01).delta == 0.0     # mu = 0: delta is 0 exactly


def _profile_delta_ref(mu, pe, eps):
    """delta of mu-GDP composed with randomized response of odds e^pe (the profile composition)."""
    p = mp.exp(mp.mpf(pe)) / (1 + mp.exp(mp.mpf(pe)))
    return p * gdp_delta_ref(mu, mp.mpf(eps) - pe) + (1 - p) * gdp_delta_ref(mu, mp.mpf(eps) + pe)


@settings(max_examples=25, deadline=None)
@given(st.floats(-3.2, -2.2), st.floats(-4, -2.5), st.floats(-14, -8))
def test_profile_epsilon_meets_its_delta(log_mu, log_pe, log_d):
    mu, pe, dl = 10.0 ** log_mu, 10.0 ** log_pe, 10.0 ** log_d
    g = epsilon(GdpEvent(mu) + PureDpEvent(pe), dl)
    if g.method == "profile" and g.epsilon > pe:
        assert _profile_delta_ref(mu, pe, g.epsilon) <= dl


def test_profile_epsilon_audit_case():
    mu, pe, dl = 0.0009966006084723388, 0.00035050193978308536, 1.192438982817108e-13
    g = epsilon(GdpEvent(mu) + PureDpEvent(pe), dl)
    assert g.method == "profile"
    assert _profile_delta_ref(mu, pe, g.epsilon) <= dl


# -- 3. a pure epsilon-DP event: exactly randomized response's epsilon, rounded up ---------------------

@settings(max_examples=300, deadline=None)
@given(st.floats(-8, 100), st.floats(-300, -1e-3))
def test_pure_epsilon_is_exact_rounded_up(log_eps, log_d):
    e0, dl = 10.0 ** log_eps, 10.0 ** log_d
    got = epsilon(PureDpEvent(e0), dl).epsilon
    ref = rr_epsilon_ref(e0, dl)
    assert ref <= got <= e0
    # tight too: above the exact value by at most the rounding margin (a few ulp of the log1p term, which cancels
    # against e0 when delta is large: 4e-15 at e0 = 1, delta = 0.42)
    assert got <= ref + 1e-14 * max(ref, 1e-300) + 1e-300 or got - ref <= 1e-13 * max(e0, 1.0)


@pytest.mark.parametrize("e0", [1e4, 1e15, 1e20, 1e300])
def test_pure_epsilon_huge(e0):
    got = epsilon(PureDpEvent(e0), 1e-6).epsilon
    assert rr_epsilon_ref(e0, 1e-6) <= got <= e0


def test_pure_rdp_curve_large_branch_near_one():
    # alpha - 1 ~ 1e-10 at eps = 1e20: alpha eps - eps cancelled (7e-7 relative, below the exact value)
    e0, a = 1e20, 1.0 + 1.2345e-10
    E, A = mp.mpf(e0), mp.mpf(a)
    ref = (mp.log(mp.exp(A * E) + mp.exp((1 - A) * E)) - mp.log(1 + mp.exp(E))) / (A - 1)
    assert float(PureDpEvent(e0).rdp(a)) == pytest.approx(float(ref), rel=1e-15)


def test_pure_batch_uses_exact_value():
    b = EventBatch.from_events([PureDpEvent(5.0), PureDpEvent(1.0)])
    got = epsilon(b, 1e-6).epsilon
    assert got[0] >= rr_epsilon_ref(5.0, 1e-6) and got[1] >= rr_epsilon_ref(1.0, 1e-6)
    assert got[0] == epsilon(PureDpEvent(5.0), 1e-6).epsilon


# -- 4. a ComposedBatch of Gaussian components ---------------------------------------------------------

def test_composed_batch_of_gaussians():
    cb = ComposedBatch.of(gaussian_batch(1.0, np.array([1.0, 2.0])))
    g = epsilon(cb, 1e-5)
    assert g.method == "exact-gdp"
    assert g.epsilon[0] == epsilon(GaussianEvent(1.0, 1.0) + GaussianEvent(1.0, 2.0), 1e-5).epsilon
    prefixes = ComposedBatch.of(gaussian_batch(1.0, np.array([1.0, 2.0])), np.tril(np.ones((2, 2))))
    e = epsilon(prefixes, 1e-5).epsilon
    assert e[0] == epsilon(GaussianEvent(1.0, 1.0), 1e-5).epsilon and e[1] == g.epsilon[0]


# -- 5. tiny mu / sigma ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mu", [1e-300, 5e-324, 1e-160])
def test_tiny_mu(mu):
    assert epsilon(GdpEvent(mu), 1e-6).epsilon == 0.0          # delta(0) ~ 0.4 mu <= 1e-6
    d0 = delta(GdpEvent(mu), 0.0).delta
    assert d0 >= mp.erf(mp.mpf(mu) / (2 * mp.sqrt(2))) and d0 > 0   # delta(0) = 2 Phi(mu/2) - 1
    assert 0 < delta(GdpEvent(mu), 1.0).delta <= 5e-324



@pytest.mark.parametrize("r", [1e10, 1e40, 1e80])
def test_the_order_search_reaches_orders_near_one_for_huge_alpha_max(r):
    """The certificate depends on M_Y / r^2 (and n, sigma) only: at r = 1e10 (alpha_max ~ 1e20) the search could not
    reach orders below 1 + 1e-16 (alpha_max - 1) and certified 11104 where r = 1e7 gives 11.69 (audit F6)."""
    ref = epsilon(PosteriorSampleEvent(n=2, r=1e7, sigma=1.0, M_Y=1e14), 1e-6).epsilon
    got = epsilon(PosteriorSampleEvent(n=2, r=r, sigma=1.0, M_Y=r * r), 1e-6).epsilon
    assert got == pytest.approx(ref, rel=1e-6)


def test_a_positive_delta_is_never_reported_as_zero_where_the_conversion_underflows():
    """Red-team audit (2026-11-26): exp(log delta) underflowed to 0 in delta()'s Renyi path -- a claim of pure
    (eps, 0)-DP for a Gaussian part (exact delta 4e-2091 > 0) -- and composing mu = 1e-170 twice squared it to 0."""
    from privgp.accounting import GdpEvent, PureDpEvent, ZcdpEvent, delta
    from privgp.accounting.gaussian import compose_mu

    for ev in (GdpEvent(0.05) + PureDpEvent(0.1), ZcdpEvent(0.005)):
        for rule in ("profile", "basic"):
            assert delta(ev, 5.0, composition=rule).delta > 0.0, (ev, rule)
    twice = GdpEvent(1e-170).times(2)
    assert twice.gdp_mu() == pytest.approx(math.sqrt(2.0) * 1e-170, rel=1e-15)
    assert delta(twice, 0.0).delta > delta(GdpEvent(1e-170), 0.0).delta > 0.0
    assert compose_mu([3.0, 4.0]) == 5.0 and compose_mu([1e200, 1e200]) == pytest.approx(math.sqrt(2.0) * 1e200)
