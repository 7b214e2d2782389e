"""Exact posterior mean and variance of the 1-D exponential-kernel GP in O(n + m) (Kalman smoothing).

With k(x, x') = exp(-|x - x'| / l) the prior g ~ GP(0, k) is a stationary Ornstein-Uhlenbeck
process, a Markov process with exact transition

    g(t') | g(t) ~ N(rho g(t), 1 - rho^2),   rho = exp(-(t' - t) / l),  t < t'.

The seed-000 posterior GP(mu_D, sigma^2 k_D) (sec. 2) has

    mu_D(x) = k_X(x)^T (K + r^2 I)^{-1} y,   k_D(x, x) = k(x, x) - k_X(x)^T (K + r^2 I)^{-1} k_X(x),

which are the posterior mean and variance of g(x) given y_i = g(x_i) + N(0, r^2) (sigma cancels). They
are computed here without any n x n matrix:

1. Kalman filter and Rauch-Tung-Striebel smoother over the sorted inputs give the exact posterior
   mean mu_k, variance P_k of g(x_k) and the covariance C_k of (g(x_k), g(x_{k+1})). The smoothed
   variance is accumulated as P_k q_{k+1} / P^-_{k+1} + J_k^2 P_{k+1} (a sum of non-negative terms,
   no cancellation); 1 - rho^2 is computed with expm1.
2. A query q between the inputs x_k <= q < x_{k+1} depends on the data only through g(x_k) and
   g(x_{k+1}) (Markov property): g(q) = a g(x_k) + b g(x_{k+1}) + e with the OU bridge weights
   a = rho_l (1 - rho_r^2) / (1 - rho_l^2 rho_r^2), b = rho_r (1 - rho_l^2) / (1 - rho_l^2 rho_r^2)
   and an independent e of variance (1 - rho_l^2)(1 - rho_r^2) / (1 - rho_l^2 rho_r^2)
   (rho_l = exp(-(q - x_k) / l), rho_r = exp(-(x_{k+1} - q) / l)); so
   mu_D(q) = a mu_k + b mu_{k+1} and k_D(q, q) = var e + a^2 P_k + 2 a b C_k + b^2 P_{k+1}.
   Queries outside [x_1, x_n] have one neighbour (b = 0 or a = 0).

Everything is vectorised over datasets and settings (lengthscale, r); the only Python loops are the
two passes over the n inputs. Inputs that coincide are allowed (rho = 1). The same values as
:class:`~privgp.models.gp.EigenPosterior` up to rounding (tests/models/gp/test_markov1d.py).
"""
from __future__ import annotations

import numpy as np

from ... import validation as v
from ...errors import InvalidParameterError


def _line(name: str, a, ndim: int) -> np.ndarray:
    """1-D points as (..., n): a trailing axis of length 1 is dropped."""
    arr = v.finite_array(name, a)
    if arr.ndim == ndim + 1 and arr.shape[-1] == 1:
        arr = arr[..., 0]
    if arr.ndim != ndim:
        raise InvalidParameterError(name, f"1-D points, {ndim} axes (an extra trailing axis of length 1 is allowed)",
                                    arr.shape)
    return arr


class ExpKernelPosterior1D:
    """Posterior mean mu_D and normalised variance k_D of the 1-D exponential kernel for a batch of datasets.

    ``X`` (B, n) or (B, n, 1), ``y`` (B, n), ``Xq`` (m,) or (m, 1) query points shared by all datasets.
    :meth:`mean_var` takes S settings (lengthscale_s, r_s) and returns arrays (S, B, m).
    """

    def __init__(self, X, y, Xq):
        X = _line("X", X, 2)
        y = v.finite_array("y", y, ndim=2)
        if y.shape != X.shape or X.shape[1] == 0:
            raise InvalidParameterError("y", f"one response per input, shape {X.shape} with n >= 1", y.shape)
        q = _line("Xq", Xq, 1)
        order = np.argsort(X, axis=1, kind="stable")
        self.x = np.take_along_axis(X, order, axis=1)
        self.y = np.take_along_axis(y, order, axis=1)
        B, n = self.x.shape
        self.gaps = np.diff(self.x, axis=1)                                      # (B, n - 1)
        # the input at or left of each query (-1: none) and the distances to both neighbours (inf: none)
        left = np.stack([np.searchsorted(row, q, side="right") - 1 for row in self.x])   # (B, m)
        bi = np.arange(B)[:, None]
        self.dl = np.where(left >= 0, q - self.x[bi, np.maximum(left, 0)], np.inf)
        self.dr = np.where(left < n - 1, self.x[bi, np.minimum(left + 1, n - 1)] - q, np.inf)
        # flat positions of both neighbours in a (B * n) row of per-input values (clamped; the weight of a
        # missing neighbour is 0)
        self.il = (bi * n + np.maximum(left, 0)).reshape(-1)
        self.ir = (bi * n + np.minimum(left + 1, n - 1)).reshape(-1)
        self.m = q.shape[0]

    def smooth(self, lengthscales, r_values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Smoothed mean, variance and lag-one covariance at the sorted inputs, each (S, B, n)
        (the last covariance, which has no successor, is 0)."""
        ell = np.asarray(lengthscales, dtype=float).reshape(-1)
        r2 = np.asarray(r_values, dtype=float).reshape(-1) ** 2
        B, n = self.x.shape
        S = ell.shape[0]
        # transitions, step-major so that each step of the passes reads contiguous (S, B) blocks
        t = self.gaps.T[:, None, :] / ell[None, :, None]                         # (n - 1, S, B)
        rho, qq = np.exp(-t), -np.expm1(-2.0 * t)
        noise = r2[:, None]
        m_pred = np.empty((n, S, B))
        P_pred = np.empty((n, S, B))
        m_f = np.empty((n, S, B))
        P_f = np.empty((n, S, B))
        m_pred[0], P_pred[0] = 0.0, 1.0
        yT = self.y.T
        for k in range(n):
            if k:
                m_pred[k] = rho[k - 1] * m_f[k - 1]
                P_pred[k] = rho[k - 1] ** 2 * P_f[k - 1] + qq[k - 1]
            denom = P_pred[k] + noise
            m_f[k] = m_pred[k] + P_pred[k] / denom * (yT[k] - m_pred[k])
            P_f[k] = P_pred[k] * noise / denom
        mu, P, C = np.empty((n, S, B)), np.empty((n, S, B)), np.zeros((n, S, B))
        mu[-1], P[-1] = m_f[-1], P_f[-1]
        for k in range(n - 2, -1, -1):
            J = rho[k] * P_f[k] / P_pred[k + 1]
            mu[k] = m_f[k] + J * (mu[k + 1] - m_pred[k + 1])
            P[k] = P_f[k] * qq[k] / P_pred[k + 1] + J * J * P[k + 1]
            C[k] = J * P[k + 1]
        return (np.ascontiguousarray(mu.transpose(1, 2, 0)), np.ascontiguousarray(P.transpose(1, 2, 0)),
                np.ascontiguousarray(C.transpose(1, 2, 0)))

    def _bridge(self, ell: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """OU bridge weights a, b and residual variance of every query, (B, m), at one lengthscale."""
        dl, dr = self.dl / ell, self.dr / ell
        rl, rr = np.exp(-dl), np.exp(-dr)
        ql, qr = -np.expm1(-2.0 * dl), -np.expm1(-2.0 * dr)
        qlr = -np.expm1(-2.0 * (dl + dr))          # 1 - rho_l^2 rho_r^2 (1 with a missing neighbour)
        return rl * qr / qlr, rr * ql / qlr, ql * qr / qlr

    def mean_var(self, lengthscales, r_values) -> tuple[np.ndarray, np.ndarray]:
        """mu_D and k_D at the queries for settings (lengthscales[s], r_values[s]): two arrays (S, B, m)."""
        blocks = list(self.iter_mean_var(lengthscales, r_values))
        return np.concatenate([b[1] for b in blocks]), np.concatenate([b[2] for b in blocks])

    def iter_mean_var(self, lengthscales, r_values, *, max_elements: int = 2**21):
        """:meth:`mean_var` in blocks of consecutive settings: (first setting, mean, var), arrays of at most
        about ``max_elements`` entries (one smoothing pass serves several query blocks)."""
        ell = np.asarray(lengthscales, dtype=float).reshape(-1)
        r = np.asarray(r_values, dtype=float).reshape(-1)
        if ell.shape != r.shape or np.any(~(ell > 0)) or np.any(~(r > 0)) or not np.all(np.isfinite(ell * r)):
            raise InvalidParameterError("settings", "equally many finite lengthscales > 0 and r > 0", (ell, r))
        B, n = self.x.shape
        m = self.m
        per_smooth = max(1, max_elements // (n * B))
        per_query = max(1, max_elements // (m * B))
        for lo in range(0, ell.shape[0], per_smooth):
            state = self.smooth(ell[lo:lo + per_smooth], r[lo:lo + per_smooth])
            for qlo in range(0, state[0].shape[0], per_query):
                sel = slice(qlo, qlo + per_query)
                yield (lo + qlo, *self._at_queries(ell[lo + qlo:lo + qlo + per_query], *(a[sel] for a in state)))

    def _at_queries(self, ell: np.ndarray, mu: np.ndarray, P: np.ndarray, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Step 2 of the module docstring for the smoothed states (S, B, n) of settings with lengthscales ell."""
        S = ell.shape[0]
        B, m = self.x.shape[0], self.m
        mean, var = np.empty((S, B, m)), np.empty((S, B, m))
        flat = [a.reshape(S, -1) for a in (mu, P, C)]
        for e in np.unique(ell):
            sel = np.flatnonzero(ell == e)
            a, b, ve = self._bridge(float(e))
            mu_s, P_s, C_s = (f[sel] for f in flat)

            def at(vals, idx, s=sel.size):
                return np.take(vals, idx, axis=1).reshape(s, B, m)

            mean[sel] = a * at(mu_s, self.il) + b * at(mu_s, self.ir)
            var[sel] = ve + a * (a * at(P_s, self.il) + 2.0 * b * at(C_s, self.il)) + b * b * at(P_s, self.ir)
        return mean, np.maximum(var, 0.0, out=var)
