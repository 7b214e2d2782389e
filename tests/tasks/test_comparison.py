"""The DP sparse GP as the third mechanism of the comparison (privgp.tasks.comparison): wired to the
release plan of seed 001 with the candidate's public settings, its band and coverage, its candidates."""
from __future__ import annotations

import numpy as np
import pytest

from privgp.errors import InvalidParameterError
from privgp.mechanisms.release import ResponseMap
from privgp.mechanisms.sparse_gp_release import plan_sparse_gp
from privgp.tasks import comparison as cmp


@pytest.fixture(scope="module")
def workload():
    return cmp.synthetic_1d(2, 2, n=40, grid=51, rng=np.random.default_rng(3))


def test_sparse_gp_release_is_the_seed001_plan(workload):
    b = cmp.batch_of(workload, [0, 1])
    params = {"kernel": "squared_exponential", "lengthscale": 0.3, "noise_std": 0.1, "inducing": 8}
    rel = cmp.release_batch(b, "dp_sparse_gp", params, 2.0, 1e-3, np.random.default_rng(7))
    plan = plan_sparse_gp(40, b.domain, ResponseMap(threshold=0.0, clip=1.0), epsilon=2.0, delta=1e-3,
                          kernel="squared_exponential", lengthscale=0.3, noise_std=0.1, inducing=8, grid=51)
    rng = np.random.default_rng(7)
    twin = plan.simulation()   # a study draws the float twin of the release's exact discrete noise (same stds)
    draws = [twin.draw(X, y, rng) for X, y in zip(b.X, b.y)]
    np.testing.assert_array_equal(rel.values, np.stack([d.mean.ravel() for d in draws]))
    np.testing.assert_array_equal(rel.half_width, np.stack([2 * d.sd.ravel() for d in draws]))
    assert rel.used["inducing_points"] == 8 and rel.used["certified_epsilon"] <= 2.0
    assert rel.used["sigma_a"] == pytest.approx(plan.noise.sigma_a)
    # a larger epsilon means less noise on the statistics
    rel8 = cmp.release_batch(b, "dp_sparse_gp", params, 8.0, 1e-3, np.random.default_rng(7))
    assert rel8.used["sigma_a"] < rel.used["sigma_a"]


def test_pointwise_band_coverage(workload):
    b = cmp.batch_of(workload, [0])
    ref = b.ref[0]
    vals = ref + np.linspace(-1.0, 1.0, ref.size)           # error |x| growing from the centre
    hw = np.full(ref.size, 0.5)
    m = cmp.metrics(b, cmp.Released(vals[None], hw[None], {}))
    w = cmp.ex.trapezoid_weights(b.grid.axes())
    inside = np.abs(np.linspace(-1.0, 1.0, ref.size)) <= 0.5
    assert m["coverage"][0] == pytest.approx(float(inside @ w / w.sum()))
    assert m["band_half_width"][0] == pytest.approx(0.5)
    scalar = cmp.metrics(b, cmp.Released(vals[None], np.array([0.5]), {}))  # one half-width per release
    assert scalar["coverage"][0] == pytest.approx(m["coverage"][0])
    assert "coverage" not in cmp.metrics(b, cmp.Released(vals[None], None, {}))


def test_sparse_gp_candidates():
    c = cmp.candidates("dp_sparse_gp", (0.1, 0.3), noise_stds=(0.1, 1.0), inducing=(4, 8))
    assert len(c) == 2 * 2 * 2 * 2
    assert {x["kernel"] for x in c} == set(cmp.SPARSE_GP_KERNELS)
    assert len({tuple(sorted(x.items())) for x in c}) == len(c)
    with pytest.raises(InvalidParameterError, match="mechanism"):
        cmp.candidates("sparse", (0.1,))


def test_non_private_sparse_gp_reference(workload):
    """The noise-free reference is Titsias' predictive mean K_VZ (s^2 K_ZZ + K_ZX K_XZ)^-1 K_ZX y on the
    same public model (computed here directly), and the DP sparse GP approaches it as epsilon grows."""
    from privgp.mechanisms.sparse_gp_release import inducing_grid
    from privgp.models.kernels import make_kernel

    b = cmp.batch_of(workload, [0])
    params = {"kernel": "squared_exponential", "lengthscale": 0.3, "noise_std": 0.3, "inducing": 8}
    ref = cmp.release_batch(b, "non_private_sparse_gp", params, 1.0, 1e-3, np.random.default_rng(0))
    k = make_kernel("squared_exponential", 0.3)
    Z, X, y, V = inducing_grid(b.domain, 8), b.X[0], b.y[0], b.grid.points()
    Kzx = k(Z, X)
    direct = k(V, Z) @ np.linalg.solve(0.09 * k(Z, Z) + Kzx @ Kzx.T, Kzx @ y)
    np.testing.assert_allclose(ref.values[0], direct, atol=1e-6)
    assert ref.used["inducing_points"] == 8 and ref.half_width.shape == ref.values.shape
    gaps = [np.abs(cmp.release_batch(b, "dp_sparse_gp", params, e, 1e-3, np.random.default_rng(1)).values
                   - ref.values).max() for e in (1.0, 1e4, 1e8)]
    assert gaps[0] > gaps[1] > gaps[2]
