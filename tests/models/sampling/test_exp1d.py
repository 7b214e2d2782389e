"""O(n + m) sampler for the 1-D exponential kernel against the exact posterior law."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.errors import InvalidParameterError
from privgp.models.gp import ExactPosterior
from privgp.models.kernels import Exponential
from privgp.models.sampling import exp1d_paths, sample_joint
from privgp.models.sampling.exp1d import _Exp1dPlan, linear_recurrence
from tests.models.sampling.test_laws import affine_law, assert_law, released_law


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), N=st.integers(1, 300), L=st.integers(1, 3))
def test_linear_recurrence_matches_a_loop(seed, N, L):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 1, N) * (rng.uniform(size=N) > 0.1)
    b = rng.normal(size=(L, N))
    ref = np.empty_like(b)
    ref[:, 0] = b[:, 0]
    for i in range(1, N):
        ref[:, i] = a[i] * ref[:, i - 1] + b[:, i]
    assert np.allclose(linear_recurrence(a, b), ref, rtol=1e-12, atol=1e-12)


def plan_law(X, y, Xq, ell, r, sigma, eta):
    """Exact mean and covariance of the sampler's output, from its affine map of the normals.

    Mirrors exp1d_paths' preprocessing and feeds the zero vector and every unit vector.
    """
    x = np.asarray(X, float)
    xb, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    obs = np.bincount(inv, weights=y, minlength=len(xb)) / counts / sigma
    qu = np.unique(Xq)
    plan = _Exp1dPlan(xb, obs, r**2 / counts, qu, ell)
    sizes = plan.normal_sizes(eta > 0)
    total = sum(sizes)
    Z = np.vstack([np.zeros(total), np.eye(total)])
    normals, start = [], 0
    for s in sizes:
        normals.append(Z[:, start:start + s])
        start += s
    out = plan.paths(normals, sigma, eta)
    return qu, affine_law(out[0], out[1:])


CASES = {
    "plain": (np.array([0.1, 0.45, 0.5, 0.9]), np.linspace(-0.3, 1.3, 9), 0.3, 0.5, 1.0, 0.0),
    "duplicates": (np.array([0.2, 0.2, 0.2, 0.6, 0.6, 0.8]), np.array([0.0, 0.2, 0.4, 0.6, 0.7, 1.0]),
                   0.5, 0.3, 2.0, 0.0),
    "near_duplicates": (np.array([0.3, 0.3 + 1e-13, 0.3 + 2e-12, 0.55, 0.55 + 1e-10]),
                        np.array([0.29, 0.3, 0.3 + 1e-13, 0.31, 0.55 + 5e-11, 0.9]), 0.4, 0.2, 1.0, 0.0),
    "queries_on_data_and_outside": (np.array([-1.0, 0.0, 2.0]), np.array([-3.0, -1.0, 0.0, 1.0, 2.0, 9.0]),
                                    1.5, 1.0, 0.7, 0.0),
    "far_apart_small_lengthscale": (np.array([0.0, 50.0, 1000.0]), np.array([0.0, 0.01, 25.0, 50.0, 1e4]),
                                    0.01, 0.5, 1.0, 0.0),
    "eta": (np.array([0.1, 0.4, 0.4, 0.7]), np.linspace(0, 1, 6), 0.3, 0.6, 1.2, 0.9),
    "single_point": (np.array([0.5]), np.array([0.5, 0.2, 0.8]), 1.0, 0.5, 1.0, 0.3),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_sampler_law_equals_the_exact_posterior_law(case):
    """Deterministic: the affine map of the normals has exactly mean mu_D and covariance sigma^2 k_D + eta^2 k."""
    X, Xq, ell, r, sigma, eta = CASES[case]
    y = np.random.default_rng(0).uniform(-1, 1, len(X))
    qu, (mean, cov) = plan_law(X, y, Xq, ell, r, sigma, eta)
    post = ExactPosterior(Exponential(ell), X, y, r, sigma)
    ref_mean, ref_cov = released_law(post, qu, eta)
    scale = sigma**2 + eta**2
    assert np.allclose(mean, ref_mean, rtol=0, atol=1e-9)
    assert np.allclose(cov, ref_cov, rtol=0, atol=1e-9 * scale)


def test_mean_is_accurate_for_many_data_points():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=1500)
    X[::7] = X[1::7]  # duplicates
    y = rng.uniform(-1, 1, 1500)
    Xq = rng.uniform(-0.1, 1.1, 50)
    xb, inv, counts = np.unique(X, return_inverse=True, return_counts=True)
    obs = np.bincount(inv, weights=y) / counts
    plan = _Exp1dPlan(xb, obs, 0.3**2 / counts, np.unique(Xq), 0.2)
    zero = [np.zeros((1, s)) for s in plan.normal_sizes(False)]
    post = ExactPosterior(Exponential(0.2), X, y, 0.3)
    assert np.allclose(plan.paths(zero, 1.0, 0.0)[0], post.mean(np.unique(Xq)), atol=1e-9)


@pytest.mark.parametrize("eta", [0.0, 0.7])
def test_public_sampler_agrees_with_sample_joint_in_mean_and_covariance(eta):
    X = np.array([0.05, 0.3, 0.3, 0.62, 0.9])
    y = np.array([0.4, -0.2, 0.1, 0.9, -0.7])
    Xq = np.array([0.7, 0.0, 0.3, 0.45, 1.1, 0.7])  # unsorted, with a repeat and a data input
    kw = dict(lengthscale=0.4, r=0.5, sigma=1.3)
    S = exp1d_paths(X, y, Xq, rng=np.random.default_rng(2), L=20000, eta=eta, **kw)
    assert S.shape == (20000, 6)
    assert np.array_equal(S[:, 0], S[:, 5])
    post = ExactPosterior(Exponential(0.4), X, y, 0.5, 1.3)
    assert_law(S[:, :5], *released_law(post, Xq[:5], eta))
    D = sample_joint(post, Xq[:5], 20000, np.random.default_rng(3), eta=eta)
    # two independent samples of the same law: their means differ by < 5 standard errors of the difference
    se = np.sqrt((S[:, :5].var(0) + D.var(0)) / 20000)
    assert np.all(np.abs(S[:, :5].mean(0) - D.mean(0)) <= 5 * se)


def test_two_dimensional_input_column_and_scalar_query():
    X = np.array([[0.1], [0.5]])
    out = exp1d_paths(X, [1.0, 2.0], [[0.3]], lengthscale=1.0, r=1.0, sigma=1.0, rng=np.random.default_rng(4), L=3)
    assert out.shape == (3, 1) and np.all(np.isfinite(out))


def test_large_problem_is_finite():
    rng = np.random.default_rng(5)
    X = rng.uniform(size=3000)
    out = exp1d_paths(X, rng.uniform(-1, 1, 3000), np.linspace(0, 1, 20001), lengthscale=0.05, r=0.1,
                      sigma=1.0, rng=rng, L=2)
    assert out.shape == (2, 20001) and np.all(np.isfinite(out))


@pytest.mark.parametrize("kwargs,match", [
    (dict(lengthscale=0.0), "lengthscale must be finite and > 0; got 0"),
    (dict(r=-1.0), "r must be finite and > 0; got -1"),
    (dict(sigma=np.inf), "sigma must be finite and > 0; got inf"),
    (dict(eta=-0.5), "eta must be finite and >= 0; got -0.5"),
    (dict(L=0), "L must be an integer >= 1; got 0"),
    (dict(rng=1), "rng must be a numpy.random.Generator"),
    (dict(X=np.zeros((3, 2))), "X must be points of dimension 1; got 'dimension 2'"),
    (dict(y=[1.0, 2.0]), "y must be a vector of length 3"),
    (dict(y=[1.0, np.nan, 2.0]), "y must be free of NaN and inf"),
    (dict(X=[], y=[]), "X must be non-empty"),
    (dict(Xq=[0.1, np.inf]), "Xq must be free of NaN and inf"),
])
def test_bad_input(kwargs, match):
    args = dict(X=[0.1, 0.2, 0.3], y=[1.0, 0.0, -1.0], Xq=[0.5], lengthscale=1.0, r=1.0, sigma=1.0,
                rng=np.random.default_rng(0))
    args.update(kwargs)
    with pytest.raises(InvalidParameterError, match=match):
        exp1d_paths(**args)


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12), m=st.integers(1, 10),
       ell=st.floats(0.02, 5.0), r=st.floats(0.05, 3.0), sigma=st.floats(0.1, 3.0),
       eta=st.sampled_from([0.0, 0.5]), dup=st.sampled_from(["none", "exact", "near"]))
def test_sampler_law_is_exact_for_random_problems(seed, n, m, ell, r, sigma, eta, dup):
    """Property: for random inputs (duplicates, near-duplicates, queries anywhere) the sampler's
    affine map has exactly the posterior law (deterministic, no Monte Carlo)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, n)
    if n > 1 and dup == "exact":
        X[-1] = X[0]
    if n > 1 and dup == "near":
        X[-1] = X[0] + 1e-12
    Xq = np.concatenate([rng.uniform(-0.5, 1.5, m), X[:1]])
    y = rng.uniform(-1, 1, n)
    qu, (mean, cov) = plan_law(X, y, Xq, ell, r, sigma, eta)
    ref_mean, ref_cov = released_law(ExactPosterior(Exponential(ell), X, y, r, sigma), qu, eta)
    # K + r^2 I has condition number <= 1 + n / r^2 (<= 4801): allow for it in the reference
    tol = 1e-12 * (1 + n / r**2) * 100
    assert np.allclose(mean, ref_mean, rtol=0, atol=tol)
    assert np.allclose(cov, ref_cov, rtol=0, atol=tol * (sigma**2 + eta**2))
