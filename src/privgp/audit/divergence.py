"""Exact Rényi divergences between the Gaussian posteriors of neighbouring datasets.

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

:func:`neighbour_divergence` builds the two posteriors of replace-one neighbours D = core + (x, y),
D' = core + (x', y') on a finite test set and evaluates eq. (12) (Prop. 2's release with prior noise
eta when eta > 0; the covariance-only limit when sigma = inf). :func:`worst_case_neighbours` searches
adversarially (random restarts + L-BFGS-B) for neighbours that maximise it, and reports the
certified bound (Thm 3.1 / Prop. 2) at the same order for comparison.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from .. import validation as v
from ..accounting import bounds_for, rdp_covariance_term, rdp_mean_term, rdp_posterior_sample
from ..domain import Box
from ..errors import InvalidParameterError
from ..gp import ExactPosterior
from ..kernels import Kernel

RTOL = 1e-10           # support: eigenvalues of (S1 + S2) / scale above RTOL * max (smaller ones are projected away)
NULL_RTOL = 1e-13      # eigenvalues below NULL_RTOL * max are zero up to round-off
STRICT_RTOL = 1e-6     # fallback support: only strongly supported directions
SINGULAR = 1e-13       # a covariance with an eigenvalue below this on the kept support is singular there
MEAN_OFF_SUPPORT = 1e-7  # relative size of a mean difference outside the support that means "different supports"


def _check_alpha(alpha) -> float:
    return v.greater_than("alpha", alpha, 1.0)


def renyi_divergence_parts(alpha, mean1, cov1, mean2, cov2, *, rtol: float = RTOL) -> tuple[float, float, float]:
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


def _parts_on(alpha: float, A, B, d, U):
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


def renyi_divergence_gaussians(alpha, mean1, cov1, mean2, cov2) -> float:
    """D_alpha(N(mean1, cov1) || N(mean2, cov2)) of seed 000, eq. (12), with pseudo-inverses and
    pseudo-determinants on the common support; +inf when the supports differ or S_alpha is not
    positive definite on it."""
    return renyi_divergence_parts(alpha, mean1, cov1, mean2, cov2)[0]


def _one_point(name: str, x, dim: int) -> np.ndarray:
    arr = v.finite_array(name, x).reshape(1, -1)
    if arr.shape[1] != dim:
        raise InvalidParameterError(name, f"one point of dimension {dim}", f"{arr.size} coordinates")
    return arr


def _unique_rows(X: np.ndarray) -> np.ndarray:
    _, idx = np.unique(X, axis=0, return_index=True)
    return X[np.sort(idx)]


def neighbour_posteriors(kernel: Kernel, X_core, y_core, x, y, x_prime, y_prime, XT, *, r: float,
                         sigma: float, eta: float = 0.0):
    """Means and covariances on XT of the released vector for D = core + (x, y), D' = core + (x', y').

    Release: f_D(XT) ~ N(mu_D, sigma^2 K_D) (+ eta^2 K(XT, XT) prior noise, Prop. 2). With sigma = inf
    the covariance-only limit: zero means and covariance K_D (+ 0: eta / sigma -> 0).
    """
    XT = v.points("XT", XT)
    dim = XT.shape[1]
    Xc = np.asarray(X_core, dtype=float).reshape(-1, dim)
    yc = np.asarray(y_core, dtype=float).reshape(-1)
    x, xp = _one_point("x", x, dim), _one_point("x_prime", x_prime, dim)
    post_D = ExactPosterior(kernel, np.vstack([Xc, x]), np.append(yc, float(y)), r)
    post_Dp = ExactPosterior(kernel, np.vstack([Xc, xp]), np.append(yc, float(y_prime)), r)
    K1, K2 = post_D.kD(XT), post_Dp.kD(XT)
    if math.isinf(sigma):
        zero = np.zeros(XT.shape[0])
        return zero, K1, zero, K2
    noise = eta * eta * kernel(XT) if eta > 0 else 0.0
    return post_D.mean(XT), sigma * sigma * K1 + noise, post_Dp.mean(XT), sigma * sigma * K2 + noise


def neighbour_divergence(kernel: Kernel, X_core, y_core, x, y, x_prime, y_prime, XT, *, r, sigma,
                         eta=0.0, alpha, include_differing: bool = True) -> tuple[float, float, float]:
    """Exact D_alpha(Pi_D(XT) || Pi_D'(XT)) for replace-one neighbours D = core + (x, y) and
    D' = core + (x', y') (seed 000, eq. (12); Prop. 2 release when eta > 0; sigma = inf allowed).

    Returns (total, mean part, covariance part). With ``include_differing`` (default) x and x' are
    added to XT (exact duplicates are dropped; they change nothing). Without prior noise (eta = 0)
    the test set core + {x, x'} already gives the divergence of the whole paths, because the
    likelihood ratio depends on the path only through its values there.
    """
    alpha = _check_alpha(alpha)
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma, allow_inf=True)
    eta = v.nonnegative("eta", eta)
    x = v.finite_array("x", x).reshape(1, -1)
    dim = x.shape[1]
    XT = v.finite_array("XT", XT, allow_empty=include_differing).reshape(-1, dim)
    if include_differing:
        XT = np.vstack([x, _one_point("x_prime", x_prime, dim), XT])
    XT = _unique_rows(XT)
    m1, S1, m2, S2 = neighbour_posteriors(kernel, X_core, y_core, x, y, x_prime, y_prime, XT, r=r,
                                          sigma=sigma, eta=eta)
    return renyi_divergence_parts(alpha, m1, S1, m2, S2)


@dataclass(frozen=True)
class WorstCaseNeighbours:
    """The most divergent neighbouring pair found, and the certified bound at the same order."""

    alpha: float
    objective: str            # "total" or "mean"
    divergence: float         # total D_alpha at the best pair
    mean_part: float
    cov_part: float
    bound: float              # certified single-draw RDP bound (Thm 3.1 / Prop. 2) at alpha
    mean_bound: float         # its mean (Delta_n) term
    cov_bound: float          # its covariance term 2 psi_alpha(tau~)
    X_core: np.ndarray
    y_core: np.ndarray
    x: np.ndarray
    y: float
    x_prime: np.ndarray
    y_prime: float
    XT: np.ndarray
    n: int
    r: float
    sigma: float
    eta: float
    M_Y: float
    lemma_Delta: str
    evaluations: int

    @property
    def ratio(self) -> float:
        """Found / certified, for the chosen objective (<= 1 when the bound holds)."""
        num, den = (self.divergence, self.bound) if self.objective == "total" else (self.mean_part, self.mean_bound)
        return num / den if den > 0 else (0.0 if num == 0 else math.inf)


def worst_case_neighbours(alpha, *, n, kernel: Kernel, domain: Box, r, sigma, eta=0.0, M_Y=1.0, rng,
                          restarts: int = 6, test_points: int = 2, objective: str = "total",
                          sensitivity: str = "generic", constants: str = "proven",
                          maxiter: int = 150) -> WorstCaseNeighbours:
    """Adversarial search for replace-one neighbours (size n, inputs in ``domain``, responses in
    [-M_Y, M_Y]) maximising the exact divergence (``objective="total"``) or its mean part
    (``"mean"``) at order alpha, over the core inputs and responses, x, x', y, y' and ``test_points``
    extra test inputs. Random restarts (the first one structured: the core piled on one corner, x
    and x' at the far corner, opposite responses) each refined by L-BFGS-B on the box.
    """
    alpha = _check_alpha(alpha)
    n = v.integer("n", n, minimum=1)
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma, allow_inf=True)
    eta = v.nonnegative("eta", eta)
    M_Y = v.positive("M_Y", M_Y)
    rng = v.generator("rng", rng)
    restarts = v.integer("restarts", restarts, minimum=1)
    test_points = v.integer("test_points", test_points, minimum=0)
    if objective not in ("total", "mean"):
        raise InvalidParameterError("objective", "'total' or 'mean'", objective)
    if not isinstance(kernel, Kernel):
        raise InvalidParameterError("kernel", "a privgp.kernels.Kernel instance", kernel)
    if not isinstance(domain, Box):
        raise InvalidParameterError("domain", "a privgp.domain.Box", domain)
    b = bounds_for(n, r, kernel=kernel, domain=domain, M_Y=M_Y, sensitivity=sensitivity, constants=constants)
    V, Delta = float(b.V), float(b.Delta)
    bound = float(rdp_posterior_sample(alpha, V, Delta, r, sigma, eta))
    mean_bound = float(rdp_mean_term(alpha, V, Delta, r, sigma, eta))
    cov_bound = float(rdp_covariance_term(alpha, V, r, sigma, eta))

    d = domain.dim
    lo, width = np.asarray(domain.lower), domain.widths
    nc = n - 1
    sizes = [nc * d, nc, d, d, 1, 1, test_points * d]
    cuts = np.cumsum(sizes)[:-1]
    p = int(sum(sizes))
    bnds = [(0.0, 1.0)] * (nc * d) + [(-1.0, 1.0)] * nc + [(0.0, 1.0)] * (2 * d) + [(-1.0, 1.0)] * 2 \
        + [(0.0, 1.0)] * (test_points * d)

    def unpack(z):
        Xc, yc, x, xp, yy, yp, xt = np.split(z, cuts)
        return (lo + width * Xc.reshape(nc, d), M_Y * yc, lo + width * x, lo + width * xp, M_Y * float(yy[0]),
                M_Y * float(yp[0]), lo + width * xt.reshape(test_points, d))

    count = [0]

    def parts(z):
        Xc, yc, x, xp, yy, yp, xt = unpack(z)
        XT = np.vstack([Xc, xt]) if nc else xt
        count[0] += 1
        return neighbour_divergence(kernel, Xc, yc, x, yy, xp, yp, XT, r=r, sigma=sigma, eta=eta, alpha=alpha)

    idx = 0 if objective == "total" else 1

    def f(z):
        val = parts(z)[idx]
        return -val if math.isfinite(val) else -1e300

    with threadpool_limits(1):  # tiny matrices: BLAS threads only add contention
        best = _search(f, parts, idx, restarts, p, nc, d, test_points, bnds, rng, maxiter)
    _, z, (total, mean_part, cov_part) = best
    Xc, yc, x, xp, yy, yp, xt = unpack(z)
    XT = _unique_rows(np.vstack([x[None], xp[None], Xc, xt]))
    return WorstCaseNeighbours(alpha=alpha, objective=objective, divergence=total, mean_part=mean_part,
                               cov_part=cov_part, bound=bound, mean_bound=mean_bound, cov_bound=cov_bound,
                               X_core=Xc, y_core=yc, x=x, y=yy, x_prime=xp, y_prime=yp, XT=XT, n=n, r=r,
                               sigma=sigma, eta=eta, M_Y=M_Y, lemma_Delta=b.lemma_Delta, evaluations=count[0])


def _search(f, parts, idx, restarts, p, nc, d, test_points, bnds, rng, maxiter):
    best = (-math.inf, None, None)
    for k in range(restarts):
        if k == 0:
            z0 = np.concatenate([np.full(nc * d, 0.02), np.full(nc, 1.0), np.full(2 * d, 0.98),
                                 [-1.0, 1.0], rng.uniform(0.0, 1.0, test_points * d)])
            z0[nc * d + nc + d:nc * d + nc + 2 * d] = 0.9  # x' near x, not equal
        else:
            z0 = np.array([rng.uniform(a, c) for a, c in bnds]) if p else np.zeros(0)
        if p:
            res = minimize(f, z0, method="L-BFGS-B", bounds=bnds, options={"maxiter": maxiter})
            z = res.x
        else:
            z = z0
        val_parts = parts(z)
        if val_parts[idx] > best[0]:
            best = (val_parts[idx], z, val_parts)
        if not math.isfinite(val_parts[idx]):
            break
    return best
