"""Query optimisation for LOOD (privgp.audit.lood.queries) and the LOOD-based MIA (lood_mia):
analytic gradients vs mpmath and finite differences, Thm 4.1 / Prop. 5.1, the optimiser never
beating LOOD(S), reconstruction, exact vs Monte Carlo LR-test AUC."""
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from privgp.audit.lood.mia import correlation, lr_auc_monte_carlo, lr_auc_single
from privgp.audit.lood.models import GPPosterior, Predictive, centred_one_hot
from privgp.audit.lood.queries import OBJECTIVES, initial_queries, kernel_similarity, lood_pair, lood_value_and_grad, optimize_queries, reconstruction
from privgp.errors import InvalidParameterError
from privgp.models.kernels import SquaredExponential
from privgp.models.nngp import NNGP, RBF

REF = json.loads((Path(__file__).resolve().parents[2] / "data" / "lood_reference.json").read_text())


def _problem(seed=0, n=15, d=4, C=2, s=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = centred_one_hot(rng.integers(0, C, n), C)
    XS = rng.normal(size=(s, d))
    YS = centred_one_hot(rng.integers(0, C, s), C)
    return rng, X, Y, XS, YS


def _fd(pair, Q, objective, h=1e-6):
    g = np.zeros_like(Q)
    for i in range(Q.shape[0]):
        for j in range(Q.shape[1]):
            Qp, Qm = Q.copy(), Q.copy()
            Qp[i, j] += h
            Qm[i, j] -= h
            g[i, j] = (pair.lood(Qp, objective) - pair.lood(Qm, objective)) / (2 * h)
    return g


def test_single_query_kl_gradient_matches_mpmath():
    case = next(c for c in REF["lood"] if c["name"] == "1d_single")
    pair = lood_pair(RBF(case["gamma"]), case["X"], case["Y"], case["XS"], case["YS"], case["noise"])
    val, g = lood_value_and_grad(pair, np.array(case["Q"]), "kl")
    assert val == pytest.approx(case["values"]["kl"], rel=1e-10)
    np.testing.assert_allclose(g[0], case["kl_grad"], rtol=1e-8)


@pytest.mark.parametrize("k", [RBF(1.0), NNGP("relu", 3, b_std=0.1), NNGP("gelu", 2, b_std=0.1),
                               NNGP("erf", 2), NNGP("elu", 1, b_std=0.2)], ids=repr)
@pytest.mark.parametrize("q, s", [(1, 1), (3, 2)])
def test_gradients_match_finite_differences(k, q, s):
    rng, X, Y, XS, YS = _problem(1, s=s)
    pair = lood_pair(k, X, Y, XS, YS, 0.05)
    Q = rng.normal(size=(q, 4))
    for objective in OBJECTIVES:
        val, g = lood_value_and_grad(pair, Q, objective)
        assert val == pytest.approx(pair.lood(Q, objective), rel=1e-10, abs=1e-14)
        num = _fd(pair, Q, objective)
        np.testing.assert_allclose(g, num, atol=2e-7 * max(1.0, np.abs(num).max()))


def test_gradient_with_empty_training_set():
    pair = lood_pair(RBF(0.5), np.zeros((0, 1)), np.zeros((0, 1)), [[0.0]], [[1.0]], 1.0)
    val, g = lood_value_and_grad(pair, np.array([[1.0]]), "kl")
    assert val == pytest.approx(0.0674162277, abs=1e-10)
    assert g[0, 0] == pytest.approx(_fd(pair, np.array([[1.0]]), "kl")[0, 0], rel=1e-6)


@pytest.mark.parametrize("k", [RBF(1.0), NNGP("relu", 3, b_std=0.1), NNGP("gelu", 3, b_std=0.1)], ids=repr)
def test_theorem_4_1_differing_point_is_stationary(k):
    """Thm 4.1 (RBF: K(x,x) = 1) and, by the sufficient-statistic argument (docs/notes/seed003_lood.md, sec. 1.6), also for
    unnormalised NNGPs: the KL gradient vanishes at Q = S; away from S it does not."""
    rng, X, Y, XS, YS = _problem(2)
    pair = lood_pair(k, X, Y, XS, YS, 0.01)
    val, g = lood_value_and_grad(pair, XS, "kl")
    assert np.abs(g).max() <= 1e-7 * max(1.0, val)
    _, g_away = lood_value_and_grad(pair, XS + 0.3, "kl")
    assert np.abs(g_away).max() > 1e-3


def test_proposition_5_1_mean_distance_gradient_at_S():
    """Prop. 5.1 (eq. 23): grad_Q M(Q)|_{Q=S} = -alpha^-2 (1 - K_SD M^-1 K_DS) (y_S - K_SD M^-1 y_D)^2
    K̊_SD M^-1 K_DS with alpha = 1 - K_SD M^-1 K_DS + s2, for a kernel with K(x, x) = 1 and zero
    diagonal derivative (RBF), one output."""
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(8, 5)), np.sin(rng.normal(size=8))
    XS, yS = 0.6 * rng.normal(size=(1, 5)), np.array([0.9])
    k, s2 = RBF(1.0), 0.1
    pair = lood_pair(k, X, y, XS, yS, s2)
    _, g = lood_value_and_grad(pair, XS, "mean_distance")
    M = k(X, X) + s2 * np.eye(8)
    KDS = k(X, XS)[:, 0]
    Minv_KDS = np.linalg.solve(M, KDS)
    quad = KDS @ Minv_KDS
    alpha = 1 - quad + s2
    resid = yS[0] - KDS @ np.linalg.solve(M, y)
    Kring = k.vjp(XS, X, Minv_KDS[None, :])[0]       # (d K_QD / dQ at Q = S) M^-1 K_DS
    expected = -alpha ** -2 * (1 - quad) * resid ** 2 * Kring
    np.testing.assert_allclose(g[0], expected, rtol=1e-9)
    assert np.linalg.norm(g) > 1e-4  # S is not stationary for the mean distance here


@pytest.mark.parametrize("seed, k", [(4, RBF(1.0)), (5, NNGP("relu", 3)), (6, NNGP("gelu", 2, b_std=0.1))])
def test_optimiser_never_beats_S_and_tracks_the_best_iterate(seed, k):
    rng, X, Y, XS, YS = _problem(seed, n=20)
    pair = lood_pair(k, X, Y, XS, YS, 0.05)
    for q in (1, 2):
        res = optimize_queries(pair, q, steps=60, lr=0.05, restarts=2, init="data", rng=rng)
        assert res.best_value <= res.value_at_S * (1 + 1e-9)
        assert res.best_value == pytest.approx(np.nanmax(res.history))
        assert res.best_value == pytest.approx(pair.lood(res.best_Q), rel=1e-9)
        assert res.ratio <= 1 + 1e-9


def test_optimiser_reconstructs_S_on_an_easy_problem():
    rng = np.random.default_rng(7)
    X = rng.uniform(-3, 3, size=(12, 2))
    Y = np.sin(X[:, :1])
    XS, YS = np.array([[4.0, -4.0]]), np.array([[1.0]])
    pair = lood_pair(RBF(0.5), X, Y, XS, YS, 0.01)
    res = optimize_queries(pair, 1, steps=300, lr=0.1, restarts=3, init="uniform", box=((2, -6), (6, -2)), rng=rng)
    assert res.ratio > 0.999
    rec = reconstruction(pair, res.best_Q)
    assert rec.recovered[0] == 0 and rec.any_recovered
    assert rec.similarity_to_S[0, 0] > 0.999
    assert rec.mse_to_S[0, 0] < 1e-2


def test_patience_stops_early():
    rng, X, Y, XS, YS = _problem(8)
    pair = lood_pair(RBF(1.0), X, Y, XS, YS, 0.05)
    res = optimize_queries(pair, 1, steps=500, lr=1e-6, init=XS + 1.0, rng=rng, patience=5, tol=1.0)
    assert np.isnan(res.history[0, 10:]).all()  # stopped after ~6 steps


def test_kernel_similarity_is_one_on_the_diagonal():
    X = np.random.default_rng(9).normal(size=(4, 3))
    for k in (RBF(1.0), NNGP("relu", 2), NNGP("gelu", 2)):
        np.testing.assert_allclose(np.diag(kernel_similarity(k, X, X)), 1.0, rtol=1e-12)


def test_query_optimisation_bad_inputs():
    rng, X, Y, XS, YS = _problem(10)
    pair = lood_pair(RBF(1.0), X, Y, XS, YS, 0.05)
    with pytest.raises(InvalidParameterError, match="objective"):
        optimize_queries(pair, 1, objective="renyi", rng=rng)
    with pytest.raises(InvalidParameterError, match="box"):
        optimize_queries(pair, 1, init="uniform", rng=rng)
    with pytest.raises(InvalidParameterError, match="box"):
        initial_queries("uniform", 1, pair=pair, rng=rng, box=(1.0, 1.0))
    with pytest.raises(InvalidParameterError, match="init"):
        optimize_queries(pair, 2, init=np.ones((3, 4)), rng=rng)
    with pytest.raises(InvalidParameterError, match="init must be distinct"):
        optimize_queries(pair, 2, init=np.ones((2, 4)), rng=rng)
    with pytest.raises(InvalidParameterError, match="rng"):
        optimize_queries(pair, 1, init="data", rng=0)
    with pytest.raises(InvalidParameterError, match="pair"):
        lood_value_and_grad(GPPosterior(RBF(1.0), X, Y, 0.1).leave_out([0]), XS, "kl")
    se = GPPosterior(SquaredExponential(1.0), X, Y, 0.1).add(XS, YS)
    with pytest.raises(InvalidParameterError, match="kernel"):
        lood_value_and_grad(se, XS, "kl")
    with pytest.raises(InvalidParameterError, match="Sigma must be positive definite"):
        lood_value_and_grad(pair, np.vstack([XS, XS + 1e-12]), "kl")


# -- membership inference --------------------------------------------------------------------------

@pytest.mark.parametrize("row", REF["auc"], ids=lambda r: f"{r['var']}-{r['var_prime']}-{r['dmu']}")
def test_exact_auc_matches_mpmath(row):
    assert lr_auc_single(row["var"], row["var_prime"], [row["dmu"]]) == pytest.approx(row["auc"], abs=1e-7)


def test_equal_variance_auc_is_phi_sqrt_kl():
    """Digest sec. 5, item 13: KL = 1.28 gives AUC = Phi(sqrt(1.28)) = 0.87105."""
    d = math.sqrt(2 * 1.28)
    assert lr_auc_single(1.0, 1.0, [d]) == pytest.approx(0.87105, abs=5e-6)
    assert lr_auc_single(1.0, 1.0, [d]) == pytest.approx(norm.cdf(math.sqrt(1.28)), rel=1e-12)


@pytest.mark.parametrize("v0, v1, d", [(1.0, 0.4, [0.5, -0.2, 0.1]), (0.3, 0.02, [0.05, 0.0]), (1.0, 1.0, [0.7])])
def test_monte_carlo_auc_agrees_with_exact(v0, v1, d):
    """20000 samples per side: Monte Carlo SE of an AUC <= 0.5 / sqrt(20000) ~ 0.0035; 4 SE."""
    p = Predictive(np.zeros((1, len(d))), np.array([[v0]]), np.array([d]), np.array([[v1]]))
    mc = lr_auc_monte_carlo(p, n_samples=20_000, rng=np.random.default_rng(11))
    assert mc == pytest.approx(lr_auc_single(v0, v1, d), abs=0.014)


def test_monte_carlo_auc_multi_query_identical_distributions_is_half():
    S = np.array([[1.0, 0.3], [0.3, 0.5]])
    p = Predictive(np.zeros((2, 2)), S, np.zeros((2, 2)), S)
    assert lr_auc_monte_carlo(p, n_samples=20_000, rng=np.random.default_rng(12)) == pytest.approx(0.5, abs=0.014)


def test_auc_increases_with_lood_on_a_gp():
    rng, X, Y, _, _ = _problem(13, n=30, C=2)
    P = GPPosterior(RBF(1.0), X, Y, 0.05)
    XS = rng.normal(size=(40, 4))
    YS = rng.choice([-0.5, 0.5], size=(40, 1)) * np.array([[1.0, -1.0]])
    kls, aucs = [], []
    for j in range(40):
        pair = P.add(XS[j:j + 1], YS[j:j + 1])
        p = pair.predictive(XS[j:j + 1])
        kls.append(pair.at_differing())
        aucs.append(lr_auc_single(p.cov[0, 0], p.cov_prime[0, 0], p.mean_prime[0] - p.mean[0]))
    c = correlation(kls, aucs)
    assert c["spearman_rho"] > 0.8 and c["n"] == 40


def test_mia_bad_inputs():
    with pytest.raises(InvalidParameterError, match="var"):
        lr_auc_single(0.0, 1.0, [1.0])
    with pytest.raises(InvalidParameterError, match="x/y"):
        correlation([1.0, 2.0], [1.0, 2.0])
    S = np.array([[1.0, 1.0], [1.0, 1.0]])
    p = Predictive(np.zeros((2, 1)), S, np.zeros((2, 1)), S)
    with pytest.raises(InvalidParameterError, match="Q"):
        lr_auc_monte_carlo(p, n_samples=10, rng=np.random.default_rng(0))
