"""DPSetConv (seed 002, Alg. 3, Thm 4.2): channels, clipping, the exact noise law, the event, the exact
privacy profile at the tight neighbouring configurations, and bad input (refused before any noise)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privgp.accounting import accountant
from privgp.accounting.divergences import gaussian_shift_mu
from privgp.accounting.functional_noise import DPSetConvEvent
from privgp.accounting.gaussian import gdp_delta, gdp_mu
from privgp.audit.tightness.functional_profiles import dpsetconv_pair_profile, dpsetconv_tightness, joint_supremum_mu
from privgp.errors import InvalidParameterError
from privgp.mechanisms.dpsetconv import dpsetconv, dpsetconv_release, plan_dpsetconv, setconv_channels, setconv_weights
from privgp.models.domain import PublicGrid
from privgp.models.kernels import SquaredExponential
from privgp.models.sampling import prior_paths
from privgp.models.sampling.prior import prior_covariance

GRID = PublicGrid.regular(-3.0, 3.0, 97)


def _plan(**kw):
    base = dict(lengthscale=0.2, clip=2.0, t=0.5, epsilon=1.0, delta=1e-3)
    base.update(kw)
    return plan_dpsetconv(kw.pop("grid", GRID), **{k: v for k, v in base.items() if k != "grid"})


def test_channels_match_a_direct_sum():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-2, 2, 7), rng.normal(0, 3, 7)
    P = GRID.points()
    d, s = setconv_channels(x, y, P, 0.3, clip=1.5)
    for j in (0, 40, 96):
        w = [math.exp(-(P[j, 0] - xi) ** 2 / (2 * 0.3**2)) for xi in x]
        assert d[j] == pytest.approx(sum(w), rel=1e-13)
        assert s[j] == pytest.approx(sum(wi * max(-1.5, min(1.5, yi)) for wi, yi in zip(w, y)), rel=1e-12, abs=1e-300)


def test_channels_2d_and_weights_shape():
    g = PublicGrid.regular([0, 0], [1, 2], [5, 7])
    x = np.array([[0.2, 0.3], [0.9, 1.9]])
    W = setconv_weights(x, g.points(), 0.5)
    assert W.shape == (35, 2) and np.all((W > 0) & (W <= 1))
    d, s = setconv_channels(x, [1.0, -1.0], g.points(), 0.5)
    assert np.allclose(d, W.sum(1)) and np.allclose(s, W[:, 0] - W[:, 1])


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20), st.floats(0.1, 5.0))
def test_clipping(ys, C):
    """|y| <= C unchanged; any y: |signal| <= C * density (hence <= N C max psi)."""
    ys = np.asarray(ys)
    x = np.linspace(-1, 1, ys.size)
    P = GRID.points()
    d, s = setconv_channels(x, ys, P, 0.2, clip=C)
    assert np.all(np.abs(s) <= C * d * (1 + 1e-12) + 1e-300)
    inside = np.clip(ys, -C, C)
    assert np.allclose(s, setconv_channels(x, inside, P, 0.2)[1])


def test_release_is_channels_plus_scaled_exact_prior_noise():
    """Same generator state: release = clean channels + (sigma_d g_d, sigma_s g_s), (g_d, g_s) two
    independent prior_paths draws of the SetConv RBF (whose law tests/test_dpsetconv checks below)."""
    plan = _plan()
    x, y = np.array([-1.0, 0.0, 0.5]), np.array([0.3, -5.0, 1.0])
    rel = dpsetconv_release(plan, x, y, np.random.default_rng(7))
    d, s = setconv_channels(x, y, GRID.points(), 0.2, clip=2.0)
    g = prior_paths(SquaredExponential(0.2), GRID.axes(), rng=np.random.default_rng(7), L=2)
    assert np.allclose(rel.density, d + plan.sigma_density * g[0], rtol=0, atol=1e-12)
    assert np.allclose(rel.signal, s + plan.sigma_signal * g[1], rtol=0, atol=1e-12)
    assert rel.channels().shape == (2, 97) and rel.n == 3
    assert rel.event == plan.event


def test_noise_law_monte_carlo():
    """4000 releases of a fixed context on a 9-point grid: mean -> channels, covariance -> sigma^2 K,
    channels uncorrelated (tolerances ~5 standard errors)."""
    g = PublicGrid.regular(-1.0, 1.0, 9)
    plan = _plan(grid=g, epsilon=3.0, clip=1.0)
    x, y = np.array([-0.5, 0.1]), np.array([0.7, -0.2])
    rng = np.random.default_rng(1)
    R = np.array([dpsetconv_release(plan, x, y, rng).channels() for _ in range(4000)])  # (B, 2, 9)
    d, s = setconv_channels(x, y, g.points(), 0.2, clip=1.0)
    K = SquaredExponential(0.2)(g.points())
    for ch, clean, sig in ((1, d, plan.sigma_density), (0, s, plan.sigma_signal)):
        se = sig / math.sqrt(4000)
        assert np.all(np.abs(R[:, ch].mean(0) - clean) <= 5 * se)
        C = np.cov(R[:, ch].T) / sig**2
        assert np.abs(C - K).max() <= 0.12
    cross = np.mean((R[:, 0] - s) * (R[:, 1] - d), axis=0) / (plan.sigma_signal * plan.sigma_density)
    assert np.abs(cross).max() <= 0.1


def test_plan_and_event():
    plan = _plan()
    assert plan.mu == pytest.approx(float(gdp_mu(1.0, 1e-3)))
    assert (plan.sigma_signal, plan.sigma_density) == pytest.approx((14.564459, 5.149314), abs=1e-6)
    assert isinstance(plan.event, DPSetConvEvent)
    g = accountant.epsilon(plan.event, 1e-3)
    assert g.epsilon <= 1.0 and g.epsilon == pytest.approx(1.0, rel=1e-8)
    assert plan.public_settings()["event"]["type"] == "dpsetconv"
    # "release once": k releases compose to sqrt(k) mu
    assert accountant.epsilon(plan.event.times(4), 1e-3).epsilon == pytest.approx(
        accountant.epsilon(__import__("privgp").accounting.events.GdpEvent(2 * plan.mu), 1e-3).epsilon)


@pytest.mark.parametrize("kw,name", [
    (dict(epsilon=0.0), "epsilon"), (dict(epsilon=-1.0), "epsilon"), (dict(epsilon=math.inf), "epsilon"),
    (dict(epsilon=math.nan), "epsilon"), (dict(delta=0.0), "delta"), (dict(delta=1.0), "delta"),
    (dict(delta=-0.1), "delta"), (dict(clip=0.0), "clip"), (dict(clip=-2.0), "clip"), (dict(clip=math.inf), "clip"),
    (dict(t=0.0), "t"), (dict(t=1.0), "t"), (dict(t=-0.5), "t"), (dict(t=math.nan), "t"),
    (dict(lengthscale=0.0), "lengthscale")])
def test_plan_bad_input(kw, name):
    with pytest.raises(InvalidParameterError, match=f"^{name} must"):
        _plan(**kw)


def test_grid_must_be_public():
    x = np.array([-1.3, 0.2, 2.4])
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidParameterError, match="^grid must be a privgp.models.domain.PublicGrid"):
        plan_dpsetconv(np.linspace(-3, 3, 50), lengthscale=0.2, clip=1, t=0.5, epsilon=1, delta=1e-3)
    fitted = PublicGrid.regular(x.min(), x.max(), 64)           # a grid computed from the private inputs
    plan = plan_dpsetconv(fitted, lengthscale=0.2, clip=1, t=0.5, epsilon=1, delta=1e-3)
    state = rng.bit_generator.state
    with pytest.raises(InvalidParameterError, match="^grid must be public"):
        dpsetconv_release(plan, x, [0.0, 1.0, 2.0], rng)
    assert rng.bit_generator.state == state                      # refused before any noise was drawn


@pytest.mark.parametrize("x,y,name", [(np.array([0.0, np.nan]), [1.0, 2.0], "x"), (np.array([0.0, 1.0]), [1.0], "y"),
                                      (np.array([0.0, 1.0]), [1.0, np.inf], "y"),
                                      (np.zeros((2, 2)), [1.0, 2.0], "x")])
def test_release_bad_data(x, y, name):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(InvalidParameterError, match=f"^{name} must"):
        dpsetconv_release(_plan(), x, y, rng)
    assert rng.bit_generator.state == state
    with pytest.raises(InvalidParameterError, match="^rng must"):
        dpsetconv_release(_plan(), [0.0], [1.0], 0)


def test_one_call_api_and_paper_grid():
    g = PublicGrid.convcnp_window(-7, 7, margin=2)                  # 512 points on [-8, 8 - 1/32]
    assert g.size == 512 and g.lower == (-8.0,) and g.upper == (8 - 1 / 32,)
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, 50)
    rel = dpsetconv(x, np.sin(x), g, epsilon=2.0, delta=1e-3, lengthscale=0.2, clip=2.0, t=0.5, rng=rng)
    assert rel.density.shape == (512,) and np.all(np.isfinite(rel.signal))


# ------------------------------------------------------------- exact privacy profile at the tight pairs
def test_gaussian_shift_mu_matches_privacy_loss_monte_carlo():
    """Independent check of 'equal-covariance Gaussians have the GDP profile with mu = Mahalanobis
    distance': Monte Carlo of the privacy loss L = log p1(Z)/p2(Z), Z ~ N(m1, S);
    delta(eps) = E[(1 - e^(eps - L))_+] (hockey stick), 2e5 draws, 5 standard errors."""
    rng = np.random.default_rng(5)
    A = rng.normal(size=(4, 4))
    S = A @ A.T + 0.5 * np.eye(4)
    m1, m2 = rng.normal(size=4), rng.normal(size=4)
    mu = gaussian_shift_mu(m1, m2, S)
    Z = rng.multivariate_normal(m1, S, size=200_000)
    Si = np.linalg.inv(S)
    Lz = -0.5 * np.einsum("ij,jk,ik->i", Z - m1, Si, Z - m1) + 0.5 * np.einsum("ij,jk,ik->i", Z - m2, Si, Z - m2)
    for eps in (0.0, 0.5, 1.5):
        h = np.maximum(1.0 - np.exp(eps - Lz), 0.0)
        assert abs(h.mean() - float(gdp_delta(mu, eps))) <= 5 * h.std() / math.sqrt(h.size) + 1e-12


@pytest.mark.parametrize("t", [0.2, 0.5, 0.9])
def test_exact_profile_at_tight_pairs(t):
    """Released grid values for tight neighbouring context sets: exact delta(eps) <= GDP curve of the
    plan everywhere; each channel's bound is attained (ratio 1 up to the sampler's jitter); the joint
    supremum is mu sqrt(max(1 - t/2, t)) (audit.functional docstring)."""
    plan = _plan(t=t)
    prof = {p.name: p for p in dpsetconv_tightness(plan, context=(np.array([-0.4, 0.3]), np.array([0.5, -1.0])))}
    eps = np.linspace(0.0, 6.0, 25)
    for p in prof.values():
        assert p.mu_exact <= p.mu_bound * (1 + 1e-12)
        assert np.all(p.delta_exact(eps) <= p.delta_bound(eps) + 1e-15)
    assert prof["density"].mu_density == pytest.approx(prof["density"].mu_density_bound, rel=1e-6)
    assert prof["signal"].mu_signal == pytest.approx(prof["signal"].mu_signal_bound, rel=1e-6)
    assert prof["density"].mu_signal == 0.0 and prof["signal"].mu_density == 0.0
    sup = joint_supremum_mu(plan)
    assert sup / plan.mu == pytest.approx(math.sqrt(max(1 - t / 2, t)), rel=1e-12)
    best = max(p.mu_exact for p in prof.values())
    assert best == pytest.approx(sup, rel=1e-6)


@given(st.integers(0, 10_000))
def test_random_neighbours_never_exceed_the_bound(seed):
    """Random replace-one pairs (inputs anywhere, even off the grid and outside its window, any y)
    stay below mu and below the joint supremum."""
    rng = np.random.default_rng(seed)
    plan = _plan(t=float(rng.uniform(0.05, 0.95)), clip=float(rng.uniform(0.2, 3.0)))
    K = prior_covariance(plan.kernel, GRID.axes())
    n = int(rng.integers(1, 6))
    x = rng.uniform(-4, 4, n)
    y = rng.normal(0, 3, n)
    x2, y2 = x.copy(), y.copy()
    x2[0], y2[0] = rng.uniform(-4, 4), rng.normal(0, 3)
    p = dpsetconv_pair_profile(plan, (x, y), (x2, y2), noise_cov=K)
    assert p.mu_exact <= joint_supremum_mu(plan) * (1 + 1e-9) <= plan.mu * (1 + 1e-9)
