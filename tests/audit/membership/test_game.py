"""The membership game (privgp.audit.membership.game): datasets, posteriors at x0, release statistics, streams."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privgp.audit.membership.game import (
    MembershipGame,
    play,
    posterior_at_target,
    release_statistics,
    release_values,
    sample_datasets,
    statistics_of_values,
)
from privgp.errors import InvalidParameterError


def naive_posterior(X, y, x0, ell, r):
    K = np.exp(-np.abs(X[:, None] - X[None, :]) / ell)
    k0 = np.exp(-np.abs(X - x0) / ell)
    Ainv = np.linalg.inv(K + r * r * np.eye(X.size))
    return k0 @ Ainv @ y, 1.0 - k0 @ Ainv @ k0


def test_posterior_at_target_matches_the_textbook_formula():
    game = MembershipGame(n=7, x0=0.3, lengthscale=0.7, r=0.2, sigma=1.0)
    rng = np.random.default_rng(0)
    X, y = sample_datasets(game, True, 6, rng)
    mu, var = posterior_at_target(game, X, y)
    for b in range(6):
        m_ref, v_ref = naive_posterior(X[b], y[b], 0.3, 0.7, 0.2)
        assert mu[b] == pytest.approx(m_ref, abs=1e-12)
        assert var[b] == pytest.approx(v_ref, abs=1e-12)
    assert np.all(np.abs(mu) <= 1.0)        # Lemma B.6: |mu_D| <= M_Y for this kernel and design


def test_datasets_in_out_uniform_and_stratified():
    rng = np.random.default_rng(1)
    g = MembershipGame(n=9, x0=0.5, r=0.1)
    X, y = sample_datasets(g, True, 200, rng)
    assert X.shape == (200, 9) and np.all(X[:, 0] == 0.5) and np.all(y[:, 0] == 1.0)
    assert np.all(y == np.where(X < 0.5, -1.0, 1.0))          # M_xi = 0: the step function exactly
    Xo, _ = sample_datasets(g, False, 200, rng)
    assert Xo.shape == (200, 9) and np.all((Xo >= 0) & (Xo <= 1)) and not np.any(Xo == 0.5)
    gs = g.replace(covariates="stratified")
    Xs, _ = sample_datasets(gs, True, 100, rng)
    assert np.all(np.sum(Xs[:, 1:] < 0.5, axis=1) == 4) and np.all(np.sum(Xs[:, 1:] >= 0.5, axis=1) == 4)
    Xs, _ = sample_datasets(gs, False, 100, rng)
    assert np.all(np.sum(Xs < 0.5, axis=1) == 4) and np.all(np.sum(Xs >= 0.5, axis=1) == 5)
    gn = g.replace(M_xi=0.4)
    Xn, yn = sample_datasets(gn, True, 500, rng)
    assert np.all(np.abs(yn) <= 1.0)
    assert np.all(np.abs(yn - 0.6 * np.where(Xn < 0.5, -1.0, 1.0)) <= 0.4 + 1e-15)
    assert np.std(yn[:, 0]) > 0.1                            # y0 = None: the target's label is noisy too
    X1, y1 = sample_datasets(gn.replace(y0=1.0), True, 50, rng)
    assert np.all(y1[:, 0] == 1.0)


def test_sufficient_statistics_have_the_law_of_the_released_values():
    game = MembershipGame(r=0.3, sigma=0.7, L=4)
    B = 20_000
    mu0, v0 = np.full(B, 0.3), np.full(B, 0.2)
    f, vh = release_statistics(game, mu0, v0, np.random.default_rng(2))
    # moments against N(mu0, sigma^2 v0 / L) and v0 chi^2_{L-1} / L, 5 standard errors
    var_f = 0.49 * 0.2 / 4
    assert abs(f.mean() - 0.3) < 5 * math.sqrt(var_f / B)
    assert abs(f.var() - var_f) < 5 * var_f * math.sqrt(2 / (B - 1))
    m_v, sd_v = 0.2 * 3 / 4, 0.2 * math.sqrt(2 * 3) / 4
    assert abs(vh.mean() - m_v) < 5 * sd_v / math.sqrt(B)
    # and in distribution against the statistics of L explicit draws (two-sample KS)
    f2, v2 = statistics_of_values(game, release_values(game, mu0, v0, np.random.default_rng(3)))
    assert stats.ks_2samp(f, f2).pvalue > 1e-3
    assert stats.ks_2samp(vh, v2).pvalue > 1e-3
    assert abs(np.corrcoef(f, vh)[0, 1]) < 5 / math.sqrt(B)   # independent


def test_covariance_only_release_is_centred_and_normalised():
    game = MembershipGame(r=0.3, sigma=math.inf, L=1)
    vals = release_values(game, np.full(5000, 0.9), np.full(5000, 0.25), np.random.default_rng(4))
    assert abs(vals.mean()) < 5 * 0.5 / math.sqrt(5000)
    assert abs(vals.std() - 0.5) < 0.05


def test_streams_are_independent():
    g = MembershipGame(r=0.2, sigma=1.0, L=2)
    a, ra = play(g, 200, 50, 7)
    b, rb = play(g, 200, 80, 7)
    c, _ = play(g, 300, 50, 7)
    np.testing.assert_array_equal(a.shadow_in.mu0, b.shadow_in.mu0)       # eval size does not touch shadows
    np.testing.assert_array_equal(a.shadow_out.fhat, b.shadow_out.fhat)
    np.testing.assert_array_equal(a.eval_in.fhat, c.eval_in.fhat)         # shadow size does not touch eval
    np.testing.assert_array_equal(a.eval_out.vhat, c.eval_out.vhat)
    assert ra.random() == rb.random()                                     # attack stream: its own
    d, _ = play(g, 200, 50, 8)
    assert not np.array_equal(a.eval_in.fhat, d.eval_in.fhat)


@pytest.mark.parametrize("kw,name", [
    (dict(n=1), "n"), (dict(L=0), "L"), (dict(x0=1.5), "x0"), (dict(M_xi=1.0), "M_xi"),
    (dict(covariates="grid"), "covariates"), (dict(y0=1.5), "y0"), (dict(r=0.0), "r"),
    (dict(sigma=-1.0), "sigma"), (dict(lengthscale=0.0), "lengthscale")])
def test_bad_settings(kw, name):
    with pytest.raises(InvalidParameterError, match=name):
        MembershipGame(**{"r": 0.1, **kw})


def test_too_few_shadow_or_eval_sets():
    g = MembershipGame(r=0.1)
    with pytest.raises(InvalidParameterError, match="n_shadow"):
        play(g, 50, 100, 0)
    with pytest.raises(InvalidParameterError, match="n_eval"):
        play(g, 200, 5, 0)
