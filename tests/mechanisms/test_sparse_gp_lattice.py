"""Exact discrete noise of a sparse-GP release (privgp.mechanisms.sparse_gp_lattice): the lattice statistics are
exact (independent of order, blocking and partition), one record moves them by at most the sensitivity the event
uses, the noise drawn is at least what the event assumes, and the released statistics are whole lattice steps, so
their low-order bits carry nothing of the data (red team 20f's one-inducing-point attack)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.accounting import accountant
from privgp.errors import InvalidParameterError
from privgp.mechanisms.release import ResponseMap
from privgp.mechanisms.sparse_gp import kernel_vectors
from privgp.mechanisms.sparse_gp_lattice import (
    LATTICE_BITS,
    LatticeAccumulator,
    lattice_exponent,
    lattice_noise,
    lattice_records,
    lattice_statistics,
    privatise_lattice,
    weighted_lattice_noise,
)
from privgp.mechanisms.sparse_gp_release import plan_sparse_gp
from privgp.models.domain import Box

BOX = Box((0.0, 0.0), (2.0, 1.0))


def _plan(**kw):
    return plan_sparse_gp(500, BOX, ResponseMap(0.0, 1.0), epsilon=kw.pop("epsilon", 2.0), delta=1e-6, **kw)


def _records(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 1, (n, 2)) * [2.0, 1.0], rng.uniform(-1.5, 1.5, n)


def test_lattice_exponent_is_the_coarsest_power_of_two_below_2_to_the_16th_of_the_bound():
    for bound in (1.0, 0.75, 2.0, 3.0, 1e-3, 12345.6, 2.0**-40):
        e = lattice_exponent(bound)
        assert bound * 2.0**e <= 2.0**LATTICE_BITS < bound * 2.0 ** (e + 1)


def test_the_statistics_are_exact_whatever_the_order_and_partition():
    plan = _plan()
    X, y = _records(5000)
    A, B, n, nc = lattice_statistics(X, y, plan.spec, plan.lattice)
    assert A.dtype == B.dtype == np.int64 and n == 5000 and nc > 0 and np.array_equal(B, B.T)
    perm = np.random.default_rng(1).permutation(5000)
    A2, B2, _, _ = lattice_statistics(X[perm], y[perm], plan.spec, plan.lattice)
    parts = [LatticeAccumulator(plan.spec, plan.lattice).add(X[i:i + 777], y[i:i + 777]) for i in range(0, 5000, 777)]
    merged = parts[0]
    for p in parts[1:]:
        merged = merged.merge(p)
    assert np.array_equal(A, A2) and np.array_equal(B, B2)
    assert np.array_equal(A, merged.result()[0]) and np.array_equal(B, merged.result()[1])
    # and they are the exact integer sums of the rounded records (Python integers, no float)
    Ki, yi = lattice_records(kernel_vectors(X, plan.spec), np.clip(y, -1, 1), plan.lattice)
    Ki_int, yi_int = Ki.astype(np.int64), yi.astype(np.int64)
    assert [int(a) for a in A] == [sum(int(k) * int(t) for k, t in zip(row, yi_int)) for row in Ki_int]
    j, l = 3, 17
    assert int(B[j, l]) == sum(int(a) * int(b) for a, b in zip(Ki_int[j], Ki_int[l]))


def test_the_noise_drawn_is_at_least_what_the_event_assumes():
    for ratio in (1.0, 0.3, "min-sensitivity"):
        plan = _plan(noise_ratio=ratio)
        lat, spec = plan.lattice, plan.spec
        assert lat.steps_a * lat.unit_a >= lat.sigma_a
        assert lat.steps_diag * lat.unit_b >= lat.sigma_a / spec.noise_ratio
        assert lat.steps_off * lat.unit_b * math.sqrt(2.0) >= lat.sigma_a / spec.noise_ratio
        assert lat.event.rho >= lat.sensitivity**2 / (2 * lat.sigma_a**2)
        assert accountant.epsilon(lat.event, 1e-6).epsilon <= 2.0
        assert plan.noise.sigma_a == lat.std_a and plan.noise.sigma_b == lat.std_b   # the posterior is told these


@settings(max_examples=60, deadline=None)
@given(x1=st.tuples(st.floats(0, 2), st.floats(0, 1)), x2=st.tuples(st.floats(0, 2), st.floats(0, 1)),
       y1=st.floats(-1, 1), y2=st.floats(-1, 1), ratio=st.sampled_from([1.0, 0.25, 4.0]))
def test_one_record_moves_the_scaled_statistics_by_at_most_the_sensitivity(x1, x2, y1, y2, ratio):
    """Lemma 5 on the rounded records: ||[dA ; ratio dB^]|| <= Delta' (the event's), in the units of the noise."""
    plan = _plan(noise_ratio=ratio)
    lat, spec = plan.lattice, plan.spec
    X = np.array([x1, x2])
    Ki, yi = lattice_records(kernel_vectors(X, spec), np.array([y1, y2]), lat)
    k = Ki * 2.0**-lat.kernel_exponent
    t = yi * 2.0**-lat.response_exponent
    dA = t[0] * k[:, 0] - t[1] * k[:, 1]
    dB = np.outer(k[:, 0], k[:, 0]) - np.outer(k[:, 1], k[:, 1])
    iu = np.triu_indices(spec.n_inducing, 1)
    packed = np.concatenate([np.diag(dB), math.sqrt(2.0) * dB[iu]])
    change = math.sqrt(float(dA @ dA) + spec.noise_ratio**2 * float(packed @ packed))
    assert change <= lat.sensitivity * (1 + 1e-12)


def test_released_statistics_are_whole_lattice_steps():
    """Red team 20f's attack read a~ from a one-point release and tested its low bits: now a~ and B~ are integers
    times public powers of two whatever the records, so those bits are the noise's integers alone."""
    plan = plan_sparse_gp(200, BOX, ResponseMap(0.0, 1.0), epsilon=5.0, inducing=1)
    assert plan.float_noise_leak() is None and plan.spec.n_inducing == 1
    X, y = _records(200)
    for y_case in (np.zeros(200), np.where(np.arange(200) == 0, 1.0, 0.0), y):
        rel = plan.draw(*plan.check(X, y_case), np.random.default_rng(3))
        a_steps = rel.a_released / plan.lattice.unit_a
        B_steps = rel.B_released / plan.lattice.unit_b
        assert np.array_equal(a_steps, np.rint(a_steps)) and np.array_equal(B_steps, np.rint(B_steps))


def test_the_draw_from_reduced_statistics_is_the_draw_from_records():
    plan = _plan()
    X, y = _records(500)
    Xc, yc = plan.check(X, y)
    direct = plan.draw(Xc, yc, np.random.default_rng(7))
    A, B, n, nc = LatticeAccumulator(plan.spec, plan.lattice).add(Xc[:200], yc[:200]).merge(
        LatticeAccumulator(plan.spec, plan.lattice).add(Xc[200:], yc[200:])).result()
    plan.check_statistics(A, B, n, nc)
    again = plan.draw_from_statistics(A, B, n, nc, np.random.default_rng(7))
    assert np.array_equal(direct.mean, again.mean) and np.array_equal(direct.S, again.S)


def test_noise_steps_match_the_discrete_gaussian_they_name():
    plan = _plan()
    d = plan.spec.n_inducing
    zero_A, zero_B = np.zeros(d, dtype=np.int64), np.zeros((d, d), dtype=np.int64)
    draws = np.array([privatise_lattice(zero_A, zero_B, plan.lattice, np.random.default_rng(s))[0] for s in range(40)])
    z = draws.ravel() / plan.lattice.std_a
    assert abs(z.mean()) < 0.1 and abs(z.std() - 1.0) < 0.06   # 1600 draws: se 0.025 and 0.018


def test_records_beyond_the_integer_range_are_refused_before_anything():
    with pytest.raises(InvalidParameterError, match="2\\^28"):
        plan_sparse_gp(2**28 + 1, BOX, ResponseMap(0.0, 1.0), epsilon=1.0)
    plan_sparse_gp(2**28 + 1, BOX, ResponseMap(0.0, 1.0), epsilon=1.0, _noise="float")   # an earlier certificate's


def test_simulations_draw_the_same_stds_without_the_exact_sampler():
    """The forecast and the studies simulate public synthetic data with the float twin (simulation_twin): the very
    stds the release's discrete noise has; a plan without a twin is itself."""
    from privgp.mechanisms.interface import simulation_twin
    from privgp.mechanisms.registered.grid import plan_grid

    plan = _plan()
    twin = simulation_twin(plan)
    assert twin.lattice is None and plan.lattice is not None
    assert (twin.noise.sigma_a, twin.noise.sigma_b) == (plan.lattice.std_a, plan.lattice.std_b)
    X, y = _records(500)
    rel = twin.draw(*twin.check(X, y), np.random.default_rng(0))
    assert not np.array_equal(rel.a_released / plan.lattice.unit_a, np.rint(rel.a_released / plan.lattice.unit_a))
    grid = plan_grid(500, BOX, ResponseMap(0.0, 1.0), epsilon=1.0)
    assert simulation_twin(grid) is grid


def test_the_estimators_and_library_fits_draw_the_exact_noise_and_the_float_opt_in_refuses_one_point():
    """Red team 21a H1: DPSparseGPRegressor drew the paper's float noise, and with one inducing point 20f's attack
    gave delta(5) >= 0.097. It now draws the release's lattice noise (its statistics whole steps), as do the
    classifier, Alg. 2's selection and fit_sparse_gp by default; their float noise is opt-in and refuses one point."""
    from privgp.accounting.events import ZcdpEvent
    from privgp.mechanisms import DPDirichletGPClassifier, DPSparseGPRegressor
    from privgp.mechanisms.private_selection import select_sparse_gp
    from privgp.mechanisms.sparse_gp import fit_sparse_gp, sparse_gp_spec

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 1))
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.standard_normal(300)
    for Z in ([[0.5]], None):
        gp = DPSparseGPRegressor(inducing_points=Z, box=(-1, 1), n_inducing=6, epsilon=5.0, random_state=1).fit(X, y)
        rel = gp.release_
        assert isinstance(gp.event_, ZcdpEvent) and gp.certificate_.epsilon <= 5.0
        unit_a = 2.0**-32   # the lattice unit g_k g_y (sigma_f^2 = R_y = 1: 2^-16 each)
        assert np.array_equal(rel.a_released / unit_a, np.rint(rel.a_released / unit_a))
    # red team 21b: the classifier, fit_sparse_gp and Alg. 2 handed back float-noised statistics (delta(5) >= 0.03 at
    # the classifier's default 16 points): they draw the exact noise by default too (weighted lattices for the
    # classifier); the paper's float noise is opt-in (noise="float", for reproductions) and refuses one point
    clf = DPDirichletGPClassifier(inducing_points=[[0.5], [-0.5]], epsilon=5.0, random_state=1).fit(X, (y > 0).astype(int))
    assert clf.certificate_.epsilon <= 5.0
    for rel in clf.releases_:   # a~ and B~ in units of the weighted lattices: whole numbers
        for stat, unit in ((rel.a_released, clf.lattice_.unit_a), (rel.B_released, clf.lattice_.unit_b)):
            assert np.array_equal(stat / unit, np.rint(stat / unit))
    spec = sparse_gp_spec([[0.5]], response_bound=1.0)
    exact = fit_sparse_gp(X, y, spec, noise_std=0.1, epsilon=5.0, delta=1e-5, rng=np.random.default_rng(0))
    assert np.array_equal(exact.a_released / 2.0**-32, np.rint(exact.a_released / 2.0**-32))
    with pytest.raises(InvalidParameterError, match="at least 2 with the paper's float noise"):
        fit_sparse_gp(X, y, spec, noise_std=0.1, epsilon=5.0, delta=1e-5, rng=np.random.default_rng(0), noise="float")
    with pytest.raises(InvalidParameterError, match="at least 2 with the paper's float noise"):
        select_sparse_gp(X, y, [(0.5, 0.1), (1.0, 0.1)], inducing_points=[[0.5]], response_bound=1.0,
                         epsilon_total=5.0, delta_total=1e-5, rng=np.random.default_rng(0), noise="float")
    with pytest.raises(InvalidParameterError, match="noise"):
        fit_sparse_gp(X, y, spec, noise_std=0.1, epsilon=5.0, delta=1e-5, rng=np.random.default_rng(0), noise="exact")


@settings(max_examples=60, deadline=None)
@given(x1=st.floats(-1, 1), x2=st.floats(-1, 1), y1=st.floats(-2, 2), y2=st.floats(-2, 2),
       v1=st.floats(0.005, 2.0), v2=st.floats(0.005, 2.0))
def test_one_weighted_record_moves_the_scaled_statistics_by_at_most_the_sensitivity(x1, x2, y1, y2, v1, v2):
    """App. D on the weighted lattices: ||[dA ; ratio dB^]|| <= Delta' of weighted_lattice_noise, in the noise's units,
    for records with any noise variances (clipped into the public bounds)."""
    from privgp.mechanisms.sparse_gp import NoiseBounds, sparse_gp_spec
    from privgp.mechanisms.sparse_gp_lattice import weighted_lattice_noise, weighted_lattice_statistics

    spec = sparse_gp_spec(np.linspace(-1, 1, 5)[:, None], response_bound=1.5, noise_ratio=0.5)
    bounds = NoiseBounds(0.01, 1.0, weighted_response_bound=40.0)
    lat = weighted_lattice_noise(spec=spec, bounds=bounds, epsilon=2.0, delta=1e-5)
    one = [weighted_lattice_statistics(np.array([[x]]), np.array([yy]), np.array([vv]), spec, bounds, lat)
           for x, yy, vv in ((x1, y1, v1), (x2, y2, v2))]
    dA = (one[0][0] - one[1][0]) * lat.unit_a
    dB = (one[0][1] - one[1][1]) * lat.unit_b
    iu = np.triu_indices(spec.n_inducing, 1)
    packed = np.concatenate([np.diag(dB), math.sqrt(2.0) * dB[iu]])
    change = math.sqrt(float(dA @ dA) + spec.noise_ratio**2 * float(packed @ packed))
    assert change <= lat.sensitivity


def test_a_weight_beyond_the_lattice_range_is_refused_naming_min_noise_var():
    """Red team 21d L4: NoiseBounds(1e-300) (weights up to 1e300) was refused as a bad weighted_response_bound."""
    from privgp.mechanisms.sparse_gp import NoiseBounds, fit_sparse_gp_heteroscedastic, sparse_gp_spec

    spec = sparse_gp_spec(np.linspace(-1, 1, 4)[:, None], response_bound=1.0)
    with pytest.raises(InvalidParameterError, match="^min_noise_var must be such that response_bound / min_noise_var"):
        fit_sparse_gp_heteroscedastic(np.zeros((5, 1)), np.zeros(5), np.ones(5), spec, NoiseBounds(1e-300), epsilon=1.0,
                                      delta=1e-5, rng=np.random.default_rng(0))


@pytest.mark.parametrize("changed, named", [
    (dict(signal_variance=1e-100), "signal_variance"), (dict(response_bound=1e-100), "response_bound"),
    (dict(epsilon=1e-6, delta=1e-12), "epsilon"), (dict(noise_ratio=1e-12), "noise_ratio"),
    (dict(noise_ratio=1e12), "noise_ratio"),
    # red team 22a F3: a ratio away from 1 is not named where a ratio of 1 would not fit either
    (dict(response_bound=1e-100, noise_ratio=2.0), "response_bound"),
    (dict(signal_variance=1e-100, noise_ratio=3.0), "signal_variance"),
    (dict(signal_variance=1e-30, noise_ratio=0.9), "signal_variance"),
    # red team 22b F4: responses in the thousands named the signal variance the caller had left at 1
    (dict(response_bound=1e6), "response_bound")])
def test_noise_beyond_the_lattice_names_the_parameter_that_makes_it_so(changed, named):
    """Red team 21d L4: a tiny signal_variance or response_bound, whose lattice is too fine for the noise the other
    scale sets, was refused as a bad epsilon; epsilon is named only where a moderate one would fit."""
    from privgp.mechanisms.sparse_gp import sparse_gp_spec

    budget = {k: changed.pop(k) for k in ("epsilon", "delta") if k in changed}
    spec = sparse_gp_spec(np.linspace(-1, 1, 4)[:, None], **{"response_bound": 1.0, **changed})
    with pytest.raises(InvalidParameterError, match=f"^{named} must be such that the noise is at most 2\\^56"):
        lattice_noise(spec, **{"epsilon": 1.0, "delta": 1e-6, **budget})
    if named != "epsilon":   # the same scales with the other parameters' defaults: named the same at any epsilon
        with pytest.raises(InvalidParameterError, match=f"^{named} must"):
            lattice_noise(spec, epsilon=100.0, delta=1e-6)


def test_a_tiny_weighted_response_bound_is_named():
    from privgp.mechanisms.sparse_gp import NoiseBounds, sparse_gp_spec

    spec = sparse_gp_spec(np.linspace(-1, 1, 4)[:, None], response_bound=1.0)
    with pytest.raises(InvalidParameterError, match="^weighted_response_bound must be such that the noise"):
        weighted_lattice_noise(spec=spec, bounds=NoiseBounds(0.01, 0.5, 1e-20), epsilon=1.0, delta=1e-5)


@pytest.mark.parametrize("signal_variance", [1e-100, 1e30, 1e100])
def test_the_classifier_names_its_own_parameters(signal_variance):
    """Red team 22a F4: the classifier was refused naming min_noise_var or weighted_response_bound, which it derives
    from alpha_epsilon and does not take."""
    from privgp.mechanisms.sparse_gp_estimator import DPDirichletGPClassifier

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (60, 2))
    with pytest.raises(InvalidParameterError, match="^signal_variance must be such that "):   # 1e100: the float range
        DPDirichletGPClassifier(signal_variance=signal_variance, box=(0, 1), random_state=0).fit(X, X[:, 0] > 0.5)


def test_a_derived_bound_is_named_as_the_parameter_it_comes_from():
    from privgp.mechanisms.sparse_gp import NoiseBounds, sparse_gp_spec

    spec = sparse_gp_spec(np.linspace(-1, 1, 4)[:, None], response_bound=1.0)
    with pytest.raises(InvalidParameterError, match="^alpha_epsilon must be such that, with min_noise_var derived from "
                                                    "it, response_bound / min_noise_var is between 2\\^-384"):
        weighted_lattice_noise(spec=spec, bounds=NoiseBounds(1e-300), epsilon=1.0, delta=1e-5,
                               renamed={"min_noise_var": ("alpha_epsilon", 7.0)})
