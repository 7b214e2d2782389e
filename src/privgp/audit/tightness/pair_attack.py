"""The most powerful test between the releases of two fixed neighbouring datasets, and the empirical
epsilon lower bound it certifies.

For neighbours D, D' the released values on a finite test set are Gaussian, N(m1, S1) and N(m2, S2)
(:func:`privgp.audit.tightness.neighbours.neighbour_posteriors`), and L paths are L independent draws. By
Neyman-Pearson the likelihood-ratio test "sum_l log p1(f_l) / p2(f_l) >= t" is the most powerful test
between them, so if the release is (epsilon, delta)-DP every threshold satisfies
TPR <= e^epsilon FPR + delta (and the complementary inequality): the Monte-Carlo rates at a threshold
give an epsilon LOWER bound with confidence (Clopper-Pearson, :func:`~.metrics.epsilon_lower_bound`),
the threshold chosen on an independent selection sample. Against the worst pair found by the
adversarial search this is the strongest attack we know on the mechanism itself (no shadow models,
no estimation error in the densities).

Both Gaussians are restricted to their common support (the eigenvectors of S1 + S2 above a relative
1e-10 of the largest) and the test sees the values plus independent N(0, j I) noise, j = 1e-9 of the
largest variance (keeps both covariances positive definite). Both are post-processing of the release
that any attacker could apply, so the bound stays valid.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import validation as v
from ...errors import InvalidParameterError
from ..membership.metrics import EpsilonLowerBound, epsilon_lower_bound, select_threshold

SUPPORT_RTOL = 1e-10
NOISE_RTOL = 1e-9


@dataclass(frozen=True)
class PairAttackResult:
    lower: EpsilonLowerBound
    L: int
    n_select: int
    n_eval: int
    dims: int                 # dimension of the common support the test used


def _gaussian(mean, cov, U):
    m = U.T @ mean
    S = U.T @ cov @ U
    S = 0.5 * (S + S.T)
    Lc = np.linalg.cholesky(S)
    logdet = 2.0 * float(np.sum(np.log(np.diag(Lc))))
    return m, Lc, logdet


def _loglik(z, m, Lc, logdet):
    """log N(z; m, Lc Lc^T) up to the common constant, rows of z."""
    w = np.linalg.solve(Lc, (z - m).T)
    return -0.5 * np.sum(w * w, axis=0) - 0.5 * logdet


def _scores(rng, draw_from, g1, g2, L, size, chunk=20000):
    m, Lc, _ = draw_from
    out = np.zeros(size)
    for lo in range(0, size, chunk):
        k = min(chunk, size - lo)
        for _ in range(L):
            z = m + rng.standard_normal((k, m.size)) @ Lc.T
            out[lo:lo + k] += _loglik(z, *g1) - _loglik(z, *g2)
    return out


def likelihood_ratio_lower_bound(mean1, cov1, mean2, cov2, *, L: int = 1, delta: float, rng: np.random.Generator,
                                 n_select: int = 100_000, n_eval: int = 100_000,
                                 confidence: float = 0.95) -> PairAttackResult:
    """Empirical epsilon lower bound of the likelihood-ratio test between L draws of N(mean1, cov1) (the
    "member" hypothesis) and of N(mean2, cov2): threshold chosen on ``n_select`` draws per hypothesis,
    rates measured on ``n_eval`` fresh ones."""
    m1 = v.finite_array("mean1", mean1, ndim=1)
    m2 = v.finite_array("mean2", mean2, ndim=1)
    S1 = v.finite_array("cov1", cov1, ndim=2)
    S2 = v.finite_array("cov2", cov2, ndim=2)
    if not (m1.shape == m2.shape and S1.shape == S2.shape == (m1.size, m1.size)):
        raise InvalidParameterError("mean/cov", "two Gaussians of one dimension", (m1.shape, S1.shape, m2.shape))
    L = v.integer("L", L, minimum=1)
    delta = v.open_interval("delta", delta, 0.0, 1.0)
    rng = v.generator("rng", rng)
    n_select = v.integer("n_select", n_select, minimum=100)
    n_eval = v.integer("n_eval", n_eval, minimum=100)
    scale = max(float(np.max(np.diag(S1))), float(np.max(np.diag(S2))))
    w, Q = np.linalg.eigh((S1 + S2) / scale)
    U = Q[:, w > SUPPORT_RTOL * w[-1]]
    noise = NOISE_RTOL * scale * np.eye(m1.size)
    g1, g2 = _gaussian(m1, S1 + noise, U), _gaussian(m2, S2 + noise, U)
    sel_in, sel_out = (_scores(rng, g, g1, g2, L, n_select) for g in (g1, g2))
    thr = select_threshold(sel_in, sel_out, delta, confidence)
    ev_in, ev_out = (_scores(rng, g, g1, g2, L, n_eval) for g in (g1, g2))
    lower = epsilon_lower_bound(ev_in, ev_out, threshold=thr, delta=delta, confidence=confidence)
    if not math.isfinite(lower.epsilon):  # pragma: no cover - Clopper-Pearson keeps it finite
        raise InvalidParameterError("samples", "a finite lower bound", lower.epsilon)
    return PairAttackResult(lower=lower, L=L, n_select=n_select, n_eval=n_eval, dims=int(U.shape[1]))
