"""Privacy events and the accountant: pinned references, laws, JSON, and dp_accounting as an
independent reference (Google's accountant: RDP, PLD and exact Gaussian calibration)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld, rdp
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.accounting import (
    ApproxDpEvent,
    ComposedEvent,
    EventBatch,
    GaussianEvent,
    GdpEvent,
    PosteriorSampleEvent,
    PrivacyEvent,
    PureDpEvent,
    TabulatedRdpEvent,
    ZcdpEvent,
    calibrate,
    delta,
    epsilon,
    event_from_dict,
    event_from_json,
    gaussian_noise_std,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
)
from privgp.accounting.events import gaussian_batch
from privgp.errors import InfeasibleTargetError, InvalidParameterError

REF = json.loads((Path(__file__).resolve().parents[1] / "data" / "event_reference.json").read_text())
log_uniform = lambda lo, hi: st.floats(math.log(lo), math.log(hi)).map(math.exp)  # noqa: E731


# -- pinned references (scripts/generate_event_reference.py: numerical integration at 40 digits) ------

@pytest.mark.parametrize("case", REF["gaussian_rdp"], ids=lambda c: f"mu{c['mu']}-a{c['alpha']}")
def test_gaussian_and_gdp_rdp_equal_the_integrated_renyi_divergence(case):
    ref = float(case["rdp"])
    assert GdpEvent(case["mu"]).rdp(case["alpha"]) == pytest.approx(ref, rel=1e-13)
    assert GaussianEvent(case["mu"] * 3.0, 3.0).rdp(case["alpha"]) == pytest.approx(ref, rel=1e-13)
    assert ZcdpEvent(case["mu"] ** 2 / 2).rdp(case["alpha"]) == pytest.approx(ref, rel=1e-13)


@pytest.mark.parametrize("case", REF["gdp_profile"], ids=lambda c: f"mu{c['mu']}-e{c['epsilon']}")
def test_gdp_delta_equals_the_integrated_hockey_stick(case):
    ref = float(case["delta"])
    got = float(gdp_delta(case["mu"], case["epsilon"]))
    assert got == pytest.approx(ref, rel=1e-9, abs=1e-300)
    assert delta(GdpEvent(case["mu"]), case["epsilon"]).delta == pytest.approx(ref, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("case", REF["gdp_epsilon_for_delta"], ids=lambda c: f"mu{c['mu']}-d{c['delta']}")
def test_exact_epsilon_of_a_gaussian_release(case):
    ref = float(case["epsilon"])
    g = epsilon(GaussianEvent(1.0, 1.0 / case["mu"]), case["delta"])
    assert g.method == "exact-gdp"
    assert ref <= g.epsilon <= ref * (1 + 1e-11) + 1e-15  # the feasible side of the bisection, to 1e-11
    assert gdp_delta(case["mu"], g.epsilon) <= case["delta"]
    # the RDP conversion is a valid but looser bound: never below the exact epsilon
    for conv in ("improved", "mironov"):
        assert epsilon(GdpEvent(case["mu"]), case["delta"], exact=False, conversion=conv).epsilon >= ref


@pytest.mark.parametrize("case", REF["randomized_response_rdp"], ids=lambda c: f"e{c['epsilon']}-a{c['alpha']}")
def test_pure_dp_curve_dominates_randomized_response(case):
    assert PureDpEvent(case["epsilon"]).rdp(case["alpha"]) >= float(case["rdp"]) * (1 - 1e-12)


# -- dp_accounting as an independent implementation -------------------------------------------------

@pytest.mark.parametrize("noise", [0.7, 2.0, 8.0])
@pytest.mark.parametrize("count", [1, 10])
@pytest.mark.parametrize("target_delta", [1e-3, 1e-7])
def test_against_dp_accounting(noise, count, target_delta):
    ev = GaussianEvent(1.0, noise).times(count)
    ours_exact = epsilon(ev, target_delta)
    ours_rdp = epsilon(ev, target_delta, exact=False)
    acc = rdp.RdpAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(noise), count)
    theirs_rdp = acc.get_epsilon(target_delta)
    acc = pld.PLDAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(noise), count)
    theirs_pld = acc.get_epsilon(target_delta)
    # RDP: our continuous search over alpha never does worse than their grid of orders, and agrees closely
    assert ours_rdp.epsilon <= theirs_rdp * (1 + 1e-9)
    assert ours_rdp.epsilon >= theirs_rdp * (1 - 2e-2)
    # exact profile vs their pessimistic PLD discretisation: ours is exact, theirs an upper bound close to it
    assert ours_exact.epsilon <= theirs_pld * (1 + 1e-9)
    assert ours_exact.epsilon == pytest.approx(theirs_pld, rel=1e-3)
    assert ours_exact.epsilon <= ours_rdp.epsilon


@pytest.mark.parametrize("eps,dl", [(0.5, 1e-5), (1.0, 1e-3), (4.0, 1e-6), (10.0, 1e-9)])
def test_gaussian_calibration_matches_dp_accounting(eps, dl):
    s = float(gaussian_noise_std(1.0, eps, dl))
    ref = dp_accounting.get_sigma_gaussian(eps, dl)
    assert s == pytest.approx(ref, rel=1e-6)
    assert gdp_delta(1.0 / s, eps) <= dl  # on the feasible side


# -- laws ----------------------------------------------------------------------------------------------

@given(log_uniform(1e-3, 20.0), log_uniform(1e-12, 0.5))
def test_gdp_epsilon_and_mu_invert_each_other(mu, dl):
    e = float(gdp_epsilon(mu, dl))
    assert gdp_delta(mu, e) <= dl
    if e > 0:
        assert gdp_delta(mu, e * (1 - 1e-9)) > dl * (1 - 1e-6)
        back = float(gdp_mu(e, dl))
        assert back <= mu * (1 + 1e-9) and back == pytest.approx(mu, rel=1e-6)


@given(st.lists(st.tuples(log_uniform(0.01, 5.0), st.integers(1, 20)), min_size=1, max_size=5))
def test_gdp_composition_is_exact_and_rdp_adds(parts):
    ev = ComposedEvent.of([(GdpEvent(m), c) for m, c in parts])
    assert ev.gdp_mu() == pytest.approx(math.sqrt(sum(c * m * m for m, c in parts)), rel=1e-12)
    al = np.array([1.5, 3.0, 20.0])
    assert np.allclose(ev.rdp(al), sum(c * GdpEvent(m).rdp(al) for m, c in parts), rtol=1e-12)


def test_composition_flattens_merges_and_mixes_rdp_with_basic_composition():
    g, z = GaussianEvent(1.0, 2.0), ZcdpEvent(0.01)
    c = ComposedEvent.of([g, (g, 2), ComposedEvent.of([z, g])])
    assert c.events == ((g, 4), (z, 1)) and c.count == 5
    assert c.gdp_mu() is None  # a zCDP part: no exact profile
    a = ApproxDpEvent(0.2, 1e-7, "a test mechanism")
    mixed = c + a
    assert mixed.approx_dp() == (0.2, 1e-7)
    e_mixed = epsilon(mixed, 1e-5, composition="basic").epsilon
    e_rdp_part = epsilon(c, 1e-5 - 1e-7).epsilon
    assert e_mixed == pytest.approx(e_rdp_part + 0.2, rel=1e-9)
    assert epsilon(mixed, 1e-5).epsilon < e_mixed  # the default rule composes through profiles: tighter
    for rule in ("basic", "profile"):  # delta must exceed the approximate part's delta
        assert math.isinf(epsilon(mixed, 1e-7, composition=rule).epsilon)
    only = ApproxDpEvent(0.3, 1e-6)
    assert epsilon(only, 1e-6).epsilon == 0.3
    assert epsilon(only + only, 1e-5, composition="basic").epsilon == pytest.approx(0.6)
    assert delta(only, 0.3).delta == 1e-6 and delta(only, 0.2, composition="basic").delta == 1.0
    # the default rule: the tight profile of one (0.3, 1e-6)-DP mechanism (Kairouz, Oh & Viswanath 2015),
    # delta(e) = delta + (1 - delta) (e^0.3 - e^e) / (1 + e^0.3) below e = 0.3
    tight = 1e-6 + (1 - 1e-6) * (math.exp(0.3) - math.exp(0.2)) / (1 + math.exp(0.3))
    assert delta(only, 0.2).delta == pytest.approx(tight, rel=1e-9) and delta(only, 0.2).delta >= tight


@given(log_uniform(1e-3, 1.0), st.integers(1, 50), log_uniform(1e-9, 1e-2))
def test_epsilon_increases_with_count_and_reported_value_is_recomputed(rho, k, dl):
    one, many = ZcdpEvent(rho), ZcdpEvent(rho).times(k)
    g1, gk = epsilon(one, dl), epsilon(many, dl)
    assert gk.epsilon >= g1.epsilon * (1 - 1e-9)
    from privgp.accounting import epsilon_from_rdp

    assert gk.epsilon == pytest.approx(float(epsilon_from_rdp(many.rdp(gk.alpha), gk.alpha, dl)), rel=1e-14)


# -- JSON, hashing, validation ----------------------------------------------------------------------

EVENTS = [GaussianEvent(1.0, 2.0), GdpEvent(0.3), ZcdpEvent(0.05), PureDpEvent(0.5),
          ApproxDpEvent(0.1, 1e-8, "source"), TabulatedRdpEvent((1.5, 2.0, 10.0), (0.1, 0.2, math.inf)),
          PosteriorSampleEvent(n=10, r=1.0, sigma=math.inf, L=3, kappa=0.2, kernel="exponential",
                               sensitivity="exp1d"),
          PosteriorSampleEvent(n=100, r=2.0, sigma=0.5, eta=0.3, kappa=0.5, dim=2, kernel="matern32")]


@pytest.mark.parametrize("ev", EVENTS + [ComposedEvent.of(EVENTS)], ids=lambda e: e.kind)
def test_events_round_trip_through_json_and_hash(ev):
    text = ev.to_json()
    assert "Infinity" not in text and "NaN" not in text
    back = event_from_json(text)
    assert back == ev and hash(back) == hash(ev) and back.to_dict() == ev.to_dict()
    assert {ev: 1}[back] == 1
    al = np.array([1.2, 1.9, 5.0])
    np.testing.assert_array_equal(back.rdp(al), ev.rdp(al))
    assert isinstance(ev, PrivacyEvent) and ev.describe()


def test_bad_events_are_refused_with_the_parameter_named():
    bad = [(lambda: GaussianEvent(1.0, 0.0), "noise_std"), (lambda: GdpEvent(-1.0), "mu"),
           (lambda: GdpEvent(math.nan), "mu"), (lambda: ZcdpEvent(math.inf), "rho"),
           (lambda: ApproxDpEvent(1.0, 1.0), "delta"), (lambda: PosteriorSampleEvent(n=0, r=1.0, sigma=1.0), "n"),
           (lambda: PosteriorSampleEvent(n=5, r=1.0, sigma=1.0, sensitivity="exp1d", kernel="matern32"), "B.7"),
           (lambda: PosteriorSampleEvent(n=5, r=1.0, sigma=1.0, kernel="fancy"), "kernel"),
           (lambda: TabulatedRdpEvent((2.0, 1.5), (0.1, 0.2)), "orders"),
           (lambda: ComposedEvent(()), "events"), (lambda: event_from_dict({"type": "nope"}), "event type"),
           (lambda: event_from_dict({"type": "gdp", "mu": 1.0, "extra": 2}), "unknown"),
           (lambda: event_from_dict({"type": "gdp"}), "gdp"), (lambda: event_from_json("{"), "JSON")]
    for make, needle in bad:
        with pytest.raises(Exception) as exc:
            make()
        assert needle in str(exc.value), (needle, str(exc.value))
    with pytest.raises(InvalidParameterError, match="alpha"):
        GdpEvent(1.0).rdp(1.0)


def test_out_of_range_orders_are_infinite_never_zero_or_nan():
    ev = PosteriorSampleEvent(n=10, r=1.0, sigma=1.0, kappa=0.1)
    amax = ev.alpha_max
    assert math.isfinite(amax)
    assert np.isinf(ev.rdp(amax)) and np.isinf(ev.rdp(amax * 2)) and np.isfinite(ev.rdp(1 + (amax - 1) / 2))
    assert np.isinf(ComposedEvent.of([ev, GdpEvent(1.0)]).rdp(amax + 1.0))


# -- batches --------------------------------------------------------------------------------------------

def test_batches_agree_with_scalar_events():
    rng = np.random.default_rng(3)
    n = rng.integers(1, 500, 50)
    r = np.exp(rng.uniform(-2, 3, 50))
    sigma = np.exp(rng.uniform(-2, 2, 50))
    b = PosteriorSampleEvent.batch(n, r, sigma, eta=0.2, L=4, kappa=0.3, dim=2, kernel="matern52")
    e = epsilon(b, 1e-4)
    for i in (0, 17, 49):
        ev = b.item(i)
        assert ev == PosteriorSampleEvent(n=int(n[i]), r=r[i], sigma=sigma[i], eta=0.2, L=4, kappa=0.3, dim=2,
                                          kernel="matern52")
        assert e.epsilon[i] == pytest.approx(epsilon(ev, 1e-4).epsilon, rel=1e-12)
    exact = epsilon(gaussian_batch(1.0, [1.0, 2.0, 4.0]), 1e-5)
    assert exact.method == "exact-gdp"
    np.testing.assert_allclose(exact.epsilon, [epsilon(GaussianEvent(1.0, s), 1e-5).epsilon for s in (1.0, 2.0, 4.0)],
                               rtol=1e-12)
    g = EventBatch.from_events([GaussianEvent(1.0, s) for s in (1.0, 2.0, 4.0)])
    np.testing.assert_allclose(epsilon(g, 1e-5, exact=False).epsilon,
                               [epsilon(GaussianEvent(1.0, s), 1e-5, exact=False).epsilon for s in (1.0, 2.0, 4.0)],
                               rtol=1e-12)


# -- the one calibrator ------------------------------------------------------------------------------

@settings(max_examples=30)
@given(log_uniform(0.05, 20.0), log_uniform(1e-9, 1e-2), log_uniform(0.1, 10.0))
def test_calibrate_a_gaussian_noise_level_lands_on_the_feasible_side(target, dl, sens):
    res = calibrate(lambda s: GaussianEvent(sens, s), "noise_std", (1e-3, 1e4), target, dl, direction="smallest",
                    make_batch=lambda s: gaussian_batch(sens, s))
    assert res.checked and res.epsilon <= target
    assert epsilon(GaussianEvent(sens, res.value * (1 - 1e-4)), dl).epsilon > target
    # the exact answer, for comparison: s = sens / mu*(target, delta), within the refinement tolerance
    assert res.value == pytest.approx(float(gaussian_noise_std(sens, target, dl)), rel=1e-3)


def test_calibrate_largest_integer_and_infeasible_targets():
    res = calibrate(lambda k: GdpEvent(0.5).times(int(k)), "count", (1, 10**4), 3.0, 1e-5, direction="largest",
                    integer=True)
    k = res.value
    assert isinstance(k, int) and epsilon(GdpEvent(0.5).times(k), 1e-5).epsilon <= 3.0
    assert epsilon(GdpEvent(0.5).times(k + 1), 1e-5).epsilon > 3.0
    with pytest.raises(InfeasibleTargetError, match="noise_std"):
        calibrate(lambda s: GaussianEvent(1.0, s), "noise_std", (1e-3, 1e-2), 1.0, 1e-5)
    with pytest.raises(InvalidParameterError, match="direction"):
        calibrate(lambda s: GaussianEvent(1.0, s), "noise_std", (1e-3, 1.0), 1.0, 1e-5, direction="up")


def test_with_values_and_single_draw():
    ev = PosteriorSampleEvent(n=10, r=1.0, sigma=2.0, L=3, kappa=0.4, kernel="matern32")
    one = ev.single_draw()
    assert one == ev.with_values(L=1) and one.L == 1 and one.kernel == "matern32"
    np.testing.assert_allclose(ev.rdp([1.5, 2.0]), 3 * one.rdp([1.5, 2.0]), rtol=1e-14)
    with pytest.raises(InvalidParameterError, match="r"):
        ev.with_values(r=-1.0)
