"""sample_joint, LazyPath and the jitter policy of the factorisation."""
import numpy as np
import pytest

from privgp.errors import InvalidParameterError
from privgp.models.gp import SAMPLING_JITTER, ExactPosterior
from privgp.models.kernels import Exponential, Matern32, Matern52, SquaredExponential
from privgp.models.sampling import LazyPath, psd_factor, sample_joint
from privgp.models.sampling.joint import _released_cov
from tests.models.sampling.test_laws import assert_law, released_law


def posterior_2d(sigma=1.3, r=0.4, kernel=None):
    rng = np.random.default_rng(11)
    X = rng.uniform(size=(6, 2))
    X[5] = X[0]  # a duplicated input
    y = rng.uniform(-1, 1, 6)
    return ExactPosterior(kernel or Matern32(0.5), X, y, r, sigma)


XQ = np.array([[0.1, 0.2], [0.5, 0.5], [0.9, 0.1], [0.3, 0.8], [1.2, 1.1]])


@pytest.mark.parametrize("eta", [0.0, 0.8])
def test_sample_joint_has_the_exact_law(eta):
    post = posterior_2d()
    S = sample_joint(post, XQ, 6000, np.random.default_rng(1), eta=eta)
    assert S.shape == (6000, 5)
    assert_law(S, *released_law(post, XQ, eta))


def test_eta_adds_exactly_eta_squared_k_to_the_covariance():
    post = posterior_2d()
    eta = 0.7
    C0, Ceta = _released_cov(post, 0.0, XQ), _released_cov(post, eta, XQ)
    assert np.allclose(Ceta - C0, eta**2 * post.kernel(XQ), rtol=0, atol=1e-15)
    # and the draws follow it: compare eta > 0 draws to sigma^2 k_D + eta^2 k (not to sigma^2 k_D)
    S = sample_joint(post, XQ, 6000, np.random.default_rng(2), eta=eta)
    m, C = released_law(post, XQ, eta)
    assert_law(S, m, C)
    with pytest.raises(AssertionError):
        assert_law(S, m, C0)


def test_repeated_query_points_get_identical_values_and_order_is_kept():
    post = posterior_2d()
    Xq = np.vstack([XQ, XQ[1:2], XQ[::-1]])
    S = sample_joint(post, Xq, 7, np.random.default_rng(3))
    assert S.shape == (7, 11)
    assert np.array_equal(S[:, 1], S[:, 5])
    assert np.array_equal(S[:, :5], S[:, 6:][:, ::-1])


def test_prior_posterior_draws():
    post = ExactPosterior.prior(Exponential(0.3), 1, r=1.0, sigma=2.0)
    Xq = np.linspace(0, 1, 4)
    S = sample_joint(post, Xq, 5000, np.random.default_rng(4))
    assert_law(S, np.zeros(4), 4.0 * Exponential(0.3)(Xq))


def test_sample_joint_bad_input():
    post = posterior_2d()
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidParameterError, match="L must be an integer >= 1; got 0"):
        sample_joint(post, XQ, 0, rng)
    with pytest.raises(InvalidParameterError, match="rng must be a numpy.random.Generator; got 'NoneType'"):
        sample_joint(post, XQ, 1, None)
    with pytest.raises(InvalidParameterError, match="eta must be finite and >= 0; got -0.1"):
        sample_joint(post, XQ, 1, rng, eta=-0.1)
    with pytest.raises(InvalidParameterError, match="Xq must be points of dimension 2"):
        sample_joint(post, np.zeros(3), 1, rng)
    with pytest.raises(InvalidParameterError, match="Xq must be free of NaN and inf"):
        sample_joint(post, [[0.0, np.nan]], 1, rng)
    with pytest.raises(InvalidParameterError, match="posterior must be a privgp.models.gp.ExactPosterior"):
        sample_joint("posterior", XQ, 1, rng)


# ---------------------------------------------------------------- jitter policy of the factorisation

def added_matrix(C, scale, triangular=False):
    F = psd_factor(C, scale, triangular=triangular)
    if triangular:
        assert np.array_equal(F, np.tril(F))
    return F @ F.T - C


@pytest.mark.parametrize("triangular", [False, True])
def test_factor_of_a_positive_definite_matrix_adds_exactly_the_jitter(triangular):
    A = np.random.default_rng(5).normal(size=(6, 6))
    C = A @ A.T + np.eye(6)
    E = added_matrix(C, 2.0, triangular)
    assert np.allclose(E, 2.0 * SAMPLING_JITTER * np.eye(6), atol=1e-13)


@pytest.mark.parametrize("triangular", [False, True])
def test_factor_of_singular_and_indefinite_matrices_only_adds_variance(triangular):
    x = np.linspace(0, 1, 40)
    C_singular = SquaredExponential(2.0)(x)  # numerically singular (eigenvalues down to 1e-17)
    Q, _ = np.linalg.qr(np.random.default_rng(7).normal(size=(8, 8)))
    C_indef = (Q * np.array([-1e-6, -1e-9, 0, 0.1, 0.5, 1, 2, 3])) @ Q.T
    for C in (C_singular, C_indef):
        E = added_matrix(C, 1.0, triangular)
        lam = np.linalg.eigvalsh(0.5 * (E + E.T))
        # the added matrix is positive semidefinite (up to round-off) and at least the jitter
        assert lam.min() >= SAMPLING_JITTER * (1 - 1e-3) - 1e-13 * np.abs(C).max() * len(C)
    # the indefinite matrix needs the eigenvalue fallback: the added matrix covers the negative part
    E = added_matrix(C_indef, 1.0, triangular)
    assert np.linalg.eigvalsh(C_indef + E).min() >= SAMPLING_JITTER * 0.999


def test_factor_rejects_nan():
    from privgp.errors import NumericalError
    with pytest.raises(NumericalError):
        psd_factor(np.array([[1.0, np.nan], [np.nan, 1.0]]), 1.0)


# ---------------------------------------------------------------- lazy path

def test_lazy_path_returns_the_same_values_for_points_already_returned():
    post = posterior_2d()
    path = LazyPath(post, np.random.default_rng(8))
    a = path(XQ[:3])
    b = path(np.vstack([XQ[2:], XQ[:1]]))
    assert b[0] == a[2] and b[-1] == a[0]
    assert len(path) == 5
    assert {tuple(p) for p in path.points} == {tuple(p) for p in XQ}
    again = path(XQ)
    assert np.array_equal(again[:3], a) and np.array_equal(again[3:], b[1:3])
    assert np.array_equal(path(np.vstack([XQ[1], XQ[1]])), [a[1], a[1]])
    pts, vals = path.points, path.values
    assert pts.shape == (5, 2) and vals.shape == (5,)
    for p, val in zip(pts, vals):
        assert path(p[None])[0] == val
    vals[0] = 1e9  # copies: the path is not changed through them
    assert path.values[0] != 1e9


def test_lazy_path_factor_is_the_cholesky_factor_of_the_joint_jittered_covariance():
    """Deterministic: after several calls the values are mean + F z with F F^T = C(all points) + j I."""
    post = posterior_2d(kernel=Matern52(0.4))
    eta = 0.5
    path = LazyPath(post, np.random.default_rng(9), eta=eta)
    path(XQ[:2])
    path(XQ[1:4])
    path(np.vstack([XQ[4:], [[0.5, 0.5 + 1e-9]]]))  # a near-duplicate of a returned point
    P = path.points
    m, C = released_law(post, P, eta)
    F = path._chol
    assert np.array_equal(F, np.tril(F))
    jitter = SAMPLING_JITTER * (post.sigma**2 + eta**2)
    E = F @ F.T - C
    assert np.linalg.eigvalsh(0.5 * (E + E.T)).min() >= -1e-12  # only adds variance
    assert np.allclose(E[:5, :5], jitter * np.eye(5), atol=1e-12)
    assert np.allclose(path.values, m + F @ path._z, atol=1e-12)


def test_lazy_path_values_have_the_joint_law_of_one_draw():
    post = posterior_2d()
    eta = 0.6
    rng = np.random.default_rng(10)
    X1, X2 = XQ[:3], XQ[2:]
    N = 2500
    S = np.empty((N, 5))
    for i in range(N):
        path = LazyPath(post, rng, eta=eta)
        S[i, :3] = path(X1)
        S[i, 3:] = path(X2)[1:]
    assert_law(S, *released_law(post, XQ, eta))


def test_lazy_path_bad_input():
    post = posterior_2d()
    with pytest.raises(InvalidParameterError, match="rng must be"):
        LazyPath(post, 0)
    with pytest.raises(InvalidParameterError, match="eta must be"):
        LazyPath(post, np.random.default_rng(0), eta=np.nan)
    path = LazyPath(post, np.random.default_rng(0))
    with pytest.raises(InvalidParameterError, match="Xq must be points of dimension 2"):
        path(np.zeros((2, 3)))
    assert len(path) == 0
