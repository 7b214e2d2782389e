"""Exact draws of a zero-mean prior GP(0, scale^2 k) on a public grid: the noise of the functional
mechanism and of DPSetConv (seed 002, Thm 4.1 / Alg. 3, App. B).

The privacy guarantee of those mechanisms needs the noise to be a draw of the GP with the kernel
that defines the sensitivity, so every method here is exact, up to the fixed, data-independent
jitter of :mod:`privgp.models.sampling.gaussian`, which only ever *adds* variance (a covariance
K + P with P positive semidefinite is a Gaussian of covariance K plus independent noise:
post-processing, the guarantee is kept). No rank truncation, float64 throughout.

* ``"kronecker"`` (separable kernels: the squared exponential): seed 002, App. B, Prop. B.1 /
  Alg. 4. On a tensor grid the Gram matrix is the Kronecker product of the per-axis Gram
  matrices K_d; with L_d L_d^T = K_d + j I (Cholesky, jitter j) the draw
  f = (L_1 (x) ... (x) L_D) z has covariance (x)_d (K_d + j I) = K + (positive semidefinite).
  Cost O(sum_d N_d^3) once per (kernel, axis) (cached: the grid is public) and
  O(sum_d N_d prod_d N_d) per draw.
* ``"circulant"`` (stationary distance kernels on a regular grid): circulant embedding as in
  :mod:`privgp.models.sampling.grid` (exact when the embedding is positive semidefinite up to round-off).
* ``"dense"``: :func:`privgp.models.sampling.sample_joint` of the prior (:meth:`ExactPosterior.prior`)
  on the grid points, O(m^3).

``"auto"`` picks kronecker for the squared exponential, else circulant when it is exact, else
dense. The choice depends on public settings only.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ... import validation as v
from ..gp.posterior import ExactPosterior
from ..kernels import DistanceKernel, Kernel, SquaredExponential
from .gaussian import psd_factor
from .grid import _check_axes, _Embedding, _embedding, _spacing
from .joint import sample_joint

PRIOR_METHODS = ("auto", "kronecker", "circulant", "dense")


@lru_cache(maxsize=64)
def _axis_factor(kernel: Kernel, axis: tuple[float, ...]) -> np.ndarray:
    """Lower-triangular F with F F^T = k(axis, axis) + j I (+ repair), read-only (shared by the cache)."""
    a = np.asarray(axis, dtype=float)[:, None]
    F = psd_factor(kernel(a), 1.0, triangular=True, overwrite=True)
    F.setflags(write=False)
    return F


def _grid_embedding(kernel: DistanceKernel, axes) -> _Embedding:
    return _embedding(kernel, tuple(float(_spacing(a)) for a in axes), tuple(int(a.shape[0]) for a in axes))


def _kronecker(kernel: SquaredExponential, axes, rng, L) -> np.ndarray:
    one_d = SquaredExponential(kernel.lengthscale)
    z = rng.standard_normal((L,) + tuple(a.shape[0] for a in axes))
    for d, a in enumerate(axes):
        F = _axis_factor(one_d, tuple(float(t) for t in a))
        z = np.moveaxis(np.tensordot(F, z, axes=([1], [d + 1])), 0, d + 1)  # matvec along axis d (eq. 48)
    return z


def _circulant(kernel: DistanceKernel, axes, rng, L) -> np.ndarray:
    emb = _grid_embedding(kernel, axes)
    half = (L + 1) // 2
    Z = rng.standard_normal((half,) + emb.M) + 1j * rng.standard_normal((half,) + emb.M)
    return emb.fields(Z)[:L]


def _resolve(kernel: Kernel, axes, method: str) -> str:
    if method == "kronecker" or (method == "auto" and isinstance(kernel, SquaredExponential)):
        if not isinstance(kernel, SquaredExponential):
            raise v.InvalidParameterError("method", "'kronecker' only for the separable squared exponential kernel",
                                          kernel.name)
        return "kronecker"
    uniform = all(np.max(np.abs(np.diff(a) - _spacing(a))) <= 1e-9 * _spacing(a) for a in axes)
    if method in ("auto", "circulant") and isinstance(kernel, DistanceKernel) and uniform:
        if _grid_embedding(kernel, axes).ok:
            return "circulant"
    if method == "circulant":
        raise v.InvalidParameterError("method", "'dense' or 'auto' here: the circulant embedding is not exact "
                                      "for this kernel and grid", method)
    return "dense"


def plan_prior_sampler(kernel: Kernel, axes, *, L: int = 1, method: str = "auto"):
    """The method :func:`prior_paths` will use and an estimate of its peak memory, without drawing
    (a :class:`privgp.models.sampling.SamplerPlan`; ``unknowns`` = 0: nothing is conditioned). Mechanisms
    call it from public settings before any budget is charged."""
    from .paths import SamplerPlan

    if method not in PRIOR_METHODS:
        raise v.InvalidParameterError("method", f"one of {PRIOR_METHODS}", method)
    L = v.integer("L", L, minimum=1)
    axes = _check_axes(axes, uniform=method == "circulant")
    sizes = [a.shape[0] for a in axes]
    m = int(np.prod(sizes))
    out = 2 * L * m * 8
    how = _resolve(kernel, axes, method)
    if how == "kronecker":
        return SamplerPlan("kronecker", 0, m, out + sum(3 * n * n * 8 for n in sizes))
    if how == "circulant":
        assert isinstance(kernel, DistanceKernel)      # _resolve chooses "circulant" only for these
        torus = int(np.prod(_grid_embedding(kernel, axes).M))
        return SamplerPlan("circulant", 0, m, out + 4 * 16 * torus * ((L + 1) // 2))
    return SamplerPlan("dense", 0, m, out + 3 * m * m * 8)


def prior_covariance(kernel: Kernel, axes, *, method: str = "auto") -> np.ndarray:
    """The covariance (scale 1) that :func:`prior_paths` with the same ``method`` actually draws from on
    the grid (m x m, C order): k(G, G) plus whatever positive semidefinite jitter / repair the method
    adds. For audits of the exact law of a release (small grids only)."""
    if method not in PRIOR_METHODS:
        raise v.InvalidParameterError("method", f"one of {PRIOR_METHODS}", method)
    axes = _check_axes(axes, uniform=method == "circulant")
    how = _resolve(kernel, axes, method)
    if how == "kronecker":
        assert isinstance(kernel, SquaredExponential)  # _resolve chooses "kronecker" only for it
        one_d = SquaredExponential(kernel.lengthscale)
        out = np.ones((1, 1))
        for a in axes:
            F = _axis_factor(one_d, tuple(float(t) for t in a))
            out = np.kron(out, F @ F.T)
        return out
    if how == "circulant":
        assert isinstance(kernel, DistanceKernel)
        emb = _grid_embedding(kernel, axes)
        first = np.fft.ifftn(np.maximum(emb.lam, 0.0)).real          # the first row of the (raised) torus covariance
        idx = np.stack([g.ravel() for g in np.meshgrid(*[np.arange(a.shape[0]) for a in axes], indexing="ij")], -1)
        lag = tuple(np.mod(idx[:, None, d] - idx[None, :, d], emb.M[d]) for d in range(len(axes)))
        return first[lag]
    mesh = np.meshgrid(*axes, indexing="ij")
    G = np.stack([m.ravel() for m in mesh], axis=-1)
    F = psd_factor(kernel(G), 1.0)
    return F @ F.T


def prior_paths(kernel: Kernel, axes, *, rng: np.random.Generator, L: int = 1, scale: float = 1.0,
                method: str = "auto") -> np.ndarray:
    """L independent exact draws of GP(0, scale^2 k) on the tensor grid ``axes`` (a sequence of 1-D
    coordinate arrays): shape (L, len(axes[0]), ...). See the module docstring for the methods."""
    if method not in PRIOR_METHODS:
        raise v.InvalidParameterError("method", f"one of {PRIOR_METHODS}", method)
    rng = v.generator("rng", rng)
    L = v.integer("L", L, minimum=1)
    scale = v.positive("scale", scale)
    axes = _check_axes(axes, uniform=method == "circulant")
    shape = tuple(a.shape[0] for a in axes)
    how = _resolve(kernel, axes, method)
    if how == "kronecker":
        assert isinstance(kernel, SquaredExponential)  # _resolve chooses "kronecker" only for it
        return scale * _kronecker(kernel, axes, rng, L)
    if how == "circulant":
        assert isinstance(kernel, DistanceKernel)      # and "circulant" only for distance kernels
        return scale * _circulant(kernel, axes, rng, L)
    prior = ExactPosterior.prior(kernel, len(axes), r=1.0, sigma=scale)
    mesh = np.meshgrid(*axes, indexing="ij")
    G = np.stack([m.ravel() for m in mesh], axis=-1)
    return sample_joint(prior, G, L, rng).reshape((L,) + shape)
