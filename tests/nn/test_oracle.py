"""The non-private reference predictors of seed 002, and the lower-bound model of Fig. S1."""
import numpy as np
import pytest

pytest.importorskip("torch")

from privgp.models.kernels import Matern32, SquaredExponential  # noqa: E402
from privgp.nn.oracle import gp_oracle, signal_channel_predictive  # noqa: E402

GRID = -3.0 + np.arange(128) / 16
LAM, JITTER = 0.3, 1e-6


def _task(family="eq", n=20, t=40, ls=0.7, sn=0.2, seed=0):
    rng = np.random.default_rng(seed)
    x = np.r_[rng.uniform(-2, 2, n), rng.uniform(-2, 2, t)]
    k = (SquaredExponential if family == "eq" else Matern32)(lengthscale=ls)
    K = k(x[:, None], x[:, None]) + 1e-8 * np.eye(n + t)
    y = np.linalg.cholesky(K) @ rng.standard_normal(n + t) + sn * rng.standard_normal(n + t)
    P = np.exp(-0.5 * ((GRID[:, None] - GRID[None, :]) / LAM) ** 2) + JITTER * np.eye(len(GRID))
    noise = np.linalg.cholesky(P) @ rng.standard_normal(len(GRID))
    return x[:n], y[:n], x[n:], k, P, noise


def _grid_space_reference(xc, yc, xt, k, P, noise, sigma, sn):
    """The same predictive from the G-dimensional joint Gaussian of (y_t, r) directly."""
    phi = np.exp(-0.5 * ((GRID[:, None] - xc[None, :]) / LAM) ** 2)
    S = phi @ (k(xc[:, None], xc[:, None]) + sn**2 * np.eye(len(xc))) @ phi.T + sigma**2 * P
    cross = k(xt[:, None], xc[:, None]) @ phi.T
    r = phi @ yc + sigma * noise
    mean = cross @ np.linalg.solve(S, r)
    var = 1.0 + sn**2 - np.einsum("tg,gt->t", cross, np.linalg.solve(S, cross.T))
    return mean, np.sqrt(var)


@pytest.mark.parametrize("family", ["eq", "matern32"])
@pytest.mark.parametrize("sigma", [0.5, 3.0, 15.0])
def test_lower_bound_equals_the_joint_gaussian_conditional(family, sigma):
    xc, yc, xt, k, P, noise = _task(family)
    m, s = signal_channel_predictive(family, xc, yc, xt, 0.7, 0.2, grid=GRID, encoder_lengthscale=LAM,
                                     sigma_signal=sigma, noise=noise, jitter=JITTER)
    m_ref, s_ref = _grid_space_reference(xc, yc, xt, k, P, noise, sigma, 0.2)
    np.testing.assert_allclose(m, m_ref, atol=1e-8)
    np.testing.assert_allclose(s, s_ref, atol=1e-10)


def test_lower_bound_limits_and_several_scales():
    """sigma -> 0: the oracle (Phi has full column rank); sigma -> inf: the prior predictive; a list of
    scales gives each scale's result; the std never drops below the oracle's."""
    xc, yc, xt, k, P, noise = _task(n=8)
    kw = dict(grid=GRID, encoder_lengthscale=LAM, noise=noise, jitter=JITTER)
    mo, so = gp_oracle("eq", xc[None], yc[None], xt[None], 0.7, 0.2)
    m0, s0 = signal_channel_predictive("eq", xc, yc, xt, 0.7, 0.2, sigma_signal=1e-7, **kw)
    np.testing.assert_allclose(m0, mo[0], atol=1e-5)
    np.testing.assert_allclose(s0, so[0], atol=1e-8)
    mi, si = signal_channel_predictive("eq", xc, yc, xt, 0.7, 0.2, sigma_signal=1e7, **kw)
    np.testing.assert_allclose(mi, 0.0, atol=1e-5)
    np.testing.assert_allclose(si, np.sqrt(1.04), atol=1e-8)
    ms, ss = signal_channel_predictive("eq", xc, yc, xt, 0.7, 0.2, sigma_signal=[0.5, 4.0], **kw)
    for j, sig in enumerate((0.5, 4.0)):
        m, s = signal_channel_predictive("eq", xc, yc, xt, 0.7, 0.2, sigma_signal=sig, **kw)
        np.testing.assert_allclose(ms[j], m, atol=1e-12)
        np.testing.assert_allclose(ss[j], s, atol=1e-12)
        assert np.all(s >= so[0] - 1e-12) and np.all(s <= np.sqrt(1.04) + 1e-12)
