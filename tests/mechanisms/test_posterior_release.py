"""The posterior-sample release mechanism: response map, planning/certification, exact sampling."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privgp.errors import AssumptionError, InvalidParameterError
from privgp.mechanisms.posterior_release import plan_posterior_sample as plan_release
from privgp.mechanisms.posterior_release import sample_release
from privgp.mechanisms.posterior_sample import epsilon_posterior_sampling
from privgp.mechanisms.release import ResponseMap, default_delta, grid_sizes
from privgp.models.domain import Box
from privgp.models.gp import ExactPosterior
from privgp.models.kernels import make_kernel
from privgp.models.sampling import snap_to_lattice

UNIT = Box.unit(1)
RECT = Box((0.0, 0.0), (2.0, 1.0))


# -- responses (seed 000, App. D.2) -------------------------------------------------------------

@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=30),
       st.floats(-100, 100), st.floats(1e-3, 1e3))
def test_response_map_bounded_and_sign_preserving(z, t, B):
    m = ResponseMap(threshold=t, clip=B)
    z = np.asarray(z)
    y = m.apply(z)
    assert np.all(np.abs(y) <= 1.0)
    assert np.all((y > 0) == (z > t))
    inside = np.abs(z - t) <= B
    np.testing.assert_allclose(y[inside], (z[inside] - t) / B, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(y[~inside], np.sign(z[~inside] - t))


def test_response_map_log_and_inverse():
    m = ResponseMap(threshold=50.0, clip=1.0, transform="log")
    z = np.array([20.0, 50.0, 60.0, 400.0, 3.0])
    y = m.apply(z)
    np.testing.assert_allclose(y[:3], np.log(z[:3] / 50.0))
    np.testing.assert_array_equal(y[3:], [1.0, -1.0])
    np.testing.assert_allclose(m.to_response_units(y[:3]), z[:3])
    with pytest.raises(InvalidParameterError, match="responses"):
        m.apply([1.0, 0.0])
    for bad in ([1.0, 0.0, -2.0], [5.0, math.nan]):   # check() alone refuses what apply() refuses, counting them
        with pytest.raises(InvalidParameterError, match=f"{len(bad) - 1} value"):
            m.check(bad)
    m.check(z)
    assert isinstance(m.apply(60.0), float) and m.apply(60.0) == pytest.approx(math.log(60 / 50))
    for bad in (dict(threshold=0.0, clip=1.0, transform="log"), dict(threshold=1.0, clip=0.0),
                dict(threshold=1.0, clip=1.0, transform="sqrt"), dict(threshold=math.nan, clip=1.0)):
        with pytest.raises(InvalidParameterError):
            ResponseMap(**bad)


def test_grid_sizes_follow_the_box_shape():
    assert grid_sizes(RECT, 81) == (81, 41)
    assert grid_sizes(UNIT, 7) == (7,)
    assert grid_sizes(Box((0, 0), (100, 1)), 11) == (11, 2)
    assert grid_sizes(Box((850, 500), (1000, 590)), 121) == (121, 73)


# -- planning and certification -------------------------------------------------------------------

RMAP = ResponseMap(threshold=0.0, clip=1.0)


def reference_epsilon(n, r, sigma, delta, domain, lengthscale, eta=0.0, L=1, sensitivity="generic"):
    return float(epsilon_posterior_sampling(n, r, sigma, delta, kernel="exponential", lengthscale=lengthscale,
                                            domain=domain, eta=eta, L=L, sensitivity=sensitivity).epsilon)


@pytest.mark.parametrize("n", [20, 300])
def test_certificate_is_for_this_n_delta_and_domain(n):
    plan = plan_release(n, RECT, RMAP, r=2.0, sigma=0.8, lengthscale=0.5, grid=9)
    assert plan.delta == pytest.approx(default_delta(n)) and plan.delta <= min(1e-6, 0.1 / n)
    ref = reference_epsilon(n, 2.0, 0.8, default_delta(n), RECT, 0.5)
    assert plan.epsilon == pytest.approx(ref, rel=1e-3)
    assert plan.sensitivity == "generic" and plan.hyperparameter_source == "given"
    bigger = plan_release(n, Box((0.0, 0.0), (20.0, 10.0)), RMAP, r=2.0, sigma=0.8, lengthscale=0.5, grid=9)
    assert bigger.epsilon >= plan.epsilon  # a larger public domain gives a smaller kappa: weaker bound


def test_calibrated_r_meets_the_target_and_is_nearly_smallest():
    n, target = 150, 2.0
    plan = plan_release(n, RECT, RMAP, target_epsilon=target, sigma=1.0, lengthscale=0.4, grid=9)
    assert plan.hyperparameter_source == "calibrated r"
    assert plan.epsilon <= target
    d = default_delta(n)
    assert reference_epsilon(n, plan.r, 1.0, d, RECT, 0.4) <= target * (1 + 1e-6)
    assert reference_epsilon(n, 0.97 * plan.r, 1.0, d, RECT, 0.4) > target


def test_calibrated_eta_when_r_is_given():
    n, target = 100, 1.0
    d = default_delta(n)
    r = 1.0
    assert reference_epsilon(n, r, 1.0, d, RECT, 0.4) > target  # r alone is not enough
    plan = plan_release(n, RECT, RMAP, target_epsilon=target, r=r, sigma=1.0, lengthscale=0.4, grid=9)
    assert plan.hyperparameter_source == "calibrated eta" and plan.r == r and plan.eta > 0
    assert plan.epsilon <= target
    assert reference_epsilon(n, r, 1.0, d, RECT, 0.4, eta=plan.eta) <= target * (1 + 1e-6)
    assert reference_epsilon(n, r, 1.0, d, RECT, 0.4, eta=0.97 * plan.eta) > target
    with pytest.raises(InvalidParameterError, match="eta"):
        plan_release(n, RECT, RMAP, target_epsilon=target, r=r, eta=0.5, grid=9)


def test_sensitivity_lemma_choice():
    p1 = plan_release(50, UNIT, RMAP, r=1.0, sigma=1.0, lengthscale=0.3)
    assert p1.sensitivity == "exp1d"
    assert p1.epsilon == pytest.approx(reference_epsilon(50, 1.0, 1.0, default_delta(50), UNIT, 0.3,
                                                         sensitivity="exp1d"), rel=1e-3)
    assert plan_release(50, UNIT, RMAP, r=1.0, lengthscale=0.3, sensitivity="generic").epsilon > p1.epsilon
    assert plan_release(50, UNIT, RMAP, r=1.0, kernel="matern52", lengthscale=0.3).sensitivity == "generic"
    with pytest.raises(AssumptionError):
        plan_release(50, RECT, RMAP, r=1.0, sensitivity="exp1d", grid=9)


def test_plan_rejects_bad_settings():
    with pytest.raises(InvalidParameterError, match="r must be given"):
        plan_release(50, RECT, RMAP, grid=9)
    with pytest.raises(InvalidParameterError, match="grid"):
        plan_release(50, RECT, RMAP, r=1.0, grid=400, snap=None)  # dense sampling of 400 x 200 points refused
    assert plan_release(50, RECT, RMAP, r=1.0, grid=400, snap=1).snap == 1
    with pytest.raises(InvalidParameterError):
        plan_release(50, RECT, RMAP, r=1.0, delta=1.5, grid=9)
    with pytest.raises(InvalidParameterError):
        plan_release(50, RECT, RMAP, r=1.0, L=0, grid=9)


def test_default_lengthscale_uses_only_the_domain():
    plan = plan_release(50, RECT, RMAP, r=1.0, grid=9)
    assert plan.lengthscale == pytest.approx(math.sqrt(5.0) / 5.0)


# -- sampling: the released paths have the law the certificate is about -------------------------

def check_law(paths, mean, var):
    """Per grid point: sample mean within 5 SE of mean, sample variance within 5 SE of var."""
    L = paths.shape[0]
    m = paths.reshape(L, -1)
    se_mean = np.sqrt(var / L)
    assert np.all(np.abs(m.mean(0) - mean) <= 5 * se_mean)
    se_var = var * np.sqrt(2.0 / (L - 1))
    assert np.all(np.abs(m.var(0, ddof=1) - var) <= 5 * se_var)


@pytest.mark.parametrize("case", ["exp1d", "dense1d", "dense2d", "snap2d"])
def test_released_paths_follow_the_posterior(case):
    rng = np.random.default_rng(20260611)
    domain, kernel, snap, grid = {
        "exp1d": (UNIT, "exponential", None, 9), "dense1d": (UNIT, "matern52", None, 9),
        "dense2d": (RECT, "matern32", None, 7), "snap2d": (RECT, "exponential", 1, 7)}[case]
    n, L, r, sigma, eta = 12, 3000, 0.6, 0.8, 0.3
    X = rng.uniform(domain.lower, domain.upper, size=(n, domain.dim))
    z = rng.normal(0.0, 2.0, n)
    rmap = ResponseMap(threshold=0.5, clip=1.5)
    plan = plan_release(n, domain, rmap, kernel=kernel, lengthscale=0.4, r=r, sigma=sigma, eta=eta, L=L,
                        grid=grid, snap=snap)
    rel = sample_release(plan, X, z, rng)
    assert rel.paths.shape == (L,) + plan.grid
    G = rel.grid_points()
    Xfit = X if snap is None else snap_to_lattice(X, plan.axes(), snap)
    k = make_kernel(kernel, 0.4)
    post = ExactPosterior(k, Xfit, rmap.apply(z), r, sigma)
    check_law(rel.paths, post.mean(G), post.var(G) + eta**2 * k.diag(G))
    assert rel.excursion().shape == rel.paths.shape


def test_sample_release_checks_inputs():
    plan = plan_release(3, UNIT, RMAP, r=1.0, grid=5)
    rng = np.random.default_rng(1)
    with pytest.raises(InvalidParameterError, match="public domain"):
        sample_release(plan, [0.1, 0.5, 1.2], [0.0, 1.0, 2.0], rng)
    with pytest.raises(InvalidParameterError, match="rows"):
        sample_release(plan, [0.1, 0.5], [0.0, 1.0], rng)
    with pytest.raises(InvalidParameterError, match="rng"):
        sample_release(plan, [0.1, 0.5, 0.7], [0.0, 1.0, 2.0], 0)
