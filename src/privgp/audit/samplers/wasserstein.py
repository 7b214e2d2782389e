"""Seed 004, Theorem 2 (sec. 5, App. E): what a 2-Wasserstein bound plus Lipschitz densities says
about the densities themselves, computed exactly for univariate Gaussian mixtures (the laws of cyclic
SGLD and the exact posteriors of the linear-regression counterexample, :mod:`.sgld_model`).

Theorem 2 (d = 1, vol_1(r) = 2 r): if W_2(P, Q) < eps^2 and both densities are L-Lipschitz, then for
every lam > eps and every x

    p_lam(x) <= R q_lam(x) + A,   R = lam / (lam - eps),   A = (R - 1) 2 lam L + eps / (2 (lam - eps)),

where p_lam(x) = (F_P(x + lam) - F_P(x - lam)) / (2 lam) is the density averaged over the ball
[x - lam, x + lam]. This module computes every ingredient exactly (to quadrature accuracy):

* :func:`w2` -- W_2 = (int_0^1 (F_P^-1(u) - F_Q^-1(u))^2 du)^(1/2), closed form for two Gaussians,
  otherwise Gauss-Legendre in z with u = Phi(z) and quantiles by bisection on the cdf (the survival
  function in the upper half, so the tails keep their precision);
* :func:`lipschitz` -- sup_x |p'(x)| (closed form 1 / (s^2 sqrt(2 pi e)) for a Gaussian; a dense grid
  refined by bounded minimisation for a mixture);
* :func:`theorem2` -- R and A for a given lam, and the exact sup_x (p_lam(x) - R q_lam(x)) that A bounds.

The hypothesis is a strict inequality; :func:`theorem2` uses eps = sqrt(W_2) itself, the limit of the
bound as eps decreases to sqrt(W_2) (the bound is continuous in eps).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import ndtr

from ... import validation as v
from ...accounting.mixtures import Mixture1D
from ...errors import InvalidParameterError

_SQRT_2PI_E = math.sqrt(2.0 * math.pi * math.e)


def _check(name: str, m: object) -> Mixture1D:
    if not isinstance(m, Mixture1D):
        raise InvalidParameterError(name, "a privgp.accounting.mixtures.Mixture1D", type(m).__name__)
    return m


def _weights(m: Mixture1D) -> np.ndarray:
    return np.full(m.size, 1.0 / m.size) if m.weights is None else m.weights


def cdf(m: Mixture1D, x) -> np.ndarray:
    """F(x), vectorised over x."""
    x = np.asarray(x, dtype=float)
    return (_weights(m) * ndtr((x[..., None] - m.means) / m.sds)).sum(-1)


def sf(m: Mixture1D, x) -> np.ndarray:
    """1 - F(x) as a sum of upper tails, vectorised over x."""
    x = np.asarray(x, dtype=float)
    return (_weights(m) * ndtr((m.means - x[..., None]) / m.sds)).sum(-1)


def pdf(m: Mixture1D, x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    z = (x[..., None] - m.means) / m.sds
    return (_weights(m) * np.exp(-0.5 * z * z) / (m.sds * math.sqrt(2 * math.pi))).sum(-1)


def dpdf(m: Mixture1D, x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    z = (x[..., None] - m.means) / m.sds
    return (-_weights(m) * z * np.exp(-0.5 * z * z) / (m.sds ** 2 * math.sqrt(2 * math.pi))).sum(-1)


def ball_average(m: Mixture1D, x, lam: float) -> np.ndarray:
    """p_lam(x) = P([x - lam, x + lam]) / (2 lam), the density averaged over the 1-D ball of radius lam."""
    lam = v.positive("lam", lam)
    x = np.asarray(x, dtype=float)
    lo, hi = x - lam, x + lam
    # the mass of [lo, hi] per component, as a difference of lower or of upper tails (whichever is small)
    za = (lo[..., None] - m.means) / m.sds
    zb = (hi[..., None] - m.means) / m.sds
    mass = np.where(za > 0, ndtr(-za) - ndtr(-zb), ndtr(zb) - ndtr(za))
    return (_weights(m) * np.maximum(mass, 0.0)).sum(-1) / (2.0 * lam)


def quantile(m: Mixture1D, z) -> np.ndarray:
    """F^-1(Phi(z)) for standard-normal scores z (the quantile of level u = Phi(z), tails kept exact):
    bisection (200 halvings) on the cdf for z <= 0 and on the survival function for z > 0."""
    z = np.asarray(z, dtype=float)
    lo = np.full(z.shape, float(np.min(m.means - 40.0 * m.sds)))
    hi = np.full(z.shape, float(np.max(m.means + 40.0 * m.sds)))
    upper = z > 0
    target = np.where(upper, ndtr(-z), ndtr(z))
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.all(mid == lo) or np.all(mid == hi):
            break
        below = np.empty(z.shape, dtype=bool)                               # the quantile is above mid
        below[upper] = sf(m, mid[upper]) > target[upper]
        below[~upper] = cdf(m, mid[~upper]) < target[~upper]
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def w2(P: Mixture1D, Q: Mixture1D, *, nodes: int = 400, z_max: float = 10.0) -> float:
    """The 2-Wasserstein distance W_2(P, Q) of two univariate Gaussian mixtures.

    Two Gaussians: sqrt((m_P - m_Q)^2 + (s_P - s_Q)^2). Otherwise W_2^2 = int phi(z) (F_P^-1(Phi(z)) -
    F_Q^-1(Phi(z)))^2 dz by Gauss-Legendre on [-z_max, z_max] (the mass outside, 2 Phi(-z_max), is
    1.5e-23 at the default)."""
    P, Q = _check("P", P), _check("Q", Q)
    if P.size == 1 and Q.size == 1:
        return math.hypot(float(P.means[0] - Q.means[0]), float(P.sds[0] - Q.sds[0]))
    t, w = np.polynomial.legendre.leggauss(v.integer("nodes", nodes, minimum=8))
    z = z_max * t
    d = quantile(P, z) - quantile(Q, z)
    return math.sqrt(float(np.sum(z_max * w * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * d * d)))


def lipschitz(m: Mixture1D, *, points_per_sd: int = 64) -> float:
    """sup_x |p'(x)|: 1 / (s^2 sqrt(2 pi e)) for a Gaussian (attained at mean +- s); for a mixture a grid
    of ``points_per_sd`` points per smallest sd over the components' +-8 sd, then bounded minimisation
    of -|p'| around the best few grid points."""
    m = _check("m", m)
    if m.size == 1:
        return 1.0 / (float(m.sds[0]) ** 2 * _SQRT_2PI_E)
    lo, hi = float(np.min(m.means - 8 * m.sds)), float(np.max(m.means + 8 * m.sds))
    h = float(m.sds.min()) / points_per_sd
    x = np.linspace(lo, hi, int(min(2e6, math.ceil((hi - lo) / h))) + 1)
    g = np.abs(dpdf(m, x))
    best = float(g.max())
    for i in np.argsort(g)[-8:]:
        a, b = x[max(i - 1, 0)], x[min(i + 1, len(x) - 1)]
        r = minimize_scalar(lambda s: -abs(float(dpdf(m, s))), bounds=(a, b), method="bounded",
                            options={"xatol": 1e-12 * max(1.0, abs(a))})
        best = max(best, -float(r.fun))
    return best


@dataclass(frozen=True)
class Theorem2:
    """Theorem 2 at one radius lam (d = 1): the bound p_lam <= R q_lam + A, and the exact values.

    ``excess`` = sup_x (p_lam(x) - R q_lam(x)), what A bounds (the theorem holds iff excess <= A);
    ``peak`` = sup_x p_lam(x): with A >= peak the bound says nothing about any x (vacuous)."""

    lam: float
    eps: float
    lipschitz: float
    R: float
    A: float
    excess: float
    peak: float

    @property
    def holds(self) -> bool:
        return self.excess <= self.A * (1 + 1e-9)

    @property
    def vacuous(self) -> bool:
        return self.A >= self.peak


def theorem2(P: Mixture1D, Q: Mixture1D, lam: float, *, eps: float | None = None,
             lipschitz_constant: float | None = None, points_per_scale: int = 16) -> Theorem2:
    """Theorem 2's R and A for P, Q at radius lam (eps defaults to sqrt(W_2(P, Q)), L to the larger
    Lipschitz constant), and the exact sup_x (p_lam - R q_lam) and sup_x p_lam: grids around both laws
    (+-10 sd widened by lam, ``points_per_scale`` points per min(lam, smallest sd), at most 5e4 points
    each), refined by bounded minimisation around the best points."""
    P, Q = _check("P", P), _check("Q", Q)
    eps = math.sqrt(w2(P, Q)) if eps is None else v.positive("eps", eps)
    if not lam > eps:
        raise InvalidParameterError("lam", f"> eps = {eps!r} (Theorem 2 needs lam > eps)", lam)
    L = max(lipschitz(P), lipschitz(Q)) if lipschitz_constant is None else float(lipschitz_constant)
    R = lam / (lam - eps)
    A = (R - 1.0) * 2.0 * lam * L + eps / (2.0 * (lam - eps))
    # a grid around each law (its components' means +- 10 of its largest sd, widened by lam), spacing
    # min(lam, its smallest sd) / points_per_scale, at most 5e4 points per law
    parts = []
    for m in (P, Q):
        lo, hi = float(np.min(m.means) - 10 * m.sds.max() - lam), float(np.max(m.means) + 10 * m.sds.max() + lam)
        h = min(lam, float(m.sds.min())) / points_per_scale
        parts.append(np.linspace(lo, hi, int(min(5e4, math.ceil((hi - lo) / h))) + 1))
    x = np.unique(np.concatenate(parts))

    def sup(f) -> float:
        vals = f(x)
        best = float(vals.max())
        for i in np.argsort(vals)[-4:]:
            a, b = x[max(i - 1, 0)], x[min(i + 1, len(x) - 1)]
            r = minimize_scalar(lambda s: -float(f(np.array([s]))[0]), bounds=(a, b), method="bounded",
                                options={"xatol": 1e-13 * max(1.0, abs(a))})
            best = max(best, -float(r.fun))
        return best

    # p_lam - R q_lam tends to 0 as |x| -> inf, so its supremum over the line is at least 0
    excess = max(0.0, sup(lambda s: ball_average(P, s, lam) - R * ball_average(Q, s, lam)))
    peak = sup(lambda s: ball_average(P, s, lam))
    return Theorem2(lam=float(lam), eps=float(eps), lipschitz=float(L), R=float(R), A=float(A), excess=excess,
                    peak=peak)
