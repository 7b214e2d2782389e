"""Exact joint draws of the released path at finite points, and the lazy function-valued path.

The mechanism of seed 000 (eq. 1) releases f_D ~ GP(mu_D, sigma^2 k_D); with the optional GP noise
of Prop. 2 / eq. 5 it releases f_D + g with an independent g ~ GP(0, eta^2 k). The values at any
finite set of points are therefore Gaussian with mean mu_D and covariance
sigma^2 k_D + eta^2 k, and these samplers draw exactly from that law (up to the fixed,
data-independent jitter of :mod:`privgp.models.sampling.gaussian`, which only adds variance).

Lazy evaluation (seed 000, end of sec. 2): ``path(X1)`` draws f(X1); a later ``path(X2)`` draws
f(X2) | f(X1) = returned values. By the chain rule of Gaussian conditioning the values at
X1 u X2 then have exactly the joint law of one draw evaluated at X1 u X2, so a lazily evaluated
path is the same release as one fixed path and costs no extra privacy budget.
"""
from __future__ import annotations

import threading

import numpy as np
from scipy.linalg import solve_triangular

from ... import validation as v
from ...errors import InvalidParameterError
from ..gp.posterior import ExactPosterior
from .gaussian import psd_factor


def _check_common(posterior, rng, eta):
    if not isinstance(posterior, ExactPosterior):
        raise v.InvalidParameterError("posterior", "a privgp.models.gp.ExactPosterior", type(posterior).__name__)
    return v.generator("rng", rng), v.nonnegative("eta", eta)


def _released_cov(posterior: ExactPosterior, eta: float, A, B=None) -> np.ndarray:
    """Covariance of the released process f_D + g: sigma^2 k_D(A, B) + eta^2 k(A, B)."""
    C = posterior.cov(A, B)
    if eta > 0:
        C += eta**2 * posterior.kernel(A, A if B is None else B)
    return C


def _scale(posterior: ExactPosterior, eta: float) -> float:
    return posterior.sigma**2 + eta**2


def sample_joint(posterior: ExactPosterior, Xq, L: int, rng: np.random.Generator, *,
                 eta: float = 0.0) -> np.ndarray:
    """L independent exact joint draws of the released path at the rows of Xq, shape (L, m).

    Each row is a draw of f_D(Xq) ~ N(mu_D(Xq), sigma^2 k_D(Xq, Xq)) (seed 000, eq. 1); with
    ``eta > 0`` an independent prior draw g(Xq), g ~ GP(0, eta^2 k), is added (Prop. 2, eq. 5).
    Repeated rows of Xq get identical values (they are one function evaluated twice). The
    covariance is factored by Cholesky with the jitter SAMPLING_JITTER * (sigma^2 + eta^2), with an
    eigendecomposition fallback that raises negative eigenvalues to 0 (adds variance only).
    Cost O(n m^2 + m^3).
    """
    rng, eta = _check_common(posterior, rng, eta)
    L = v.integer("L", L, minimum=1)
    Xq = v.points("Xq", Xq, dim=posterior.dim)
    uniq, inv = np.unique(Xq, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    mean = posterior.mean(uniq)
    F = psd_factor(_released_cov(posterior, eta, uniq), _scale(posterior, eta), overwrite=True)
    z = rng.standard_normal((L, uniq.shape[0]))
    draws = mean[None, :] + z @ F.T
    return draws[:, inv]


def _row_keys(X: np.ndarray) -> list[bytes]:
    X = np.ascontiguousarray(X + 0.0)  # + 0.0 maps -0.0 to 0.0 so equal points have equal keys
    return [row.tobytes() for row in X]


class LazyPath:
    """One draw of the released path, evaluated lazily (seed 000, sec. 2, "lazy evaluation").

    ``path(X1)`` returns values of a single draw at X1; a later ``path(X2)`` returns values of the
    *same* draw at X2, sampled from the exact conditional law given everything returned so far.
    Points already returned give the same values again. Internally the values are
    mean + F z with F the lower-triangular Cholesky factor of the jittered covariance of all points
    returned so far, extended block by block (block Cholesky), so the values at X1 u X2 are
    exactly one joint draw as produced by :func:`sample_joint` on X1 u X2.

    Attributes ``points`` (k, d) and ``values`` (k,) hold what has been returned (copies).

    A copy (``copy.deepcopy``, or a pickle loaded) repeats the points already returned and refuses new ones: two
    copies drawing new points from one random stream (two workers loading one pickled model) would answer one point
    twice with noise that cancels (red team 17c: the non-private mean recovered to 1e-14 with one charge), and two
    streams would be two paths. Calls from several threads are serialised (a lock), so one path is extended once.
    """

    def __init__(self, posterior: ExactPosterior, rng: np.random.Generator, *, eta: float = 0.0):
        self.rng, self.eta = _check_common(posterior, rng, eta)
        self.posterior = posterior
        d = posterior.dim
        self._points = np.zeros((0, d))
        self._values = np.zeros(0)
        self._mean = np.zeros(0)
        self._chol = np.zeros((0, 0))
        self._z = np.zeros(0)
        self._index: dict[bytes, int] = {}
        self._copy = False
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        """A pickle of this path is a copy (:meth:`__call__` answers its released points only): no lock, no stream."""
        state = dict(self.__dict__)
        state.update(_copy=True, rng=None)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict) -> LazyPath:
        import copy

        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__setstate__(copy.deepcopy(self.__getstate__(), memo))
        return new

    @property
    def points(self) -> np.ndarray:
        return self._points.copy()

    @property
    def values(self) -> np.ndarray:
        return self._values.copy()

    def __len__(self) -> int:
        return self._values.shape[0]

    def _extend(self, new: np.ndarray) -> None:
        post, eta = self.posterior, self.eta
        scale = _scale(post, eta)
        mu = post.mean(new)
        Cnn = _released_cov(post, eta, new)
        k = self._points.shape[0]
        if k == 0:
            L22 = psd_factor(Cnn, scale, triangular=True, overwrite=True)
            z = self.rng.standard_normal(new.shape[0])
            vals = mu + L22 @ z
            self._chol = L22
        else:
            Cpn = _released_cov(post, eta, self._points, new)
            W = solve_triangular(self._chol, Cpn, lower=True, check_finite=False)  # L21^T
            # Schur complement of the jittered joint matrix; psd_factor adds the jitter to the new block
            Cnn -= W.T @ W
            L22 = psd_factor(Cnn, scale, triangular=True, overwrite=True)
            z = self.rng.standard_normal(new.shape[0])
            vals = mu + W.T @ self._z + L22 @ z
            m = new.shape[0]
            chol = np.zeros((k + m, k + m))
            chol[:k, :k] = self._chol
            chol[k:, :k] = W.T
            chol[k:, k:] = L22
            self._chol = chol
        self._z = np.concatenate([self._z, z])
        self._mean = np.concatenate([self._mean, mu])
        self._values = np.concatenate([self._values, vals])
        for i, key in enumerate(_row_keys(new)):
            self._index[key] = k + i
        self._points = np.vstack([self._points, new])

    def __call__(self, Xq) -> np.ndarray:
        """Values of this path at the rows of Xq (shape (m,)), consistent with earlier calls."""
        Xq = v.points("Xq", Xq, dim=self.posterior.dim)
        uniq = np.unique(Xq, axis=0)
        with self._lock:
            new = [i for i, key in enumerate(_row_keys(uniq)) if key not in self._index]
            if new and self._copy:
                raise InvalidParameterError(
                    "Xq", "points this path has released already: a copy of a released path (copy.deepcopy, or a "
                    "pickle loaded) repeats them and draws no new ones, since two copies drawing new points from one "
                    "random stream would cancel its privacy noise; query the original, or evaluate the path on a "
                    "public grid before copying it", f"{len(new)} new point(s)")
            if new:
                self._extend(uniq[new])
            idx = np.fromiter((self._index[key] for key in _row_keys(Xq)), dtype=np.intp, count=Xq.shape[0])
            return self._values[idx].copy()

