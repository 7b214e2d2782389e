"""GDP profile (seed 002, eq. 5), composition, the three Figure-4 multipliers and the seed-002 events,
against independent references: mpmath (scripts/generate_functional_reference.py ->
tests/data/functional_reference.json) and dp_accounting's Gaussian privacy loss."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privgp.accounting import accountant
from privgp.accounting.events import ComposedEvent, GaussianEvent, GdpEvent, event_from_dict, event_from_json
from privgp.accounting.functional_noise import (
    DPSetConvEvent,
    FunctionalEvent,
    dpsetconv_mu,
    dpsetconv_noise_scales,
    gdp_multiplier,
    hall_multiplier,
    rdp_multiplier,
    rdp_optimal_order,
    setconv_sensitivities,
)
from privgp.accounting.gaussian import compose_mu, gdp_delta, gdp_epsilon, gdp_mu, log_gdp_delta
from privgp.errors import InvalidParameterError

REF = json.loads((Path(__file__).resolve().parents[1] / "data" / "functional_reference.json").read_text())


# ---------------------------------------------------------------- GDP profile (eq. 5)
@pytest.mark.parametrize("row", REF["gdp_delta"], ids=lambda r: f"mu={r['mu']}-eps={r['epsilon']}")
def test_gdp_delta_matches_mpmath(row):
    """delta(eps; mu) to 1e-9 relative (in log space where delta underflows a float)."""
    ld = float(log_gdp_delta(row["mu"], row["epsilon"]))
    ref = float(row["log_delta"])
    assert abs(ld - ref) <= 1e-9 * max(1.0, abs(ref))
    d = float(row["delta"])
    if d > 1e-300:
        assert float(gdp_delta(row["mu"], row["epsilon"])) == pytest.approx(d, rel=1e-9)


@pytest.mark.parametrize("row", REF["gdp_mu"], ids=lambda r: f"eps={r['epsilon']:.3g}-delta={r['delta']:g}")
def test_gdp_mu_matches_mpmath_and_is_feasible(row):
    import mpmath as mp

    mu = float(gdp_mu(row["epsilon"], row["delta"]))
    assert mu == pytest.approx(float(row["mu"]), rel=1e-9)
    with mp.workdps(40):
        assert mp.mpf(mu) <= mp.mpf(row["mu"])          # the feasible side of the exact root


def test_gdp_mu_pinned_values():
    """The mu table of docs/notes/seed002_dpconvcnp.md, sec. 6, and its inverse checks."""
    for eps, delta, mu in [(0.9, 1e-3, 0.355527), (1.0, 1e-3, 0.388401), (2.0, 1e-3, 0.691927), (3.0, 1e-3, 0.964086),
                           (4.0, 1e-3, 1.214952), (9.0, 1e-3, 2.276555), (1 / 3, 1e-3, 0.154424),
                           (1 / 3, 1e-5, 0.098021), (1.0, 1e-5, 0.268051)]:
        assert float(gdp_mu(eps, delta)) == pytest.approx(mu, abs=5e-7)
    assert float(gdp_delta(1.0, 1.0)) == pytest.approx(0.126937, abs=5e-7)
    assert float(gdp_delta(0.5, 0.5)) == pytest.approx(0.052440, abs=5e-7)
    assert float(gdp_delta(1.0, 0.0)) == pytest.approx(0.382925, abs=5e-7)
    assert compose_mu([0.3, 0.4]) == pytest.approx(0.5, rel=1e-15)


@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 2.5, 6.0])
@pytest.mark.parametrize("eps", [0.0, 0.2, 1.0, 3.0, 8.0])
def test_gdp_delta_matches_dp_accounting(mu, eps):
    """dp_accounting's GaussianPrivacyLoss (sensitivity 1, std 1/mu) is an independent implementation."""
    from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

    ref = GaussianPrivacyLoss(standard_deviation=1.0 / mu, sensitivity=1.0).get_delta_for_epsilon(eps)
    ours = float(gdp_delta(mu, eps))
    assert ours == pytest.approx(ref, rel=1e-9, abs=1e-15)


@given(st.floats(0.01, 20.0), st.floats(1e-12, 0.5))
def test_mu_round_trip(eps, delta):
    """mu(eps, delta) -> delta(eps; mu) <= delta and close to it; epsilon(mu, delta) <= eps and close."""
    mu = float(gdp_mu(eps, delta))
    d = float(gdp_delta(mu, eps))
    assert d <= delta
    assert d == pytest.approx(delta, rel=1e-9)
    assert float(gdp_epsilon(mu, delta)) == pytest.approx(eps, rel=1e-9, abs=1e-12)


@given(st.floats(0.01, 10.0), st.floats(0.0, 20.0), st.floats(0.0, 5.0))
def test_gdp_delta_monotone(mu, eps, de):
    """delta decreases in epsilon and increases in mu."""
    assert float(gdp_delta(mu, eps + de)) <= float(gdp_delta(mu, eps)) + 1e-300
    assert float(gdp_delta(mu * 1.1, eps)) >= float(gdp_delta(mu, eps))


@given(st.lists(st.floats(0.0, 3.0), min_size=1, max_size=6))
def test_gdp_events_compose_exactly(mus):
    ev = ComposedEvent.of([GdpEvent(m) for m in mus])
    assert ev.gdp_mu() == pytest.approx(math.hypot(*mus), rel=1e-12, abs=1e-300)   # hypot: no underflow of m^2
    a = np.array([1.5, 4.0, 32.0])
    # atol: below 1e-300 the values are subnormal (mu ~ 4e-162 gives 1e-323), where only absolute precision is left
    assert np.allclose(ev.rdp(a), a * sum(m * m for m in mus) / 2, rtol=1e-12, atol=1e-300)


def test_gdp_event_json_and_rdp():
    ev = GdpEvent(0.7)
    assert event_from_json(ev.to_json()) == ev
    assert float(ev.rdp(3.0)) == pytest.approx(3.0 * 0.49 / 2)
    g = accountant.epsilon(ev, 1e-5)
    assert g.method == "exact-gdp" and float(gdp_delta(0.7, g.epsilon)) <= 1e-5


# ---------------------------------------------------------------- Figure 4 multipliers
@pytest.mark.parametrize("row", REF["figure4"], ids=lambda r: f"eps={r['epsilon']}")
def test_figure4_multipliers_match_mpmath(row):
    D, eps, delta = math.sqrt(row["Delta2"]), row["epsilon"], row["delta"]
    assert rdp_multiplier(D, eps, delta) == pytest.approx(float(row["rdp"]), rel=1e-9)
    assert gdp_multiplier(D, eps, delta) == pytest.approx(float(row["gdp"]), rel=1e-9)
    if "hall" in row:
        assert hall_multiplier(D, eps, delta) == pytest.approx(float(row["hall"]), rel=1e-12)
    else:
        with pytest.raises(InvalidParameterError, match="epsilon"):
            hall_multiplier(D, eps, delta)


def test_figure4_table():
    """Figure 4's multipliers as in docs/notes/seed002_dpconvcnp.md, sec. 6."""
    D = math.sqrt(10.0)
    table = {0.1: (123.2956, 117.9633, 55.0375), 0.5: (24.6591, 23.9258, 14.5785), 1.0: (12.3296, 12.1650, 8.1418),
             2.0: (None, 6.2754, 4.5702), 3.0: (None, 4.3051, 3.2801), 4.0: (None, 3.3155, 2.6028)}
    for eps, (h, r, g) in table.items():
        if h is not None:
            assert hall_multiplier(D, eps, 1e-3) == pytest.approx(h, abs=1e-4)
        assert rdp_multiplier(D, eps, 1e-3) == pytest.approx(r, abs=1e-4)
        assert gdp_multiplier(D, eps, 1e-3) == pytest.approx(g, abs=1e-4)


@pytest.mark.parametrize("eps", [1.0 + 1e-12, 1.5, 10.0])
def test_hall_refuses_epsilon_above_one(eps):
    with pytest.raises(InvalidParameterError, match="epsilon must be <= 1"):
        hall_multiplier(1.0, eps, 1e-3)
    with pytest.raises(InvalidParameterError):
        hall_multiplier(1.0, np.array([0.5, eps]), 1e-3)


def rdp_epsilon(D, sigma, delta, alpha):
    """eq. 38 / 41: the Gaussian mechanism's RDP curve alpha D^2 / (2 sigma^2) through Mironov's conversion,
    at the given order(s): the accountant at a fixed alpha."""
    return accountant.epsilon(GaussianEvent(D, sigma), delta, alpha=alpha, conversion="mironov").epsilon


@given(st.floats(0.05, 20.0), st.floats(1e-10, 0.1), st.floats(0.1, 10.0))
def test_rdp_closed_form_is_the_best_order(eps, delta, D):
    """Plugging alpha* (eq. 39) into eq. 38 recovers epsilon; no other order does better."""
    sigma = rdp_multiplier(D, eps, delta)
    a_star = rdp_optimal_order(D, sigma, delta)
    assert rdp_epsilon(D, sigma, delta, a_star) == pytest.approx(eps, rel=1e-9)
    others = a_star * np.array([0.5, 0.9, 1.1, 2.0])
    others = others[others > 1]
    assert np.all(rdp_epsilon(D, sigma, delta, others) >= eps * (1 - 1e-12))


@given(st.floats(0.01, 1.0), st.floats(1e-10, 0.1))
def test_gdp_never_above_the_others(eps, delta):
    """GDP is the exact profile of the Gaussian mechanism: its multiplier is the smallest."""
    g = gdp_multiplier(1.0, eps, delta)
    assert g <= rdp_multiplier(1.0, eps, delta)
    assert g <= hall_multiplier(1.0, eps, delta)


def test_multipliers_bad_input():
    for fn in (hall_multiplier, rdp_multiplier, gdp_multiplier):
        with pytest.raises(InvalidParameterError, match="sensitivity"):
            fn(0.0, 0.5, 1e-3)
        with pytest.raises(InvalidParameterError, match="epsilon"):
            fn(1.0, -0.5, 1e-3)
        with pytest.raises(InvalidParameterError, match="epsilon"):
            fn(1.0, math.nan, 1e-3)
        for d in (0.0, 1.0, -1e-3, math.nan):
            with pytest.raises(InvalidParameterError, match="delta"):
                fn(1.0, 0.5, d)


# ---------------------------------------------------------------- DPSetConv accounting
@pytest.mark.parametrize("row", REF["noise_scales"], ids=lambda r: f"eps={r['epsilon']}-C={r['C']}-t={r['t']}")
def test_noise_scales_match_mpmath(row):
    mu = float(gdp_mu(row["epsilon"], row["delta"]))
    s_s, s_d = dpsetconv_noise_scales(mu, row["C"], row["t"])
    assert s_s == pytest.approx(float(row["sigma_s"]), rel=1e-9)
    assert s_d == pytest.approx(float(row["sigma_d"]), rel=1e-9)


def test_noise_scales_pinned_values():
    """docs/notes/seed002_dpconvcnp.md, sec. 6 (paper eq. 12, C = 2, t = 0.5, delta = 1e-3)."""
    assert dpsetconv_noise_scales(float(gdp_mu(1.0, 1e-3)), 2.0, 0.5) == pytest.approx((14.564459, 5.149314), abs=1e-6)
    assert dpsetconv_noise_scales(float(gdp_mu(3.0, 1e-3)), 2.0, 0.5) == pytest.approx((5.867582, 2.074503), abs=1e-6)


@given(st.floats(0.01, 10.0), st.floats(0.01, 20.0), st.floats(0.001, 0.999))
def test_noise_scales_invariant(mu, C, t):
    s_s, s_d = dpsetconv_noise_scales(mu, C, t)
    assert 4 * C * C / s_s**2 + 2 / s_d**2 == pytest.approx(mu * mu, rel=1e-12)
    assert dpsetconv_mu(C, s_s, s_d) == pytest.approx(mu, rel=1e-12)
    assert setconv_sensitivities(C) == pytest.approx((math.sqrt(2), 2 * C))


@pytest.mark.parametrize("kw,name", [(dict(mu=1, clip=0, t=0.5), "clip"), (dict(mu=1, clip=-1, t=0.5), "clip"),
                                     (dict(mu=1, clip=math.inf, t=0.5), "clip"), (dict(mu=1, clip=1, t=0.0), "t"),
                                     (dict(mu=1, clip=1, t=1.0), "t"), (dict(mu=1, clip=1, t=1.5), "t"),
                                     (dict(mu=0, clip=1, t=0.5), "mu")])
def test_noise_scales_bad_input(kw, name):
    with pytest.raises(InvalidParameterError, match=f"^{name} must"):
        dpsetconv_noise_scales(**kw)


def test_events_round_trip_and_account():
    mu = float(gdp_mu(1.0, 1e-3))
    s_s, s_d = dpsetconv_noise_scales(mu, 2.0, 0.5)
    ev = DPSetConvEvent(2.0, s_s, s_d)
    assert event_from_dict(ev.to_dict()) == ev and event_from_json(ev.to_json()) == ev
    assert ev.gdp_mu() == pytest.approx(mu, rel=1e-12)
    g = accountant.epsilon(ev, 1e-3)
    assert g.method == "exact-gdp" and g.epsilon <= 1.0 + 1e-9 and g.epsilon == pytest.approx(1.0, rel=1e-8)
    # k releases on the same data compose to sqrt(k) mu
    assert ev.times(4).gdp_mu() == pytest.approx(2 * mu, rel=1e-12)
    fe = FunctionalEvent(math.sqrt(10), gdp_multiplier(math.sqrt(10), 2.0, 1e-3))
    assert isinstance(event_from_dict(fe.to_dict()), FunctionalEvent)
    assert fe.multiplier == fe.noise_std and fe.gdp_mu() == pytest.approx(float(gdp_mu(2.0, 1e-3)), rel=1e-12)
    both = ComposedEvent.of([ev, fe])
    assert both.gdp_mu() == pytest.approx(math.hypot(ev.mu, fe.mu), rel=1e-12)
    assert accountant.epsilon(both, 1e-3).method == "exact-gdp"
    with pytest.raises(InvalidParameterError, match="clip"):
        DPSetConvEvent(0.0, 1.0, 1.0)


def _exact_delta(mu, eps):
    import mpmath as mp

    with mp.workdps(80):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        return mp.ncdf(-eps / mu + mu / 2) - mp.e**eps * mp.ncdf(-eps / mu - mu / 2)


@given(st.floats(1e-3, 30.0), st.floats(1e-15, 0.5))
def test_gdp_mu_and_epsilon_feasible_in_exact_arithmetic(eps, delta):
    """The returned mu (and epsilon) are on the feasible side of the *exact* root, not just of the
    rounded float evaluation (mpmath at 80 digits)."""
    mu = float(gdp_mu(eps, delta))
    assert _exact_delta(mu, eps) <= delta
    e = float(gdp_epsilon(mu, delta))
    assert _exact_delta(mu, e) <= delta
    assert e <= eps * (1 + 1e-9) + 1e-12
