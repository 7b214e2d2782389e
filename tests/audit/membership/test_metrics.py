"""ROC metrics, Clopper-Pearson bounds and the empirical epsilon lower bound (privgp.audit.membership.metrics)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from privgp.audit.membership.metrics import clopper_pearson_lower, clopper_pearson_upper, epsilon_lower_bound, roc_metrics, select_threshold
from privgp.errors import InvalidParameterError


def naive_tpr_at_fpr(s_in, s_out, target):
    """Definition by enumeration: the best TPR of a test 'S >= t' whose FPR is <= target."""
    best = 0.0
    for t in np.concatenate([np.unique(np.concatenate([s_in, s_out])), [np.inf]]):
        fpr, tpr = np.mean(s_out >= t), np.mean(s_in >= t)
        if fpr <= target:
            best = max(best, tpr)
    return best


def test_roc_metrics_match_enumeration_and_mann_whitney():
    rng = np.random.default_rng(3)
    s_in = np.round(rng.normal(0.7, 1.0, 300), 1)   # rounding makes ties
    s_out = np.round(rng.normal(0.0, 1.0, 400), 1)
    m = roc_metrics(s_in, s_out, (0.01, 0.05, 0.1, 0.3))
    u = stats.mannwhitneyu(s_in, s_out, alternative="two-sided").statistic
    assert m.auc == pytest.approx(u / (s_in.size * s_out.size), abs=1e-12)
    for a, t in zip(m.fpr_targets, m.tpr_at_fpr):
        assert t == pytest.approx(naive_tpr_at_fpr(s_in, s_out, a), abs=1e-12)
    assert m.excess_tpr == pytest.approx(tuple(t - a for t, a in zip(m.tpr_at_fpr, m.fpr_targets)))
    d = m.to_dict()
    assert set(d["tpr_at_fpr"]) == {"0.01", "0.05", "0.1", "0.3"}


@pytest.mark.parametrize("seed,decimals", [(0, 1), (1, 3), (2, 12)])
def test_roc_curve_and_auc_equal_scikit_learn(seed, decimals):
    from sklearn.metrics import roc_auc_score, roc_curve

    rng = np.random.default_rng(seed)
    s_in = np.round(rng.normal(0.5, 1.0, 257), decimals)
    s_out = np.round(rng.normal(0.0, 1.2, 311), decimals)
    labels = np.concatenate([np.ones(s_in.size), np.zeros(s_out.size)])
    fpr, tpr, _ = roc_curve(labels, np.concatenate([s_in, s_out]), drop_intermediate=False)
    m = roc_metrics(s_in, s_out)
    assert np.array_equal(m.fpr, fpr) and np.array_equal(m.tpr, tpr)
    assert m.auc == pytest.approx(roc_auc_score(labels, np.concatenate([s_in, s_out])), abs=1e-12)


@pytest.mark.parametrize("k,n", [(0, 50), (1, 50), (17, 50), (49, 50), (50, 50), (123, 10000)])
def test_clopper_pearson_matches_scipy_binomtest(k, n):
    # one-sided bounds at level a each == the exact two-sided interval at confidence 1 - 2a
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    assert float(clopper_pearson_lower(k, n, 0.05)) == pytest.approx(ci.low, abs=1e-12)
    assert float(clopper_pearson_upper(k, n, 0.05)) == pytest.approx(ci.high, abs=1e-12)


def gaussian_dp_epsilon(mu, delta):
    """Exact epsilon(delta) of mu-Gaussian DP: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    f = lambda e: stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2) - delta  # noqa: E731
    return optimize.brentq(f, 0.0, 50.0, xtol=1e-12)


def test_lower_bound_is_valid_and_informative_for_a_known_gaussian_mechanism():
    # Scores of a mu-GDP mechanism: S ~ N(mu, 1) under "in", N(0, 1) under "out"; every test on S obeys the
    # exact (epsilon(delta), delta) curve. A valid 95% lower bound may exceed epsilon(delta) in <= 5% of trials.
    mu, delta, trials, n = 1.0, 0.01, 100, 2000
    eps_true = gaussian_dp_epsilon(mu, delta)
    rng = np.random.default_rng(11)
    bounds = []
    for _ in range(trials):
        sel_in, sel_out = rng.normal(mu, 1, n), rng.normal(0, 1, n)
        ev_in, ev_out = rng.normal(mu, 1, n), rng.normal(0, 1, n)
        thr = select_threshold(sel_in, sel_out, delta, 0.95)
        lb = epsilon_lower_bound(ev_in, ev_out, threshold=thr, delta=delta, confidence=0.95)
        bounds.append(lb.epsilon)
    bounds = np.array(bounds)
    # P(Binomial(100, 0.05) > 12) < 0.01: a sound bound essentially never gets here
    assert np.sum(bounds > eps_true) <= 12
    assert np.mean(bounds) > 0.3 * eps_true      # and it is not vacuous


def test_both_forms_of_the_bound_are_computed_from_the_conservative_rates():
    s_in, s_out = np.r_[np.ones(900), np.zeros(100)], np.r_[np.ones(50), np.zeros(950)]
    lb = epsilon_lower_bound(s_in, s_out, threshold=0.5, delta=0.01, confidence=0.9)
    tl = float(clopper_pearson_lower(900, 1000, 0.05))
    fh = float(clopper_pearson_upper(50, 1000, 0.05))
    expect = max(math.log((tl - 0.01) / fh), math.log((1 - fh - 0.01) / (1 - tl)))
    assert lb.epsilon == pytest.approx(expect, rel=1e-12)
    assert lb.significant and lb.tpr_low < 0.9 and lb.fpr_high > 0.05


def test_no_signal_gives_zero_labelled_as_not_significant():
    rng = np.random.default_rng(5)
    s_in, s_out = rng.normal(size=500), rng.normal(size=500)
    thr = select_threshold(rng.normal(size=500), rng.normal(size=500), 0.05, 0.95)
    lb = epsilon_lower_bound(s_in, s_out, threshold=thr, delta=0.05)
    assert lb.epsilon == 0.0 and not lb.significant
    assert "LOWER bound" in lb.to_dict()["meaning"]


def test_bad_input():
    with pytest.raises(InvalidParameterError, match="fpr_targets"):
        roc_metrics([1.0, 2.0], [0.0], (0.0, 0.1))
    with pytest.raises(InvalidParameterError, match="fpr_targets"):
        roc_metrics([1.0, 2.0], [0.0], (1.2,))
    with pytest.raises(InvalidParameterError, match="scores_in"):
        roc_metrics([np.nan], [0.0])
    with pytest.raises(InvalidParameterError, match="delta"):
        epsilon_lower_bound([1.0], [0.0], threshold=0.5, delta=0.0)
    with pytest.raises(InvalidParameterError, match="confidence"):
        epsilon_lower_bound([1.0], [0.0], threshold=0.5, delta=0.1, confidence=1.0)


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(n=st.integers(1, 5000), frac=st.floats(0.0, 1.0), level=st.floats(0.001, 0.2))
def test_clopper_pearson_brackets_the_estimate_and_widens_with_confidence(n, frac, level):
    k = int(round(frac * n))
    lo, hi = float(clopper_pearson_lower(k, n, level)), float(clopper_pearson_upper(k, n, level))
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    assert float(clopper_pearson_lower(k, n, level / 2)) <= lo + 1e-12
    assert float(clopper_pearson_upper(k, n, level / 2)) >= hi - 1e-12


@given(k_in=st.integers(0, 400), k_out=st.integers(0, 400), d1=st.floats(1e-4, 0.5), d2=st.floats(1e-4, 0.5))
def test_lower_bound_does_not_grow_with_delta_or_confidence(k_in, k_out, d1, d2):
    s_in = np.r_[np.ones(k_in), np.zeros(400 - k_in)]
    s_out = np.r_[np.ones(k_out), np.zeros(400 - k_out)]
    lo_d, hi_d = sorted((d1, d2))
    a = epsilon_lower_bound(s_in, s_out, threshold=0.5, delta=lo_d, confidence=0.9).epsilon
    b = epsilon_lower_bound(s_in, s_out, threshold=0.5, delta=hi_d, confidence=0.9).epsilon
    c = epsilon_lower_bound(s_in, s_out, threshold=0.5, delta=lo_d, confidence=0.99).epsilon
    assert b <= a + 1e-12 and c <= a + 1e-12 and min(a, b, c) >= 0.0
