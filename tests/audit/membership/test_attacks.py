"""The attacks (privgp.audit.membership.attacks) and their density models (privgp.audit.membership.densities): latent-mixture
densities, gradients, fits, exact likelihood ratio."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats
from scipy.optimize import approx_fprime, minimize

from privgp.audit.membership.attacks import fit_attack, fit_exact_attack
from privgp.audit.membership.densities import (
    GaussianMixture1D,
    LatentTanhMixture,
    TanhGaussianMixture,
    _BinnedObjective,
    _cell_edges,
    _histogram,
    _latent_cell_masses,
    _pack,
    _phi_edges,
    _unpack,
    fit_gaussian_mixture_1d,
    fit_gaussian_mixture_1d_binned,
    fit_latent_tanh_mixture,
)
from privgp.audit.membership.game import MembershipGame, Population, play, release_values


@pytest.fixture(scope="module")
def sharp_fit():
    """The in-population f_hat of a small-r setting: small observation noise s, the hard case."""
    data, rng = play(MembershipGame(r=0.01, sigma=0.5, L=1), 2500, 100, 0)
    x = data.shadow_in.fhat
    return x, fit_latent_tanh_mixture(x, rng)


def reference_density(mod: LatentTanhMixture, t: float) -> float:
    """App. C's integral over the latent phi, by adaptive quadrature (independent of the cell scheme)."""
    total = 0.0
    for w, m, tau in zip(mod.weights, mod.means, mod.taus):
        f = lambda ph: stats.norm.pdf(t, np.tanh(ph / 2), mod.noise) * stats.norm.pdf(ph, m, tau)  # noqa: E731, B023
        pts = sorted({float(np.clip(2 * np.arctanh(np.clip(t, -1 + 1e-12, 1 - 1e-12)), m - 12 * tau, m + 12 * tau)),
                      float(m)})
        total += w * integrate.quad(f, m - 12 * tau, m + 12 * tau, points=pts, limit=1000, epsabs=0,
                                    epsrel=1e-10)[0]
    return total


def test_objective_gradient_is_exact():
    rng = np.random.default_rng(1)
    x = np.tanh(rng.normal(1.0, 0.7, 3000) / 2) + rng.normal(0, 0.05, 3000)
    t, c = _histogram(x, 64)
    obj = _BinnedObjective(t, c, _cell_edges(x, 64))
    for theta in (np.array([0.3, 0.5, 1.5, np.log(0.3), np.log(0.6), np.log(0.05)]),
                  np.array([-1.0, -2.0, 2.0, np.log(0.01), np.log(2.0), np.log(0.002)])):
        g = obj(theta)[1]
        fd = approx_fprime(theta, lambda th: obj(th)[0], 1e-7)
        np.testing.assert_allclose(g, fd, rtol=1e-4, atol=1e-6)


def test_objective_is_inf_never_nan_where_a_bins_density_underflows():
    # latent mass near u = 0.9 with tiny noise: the outlying bin at -0.95 gets a subnormal density
    # (about 3e-313 at this theta), whose weight c / rho overflows; the objective must say +inf
    # (the line search backs off) with a finite gradient, and raise no floating-point warning
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0.9, 0.01, 500), [-0.95]])
    t, c = _histogram(x, 64)
    obj = _BinnedObjective(t, c, _cell_edges(x, 64))
    with np.errstate(over="raise", invalid="raise"):            # (underflow to 0 is expected)
        for log_s in (-3.014, -3.5, -5.0):
            f, g = obj(np.array([0.0, 3.0, 3.0, -6.0, -6.0, log_s]))
            assert f == np.inf and np.all(np.isfinite(g))
        f, g = obj(np.array([0.0, 3.0, 3.0, -6.0, -6.0, -3.0]))
        assert np.isfinite(f) and np.all(np.isfinite(g))


def test_fitted_density_agrees_with_quadrature_and_is_normalised(sharp_fit):
    x, mod = sharp_fit
    ts = np.quantile(x, [0.005, 0.05, 0.25, 0.5, 0.75, 0.95, 0.995])
    ours = mod.pdf(ts)
    ref = np.array([reference_density(mod, t) for t in ts])
    np.testing.assert_allclose(ours, ref, rtol=0.02)
    lo, hi = -1.0 - 12 * mod.noise, 1.0 + 12 * mod.noise
    mass = integrate.quad(lambda t: float(mod.pdf(np.array([t]))[0]), lo, hi, points=list(ts), limit=2000)[0]
    assert mass == pytest.approx(1.0, abs=1e-5)


def count_local_maxima(y):
    d = np.diff(y)
    return int(np.sum((d[:-1] > 0) & (d[1:] <= 0)))


def gauss_legendre_density(mod: LatentTanhMixture, t, nodes: int = 40):
    """The published scripts' quadrature (40 Gauss-Legendre nodes in u on (-1, 1)), for contrast."""
    u, wq = np.polynomial.legendre.leggauss(nodes)
    u = u * (1 - 1e-8)
    phi = 2 * np.arctanh(u)
    p = sum(w * stats.norm.pdf(phi, m, tau) for w, m, tau in zip(mod.weights, mod.means, mod.taus)) * 2 / (1 - u * u)
    return stats.norm.pdf(t[:, None], u[None, :], mod.noise) @ (wq * p)


def test_no_quadrature_ripples(sharp_fit):
    x, mod = sharp_fit
    assert mod.noise < 0.01
    t = np.linspace(np.quantile(x, 0.001), np.quantile(x, 0.999), 4000)
    # two latent components, each at most bimodal after the tanh map: at most 4 modes without ripples
    assert count_local_maxima(mod.pdf(t)) <= 4
    # the detector is not blind: node-based quadrature at this noise level ripples
    assert count_local_maxima(gauss_legendre_density(mod, t)) > 10


def test_logpdf_in_any_order_equals_the_sum_over_every_cell(sharp_fit):
    """The density is evaluated on sorted points in chunks (a band of cells per chunk): each point's value
    is the full sum over every cell, whatever the order of the points and however many chunks they fill."""
    x, mod = sharp_fit
    rng = np.random.default_rng(5)
    t = rng.permutation(np.concatenate([x, rng.uniform(x.min() - 0.05, x.max() + 0.05, 1500)]))   # > 4 chunks
    e, s = mod.edges, mod.noise
    q, _ = _latent_cell_masses(_phi_edges(e), mod.weights, mod.means, mod.taus)
    steps = special.ndtr((t[:, None] - e[None, :-1]) / s) - special.ndtr((t[:, None] - e[None, 1:]) / s)
    dense = steps @ (q / np.diff(e))
    keep = dense > 1e-6
    assert keep.sum() > 2500
    # atol: the plain differences of CDFs above cancel to ~1e-14 absolute in the upper tail
    np.testing.assert_allclose(mod.pdf(t)[keep], dense[keep], rtol=1e-9, atol=1e-13)
    np.testing.assert_array_equal(mod.logpdf(t[::-1]), mod.logpdf(t)[::-1])


def test_binned_fit_is_the_full_sample_optimum(sharp_fit):
    x, mod = sharp_fit
    full = _BinnedObjective(x, np.ones(x.size), mod.edges)
    theta = _pack(mod.weights[0], mod.means, mod.taus, mod.noise)
    f0 = full(theta)[0]
    assert f0 == pytest.approx(-np.mean(mod.logpdf(x)), rel=1e-9)
    polished = minimize(full, theta, jac=True, method="BFGS", options={"maxiter": 5})
    assert f0 - polished.fun < 2e-3        # nats per sample left on the table by fitting on the histogram
    w, m, tau, s = _unpack(polished.x)
    assert s == pytest.approx(mod.noise, rel=0.1)


def test_em_reaches_the_scikit_learn_optimum():
    from sklearn.mixture import GaussianMixture

    rng = np.random.default_rng(4)
    x = np.concatenate([rng.normal(-2, 0.5, 1500), rng.normal(1, 1.5, 3500)])
    ours = fit_gaussian_mixture_1d(x)
    binned = fit_gaussian_mixture_1d_binned(x)
    sk = GaussianMixture(2, tol=1e-9, max_iter=1000, random_state=0).fit(x[:, None])
    ll_sk = float(np.mean(sk.score_samples(x[:, None])))
    assert float(np.mean(ours.logpdf(x))) == pytest.approx(ll_sk, abs=1e-5)
    assert float(np.mean(binned.logpdf(x))) == pytest.approx(ll_sk, abs=1e-3)


def test_tanh_gaussian_mixture_is_a_density():
    mod = TanhGaussianMixture(GaussianMixture1D(np.array([0.3, 0.7]), np.array([-1.0, 2.0]), np.array([0.5, 1.2])))
    mass = integrate.quad(lambda u: float(np.exp(mod.logpdf(np.array([u])))[0]), -1, 1, limit=500)[0]
    assert mass == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("sigma,L", [(0.5, 3), (np.inf, 2), (2.0, 1)])
def test_exact_attack_is_the_likelihood_ratio_of_all_released_values(sigma, L):
    game = MembershipGame(r=0.2, sigma=sigma, L=L)
    data, _ = play(game, 150, 20, 3)
    att = fit_exact_attack(data)
    vals = release_values(game, data.eval_in.mu0, data.eval_in.v0, np.random.default_rng(9))   # (20, L)
    f = vals.mean(axis=1)
    scale = 1.0 if np.isinf(sigma) else sigma
    vh = ((vals - f[:, None]) ** 2).sum(axis=1) / (L * scale**2)
    pop = Population(True, data.eval_in.mu0, data.eval_in.v0, f, vh)

    def log_mix(p):
        mu = np.zeros_like(p.mu0) if np.isinf(sigma) else p.mu0
        ll = stats.norm.logpdf(vals[:, None, :], mu[None, :, None], scale * np.sqrt(p.v0)[None, :, None]).sum(-1)
        return special.logsumexp(ll, axis=1) - np.log(len(p))

    naive = log_mix(data.shadow_in) - log_mix(data.shadow_out)
    np.testing.assert_allclose(att.score(pop), naive, atol=1e-6)
    # leave-one-out scores of shadow releases drop exactly their own component
    sh = data.shadow_in
    own = att.score(sh, leave_out="in")
    F = np.stack([np.ones(len(sh)), sh.fhat, sh.fhat**2, sh.vhat], axis=1)
    M = F @ att.coef_in
    np.fill_diagonal(M, -np.inf)
    lin = special.logsumexp(M, axis=1) - np.log(len(sh) - 1)
    lout = special.logsumexp(F @ att.coef_out, axis=1) - np.log(len(data.shadow_out))
    np.testing.assert_allclose(own, lin - lout, atol=1e-6)


def test_fit_attack_rejects_unknown_names():
    data, rng = play(MembershipGame(r=0.2), 100, 20, 0)
    with pytest.raises(Exception, match="attack"):
        fit_attack("oracle", data, rng)
