"""Per-record LOOD of a planned seed-000 release (privgp.audit.lood.release), the LOOD column of the
tightness audit, ``privgp audit lood`` and the batched Gaussian Rényi divergence."""
import json
import math

import numpy as np
import pytest

from privgp.accounting.divergences import renyi_divergence_gaussians, renyi_gaussians_batched
from privgp.audit.lood.models import GPPosterior
from privgp.audit.lood.release import audit_release_lood, game_lood
from privgp.audit.membership.game import MembershipGame
from privgp.audit.tightness.settings import audit_tightness
from privgp.cli.main import main
from privgp.errors import InvalidParameterError
from privgp.mechanisms import ResponseMap, plan_posterior_sample
from privgp.models.domain import Box
from privgp.models.kernels import make_kernel


def _plan_1d(n=12, **kw):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 10, size=(n, 1))
    z = rng.uniform(-2, 2, size=n)
    # unsnapped inputs, whose posteriors the refits below compare with (an audit, not a release: 1-D snaps by default
    # since 2026-11-29)
    opts = dict(kernel="matern32", lengthscale=2.0, sigma=0.5, r=0.3, grid=41, snap=None)
    opts.update(kw)
    plan = plan_posterior_sample(n, Box((0.0,), (10.0,)), ResponseMap(0.0, 1.5), **opts)
    return plan, X, z


def _gauss(P, Q, scale):
    return P.mean(Q)[:, 0], scale * P.cov(Q)


def test_per_record_lood_equals_refits_of_the_released_posterior():
    """LOOD of record i = divergence between the seed-000 posteriors GP(mu, sigma^2 k_D) of D minus i and
    of D, at x_i (refits with privgp.models.gp-style formulas), times L."""
    plan, X, z = _plan_1d(L=3)
    res = audit_release_lood(plan, X, z, alpha=2.0, top=2)
    _, y = plan.check(X, z)
    k = make_kernel("matern32", 2.0)
    s2, r2 = plan.sigma ** 2, plan.r ** 2
    for i in (0, 5, 11):
        keep = np.arange(12) != i
        small = GPPosterior(k, X[keep], y[keep], r2)
        full = GPPosterior(k, X, y, r2)
        Q = X[i:i + 1]
        m0, S0 = _gauss(small, Q, s2)
        m1, S1 = _gauss(full, Q, s2)
        kl = 0.5 * (S0[0, 0] / S1[0, 0] - 1 - math.log(S0[0, 0] / S1[0, 0]) + (m0[0] - m1[0]) ** 2 / S1[0, 0])
        assert res.kl[i] == pytest.approx(3 * kl, rel=1e-9)
        assert res.renyi[i] == pytest.approx(3 * renyi_divergence_gaussians(2.0, m0, S0, m1, S1), rel=1e-9)
        assert res.renyi_reverse[i] == pytest.approx(3 * renyi_divergence_gaussians(2.0, m1, S1, m0, S0), rel=1e-9)
        # whole path: adding the release grid to the query set changes nothing (sufficient statistic)
        G = np.vstack([Q, plan.axes()[0][::4, None]])
        m0, S0 = _gauss(small, G, s2)
        m1, S1 = _gauss(full, G, s2)
        assert 3 * renyi_divergence_gaussians(1.5, m1, S1, m0, S0) <= \
            audit_release_lood(plan, X, z, alpha=1.5, top=0).renyi_reverse[i] * (1 + 1e-6)


def test_replace_one_found_is_exact_for_its_pair_and_below_the_certificate():
    plan, X, z = _plan_1d()
    res = audit_release_lood(plan, X, z, alpha=2.5, top=3, candidates_per_axis=21)
    assert set(res.replace_one) == set(int(i) for i in res.ranking()[:3])
    assert res.certified_rdp == pytest.approx(float(plan.event.rdp(2.5)))
    assert all(val <= res.certified_rdp for val in res.replace_one.values())
    # brute force: refit every replacement on the candidate grid, both orders, on (x_i, x', 3 grid points)
    _, y = plan.check(X, z)
    k, s2, r2 = make_kernel("matern32", 2.0), plan.sigma ** 2, plan.r ** 2
    i = int(res.ranking()[0])
    best = 0.0
    extra = np.array([[0.5], [4.5], [9.5]])
    for xp in np.linspace(0, 10, 21):
        for yp in (-1.0, 1.0):
            X2, y2 = X.copy(), y.copy()
            X2[i, 0], y2[i] = xp, yp
            Q = np.vstack([X[i:i + 1], [[xp]], extra]) if xp != X[i, 0] else np.vstack([X[i:i + 1], extra])
            a = _gauss(GPPosterior(k, X, y, r2), Q, s2)
            b = _gauss(GPPosterior(k, X2, y2, r2), Q, s2)
            best = max(best, renyi_divergence_gaussians(2.5, *a, *b), renyi_divergence_gaussians(2.5, *b, *a))
    assert res.replace_one[i] == pytest.approx(best, rel=1e-6)


def test_covariance_only_game_and_prior_noise_variants():
    """sigma = inf (covariance-only release): the means do not enter; eta > 0: lower estimates."""
    game = MembershipGame(n=5, r=0.2, sigma=math.inf, lengthscale=0.5)
    res = game_lood(game, 2.0, rng=np.random.default_rng(1), datasets=1, grid=101)
    from privgp.audit.membership.game import sample_datasets

    Xs, _ = sample_datasets(game, True, 1, np.random.default_rng(1))
    X = Xs[0, 1:, None]
    best = 0.0
    for x in np.linspace(0, 1, 101):
        v0 = GPPosterior(game.kernel, X, np.zeros(4), 0.04).var([[x]])[0]
        v1 = GPPosterior(game.kernel, np.vstack([X, [[x]]]), np.zeros(5), 0.04).var([[x]])[0]
        best = max(best, renyi_divergence_gaussians(2.0, [0.0], [[v1]], [0.0], [[v0]]))
    assert res.reverse == pytest.approx(best, rel=1e-9)
    noisy, X, z = _plan_1d(eta=0.4)
    r_noisy = audit_release_lood(noisy, X, z, alpha=2.0, top=1)
    base = audit_release_lood(_plan_1d()[0], X, z, alpha=2.0, top=1)
    assert not r_noisy.whole_path and np.all(r_noisy.kl < base.kl)
    assert any("eta > 0" in note for note in r_noisy.notes)


def test_release_audit_bad_input():
    plan, X, z = _plan_1d()
    with pytest.raises(InvalidParameterError, match="alpha"):
        audit_release_lood(plan, X, z, alpha=1.0)
    with pytest.raises(InvalidParameterError, match="top"):
        audit_release_lood(plan, X, z, top=-1)
    with pytest.raises(InvalidParameterError, match="coordinates"):
        audit_release_lood(plan, X + 20.0, z)


def test_game_lood_matches_refits():
    game = MembershipGame(n=6, r=0.2, sigma=0.7, lengthscale=0.5)
    res = game_lood(game, 2.0, rng=np.random.default_rng(3), datasets=2, grid=201)
    # brute force on the same datasets
    from privgp.audit.membership.game import sample_datasets

    Xs, ys = sample_datasets(game, True, 2, np.random.default_rng(3))
    best_f = best_r = 0.0
    for X, y in zip(Xs[:, 1:], ys[:, 1:]):
        for x in np.linspace(0, 1, 201):
            for yn in (-1.0, 1.0):
                a = _gauss(GPPosterior(game.kernel, X[:, None], y, game.r ** 2), [[x]], game.sigma ** 2)
                b = _gauss(GPPosterior(game.kernel, np.append(X, x)[:, None], np.append(y, yn), game.r ** 2), [[x]],
                           game.sigma ** 2)
                best_f = max(best_f, renyi_divergence_gaussians(2.0, *a, *b))
                best_r = max(best_r, renyi_divergence_gaussians(2.0, *b, *a))
    assert res.forward == pytest.approx(best_f, rel=1e-8)
    assert res.reverse == pytest.approx(best_r, rel=1e-8)


def test_tightness_has_the_lood_column():
    res = audit_tightness(MembershipGame(n=5, r=0.3, sigma=1.0), alpha=2.0, rng=np.random.default_rng(0),
                          restarts=1, test_points=1, lood_datasets=2)
    d = res.to_dict()
    assert d["lood_alpha"] == 2.0 and d["lood_renyi_reverse_found"] > 0
    assert d["lood_renyi_reverse_over_certified"] == pytest.approx(d["lood_renyi_reverse_found"] / d["rdp_certified_one_path"])
    from privgp.mechanisms import posterior_sample_event

    ev = posterior_sample_event(5, 0.3, 1.0, kernel="exponential", lengthscale=1.0, sensitivity="exp1d")
    assert float(ev.rdp(2.0)) == pytest.approx(d["rdp_certified_one_path"], rel=1e-12)
    none = audit_tightness(MembershipGame(n=5, r=0.3, sigma=1.0), alpha=2.0, rng=np.random.default_rng(0),
                           restarts=1, test_points=1, lood_datasets=0)
    assert "lood_alpha" not in none.to_dict()


def test_cli_audit_lood(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["audit", "lood", "--top", "3", "--candidates", "11"]) == 0
    out = capsys.readouterr().out
    assert "INTERNAL AUDIT" in out and "Do not publish" in out and "most exposed" in out
    assert "<= certified" in out
    assert main(["audit", "lood", "--top", "2", "--candidates", "11", "--json", "--alpha", "2"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["notice"].startswith("INTERNAL AUDIT") and d["n"] == 211 and len(d["most_exposed"]) == 2
    assert d["alpha"] == 2.0 and d["replace_one_le_certified"]
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_cli_audit_lood_user_errors(capsys):
    assert main(["audit", "lood", "--alpha", "0.5"]) == 2
    assert "alpha must be > 1" in capsys.readouterr().err
    assert main(["audit", "lood", "--data", "missing.csv", "--box", "0", "1", "--threshold", "0", "--clip", "1"]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and "Traceback" not in err


def test_batched_renyi_matches_the_single_formula():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(40, 3, 3)), rng.normal(size=(40, 3, 3))
    S1 = A @ A.transpose(0, 2, 1) + 0.1 * np.eye(3)
    S2 = B @ B.transpose(0, 2, 1) + 0.1 * np.eye(3)
    m1, m2 = rng.normal(size=(40, 3)), rng.normal(size=(40, 3))
    for alpha in (1.2, 4.0):
        got = renyi_gaussians_batched(alpha, m1, S1, m2, S2)
        ref = np.array([renyi_divergence_gaussians(alpha, m1[i], S1[i], m2[i], S2[i]) for i in range(40)])
        assert np.array_equal(np.isinf(got), np.isinf(ref))
        np.testing.assert_allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)], rtol=1e-9)
    with pytest.raises(InvalidParameterError, match="cov1"):
        renyi_gaussians_batched(2.0, m1[:1], np.zeros((1, 3, 3)), m2[:1], S2[:1])
    with pytest.raises(InvalidParameterError, match="alpha"):
        renyi_gaussians_batched(1.0, m1, S1, m2, S2)
