"""privgp's accounting next to Google's dp_accounting (issue 27): events convert to dp_accounting
events with the same Renyi curve (composed in both libraries); pure-DP events use the exact curve of
randomized response; (epsilon, delta)-only parts compose through privacy profiles (the default rule,
``composition="profile"``), never below dp_accounting's optimistic PLD bound (a lower bound on the
tight value) and never above basic composition (``composition="basic"``, the rule of privgp 0.1)."""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from dp_accounting import dp_event, pld, rdp
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as PLD
from dp_accounting.privacy_accountant import NeighboringRelation as NR
from hypothesis import example, given, settings
from hypothesis import strategies as st

from privgp.accounting import (
    ApproxDpEvent,
    ComposedEvent,
    GaussianEvent,
    GdpEvent,
    PureDpEvent,
    TabulatedRdpEvent,
    ZcdpEvent,
    composition_rule,
    delta,
    epsilon,
    epsilon_from_rdp,
)
from privgp.accounting.accountant import MAX_PURE_SUPPORT
from privgp.errors import InvalidParameterError, MissingExtraError

# -- to_dp_event ------------------------------------------------------------------------------------


def test_events_map_to_the_dp_accounting_event_with_the_same_pair():
    assert GaussianEvent(2.0, 3.0).to_dp_event() == dp_event.GaussianDpEvent(noise_multiplier=1.5)
    assert GdpEvent(0.5).to_dp_event() == dp_event.GaussianDpEvent(noise_multiplier=2.0)
    assert GdpEvent(0.0).to_dp_event() == dp_event.NoOpDpEvent()
    assert ZcdpEvent(0.02).to_dp_event() == dp_event.ZCDpEvent(rho=0.02)
    rr = PureDpEvent(1.0).to_dp_event()
    assert isinstance(rr, dp_event.RandomizedResponseDpEvent) and rr.num_buckets == 2
    p = rr.noise_parameter  # outputs (1 - p/2, p/2) vs (p/2, 1 - p/2): odds e^epsilon
    assert math.log((1 - p / 2) / (p / 2)) == pytest.approx(1.0, rel=1e-14)
    assert PureDpEvent(0.0).to_dp_event() == dp_event.NoOpDpEvent()
    # no equivalent in dp_accounting: refused by its accountants, never under-counted
    for ev in (ApproxDpEvent(0.1, 1e-6), TabulatedRdpEvent((2.0, 4.0), (0.1, 0.3))):
        out = ev.to_dp_event()
        assert isinstance(out, dp_event.UnsupportedDpEvent)
        assert not rdp.RdpAccountant().supports(out)
    g, z = GaussianEvent(1.0, 2.0), ZcdpEvent(0.01)
    assert ComposedEvent.of([(g, 3), z]).to_dp_event() == dp_event.ComposedDpEvent(
        [dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(2.0), 3), dp_event.ZCDpEvent(0.01)])
    assert g.times(1).to_dp_event() == dp_event.GaussianDpEvent(2.0)


def test_to_dp_event_without_dp_accounting_names_the_extra():
    code = ("import sys; sys.modules['dp_accounting'] = None\n"
            "from privgp.accounting import GdpEvent\n"
            "from privgp.errors import MissingExtraError\n"
            "try:\n    GdpEvent(1.0).to_dp_event()\n"
            "except MissingExtraError as exc:\n    print(exc)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "pip install 'privgp[dp-accounting]'" in r.stdout
    assert issubclass(MissingExtraError, ImportError)


settings.register_profile("interop", max_examples=25, deadline=None)

part = st.one_of(
    st.builds(GaussianEvent, st.floats(0.1, 2.0), st.floats(0.5, 10.0)),
    st.builds(GdpEvent, st.floats(0.01, 2.0)),
    st.builds(ZcdpEvent, st.floats(1e-4, 0.5)),
    st.builds(PureDpEvent, st.floats(0.01, 3.0)),
)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(part, st.integers(1, 20)), min_size=1, max_size=4),
       st.sampled_from([1.1, 2.0, 8.0, 64.0]), st.sampled_from([1e-3, 1e-8]))
def test_composed_in_both_libraries_the_rdp_curves_agree(parts, order, dl):
    """The same composition accounted by privgp and by dp_accounting's RDP accountant (at one order,
    with the same conversion) gives the same epsilon: the curves and the composition agree."""
    ev = ComposedEvent.of(parts)
    acc = rdp.RdpAccountant(orders=[order], neighboring_relation=NR.REPLACE_ONE)
    acc.compose(ev.to_dp_event())
    theirs = acc.get_epsilon(dl)
    ours = epsilon(ev, dl, alpha=order, exact=False).epsilon
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12)
    # over all orders our continuous search does no worse than their grid
    acc = rdp.RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
    acc.compose(ev.to_dp_event())
    assert epsilon(ev, dl, exact=False).epsilon <= acc.get_epsilon(dl) * (1 + 1e-9)


@pytest.mark.parametrize("count", [1, 10, 100])
@pytest.mark.parametrize("noise", [0.8, 4.0])
def test_gaussian_compositions_match_dp_accounting_pld(count, noise):
    ev = GaussianEvent(1.0, noise).times(count)
    acc = pld.PLDAccountant()  # ADD_OR_REMOVE_ONE: dp_accounting's Gaussian has sensitivity 1 there
    acc.compose(ev.to_dp_event())
    assert epsilon(ev, 1e-6).epsilon == pytest.approx(acc.get_epsilon(1e-6), rel=1e-3)


# -- pure DP: the exact curve of randomized response ------------------------------------------------

def _old_bound_epsilon(eps: float, count: int, dl: float) -> float:
    """epsilon from the curve used before: count * min(eps, alpha eps^2 / 2), best order on a fine grid."""
    al = np.exp(np.linspace(np.log(1.0001), np.log(1e4), 20001))
    r = count * np.minimum(eps, 0.5 * al * eps * eps)
    return float(np.min(epsilon_from_rdp(r, al, dl)))


@pytest.mark.parametrize("eps,count,low,high", [(0.1, 100, 0.96, 0.98), (0.3, 50, 0.90, 0.94),
                                                (0.05, 400, 0.98, 0.995), (1.0, 20, 0.99, 1.0)])
def test_pure_dp_uses_the_tighter_randomized_response_curve(eps, count, low, high):
    """Lower epsilon than min(eps, alpha eps^2/2) (about 3% at 100 x 0.1-DP, 8% at 50 x 0.3-DP; nothing
    to gain where basic composition already wins), and still above the tight value (the PLD of
    randomized response in dp_accounting, exact for it up to discretisation)."""
    ev = PureDpEvent(eps).times(count)
    ours = epsilon(ev, 1e-6, composition="basic").epsilon   # the Renyi curve alone
    old = _old_bound_epsilon(eps, count, 1e-6)
    assert low * old < ours <= high * old
    acc = pld.PLDAccountant(neighboring_relation=NR.REPLACE_ONE)
    acc.compose(ev.to_dp_event())
    assert ours >= acc.get_epsilon(1e-6) * (1 - 1e-3)
    # the default rule composes the parts as randomized response: lower still, never below the tight value
    prof = epsilon(ev, 1e-6)
    assert acc.get_epsilon(1e-6) * (1 - 1e-3) <= prof.epsilon <= ours * (1 + 1e-11)   # the exact value, if above
    assert delta(ev, prof.epsilon).delta <= 1e-6 * (1 + 1e-9)
    al = np.array([1.01, 1.5, 2.0, 10.0, 100.0])  # the curve is below the old bound at every order
    assert np.all(PureDpEvent(eps).rdp(al) <= np.minimum(eps, 0.5 * al * eps * eps))


# -- (epsilon, delta) parts through privacy profiles ------------------------------------------------

GRID = 1e-3  # dp_accounting's discretisation; epsilons on it (multiples of 1e-2 here) are represented exactly


def _their_pld(mu: float | None, approx: list[tuple[float, float, int]], pessimistic: bool = True):
    """dp_accounting's PLD of the same composition: exact for the (epsilon, delta) parts (their losses lie
    on the grid); for the Gaussian an upper bound within the discretisation (``pessimistic``) or a lower
    bound on the tight profile (not ``pessimistic``: their optimistic estimate)."""
    dist = None if mu is None else PLD.from_gaussian_mechanism(1.0 / mu, pessimistic_estimate=pessimistic,
                                                               value_discretization_interval=GRID,
                                                               use_connect_dots=pessimistic)
    for e, d, c in approx:
        if pessimistic:
            one = PLD.from_privacy_parameters(pld_common.DifferentialPrivacyParameters(e, d),
                                              value_discretization_interval=GRID)
        else:  # the same four-point PLD, losses rounded down to the grid (theirs rounds them up)
            pmf = {math.floor(e / GRID): (1 - d) / (1 + math.exp(-e))}
            k = math.floor(-e / GRID)
            pmf[k] = pmf.get(k, 0.0) + (1 - d) / (1 + math.exp(e))
            one = PLD.PrivacyLossDistribution.create_from_rounded_probability(pmf, d, GRID, pessimistic_estimate=False)
        one = one.self_compose(c) if c > 1 else one
        dist = one if dist is None else dist.compose(one)
    return dist


compositions = (st.one_of(st.none(), st.floats(0.2, 2.0)),
                st.lists(st.tuples(st.integers(1, 200).map(lambda k: k * 1e-2), st.floats(1e-9, 1e-3),
                                   st.integers(1, 8)), min_size=1, max_size=3))


def _event(mu, approx):
    return ComposedEvent.of([(ApproxDpEvent(e, d), c) for e, d, c in approx] + ([] if mu is None else [(GdpEvent(mu), 1)]))


@settings(max_examples=20, deadline=None)
@given(*compositions, st.floats(0.0, 6.0))
def test_profile_composition_is_sound_and_tight_against_dp_accounting(mu, approx, eps):
    """The default rule (profile) at random compositions: delta never above basic composition's, never
    below dp_accounting's tight value (equal to it without a Gaussian part)."""
    ev = _event(mu, approx)
    ours = delta(ev, eps)
    assert ours == delta(ev, eps, composition="profile")  # the default rule
    basic = delta(ev, eps, composition="basic")
    assert ours.delta <= basic.delta
    theirs = float(_their_pld(mu, approx).get_delta_for_epsilon(eps))
    if mu is None:  # both exact: equal (the optimal composition of (epsilon, delta)-DP mechanisms)
        assert ours.delta == pytest.approx(theirs, rel=1e-6, abs=1e-12)
    else:  # ours exact, theirs an upper bound: never above it, never below it by more than the discretisation
        assert theirs * (1 - 1e-3) - 1e-12 <= ours.delta <= theirs * (1 + 1e-6) + 1e-10
    low = float(_their_pld(mu, approx, pessimistic=False).get_delta_for_epsilon(eps))
    assert ours.delta >= low * (1 - 1e-9) - 1e-15  # never below the tight value
    # epsilon at a delta: the reported epsilon meets the delta, and is no worse than basic composition
    dl = min(max(1.5 * basic.delta, 1e-6), 0.5)
    e_ours = epsilon(ev, dl)
    assert e_ours.epsilon <= epsilon(ev, dl, composition="basic").epsilon * (1 + 1e-12)
    if math.isfinite(e_ours.epsilon):
        assert delta(ev, e_ours.epsilon).delta <= dl * (1 + 1e-9)


@settings(max_examples=15, deadline=None)
@given(*compositions, st.floats(1e-7, 0.2))
def test_profile_epsilon_lies_between_dp_accounting_tight_value_and_basic_composition(mu, approx, dl):
    """new (default) <= old (basic composition), and >= dp_accounting's tight epsilon at the same delta
    (its optimistic PLD: a lower bound on the tight value; exact for the (epsilon, delta) parts)."""
    ev = _event(mu, approx)
    new, old = epsilon(ev, dl).epsilon, epsilon(ev, dl, composition="basic").epsilon
    assert new <= old
    tight = _their_pld(mu, approx, pessimistic=False).get_epsilon_for_delta(dl)
    assert new >= tight - GRID  # their epsilon is on their grid (rounded up to it)
    if math.isfinite(new):
        assert delta(ev, new).delta <= dl * (1 + 1e-9)
    else:  # no finite epsilon: the delta branches alone reach dl (1 - prod (1 - delta_i) >= dl)
        assert 1 - math.prod((1 - d) ** c for _, d, c in approx) >= dl * (1 - 1e-9) or not math.isfinite(tight)


def test_profile_composition_beats_basic_composition_several_fold():
    ev = ZcdpEvent(0.01) + ApproxDpEvent(0.1, 1e-6).times(5)
    basic, prof = delta(ev, 1.0, composition="basic"), delta(ev, 1.0)
    assert prof.method == "profile" and basic.delta > 3 * prof.delta
    e_basic, e_prof = epsilon(ev, 1e-4, composition="basic"), epsilon(ev, 1e-4)
    assert e_prof.method == "profile" and e_prof.epsilon < 0.9 * e_basic.epsilon
    assert e_basic.method == "rdp"
    # the rule in force: "profile" by default, "basic" inside composition_rule("basic") (how verify rebuilds
    # a certificate of privgp 0.1), and an explicit rule wins over the one in force
    with composition_rule("basic"):
        assert epsilon(ev, 1e-4) == e_basic and epsilon(ev, 1e-4, composition="profile") == e_prof
    assert epsilon(ev, 1e-4) == e_prof
    for bad in ("pld", None):
        with pytest.raises(InvalidParameterError, match="composition"):
            epsilon(ev, 1e-4, composition="pld") if bad else composition_rule(bad).__enter__()


# -- pure parts composed with others as randomized response (the "profile" rule, item 4) -------------

mixed = (st.one_of(st.none(), st.floats(0.2, 2.0)),
         st.lists(st.tuples(st.integers(1, 200).map(lambda k: k * 1e-2), st.floats(1e-9, 1e-3),
                            st.integers(1, 4)), max_size=2),
         st.lists(st.tuples(st.integers(1, 300).map(lambda k: k * 1e-2), st.integers(1, 4)), min_size=1, max_size=3))


def _mixed_event(mu, approx, pure):
    return ComposedEvent.of([(ApproxDpEvent(e, d), c) for e, d, c in approx] + [(PureDpEvent(e), c) for e, c in pure]
                            + ([] if mu is None else [(GdpEvent(mu), 1)]))


@settings(max_examples=25, deadline=None)
@given(*mixed, st.floats(0.0, 8.0))
@example(None, [], [(2.22, 3), (2.53, 1), (2.55, 4)], 0.0)   # basic's conversion 1e-9 below the exact delta
def test_pure_parts_compose_as_randomized_response_soundly(mu, approx, pure, eps):
    """A composition with pure epsilon-DP parts and a Gaussian and/or (epsilon, delta) part: delta never
    above basic composition's, never below dp_accounting's tight value of the same composition (pure
    parts there are randomized response, exactly), and without a Gaussian part never above dp_accounting's
    pessimistic value either (both exact up to their grid)."""
    ev = _mixed_event(mu, approx, pure)
    ours = delta(ev, eps).delta
    # never above basic composition (up to the rounding of a Renyi conversion at large orders, ~1e-9 relative,
    # where the exact value is reported instead)
    assert ours <= delta(ev, eps, composition="basic").delta * (1 + 1e-8)
    parts = approx + [(e, 0.0, c) for e, c in pure]
    low = float(_their_pld(mu, parts, pessimistic=False).get_delta_for_epsilon(eps))
    assert ours >= low * (1 - 1e-9) - 1e-15
    exact_split = math.prod(c + 1 for _, _, c in parts) <= MAX_PURE_SUPPORT  # else the pure parts stay curves
    if mu is None and exact_split and ours < delta(ev, eps, composition="basic").delta:
        # both exact where the losses lie on dp_accounting's grid (k * 1e-2 in floats can fall just above a grid
        # point, which theirs rounds up): never above theirs, and never below their optimistic value (above)
        theirs = float(_their_pld(None, parts).get_delta_for_epsilon(eps))
        assert ours <= theirs * (1 + 1e-6) + 1e-12
    dl = 1e-6
    e_ours = epsilon(ev, dl)
    assert e_ours.epsilon <= epsilon(ev, dl, composition="basic").epsilon * (1 + 1e-12)
    if math.isfinite(e_ours.epsilon):
        assert delta(ev, e_ours.epsilon).delta <= dl * (1 + 1e-9)
        assert e_ours.epsilon >= _their_pld(mu, parts, pessimistic=False).get_epsilon_for_delta(dl) - GRID


def test_a_gaussian_and_a_laplace_release_compose_below_the_sum_of_their_certificates():
    """The ledger's case: a Gaussian grid release certified (5, 1e-6) and a Laplace-grid 5-DP release.
    Basic composition of the two certificates gives (10, 1e-6); adding the pure part's Renyi curve to the
    Gaussian's and converting gave 10.34 (still basic composition's value: no (epsilon, delta)-only part);
    composing the pure part as randomized response with the exact Gaussian profile gives less than 10,
    and no less than dp_accounting's tight value."""
    from privgp.accounting import calibrate_gaussian

    gauss, cert = calibrate_gaussian(2.0, 5.0, 1e-6)
    assert cert.epsilon <= 5.0
    both = ComposedEvent.of([gauss, PureDpEvent(5.0)])
    basic, ours = epsilon(both, 1e-6, composition="basic"), epsilon(both, 1e-6)
    assert basic.epsilon > 10.3 and ours.method == "profile" and ours.epsilon < 10.0
    assert delta(both, ours.epsilon).delta <= 1e-6 * (1 + 1e-9)
    tight = _their_pld(gauss.gdp_mu(), [(5.0, 0.0, 1)], pessimistic=False).get_epsilon_for_delta(1e-6)
    assert ours.epsilon >= tight - GRID
    # one pure part alone keeps its epsilon exactly (a Laplace-grid certificate never changes)
    for one in (PureDpEvent(5.0), ComposedEvent.of([PureDpEvent(5.0)])):
        assert epsilon(one, 1e-6) == epsilon(one, 1e-6, composition="basic")
        assert epsilon(one, 1e-6).method != "profile"


@pytest.mark.parametrize("eps,count,dl", [(0.1, 100, 1e-6), (0.1, 100, 1e-3), (0.01, 511, 1e-6), (0.5, 10, 1e-3)])
def test_pure_parts_alone_compose_as_randomized_response(eps, count, dl):
    """Two or more pure parts and nothing else: their exact composition (randomized response's PLD), equal to
    dp_accounting's exact value for it, below the Renyi curve's conversion (100 x 0.1-DP at delta = 1e-6: 4.77
    against 5.07)."""
    ev = PureDpEvent(eps).times(count)
    ours, basic = epsilon(ev, dl), epsilon(ev, dl, composition="basic")
    assert ours.method == "profile" and ours.epsilon < basic.epsilon
    theirs = _their_pld(None, [(eps, 0.0, count)])
    assert ours.epsilon >= _their_pld(None, [(eps, 0.0, count)], pessimistic=False).get_epsilon_for_delta(dl) - GRID
    assert ours.epsilon <= theirs.get_epsilon_for_delta(dl) + GRID
    assert delta(ev, ours.epsilon).delta <= dl * (1 + 1e-9)
    # two distinct pure parts: the same, and never above their sum
    two = ComposedEvent.of([PureDpEvent(5.0), PureDpEvent(3.0)])
    assert epsilon(two, 1e-3).epsilon <= 8.0


@pytest.mark.parametrize("c", [1, 2, 7, 100, 511, 1000])
@pytest.mark.parametrize("e", [1e-3, 0.1, 1.0, 5.0, 50.0])
def test_randomized_response_weights_against_mpmath(c, e):
    """The profile's binomial weights (k of c randomized-response outputs on the "+" side) to 2e-13 of mpmath's
    exact values wherever they are above 1e-300 (the profile rounds delta up by 1e-12)."""
    import mpmath

    from privgp.accounting.accountant import _plus_side_pmf

    ours = _plus_side_pmf(c, e)
    with mpmath.workdps(40):
        p = 1 / (1 + mpmath.exp(-mpmath.mpf(e)))
        for k in sorted({0, 1, c // 3, c // 2, c - 1, c} & set(range(c + 1))):
            exact = mpmath.binomial(c, k) * p**k * (1 - p) ** (c - k)
            if exact > mpmath.mpf("1e-300"):
                assert abs(ours[k] / exact - 1) < 2e-13, (c, e, k)


def test_a_ledger_of_pure_releases_composes_without_scipy_stats():
    """A ledger's second Laplace-grid release composes two pure parts through the profile; that must not import
    scipy.stats (0.3-0.5 s, more than the release itself), which the first release never imports either."""
    import subprocess
    import sys

    code = ("import sys\nfrom privgp.accounting import PureDpEvent, epsilon\n"
            "g = epsilon(PureDpEvent(5.0).times(2), 1e-6)\ng2 = epsilon(PureDpEvent(0.1).times(100), 1e-6)\n"
            "assert g2.method == 'profile', g2\nprint('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
