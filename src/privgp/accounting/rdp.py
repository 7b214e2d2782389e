"""Rényi-DP bounds for one released posterior sample path (seed 000, Thm 3.1, Prop. 2, Lemma A.3).

Pure maths on numpy arrays (everything broadcasts). Out-of-range orders give +inf, never 0 or NaN.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidParameterError, NumericalError


def _nan_check(name, arr):
    if np.any(np.isnan(arr)):
        raise NumericalError(f"{name}: NaN produced from finite inputs")
    return arr


def psi_alpha(alpha, tau):
    """psi_alpha(tau) of Lemma A.3 (closed form of the max over lambda in [1/(1+tau), 1+tau]):

        max{ 1/2 log(1+tau) - log((1+alpha tau)/(1+tau)) / (2(alpha-1)),
            -1/2 log(1+tau) - log(1 - tau(alpha-1))     / (2(alpha-1)) }

    Defined for tau >= 0 and 1 < alpha < 1 + 1/tau; +inf where tau (alpha - 1) >= 1.
    """
    alpha = np.asarray(alpha, dtype=float)
    tau = np.asarray(tau, dtype=float)
    am1 = alpha - 1.0
    if np.any(~(am1 > 0.0)):
        raise InvalidParameterError("alpha", "> 1 (Rényi order)", alpha if alpha.ndim == 0 else alpha[~(am1 > 0)])
    if np.any(~(tau >= 0.0)):
        raise InvalidParameterError("tau", ">= 0", tau)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = tau * am1
        half_log = 0.5 * np.log1p(tau)
        first = half_log - np.log1p(x / (1.0 + tau)) / (2.0 * am1)
        second = -half_log - np.log1p(-np.minimum(x, 1.0)) / (2.0 * am1)
        out = np.maximum(first, second)
        out = np.where(x >= 1.0, np.inf, out)
        out = np.where(np.isposinf(tau), np.inf, out)
        out = np.where(tau == 0.0, 0.0, out)
    return _nan_check("psi_alpha", out)


def tau_tilde(V, r, sigma, eta=0.0):
    """tau~_n(r, eta) = sigma^2 V / (sigma^2 r^2 + eta^2 (V + r^2))  (Prop. 2).

    eta = 0 gives V / r^2 (Thm 3.1); sigma = inf gives V / r^2 (covariance-only limit, sec. 4).
    """
    V, r, sigma, eta = (np.asarray(a, dtype=float) for a in (V, r, sigma, eta))
    r2 = r * r
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(np.isinf(sigma), 0.0, (eta / sigma) ** 2)  # eta^2 / sigma^2
        out = V / (r2 + ratio * (V + r2))
    return _nan_check("tau_tilde", out)


def alpha_max(V, r, sigma, eta=0.0):
    """Upper end 1 + 1/tau~ of the admissible orders (Thm 3.1: 1 + r^2/V_n); +inf when tau~ = 0."""
    tau = tau_tilde(V, r, sigma, eta)
    with np.errstate(divide="ignore"):
        return 1.0 + 1.0 / tau


def rdp_posterior_sample(alpha, V, Delta, r, sigma, eta=0.0):
    """Single-draw RDP bound of seed 000, Prop. 2 (Thm 3.1 when eta = 0), eq. (4):

        eps_alpha <= 2 psi_alpha(tau~) + alpha/2 (V + r^2) Delta^2
                                           / (sigma^2 (r^2 - (alpha-1) V) + eta^2 (V + r^2))

    V >= V_n(r) and Delta >= Delta_n(r) are upper bounds (App. B). Valid for 1 < alpha < 1 + 1/tau~,
    +inf outside. sigma = inf gives the covariance-only bound 2 psi_alpha(V / r^2).
    """
    alpha, V, Delta, r, sigma, eta = (np.asarray(a, dtype=float) for a in (alpha, V, Delta, r, sigma, eta))
    tau = tau_tilde(V, r, sigma, eta)
    cov_term = 2.0 * psi_alpha(alpha, tau)
    r2 = r * r
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # Divide through by sigma^2 so that sigma = inf is the limit, not inf/inf.
        inv_s2 = np.where(np.isinf(sigma), 0.0, 1.0 / (sigma * sigma))
        eta2_s2 = np.where(np.isinf(sigma), 0.0, (eta * eta) * inv_s2)
        denom = (r2 - (alpha - 1.0) * V) + eta2_s2 * (V + r2)  # = [sigma^2(...) + eta^2(...)] / sigma^2
        mean_term = 0.5 * alpha * (V + r2) * Delta**2 * inv_s2 / denom
        mean_term = np.where(Delta == 0.0, 0.0, mean_term)
        mean_term = np.where(denom <= 0.0, np.inf, mean_term)
    out = cov_term + mean_term
    return _nan_check("rdp_posterior_sample", out)


def rdp_mean_term(alpha, V, Delta, r, sigma, eta=0.0):
    """The posterior-mean part of the bound alone (for checks against the exact mean divergence)."""
    alpha, V, Delta, r, sigma, eta = (np.asarray(a, dtype=float) for a in (alpha, V, Delta, r, sigma, eta))
    return rdp_posterior_sample(alpha, V, Delta, r, sigma, eta) - rdp_posterior_sample(alpha, V, 0.0, r, sigma, eta)
