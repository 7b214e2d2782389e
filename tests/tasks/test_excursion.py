"""Unit tests of the excursion-set task layer and the synthetic pair generators (seed 000, sec. 5, App. D)."""
import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import trapezoid
from scipy.stats import norm

from privgp.datasets.plumes import PlumePrior, attenuated_signal, excursion_pairs_2d
from privgp.datasets.synthetic import excursion_pairs_1d, exponential_gp_paths
from privgp.errors import InvalidParameterError
from privgp.models.domain import Box
from privgp.models.gp import EigenPosterior, ExactPosterior
from privgp.models.kernels import Exponential
from privgp.tasks import excursion as ex


def test_trapezoid_weights_match_scipy_1d_and_are_exact_for_bilinear_2d():
    x = np.sort(np.concatenate([[0.0, 1.0], np.random.default_rng(0).uniform(size=30)]))
    f = np.sin(3 * x) + x**2
    assert ex.trapezoid_weights((x,)) @ f == pytest.approx(trapezoid(f, x), rel=1e-13)
    pts, axes = Box((0.0, -1.0), (2.0, 1.0)).grid((7, 5))
    w = ex.trapezoid_weights(axes)
    g = 1 + pts[:, 0] + 2 * pts[:, 1] + pts[:, 0] * pts[:, 1]   # bilinear: trapezoid is exact
    assert w @ g == pytest.approx(8.0, rel=1e-12)  # int over [0,2]x[-1,1]: area 4 + int x = 4
    with pytest.raises(InvalidParameterError, match="axes"):
        ex.trapezoid_weights((np.array([0.0]),))


def test_excursion_probability_is_the_normal_cdf_and_a_step_without_variance():
    rng = np.random.default_rng(1)
    mu, var, sig = rng.normal(size=50), rng.uniform(0.01, 2, 50), 0.7
    expect = norm.cdf((mu - 0.2) / (sig * np.sqrt(var)))
    np.testing.assert_allclose(ex.excursion_probability(mu, var, sig, t=0.2), expect, rtol=1e-12)
    np.testing.assert_array_equal(ex.excursion_probability([-1.0, 0.0, 1.0], [0.0, 0.0, 0.0], 1.0), [0.0, 1.0, 1.0])


def _bce_mpmath(labels, mu, var, sigma, w, clip):
    """The BCE of App. D in 50-digit arithmetic: an independent reference, free of the
    cancellation in log(1 - p) that a float64 transcription suffers when p is near 1
    (1 - p is evaluated as Phi(-z), exactly the same number)."""
    with mp.workdps(50):
        total = mp.mpf(0)
        for lab, m, v, wi in zip(labels, mu, var, w):
            z = mp.mpf(float(m)) / (mp.mpf(float(sigma)) * mp.sqrt(mp.mpf(float(v))))
            q = mp.ncdf(z if lab else -z)  # the probability given to the true label: p or 1 - p
            if clip > 0:
                q = min(max(q, mp.mpf(float(clip))), 1 - mp.mpf(float(clip)))
            total += mp.mpf(float(wi)) * -mp.log(q)
        return +total


@settings(max_examples=40, deadline=None)
@given(st.floats(0.05, 5.0), st.floats(0.0, 1e-3), st.integers(0, 10_000))
def test_integrated_bce_matches_a_high_precision_reference(sigma, clip, seed):
    rng = np.random.default_rng(seed)
    m = 40
    mu, var = rng.normal(size=m), rng.uniform(0.001, 1.5, m)
    labels = rng.uniform(size=m) < 0.5
    w = rng.uniform(0.1, 1.0, m)
    ref = _bce_mpmath(labels, mu, var, sigma, w, clip)
    got = ex.integrated_bce(labels, mu, var, sigma, w, clip=clip)
    assert float(got) == pytest.approx(float(ref), rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([0.0, 1e-9, 1e-6, 1e-3, 0.2]), st.floats(0.01, 3.0), st.integers(0, 10_000))
def test_bce_equals_the_clipped_formula_exactly(clip, scale, seed):
    # log Phi is evaluated only where the clip does not decide: the values must be those of
    # clip(-log Phi(u / sigma)) bit for bit, around the clip's crossings, at +-inf and at NaN
    from scipy.special import log_ndtr, ndtri

    rng = np.random.default_rng(seed)
    sig = np.array([0.01, 0.3, 1.0, 4.0])
    marg = rng.normal(scale=10 * scale, size=200)
    if clip > 0:
        for s in sig:   # margins whose z lands within 1e-6 of the crossings
            for zc in (ndtri(clip), ndtri(1 - clip)):
                marg[:10] = s * (zc + rng.uniform(-0.02, 0.02, 10))
    marg[-3:] = [np.inf, -np.inf, 0.0]
    w = rng.uniform(size=marg.size)
    with np.errstate(divide="ignore", over="ignore"):
        loss = -log_ndtr(marg[None] / sig[:, None])
    if clip > 0:
        loss = np.clip(loss, -np.log1p(-clip), -np.log(clip))
    assert np.array_equal(ex.bce_from_margin(marg, sig, w, clip=clip), loss @ w)
    nan = marg.copy()
    nan[0] = np.nan
    assert np.all(np.isnan(ex.bce_from_margin(nan, sig, w, clip=clip)))


def test_bce_is_vectorised_over_sigma():
    rng = np.random.default_rng(2)
    mu, var, lab, w = rng.normal(size=30), rng.uniform(0.1, 1, 30), rng.uniform(size=30) < 0.5, np.ones(30)
    sig = np.array([0.1, 0.5, 2.0])
    marg = ex.standardized_margin(lab, mu, var)
    vec = ex.bce_from_margin(marg[None], sig[:, None], w)[:, 0]
    one = [ex.integrated_bce(lab, mu, var, s, w) for s in sig]
    np.testing.assert_allclose(vec, one, rtol=1e-13)
    with pytest.raises(InvalidParameterError, match="clip"):
        ex.bce_from_margin(marg, 1.0, w, clip=0.7)


def test_iou_known_values_and_conventions():
    w = np.ones(4)
    assert ex.iou([1, 1, 0, 0], [0, 1, 1, 0], w) == pytest.approx(1 / 3)
    assert ex.iou([0, 0, 0, 0], [0, 0, 0, 0], w) == 1.0
    assert ex.iou([0, 0, 0, 0], [1, 0, 0, 0], w) == 0.0
    assert ex.iou([1, 1, 0, 0], [1, 0, 0, 0], np.array([1.0, 3.0, 1, 1])) == pytest.approx(0.25)


@given(st.lists(st.booleans(), min_size=3, max_size=30), st.integers(0, 1000))
def test_iou_laws(a, seed):
    a = np.array(a)
    b = np.random.default_rng(seed).uniform(size=a.size) < 0.5
    w = np.random.default_rng(seed + 1).uniform(0.1, 1, a.size)
    v = ex.iou(a, b, w)
    assert 0.0 <= v <= 1.0
    assert v == pytest.approx(ex.iou(b, a, w))
    assert (v == 1.0) == bool(np.all(a == b))


def test_choose_cutoff_finds_the_best_threshold_and_prefers_the_smallest_on_ties():
    truth = np.array([[0, 0, 1, 1, 1]], dtype=bool)
    p = np.array([[0.1, 0.35, 0.4, 0.8, 0.9]])
    C, curve = ex.choose_cutoff(p, truth, np.ones(5), [0.2, 0.38, 0.5, 0.85])
    assert C == 0.38                       # exactly the true set
    np.testing.assert_allclose(curve, [3 / 4, 1.0, 2 / 3, 1 / 3])
    C2, _ = ex.choose_cutoff(p, truth, np.ones(5), [0.36, 0.38])
    assert C2 == 0.36


def test_vote_release_and_cutoffs():
    paths = np.array([[1.0, -1.0, 0.5], [-0.2, -1.0, 0.3], [0.1, -0.5, -0.1]])   # L = 3 paths, m = 3
    np.testing.assert_allclose(ex.vote_fraction(paths, 0.0, axis=0), [2 / 3, 0.0, 2 / 3])
    np.testing.assert_array_equal(ex.vote_release(paths, 2 / 3, axis=0), [True, False, True])
    np.testing.assert_allclose(ex.vote_cutoffs(3), [1 / 3, 2 / 3, 1.0])
    with pytest.raises(InvalidParameterError, match="L"):
        ex.vote_cutoffs(0)


def test_effective_dimension_is_the_trace_formula():
    X = np.random.default_rng(3).uniform(size=(25, 2))
    K = Exponential(0.3)(X)
    for r in (0.1, 1.0, 4.0):
        direct = np.trace(K @ np.linalg.inv(K + r * r * np.eye(25)))
        assert ex.effective_dimension(np.linalg.eigvalsh(K), r) == pytest.approx(direct, rel=1e-10)
        assert EigenPosterior(Exponential(0.3), X, np.zeros(25)).effective_dimension([r])[0] == pytest.approx(direct)


def test_smoothing_is_identity_at_zero_and_keeps_constants():
    rng = np.random.default_rng(4)
    P = rng.normal(size=(3, 20))
    np.testing.assert_array_equal(ex.smooth_paths(P, (4, 5), 0.0), P)
    np.testing.assert_allclose(ex.smooth_paths(np.full((2, 20), 0.3), (4, 5), 1.5), 0.3)


def test_eigen_posterior_batch_matches_exact_posterior():
    rng = np.random.default_rng(5)
    X, y, q = rng.uniform(size=(3, 15, 2)), rng.uniform(-1, 1, (3, 15)), rng.uniform(size=(7, 2))
    mean, var = EigenPosterior(Exponential(0.4), X, y).mean_var(q, [0.3, 2.0])
    for b in range(3):
        for i, r in enumerate((0.3, 2.0)):
            post = ExactPosterior(Exponential(0.4), X[b], y[b], r)
            np.testing.assert_allclose(mean[i, b], post.mean(q), atol=1e-10)
            np.testing.assert_allclose(var[i, b], post.kD_diag(q), atol=1e-10)


def test_exponential_gp_paths_have_the_kernel_covariance():
    """Monte Carlo: 20000 draws at 3 (unsorted) points; tolerance 5 standard errors of a covariance."""
    N = 20_000
    pts = np.array([0.7, 0.1, 0.45])
    f = exponential_gp_paths(np.broadcast_to(pts, (N, 3)), 0.5, np.random.default_rng(6))
    emp = f.T @ f / N
    K = np.exp(-np.abs(pts[:, None] - pts[None]) / 0.5)
    se = np.sqrt((1 + K**2) / N)
    assert np.all(np.abs(emp - K) < 5 * se)


def test_pairs_1d_respect_the_response_bound_and_the_rescaling():
    p = excursion_pairs_1d(50, 30, 0.3, rng=np.random.default_rng(7), mesh_size=100)
    assert p.X.shape == (50, 30, 1) and p.signal.shape == (50, 100)
    assert np.all(np.abs(p.y) <= 1.0)
    sup = np.maximum(np.abs(p.signal).max(axis=1), np.abs(p.info["f_X"]).max(axis=1))
    np.testing.assert_allclose(sup, 0.7)
    assert np.all(np.abs(p.y - p.info["f_X"]) <= 0.3)
    q = excursion_pairs_1d(40, 30, 0.3, rng=np.random.default_rng(7), mesh_size=100, target_filter="published")
    vol = q.truth @ q.weights
    assert np.all((vol >= 0.1 - 1e-12) & (vol <= 0.9 + 1e-12))
    assert len(q.subset([0, 3])) == 2


@pytest.mark.parametrize("M", [-0.1, 1.0, 1.5])
def test_noise_level_outside_unit_interval_is_rejected(M):
    with pytest.raises(InvalidParameterError, match="M_xi"):
        excursion_pairs_1d(5, 10, M, rng=np.random.default_rng(0))
    with pytest.raises(InvalidParameterError, match="M_xi"):
        excursion_pairs_2d(2, 10, M, rng=np.random.default_rng(0), mesh_size=10)


def test_plume_pairs_are_bounded_and_the_target_matches_the_sigmoid_quantile():
    p = excursion_pairs_2d(20, 50, 0.5, rng=np.random.default_rng(8), mesh_size=30)
    assert np.all(np.abs(p.y) <= 1.0) and np.all(np.abs(p.signal) <= 0.5 + 1e-12)
    assert p.t == 0.0
    frac = p.truth.mean()
    assert 0.15 < frac < 0.55      # b_h is the 65% quantile of h: a minority of the square is "high"
    grid, _ = Box.unit(2).grid(30)
    np.testing.assert_allclose(attenuated_signal(p, grid), p.signal)
    lat = excursion_pairs_2d(3, 50, 0.5, rng=np.random.default_rng(9), mesh_size=10, lattice=236)
    np.testing.assert_allclose(lat.X * 236, np.round(lat.X * 236), atol=1e-9)
    with pytest.raises(InvalidParameterError):
        PlumePrior(gamma=-1)
