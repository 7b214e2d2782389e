"""Closed-form divergences between Gaussian distributions (the one home of these formulas).

Seed 000, App. A, eq. (12): for Gaussians N(m1, S1), N(m2, S2) and alpha > 1,

    D_alpha = alpha/2 (m1 - m2)^T S_alpha^+ (m1 - m2)
              - 1/(2(alpha-1)) log[ pdet S_alpha / (pdet S1^(1-alpha) pdet S2^alpha) ],
    S_alpha = alpha S2 + (1 - alpha) S1,

on the common support (Moore-Penrose pseudo-inverse, pseudo-determinants); +inf when the supports
differ or S_alpha is not positive definite on the support. The first term is the *mean part*, the
second the *covariance part* (both >= 0). In the basis of generalised eigenvectors (S1 w = lam S2 w,
w^T S2 w = 1) this is

    cov part  = sum_j [ -1/2 log lam_j - log(alpha - (alpha-1) lam_j) / (2(alpha-1)) ]
    mean part = alpha/2 sum_j (w_j^T (m1 - m2))^2 / (alpha - (alpha-1) lam_j),

the form used in the proof of Prop. 1 (the eigenvalues of R = S2^-1/2 S1 S2^-1/2).

Numerics. Covariances are first scaled by their largest diagonal entry (the divergence is invariant
under a common scaling). The support is spanned by the eigenvectors of S1 + S2 with eigenvalue above
``rtol`` times the largest; directions below it are dropped. Dropping directions is a linear map of
both Gaussians, so by the data-processing inequality the value computed on the kept directions never
exceeds the exact divergence: near-singular directions can only make it smaller, never spuriously
larger. +inf is returned only for clear evidence: a mean difference in directions where S1 + S2 is
zero up to round-off (eigenvalue below 1e-13 of the largest), or one
covariance singular where the other is not / S_alpha not positive definite on the strongly supported
directions (eigenvalue of S1 + S2 above 1e-6 of the largest); when such a defect shows only in
directions barely above ``rtol``, those are projected away instead.

Equal-covariance Gaussians (seed 002): :func:`gaussian_shift_mu`, the mu of their exact GDP profile.

Univariate closed forms (vectorised) for the other seeds: :func:`renyi_gaussian_1d`,
:func:`kl_gaussian_1d`; the multivariate KL :func:`kl_gaussians`.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike

from .. import validation as v
from ..errors import InvalidParameterError, NumericalError

RTOL = 1e-10           # support: eigenvalues of (S1 + S2) / scale above RTOL * max (smaller ones are projected away)
NULL_RTOL = 1e-13      # eigenvalues below NULL_RTOL * max are zero up to round-off
STRICT_RTOL = 1e-6     # fallback support: only strongly supported directions
SINGULAR = 1e-13       # a covariance with an eigenvalue below this on the kept support is singular there
MEAN_OFF_SUPPORT = 1e-7  # relative size of a mean difference outside the support that means "different supports"


def _check_alpha(alpha: float) -> float:
    return v.greater_than("alpha", alpha, 1.0)


def renyi_divergence_parts(alpha: float, mean1: ArrayLike, cov1: ArrayLike, mean2: ArrayLike, cov2: ArrayLike, *,
                           rtol: float = RTOL) -> tuple[float, float, float]:
    """(total, mean part, covariance part) of D_alpha(N(mean1, cov1) || N(mean2, cov2)), eq. (12)."""
    alpha = _check_alpha(alpha)
    m1 = v.finite_array("mean1", mean1, ndim=1, allow_empty=True)
    m2 = v.finite_array("mean2", mean2, ndim=1, allow_empty=True)
    S1 = v.finite_array("cov1", cov1, ndim=2, allow_empty=True)
    S2 = v.finite_array("cov2", cov2, ndim=2, allow_empty=True)
    m = m1.shape[0]
    if m2.shape != (m,) or S1.shape != (m, m) or S2.shape != (m, m):
        raise InvalidParameterError("mean/cov", f"means of shape ({m},) and covariances of shape ({m}, {m})",
                                    (m1.shape, S1.shape, m2.shape, S2.shape))
    if m == 0:
        return 0.0, 0.0, 0.0
    S1 = 0.5 * (S1 + S1.T)
    S2 = 0.5 * (S2 + S2.T)
    scale = max(float(np.max(np.diag(S1))), float(np.max(np.diag(S2))), 0.0)
    d = m1 - m2
    if scale <= 0.0:  # both point masses
        return (0.0, 0.0, 0.0) if np.all(d == 0) else (math.inf, math.inf, 0.0)
    A, B, d = S1 / scale, S2 / scale, d / math.sqrt(scale)
    w, Q = np.linalg.eigh(A + B)
    null = Q[:, w <= NULL_RTOL * w[-1]]  # directions in which neither distribution varies (round-off)
    if np.linalg.norm(null.T @ d) > MEAN_OFF_SUPPORT * (1.0 + np.linalg.norm(d)):
        return math.inf, math.inf, 0.0  # the means differ where neither distribution varies
    parts = _parts_on(alpha, A, B, d, Q[:, w > rtol * w[-1]])
    if parts is None:
        # Either a genuine difference (supports differ, or S_alpha is not positive definite) or round-off
        # in directions that are barely above the support threshold. Projecting those away is safe (a
        # linear map: the value can only decrease); if the difference persists on the strongly supported
        # directions it is genuine.
        parts = _parts_on(alpha, A, B, d, Q[:, w > STRICT_RTOL * w[-1]])
    return (math.inf, math.inf, math.inf) if parts is None else parts


def _parts_on(alpha: float, A: np.ndarray, B: np.ndarray, d: np.ndarray,
              U: np.ndarray) -> tuple[float, float, float] | None:
    """Divergence parts of the Gaussians projected on the columns of U; None when one projected
    covariance is singular or S_alpha is not positive definite there."""
    if U.shape[1] == 0:
        return 0.0, 0.0, 0.0
    Ak, Bk, dk = U.T @ A @ U, U.T @ B @ U, U.T @ d
    Ak, Bk = 0.5 * (Ak + Ak.T), 0.5 * (Bk + Bk.T)
    if np.linalg.eigvalsh(Ak)[0] < SINGULAR or np.linalg.eigvalsh(Bk)[0] < SINGULAR:
        return None
    lam, W = scipy.linalg.eigh(Ak, Bk)
    lam = np.maximum(lam, 0.0)
    am1 = alpha - 1.0
    k = alpha - am1 * lam  # eigenvalues of S_alpha in the S2-orthonormal basis
    if np.any(k <= 0.0):
        return None
    cov_part = float(np.sum(-0.5 * np.log1p(lam - 1.0) - np.log1p(-am1 * (lam - 1.0)) / (2.0 * am1)))
    proj = W.T @ dk
    mean_part = float(0.5 * alpha * np.sum(proj * proj / k))
    cov_part = max(cov_part, 0.0)  # >= 0 exactly (each summand is >= 0); clears round-off
    return mean_part + cov_part, mean_part, cov_part


#: digits of the audits' exact re-evaluation (:func:`renyi_parts_exact`)
EXACT_DPS = 60


def mp_matrix(x: Any) -> Any:
    """``x`` as an mpmath matrix (a vector as a column; an mpmath matrix as it is), exactly: each float64 entry is a
    binary fraction mpmath holds without rounding."""
    import mpmath

    if isinstance(x, mpmath.matrix):
        return x
    return mpmath.matrix(np.atleast_1d(np.asarray(x, dtype=float)).tolist())


def renyi_parts_exact(alpha: float, mean1: Any, cov1: Any, mean2: Any, cov2: Any) -> tuple[float, float, float]:
    """(total, mean part, covariance part) of eq. (12) for positive definite covariances, evaluated in
    :data:`EXACT_DPS`-digit arithmetic (mpmath) on the inputs as given (floats, or mpmath matrices computed in that
    precision), with S_alpha = alpha cov2 + (1 - alpha) cov1:

        mean part = alpha/2 d^T S_alpha^{-1} d,
        cov part  = -(log det S_alpha - (1 - alpha) log det cov1 - alpha log det cov2) / (2 (alpha - 1)),

    +inf where S_alpha is not positive definite; InvalidParameterError where a covariance is not. For the audits'
    verdicts: in float64 the order amplifies the
    round-off of S_alpha (about log10(alpha) digits lost) and of nearly equal covariances, which made a found value
    look above a certified bound (red team 25: 2.25e-16 against 8.17e-17 at alpha = 3.3e7; exactly 6.35e-17)."""
    import mpmath

    alpha = _check_alpha(alpha)
    with mpmath.workdps(EXACT_DPS):
        S1, S2, m1, m2 = (mp_matrix(x) for x in (cov1, cov2, mean1, mean2))
        a = mpmath.mpf(alpha)
        Sa = a * S2 + (1 - a) * S1
        try:
            L1, L2 = mpmath.cholesky(S1), mpmath.cholesky(S2)
        except ValueError:
            raise InvalidParameterError("cov1/cov2", "positive definite (use renyi_divergence_parts for singular "
                                        "ones)", "a singular or indefinite covariance") from None
        try:
            La = mpmath.cholesky(Sa)
        except ValueError:   # S_alpha not positive definite: the order is beyond what the covariances allow
            return math.inf, math.inf, math.inf
        d = m1 - m2
        z = mpmath.lu_solve(La, d)   # L_a z = d (lower triangular): d^T S_a^{-1} d = |z|^2
        mean = a / 2 * sum(zi * zi for zi in z)

        def logdet(L):
            return 2 * sum(mpmath.log(L[i, i]) for i in range(L.rows))

        cov = -(logdet(La) - (1 - a) * logdet(L1) - a * logdet(L2)) / (2 * (a - 1))
        cov = max(cov, mpmath.mpf(0))
        return float(mean + cov), float(mean), float(cov)


def renyi_divergence_gaussians(alpha: float, mean1: ArrayLike, cov1: ArrayLike, mean2: ArrayLike,
                               cov2: ArrayLike) -> float:
    """D_alpha(N(mean1, cov1) || N(mean2, cov2)) of seed 000, eq. (12), with pseudo-inverses and
    pseudo-determinants on the common support; +inf when the supports differ or S_alpha is not
    positive definite on it."""
    return renyi_divergence_parts(alpha, mean1, cov1, mean2, cov2)[0]


def renyi_gaussian_1d(alpha: ArrayLike, m1: ArrayLike, s1: ArrayLike, m2: ArrayLike, s2: ArrayLike) -> np.ndarray:
    """D_alpha(N(m1, s1^2) || N(m2, s2^2)) for univariate Gaussians, vectorised (standard deviations
    s1, s2 > 0; alpha > 1): with s_a^2 = alpha s2^2 + (1 - alpha) s1^2,

        D_alpha = alpha (m1 - m2)^2 / (2 s_a^2) + log(s2 / s1) - log(s_a^2 / s2^2) / (2 (alpha - 1)),

    +inf where s_a^2 <= 0 (the order is beyond what the variance ratio allows)."""
    alpha, m1, s1, m2, s2 = (np.asarray(a, dtype=float) for a in (alpha, m1, s1, m2, s2))
    if np.any(~(alpha > 1.0)):
        raise InvalidParameterError("alpha", "> 1 (Rényi order)", alpha)
    if np.any(~(s1 > 0)) or np.any(~(s2 > 0)):
        raise InvalidParameterError("s1/s2", "standard deviations > 0", (s1, s2))
    am1 = alpha - 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rho = (s1 / s2) ** 2                       # variance ratio
        k = 1.0 - am1 * (rho - 1.0)                 # s_a^2 / s2^2
        out = 0.5 * alpha * (m1 - m2) ** 2 / (k * s2 * s2) - 0.5 * np.log(rho) - np.log(k) / (2.0 * am1)
        out = np.where(k > 0.0, out, np.inf)
    if np.isnan(out).any():
        raise NumericalError("renyi_gaussian_1d: NaN from valid inputs")
    return np.maximum(out, 0.0)


def kl_gaussian_1d(m1: ArrayLike, s1: ArrayLike, m2: ArrayLike, s2: ArrayLike) -> np.ndarray:
    """KL(N(m1, s1^2) || N(m2, s2^2)) = log(s2/s1) + (s1^2 + (m1 - m2)^2) / (2 s2^2) - 1/2, vectorised."""
    m1, s1, m2, s2 = (np.asarray(a, dtype=float) for a in (m1, s1, m2, s2))
    if np.any(~(s1 > 0)) or np.any(~(s2 > 0)):
        raise InvalidParameterError("s1/s2", "standard deviations > 0", (s1, s2))
    rho = (s1 / s2) ** 2
    # log(1/rho) + rho - 1 computed as rho - 1 - log1p(rho - 1): no cancellation near rho = 1
    out = 0.5 * ((rho - 1.0) - np.log1p(rho - 1.0)) + 0.5 * (m1 - m2) ** 2 / (s2 * s2)
    return np.maximum(out, 0.0)


def kl_gaussians(mean1: ArrayLike, cov1: ArrayLike, mean2: ArrayLike, cov2: ArrayLike) -> float:
    """KL(N(mean1, cov1) || N(mean2, cov2)) for positive definite covariances:
    1/2 [tr(S2^-1 S1) + (m2 - m1)^T S2^-1 (m2 - m1) - k + log det S2 - log det S1]."""
    m1 = v.finite_array("mean1", mean1, ndim=1)
    m2 = v.finite_array("mean2", mean2, ndim=1)
    S1 = v.finite_array("cov1", cov1, ndim=2)
    S2 = v.finite_array("cov2", cov2, ndim=2)
    k = m1.shape[0]
    if m2.shape != (k,) or S1.shape != (k, k) or S2.shape != (k, k):
        raise InvalidParameterError("mean/cov", f"means of shape ({k},) and covariances of shape ({k}, {k})",
                                    (m1.shape, S1.shape, m2.shape, S2.shape))
    try:
        L1 = np.linalg.cholesky(0.5 * (S1 + S1.T))
        L2 = np.linalg.cholesky(0.5 * (S2 + S2.T))
    except np.linalg.LinAlgError:
        raise InvalidParameterError("cov1/cov2", "positive definite", "a singular or indefinite covariance") from None
    A = scipy.linalg.solve_triangular(L2, L1, lower=True)
    b = scipy.linalg.solve_triangular(L2, m2 - m1, lower=True)
    logdet = 2.0 * (np.sum(np.log(np.diag(L2))) - np.sum(np.log(np.diag(L1))))
    out = 0.5 * (float(np.sum(A * A)) + float(b @ b) - k + logdet)
    return max(out, 0.0)


def gaussian_shift_mu(mean1: ArrayLike, mean2: ArrayLike, cov: ArrayLike) -> float:
    """mu = ||S^{-1/2} (m1 - m2)||_2 for two Gaussians N(m1, S), N(m2, S) with one positive definite
    covariance S. Their privacy-loss distribution is exactly that of the mu-GDP Gaussian mechanism
    (the log-likelihood ratio is N(mu^2/2, mu^2) under N(m1, S)), so their tight (epsilon, delta)
    profile is :func:`privgp.accounting.gaussian.gdp_delta` (Balle & Wang 2018, Thm 8; Dong, Roth &
    Su 2022, Cor. 2.13). Computed with a Cholesky factor of S (refuses a singular S)."""
    m1 = v.finite_array("mean1", mean1, ndim=1)
    m2 = v.finite_array("mean2", mean2, ndim=1)
    S = v.finite_array("cov", cov, ndim=2)
    k = m1.shape[0]
    if m2.shape != (k,) or S.shape != (k, k):
        raise InvalidParameterError("mean/cov", f"means of shape ({k},) and a covariance of shape ({k}, {k})",
                                    (m1.shape, m2.shape, S.shape))
    try:
        L = np.linalg.cholesky(0.5 * (S + S.T))
    except np.linalg.LinAlgError:
        raise InvalidParameterError("cov", "positive definite", "a singular or indefinite covariance") from None
    b = scipy.linalg.solve_triangular(L, m1 - m2, lower=True)
    return float(np.sqrt(b @ b))
def renyi_gaussians_batched(alpha: float, mean1: ArrayLike, cov1: ArrayLike, mean2: ArrayLike,
                            cov2: ArrayLike) -> np.ndarray:
    """D_alpha(N(mean1, cov1) || N(mean2, cov2)) for stacks of small Gaussians, eq. (12) with ordinary
    inverses and determinants: means (..., k), covariances (..., k, k), each positive definite (use
    :func:`renyi_divergence_gaussians` for singular ones); alpha > 1. +inf where
    S_alpha = alpha cov2 + (1 - alpha) cov1 is not positive definite. Vectorised over the leading axes."""
    alpha = _check_alpha(alpha)
    m1, m2 = np.asarray(mean1, float), np.asarray(mean2, float)
    S1, S2 = np.asarray(cov1, float), np.asarray(cov2, float)
    if S1.shape[-1] != S1.shape[-2] or S1.shape != S2.shape or m1.shape != S1.shape[:-1] or m2.shape != m1.shape:
        raise InvalidParameterError("mean/cov", "means (..., k) and covariances (..., k, k) of matching shapes",
                                    (m1.shape, S1.shape, m2.shape, S2.shape))
    for name, S in (("cov1", S1), ("cov2", S2)):
        if np.any(np.linalg.eigvalsh(S)[..., 0] <= 0):
            raise InvalidParameterError(name, "positive definite (use renyi_divergence_gaussians for singular ones)",
                                        "a singular or indefinite covariance")
    Sa = alpha * S2 + (1.0 - alpha) * S1
    lam_a = np.linalg.eigvalsh(Sa)[..., 0]
    ok = lam_a > 0
    Sa_safe = np.where(ok[..., None, None], Sa, np.eye(S1.shape[-1]))
    d = m1 - m2
    quad = np.einsum("...i,...i->...", d, np.linalg.solve(Sa_safe, d[..., None])[..., 0])
    ld_a, ld_1, ld_2 = (np.linalg.slogdet(S)[1] for S in (Sa_safe, S1, S2))
    out = 0.5 * alpha * quad - (ld_a - (1.0 - alpha) * ld_1 - alpha * ld_2) / (2.0 * (alpha - 1.0))
    out = np.where(ok, np.maximum(out, 0.0), np.inf)
    if np.isnan(out).any():
        raise NumericalError("renyi_gaussians_batched: NaN from valid inputs")
    return out
