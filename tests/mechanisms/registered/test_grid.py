"""The noisy-grid baseline and seed 002's eq. (37) mechanism: sensitivities, exact privacy profiles,
statistics, post-processing and the forecast (privgp.mechanisms.registered.grid); auto's choice is in
test_auto.py."""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.datasets.fields import FAMILIES
from privgp.mechanisms.registered.auto import plan_auto
from privgp.mechanisms.registered.discretised_gaussian import plan_discretised_gaussian
from privgp.mechanisms.registered.grid import (
    EQ37_PER_POINT,
    GRID_SENSITIVITY,
    cell_index,
    cell_sizes,
    cell_statistics,
    plan_grid,
)
from privgp.mechanisms.release import ResponseMap, default_delta
from privgp.models.domain import Box
from privgp.tasks.forecast import forecast
from tests.mechanisms.registered.neighbours import released_counts_of_a_moved_record, replaced_neighbour

IDENTITY = ResponseMap(0.0, 1.0)
BOX = Box((0.0, 0.0), (3.0, 2.0))


def _stats(plan, X, y):
    s, c = plan.statistics(X, y)
    return np.concatenate([s.ravel(), c.ravel()])


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 40), st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_grid_sensitivity_is_at_most_two_for_random_neighbours(n, cells, seed):
    rng = np.random.default_rng(seed)
    plan = plan_grid(n, BOX, IDENTITY, epsilon=1.0, delta=1e-6, cells=cells)
    X = BOX.lower + rng.random((n, 2)) * BOX.widths
    y = rng.uniform(-1, 1, n)
    X2, y2 = X.copy(), y.copy()
    i = rng.integers(n)
    X2[i] = BOX.lower + rng.random(2) * BOX.widths
    y2[i] = rng.choice([-1.0, 1.0, rng.uniform(-1, 1)])
    assert np.linalg.norm(_stats(plan, X, y) - _stats(plan, X2, y2)) <= GRID_SENSITIVITY + 1e-12


def test_grid_sensitivity_worst_case_search_attains_two_and_no_more():
    """Adversarial search over the replaced record (all cells, responses on a fine grid incl. the extremes)."""
    plan = plan_grid(5, BOX, IDENTITY, epsilon=1.0, delta=1e-6, cells=4)
    rng = np.random.default_rng(0)
    X = BOX.lower + rng.random((5, 2)) * BOX.widths
    y = rng.uniform(-1, 1, 5)
    base = _stats(plan, X, y)
    centres = [(BOX.lower[0] + (i + 0.5) * BOX.widths[0] / plan.cells[0], BOX.lower[1] + (j + 0.5) * BOX.widths[1] / plan.cells[1])
               for i in range(plan.cells[0]) for j in range(plan.cells[1])]
    worst = 0.0
    for x0 in centres:
        for y0 in np.linspace(-1, 1, 9):
            Xa, ya = X.copy(), y.copy()
            Xa[0], ya[0] = x0, y0
            sa = _stats(plan, Xa, ya)
            for x1 in centres:
                for y1 in np.linspace(-1, 1, 9):
                    Xb, yb = Xa.copy(), ya.copy()
                    Xb[0], yb[0] = x1, y1
                    worst = max(worst, float(np.linalg.norm(sa - _stats(plan, Xb, yb))))
    assert worst == pytest.approx(GRID_SENSITIVITY, abs=1e-12)
    assert base.shape == (2 * int(np.prod(plan.cells)),)


def _gaussian_delta_mp(mu: float, eps: float) -> mp.mpf:
    """Exact (eps, delta) profile of mu-GDP (Dong, Roth & Su 2022, Cor. 2.13), in mpmath."""
    mp.mp.dps = 50
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-eps / mu + mu / 2) - mp.e ** eps * mp.ncdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 5.0, 10.0])
@pytest.mark.parametrize("n", [211, 10_000])
def test_grid_calibration_is_on_the_feasible_side_and_tight_in_whole_lattice_steps(epsilon, n):
    """The discrete Gaussian grid (red team 21): rho >= (2 + 2g)^2 / (2 s^2) exactly, s = T g, the certified epsilon
    within the target, and one lattice step less noise would miss it (the calibration is tight)."""
    from fractions import Fraction

    from privgp.accounting import certify
    from privgp.accounting.events import ZcdpEvent
    from privgp.mechanisms.registered.grid import _rho

    delta = default_delta(n)
    plan = plan_grid(n, BOX, IDENTITY, epsilon=epsilon, delta=delta)
    k, T, g = plan.lattice_exponent, plan.lattice_steps, Fraction(plan.lattice)
    assert plan.noise == "discrete-gaussian" and plan.noise_std == float(T * g) and T >= 2**24 and g <= 2**-20
    assert Fraction(plan.event.rho) >= (2 + 2 * g) ** 2 / (2 * (T * g) ** 2)
    assert plan.certificate.epsilon <= epsilon
    assert certify(ZcdpEvent(rho=_rho(T - 1, k)), delta=delta).epsilon > epsilon * (1 - 1e-6)
    assert plan.event.rho == pytest.approx(2.0 / plan.noise_std ** 2, rel=1e-5)   # 2 + 2g against 2: ~2^-20


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 5.0, 10.0])
@pytest.mark.parametrize("n", [211, 10_000])
def test_a_float_grid_calibration_is_on_the_feasible_side_of_the_exact_profile(epsilon, n):
    """The float-noise plan of certificates written before 2026-11-26 (rebuilt by verify) keeps its exact-GDP
    calibration."""
    delta = default_delta(n)
    plan = plan_grid(n, BOX, IDENTITY, epsilon=epsilon, delta=delta, _noise="float")
    mu = GRID_SENSITIVITY / plan.noise_std
    assert plan.certificate.epsilon <= epsilon
    exact = _gaussian_delta_mp(mu, plan.certificate.epsilon)
    assert exact <= delta * (1 + 1e-9)
    assert exact >= delta * (1 - 1e-6)      # and tight: the noise is not wastefully large
    assert plan.event.sensitivity == GRID_SENSITIVITY


def test_released_maps_are_the_public_post_processing_of_their_released_statistics():
    """What privgp verify recomputes: a grid-type release's map and sd from its released statistics alone (eq. 37's
    density and signal channels; a noisy grid's sums and counts), equal to the drawn release."""
    rng = np.random.default_rng(4)
    X = BOX.lower + rng.random((80, 2)) * BOX.widths
    y = rng.uniform(-1, 1, 80)
    for plan in (plan_discretised_gaussian(80, BOX, IDENTITY, epsilon=2.0, points=4, grid=21),
                 plan_grid(80, BOX, IDENTITY, epsilon=2.0, cells=4, grid=21)):
        rel = plan.draw(X, y, np.random.default_rng(5))
        again = plan.post_process(*(rel.statistics[k] for k in plan.statistics_names))
        assert all(rel.statistics[k].shape == plan.statistics_shape for k in plan.statistics_names)
        np.testing.assert_array_equal(again.field, rel.field)
        np.testing.assert_array_equal(again.sd, rel.sd)


def test_eq37_event_is_the_papers_formula_and_bounds_the_channels():
    plan = plan_discretised_gaussian(50, BOX, IDENTITY, epsilon=2.0, delta=1e-6, points=4)
    m = int(np.prod(plan.points))
    assert plan.event.sensitivity == pytest.approx(math.sqrt(m * (4.0 + 1.0)))
    assert EQ37_PER_POINT == pytest.approx(math.sqrt(5.0))
    rng = np.random.default_rng(1)
    for _ in range(200):
        X = BOX.lower + rng.random((50, 2)) * BOX.widths
        y = rng.uniform(-1, 1, 50)
        X2, y2 = X.copy(), y.copy()
        X2[3] = BOX.lower + rng.random(2) * BOX.widths
        y2[3] = rng.uniform(-1, 1)
        a = np.concatenate([c.ravel() for c in plan.channels(X, y)])
        b = np.concatenate([c.ravel() for c in plan.channels(X2, y2)])
        assert np.linalg.norm(a - b) <= plan.event.sensitivity


def test_statistics_equal_a_direct_count():
    rng = np.random.default_rng(2)
    plan = plan_grid(300, BOX, IDENTITY, epsilon=1.0, delta=1e-6, cells=5)
    X = BOX.lower + rng.random((300, 2)) * BOX.widths
    X[0] = BOX.upper          # the upper edge belongs to the last cell
    y = rng.uniform(-1, 1, 300)
    sums, counts = plan.statistics(X, y)
    cx, cy = plan.cells
    for i in range(cx):
        for j in range(cy):
            lo = BOX.lower + np.array([i, j]) * BOX.widths / np.array([cx, cy])
            hi = lo + BOX.widths / np.array([cx, cy])
            inside = np.all((X >= lo) & ((X < hi) | ((X == BOX.upper) & (hi >= BOX.upper))), axis=1)
            assert counts[i, j] == inside.sum()
            assert sums[i, j] == pytest.approx(y[inside].sum())
    assert counts.sum() == 300
    assert cell_sizes(BOX, 6) == (6, 4)
    assert cell_index(BOX, (6, 4), np.array([[0.0, 0.0], [3.0, 2.0]])).tolist() == [0, 23]


def test_post_processing_is_a_function_of_the_released_statistics_only():
    plan = plan_grid(1000, BOX, IDENTITY, epsilon=2.0, delta=1e-6, cells=6, grid=31)
    rng = np.random.default_rng(3)
    X = BOX.lower + rng.random((1000, 2)) * BOX.widths
    rel = plan.draw(*plan.check(X, rng.uniform(-1, 1, 1000)), np.random.default_rng(4))
    again = plan.post_process(rel.statistics["sums"], rel.statistics["counts"])
    np.testing.assert_array_equal(again.field, rel.field)
    np.testing.assert_array_equal(again.sd, rel.sd)
    assert np.all(np.abs(rel.field) <= 1) and np.all(rel.sd > 0)
    assert np.array_equal(rel.reliable(), np.abs(rel.field) > 2 * rel.sd)


def test_forecast_is_deterministic_and_public():
    plan = plan_grid(500, Box.unit(2), ResponseMap(10.0, 2.0), epsilon=2.0, delta=1e-6, cells=5, grid=31)
    a, b = forecast(plan, reps=2), forecast(plan, reps=2)
    assert a.to_dict() == b.to_dict()
    assert set(a.per_family) == set(FAMILIES)
    assert 0 <= a.iou <= 1 and a.iou_se >= 0 and "in 10 places" in a.words()


def test_default_delta_is_small():
    assert default_delta(211) == 1e-6
    assert default_delta(10**6) == pytest.approx(1e-7)
    for n in (2, 50, 10**3, 10**5, 10**8):
        assert default_delta(n) <= min(1e-6, 1 / (10 * n))


def test_forecast_of_a_large_grid_release_simulates_fewer_records_with_scaled_noise(monkeypatch):
    """Above SIMULATED_N records the grid's sums and counts are simulated at SIMULATED_N with the noise std
    scaled by SIMULATED_N / n (same signal-to-noise ratio of the privacy noise): the forecast is conservative
    (more sampling noise per cell, never optimistic beyond the simulation's own noise) and, at the ratio a
    release of 10^6 records uses (5x fewer records), close to the full simulation. With auto's finest cells
    (the Laplace grid's) it is 0.024 below there, 0.072 at 10x fewer records."""
    from privgp.tasks import forecast as F

    plan = plan_auto(100_000, Box.unit(2), IDENTITY, epsilon=1.0, delta=1e-7, grid=41)
    full = F.forecast(plan, reps=3)
    assert full.simulated_n == 100_000
    monkeypatch.setattr(F, "SIMULATED_N", 20_000)
    scaled = F.forecast(plan, reps=3)
    assert scaled.simulated_n == 20_000 and "scaled" in scaled.words()
    assert scaled.iou <= full.iou + 0.01 and full.iou - scaled.iou < 0.03


def test_grid_type_certificates_state_their_assumptions():
    """The noisy grids' and eq. (37)'s certificates say what their sensitivity rests on (replace-one, records in
    the public box, responses clipped to |y| <= 1, settings fixed before the data), as the other mechanisms'
    do; certificate.json and `privgp verify` print them (an older certificate without them still verifies:
    assumptions are words, not compared numbers)."""
    from privgp.mechanisms.registered.laplace_grid import plan_laplace_grid

    plans = [plan_grid(200, BOX, IDENTITY, epsilon=2.0), plan_laplace_grid(200, BOX, IDENTITY, epsilon=2.0),
             plan_discretised_gaussian(200, BOX, IDENTITY, epsilon=2.0)]
    for plan in plans:
        words = plan.certificate.assumptions
        assert any("replacing one record" in a for a in words), plan.mechanism
        assert any(BOX.describe() in a and "|y| <= 1" in a for a in words), plan.mechanism
        assert any("independently of the private data" in a for a in words), plan.mechanism
        assert list(words) == plan.certificate.to_dict()["assumptions"]


@pytest.mark.parametrize("make", ["grid", "laplace"])
@pytest.mark.parametrize("bad,field", [
    (lambda s, c: (s[:3], c[:3]), "statistics"),                     # not one (sum, count) per cell
    (lambda s, c: (s, c + 1.0), "counts"),                           # counts do not add up to n
    (lambda s, c: (s, c - 0.5 * (c > 0)), "counts"),                 # not whole numbers
    (lambda s, c: (s + 1e6, c), "sums"),                             # |sum| > count: responses not clipped
    (lambda s, c: (s * np.nan, c), "statistics"),
])
def test_statistics_reduced_elsewhere_are_checked_before_the_charge(tmp_path, make, bad, field):
    """A release from per-cell statistics (a database, a cluster) checks them against the plan and the sensitivity's
    assumptions before anything is charged: the ledger stays empty."""
    from privgp.errors import InvalidParameterError
    from privgp.ledger import Ledger
    from privgp.mechanisms.registered.grid import cell_statistics
    from privgp.mechanisms.registered.laplace_grid import plan_laplace_grid
    from privgp.mechanisms.release import StatisticsRelease, release

    rng = np.random.default_rng(0)
    box = Box((0.0, 0.0), (1.0, 1.0))
    X, y = rng.uniform(0, 1, (50, 2)), rng.uniform(-1, 1, 50)
    plan_fn = plan_grid if make == "grid" else plan_laplace_grid
    plan = plan_fn(50, box, IDENTITY, epsilon=1.0, cells=4, grid=9)
    sums, counts = cell_statistics(box, plan.cells, X, y)
    release(StatisticsRelease(plan, (sums, counts)), (X, y), Ledger(tmp_path / "ok.sqlite"), rng)  # genuine: fine
    ledger = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(InvalidParameterError, match=field):
        release(StatisticsRelease(plan, bad(sums, counts)), (X, y), ledger, rng)
    assert ledger.entries() == []


def test_site_statistics_of_every_snapped_mechanism_are_checked_by_one_rule():
    """The posterior-sample and functional plans released from per-site statistics go through the same check as the
    grids (check_site_statistics), with their response bound M_Y."""
    from privgp.errors import InvalidParameterError
    from privgp.mechanisms.release import check_site_statistics

    counts, sums = np.array([2.0, 0.0, 3.0]), np.array([1.5, 0.0, -2.0])
    assert np.array_equal(check_site_statistics(sums, counts, 3, 5), counts)
    with pytest.raises(InvalidParameterError, match="sums"):
        check_site_statistics(sums * 2, counts, 3, 5)
    check_site_statistics(sums * 2, counts, 3, 5, response_bound=2.0)   # |y| <= M_Y = 2
    with pytest.raises(InvalidParameterError, match="counts"):
        check_site_statistics(sums, counts, 3, 6)


def test_the_gaussian_grids_low_bits_no_longer_tell_a_record_apart_and_float_plans_are_refused(tmp_path):
    """Red team 21: with float Gaussian noise a released count in (-0.5, 0.5) was a multiple of 2^-53 exactly when
    the cell held a record (delta(5) >= 0.14 at a certified (5, 1e-6)); the discrete release puts every released
    number on the lattice g in both neighbouring datasets. A float plan is refused before the charge."""
    import dataclasses

    import privgp
    from privgp.errors import InvalidParameterError

    plan = plan_grid(211, Box.unit(2), IDENTITY, epsilon=5.0, cells=8, grid=5)   # a small map: fast draws
    g = plan.lattice
    rng = np.random.default_rng(5)
    for out in released_counts_of_a_moved_record(plan, 100, rng):   # every draw on the lattice, not most of them
        assert np.array_equal(out / g, np.rint(out / g))
    legacy = plan_grid(211, Box.unit(2), IDENTITY, epsilon=5.0, cells=8, grid=5, _noise="float")
    out = released_counts_of_a_moved_record(legacy, 50, rng)[0]
    assert not np.array_equal(out / g, np.rint(out / g))          # what float noise released (the test can fail)
    x = np.random.default_rng(0)
    records = privgp.records(x.random((40, 2)), x.uniform(-1, 1, 40))
    ledger = privgp.Ledger(tmp_path / "l.sqlite")
    for bad in (dataclasses.replace(privgp.plan("grid", 40, Box.unit(2), IDENTITY, epsilon=1.0), noise="float"),
                plan_grid(40, Box.unit(2), IDENTITY, epsilon=1.0, _noise="float")):
        with pytest.raises(InvalidParameterError, match="^plan must be a"):   # its rebuild differs, or float noise
            privgp.release(bad, records, ledger, x, budget_epsilon=10, allow_noisy=True)
    assert ledger.entries() == []


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 30), st.integers(1, 10), st.floats(0.05, 50.0), st.integers(0, 2**32 - 1))
def test_the_lattice_statistics_move_by_at_most_the_stated_l2_sensitivity(n, cells, epsilon, seed):
    rng = np.random.default_rng(seed)
    plan = plan_grid(n, BOX, IDENTITY, epsilon=epsilon, cells=cells, grid=5)
    k = plan.lattice_exponent
    X, y, X2, y2 = replaced_neighbour(rng, BOX, n)

    def lattice_values(X_, y_):
        s, c = cell_statistics(plan.domain, plan.cells, X_, y_)
        return np.concatenate([np.rint(np.ldexp(s, k)).ravel(), np.ldexp(c, k).ravel()])

    shift = np.ldexp(lattice_values(X, y) - lattice_values(X2, y2), -k)
    assert float(np.sqrt(np.sum(shift ** 2))) <= plan.sensitivity
    assert plan.event.rho >= plan.sensitivity ** 2 / (2 * plan.noise_std ** 2)


def test_the_discrete_grids_refuse_what_their_lattice_or_sampler_cannot_hold():
    """Red team 23: n >= 2^52 gave a negative lattice exponent and the counts were shifted to 0; the discrete
    samplers' work arrays (about 200 bytes per cell) were not in the memory estimate. Both refused at planning."""
    import math

    from privgp.errors import InvalidParameterError
    from privgp.mechanisms.registered.laplace_grid import plan_laplace_grid

    for plan in (plan_grid, plan_laplace_grid):
        with pytest.raises(InvalidParameterError, match="^n must be at most 2\\^51"):
            plan(2**52, BOX, IDENTITY, epsilon=1.0, delta=1e-6, cells=2, grid=5, memory_limit=math.inf)
        with pytest.raises(InvalidParameterError, match="^memory must be at most"):
            plan(1000, Box.unit(2), IDENTITY, epsilon=1.0, cells=900, grid=5, memory_limit=48 * 2**20)
        assert plan(2**51, BOX, IDENTITY, epsilon=1.0, delta=1e-6, cells=2, grid=5, memory_limit=math.inf)
