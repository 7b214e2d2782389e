"""Public input domains: axis-aligned boxes.

The domain Omega_X is public (seed 000, sec. 2): it is stated by the user, never derived from the
private coordinates. The privacy analysis needs its diameter (for kappa, Prop. 3).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..errors import InvalidParameterError

#: the largest |corner| and the smallest side a :class:`Box` accepts: squared distances between its points, and
#: the kernels' scaled distances, stay finite and normal in double precision
COORDINATE_MAX = 1e100
WIDTH_MIN = 1e-100


def _floats(which: str, corner: Any) -> tuple[float, ...]:
    """A corner's coordinates as floats (a scalar is a 1-D corner), each checked to be a real number."""
    if type(corner) is tuple and all(type(a) is float for a in corner):
        return corner   # the common case (plain floats, as a Box's own corners are), checked by the types alone
    return tuple(v.real(f"domain {which} corner {i}", a) for i, a in enumerate(_corner(corner)))


def _corner(corner: Any) -> list[Any]:
    """A corner's coordinates as a list of scalars (a scalar is a 1-D corner), without converting them."""
    arr = np.atleast_1d(np.asarray(corner, dtype=object))
    if arr.ndim != 1:
        raise InvalidParameterError("domain", "corners given as flat sequences of numbers", f"ndim {arr.ndim}")
    return list(arr)


@dataclass(frozen=True)
class Box:
    """The box [lower_1, upper_1] x ... x [lower_d, upper_d]."""

    lower: tuple[float, ...]
    upper: tuple[float, ...]

    def __post_init__(self):
        # each corner coordinate is a real number: booleans, strings and complex numbers are refused, not converted
        # (True became 1.0 and "0" became 0.0 silently: red team 26)
        lo, hi = _floats("lower", self.lower), _floats("upper", self.upper)
        if len(lo) != len(hi) or len(lo) == 0:
            raise InvalidParameterError("domain", "lower and upper corners of equal, positive length",
                                        f"{len(lo)} and {len(hi)}")
        for i, (a, b) in enumerate(zip(lo, hi)):
            if not (math.isfinite(a) and math.isfinite(b)) or not a < b:
                raise InvalidParameterError(f"domain side {i}", "finite with lower < upper", (a, b))
            if max(abs(a), abs(b)) > COORDINATE_MAX or not b - a >= WIDTH_MIN:
                raise InvalidParameterError(f"domain side {i}", f"corners within +-{COORDINATE_MAX:g} and a width of at "
                                            f"least {WIDTH_MIN:g} (squared distances finite and normal in double "
                                            "precision; rescale the coordinates)", (a, b))
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

    @classmethod
    def unit(cls, dim: int = 1) -> Box:
        dim = v.integer("dim", dim, minimum=1)
        return cls((0.0,) * dim, (1.0,) * dim)

    @property
    def dim(self) -> int:
        return len(self.lower)

    @property
    def widths(self) -> np.ndarray:
        return np.asarray(self.upper) - np.asarray(self.lower)

    @cached_property
    def diameter(self) -> float:
        """Largest Euclidean distance between two points of the box (computed once per box; the box is frozen)."""
        return float(np.sqrt(np.sum(self.widths**2)))

    def contains(self, X: ArrayLike) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[:, None]
        lo, hi = np.asarray(self.lower), np.asarray(self.upper)
        return np.all((X >= lo) & (X <= hi), axis=-1)

    def check_contains(self, name: str, X: ArrayLike) -> np.ndarray:
        """Return X as (m, d) points, raising if any lies outside the box."""
        X = v.points(name, X, dim=self.dim)
        lo, hi = np.asarray(self.lower), np.asarray(self.upper)
        # per-column extremes decide (a column's min/max is one pass; X.min(axis=0) of an (n, 2) array is 30x slower)
        if X.shape[0] and not all(lo[j] <= X[:, j].min() and X[:, j].max() <= hi[j] for j in range(X.shape[1])):
            out = ~self.contains(X)   # the count and the first one, for the message (the data holder's own rows)
            first = int(np.argmax(out))
            where = ", ".join(f"{c:g}" for c in X[first])
            raise InvalidParameterError(name, f"inside the public domain {self.describe()}",
                                        f"{int(out.sum())} of {len(X)} points outside, the first at data row {first + 1} "
                                        f"({where})")
        return X

    def grid(self, size: int | Sequence[int]) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """A regular grid including the corners: (points of shape (m, d), per-axis coordinates)."""
        axes = self.grid_axes(size)
        return mesh_points(axes), axes

    def grid_axes(self, size: int | Sequence[int]) -> tuple[np.ndarray, ...]:
        """The per-axis coordinates of :meth:`grid` (``size`` points per axis, corners included), without its
        points."""
        sizes = tuple(size) if isinstance(size, (Sequence, np.ndarray)) else (size,) * self.dim
        if len(sizes) != self.dim:
            raise InvalidParameterError("size", f"{self.dim} grid sizes", sizes)
        return tuple(np.linspace(a, b, v.integer("grid size", s, minimum=2))
                     for a, b, s in zip(self.lower, self.upper, sizes))

    def describe(self) -> str:
        """The box in 6 significant digits (the words of certificates and mechanism labels, which verify compares:
        kept as earlier privgp wrote them; :meth:`exact_text` states it exactly)."""
        return " x ".join(f"[{a:g}, {b:g}]" for a, b in zip(self.lower, self.upper))

    def exact_text(self) -> str:
        """The box with every bound exactly as given ("[500000.5, 500999.5] x [4312345, 4312678]")."""
        from ..formatting import exact_number

        return " x ".join(f"[{exact_number(a)}, {exact_number(b)}]" for a, b in zip(self.lower, self.upper))

    def to_dict(self) -> dict:
        return {"lower": list(self.lower), "upper": list(self.upper)}


def mesh_points(axes: Sequence[np.ndarray]) -> np.ndarray:
    """The points (m, d) of the regular grid with these per-axis coordinates, in 'ij' order (the last axis
    fastest)."""
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=-1)


def trapezoid_weights(axes: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
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


@dataclass(frozen=True)
class PublicGrid:
    """A regular tensor grid fixed from public numbers only (never from the private data).

    Axis k has ``sizes[k]`` equally spaced points from ``lower[k]`` to ``upper[k]`` (both included).
    Mechanisms that release functions on a grid (the functional mechanism, DPSetConv) take the grid
    as an explicit argument of this type: a grid fitted to the private inputs (e.g. spanning their
    minimum and maximum) would itself leak them (seed 002, App. F and Alg. 3; docs/notes/seed002_dpconvcnp.md, sec. 2.2 / 7.3).
    """

    lower: tuple[float, ...]
    upper: tuple[float, ...]
    sizes: tuple[int, ...]

    def __post_init__(self):
        box = Box(self.lower, self.upper)  # validates the corners
        sizes = tuple(v.integer("grid size", s, minimum=2) for s in np.atleast_1d(np.asarray(self.sizes)).tolist())
        if len(sizes) != box.dim:
            raise InvalidParameterError("grid sizes", f"{box.dim} sizes (one per axis)", sizes)
        object.__setattr__(self, "lower", box.lower)
        object.__setattr__(self, "upper", box.upper)
        object.__setattr__(self, "sizes", sizes)

    @classmethod
    def regular(cls, lower: ArrayLike, upper: ArrayLike, sizes: ArrayLike) -> PublicGrid:
        """sizes[k] points from lower[k] to upper[k]; scalars mean 1-D (or the same size on every axis)."""
        lo = tuple(np.atleast_1d(np.asarray(lower, dtype=float)).tolist())
        hi = tuple(np.atleast_1d(np.asarray(upper, dtype=float)).tolist())
        s = np.atleast_1d(np.asarray(sizes)).tolist()
        return cls(lo, hi, tuple(s * len(lo) if len(s) == 1 else s))

    @classmethod
    def on_box(cls, box: Box, sizes: ArrayLike) -> PublicGrid:
        """The regular grid over a public box, corners included."""
        return cls.regular(box.lower, box.upper, sizes)

    @classmethod
    def convcnp_window(cls, xmin: ArrayLike, xmax: ArrayLike, *, points_per_unit: float = 32.0, margin: float = 0.0,
                       power_of_two: bool = True) -> PublicGrid:
        """The ConvCNP discretisation of a fixed public window (seed 002, App. F; the authors' make_grids):
        per axis M = ceil((0.5 (xmax - xmin) + margin) ppu), rounded down to a power of two, and the
        2M points mid + j / ppu, j = -M .. M - 1, mid = (xmin + xmax) / 2. E.g. [-7, 7], margin 2,
        32 points per unit: 512 points on [-8, 8 - 1/32]."""
        lo = np.atleast_1d(np.asarray(xmin, dtype=float))
        hi = np.atleast_1d(np.asarray(xmax, dtype=float))
        ppu = v.positive("points_per_unit", points_per_unit)
        margin = v.nonnegative("margin", margin)
        Box(tuple(lo.tolist()), tuple(hi.tolist()))
        lower, upper, sizes = [], [], []
        for a, b in zip(lo, hi):
            M = int(np.ceil((0.5 * (b - a) + margin) * ppu))
            if power_of_two:
                M = 2 ** int(np.floor(np.log2(M)))
            mid = 0.5 * (a + b)
            lower.append(mid - M / ppu)
            upper.append(mid + (M - 1) / ppu)
            sizes.append(2 * M)
        return cls(tuple(lower), tuple(upper), tuple(sizes))

    @property
    def dim(self) -> int:
        return len(self.sizes)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.sizes

    @property
    def size(self) -> int:
        return int(np.prod(self.sizes))

    def axes(self) -> tuple[np.ndarray, ...]:
        return tuple(np.linspace(a, b, m) for a, b, m in zip(self.lower, self.upper, self.sizes))

    def points(self) -> np.ndarray:
        """The grid points, shape (size, dim), in C ('ij') order of ``shape``."""
        mesh = np.meshgrid(*self.axes(), indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=-1)

    def check_not_fitted_to(self, name: str, X: ArrayLike, public_box: Box | None = None) -> None:
        """Tripwire: refuse a grid whose every axis spans exactly [min, max] of the private inputs X
        (the typical grid computed from the data). A public grid passes unless the data happen to sit
        exactly on both ends of every axis; a grid spanning exactly the declared ``public_box`` always
        passes (it is as public as the box, even when the data reach the box's corners, e.g. after
        snapping to its lattice). The check cannot prove that a grid is public."""
        if public_box is not None and self.lower == public_box.lower and self.upper == public_box.upper:
            return
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[:, None]
        if X.shape[0] < 2 or X.shape[1] != self.dim:
            return
        lo, hi = X.min(axis=0), X.max(axis=0)
        tol = 1e-12 * np.maximum(1.0, np.abs(np.asarray(self.upper) - np.asarray(self.lower)))
        if np.all(np.abs(lo - np.asarray(self.lower)) <= tol) and np.all(np.abs(hi - np.asarray(self.upper)) <= tol):
            raise InvalidParameterError("grid", f"public (fixed before seeing the data), not fitted to the range of "
                                        f"the private {name}", f"a grid spanning exactly [min, max] of the {name}")

    def describe(self) -> str:
        return " x ".join(f"[{a:g}, {b:g}] ({m} pts)" for a, b, m in zip(self.lower, self.upper, self.sizes))

    def to_dict(self) -> dict:
        return {"lower": list(self.lower), "upper": list(self.upper), "sizes": list(self.sizes)}


def cell_index(domain: Box, cells: tuple[int, ...], X: np.ndarray) -> np.ndarray:
    """Flat index of the cell holding each point (the upper edge belongs to the last cell)."""
    idx = np.zeros(X.shape[0], dtype=np.int64)
    for j, (lo, w, c) in enumerate(zip(domain.lower, domain.widths, cells)):
        k = np.floor((X[:, j] - lo) / w * c).astype(np.int64)
        np.clip(k, 0, c - 1, out=k)
        idx = idx * c + k
    return idx


@dataclass(frozen=True)
class CellGrid:
    """The rule that maps a record to its cell of a regular grid of ``cells`` over ``domain`` (public), as a
    linear index (:func:`cell_index`): what a one-pass reduction of records to per-cell statistics needs.
    Every such rule has ``size`` and ``index(X)`` (e.g. :class:`privgp.models.sampling.grid.LatticeSites`)."""

    domain: Box
    cells: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.cells))

    def index(self, X: np.ndarray) -> np.ndarray:
        return cell_index(self.domain, self.cells, X)
