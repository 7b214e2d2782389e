"""Public synthetic 2-D fields with a known answer, for the utility study and the release forecast.

Each family is a fixed function f on the unit square with values in about [-1, 1], mapped onto any
public box; its excursion set is {f > 0}. Records: locations uniform over the box, responses
y = clip(f(x) + e, -1, 1) with e ~ N(0, noise^2) (model units, as after privgp's response map).
For symmetric noise E[y | x] has the sign of f(x), so {f > 0} is the excursion set every mechanism
estimates. Nothing here reads private data.

* ``bump``: one smooth bump covering about 28% of the box;
* ``blobs``: four bumps of both signs and different widths (about 30% above the threshold);
* ``rough``: a fixed draw (public seed) of a GP with the exponential kernel, lengthscale 0.25 of
  the side: a rough field with many small components.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import portable
from .. import validation as v
from ..errors import InvalidParameterError
from ..models.domain import Box

FAMILIES = ("bump", "blobs", "rough")
#: response noise std of the synthetic records (model units)
DEFAULT_NOISE = 0.5
_ROUGH_SEED = 20261125
_ROUGH_MESH = 129
#: lengthscale of the rough family (fraction of the side)
ROUGH_LENGTHSCALE = 0.25


def _bump(u: np.ndarray) -> np.ndarray:
    d2 = (u[:, 0] - 0.45) ** 2 + (u[:, 1] - 0.55) ** 2
    return 1.5 * portable.exp(-d2 / (2 * 0.22 ** 2)) - 0.6


_BLOBS = ((0.25, 0.3, 0.12, 1.4), (0.7, 0.7, 0.16, 1.3), (0.75, 0.22, 0.09, 1.5), (0.35, 0.78, 0.1, -0.8))


def _blobs(u: np.ndarray) -> np.ndarray:
    f = np.full(u.shape[0], -0.45)
    for cx, cy, w, a in _BLOBS:
        f += a * portable.exp(-((u[:, 0] - cx) ** 2 + (u[:, 1] - cy) ** 2) / (2 * w * w))
    return np.clip(f, -1.0, 1.0)


#: the rough family's table as shipped (package data, written by scripts/generate_rough_field.py)
ROUGH_TABLE = "rough_field.npy"


def draw_rough_table() -> np.ndarray:
    """The rough family's table: one exact prior draw (public seed) of the exponential-kernel GP on a
    129 x 129 mesh of the unit square, scaled and clipped to [-1, 1]. A release reads the shipped copy
    (:func:`_rough_table`; the sampler and the scipy modules it imports cost about a quarter of a second);
    tests/datasets/test_fields.py checks the copy equals this draw."""
    from ..models.kernels import make_kernel  # noqa: PLC0415
    from ..models.sampling import prior_paths  # noqa: PLC0415

    ax = np.linspace(0.0, 1.0, _ROUGH_MESH)
    path = prior_paths(make_kernel("exponential", ROUGH_LENGTHSCALE), (ax, ax), rng=np.random.default_rng(_ROUGH_SEED), L=1)[0]
    return np.clip(0.8 * path / np.max(np.abs(path)) * 1.6, -1.0, 1.0)


@lru_cache(maxsize=1)
def _rough_table() -> np.ndarray:
    from importlib import resources  # noqa: PLC0415

    with resources.files("privgp.datasets").joinpath("data", ROUGH_TABLE).open("rb") as fh:
        table = np.load(fh, allow_pickle=False)
    if table.shape != (_ROUGH_MESH, _ROUGH_MESH):
        raise InvalidParameterError("rough field table", f"shape {(_ROUGH_MESH, _ROUGH_MESH)}", table.shape)
    return table


def _rough(u: np.ndarray) -> np.ndarray:
    """The rough table interpolated bilinearly at points u of the unit square (what scipy's
    RegularGridInterpolator(method="linear") computes, up to rounding; scipy.interpolate and the scipy
    modules it imports cost a third of a second of every release's start-up)."""
    flat = _rough_table().ravel()
    m = _ROUGH_MESH - 1
    t = np.clip(u, 0.0, 1.0) * m
    i = np.minimum(t.astype(np.intp), m - 1)
    f = t - i
    f0, f1 = f[:, 0], f[:, 1]
    k = i[:, 0] * _ROUGH_MESH + i[:, 1]          # the cell's lower-left node in the flat table (fast gathers)
    low = flat.take(k) * (1.0 - f1) + flat.take(k + 1) * f1
    k += _ROUGH_MESH
    high = flat.take(k) * (1.0 - f1) + flat.take(k + 1) * f1
    return low * (1.0 - f0) + high * f0


_FUNCS = {"bump": _bump, "blobs": _blobs, "rough": _rough}


@dataclass(frozen=True)
class SyntheticField:
    """One family mapped onto a public 2-D box."""

    family: str
    domain: Box

    def __post_init__(self):
        if self.family not in _FUNCS:
            raise InvalidParameterError("family", f"one of {FAMILIES}", self.family)
        if self.domain.dim not in (1, 2):
            raise InvalidParameterError("domain", "a 1-D or 2-D box", self.domain.dim)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """The field at points X (n, d); in 1-D the section of the 2-D field at the second coordinate 0.55."""
        X = np.asarray(X, dtype=float).reshape(-1, self.domain.dim)
        u = (X - self.domain.lower) / self.domain.widths
        if self.domain.dim == 1:
            u = np.column_stack([u[:, 0], np.full(u.shape[0], 0.55)])
        return _FUNCS[self.family](u)

    def on_axes(self, axes) -> np.ndarray:
        mesh = np.meshgrid(*axes, indexing="ij")
        pts = np.stack([m.ravel() for m in mesh], axis=-1)
        return self(pts).reshape(mesh[0].shape)

    def records(self, n: int, rng: np.random.Generator, noise: float = DEFAULT_NOISE) -> tuple[np.ndarray, np.ndarray]:
        """n records: X uniform on the box, y = clip(f(X) + N(0, noise^2), -1, 1)."""
        n = v.integer("n", n, minimum=1)
        rng = v.generator("rng", rng)
        X = self.domain.lower + rng.random((n, self.domain.dim)) * self.domain.widths
        y = np.clip(self(X) + rng.normal(0.0, noise, n), -1.0, 1.0)
        return X, y
