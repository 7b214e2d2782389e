"""The clipped integrated BCE of the excursion search at a few ns per mesh point (seed 000, App. D).

The hyperparameter search evaluates sum_x w(x) clip(-log Phi(u(x) / sigma), lo, hi) for every candidate
sigma on every pair and mesh point (:func:`privgp.tasks.excursion.bce_from_margin`, with the margin u of
:func:`~privgp.tasks.excursion.standardized_margin` and lo = -log(1 - clip), hi = -log(clip)). scipy's
``log_ndtr`` costs ~20 ns a value; here -log Phi is assembled from SIMD numpy passes:

    Phi(-a) = exp(-a^2 / 2) h(a),   h(a) = Phi(-a) / (sqrt(2 pi) phi(a)) = erfcx(a / sqrt 2) / 2   (a >= 0),
    -log Phi(z) = a^2 / 2 - log h(a)                      for z = -a < 0,
    -log Phi(z) = -log1p(-exp(log h(a) - a^2 / 2))        for z = a >= 0 (no cancellation for small values),

with h, smooth and positive on [0, Z_MAX], given by one degree-13 polynomial in t = 1 / (1 + a / 5)
(the Chebyshev interpolant of scipy's erfcx on [0, Z_MAX], fitted once per process). Beyond the clip's
crossings z_sure = -z_wrong (:func:`privgp.tasks.excursion._clipped_beyond`) the value is decided by the
clip, so |z| is first clamped to z_sure and every result is clipped to [lo, hi]: the values stay within
the bounds the private search's sensitivity relies on. Each value is within 1e-13 relative of
clip(-log_ndtr(z), lo, hi) (about 1e-14 in practice; checked on a dense grid when the polynomial is built
and in tests/tasks/test_fast_bce.py), far below the ~1e-12 rounding of the posterior variances the
margins come from. Clips whose crossing lies beyond Z_MAX (clip < ~8e-7, or no clip) use
:func:`~privgp.tasks.excursion.bce_from_margin`.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numpy.polynomial import chebyshev
from scipy.special import erfcx, log_ndtr

from ..errors import InvalidParameterError
from . import excursion as ex

#: |z| range of the polynomial (clips down to ~8e-7, the default 1e-6 among them, have their crossings inside it)
Z_MAX = 4.8
_DEGREE = 13
_C = 0.2           # t = 1 / (1 + _C a): the map that makes h nearly polynomial
_TOLERANCE = 1e-13
_SQRT_2, _SQRT_HALF = math.sqrt(2.0), math.sqrt(0.5)
#: values per block of :meth:`ClippedBCE._sum` (its four buffers, 128 KiB each, fit a 1 MiB L2 cache)
_BLOCK = 16_384


@functools.lru_cache(maxsize=1)
def _h_polynomial() -> tuple[np.ndarray, float, float]:
    """Monomial coefficients of h in s = alpha t + beta in [-1, 1] (t in [1 / (1 + _C Z_MAX), 1]),
    alpha and beta; checked against scipy's log_ndtr on a dense grid of [-Z_MAX, Z_MAX]."""
    t0 = 1.0 / (1.0 + _C * Z_MAX)
    nodes = np.cos(np.pi * (np.arange(64) + 0.5) / 64)
    t = t0 + (nodes + 1.0) / 2.0 * (1.0 - t0)
    a = (1.0 / t - 1.0) / _C
    coef = chebyshev.cheb2poly(chebyshev.chebfit(nodes, 0.5 * erfcx(a / math.sqrt(2.0)), _DEGREE))
    alpha = 2.0 / (1.0 - t0)
    beta = -1.0 - alpha * t0
    z = np.linspace(-Z_MAX, Z_MAX, 20_001)
    got = _log_ndtr(np.abs(z)[None], z[None] >= 0, 1.0, (coef, alpha, beta), Z_MAX, _Workspace()((1, z.size)))[0]
    err = float(np.max(np.abs(got / log_ndtr(z) - 1.0)))
    if not err <= _TOLERANCE:
        raise AssertionError(f"the -log Phi polynomial is off by {err:.1e} (relative)")  # pragma: no cover
    return coef, alpha, beta


class _Workspace:
    """Four buffers of one block shape, carved from flat arrays that are kept and only grow (fresh arrays of
    this size cost page faults on every call)."""

    def __init__(self):
        self._flat = np.empty((4, 0))

    def __call__(self, shape) -> _Workspace:
        size = math.prod(shape)
        if self._flat.shape[1] < size:
            self._flat = np.empty((4, size))
        self.a, self.s, self.h, self.e = (buf[:size].reshape(shape) for buf in self._flat)
        return self


def _log_ndtr(abs_u: np.ndarray, pos: np.ndarray, inv_sigma, poly, z_clamp: float, ws: _Workspace) -> np.ndarray:
    """log Phi(z) for z = +-|u| / sigma (sign + where ``pos``), with |z| clamped to ``z_clamp`` <= Z_MAX;
    written into ``ws.h`` (returned). Both branches are computed everywhere (masked ufunc loops are slow
    on scattered masks) and the z >= 0 one is copied in."""
    coef, alpha, beta = poly
    a, s, h, e = ws.a, ws.s, ws.h, ws.e
    np.multiply(abs_u, inv_sigma * _SQRT_HALF, out=a)          # a = |z| / sqrt 2: a^2 = z^2 / 2
    np.clip(a, 0.0, z_clamp * _SQRT_HALF, out=a)               # NaN stays NaN
    np.multiply(a, _C * _SQRT_2, out=s)
    s += 1.0
    np.divide(alpha, s, out=s)
    s += beta                                                  # s = alpha t + beta
    np.multiply(s, coef[-1], out=h)
    h += coef[-2]
    for c in coef[-3::-1]:                                     # Horner
        h *= s
        h += c
    np.log(h, out=h)
    np.multiply(a, a, out=a)
    h -= a                                                     # log Phi(-|z|)
    np.exp(h, out=e)
    np.negative(e, out=e)
    np.log1p(e, out=e)                                         # log Phi(|z|)
    np.copyto(h, e, where=pos)
    return h


class ClippedBCE:
    """sum_x w(x) clip(-log Phi(u(x) / sigma), lo, hi) for several sigma at once (see the module docstring).

    ``clip`` as in :func:`~privgp.tasks.excursion.bce_from_margin`. Buffers are kept between calls (the
    search calls it once per setting)."""

    def __init__(self, clip: float = ex.BCE_CLIP):
        clip = float(clip)
        if not 0.0 <= clip < 0.5:
            raise InvalidParameterError("clip", "in [0, 0.5)", clip)
        self.clip = clip
        self.fast = clip > 0 and ex._clipped_beyond(clip)[0] <= Z_MAX
        if self.fast:
            self.lo, self.hi = -math.log1p(-clip), -math.log(clip)
            self.z_clamp = ex._clipped_beyond(clip)[0]          # = -z_wrong
            self.poly = _h_polynomial()
        self._ws = _Workspace()

    def __call__(self, margin, sigmas, weights) -> np.ndarray:
        """:func:`~privgp.tasks.excursion.bce_from_margin` of ``margin`` (b, m) for each of ``sigmas`` (k,),
        ``weights`` (m,): shape (k, b)."""
        margin = np.asarray(margin, dtype=float)
        sigmas = np.asarray(sigmas, dtype=float).reshape(-1)
        if not self.fast or not np.all(sigmas > 0):
            return ex.bce_from_margin(margin[None], sigmas[:, None], weights, clip=self.clip)
        return self._sum(np.abs(margin), margin >= 0, sigmas, weights)

    def of_posterior(self, labels, mean, var, sigmas, weights, t: float = 0.0) -> np.ndarray:
        """:func:`~privgp.tasks.excursion.integrated_bce` of the posterior mean and normalised variance
        (b, m) for each of ``sigmas`` (k,): shape (k, b); |u| and the sign of the standardized margin u
        are formed directly (zero variance: |u| = inf, as there)."""
        sigmas = np.asarray(sigmas, dtype=float).reshape(-1)
        if not self.fast or not np.all(sigmas > 0):
            return ex.integrated_bce(labels, mean, var, sigmas[:, None], weights, t=t, clip=self.clip)
        signed = np.where(np.asarray(labels, dtype=bool), 1.0, -1.0)
        signed *= np.asarray(mean, dtype=float) - t                    # sign(label) (mu_D - t)
        sd = np.sqrt(np.maximum(np.asarray(var, dtype=float), 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            abs_u = np.abs(signed) / sd
        zero = sd == 0
        if zero.any():
            abs_u[zero] = np.inf
        return self._sum(abs_u, signed >= 0, sigmas, weights)

    def _sum(self, abs_u: np.ndarray, pos: np.ndarray, sigmas: np.ndarray, weights) -> np.ndarray:
        """One sigma and at most _BLOCK values at a time: the buffers stay in the L2 cache."""
        b, m = abs_u.shape
        w = np.asarray(weights, dtype=float)
        out = np.empty((sigmas.size, b))
        rows = max(1, _BLOCK // max(1, m))
        for lo in range(0, b, rows):
            sl = slice(lo, lo + rows)
            ws = self._ws(abs_u[sl].shape)
            for i, sigma in enumerate(sigmas.tolist()):
                g = _log_ndtr(abs_u[sl], pos[sl], 1.0 / sigma, self.poly, self.z_clamp, ws)
                np.clip(g, -self.hi, -self.lo, out=g)                 # log Phi, clipped to [log clip, log(1 - clip)]
                out[i, sl] = g @ w
        return np.negative(out, out=out)
