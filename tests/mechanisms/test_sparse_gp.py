"""The DP sparse-GP mechanism (seed 001, Alg. 1, eq. 5), its calibration, its estimators and bad input."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from dp_accounting.pld import accountant as pld_accountant
from dp_accounting.pld import common as pld_common
from hypothesis import given, settings
from hypothesis import strategies as hst
from sklearn.exceptions import NotFittedError

from privgp.accounting import accountant
from privgp.accounting.events import ComposedEvent, event_from_dict
from privgp.errors import InvalidParameterError
from privgp.mechanisms.sparse_gp import (
    NoiseBounds,
    calibrate_noise,
    fit_sparse_gp,
    fit_sparse_gp_heteroscedastic,
    kernel_vectors,
    pack_upper,
    sparse_gp_fit_predict,
    sparse_gp_spec,
    sufficient_statistics,
    unpack_upper,
)
from privgp.mechanisms.sparse_gp_estimator import DPDirichletGPClassifier, DPSparseGPRegressor, dirichlet_targets
from privgp.models.gp.sparse_posterior import noise_aware_posterior
from privgp.models.kernels import KERNELS

REF = json.loads((Path(__file__).resolve().parents[1] / "data" / "sparse_gp_reference.json").read_text())
Z9 = np.linspace(-3, 3, 9)


def sinc_data(n, seed=0, sigma=0.1):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, 4, n)
    return x, np.sinc(2 * x / np.pi) + sigma * rng.standard_normal(n)


# ----------------------------------------------------------------------------------------- packing
def test_pack_unpack_and_feature_map_identities():
    rng = np.random.default_rng(0)
    k, k2 = rng.uniform(0, 1, 6), rng.uniform(0, 1, 6)
    tb, tb2 = pack_upper(np.outer(k, k)), pack_upper(np.outer(k2, k2))
    assert tb.shape == (21,)
    assert np.linalg.norm(tb) == pytest.approx(np.linalg.norm(k) ** 2, rel=1e-13)
    assert tb @ tb2 == pytest.approx((k @ k2) ** 2, rel=1e-13)
    M = rng.normal(size=(6, 6))
    M = M + M.T
    np.testing.assert_allclose(unpack_upper(pack_upper(M), 6), M, rtol=1e-14)
    noise = unpack_upper(rng.standard_normal((20000, 21)), 6)
    assert np.var(noise[:, 2, 2]) == pytest.approx(1.0, abs=0.04)         # diagonal: sigma_b^2
    assert np.var(noise[:, 1, 4]) == pytest.approx(0.5, abs=0.02)         # off-diagonal: sigma_b^2 / 2
    assert np.all(noise[:, 1, 4] == noise[:, 4, 1])


# ------------------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("row", REF["agm_sigma"])
def test_calibration_matches_mpmath_and_dp_accounting(row):
    cal = calibrate_noise(1.0, row["epsilon"], row["delta"], 1.0)
    assert cal.sigma_a == pytest.approx(row["sigma"], rel=1e-9)
    ref = pld_accountant.get_smallest_gaussian_noise(pld_common.DifferentialPrivacyParameters(row["epsilon"], row["delta"]))
    assert abs(cal.sigma_a - ref) <= 1e-6
    # feasible side, by the exact profile
    assert accountant.delta(cal.event, row["epsilon"]).delta <= row["delta"]
    assert cal.sigma_b == cal.sigma_a


def test_calibration_scales_with_sensitivity_and_parts():
    a = calibrate_noise(1.0, 1.0, 1e-5, 2.0)
    b = calibrate_noise(7.0, 1.0, 1e-5, 2.0)
    assert b.sigma_a == pytest.approx(7 * a.sigma_a, rel=1e-12)
    assert a.sigma_b == pytest.approx(a.sigma_a / 2.0)
    c = calibrate_noise(1.0, 1.0, 1e-5, 1.0, parts=4)
    assert c.sigma_a == pytest.approx(2 * a.sigma_a, rel=1e-12)   # mu / sqrt(4)
    assert isinstance(c.total_event, ComposedEvent)
    assert accountant.delta(c.total_event, 1.0).delta <= 1e-5
    assert accountant.delta(c.total_event, 1.0).delta == pytest.approx(1e-5, rel=1e-6)  # exactly mu-GDP


def test_noise_does_not_depend_on_n_or_data():
    spec = sparse_gp_spec(Z9, response_bound=1.0)
    rels = []
    for n, seed in ((50, 1), (5000, 2)):
        x, y = sinc_data(n, seed)
        rels.append(fit_sparse_gp(x, y, spec, noise_std=0.1, epsilon=1.0, delta=1e-4, rng=np.random.default_rng(0)))
    assert rels[0].noise == rels[1].noise
    assert rels[0].event == rels[1].event
    assert event_from_dict(rels[0].event.to_dict()) == rels[0].event


def test_large_epsilon_approaches_the_nonprivate_posterior():
    x, y = sinc_data(2000)
    spec = sparse_gp_spec(Z9, response_bound=1.5)
    st = sufficient_statistics(x, y, spec)
    exact = noise_aware_posterior(Z9, spec.kernel, st.A, st.B, scale=0.01, sigma_a=0, sigma_b=0, regularise=False)
    errs = []
    for eps in (1.0, 10.0, 1e3, 1e6):   # the bias of lambda ~ sigma_b fades slowly (about sqrt(sigma_b))
        r = fit_sparse_gp(x, y, spec, noise_std=0.1, epsilon=eps, delta=1e-4, rng=np.random.default_rng(3))
        errs.append(np.linalg.norm(r.posterior.mean - exact.mean))
    assert errs[3] < errs[2] < errs[1] < errs[0]
    assert errs[3] < 0.01


def test_responses_are_clipped_not_assumed():
    x, y = sinc_data(300)
    y[:7] = 50.0
    spec = sparse_gp_spec(Z9, response_bound=1.0)
    st = sufficient_statistics(x, y, spec)
    assert st.n_clipped == 7 + int(np.sum(np.abs(y[7:]) > 1))
    np.testing.assert_allclose(st.A, spec.kernel(Z9, x) @ np.clip(y, -1, 1), rtol=1e-12)
    r = fit_sparse_gp(x, y, spec, noise_std=0.1, epsilon=1.0, delta=1e-4, rng=np.random.default_rng(0))
    assert r.n_clipped == st.n_clipped


def test_statistics_in_blocks_equal_direct():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (1000, 2))
    y = rng.uniform(-1, 1, 1000)
    Z = np.stack(np.meshgrid(np.linspace(-2, 2, 4), np.linspace(-2, 2, 4)), -1).reshape(-1, 2)
    spec = sparse_gp_spec(Z, response_bound=1.0, lengthscale=0.8)
    st = sufficient_statistics(X, y, spec, chunk=77)
    K = spec.kernel(Z, X)
    np.testing.assert_allclose(st.A, K @ y, rtol=1e-12)
    np.testing.assert_allclose(st.B, K @ K.T, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(kernel=hst.sampled_from(sorted(KERNELS) + ["constant"]), lengthscale=hst.floats(0.05, 20.0),
       sf2=hst.floats(0.1, 10.0), seed=hst.integers(0, 2**32 - 1))
def test_kernel_vectors_are_the_scaled_gram_matrix_exactly(kernel, lengthscale, sf2, seed):
    """kernel_vectors computes a distance kernel in place in the distance matrix: the same floats as
    signal_variance * kernel(Z, X), the definition of k_i in eq. 3."""
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-2, 2, (7, 2))
    X = rng.uniform(-3, 3, (int(rng.integers(1, 300)), 2))
    spec = sparse_gp_spec(Z, response_bound=1.0, kernel=kernel, lengthscale=lengthscale, signal_variance=sf2)
    np.testing.assert_array_equal(kernel_vectors(X, spec), sf2 * spec.kernel(Z, X))


# ------------------------------------------------------------------------------------ bad input
def _state(rng):
    return json.dumps(rng.bit_generator.state, default=str)


@pytest.mark.parametrize("change, match", [
    (dict(epsilon=0.0), "epsilon"), (dict(epsilon=math.inf), "epsilon"), (dict(delta=1.0), "delta"),
    (dict(noise_std=-1.0), "noise_std"), (dict(y="short"), "y"), (dict(y="nan"), "y"),
    (dict(X="3d"), "X"), (dict(X="Z"), "inducing_points"),
])
def test_bad_input_is_rejected_before_any_noise(change, match):
    x, y = sinc_data(50)
    spec = sparse_gp_spec(Z9, response_bound=1.0)
    kw = dict(noise_std=0.1, epsilon=1.0, delta=1e-4)
    X = x
    for k, val in change.items():
        if k == "y":
            y = y[:10] if val == "short" else np.where(np.arange(50) == 3, np.nan, y)
        elif k == "X":
            X = np.c_[x, x] if val == "3d" else np.concatenate([Z9, x])
            if val == "Z":
                y = np.zeros(len(X))
        else:
            kw[k] = val
    rng = np.random.default_rng(0)
    before = _state(rng)
    with pytest.raises(InvalidParameterError, match=match):
        fit_sparse_gp(X, y, spec, rng=rng, **kw)
    assert _state(rng) == before


def test_settings_are_validated():
    with pytest.raises(InvalidParameterError, match="response_bound"):
        sparse_gp_spec(Z9, response_bound=0.0)
    with pytest.raises(InvalidParameterError, match="kernel_bound"):
        sparse_gp_spec(Z9, response_bound=1.0, kernel_bound="tight")
    with pytest.raises(InvalidParameterError, match="correction"):
        sparse_gp_spec(Z9, response_bound=1.0, correction="exact")
    with pytest.raises(InvalidParameterError, match="response_bound"):
        x20, y20 = sinc_data(20)
        DPSparseGPRegressor(Z9, response_bound=None, noise_std=0.1, epsilon=1, delta=1e-4).fit(x20[:, None], y20)


# ------------------------------------------------------------------------------------- estimators
def test_regressor_follows_sklearn_conventions():
    x, y = sinc_data(1024)
    est = DPSparseGPRegressor(Z9, response_bound=1.0, noise_std=0.1, epsilon=3.0, delta=1e-4,
                              random_state=np.random.default_rng(1))
    assert not hasattr(est, "mean_")
    with pytest.raises(NotFittedError):
        est.predict([[0.0]])
    assert est.fit(x[:, None], y) is est
    for attr in ("mean_", "covariance_", "event_", "sensitivity_", "sigma_a_", "sigma_b_", "lambda_",
                 "kernel_bound_", "inducing_points_", "n_features_in_"):
        assert hasattr(est, attr)
    assert not hasattr(est, "n_clipped_")   # an exact count of the records the certificate does not cover
    xs = np.linspace(-3, 3, 25)
    mu = est.predict(xs[:, None])
    mu2, sd = est.predict(xs[:, None], return_std=True)
    _, sdy = est.predict(xs[:, None], return_std=True, include_noise=True)
    np.testing.assert_array_equal(mu, mu2)
    assert np.all(sdy > sd)
    assert np.sqrt(np.mean((mu - np.sinc(2 * xs / np.pi)) ** 2)) < 0.15
    assert est.get_params()["epsilon"] == 3.0
    est.set_params(epsilon=10.0)
    assert est.epsilon == 10.0
    with pytest.raises(ValueError, match="parameter"):
        est.set_params(eps=1.0)
    # random_state None: fresh entropy, so two fits differ
    e1 = DPSparseGPRegressor(Z9, response_bound=1.0, noise_std=0.1, epsilon=1.0, delta=1e-4).fit(x[:, None], y)
    e2 = DPSparseGPRegressor(Z9, response_bound=1.0, noise_std=0.1, epsilon=1.0, delta=1e-4).fit(x[:, None], y)
    assert not np.allclose(e1.mean_, e2.mean_)


def test_fit_predict_function():
    x, y = sinc_data(500)
    out = sparse_gp_fit_predict(x, y, np.linspace(-2, 2, 5), epsilon=2.0, delta=1e-4, inducing_points=Z9,
                                noise_std=0.1, response_bound=1.0, rng=np.random.default_rng(0))
    assert out.mean.shape == out.sd.shape == (5,)
    assert 0 < accountant.epsilon(out.event, 1e-4).epsilon <= 2.0   # exact discrete noise: a zCDP event


def test_dirichlet_targets_match_reference():
    for row in REF["dirichlet"]:
        t, s2 = dirichlet_targets(np.array([row["y"]]), row["alpha_epsilon"])
        assert t[0] == pytest.approx(row["target"], rel=1e-12)
        assert s2[0] == pytest.approx(row["noise_var"], rel=1e-12)


def test_dirichlet_classifier_budget_and_accuracy():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (3000, 2))
    lab = np.where(np.hypot(X[:, 0], X[:, 1]) < 1.7, "in", np.where(X[:, 0] > 0, "right", "left"))
    g = np.stack(np.meshgrid(np.linspace(-3, 3, 6), np.linspace(-3, 3, 6)), -1).reshape(-1, 2)
    clf = DPDirichletGPClassifier(g, classes=["in", "left", "right"], epsilon=10.0, delta=1e-5, lengthscale=1.0,
                                  random_state=np.random.default_rng(1)).fit(X, lab)
    # three class releases (exact discrete noise, zCDP) compose to (10, 1e-5), calibrated to whole lattice steps
    assert clf.event_.count == 3
    assert accountant.epsilon(clf.event_, 1e-5).epsilon == pytest.approx(10.0, rel=1e-6)
    assert accountant.delta(clf.event_, 10.0).delta <= 1e-5
    Xt = rng.uniform(-3, 3, (1000, 2))
    lt = np.where(np.hypot(Xt[:, 0], Xt[:, 1]) < 1.7, "in", np.where(Xt[:, 0] > 0, "right", "left"))
    assert np.mean(clf.predict(Xt) == lt) > 0.8
    p = clf.predict_proba(Xt)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    with pytest.raises(InvalidParameterError, match="y"):
        clf.fit(X, np.where(lab == "in", "centre", lab))
    with pytest.raises(InvalidParameterError, match="classes"):
        DPDirichletGPClassifier(g, classes=["a"], epsilon=1.0, delta=1e-5).fit(X, lab)


def test_heteroscedastic_with_constant_variance_is_the_homoscedastic_release():
    """App. D with sigma_i^2 = sigma^2 for all i: weights 1/sigma^2 scale the statistics, the
    sensitivity and the noise by the same factor, so the posterior is the homoscedastic one (same rng)."""
    x, y = sinc_data(400)
    spec = sparse_gp_spec(Z9, response_bound=1.5)
    s2 = 0.01
    # the paper's float noise (noise="float"), where both draw the same normals: App. D's algebra, exactly; the
    # exact noise puts the two on different lattices (tests/mechanisms/test_sparse_gp_lattice.py)
    hom = fit_sparse_gp(x, y, spec, noise_std=0.1, epsilon=2.0, delta=1e-4, rng=np.random.default_rng(5),
                        noise="float")
    het = fit_sparse_gp_heteroscedastic(x, y, np.full(400, s2), spec, NoiseBounds(s2, s2), epsilon=2.0, delta=1e-4,
                                        rng=np.random.default_rng(5), noise="float")
    assert het.sensitivity == pytest.approx(hom.sensitivity / s2, rel=1e-12)
    np.testing.assert_allclose(het.posterior.mean, hom.posterior.mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(het.posterior.covariance, hom.posterior.covariance, rtol=1e-7, atol=1e-12)
    # variances below the public lower bound are clipped up (weights never exceed 1 / min_var)
    low = fit_sparse_gp_heteroscedastic(x, y, np.full(400, 1e-6), spec, NoiseBounds(s2), epsilon=2.0, delta=1e-4,
                                        rng=np.random.default_rng(5))
    assert low.n_clipped >= 400
    with pytest.raises(InvalidParameterError, match="max_noise_var"):
        NoiseBounds(0.1, 0.01)
    with pytest.raises(InvalidParameterError, match="noise_var"):
        fit_sparse_gp_heteroscedastic(x, y, np.full(10, s2), spec, NoiseBounds(s2), epsilon=2.0, delta=1e-4,
                                      rng=np.random.default_rng(5))
