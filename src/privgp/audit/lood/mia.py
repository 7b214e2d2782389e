"""LOOD-based membership inference (seed 003, sec. 2-3, Figs 1a and 6).

The leave-one-out membership inference attack sees a prediction drawn from f_D(Q) (S out of the
training set) or f_D'(Q) (S in) and uses the Neyman-Pearson likelihood-ratio test

    T(x) = log p_D'(x) - log p_D(x)        (large = "member"),

whose ROC is the best any attack can reach on this pair; its AUC is the attack success the paper
correlates with KL LOOD. Two ways to compute it:

* :func:`lr_auc_single` -- exact for one query with C outputs (shared variance per output):
  T is a quadratic in x, so T = a |x - m*|^2 + const and |x - m*|^2 / v_h is noncentral chi^2_C
  under each hypothesis; AUC = int_0^1 F_in(F_out^-1(u)) du by Gauss-Legendre quadrature
  (equal variances: AUC = Phi(sqrt(KL)), docs/notes/seed003_lood.md, sec. 2.5).
* :func:`lr_auc_monte_carlo` -- any query set, as in the reference code (``plot_dist_AUC``):
  n samples from each Gaussian, scored by T, AUC by scikit-learn's ``roc_auc_score``.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.stats import ncx2, norm, pearsonr, spearmanr

from ... import validation as v
from ...errors import InvalidParameterError
from .models import Predictive

_U, _UW = np.polynomial.legendre.leggauss(400)
_U = 0.5 * (_U + 1.0)
_UW = 0.5 * _UW


def lr_auc_single(var, var_prime, dmu) -> float:
    """Exact AUC of the likelihood-ratio test between N(mu_D, var I_C) (out) and N(mu_D', var' I_C)
    (in) for one query; ``dmu`` = mu_D' - mu_D (C,). The roles are symmetric in the formula: any
    pair of variances > 0 is accepted."""
    v0 = v.positive("var", var)
    v1 = v.positive("var_prime", var_prime)
    d = v.finite_array("dmu", dmu, ndim=(0, 1)).reshape(-1)
    C = d.size
    if abs(v0 - v1) <= 1e-9 * max(v0, v1):
        return float(norm.cdf(np.linalg.norm(d) / math.sqrt(v0 + v1)))
    a = 0.5 / v0 - 0.5 / v1
    # T = a |x - m*|^2 + const with m* = (mu/(2 v0) - mu'/(2 v1)) / a; put mu = 0, mu' = d
    m_star = -(d / (2.0 * v1)) / a
    lam0 = float(np.sum(m_star ** 2)) / v0
    lam1 = float(np.sum((d - m_star) ** 2)) / v1
    # W_h = |X_h - m*|^2 = v_h * ncx2(C, lam_h); T larger <=> W smaller when a < 0, larger when a > 0
    w = v0 * ncx2.ppf(_U, C, lam0)          # quantiles of W under "out"
    F1 = ncx2.cdf(w / v1, C, lam1)          # P(W_in <= w)
    p_in_beyond = F1 if a < 0 else 1.0 - F1
    return float(np.clip(np.sum(_UW * p_in_beyond), 0.0, 1.0))


def lr_auc_monte_carlo(pred: Predictive, *, n_samples: int = 5000, rng: np.random.Generator) -> float:
    """AUC of the likelihood-ratio test from ``n_samples`` draws of each prediction distribution
    (all queries and outputs jointly), as in the reference code; Monte Carlo error ~ 0.5/sqrt(n)."""
    from sklearn.metrics import roc_auc_score

    rng = v.generator("rng", rng)
    n = v.integer("n_samples", n_samples, minimum=2)
    try:
        c0, c1 = cho_factor(pred.cov, lower=True), cho_factor(pred.cov_prime, lower=True)
    except np.linalg.LinAlgError:
        raise InvalidParameterError("Q", "distinct, not nearly repeated query points",
                                    "a singular predictive covariance") from None
    q, C = pred.mean.shape

    def draw(mean, ch):
        z = rng.standard_normal((n, q, C))
        return mean[None] + np.einsum("ij,njc->nic", np.tril(ch[0]), z)

    def logpdf(x, mean, ch):
        r = x - mean[None]
        sol = cho_solve(ch, r.transpose(1, 0, 2).reshape(q, -1)).reshape(q, n, C).transpose(1, 0, 2)
        return -0.5 * np.sum(r * sol, axis=(1, 2)) - C * float(np.sum(np.log(np.diag(ch[0]))))

    x_in, x_out = draw(pred.mean_prime, c1), draw(pred.mean, c0)
    score = lambda x: logpdf(x, pred.mean_prime, c1) - logpdf(x, pred.mean, c0)  # noqa: E731
    s = np.concatenate([score(x_in), score(x_out)])
    labels = np.concatenate([np.ones(n), np.zeros(n)])
    return float(roc_auc_score(labels, s))


def correlation(x, y) -> dict:
    """Pearson and Spearman correlation (with p-values) between LOOD values and attack AUCs."""
    x = v.finite_array("x", x, ndim=1)
    y = v.finite_array("y", y, ndim=1)
    if x.size != y.size or x.size < 3:
        raise InvalidParameterError("x/y", "arrays of equal length >= 3", (x.size, y.size))
    p, s = pearsonr(x, y), spearmanr(x, y)
    return {"pearson_r": float(p.statistic), "pearson_p": float(p.pvalue),
            "spearman_rho": float(s.statistic), "spearman_p": float(s.pvalue), "n": int(x.size)}


def half_split_gaussian_lr_auc(scores_in, scores_out, *, splits: int = 50, rng: np.random.Generator) -> tuple[float, float]:
    """MIA AUC from the outputs of retrained models (the reference code's ``compute_auc_and_diff``):
    ``scores_in`` (K_in, C) outputs on S of models trained with S, ``scores_out`` (K_out, C) without.
    In each of ``splits`` random half-splits, Gaussians (mean, full covariance) fitted on one half of
    each side score the other halves by their log-likelihood ratio; returns (mean, std) of the AUCs."""
    from sklearn.metrics import roc_auc_score

    rng = v.generator("rng", rng)
    a = v.finite_array("scores_in", scores_in, ndim=2)
    b = v.finite_array("scores_out", scores_out, ndim=2)
    if a.shape[1] != b.shape[1] or min(a.shape[0], b.shape[0]) < 4:
        raise InvalidParameterError("scores_in/scores_out", "(K, C) arrays with the same C and K >= 4",
                                    (a.shape, b.shape))
    splits = v.integer("splits", splits, minimum=1)
    C = a.shape[1]

    def fit(x):
        cov = np.atleast_2d(np.cov(x, rowvar=False)) + 1e-9 * np.eye(C)
        return x.mean(0), cho_factor(cov, lower=True)

    def loglik(x, m, ch):
        r = x - m
        return -0.5 * np.sum(r * cho_solve(ch, r.T).T, axis=1) - float(np.sum(np.log(np.diag(ch[0]))))

    aucs = []
    for _ in range(splits):
        pa, pb = rng.permutation(a.shape[0]), rng.permutation(b.shape[0])
        ra, ea = a[pa[: a.shape[0] // 2]], a[pa[a.shape[0] // 2:]]
        rb, eb = b[pb[: b.shape[0] // 2]], b[pb[b.shape[0] // 2:]]
        (mi, ci), (mo, co) = fit(ra), fit(rb)
        s = np.concatenate([loglik(ea, mi, ci) - loglik(ea, mo, co), loglik(eb, mi, ci) - loglik(eb, mo, co)])
        aucs.append(roc_auc_score(np.concatenate([np.ones(len(ea)), np.zeros(len(eb))]), s))
    return float(np.mean(aucs)), float(np.std(aucs))
