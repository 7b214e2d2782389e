"""The functional mechanism at scale (issue 25, "Nothing charged that cannot be released"): the posterior
mean is computed with one unknown per distinct input / occupied lattice site (exactly the estimator of
the n records), inputs are snapped to the grid lattice by a public per-record map, a 10^5-record CLI
release completes, and a release too large for the memory limit is refused before any charge.
(The 10^6-record timing is a benchmark: benchmarks/bench_release_scale.py, BENCHMARKS.md.)"""
from __future__ import annotations

import numpy as np
import pytest

from privgp.errors import InvalidParameterError
from privgp.mechanisms.functional import plan_functional, posterior_mean_weights, release_functional
from privgp.models.domain import Box, PublicGrid
from privgp.models.kernels import make_kernel
from privgp.models.sampling import prior_paths, snap_to_lattice
from privgp.models.sampling.mean import exp1d_mean, plan_posterior_mean, posterior_mean_on_grid

BOX2 = Box((0.0, 0.0), (1.0, 2.0))
GRID2 = PublicGrid.on_box(BOX2, (13, 21))


def _dense_mean(k, G, X, y, r):
    """The unaggregated posterior mean k(G, X) (K_XX + r^2 I)^{-1} y over all n records."""
    return k(G, X) @ posterior_mean_weights(k, X, y, r)


def _repeated_sites(rng, n, refine):
    X = snap_to_lattice(rng.uniform(BOX2.lower, BOX2.upper, (n, 2)), GRID2.axes(), refine=refine)
    X = np.clip(X, BOX2.lower, BOX2.upper)
    assert np.unique(X, axis=0).shape[0] < n // 2          # many records share a site
    return X, rng.uniform(-1, 1, n)


@pytest.mark.parametrize("kernel", ["exponential", "matern32", "squared_exponential"])
@pytest.mark.parametrize("r", [0.3, 1.0])
def test_aggregated_mean_equals_the_unaggregated_one(kernel, r):
    rng = np.random.default_rng(1)
    X, y = _repeated_sites(rng, 2500, refine=2)
    k = make_kernel(kernel, 0.4)
    ref = _dense_mean(k, GRID2.points(), X, y, r).reshape(GRID2.shape)
    for method, solver in (("lattice", "auto"), ("lattice", "cholesky"), ("dense", "auto")):
        got = posterior_mean_on_grid(k, X, y, GRID2.axes(), r=r, method=method, solver=solver,
                                     refine=2 if method == "lattice" else None)
        assert np.max(np.abs(got - ref)) <= 1e-10, (method, solver)
    cost = plan_posterior_mean(k, X, GRID2.axes(), method="lattice", refine=2)
    assert cost.unknowns == np.unique(X, axis=0).shape[0] and cost.bytes > 0 and cost.seconds > 0


def test_cg_and_cholesky_solvers_agree():
    """The lattice mean's two solvers (CG in the precision form on the whole lattice, Cholesky on the
    occupied sites) solve the same system; sparse occupancy (empty sites) included."""
    rng = np.random.default_rng(6)
    X, y = _repeated_sites(rng, 3000, refine=1)
    X = X[X[:, 0] < 0.6]                                  # a third of the box left empty
    y = y[: X.shape[0]]
    k = make_kernel("matern32", 0.3)
    for r in (0.5, 2.0):
        chol = posterior_mean_on_grid(k, X, y, GRID2.axes(), r=r, method="lattice", refine=1, solver="cholesky")
        cg = posterior_mean_on_grid(k, X, y, GRID2.axes(), r=r, method="lattice", refine=1, solver="cg")
        assert np.max(np.abs(cg - chol)) <= 1e-10
    with pytest.raises(InvalidParameterError, match="^solver must be"):
        posterior_mean_on_grid(k, X, y, GRID2.axes(), r=1.0, method="lattice", solver="lu")


@pytest.mark.parametrize("r", [0.1, 1.0])
def test_exp1d_mean_equals_the_unaggregated_one(r):
    rng = np.random.default_rng(2)
    x = np.round(rng.uniform(0, 1, (400, 1)), 2)          # about 100 distinct inputs, repeated
    y = rng.uniform(-1, 1, 400)
    q = np.linspace(0, 1, 57)[:, None]
    k = make_kernel("exponential", 0.2)
    ref = _dense_mean(k, q, x, y, r)
    assert np.max(np.abs(exp1d_mean(x, y, q, lengthscale=0.2, r=r) - ref)) <= 1e-10
    got = posterior_mean_on_grid(k, x, y, (q[:, 0],), r=r, method="exp1d")
    assert np.max(np.abs(got - ref)) <= 1e-10


def test_snapped_release_equals_the_dense_computation_on_snapped_inputs():
    rng = np.random.default_rng(3)
    n = 600
    X = rng.uniform(BOX2.lower, BOX2.upper, (n, 2))
    y = np.clip(np.sin(3 * X[:, 0]) * np.cos(2 * X[:, 1]) + 0.2 * rng.normal(size=n), -1, 1)
    plan = plan_functional(n, BOX2, GRID2, kernel="exponential", lengthscale=0.5, r=0.7, epsilon=2.0, delta=1e-4,
                           snap=1)
    plain = plan_functional(n, BOX2, GRID2, kernel="exponential", lengthscale=0.5, r=0.7, epsilon=2.0, delta=1e-4)
    # snapping changes the estimator, not the privacy analysis: same event, stated in the public settings
    assert plan.event == plain.event and plan.certified_epsilon == plain.certified_epsilon
    s = plan.public_settings()
    assert s["snap"] == 1 and "snapped to the grid lattice" in s["preprocessing"] and "public per-record" in s["preprocessing"]
    assert plain.public_settings()["preprocessing"] == "none"
    rel = release_functional(plan, X, y, np.random.default_rng(9))
    Xs = snap_to_lattice(X, GRID2.axes(), refine=1)
    k = make_kernel("exponential", 0.5)
    mean = _dense_mean(k, GRID2.points(), Xs, y, 0.7).reshape(GRID2.shape)
    noise = prior_paths(k, GRID2.axes(), rng=np.random.default_rng(9), scale=plan.multiplier)[0]
    assert np.max(np.abs(rel.values - (mean + noise))) <= 1e-10
    # unsnapped: the exact mean of the original inputs
    rel0 = release_functional(plain, X, y, np.random.default_rng(9))
    assert np.max(np.abs(rel0.values - (_dense_mean(k, GRID2.points(), X, y, 0.7).reshape(GRID2.shape) + noise))) <= 1e-10


def test_snapped_inputs_stay_in_the_box_and_the_grid_must_span_it():
    plan = plan_functional(50, BOX2, GRID2, kernel="exponential", lengthscale=0.5, r=1.0, epsilon=1.0, delta=1e-4,
                           snap=3)
    X = np.array([[1.0, 2.0], [0.0, 0.0], [0.999999999, 1.9999999]] * 16 + [[0.5, 0.5]] * 2)
    Xs, _ = plan.check(X, np.zeros(50))
    assert np.all(Xs >= np.array(BOX2.lower)) and np.all(Xs <= np.array(BOX2.upper))
    inner = PublicGrid.regular((0.1, 0.1), (0.9, 1.9), (9, 9))
    with pytest.raises(InvalidParameterError, match="^grid must be spanning the domain box"):
        plan_functional(50, BOX2, inner, kernel="exponential", lengthscale=0.5, r=1.0, epsilon=1.0, delta=1e-4, snap=1)
    with pytest.raises(InvalidParameterError, match="^snap must"):
        plan_functional(50, BOX2, GRID2, kernel="exponential", lengthscale=0.5, r=1.0, epsilon=1.0, delta=1e-4, snap=0)


def test_too_large_solve_refused_by_check_naming_the_option():
    rng = np.random.default_rng(4)
    n = 3000
    X, y = rng.uniform(BOX2.lower, BOX2.upper, (n, 2)), rng.uniform(-1, 1, n)
    kw = dict(kernel="exponential", lengthscale=0.5, r=1.0, epsilon=1.0, delta=1e-4, memory_limit=2**25)
    dense = plan_functional(n, BOX2, GRID2, **kw)
    state = rng.bit_generator.state
    with pytest.raises(InvalidParameterError, match=r"^memory must .*dense posterior mean \(3000 unknowns.*--snap 1"):
        release_functional(dense, X, y, rng)
    assert rng.bit_generator.state == state
    fine = plan_functional(n, BOX2, PublicGrid.on_box(BOX2, (61, 121)), snap=2, **kw)
    with pytest.raises(InvalidParameterError, match=r"^memory must .*lattice posterior mean.*coarser lattice"):
        fine.check(X, y)
    assert release_functional(plan_functional(n, BOX2, GRID2, snap=1, **kw), X, y, rng).values.shape == GRID2.shape


@pytest.mark.parametrize("dim", [1, 2])
def test_comparison_functional_batch_is_the_dense_release(dim):
    """privgp.tasks.comparison releases the functional mechanism with the workload's snap, one mean per
    dataset and one noise draw per repeat: the same numbers as the dense mean plus release_functional's noise."""
    from privgp.tasks.comparison import batch_of, release_batch, synthetic_1d, synthetic_2d, with_repeats

    make = synthetic_1d if dim == 1 else synthetic_2d
    w = with_repeats(make(2, 1, n=60, grid=21 if dim == 2 else 41, rng=np.random.default_rng(7)), 2)
    b = batch_of(w, [0, 1])
    rel = release_batch(b, "functional", {"lengthscale": 0.3, "r": 0.8}, 2.0, 1e-4, np.random.default_rng(8))
    k = make_kernel(w.kernel, 0.3)
    plan = plan_functional(b.X.shape[1], b.domain, b.grid, kernel=w.kernel, lengthscale=0.3, r=0.8, epsilon=2.0,
                           delta=1e-4)
    rng = np.random.default_rng(8)
    want = []
    for X, y in zip(b.X, b.y):
        mean = _dense_mean(k, b.grid.points(), X, y, 0.8)
        for _ in range(2):
            want.append(mean + prior_paths(k, b.grid.axes(), rng=rng, scale=plan.multiplier)[0].reshape(-1))
    assert rel.values.shape == (4, b.grid.size) and np.max(np.abs(rel.values - np.asarray(want))) <= 1e-10
