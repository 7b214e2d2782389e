"""LOOD of GP models (privgp.audit.lood.models, seed 003): exact updates vs brute-force refits, mpmath
references, the pinned values of docs/notes/seed003_lood.md, sec. 5, and the laws: KL(D||D') >= KL(D'||D) for one
query, LOOD(Q) <= LOOD(S) and LOOD(S u Q) = LOOD(S)."""
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privgp.audit.lood.models import DIVERGENCES, GPPosterior, Predictive, centred_one_hot, single_query_divergence
from privgp.errors import InvalidParameterError
from privgp.models.kernels import Constant
from privgp.models.nngp import NNGP, RBF

REF = json.loads((Path(__file__).resolve().parents[2] / "data" / "lood_reference.json").read_text())
ALL = [(d, 1.7 if d.startswith("renyi") else None) for d in DIVERGENCES]


def _refit_predictive(k, X, Y, XS, YS, noise, Q):
    P0 = GPPosterior(k, X, Y, noise)
    P1 = GPPosterior(k, np.vstack([X, XS]), np.vstack([Y, YS]), noise)
    return Predictive(P0.mean(Q), P0.cov(Q), P1.mean(Q), P1.cov(Q))


def _problem(seed=0, n=25, d=4, C=3, s=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = centred_one_hot(rng.integers(0, C, n), C)
    XS = rng.normal(size=(s, d))
    YS = centred_one_hot(rng.integers(0, C, s), C)
    return rng, X, Y, XS, YS


@pytest.mark.parametrize("k", [RBF(1.0), NNGP("relu", 3), NNGP("gelu", 2, b_std=0.1), NNGP("erf", 2)], ids=repr)
def test_rank_s_update_equals_refit(k):
    rng, X, Y, XS, YS = _problem()
    Q = rng.normal(size=(4, 4))
    pair = GPPosterior(k, X, Y, 0.05).add(XS, YS)
    got, ref = pair.predictive(Q), _refit_predictive(k, X, Y, XS, YS, 0.05, Q)
    for a, b in [(got.mean, ref.mean), (got.cov, ref.cov), (got.mean_prime, ref.mean_prime),
                 (got.cov_prime, ref.cov_prime)]:
        np.testing.assert_allclose(a, b, atol=1e-10)
    for div, alpha in ALL:
        assert pair.lood(Q, div, alpha) == pytest.approx(ref.divergence(div, alpha), rel=1e-9, abs=1e-10)


@pytest.mark.parametrize("k", [RBF(0.7), NNGP("relu", 2, b_std=0.2)], ids=repr)
def test_leave_out_equals_refit(k):
    rng, X, Y, XS, YS = _problem(1)
    Q = rng.normal(size=(3, 4))
    full = GPPosterior(k, np.vstack([X, XS]), np.vstack([Y, YS]), 0.1)
    pair = full.leave_out([X.shape[0], X.shape[0] + 1])
    got, ref = pair.predictive(Q), _refit_predictive(k, X, Y, XS, YS, 0.1, Q)
    for a, b in [(got.mean, ref.mean), (got.cov, ref.cov), (got.mean_prime, ref.mean_prime),
                 (got.cov_prime, ref.cov_prime)]:
        np.testing.assert_allclose(a, b, atol=1e-10)
    assert pair.at_differing() == pytest.approx(GPPosterior(k, X, Y, 0.1).add(XS, YS).at_differing(), rel=1e-10)


def test_many_candidates_times_many_queries_equal_refits():
    rng, X, Y, XS, YS = _problem(2, s=5)
    k = NNGP("relu", 2, b_std=0.1)
    Q = rng.normal(size=(6, 4))
    P = GPPosterior(k, X, Y, 0.05)
    for div, alpha in ALL:
        M = P.add_each(Q, XS, YS, div, alpha)
        assert M.shape == (6, 5)
        for j in range(5):
            for i in range(6):
                ref = _refit_predictive(k, X, Y, XS[j:j + 1], YS[j:j + 1], 0.05, Q[i:i + 1]).divergence(div, alpha)
                assert M[i, j] == pytest.approx(ref, rel=1e-9, abs=1e-10)


def test_leave_each_out_equals_refits():
    rng, X, Y, _, _ = _problem(3, n=12)
    k = RBF(1.0)
    Q = rng.normal(size=(3, 4))
    full = GPPosterior(k, X, Y, 0.05)
    for div, alpha in ALL:
        M = full.leave_each_out(Q, div, alpha)
        at = full.leave_each_out_at_record(div, alpha)
        for j in range(12):
            keep = np.arange(12) != j
            for i in range(3):
                ref = _refit_predictive(k, X[keep], Y[keep], X[j:j + 1], Y[j:j + 1], 0.05, Q[i:i + 1])
                assert M[i, j] == pytest.approx(ref.divergence(div, alpha), rel=1e-9, abs=1e-10)
            ref_S = _refit_predictive(k, X[keep], Y[keep], X[j:j + 1], Y[j:j + 1], 0.05, X[j:j + 1])
            assert at[j] == pytest.approx(ref_S.divergence(div, alpha), rel=1e-8, abs=1e-10)


@pytest.mark.parametrize("case", REF["lood"], ids=lambda c: c["name"])
def test_matches_mpmath_refits(case):
    P = GPPosterior(RBF(case["gamma"]), case["X"], case["Y"], case["noise"])
    pair = P.add(case["XS"], case["YS"])
    for div, val in case["values"].items():
        alpha = case.get("renyi_alpha") if div.startswith("renyi") else None
        assert pair.lood(case["Q"], div, alpha) == pytest.approx(val, rel=1e-10), div
    if case["name"] == "1d_at_S":
        for div in ("kl", "kl_reverse", "mean_distance"):
            assert pair.at_differing(div) == pytest.approx(case["values"][div], rel=1e-10)


# -- docs/notes/seed003_lood.md, sec. 5: pinned values -------------------------------------------

def _empty(dim=1):
    return np.zeros((0, dim)), np.zeros((0, 1))


def test_pinned_empty_dataset_single_point():
    """Item 1: K(S,S) = 1, noise 1, y_S = 1, Q = S: 1/2 (1 - ln 2 + 1/2)."""
    X, Y = _empty()
    pair = GPPosterior(RBF(0.5), X, Y, 1.0).add([[0.0]], [[1.0]])
    assert pair.at_differing() == pytest.approx(0.5 * (1.5 - math.log(2.0)), rel=1e-12)
    assert pair.at_differing() == pytest.approx(0.40342640972, abs=1e-11)
    assert pair.lood([[0.0]]) == pytest.approx(0.40342640972, abs=1e-11)
    assert pair.lood([[1.0]]) == pytest.approx(0.0674162277, abs=1e-10)
    assert pair.lood([[1.0]], "mean_distance") == pytest.approx(0.0459849301, abs=1e-10)


def test_pinned_constant_kernel():
    """Item 2: K = 1, n = 3, y = 1, noise 1: Sigma = 0.25, Sigma' = 0.2, mu = 0.75, mu' = 0.8 at every Q."""
    pair = GPPosterior(Constant(), np.zeros((3, 1)), np.ones(3), 1.0).add([[5.0]], [1.0])
    for q in (-3.0, 0.0, 7.5):
        p = pair.predictive([[q]])
        assert (p.cov[0, 0], p.cov_prime[0, 0]) == pytest.approx((0.25, 0.2), rel=1e-12)
        assert (p.mean[0, 0], p.mean_prime[0, 0]) == pytest.approx((0.75, 0.8), rel=1e-12)
        assert pair.lood([[q]]) == pytest.approx(0.0196782243, abs=1e-10)


def test_pinned_duplicate_is_not_zero():
    """Item 3: an exact duplicate of a training record still has LOOD 0.0889341126."""
    pair = GPPosterior(RBF(0.5), [[0.0]], [1.0], 1.0).add([[0.0]], [1.0])
    assert pair.at_differing() == pytest.approx(0.0889341126, abs=1e-10)


def test_pinned_zero_cases():
    """Item 4: a far query has LOOD exactly 0; LOOD decreases to 0 as the noise grows."""
    pair = GPPosterior(RBF(0.5), [[0.0], [1.0]], [0.3, -0.2], 0.1).add([[0.5]], [1.0])
    assert pair.lood([[60.0]]) == 0.0
    vals = [GPPosterior(RBF(0.5), [[0.0], [1.0]], [0.3, -0.2], s2).add([[0.5]], [1.0]).at_differing()
            for s2 in (1.0, 10.0, 100.0, 1000.0)]
    assert all(a > b > 0 for a, b in zip(vals, vals[1:])) and vals[-1] < 1e-5


def test_pinned_scale_invariance_relu_not_gelu():
    """Item 5: ReLU NNGP with b_std = 0 (homogeneous of degree 1): KL(lam Q) = KL(Q) and
    M(lam Q) = lam^2 M(Q) (the paper's eq. 9 prints lam^alpha; docs/notes/seed003_lood.md, sec. 6.3); GeLU is not invariant."""
    rng, X, Y, XS, YS = _problem(4, C=2, s=1)
    Q = rng.normal(size=(1, 4))
    relu = GPPosterior(NNGP("relu", 3), X, Y, 0.1).add(XS, YS)
    for lam in (0.5, 3.0):
        assert relu.lood(lam * Q) == pytest.approx(relu.lood(Q), rel=1e-9)
        assert relu.lood(lam * Q, "mean_distance") == pytest.approx(lam ** 2 * relu.lood(Q, "mean_distance"), rel=1e-9)
    gelu = GPPosterior(NNGP("gelu", 3), X, Y, 0.1).add(XS, YS)
    assert abs(gelu.lood(0.5 * Q) / gelu.lood(Q) - 1.0) > 0.01


def test_multi_output_is_the_sum_of_single_outputs():
    """Item 15: with C outputs the KL is the sum of the per-output KLs."""
    rng, X, Y, XS, YS = _problem(5, C=3, s=1)
    Q = rng.normal(size=(2, 4))
    k = RBF(1.0)
    total = GPPosterior(k, X, Y, 0.1).add(XS, YS).lood(Q)
    parts = sum(GPPosterior(k, X, Y[:, c], 0.1).add(XS, YS[:, c]).lood(Q) for c in range(3))
    assert total == pytest.approx(parts, rel=1e-12)


def test_closed_form_at_differing_point():
    """sec. 1.5: 1/2 [v/s2 - log(1 + v/s2) + v e^2 / (s2 (s2 + v))] per output, with v = Sigma_D(S),
    e = y_S - mu_D(S)."""
    rng, X, Y, XS, YS = _problem(6, C=2, s=1)
    P = GPPosterior(NNGP("gelu", 3), X, Y, 0.07)
    v_, e = float(P.var(XS)[0]), YS[0] - P.mean(XS)[0]
    s2 = 0.07
    expected = 0.5 * (2 * (v_ / s2 - math.log1p(v_ / s2)) + v_ * float(e @ e) / (s2 * (s2 + v_)))
    pair = P.add(XS, YS)
    assert pair.at_differing() == pytest.approx(expected, rel=1e-12)
    assert pair.lood(XS) == pytest.approx(expected, rel=1e-9)


def test_renyi_tends_to_kl():
    rng, X, Y, XS, YS = _problem(7, s=1)
    pair = GPPosterior(RBF(1.0), X, Y, 0.5).add(XS, YS)
    Q = rng.normal(size=(2, 4))
    assert pair.lood(Q, "renyi", 1.0 + 1e-6) == pytest.approx(pair.lood(Q, "kl"), rel=1e-4)
    assert pair.lood(Q, "renyi_reverse", 1.0 + 1e-6) == pytest.approx(pair.lood(Q, "kl_reverse"), rel=1e-4)
    assert pair.lood(Q, "renyi", 3.0) >= pair.lood(Q, "renyi", 1.5)  # nondecreasing in the order


# -- laws (hypothesis) --------------------------------------------------------------------------

@st.composite
def problems(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    n, d = draw(st.integers(0, 8)), draw(st.integers(1, 3))
    kernel = draw(st.sampled_from([RBF(1.0), RBF(0.2), NNGP("relu", 2, b_std=0.1), NNGP("gelu", 3, b_std=0.1),
                                   NNGP("erf", 1)]))
    noise = draw(st.sampled_from([1e-3, 0.05, 1.0]))
    scale = draw(st.sampled_from([0.5, 2.0]))
    X = scale * rng.normal(size=(n, d))
    Y = rng.uniform(-1, 1, size=(n, 2))
    XS = scale * rng.normal(size=(1, d))
    YS = rng.uniform(-1, 1, size=(1, 2))
    q = draw(st.integers(1, 4))
    Q = scale * rng.normal(size=(q, d))
    return GPPosterior(kernel, X, Y, noise).add(XS, YS), Q


@given(problems())
def test_forward_kl_dominates_reverse_for_single_queries(prob):
    """sec. 1.3: Sigma_D' <= Sigma_D always (Sigma_D' = Sigma_D - c^2/beta), hence KL(D||D') >= KL(D'||D)."""
    pair, Q = prob
    for i in range(Q.shape[0]):
        p = pair.predictive(Q[i:i + 1])
        assert p.cov_prime[0, 0] <= p.cov[0, 0] + 1e-12
        assert pair.lood(Q[i:i + 1], "kl") >= pair.lood(Q[i:i + 1], "kl_reverse") - 1e-12


@given(problems())
def test_lood_at_differing_point_is_the_maximum(prob):
    """sec. 1.6 (derived): f(S) is a sufficient statistic of the pair, so no query set beats S and
    adding queries to S changes nothing (KL both ways and Rényi)."""
    pair, Q = prob
    joint = np.vstack([pair.XS, Q])
    for div, alpha in [("kl", None), ("kl_reverse", None), ("renyi_reverse", 2.0)]:
        at_S = pair.at_differing(div, alpha)
        assert pair.lood(Q, div, alpha) <= at_S * (1 + 1e-7) + 1e-9
        assert pair.lood(joint, div, alpha) == pytest.approx(at_S, rel=1e-5, abs=1e-8)


def test_single_query_divergence_vectorised_matches_predictive():
    rng, X, Y, XS, YS = _problem(8, s=1)
    pair = GPPosterior(RBF(1.0), X, Y, 0.1).add(XS, YS)
    Q = rng.normal(size=(1, 4))
    p = pair.predictive(Q)
    for div, alpha in ALL:
        val = single_query_divergence(div, p.cov[0, 0], p.cov_prime[0, 0], p.mean[0] - p.mean_prime[0], alpha)
        assert float(val) == pytest.approx(pair.lood(Q, div, alpha), rel=1e-10)


# -- bad input ------------------------------------------------------------------------------------

def test_bad_inputs_are_clear_errors():
    rng, X, Y, XS, YS = _problem(9)
    P = GPPosterior(RBF(1.0), X, Y, 0.1)
    pair = P.add(XS, YS)
    with pytest.raises(InvalidParameterError, match="Q must be distinct points"):
        pair.lood(np.vstack([X[:1], X[:1]]))
    with pytest.raises(InvalidParameterError, match="XS must be distinct"):
        P.add(np.vstack([XS[:1], XS[:1]]), np.vstack([YS[:1], YS[:1]]))
    with pytest.raises(InvalidParameterError, match="dimension 4"):
        pair.lood(np.ones((1, 3)))
    with pytest.raises(InvalidParameterError, match="YS"):
        P.add(XS, YS[:, :2])
    with pytest.raises(InvalidParameterError, match="Y must be .*rows"):
        GPPosterior(RBF(1.0), X, Y[:-1], 0.1)
    with pytest.raises(InvalidParameterError, match="X must be free of NaN"):
        GPPosterior(RBF(1.0), np.where(X > 2, np.nan, X), Y, 0.1)
    with pytest.raises(InvalidParameterError, match="noise"):
        GPPosterior(RBF(1.0), X, Y, 0.0)
    with pytest.raises(InvalidParameterError, match="divergence"):
        pair.lood(XS, "hellinger")
    with pytest.raises(InvalidParameterError, match="alpha"):
        pair.lood(XS, "renyi")
    with pytest.raises(InvalidParameterError, match="alpha"):
        pair.lood(XS, "renyi", 0.5)
    with pytest.raises(InvalidParameterError, match="indices"):
        P.leave_out([0, 0])
    with pytest.raises(InvalidParameterError, match="indices"):
        P.leave_out([X.shape[0]])
    with pytest.raises(InvalidParameterError, match="labels"):
        centred_one_hot(np.array([0.5, 1.0]))
