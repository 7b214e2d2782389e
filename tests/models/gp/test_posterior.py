"""Exact GP posterior against a naive implementation (np.linalg.inv), eq. 9, batches, all r."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.models.gp import EigenPosterior, ExactPosterior, batched_mean_var, one_step_update
from privgp.models.kernels import Exponential, Matern32, Matern52, SquaredExponential


def naive_kernel(name, ell, A, B):
    """Kernel written out independently of privgp.models.kernels."""
    A, B = np.atleast_2d(A), np.atleast_2d(B)
    d = np.sqrt(((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)) / ell
    if name == "exponential":
        return np.exp(-d)
    if name == "matern32":
        return (1 + np.sqrt(3) * d) * np.exp(-np.sqrt(3) * d)
    if name == "matern52":
        return (1 + np.sqrt(5) * d + 5 * d**2 / 3) * np.exp(-np.sqrt(5) * d)
    return np.exp(-0.5 * d**2)


KERNELS = {"exponential": Exponential, "matern32": Matern32, "matern52": Matern52,
           "squared_exponential": SquaredExponential}


def naive_posterior(name, ell, X, y, Xq, r, sigma=1.0):
    """mu = k_q^T (K + r^2 I)^{-1} y, C = sigma^2 (k_qq - k_q^T (K + r^2 I)^{-1} k_q), with np.linalg.inv."""
    Ainv = np.linalg.inv(naive_kernel(name, ell, X, X) + r**2 * np.eye(len(X)))
    kq = naive_kernel(name, ell, X, Xq)
    mean = kq.T @ Ainv @ y
    cov = sigma**2 * (naive_kernel(name, ell, Xq, Xq) - kq.T @ Ainv @ kq)
    return mean, cov


def dataset(seed, n, d, m):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n, d))
    y = rng.uniform(-1, 1, size=n)
    Xq = rng.uniform(-0.2, 1.2, size=(m, d))
    return X, y, Xq


@settings(max_examples=50)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12), d=st.sampled_from([1, 2, 3]),
       name=st.sampled_from(sorted(KERNELS)), ell=st.floats(0.1, 3.0), r=st.floats(0.2, 3.0),
       sigma=st.floats(0.1, 5.0))
def test_mean_cov_var_against_naive_inverse(seed, n, d, name, ell, r, sigma):
    X, y, Xq = dataset(seed, n, d, 7)
    post = ExactPosterior(KERNELS[name](ell), X, y, r, sigma)
    mean, cov = naive_posterior(name, ell, X, y, Xq, r, sigma)
    # (K + r^2 I) has condition number <= 1 + n / r^2 <= 301: naive inversion is accurate to ~1e-13
    assert np.allclose(post.mean(Xq), mean, rtol=0, atol=1e-11)
    assert np.allclose(post.cov(Xq), cov, rtol=0, atol=1e-11 * sigma**2)
    assert np.allclose(post.var(Xq), np.maximum(np.diag(cov), 0), rtol=0, atol=1e-11 * sigma**2)
    assert np.allclose(post.kD(Xq), cov / sigma**2, rtol=0, atol=1e-11)
    assert np.allclose(post.kD_diag(Xq), np.diag(post.kD(Xq)), rtol=0, atol=1e-12)
    # the one-product route of the excursion studies, with k(X, X) and k(Xq, X) precomputed or not
    k = KERNELS[name](ell)
    for p2, cross in ((post, None), (ExactPosterior(k, X, y, r, sigma, gram=k(X)), k(Xq, X))):
        m2, v2 = p2.mean_kD_diag(Xq, cross=cross)
        assert np.allclose(m2, mean, rtol=0, atol=1e-11)
        assert np.allclose(v2, np.maximum(np.diag(cov), 0) / sigma**2, rtol=0, atol=1e-11)
    # d_eff = tr K (K + r^2 I)^-1 against the eigenvalue formula of the excursion task
    from privgp.tasks.excursion import effective_dimension
    lam = np.linalg.eigvalsh(naive_kernel(name, ell, X, X))
    assert post.effective_dimension() == pytest.approx(float(effective_dimension(lam, r)), rel=1e-11, abs=1e-11)
    Xq2 = Xq[:3] + 0.05
    _, cov_joint = naive_posterior(name, ell, X, y, np.vstack([Xq, Xq2]), r, sigma)
    assert np.allclose(post.cov(Xq, Xq2), cov_joint[:7, 7:], rtol=0, atol=1e-11 * sigma**2)


def test_precomputed_matrices_are_checked():
    X, y, Xq = dataset(3, 5, 2, 4)
    k = Exponential(0.5)
    with pytest.raises(ValueError, match="gram"):
        ExactPosterior(k, X, y, 0.5, gram=np.eye(4))
    with pytest.raises(ValueError, match="cross"):
        ExactPosterior(k, X, y, 0.5).mean_kD_diag(Xq, cross=np.ones((5, 4)))


def test_covariance_is_symmetric_and_variances_nonnegative_with_duplicates_and_tiny_r():
    X = np.array([[0.3], [0.3], [0.3 + 1e-12], [0.7]])
    y = np.array([1.0, -1.0, 0.5, 0.0])
    post = ExactPosterior(Matern52(0.5), X, y, r=1e-6)
    Xq = np.vstack([X, [[0.5]]])
    C = post.kD(Xq)
    assert np.array_equal(C, C.T)
    v = post.kD_diag(Xq)
    assert np.all(v >= 0.0)  # jitter policy: round-off negatives raised to 0, never below
    assert np.all(np.isfinite(post.mean(Xq)))


def test_prior_is_the_posterior_of_the_empty_dataset():
    k = Matern32(0.4)
    post = ExactPosterior.prior(k, 2, r=1.0, sigma=2.0)
    Xq = np.random.default_rng(0).uniform(size=(5, 2))
    assert np.array_equal(post.mean(Xq), np.zeros(5))
    assert np.allclose(post.cov(Xq), 4.0 * k(Xq), rtol=1e-15)
    assert np.allclose(post.var(Xq), 4.0)
    assert post.n == 0 and post.dim == 2


def test_with_point_is_a_refit():
    X, y, Xq = dataset(1, 5, 2, 4)
    post = ExactPosterior(Exponential(0.3), X, y, 0.7, 1.5)
    bigger = post.with_point([0.5, 0.5], 0.9)
    ref = ExactPosterior(Exponential(0.3), np.vstack([X, [[0.5, 0.5]]]), np.append(y, 0.9), 0.7, 1.5)
    assert np.allclose(bigger.mean(Xq), ref.mean(Xq), atol=1e-14)
    assert np.allclose(bigger.cov(Xq), ref.cov(Xq), atol=1e-14)


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 10), d=st.sampled_from([1, 2]),
       name=st.sampled_from(sorted(KERNELS)), r=st.floats(0.1, 3.0), dup=st.booleans())
def test_one_step_update_matches_refitting(seed, n, d, name, r, dup):
    rng = np.random.default_rng(seed)
    k = KERNELS[name](0.4)
    if n == 0:
        core = ExactPosterior.prior(k, d, r)
        X, y = np.zeros((0, d)), np.zeros(0)
    else:
        X, y = rng.uniform(size=(n, d)), rng.uniform(-1, 1, n)
        core = ExactPosterior(k, X, y, r)
    x = X[:1].copy() if (dup and n) else rng.uniform(size=(1, d))
    yx = float(rng.uniform(-1, 1))
    XT = rng.uniform(size=(6, d))
    mean, cov = one_step_update(core, x, yx, XT)
    ref_mean, ref_cov = naive_posterior(name, 0.4, np.vstack([X, x]), np.append(y, yx), XT, r)
    assert np.allclose(mean, ref_mean, atol=1e-10)
    assert np.allclose(cov, ref_cov, atol=1e-10)


@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), B=st.integers(1, 6), n=st.integers(1, 8), d=st.sampled_from([1, 2, 3]),
       name=st.sampled_from(sorted(KERNELS)), r=st.floats(0.1, 3.0), per_dataset=st.booleans())
def test_batched_mean_var_matches_single_posteriors(seed, B, n, d, name, r, per_dataset):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(B, n, d))
    y = rng.uniform(-1, 1, size=(B, n))
    Xq = rng.uniform(size=(B, 5, d)) if per_dataset else rng.uniform(size=(5, d))
    k = KERNELS[name](0.5)
    mean, var = batched_mean_var(k, X, y, Xq, r)
    assert mean.shape == var.shape == (B, 5)
    for b in range(B):
        q = Xq[b] if per_dataset else Xq
        post = ExactPosterior(k, X[b], y[b], r)
        assert np.allclose(mean[b], post.mean(q), atol=1e-11)
        assert np.allclose(var[b], post.kD_diag(q), atol=1e-11)
        assert np.all(var[b] >= 0)


def test_batched_mean_var_one_dimensional_shapes():
    rng = np.random.default_rng(2)
    X, y = rng.uniform(size=(30, 10)), rng.uniform(-1, 1, size=(30, 10))
    mean, var = batched_mean_var(Exponential(1.0), X, y, [0.5], 0.8)
    ref = [ExactPosterior(Exponential(1.0), X[b], y[b], 0.8) for b in range(30)]
    assert np.allclose(mean[:, 0], [p.mean([0.5])[0] for p in ref], atol=1e-12)
    assert np.allclose(var[:, 0], [p.kD_diag([0.5])[0] for p in ref], atol=1e-12)


@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), B=st.integers(1, 4), n=st.integers(1, 10), d=st.sampled_from([1, 2]),
       name=st.sampled_from(sorted(KERNELS)), single=st.booleans())
def test_eigen_posterior_matches_exact_for_every_r(seed, B, n, d, name, single):
    rng = np.random.default_rng(seed)
    k = KERNELS[name](0.3)
    r_values = np.array([0.05, 0.3, 1.0, 4.0])
    Xq = rng.uniform(size=(6, d))
    if single:
        X, y = rng.uniform(size=(n, d)), rng.uniform(-1, 1, n)
        mean, var = EigenPosterior(k, X, y).mean_var(Xq, r_values)
        assert mean.shape == var.shape == (4, 6)
        mean, var = mean[:, None], var[:, None]
        X, y = X[None], y[None]
    else:
        X, y = rng.uniform(size=(B, n, d)), rng.uniform(-1, 1, (B, n))
        mean, var = EigenPosterior(k, X, y).mean_var(Xq, r_values)
        assert mean.shape == var.shape == (4, B, 6)
    for i, r in enumerate(r_values):
        for b in range(X.shape[0]):
            post = ExactPosterior(k, X[b], y[b], r)
            # condition number of K + r^2 I is at most 1 + n / r^2 = 4001: allow for it
            assert np.allclose(mean[i, b], post.mean(Xq), atol=1e-9)
            assert np.allclose(var[i, b], post.kD_diag(Xq), atol=1e-9)
    assert np.all(var >= 0)


def test_effective_dimension_is_the_trace_formula():
    rng = np.random.default_rng(7)
    X, y = rng.uniform(size=(9, 2)), rng.uniform(-1, 1, 9)
    k = Matern32(0.6)
    r_values = [0.1, 1.0, 3.0]
    deff = EigenPosterior(k, X, y).effective_dimension(r_values)
    K = naive_kernel("matern32", 0.6, X, X)
    ref = [np.trace(K @ np.linalg.inv(K + r**2 * np.eye(9))) for r in r_values]
    assert np.allclose(deff, ref, rtol=1e-10)
    XB = rng.uniform(size=(3, 9, 2))
    deffB = EigenPosterior(k, XB, rng.uniform(size=(3, 9))).effective_dimension(r_values)
    assert deffB.shape == (3, 3)


def test_eigen_posterior_single_dataset_given_as_matrix_of_points():
    rng = np.random.default_rng(8)
    X, y = rng.uniform(size=(5, 2)), rng.uniform(-1, 1, 5)
    mean, var = EigenPosterior(Exponential(0.5), X, y).mean_var(rng.uniform(size=(3, 2)), 0.5)
    assert mean.shape == (1, 3)


def test_posterior_mean_of_exponential_kernel_bounded_by_responses():
    """Lemma B.6 (exponential kernel, 1-D): |mu_D(x)| <= M_Y for every x, duplicates included."""
    rng = np.random.default_rng(9)
    for _ in range(20):
        X = rng.uniform(size=12)
        X[3] = X[4]  # duplicates allowed
        y = rng.choice([-1.0, 1.0], size=12)
        post = ExactPosterior(Exponential(rng.uniform(0.05, 2)), X, y, r=rng.uniform(0.05, 2))
        assert np.max(np.abs(post.mean(np.linspace(-1, 2, 301)))) <= 1 + 1e-12


@pytest.mark.parametrize("dim", [1, 2])
def test_aggregated_posterior_equals_the_unaggregated_one(dim):
    """Records sharing an input enter only through their count and mean (noise r^2 / count): the
    posterior on the distinct inputs is exactly the posterior of all records (issue 10)."""
    from privgp.models.gp import aggregate_duplicates
    from privgp.models.kernels import Matern32

    rng = np.random.default_rng(dim)
    sites = rng.uniform(0, 1, (7, dim))
    X = sites[rng.integers(0, 7, 60)]          # 60 records on 7 sites
    y = rng.uniform(-1, 1, 60)
    k = Matern32(0.4)
    raw = ExactPosterior(k, X, y, 0.3, 1.7)
    agg = ExactPosterior.aggregated(k, X, y, 0.3, 1.7)
    assert agg.n <= 7 and agg.counts.sum() == 60
    Xq = rng.uniform(0, 1, (25, dim))
    np.testing.assert_allclose(agg.mean(Xq), raw.mean(Xq), rtol=0, atol=1e-10)
    np.testing.assert_allclose(agg.cov(Xq), raw.cov(Xq), rtol=0, atol=1e-10)
    Xu, ybar, c = aggregate_duplicates(X, y)
    for s in range(Xu.shape[0]):
        at = np.all(X == Xu[s], axis=1)
        assert c[s] == at.sum() and ybar[s] == pytest.approx(y[at].mean(), rel=1e-14)
