"""Grid paths: circulant-embedding prior + Matheron conditioning against the exact posterior law."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from privgp.errors import InvalidParameterError
from privgp.models.gp import ExactPosterior
from privgp.models.kernels import Constant, Exponential, Matern32, Matern52, SquaredExponential
from privgp.models.sampling import grid_paths, snap_to_lattice
from privgp.models.sampling.grid import (
    LatticeSites,
    _CirculantPlan,
    _lattice_gram,
    _lattice_indices,
    _MatheronPlan,
    aggregate_on_lattice,
    grid_paths_from_sites,
    grid_prior_factor,
)
from tests.models.sampling.test_laws import affine_law, assert_law, released_law


def grid_points(axes):
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=-1)


def plan_law(kernel, X, y, axes, r, sigma, refine=None, solver="auto"):
    """Exact prior law on the lattice and posterior law on the grid of the circulant plan.

    The plan is affine in its standard normals (real and imaginary parts of Z, and eps): feed zero
    and every unit vector.
    """
    lattice = _lattice_indices(X, axes, refine)
    assert lattice is not None
    Rs, idx = lattice
    plan = _CirculantPlan(kernel, axes, Rs, *aggregate_on_lattice(idx, y), r, sigma, solver=solver)
    assert plan.ok
    M = plan.emb.M
    size = int(np.prod(M))
    units = np.eye(size).reshape((size,) + M)
    Z = np.concatenate([units, 1j * units])  # unit vectors of Re Z and of Im Z
    fields = plan.emb.fields(Z)[:2 * size]  # real parts: the field driven by (Re Z, Im Z)
    prior_cov = sum(np.outer(f.ravel(), f.ravel()) for f in fields)
    n = plan.n  # one unknown per occupied lattice site (records aggregated by count and mean)
    h0 = np.zeros((1,) + plan.sizes)
    f0 = plan.condition(h0, np.zeros((1, n))).reshape(-1)
    cols = [plan.condition(fields, np.zeros((2 * size, n))).reshape(2 * size, -1),
            plan.condition(np.zeros((n,) + plan.sizes), np.eye(n)).reshape(n, -1)]
    mean, cov = affine_law(f0, np.vstack(cols))
    return plan, prior_cov, mean, cov


def lattice_points(plan, axes, Rs, lo):
    grids = [axes[k][0] + (np.arange(plan.sizes[k]) + lo[k]) * (axes[k][1] - axes[k][0]) / Rs[k]
             for k in range(len(axes))]
    return grid_points(grids)


CASES = {
    "1d_exponential_refined_data_outside": (
        Exponential(0.3), (np.linspace(0, 1, 6),), np.array([[0.1], [0.5], [0.5], [1.3], [-0.2]]), None),
    "1d_matern52": (Matern52(0.5), (np.linspace(-1, 1, 5),), np.array([[-1.0], [0.25], [0.75]]), 2),
    "2d_matern32_duplicates": (
        Matern32(0.4), (np.linspace(0, 1, 4), np.linspace(0, 2, 5)),
        np.array([[0.0, 0.0], [1 / 3, 1.0], [1 / 3, 1.0], [1.0, 2.0], [2 / 3, 0.5]]), 1),
    "2d_exponential_refined": (
        Exponential(0.5), (np.linspace(0, 1, 3), np.linspace(0, 1, 4)),
        np.array([[0.25, 1 / 6], [0.75, 0.5], [0.5, 1.0]]), None),
    "2d_squared_exponential": (
        SquaredExponential(0.3), (np.linspace(0, 1, 5), np.linspace(0, 1, 5)),
        np.array([[0.25, 0.5], [0.75, 0.0]]), 1),
}


@pytest.mark.parametrize("solver", ["cg", "cholesky"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_circulant_prior_and_posterior_are_exact(case, solver):
    """The sampler's law (an affine map of standard normals, read off exactly) is the posterior's, with
    the structured (CG) solve and with the dense Cholesky solve."""
    kernel, axes, X, refine = CASES[case]
    rng = np.random.default_rng(0)
    y = rng.uniform(-1, 1, len(X))
    r, sigma = 0.4, 1.3
    plan, prior_cov, mean, cov = plan_law(kernel, X, y, axes, r, sigma, refine, solver=solver)
    assert (plan.A is None) == (solver == "cg")
    Rs, idx = _lattice_indices(X, axes, refine)
    lo = [min(0, int(j.min())) for j in idx]
    P = lattice_points(plan, axes, Rs, lo)
    # the embedding is exact on the lattice: its covariance is the kernel's Gram matrix
    assert np.allclose(prior_cov, kernel(P), rtol=0, atol=1e-10)
    post = ExactPosterior(kernel, X, y, r, sigma)
    G = grid_points(axes)
    ref_mean, ref_cov = released_law(post, G)
    assert np.allclose(mean, ref_mean, rtol=0, atol=1e-10)
    assert np.allclose(cov, ref_cov, rtol=0, atol=1e-10 * sigma**2)


def test_lattice_detection():
    axes = (np.linspace(0, 1, 5), np.linspace(0, 2, 3))
    X = snap_to_lattice(np.random.default_rng(1).uniform(size=(20, 2)) * [1, 2], axes, refine=3)
    Rs, idx = _lattice_indices(X, axes, None)
    assert all(R in (1, 3) for R in Rs)
    assert _lattice_indices(X + [1e-4, 0], axes, 3) is None
    assert _lattice_indices(X + [np.pi * 1e-3, 0], axes, None) is None
    assert _lattice_indices(np.array([[0.25, 1.0]]), axes, None)[0] == [1, 1]
    assert _lattice_indices(np.array([[0.3, 1.0]]), axes, 1) is None


@pytest.mark.parametrize("eta", [0.0, 0.5])
def test_public_grid_paths_agree_with_sample_joint_in_mean_and_covariance(eta):
    axes = (np.linspace(0, 1, 4), np.linspace(0, 1, 3))
    X = np.array([[1 / 3, 0.5], [1.0, 0.0], [0.0, 1.0], [1 / 6, 0.25]])
    y = np.array([0.5, -0.5, 1.0, 0.0])
    S = grid_paths(Matern32(0.5), X, y, axes, r=0.5, sigma=1.2, rng=np.random.default_rng(2), L=4000,
                   eta=eta, method="circulant")
    assert S.shape == (4000, 4, 3)
    post = ExactPosterior(Matern32(0.5), X, y, 0.5, 1.2)
    assert_law(S.reshape(4000, -1), *released_law(post, grid_points(axes), eta))


def test_auto_uses_circulant_on_the_lattice_and_matheron_off_it():
    axes = (np.linspace(0, 1, 5), np.linspace(0, 1, 4))
    k = Exponential(0.3)
    y = np.array([0.3, -0.4, 0.8])
    on = np.array([[0.25, 0.0], [0.5, 2 / 3], [1.0, 1.0]])
    off = on + [[0.01, 0.0], [0.0, 0.0], [0.0, 0.0]]
    for X, method in ((on, "circulant"), (off, "matheron")):
        a = grid_paths(k, X, y, axes, r=0.5, sigma=1.0, rng=np.random.default_rng(3), L=2, method="auto", refine=1)
        b = grid_paths(k, X, y, axes, r=0.5, sigma=1.0, rng=np.random.default_rng(3), L=2, method=method, refine=1)
        assert np.array_equal(a, b)
    with pytest.raises(InvalidParameterError, match="X must be on a lattice refining the grid"):
        grid_paths(k, off, y, axes, r=0.5, sigma=1.0, rng=np.random.default_rng(3), method="circulant", refine=1)


def test_auto_falls_back_to_dense_when_the_embedding_is_not_psd():
    axes = (np.linspace(0, 1, 5),)
    k = SquaredExponential(5.0)  # very smooth: the embedding has negative eigenvalues even when padded
    X, y = np.array([[0.25], [0.75]]), np.array([1.0, -1.0])
    with pytest.raises(InvalidParameterError, match="method must be 'matheron', 'dense' or 'auto' here"):
        grid_paths(k, X, y, axes, r=0.5, sigma=1.0, rng=np.random.default_rng(4), method="circulant")
    a = grid_paths(k, X, y, axes, r=0.5, sigma=1.0, rng=np.random.default_rng(4), L=3)
    b = grid_paths(k, X, y, axes, r=0.5, sigma=1.0, rng=np.random.default_rng(4), L=3, method="matheron")
    assert np.array_equal(a, b)
    with pytest.raises(InvalidParameterError, match="kernel must be a stationary distance kernel"):
        grid_paths(Constant(), X, y, axes, r=0.5, sigma=1.0, rng=np.random.default_rng(4), method="circulant")


def test_dense_fallback_law_on_a_small_grid():
    axes = (np.linspace(0, 1, 3), np.linspace(0, 1, 3))
    X = np.array([[0.1, 0.2], [0.7, 0.9]]) + np.pi * 1e-3  # off every lattice refining the grid
    y = np.array([1.0, -1.0])
    assert _lattice_indices(X, axes, None) is None
    S = grid_paths(Matern52(0.5), X, y, axes, r=0.3, sigma=1.0, rng=np.random.default_rng(5), L=4000, eta=0.4)
    post = ExactPosterior(Matern52(0.5), X, y, 0.3, 1.0)
    assert_law(S.reshape(4000, -1), *released_law(post, grid_points(axes), 0.4))


@pytest.mark.parametrize("kernel,axes,X", [
    (Exponential(0.3), (np.linspace(0, 1, 4), np.linspace(0, 1, 3)), np.array([[0.11, 0.23], [0.71, 0.93], [0.4, 0.4]])),
    (Matern52(0.5), (np.linspace(-1, 1, 6),), np.array([[-0.33], [0.2], [0.2], [0.9]])),
    (SquaredExponential(2.0), (np.linspace(0, 1, 5),), np.array([[0.05], [0.6]])),  # K_GG numerically singular
])
def test_matheron_law_is_the_posterior_plus_jitter_variance(kernel, axes, X):
    """The Matheron plan is linear in its standard normals: its exact covariance (from unit vectors) is
    sigma^2 k_D on the grid plus a PSD jitter term of size ~ sigma^2 SAMPLING_JITTER, its mean mu_D."""
    y = np.linspace(-0.8, 0.9, X.shape[0])
    r, sigma = 0.4, 1.3
    plan = _MatheronPlan(kernel, X, y, axes, r, sigma)
    m, n = plan.W.shape
    f0 = plan.draw(np.zeros((1, m)), np.zeros((1, n)), np.zeros((1, n)))[0]
    cols = np.vstack([plan.draw(np.eye(m), np.zeros((m, n)), np.zeros((m, n))) - f0,
                      plan.draw(np.zeros((n, m)), np.eye(n), np.zeros((n, n))) - f0,
                      plan.draw(np.zeros((n, m)), np.zeros((n, n)), np.eye(n)) - f0])
    cov = cols.T @ cols
    post = ExactPosterior(kernel, X, y, r, sigma)
    G = grid_points(axes)
    assert np.allclose(f0, post.mean(G), atol=1e-9)
    excess = cov - post.cov(G)
    lam = np.linalg.eigvalsh(0.5 * (excess + excess.T))
    assert lam.min() >= -1e-7 * sigma**2          # only variance added (up to round-off)
    assert lam.max() <= 1e-4 * sigma**2           # and only jitter-sized
    assert not plan.L_GG.flags.writeable          # the cached grid factor cannot be altered
    assert grid_prior_factor(kernel, axes) is plan.L_GG   # computed once per kernel and grid


def test_matheron_sampler_law_with_gp_noise():
    axes = (np.linspace(0, 1, 3), np.linspace(0, 1, 3))
    X = np.array([[0.1, 0.2], [0.7, 0.9]]) + np.pi * 1e-3
    y = np.array([1.0, -1.0])
    S = grid_paths(Matern52(0.5), X, y, axes, r=0.3, sigma=1.0, rng=np.random.default_rng(8), L=4000, eta=0.4,
                   method="matheron")
    post = ExactPosterior(Matern52(0.5), X, y, 0.3, 1.0)
    assert_law(S.reshape(4000, -1), *released_law(post, grid_points(axes), 0.4))


def test_snap_to_lattice_is_a_fixed_per_record_map():
    axes = (np.linspace(0, 1, 11), np.linspace(-1, 1, 5))
    rng = np.random.default_rng(6)
    X = rng.uniform([-0.2, -1.2], [1.2, 1.2], size=(50, 2))
    for R in (1, 2, 5):
        S = snap_to_lattice(X, axes, refine=R)
        step = np.array([0.1, 0.5]) / R
        assert np.all(np.abs(S - X) <= step / 2 + 1e-12)  # the nearest lattice point
        assert np.allclose(snap_to_lattice(S, axes, refine=R), S, atol=1e-15)  # idempotent
        rows = np.vstack([snap_to_lattice(X[i:i + 1], axes, refine=R) for i in range(len(X))])
        assert np.array_equal(rows, S)  # record by record: replace-one neighbours stay neighbours
        assert _lattice_indices(S, axes, R) is not None
    G = grid_points(axes)
    assert np.allclose(snap_to_lattice(G, axes, refine=3), G, atol=1e-15)


def test_output_shape_and_1d_axes_given_as_an_array():
    ax = np.linspace(0, 1, 7)
    out = grid_paths(Exponential(0.2), [0.5, 0.5], [1.0, 2.0], ax, r=1.0, sigma=1.0,
                     rng=np.random.default_rng(7), L=3)
    assert out.shape == (3, 7)


@pytest.mark.parametrize("kwargs,match", [
    (dict(method="fft"), "method must be one of 'auto', 'circulant', 'matheron', 'dense'"),
    (dict(axes=(np.array([0.0, 0.1, 0.3]),)), r"axes\[0\] must be uniformly spaced"),
    (dict(axes=(np.array([0.0, 1.0, 0.5]),)), r"axes\[0\] must be at least 2 strictly increasing"),
    (dict(axes=(np.array([0.0]),)), r"axes\[0\] must be at least 2 strictly increasing"),
    (dict(axes=(np.linspace(0, 1, 3), np.linspace(0, 1, 3))), "X must be points of dimension 2"),
    (dict(r=0.0), "r must be finite and > 0; got 0"),
    (dict(sigma=-1.0), "sigma must be finite and > 0"),
    (dict(eta=-1.0), "eta must be finite and >= 0"),
    (dict(L=0), "L must be an integer >= 1"),
    (dict(y=[1.0]), "y must be a vector of length 2"),
    (dict(X=[[0.5], [np.nan]]), "X must be free of NaN and inf"),
    (dict(refine=0), "refine must be an integer >= 1"),
    (dict(rng=None), "rng must be a numpy.random.Generator"),
])
def test_bad_input(kwargs, match):
    args = dict(kernel=Exponential(0.3), X=[[0.5], [1.0]], y=[1.0, 0.0], axes=(np.linspace(0, 1, 3),),
                r=1.0, sigma=1.0, rng=np.random.default_rng(0))
    args.update(kwargs)
    with pytest.raises(InvalidParameterError, match=match):
        grid_paths(**args)


def test_snap_bad_input():
    with pytest.raises(InvalidParameterError, match="refine must be an integer >= 1"):
        snap_to_lattice([[0.1]], (np.linspace(0, 1, 3),), refine=0)
    with pytest.raises(InvalidParameterError, match="X must be points of dimension 2"):
        snap_to_lattice([0.1, 0.2], (np.linspace(0, 1, 3), np.linspace(0, 1, 3)))


@settings(max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), d=st.sampled_from([1, 2]), n=st.integers(1, 6),
       sizes=st.tuples(st.integers(2, 5), st.integers(2, 4)), refine=st.integers(1, 3),
       name=st.sampled_from(["exponential", "matern32", "matern52"]), ell=st.floats(0.05, 0.6),
       r=st.floats(0.1, 2.0))
def test_circulant_law_is_exact_for_random_lattice_problems(seed, d, n, sizes, refine, name, ell, r):
    """Property: random data snapped to a random refinement (some outside the grid, duplicates
    possible) give exactly the posterior law on the grid whenever the embedding is accepted."""
    kernel = {"exponential": Exponential, "matern32": Matern32, "matern52": Matern52}[name](ell)
    rng = np.random.default_rng(seed)
    axes = tuple(np.linspace(0, 1, s) for s in sizes[:d])
    X = snap_to_lattice(rng.uniform(-0.2, 1.2, size=(n, d)), axes, refine=refine)
    y = rng.uniform(-1, 1, n)
    Rs, idx = _lattice_indices(X, axes, None)
    plan = _CirculantPlan(kernel, axes, Rs, *aggregate_on_lattice(idx, y), r, 1.0)
    assume(plan.ok and plan.emb.size <= 1500)
    _, prior_cov, mean, cov = plan_law(kernel, X, y, axes, r, 1.0)
    ref_mean, ref_cov = released_law(ExactPosterior(kernel, X, y, r, 1.0), grid_points(axes))
    tol = 1e-12 * (1 + n / r**2) * 100
    assert np.allclose(mean, ref_mean, rtol=0, atol=tol)
    assert np.allclose(cov, ref_cov, rtol=0, atol=tol)


def release_like(n=4000, seed=3):
    """A 2-D problem shaped like a snapped release: many records, uneven counts, empty lattice sites
    (records only on part of the box) and records outside the grid."""
    rng = np.random.default_rng(seed)
    axes = (np.linspace(0, 1, 21), np.linspace(0, 2, 15))
    X = np.column_stack([rng.beta(2, 3, n) * 1.1 - 0.05, rng.uniform(0, 1.4, n)])
    X = snap_to_lattice(X, axes, refine=2)
    return axes, X, rng.uniform(-1, 1, n)


@pytest.mark.parametrize("kernel", [Matern32(0.2), Exponential(0.3), Matern52(0.15)])
@pytest.mark.parametrize("r", [0.5, 3.0, 20.0])
def test_structured_solve_equals_the_dense_solve(kernel, r):
    """The conditioning solve W = (K_SS + r^2 C^-1)^-1 b: CG with FFT products (no Gram matrix) equals the
    dense Cholesky solve to 1e-10, on the occupied sites and (zero) on the empty ones."""
    axes, X, y = release_like()
    Rs, idx = _lattice_indices(X, axes, None)
    sites = aggregate_on_lattice(idx, y)
    cg = _CirculantPlan(kernel, axes, Rs, *sites, r, 1.0, solver="cg")
    chol = _CirculantPlan(kernel, axes, Rs, *sites, r, 1.0, solver="cholesky")
    assert cg.A is None and chol.A is not None
    assert 100 < cg.n < int(np.prod(cg.sizes))       # empty sites present
    b = np.random.default_rng(4).standard_normal((5, cg.n)) * [[1.0], [1e-3], [1e3], [0.0], [1.0]]
    W_cg, W_chol = cg.solve(b), chol.solve(b)
    assert cg.A is None                              # CG was accepted, no fallback
    empty = np.ones(W_cg.shape[1], dtype=bool)
    empty[cg.lin] = False
    assert np.all(W_cg[:, empty] == 0) and np.all(W_cg[3] == 0)
    scale = np.abs(W_chol).max(axis=1, keepdims=True)
    assert np.all(np.abs(W_cg - W_chol) <= 1e-10 * np.maximum(scale, 1.0))
    # the true residual of the accepted CG answer meets the stated tolerance in the original system
    A = _lattice_gram(kernel, np.stack(np.unravel_index(cg.lin, cg.sizes), axis=-1), cg.steps)
    A[np.diag_indices(cg.n)] += r * r / cg.counts
    w = W_cg[:, cg.lin]
    assert np.all(np.linalg.norm(w @ A - b, axis=1) <= 1e-10 * np.maximum(np.linalg.norm(b, axis=1), 1e-300))


@pytest.mark.parametrize("eta", [0.0, 0.7])
def test_structured_and_dense_paths_from_the_same_prior_draw_agree(eta):
    """grid_paths with solver="cg" and solver="cholesky" from the same generator state (the same prior
    fields and noise) agree to 1e-10: the same deterministic map of the same normals, hence the same law
    (whose exactness the affine-law tests check)."""
    axes, X, y = release_like(n=20000, seed=5)
    for r in (0.7, 22.0):
        paths = {s: grid_paths(Matern32(0.15), X, y, axes, r=r, sigma=0.8, rng=np.random.default_rng(6), L=6,
                               eta=eta, method="circulant", solver=s) for s in ("cg", "cholesky", "auto")}
        assert np.max(np.abs(paths["cg"] - paths["cholesky"])) <= 1e-10
        assert np.max(np.abs(paths["auto"] - paths["cholesky"])) <= 1e-10   # CG, or its fallback when slow


def test_auto_falls_back_to_cholesky_only_within_the_memory_limit(monkeypatch):
    """CG not accepted: "auto" falls back to the dense factor (same paths), unless the fallback's estimate
    is over ``memory_limit`` (then NumericalError, never the Gram matrix); "cg" never falls back. The
    pre-charge estimate (plan_sampler) with the same limit omits the Gram matrix exactly when the sampler
    cannot fall back."""
    from privgp.errors import NumericalError
    from privgp.models.sampling import exact_paths, plan_sampler
    from privgp.models.sampling import grid as grid_module

    axes, X, y = release_like(n=3000, seed=7)
    k = Matern52(0.2)
    kw = dict(r=0.5, sigma=1.0, L=2, method="circulant")
    ref = grid_paths(k, X, y, axes, rng=np.random.default_rng(1), solver="cholesky", **kw)
    big = plan_sampler(k, X, axes, L=2, method="circulant")
    small = plan_sampler(k, X, axes, L=2, method="circulant", memory_limit=big.bytes - 1)
    assert big.solver == "cg+cholesky" and small.solver == "cg"
    assert big.bytes - small.bytes == 2 * 8 * big.unknowns ** 2   # the fallback's Gram matrix, nothing else
    assert plan_sampler(k, X, axes, L=2, method="circulant", memory_limit=big.bytes).bytes == big.bytes
    assert plan_sampler(k, X, axes, L=2, method="circulant", solver="cg").bytes == small.bytes

    monkeypatch.setattr(grid_module, "precision_cg", lambda *a, **kw: None)
    got = grid_paths(k, X, y, axes, rng=np.random.default_rng(1), **kw)
    np.testing.assert_array_equal(got, ref)
    got = exact_paths(k, X, y, axes, rng=np.random.default_rng(1), memory_limit=big.bytes, **kw)
    np.testing.assert_array_equal(got, ref)
    with pytest.raises(NumericalError, match="over the memory limit"):
        exact_paths(k, X, y, axes, rng=np.random.default_rng(1), memory_limit=big.bytes - 1, **kw)
    with pytest.raises(NumericalError, match="solver='cg'"):
        grid_paths(k, X, y, axes, rng=np.random.default_rng(1), solver="cg", **kw)
    with pytest.raises(InvalidParameterError, match="^solver must be"):
        grid_paths(k, X, y, axes, rng=np.random.default_rng(1), solver="lu", **kw)
    with pytest.raises(InvalidParameterError, match="^solver must be"):
        plan_sampler(k, X, axes, solver="lu")


@pytest.mark.parametrize("kernel", [Exponential(0.3), Matern32(0.25)])
def test_paths_from_per_site_statistics_equal_paths_from_the_records(kernel):
    """The posterior given snapped records depends on them only through per-site counts and sums: the sampler
    fed those (what a one-pass reduction returns) draws the same paths from the same normals, to rounding."""
    rng = np.random.default_rng(5)
    axes = (np.linspace(0, 1, 21), np.linspace(0, 2, 15))
    X = np.column_stack([rng.beta(2, 3, 3000), rng.uniform(0, 1.4, 3000) * 2 / 1.4])
    y = rng.uniform(-1, 1, 3000)
    sites = LatticeSites.of(axes, 2)
    Xs = snap_to_lattice(X, axes, refine=2)
    idx = sites.index(X)
    assert np.allclose(sites.points(idx), Xs, atol=1e-12)            # the rule is snap_to_lattice's
    counts = np.bincount(idx, minlength=sites.size).astype(float)
    sums = np.bincount(idx, weights=y, minlength=sites.size)
    a = grid_paths(kernel, Xs, y, axes, r=0.5, sigma=1.0, rng=np.random.default_rng(1), L=2, method="circulant",
                   refine=2)
    b = grid_paths_from_sites(kernel, sites, sums, counts, axes, r=0.5, sigma=1.0, rng=np.random.default_rng(1), L=2)
    assert a.shape == b.shape == (2, 21, 15)
    assert np.max(np.abs(a - b)) < 1e-9


def test_posterior_mean_from_per_site_statistics_equals_the_mean_from_the_records():
    from privgp.models.sampling.mean import posterior_mean_from_sites, posterior_mean_on_grid

    rng = np.random.default_rng(8)
    axes = (np.linspace(0, 1, 17), np.linspace(0, 2, 13))
    X = rng.uniform([0, 0], [1, 2], (2000, 2))
    y = rng.uniform(-1, 1, 2000)
    sites = LatticeSites.of(axes, 2)
    idx = sites.index(X)
    counts = np.bincount(idx, minlength=sites.size).astype(float)
    sums = np.bincount(idx, weights=y, minlength=sites.size)
    kernel = Matern32(0.3)
    for solver in ("cg", "cholesky"):
        a = posterior_mean_on_grid(kernel, snap_to_lattice(X, axes, refine=2), y, axes, r=0.7, method="lattice",
                                   refine=2, solver=solver)
        b = posterior_mean_from_sites(kernel, sites, sums, counts, axes, r=0.7, solver=solver)
        assert np.max(np.abs(a - b)) < 1e-10


def test_a_fine_linspace_is_a_regular_grid():
    """np.linspace of 10^7 points over [10, 11]: its steps differ from the spacing by the coordinates' rounding
    (~1e-8 of it), which the regularity check allows; an irregular step of 1e-6 of the spacing is still refused."""
    from privgp.models.sampling.grid import _check_axes

    a = np.linspace(10.0, 11.0, 10**7)
    assert _check_axes((a,))[0] is not None
    b = a.copy()
    b[5] += 1e-6 * (a[1] - a[0])
    with pytest.raises(InvalidParameterError, match="uniformly spaced"):
        _check_axes((b,))
