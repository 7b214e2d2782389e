"""The O(n + m) Kalman-smoother posterior of the 1-D exponential kernel against the dense posterior."""
import numpy as np
import pytest

from privgp.errors import InvalidParameterError
from privgp.models.gp import EigenPosterior, ExactPosterior
from privgp.models.gp.markov1d import ExpKernelPosterior1D
from privgp.models.kernels import Exponential


def dense(X, y, q, ell, r):
    """mu = k_q^T (K + r^2 I)^{-1} y and k_D = 1 - k_q^T (K + r^2 I)^{-1} k_q, written out."""
    K = np.exp(-np.abs(X[:, None] - X[None, :]) / ell) + r**2 * np.eye(X.size)
    kq = np.exp(-np.abs(X[:, None] - q[None, :]) / ell)
    sol = np.linalg.solve(K, np.column_stack([y, kq]))
    return kq.T @ sol[:, 0], 1.0 - np.sum(kq * sol[:, 1:], axis=0)


@pytest.mark.parametrize("seed", [0, 1])
def test_mean_and_variance_equal_the_dense_posterior_for_every_setting(seed):
    rng = np.random.default_rng(seed)
    B, n = 3, 40
    X = rng.uniform(0, 1, (B, n))
    X[0, 7] = X[0, 3]                       # coinciding inputs
    y = rng.uniform(-1, 1, (B, n))
    # queries inside and outside the data range, on inputs and unsorted
    q = rng.permutation(np.concatenate([np.linspace(-0.2, 1.2, 61), X[1, :5]]))
    ells = np.array([0.02, 0.3, 0.3, 2.0, 2.0])
    rs = np.array([0.1, 0.05, 1.0, 0.5, 4.0])
    mean, var = ExpKernelPosterior1D(X, y, q).mean_var(ells, rs)
    assert mean.shape == var.shape == (ells.size, B, q.size)
    for s, (ell, r) in enumerate(zip(ells, rs)):
        for j in range(B):
            mu0, v0 = dense(X[j], y[j], q, ell, r)
            np.testing.assert_allclose(mean[s, j], mu0, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(var[s, j], v0, rtol=1e-10)


def test_equals_the_eigen_posterior_of_the_excursion_search():
    """The fast path of the excursion search against the dense one it replaces, at the study's sizes."""
    rng = np.random.default_rng(3)
    B, n, m = 4, 100, 800
    X = rng.uniform(0, 1, (B, n, 1))
    y = rng.uniform(-1, 1, (B, n))
    mesh = np.linspace(0, 1, m)[:, None]
    rs = np.array([0.02, 0.2, 2.0, 20.0])
    post = ExpKernelPosterior1D(X, y, mesh)
    for ell in (0.05, 0.5, 1.5):
        mean, var = post.mean_var(np.full(rs.size, ell), rs)
        m0, v0 = EigenPosterior(Exponential(ell), X, y).mean_var(mesh, rs)
        np.testing.assert_allclose(mean, m0, rtol=1e-10, atol=1e-10 * np.abs(m0).max())
        np.testing.assert_allclose(var, v0, rtol=1e-10)


def test_blocks_give_the_same_values_and_a_single_input_works():
    rng = np.random.default_rng(4)
    X, y, q = rng.uniform(0, 1, (2, 30)), rng.uniform(-1, 1, (2, 30)), np.linspace(0, 1, 50)
    ells, rs = rng.uniform(0.1, 1, 7), rng.uniform(0.1, 1, 7)
    post = ExpKernelPosterior1D(X, y, q)
    whole = post.mean_var(ells, rs)
    blocks = [(lo, mean.copy(), var.copy()) for lo, mean, var in post.iter_mean_var(ells, rs, max_elements=100)]
    assert len(blocks) == 7 and [b[0] for b in blocks] == list(range(7))
    np.testing.assert_array_equal(np.concatenate([b[1] for b in blocks]), whole[0])
    np.testing.assert_array_equal(np.concatenate([b[2] for b in blocks]), whole[1])
    one = ExpKernelPosterior1D(np.array([[0.4]]), np.array([[0.7]]), q).mean_var([0.3], [0.5])
    e = ExactPosterior(Exponential(0.3), [[0.4]], [0.7], 0.5).mean_kD_diag(q[:, None])
    np.testing.assert_allclose(one[0][0, 0], e[0], rtol=1e-13)
    np.testing.assert_allclose(one[1][0, 0], e[1], rtol=1e-13)


def test_bad_input_is_a_clear_error():
    X, y, q = np.zeros((2, 3)), np.zeros((2, 3)), np.zeros(4)
    with pytest.raises(InvalidParameterError):
        ExpKernelPosterior1D(np.zeros((2, 3, 2)), y, q)
    with pytest.raises(InvalidParameterError):
        ExpKernelPosterior1D(X, np.zeros((2, 4)), q)
    with pytest.raises(InvalidParameterError):
        ExpKernelPosterior1D(X, y, q).mean_var([0.5, 1.0], [0.1])
    with pytest.raises(InvalidParameterError):
        ExpKernelPosterior1D(X, y, q).mean_var([0.5], [0.0])
