"""Variational sparse-GP posterior q(u) = N(m, S) on inducing inputs Z from (noisy) sufficient
statistics: the noise-aware posterior of seed 001 (eqs. 2, 9-15), prediction (eq. 17) and the
per-point validation log-likelihood (eq. 18). No privacy here: the statistics come in already
released (:mod:`privgp.mechanisms.sparse_gp`), and everything below is post-processing.

Stable form (docs/notes/seed001_dpgp.md, sec. 1.5). With s = sigma^2 (homoscedastic statistics A = sum y_i k_i,
B = sum k_i k_i^T) or s = 1 (weighted statistics A_h, B_h of App. D, weights 1/sigma_i^2),

    P   = s K_ZZ + B~ + s lambda I,         s lambda = sigma_b sqrt(|Z| log(2 |Z|^2 / rho)) (|Z|+1) / (2|Z|)   (eq. 10)
    w   = P^-1 a~                            (a~ = A + E_a)
    m   = K_ZZ w                                                                           (eq. 9)
    S_0 = s K_ZZ P^-1 K_ZZ
    S_21 = sigma_a^2 K_ZZ P^-2 K_ZZ                                                       (eq. 11)
    S_22 = (sigma_b^2 / 2) K_ZZ P^-1 (||w||^2 I + W) P^-1 K_ZZ                            (eq. 14)
    S   = S_0 + S_21 + S_22                                                                (eq. 15)

which equals the paper's Sigma~ = s P^-1 form without its sigma^-8 factors. ``correction``:

* ``"symmetric"`` (default): W = w w^T. The released B~ carries one noise value per upper-triangle
  entry, so E_b is symmetric (diagonal variance sigma_b^2, off-diagonal sigma_b^2 / 2), and the
  first-order covariance of m is exactly this (derivation in docs/notes/seed001_dpgp.md, sec. 1.5; the Monte Carlo check in
  tests/models/gp/test_sparse_posterior.py agrees). We default to it because it is the linearisation of
  the mechanism we actually run.
* ``"paper"``: W = diag(w o w), the closed form of eq. 14 as printed, which sums over (i, j) and
  (j, i) as if they were independent and so drops the cross terms.
* ``"none"``: S_2 = 0 (the "naive" model of seed 001, Fig. 2).

Positive definiteness. lambda makes P positive definite with probability >= 1 - rho only. When the
Cholesky factorisation of the released P fails we add (t - lambda_min(P)) I with t = max(s lambda,
1e-10 ||P||) and record the shift in ``repair_shift``: a function of released quantities only
(post-processing), never a change to the privacy guarantee.

Prediction (eq. 17), for latent f at inputs V: mu = K_VZ K_ZZ^-1 m = K_VZ w and
var = k(v, v) - diag(K_VZ K_ZZ^-1 K_ZV) + diag(K_VZ G K_ZV) with G = K_ZZ^-1 S K_ZZ^-1
= P^-1 (s P + sigma_a^2 I + M) P^-1 (M the middle of S_22); only the Nystrom term needs
K_ZZ^-1 (Cholesky with the smallest jitter that works).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve, solve_triangular

from ... import validation as v
from ...errors import InvalidParameterError, NumericalError
from ..kernels import Kernel

CORRECTIONS = ("symmetric", "paper", "none")


def regulariser(sigma_b: float, n_inducing: int, rho: float = 0.01) -> float:
    """s lambda of eq. 10 (in the units of P): sigma_b sqrt(|Z| log(2 |Z|^2 / rho)) (|Z| + 1) / (2 |Z|).
    The paper's lambda is this divided by sigma^2 (Wang 2018, Lemma 6, with the off-diagonal
    noise variance sigma_b^2 / 2)."""
    sb = v.nonnegative("sigma_b", sigma_b)
    d = v.integer("n_inducing", n_inducing, minimum=1)
    rho = v.probability("rho", rho)
    return sb * math.sqrt(d * math.log(2.0 * d * d / rho)) * (d + 1) / (2.0 * d)


def cholesky_with_jitter(K: np.ndarray, scale: float = 1.0) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor of K + j I with the smallest j in {0, 1e-12, 1e-11, ...} x scale that works."""
    n = K.shape[0]
    for j in [0.0] + [scale * 10.0**e for e in range(-12, -1)]:
        try:
            L = np.linalg.cholesky(K + j * np.eye(n))
            return L, j
        except np.linalg.LinAlgError:
            continue
    raise NumericalError("K_ZZ is not positive definite even with jitter 1e-2 (duplicate inducing points?)")


def predict_from_released(Z: np.ndarray, kernel: Kernel, signal_variance: float, m: np.ndarray, S: np.ndarray,
                          X: np.ndarray, *, one_thread: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Latent predictive mean and sd at X of q(u) = N(m, S) on the inducing inputs Z (eq. 17): what
    :meth:`SparsePosterior.predict` gives, from the released m and S alone (w = K_ZZ^-1 m, G = K_ZZ^-1 S K_ZZ^-1;
    public post-processing, e.g. for ``privgp verify``). BLAS runs on one thread here, so that the release and its
    verification give the same bits whatever their thread counts (red team 20b: a release verified with another
    thread count, or made under Dask's one-thread workers, differed in its last bits); ``one_thread=False``: with
    BLAS's own threads, as privgp computed it before 2026-11-29 (verify of such a release)."""
    if not one_thread:
        return _predict_from_released(Z, kernel, signal_variance, m, S, X)
    from ...blas_threads import one_blas_thread  # noqa: PLC0415

    with one_blas_thread():
        return _predict_from_released(Z, kernel, signal_variance, m, S, X)


def _predict_from_released(Z: np.ndarray, kernel: Kernel, signal_variance: float, m: np.ndarray, S: np.ndarray,
                           X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    K = signal_variance * kernel(Z, Z)
    L, _ = cholesky_with_jitter(K, scale=signal_variance)
    cf = (L, True)
    w = cho_solve(cf, m)
    G = cho_solve(cf, cho_solve(cf, S).T)
    Kxz = signal_variance * kernel(X, Z)
    Aw = solve_triangular(L, Kxz.T, lower=True)
    var = signal_variance * kernel.diag(X) - np.sum(Aw * Aw, axis=0) + np.sum((Kxz @ G) * Kxz, axis=1)
    return Kxz @ w, np.sqrt(np.maximum(var, 0.0))


def _solve_pd(P: np.ndarray, floor: float) -> tuple[tuple, float]:
    """cho_factor of P, repaired by a diagonal shift when P is not positive definite."""
    P = 0.5 * (P + P.T)
    try:
        return cho_factor(P, lower=True), 0.0
    except LinAlgError:
        pass
    lam_min = float(np.linalg.eigvalsh(P)[0])
    target = max(floor, 1e-10 * float(np.abs(P).max()))
    shift = target - lam_min
    try:
        return cho_factor(P + shift * np.eye(P.shape[0]), lower=True), shift
    except LinAlgError:  # pragma: no cover - a shift to a positive minimum eigenvalue always works
        raise NumericalError("could not repair the released second-moment matrix") from None


@dataclass(frozen=True, eq=False)
class SparsePosterior:
    """q(u) = N(mean, covariance) on ``inducing_points`` for a kernel sigma_f^2 k (eq. 9/15), with the
    pieces that prediction needs. ``components``: S_0, S_21, S_22 (and their sum is ``covariance``)."""

    inducing_points: np.ndarray
    kernel: Kernel
    signal_variance: float
    mean: np.ndarray                 # m (|Z|,)
    covariance: np.ndarray           # S (|Z|, |Z|)
    weights: np.ndarray              # w = K_ZZ^-1 m
    inner_covariance: np.ndarray     # G = K_ZZ^-1 S K_ZZ^-1
    correction: str
    ridge: float                     # s lambda (units of P)
    repair_shift: float = 0.0        # diagonal added to a non-PD released P (post-processing)
    components: dict = field(default_factory=dict, repr=False)
    _kzz_whitener: np.ndarray | None = field(default=None, repr=False)   # L^-1

    def predict(self, X, *, full_cov: bool = False):
        """Latent mean and variance (or covariance) at X (eq. 17). Rounding can make a variance a
        few ulps negative; such values are set to 0."""
        X = v.points("X", X, dim=self.inducing_points.shape[1])
        Kxz = self.signal_variance * self.kernel(X, self.inducing_points)
        mu = Kxz @ self.weights
        assert self._kzz_whitener is not None                    # set by noise_aware_posterior
        Aw = self._kzz_whitener @ Kxz.T                          # L^-1 K_ZX, K_ZZ = L L^T
        if full_cov:
            Kxx = self.signal_variance * self.kernel(X, X)
            cov = Kxx - Aw.T @ Aw + Kxz @ self.inner_covariance @ Kxz.T
            return mu, 0.5 * (cov + cov.T)
        kxx = self.signal_variance * self.kernel.diag(X)
        var = kxx - np.sum(Aw * Aw, axis=0) + np.sum((Kxz @ self.inner_covariance) * Kxz, axis=1)
        return mu, np.maximum(var, 0.0)

    def log_likelihood_points(self, X, y, noise_var) -> np.ndarray:
        """log N(y_i; mu_i, var_i + sigma^2) per validation point (eq. 18, diagonal only)."""
        y = v.finite_array("y", y, ndim=1)
        mu, var = self.predict(X)
        if mu.shape != y.shape:
            raise InvalidParameterError("y", f"one value per input ({mu.shape[0]})", y.shape[0])
        s2 = var + np.asarray(noise_var, dtype=float)
        return -0.5 * np.log(2.0 * math.pi * s2) - 0.5 * (y - mu) ** 2 / s2


def noise_aware_posterior(Z, kernel: Kernel, a, B, *, scale: float, sigma_a: float, sigma_b: float,
                          rho: float = 0.01, correction: str = "symmetric", signal_variance: float = 1.0,
                          regularise: bool = True) -> SparsePosterior:
    """The noise-aware q(u) of eqs. 9-15 from released statistics a = A + E_a, B = B + E_b (see the
    module docstring; ``scale`` is sigma^2 for homoscedastic statistics, 1 for weighted ones).
    With sigma_a = sigma_b = 0 and ``regularise=False`` it is Titsias' posterior (eq. 2)."""
    if correction not in CORRECTIONS:
        raise InvalidParameterError("correction", f"one of {CORRECTIONS}", correction)
    Z = v.points("inducing_points", Z)
    d = Z.shape[0]
    a = v.finite_array("a", a, ndim=1)
    B = v.finite_array("B", B, ndim=2)
    if a.shape != (d,) or B.shape != (d, d):
        raise InvalidParameterError("statistics", f"shapes ({d},) and ({d}, {d})", (a.shape, B.shape))
    s = v.positive("scale", scale)
    sa = v.nonnegative("sigma_a", sigma_a)
    sb = v.nonnegative("sigma_b", sigma_b)
    sf2 = v.positive("signal_variance", signal_variance)
    K = sf2 * kernel(Z, Z)
    ridge = regulariser(sb, d, rho) if regularise else 0.0
    P = s * K + B + ridge * np.eye(d)
    cf, shift = _solve_pd(P, floor=ridge if ridge > 0 else 1e-12 * s * sf2)
    Pinv = cho_solve(cf, np.eye(d))
    Pinv = 0.5 * (Pinv + Pinv.T)
    w = Pinv @ a
    if correction == "symmetric":
        middle = 0.5 * sb * sb * (float(w @ w) * np.eye(d) + np.outer(w, w))
    elif correction == "paper":
        middle = 0.5 * sb * sb * (float(w @ w) * np.eye(d) + np.diag(w * w))
    else:
        middle = np.zeros((d, d))
    inner0 = s * Pinv                                   # K^-1 S_0 K^-1
    inner21 = sa * sa * (Pinv @ Pinv)                   # K^-1 S_21 K^-1
    inner22 = Pinv @ middle @ Pinv                      # K^-1 S_22 K^-1
    G = inner0 + inner21 + inner22
    G = 0.5 * (G + G.T)
    comps = {"S0": K @ inner0 @ K, "S21": K @ inner21 @ K, "S22": K @ inner22 @ K}
    S = comps["S0"] + comps["S21"] + comps["S22"]
    S = 0.5 * (S + S.T)
    m = K @ w
    L, _ = cholesky_with_jitter(K, scale=sf2)
    Linv = solve_triangular(L, np.eye(d), lower=True)
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(S))):
        raise NumericalError("noise-aware posterior: non-finite mean or covariance")
    return SparsePosterior(Z, kernel, sf2, m, S, w, G, correction, ridge, shift, comps, Linv)
