"""Public input domains: axis-aligned boxes.

The domain Omega_X is public (seed 000, sec. 2): it is stated by the user, never derived from the
private coordinates. The privacy analysis needs its diameter (for kappa, Prop. 3).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import validation as v
from .errors import InvalidParameterError


@dataclass(frozen=True)
class Box:
    """The box [lower_1, upper_1] x ... x [lower_d, upper_d]."""

    lower: tuple[float, ...]
    upper: tuple[float, ...]

    def __post_init__(self):
        lo = tuple(float(a) for a in np.atleast_1d(self.lower))
        hi = tuple(float(b) for b in np.atleast_1d(self.upper))
        if len(lo) != len(hi) or len(lo) == 0:
            raise InvalidParameterError("domain", "lower and upper corners of equal, positive length",
                                        f"{len(lo)} and {len(hi)}")
        for i, (a, b) in enumerate(zip(lo, hi)):
            if not (math.isfinite(a) and math.isfinite(b)) or not a < b:
                raise InvalidParameterError(f"domain side {i}", "finite with lower < upper", (a, b))
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

    @classmethod
    def unit(cls, dim: int = 1) -> "Box":
        dim = v.integer("dim", dim, minimum=1)
        return cls((0.0,) * dim, (1.0,) * dim)

    @property
    def dim(self) -> int:
        return len(self.lower)

    @property
    def widths(self) -> np.ndarray:
        return np.asarray(self.upper) - np.asarray(self.lower)

    @property
    def diameter(self) -> float:
        """Largest Euclidean distance between two points of the box."""
        return float(np.sqrt(np.sum(self.widths**2)))

    def contains(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[:, None]
        lo, hi = np.asarray(self.lower), np.asarray(self.upper)
        return np.all((X >= lo) & (X <= hi), axis=-1)

    def check_contains(self, name: str, X) -> np.ndarray:
        """Return X as (m, d) points, raising if any lies outside the box."""
        X = v.points(name, X, dim=self.dim)
        inside = self.contains(X)
        if not np.all(inside):
            k = int(np.sum(~inside))
            raise InvalidParameterError(name, f"inside the public domain {self.describe()}",
                                        f"{k} of {len(X)} points outside")
        return X

    def grid(self, size: int | tuple[int, ...]) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """A regular grid including the corners: (points of shape (m, d), per-axis coordinates)."""
        sizes = (size,) * self.dim if np.isscalar(size) else tuple(size)
        if len(sizes) != self.dim:
            raise InvalidParameterError("size", f"{self.dim} grid sizes", sizes)
        axes = tuple(np.linspace(a, b, v.integer("grid size", s, minimum=2))
                     for a, b, s in zip(self.lower, self.upper, sizes))
        mesh = np.meshgrid(*axes, indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=-1), axes

    def describe(self) -> str:
        return " x ".join(f"[{a:g}, {b:g}]" for a, b in zip(self.lower, self.upper))

    def to_dict(self) -> dict:
        return {"lower": list(self.lower), "upper": list(self.upper)}


def trapezoid_weights(axes) -> np.ndarray:
    """Trapezoid-rule weights of a tensor mesh, flattened in ``Box.grid`` (C, 'ij') order.

    ``axes`` is a sequence of increasing 1-D coordinate arrays (one per dimension, each of length
    >= 2). ``sum(w * f)`` approximates the integral of f over the box spanned by the axes.
    """
    if isinstance(axes, np.ndarray) and axes.ndim == 1:
        axes = (axes,)
    ws = []
    for i, a in enumerate(axes):
        a = v.finite_array(f"axes[{i}]", a, ndim=1)
        if a.size < 2 or np.any(np.diff(a) <= 0):
            raise InvalidParameterError(f"axes[{i}]", "increasing with at least 2 points", a)
        h = np.diff(a)
        w = np.zeros(a.size)
        w[:-1] += h / 2
        w[1:] += h / 2
        ws.append(w)
    out = ws[0]
    for w in ws[1:]:
        out = np.multiply.outer(out, w)
    return out.reshape(-1)
