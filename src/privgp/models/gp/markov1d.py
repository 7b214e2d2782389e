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

import math

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


class _Buffers:
    """Named arrays kept between blocks, views of flat arrays that only grow (fresh arrays of these sizes
    cost page faults on every block)."""

    def __init__(self):
        self._flat: dict[str, np.ndarray] = {}

    def __call__(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        size = math.prod(shape)
        buf = self._flat.get(name)
        if buf is None or buf.size < size:
            buf = self._flat[name] = np.empty(size)
        return buf[:size].reshape(shape)


class ExpKernelPosterior1D:
    """Posterior mean mu_D and normalised variance k_D of the 1-D exponential kernel for a batch of datasets.

    ``X`` (B, n) or (B, n, 1), ``y`` (B, n), ``Xq`` (m,) or (m, 1) query points shared by all datasets.
    :meth:`mean_var` takes S settings (lengthscale_s, r_s) and returns arrays (S, B, m); :meth:`iter_mean_var`
    gives them in blocks (for many settings).
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
        self._buf = _Buffers()

    def smooth(self, lengthscales, r_values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Smoothed mean, variance and lag-one covariance at the sorted inputs, each (S, B, n) (the last
        covariance, which has no successor, is 0). The arrays are reused by the next call."""
        ell = np.asarray(lengthscales, dtype=float).reshape(-1)
        noise = (np.asarray(r_values, dtype=float).reshape(-1) ** 2)[:, None]
        B, n = self.x.shape
        S = ell.shape[0]
        buf = self._buf
        # transitions, step-major so that each step reads contiguous (S, B) blocks
        rho, rho2, qq = (buf(name, (n - 1, S, B)) for name in ("rho", "rho2", "qq"))
        np.divide(self.gaps.T[:, None, :], ell[None, :, None], out=rho)
        np.multiply(rho, -2.0, out=qq)
        np.expm1(qq, out=qq)
        np.negative(qq, out=qq)                                   # 1 - rho^2 without cancellation
        np.negative(rho, out=rho)
        np.exp(rho, out=rho)
        np.multiply(rho, rho, out=rho2)
        P_pred, m_f, P_f, C = (buf(name, (n, S, B)) for name in ("P_pred", "m_f", "P_f", "C"))
        mp, den, G, d = (buf(name, (S, B)) for name in ("mp", "den", "G", "d"))
        yT = self.y.T
        # forward (Kalman filter): predicted variance P_pred, filtered mean m_f and variance P_f
        mp[...] = 0.0
        P_pred[0] = 1.0
        for k in range(n):
            if k:
                np.multiply(rho[k - 1], m_f[k - 1], out=mp)
                np.multiply(rho2[k - 1], P_f[k - 1], out=P_pred[k])
                P_pred[k] += qq[k - 1]
            np.add(P_pred[k], noise, out=den)
            np.divide(P_pred[k], den, out=G)
            np.subtract(yT[k], mp, out=d)
            d *= G
            np.add(mp, d, out=m_f[k])
            np.multiply(P_pred[k], noise, out=P_f[k])
            P_f[k] /= den
        # backward (RTS smoother), in place: m_f becomes the smoothed mean, P_f the smoothed variance
        J = G
        C[n - 1] = 0.0
        for k in range(n - 2, -1, -1):
            np.multiply(rho[k], P_f[k], out=J)
            J /= P_pred[k + 1]
            np.multiply(rho[k], m_f[k], out=d)                    # predicted mean at k + 1
            np.subtract(m_f[k + 1], d, out=d)
            d *= J
            m_f[k] += d
            np.multiply(J, P_f[k + 1], out=C[k])
            P_f[k] *= qq[k]
            P_f[k] /= P_pred[k + 1]
            np.multiply(J, C[k], out=d)
            P_f[k] += d
        out = tuple(buf(name, (S, B, n)) for name in ("mu_t", "P_t", "C_t"))
        for o, a in zip(out, (m_f, P_f, C)):
            np.copyto(o, a.transpose(1, 2, 0))
        return out  # type: ignore[return-value]

    def _bridge(self, ell: float) -> tuple[np.ndarray, ...]:
        """OU bridge weights of every query, (B * m,), at one lengthscale: a, b, the residual variance and
        a^2, 2 a b, b^2."""
        dl, dr = self.dl.reshape(-1) / ell, self.dr.reshape(-1) / ell
        rl, rr = np.exp(-dl), np.exp(-dr)
        ql, qr = -np.expm1(-2.0 * dl), -np.expm1(-2.0 * dr)
        qlr = -np.expm1(-2.0 * (dl + dr))          # 1 - rho_l^2 rho_r^2 (1 with a missing neighbour)
        a, b = rl * qr / qlr, rr * ql / qlr
        return a, b, ql * qr / qlr, a * a, 2.0 * a * b, b * b

    def mean_var(self, lengthscales, r_values) -> tuple[np.ndarray, np.ndarray]:
        """mu_D and k_D at the queries for settings (lengthscales[s], r_values[s]): two arrays (S, B, m)."""
        blocks = [(lo, mean.copy(), var.copy()) for lo, mean, var in self.iter_mean_var(lengthscales, r_values)]
        return np.concatenate([b[1] for b in blocks]), np.concatenate([b[2] for b in blocks])

    def iter_mean_var(self, lengthscales, r_values, *, max_elements: int = 2**19):
        """:meth:`mean_var` in blocks of consecutive settings of one lengthscale: (first setting, mean, var),
        arrays (s, B, m) of at most about ``max_elements`` entries, valid until the next block (one smoothing
        pass serves several blocks; settings of equal lengthscale adjacent share the bridge weights)."""
        ell = np.asarray(lengthscales, dtype=float).reshape(-1)
        r = np.asarray(r_values, dtype=float).reshape(-1)
        if ell.shape != r.shape or np.any(~(ell > 0)) or np.any(~(r > 0)) or not np.all(np.isfinite(ell * r)):
            raise InvalidParameterError("settings", "equally many finite lengthscales > 0 and r > 0", (ell, r))
        B, n = self.x.shape
        per_smooth = max(1, max_elements // (n * B))
        per_query = max(1, max_elements // (self.m * B))
        for lo in range(0, ell.shape[0], per_smooth):
            block = ell[lo:lo + per_smooth]
            mu, P, C = self.smooth(block, r[lo:lo + per_smooth])
            starts = np.flatnonzero(np.diff(block, prepend=np.nan) != 0)     # runs of one lengthscale
            for run_lo, run_hi in zip(starts, np.append(starts[1:], block.size)):
                weights = self._bridge(float(block[run_lo]))
                for q_lo in range(run_lo, run_hi, per_query):
                    sl = slice(q_lo, min(run_hi, q_lo + per_query))
                    yield (lo + q_lo, *self._at_queries(weights, mu[sl], P[sl], C[sl]))

    def _at_queries(self, weights, mu: np.ndarray, P: np.ndarray, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Step 2 of the module docstring for smoothed states (s, B, n) of one lengthscale (its bridge
        ``weights``): mean and variance (s, B, m), reused by the next call."""
        a, b, ve, a2, ab2, b2 = weights
        s, B = mu.shape[0], self.x.shape[0]
        shape = (s, B * self.m)
        mean, var, tmp = (self._buf(name, shape) for name in ("mean", "var", "tmp"))

        def take(vals, idx, out):
            return np.take(vals.reshape(s, -1), idx, axis=1, out=out)

        np.multiply(take(mu, self.il, mean), a, out=mean)
        mean += np.multiply(take(mu, self.ir, tmp), b, out=tmp)
        np.multiply(take(P, self.il, var), a2, out=var)
        var += np.multiply(take(C, self.il, tmp), ab2, out=tmp)
        var += np.multiply(take(P, self.ir, tmp), b2, out=tmp)
        var += ve
        np.maximum(var, 0.0, out=var)
        return mean.reshape(s, B, self.m), var.reshape(s, B, self.m)
