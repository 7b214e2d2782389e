"""Exact O(n + m) posterior paths for the 1-D exponential kernel (Ornstein-Uhlenbeck process).

With k(x, x') = exp(-|x - x'| / l) the prior g ~ GP(0, k) is a stationary Ornstein-Uhlenbeck
process, a Markov process with exact transition

    g(t') | g(t) ~ N(rho g(t), 1 - rho^2),   rho = exp(-(t' - t) / l),  t < t'.

The seed-000 posterior GP(mu_D, sigma^2 k_D) (sec. 2) is the posterior of f = sigma g observed as
y_i = f(x_i) + noise of variance sigma^2 r^2. Why the sampler below is exact:

1. Duplicate inputs are collapsed: the n_k responses at a repeated input x_k are replaced by their
   mean with noise variance r^2 / n_k (the mean is a sufficient statistic; proof of Lemma B.6).
   This gives the same posterior, not an approximation.
2. Kalman filtering over the sorted distinct inputs gives the exact filtering laws
   g(x_k) | y_{1..k}; backward sampling (forward filtering, backward sampling) then draws the
   values at all distinct inputs from their exact joint posterior. Only the exact transition above
   is used; 1 - rho^2 is computed with expm1, so near-duplicate inputs are harmless.
3. Given the values at the inputs, the observations carry no further information, so the values
   at the query points follow the *prior* conditional law given g at the inputs. By the Markov
   property a query in the gap (x_k, x_{k+1}) depends only on g(x_k) and g(x_{k+1}) (an OU bridge);
   it is drawn by pathwise (Matheron) conditioning of an exact prior OU path h sampled on the
   merged sorted points:  g(q) = h(q) + a(q) (g(x_k) - h(x_k)) + b(q) (g(x_{k+1}) - h(x_{k+1}))
   with the bridge weights a, b = E[h(q) | h(x_k), h(x_{k+1})] coefficients.
4. The optional GP noise g' ~ GP(0, eta^2 k) (seed 000, Prop. 2) is an independent exact OU path.

All recursions are linear recurrences x_i = a_i x_{i-1} + b_i evaluated with a vectorised
log-step (Hillis-Steele) scan; the only Python loop is the scalar variance (Riccati) recursion
over the n distinct inputs.
"""
from __future__ import annotations

import numpy as np

from ... import validation as v


def linear_recurrence(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x_0 = b_0, x_i = a_i x_{i-1} + b_i along the last axis (a shared: shape (N,); b: (..., N)).

    Log-step (Hillis-Steele) prefix scan of the affine maps x -> a_i x + b_i: ceil(log2 N)
    vectorised passes. Products of the a_i only shrink (|a_i| <= 1 here) so nothing overflows;
    the scan stops early once every remaining product has underflowed to 0.
    """
    x = np.array(b, dtype=float, copy=True)
    N = x.shape[-1]
    if N <= 1:
        return x
    A = np.array(a, dtype=float, copy=True)
    A[0] = 0.0
    s = 1
    while s < N:
        x[..., s:] += A[s:] * x[..., :-s]
        A[s:] = A[s:] * A[:-s]
        s *= 2
        if s < N and not np.any(A[s:]):
            break
    return x


def _ou_prior_paths(t: np.ndarray, z: np.ndarray, ell: float) -> np.ndarray:
    """Exact stationary OU paths with unit variance at the sorted distinct points t, from normals z (..., N)."""
    dt = np.diff(t) / ell
    a = np.concatenate([[0.0], np.exp(-dt)])
    s = np.concatenate([[1.0], np.sqrt(-np.expm1(-2.0 * dt))])
    return linear_recurrence(a, z * s)


def _ffbs_coefficients(xb: np.ndarray, obs: np.ndarray, noise: np.ndarray, ell: float):
    """Kalman filter for the unit OU process observed at sorted distinct xb with noise variances.

    Returns (J, c, sd, m_last, sd_last): backward-sampling recursion
    g_k = J_k g_{k+1} + c_k + sd_k z_k for k = N-2..0, and g_{N-1} ~ N(m_last, sd_last^2).
    """
    N = xb.shape[0]
    dt = np.diff(xb) / ell
    rho = np.exp(-dt)
    q = -np.expm1(-2.0 * dt)  # 1 - rho^2, accurate for tiny gaps
    # Riccati recursion for the predicted (Pm) and filtered (P) variances: scalar, sequential.
    Pm = np.empty(N)
    P = np.empty(N)
    rho_l, q_l, s_l = rho.tolist(), q.tolist(), noise.tolist()
    pm = p = 1.0
    Pm_l = [0.0] * N
    P_l = [0.0] * N
    for k in range(N):
        if k:
            pm = rho_l[k - 1] ** 2 * p + q_l[k - 1]
        s = s_l[k]
        p = pm * s / (pm + s)
        Pm_l[k] = pm
        P_l[k] = p
    Pm[:] = Pm_l
    P[:] = P_l
    # Filtered means: m_k = (1 - G_k) rho_k m_{k-1} + G_k obs_k, a linear recurrence.
    G = Pm / (Pm + noise)
    one_minus_G = noise / (Pm + noise)
    a = np.concatenate([[0.0], one_minus_G[1:] * rho])
    m = linear_recurrence(a, G * obs)
    # Backward sampling: g_k | g_{k+1}, y_{1..k} ~ N(m_k + J_k (g_{k+1} - rho_{k+1} m_k), P_k q_{k+1} / Pm_{k+1}).
    J = rho * P[:-1] / Pm[1:]
    c = m[:-1] * (q / Pm[1:])  # m_k (1 - J_k rho_{k+1})
    sd = np.sqrt(P[:-1] * q / Pm[1:])
    return J, c, sd, m[-1], np.sqrt(P[-1])


def exp1d_paths(X, y, Xq, *, lengthscale: float, r: float, sigma: float, rng: np.random.Generator,
                L: int = 1, eta: float = 0.0) -> np.ndarray:
    """L exact posterior paths of the 1-D exponential-kernel GP at the query points Xq: (L, m).

    Same law as :func:`privgp.models.sampling.sample_joint` with ``ExactPosterior(Exponential(l), X, y, r,
    sigma)`` (without its jitter), in O((n + m) log(n + m)) time and O(L (n + m)) memory.
    ``eta > 0`` adds an independent prior path of GP(0, eta^2 k) (seed 000, Prop. 2).
    """
    ell = v.positive("lengthscale", lengthscale)
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma)
    eta = v.nonnegative("eta", eta)
    rng = v.generator("rng", rng)
    L = v.integer("L", L, minimum=1)
    x = v.points("X", X, dim=1)[:, 0]
    yv = v.responses("y", y, x.shape[0])
    q = v.points("Xq", Xq, dim=1)[:, 0]

    # 1. collapse duplicate inputs (sufficient statistic: mean response, ridge r^2 / n_k)
    xb, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    obs = np.bincount(inv.reshape(-1), weights=yv, minlength=xb.shape[0]) / counts / sigma
    noise = r**2 / counts
    qu, qinv = np.unique(q, return_inverse=True)
    plan = _Exp1dPlan(xb, obs, noise, qu, ell)
    normals = [rng.standard_normal((L, size)) for size in plan.normal_sizes(eta > 0)]
    return plan.paths(normals, sigma, eta)[:, qinv.reshape(-1)]


class _Exp1dPlan:
    """Everything about one (inputs, responses, queries) problem that does not depend on the normals.

    ``paths(normals, sigma, eta)`` is an affine map of the standard normals (so its law can be
    checked exactly by feeding unit vectors); ``normal_sizes`` says how many normals it needs.
    """

    def __init__(self, xb, obs, noise, qu, ell):
        self.xb, self.qu, self.ell = xb, qu, ell
        N = xb.shape[0]
        self.N = N
        # 2. Kalman filter coefficients for the backward sampling recursion (deterministic)
        self.J, self.c, self.sd, self.m_last, self.sd_last = _ffbs_coefficients(xb, obs, noise, ell)
        # 3. queries: on an input, or free (bridged between the neighbouring inputs)
        pos = np.searchsorted(xb, qu, side="left")  # number of inputs strictly left of each query
        self.on_data = (pos < N) & (xb[np.minimum(pos, N - 1)] == qu)
        self.pos = pos
        free = ~self.on_data
        qf, pf = qu[free], pos[free]
        Mf = qf.shape[0]
        self.Mf = Mf
        # merge the sorted distinct inputs and the free queries without a full sort
        self.idx_q = pf + np.arange(Mf)
        self.idx_d = np.arange(N) + np.searchsorted(qf, xb, side="left")
        t = np.empty(N + Mf)
        t[self.idx_q] = qf
        t[self.idx_d] = xb
        self.t = t
        left = pf - 1  # index of the input left of each free query (-1: none)
        has_l, has_r = left >= 0, pf < N
        self.li, self.ri = np.maximum(left, 0), np.minimum(pf, N - 1)
        dl = np.where(has_l, (qf - xb[self.li]) / ell, np.inf)
        dr = np.where(has_r, (xb[self.ri] - qf) / ell, np.inf)
        rl, rr = np.exp(-dl), np.exp(-dr)
        both = has_l & has_r
        # OU bridge weights E[h(q) | h(x_k), h(x_{k+1})] = a h(x_k) + b h(x_{k+1}):
        # a = rl (1 - rr^2) / (1 - rho^2), b = rr (1 - rl^2) / (1 - rho^2), rho = rl rr;
        # one-sided (exterior) queries: a = rl or b = rr.
        ql, qr = -np.expm1(-2.0 * dl), -np.expm1(-2.0 * dr)
        qlr = np.where(both, -np.expm1(-2.0 * np.where(both, dl + dr, 1.0)), 1.0)
        self.wa = np.where(both, rl * qr / qlr, rl)
        self.wb = np.where(both, rr * ql / qlr, rr)

    def normal_sizes(self, with_eta: bool) -> list[int]:
        sizes = [self.N, self.N + self.Mf if self.Mf else 0]
        return sizes + ([self.qu.shape[0]] if with_eta else [])

    def paths(self, normals, sigma: float, eta: float) -> np.ndarray:
        """Paths at the sorted distinct queries from the normals (list of (L, size) arrays)."""
        zd, zh = normals[0], normals[1]
        L, N = zd.shape[0], self.N
        # exact joint posterior draw at the distinct inputs: backward recursion run in reverse order
        b_rev = np.empty((L, N))
        b_rev[:, 0] = self.m_last + self.sd_last * zd[:, -1]
        b_rev[:, 1:] = (self.c + self.sd * zd[:, :-1])[:, ::-1]
        g_data = linear_recurrence(np.concatenate([[0.0], self.J[::-1]]), b_rev)[:, ::-1]
        g_q = np.empty((L, self.qu.shape[0]))
        g_q[:, self.on_data] = g_data[:, self.pos[self.on_data]]
        if self.Mf:
            # exact prior OU path on the merged points, then the OU bridge correction (Matheron)
            h = _ou_prior_paths(self.t, zh, self.ell)
            resid = g_data - h[:, self.idx_d]
            g_q[:, ~self.on_data] = h[:, self.idx_q] + self.wa * resid[:, self.li] + self.wb * resid[:, self.ri]
        f = sigma * g_q
        # 4. optional independent GP noise eta * OU prior path (seed 000, Prop. 2)
        if eta > 0:
            f = f + eta * _ou_prior_paths(self.qu, normals[2], self.ell)
        return f
