"""Normalised stationary kernels with sup_x k(x, x) = 1 (seed 000, sec. 2).

Each kernel is a small frozen dataclass with ``__call__`` giving the Gram matrix, and exposes what
the privacy analysis needs (Prop. 3 of seed 000, App. B):

* ``kappa(domain)``: kappa = inf_{x, x' in Omega_X} k(x, x'). For kernels that decrease with
  distance this is k at the domain's diameter.
* ``nonnegative``: whether k >= 0 everywhere.
* ``unit_diagonal``: whether k(x, x) = 1 for every x (then V_n = V̄_n exactly, Prop. 3).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..errors import InvalidParameterError
from .domain import Box

#: a float kappa within this of 1 is computed from the gap 1 - kappa instead (:meth:`DistanceKernel.kappa`)
KAPPA_DIRECT_GAP = 2.0 ** -20


def _series_gap(s: float, coefficient: Callable[[int], float]) -> float:
    """sum_{k >= 2} coefficient(k) s^k for 0 <= s < 0.5 (the gap of a Matérn profile near 0, where 1 - profile
    cancels); terms to k = 40 (the last below 1e-30 of the first)."""
    if not 0.0 <= s < 0.5:
        raise ValueError(f"_series_gap: s = {s} outside [0, 0.5)")
    return float(sum(coefficient(k) * s ** k for k in range(40, 1, -1)))   # smallest terms first


def _as_points(X: ArrayLike) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    return X


#: Blocks of at least this many distances per batch member are computed by cdist one by one.
_CDIST_LOOP_MIN = 10_000


def pairwise_distances(X1: ArrayLike, X2: ArrayLike, *, out: np.ndarray | None = None) -> np.ndarray:
    """Euclidean distances; batched over leading axes: (..., m, d) x (..., n, d) -> (..., m, n).
    ``out``: a C-contiguous array of the result's shape to write into (reused memory for repeated
    large blocks)."""
    X1, X2 = _as_points(X1), _as_points(X2)
    if X1.shape[-1] != X2.shape[-1]:
        raise InvalidParameterError("points", "of equal dimension", (X1.shape[-1], X2.shape[-1]))
    batch = np.broadcast_shapes(X1.shape[:-2], X2.shape[:-2])
    m, n = X1.shape[-2], X2.shape[-2]
    if out is not None and (out.shape != batch + (m, n) or not out.flags.c_contiguous):
        raise InvalidParameterError("out", f"a C-contiguous array of shape {batch + (m, n)}", out.shape)
    if X1.shape[-1] == 1:
        res = np.abs(X1[..., :, None, 0] - X2[..., None, :, 0])
    elif batch == () or m * n >= _CDIST_LOOP_MIN:
        # one block, or few large batch members: cdist on each (no (m, n) temporaries; ~2.5x faster
        # than the accumulation below for a 6400 x 400 block)
        from scipy.spatial.distance import cdist  # here: scipy.spatial costs an import of its own

        res = np.empty(batch + (m, n)) if out is None else out
        A = np.broadcast_to(X1, batch + X1.shape[-2:]).reshape(-1, m, X1.shape[-1])
        B = np.broadcast_to(X2, batch + X2.shape[-2:]).reshape(-1, n, X2.shape[-1])
        flat = res.reshape(-1, m, n)
        for i in range(A.shape[0]):
            cdist(A[i], B[i], out=flat[i])
        return res
    else:
        # many small members: accumulate squared coordinate differences (same values as cdist; ~5x
        # faster than materialising the (..., m, n, d) difference array and reducing it with einsum)
        res = X1[..., :, None, 0] - X2[..., None, :, 0]
        res *= res
        for k in range(1, X1.shape[-1]):
            t = X1[..., :, None, k] - X2[..., None, :, k]
            t *= t
            res += t
        np.sqrt(res, out=res)
    if out is None:
        return res
    np.copyto(out, res)
    return out


@dataclass(frozen=True)
class Kernel:
    """Base class. Subclasses define :meth:`gram`."""

    name: ClassVar[str] = "kernel"
    nonnegative: ClassVar[bool] = True
    unit_diagonal: ClassVar[bool] = True
    stationary: ClassVar[bool] = True

    def __call__(self, X1: ArrayLike, X2: ArrayLike | None = None) -> np.ndarray:
        """Gram matrix k(X1, X2); X2 defaults to X1. Batched over leading axes."""
        return self.gram(X1, X1 if X2 is None else X2)

    def gram(self, X1: ArrayLike, X2: ArrayLike) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def diag(self, X: ArrayLike) -> np.ndarray:
        """k(x, x) for each row of X (shape (..., m))."""
        X = _as_points(X)
        return np.ones(X.shape[:-1])

    def kappa(self, domain: Box) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> dict:
        return {"kernel": self.name}


#: a scaled distance beyond which every distance kernel's profile is exactly 0 in float64 (exp(-s) underflows to 0
#: beyond s = 745.2); profiles cap their argument here so that no polynomial factor overflows to inf (inf * 0 = NaN)
PROFILE_CUTOFF = 1e3


def _capped(s: Any) -> Any:
    """``s`` with its entries above :data:`PROFILE_CUTOFF` lowered to it (in place for an array of one or more
    dimensions, which the callers own)."""
    if isinstance(s, np.ndarray) and s.ndim:
        return np.minimum(s, PROFILE_CUTOFF, out=s)
    return np.minimum(s, PROFILE_CUTOFF)


@dataclass(frozen=True)
class DistanceKernel(Kernel):
    """k(x, x') = profile(|x - x'| / lengthscale), decreasing in distance, profile(0) = 1."""

    lengthscale: float = 1.0

    def __post_init__(self):
        # within v.SCALE_RANGE: with the box's corners within +-1e100, distances in lengthscales stay finite (a
        # lengthscale of 1e-300 made them inf, and the Matern kernels' values NaN: red team 26)
        object.__setattr__(self, "lengthscale", v.scale("lengthscale", self.lengthscale))

    def profile(self, d: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def gram(self, X1: ArrayLike, X2: ArrayLike) -> np.ndarray:
        return self.profile(pairwise_distances(X1, X2) / self.lengthscale)

    def of_distance(self, dist: ArrayLike, out: np.ndarray | None = None) -> np.ndarray:
        """k at the given distances (the Gram matrix from a distance matrix computed once and reused
        for several lengthscales); ``out``: an array of dist's shape to write into."""
        vals = self.profile(np.asarray(dist, dtype=float) / self.lengthscale)
        if out is None:
            return vals
        out[...] = vals
        return out

    def kappa(self, domain: Box) -> float:
        """inf k over the box = k at the box's diameter (k decreases with distance), as :meth:`kappa_at` gives it."""
        return float(self.kappa_at(np.asarray(domain.diameter / self.lengthscale)))

    def kappa_at(self, d: ArrayLike) -> np.ndarray:
        """profile(d) as kappa (inf k over a domain of diameter d lengthscales), never above the exact value where
        it matters: V̄_n of Prop. 3 depends on 1 - kappa, which a float kappa within 2^-20 of 1 cannot carry (at a
        lengthscale of 10^9 over the unit square it rounded to exactly 1, and the certified epsilon fell by orders
        of magnitude, red team 18). There kappa comes from the gap 1 - profile computed directly
        (:meth:`profile_gap`), widened by 1e-14 relative and rounded down; elsewhere the float value is kept (the
        numbers of existing certificates; its absolute error, about 1e-16, is at most 2.3e-10 of the gap there)."""
        d = np.asarray(d, dtype=float)
        k = np.asarray(self.profile(d), dtype=float)
        near = k > 1.0 - KAPPA_DIRECT_GAP
        if v.any_true(near):
            k = k.copy()
            gaps = np.array([self.profile_gap(float(x)) for x in d[near]]) * (1.0 + 1e-14)
            k[near] = np.where(gaps < 1.0, np.nextafter(1.0 - gaps, 0.0), 0.0)
        return k

    def profile_gap(self, d: float) -> float:
        """1 - profile(d) for a small d >= 0, to a few ulp (no cancellation)."""
        raise NotImplementedError(f"{type(self).__name__}.profile_gap")

    def describe(self) -> dict:
        return {"kernel": self.name, "lengthscale": self.lengthscale}


@dataclass(frozen=True)
class Exponential(DistanceKernel):
    """Exponential (Matérn-1/2) kernel k = exp(-|x - x'| / l)."""

    name: ClassVar[str] = "exponential"

    def profile(self, d: np.ndarray) -> np.ndarray:
        return np.exp(-d)

    def profile_gap(self, d: float) -> float:
        return -math.expm1(-d)

    def of_distance(self, dist: ArrayLike, out: np.ndarray | None = None) -> np.ndarray:
        """exp(-dist / l), in place into ``out`` when given (same values as :meth:`gram`)."""
        dist = np.asarray(dist, dtype=float)
        if out is None:
            return np.exp(-(dist / self.lengthscale))
        np.divide(dist, -self.lengthscale, out=out)  # x / (-l) == -(x / l) exactly: one pass fewer
        return np.exp(out, out=out)


@dataclass(frozen=True)
class Matern32(DistanceKernel):
    """Matérn-3/2 kernel k = (1 + sqrt(3) d) exp(-sqrt(3) d), d = |x - x'| / l."""

    name: ClassVar[str] = "matern32"

    def profile(self, d: np.ndarray) -> np.ndarray:
        s = math.sqrt(3.0) * d
        return (1.0 + s) * np.exp(-s)

    def profile_gap(self, d: float) -> float:
        # 1 - (1 + s) e^-s = sum_{k >= 2} (-1)^k (k - 1) s^k / k!
        return _series_gap(math.sqrt(3.0) * d, lambda k: (-1) ** k * (k - 1) / math.factorial(k))


@dataclass(frozen=True)
class Matern52(DistanceKernel):
    """Matérn-5/2 kernel k = (1 + sqrt(5) d + 5 d^2 / 3) exp(-sqrt(5) d)."""

    name: ClassVar[str] = "matern52"

    def profile(self, d: np.ndarray) -> np.ndarray:
        # s capped at PROFILE_CUTOFF, where exp(-s) is already exactly 0: the same values, and no s * s = inf
        # times 0 = NaN for distances beyond 1e154 lengthscales (red team 26)
        s = _capped(math.sqrt(5.0) * d)
        return (1.0 + s + s * s / 3.0) * np.exp(-s)

    def profile_gap(self, d: float) -> float:
        # 1 - (1 + s + s^2/3) e^-s = -sum_{k >= 2} c_k s^k, c_k = (-1)^k (1/k! - 1/(k-1)! + 1/(3 (k-2)!))
        return _series_gap(math.sqrt(5.0) * d, lambda k: -(-1) ** k * (1 / math.factorial(k) - 1 / math.factorial(k - 1)
                                                                     + 1 / (3 * math.factorial(k - 2))))


@dataclass(frozen=True)
class SquaredExponential(DistanceKernel):
    """Squared-exponential (RBF) kernel k = exp(-d^2 / 2)."""

    name: ClassVar[str] = "squared_exponential"

    def profile(self, d: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):   # d * d = inf beyond 1.3e154 lengthscales gives exp(-inf) = 0, correctly
            return np.exp(-0.5 * d * d)

    def profile_gap(self, d: float) -> float:
        return -math.expm1(-0.5 * d * d)


@dataclass(frozen=True)
class Constant(Kernel):
    """The constant kernel k = 1 (Lemma B.4)."""

    name: ClassVar[str] = "constant"

    def gram(self, X1: ArrayLike, X2: ArrayLike) -> np.ndarray:
        X1, X2 = _as_points(X1), _as_points(X2)
        return np.ones(np.broadcast_shapes(X1.shape[:-2], X2.shape[:-2]) + (X1.shape[-2], X2.shape[-2]))

    def kappa(self, domain: Box) -> float:
        return 1.0


@dataclass(frozen=True)
class Diagonal(Kernel):
    """The purely diagonal kernel k(x, x') = q 1{x = x'} with 0 < q <= 1 (Lemma B.5).

    Not continuous; kappa = 0 on any box with more than one point. ``unit_diagonal`` holds only for
    q = 1 (an instance attribute shadows the class default).
    """

    name: ClassVar[str] = "diagonal"
    q: float = 1.0

    def __post_init__(self):
        q = v.positive("q", self.q)
        if q > 1:
            raise InvalidParameterError("q", "in (0, 1] (normalised kernel)", q)
        object.__setattr__(self, "q", q)

    @property
    def unit_diagonal(self) -> bool:  # type: ignore[override]
        return self.q == 1.0

    def gram(self, X1: ArrayLike, X2: ArrayLike) -> np.ndarray:
        X1, X2 = _as_points(X1), _as_points(X2)
        same = np.all(X1[..., :, None, :] == X2[..., None, :, :], axis=-1)
        return self.q * same.astype(float)

    def diag(self, X: ArrayLike) -> np.ndarray:
        X = _as_points(X)
        return np.full(X.shape[:-1], self.q)

    def kappa(self, domain: Box) -> float:
        return 0.0

    def describe(self) -> dict:
        return {"kernel": self.name, "q": self.q}


KERNELS: dict[str, type[DistanceKernel]] = {
    cls.name: cls for cls in (Exponential, Matern32, Matern52, SquaredExponential)
}


def make_kernel(name: str, lengthscale: float | None = None) -> Kernel:
    """Build a kernel by name: exponential, matern32, matern52, squared_exponential, constant, diagonal."""
    if name in KERNELS:
        if lengthscale is None:
            raise InvalidParameterError("lengthscale", f"given for the {name} kernel", None)
        return KERNELS[name](lengthscale)
    if name == "constant":
        return Constant()
    if name == "diagonal":
        return Diagonal()
    raise InvalidParameterError("kernel", f"one of {sorted(list(KERNELS) + ['constant', 'diagonal'])}", name)
