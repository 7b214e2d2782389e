"""The one place that chooses an exact sampler for a request of posterior paths on a grid.

:func:`exact_paths` is what the release mechanisms, the excursion studies and Thompson sampling
call. The choice depends on public settings only (kernel family, dimension, grid, whether the
inputs sit on the grid lattice), never on private values, and every choice is exact:

* 1-D exponential kernel on a 1-D grid: the O(n + m) Markov sampler (:func:`exp1d_paths`);
* a regular grid in any dimension with the inputs on a lattice that refines it: circulant
  embedding + Matheron conditioning (:func:`grid_paths`, ``method="circulant"``);
* otherwise Matheron conditioning of an exact joint prior draw on grid u inputs whose grid block is
  factored once per kernel and grid (``method="matheron"``: O(m^2 n) per dataset after an O(m^3)
  factorisation shared by every dataset on that grid);
* ``method="dense"``: the joint sampler on the grid points (the m x m posterior covariance, O(m^3)).

With no inputs (n = 0) the posterior is the prior: the OU recursion for the 1-D exponential kernel,
otherwise :func:`~privgp.models.sampling.prior.prior_paths` (Kronecker, circulant embedding or dense).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import validation as v
from ..kernels import DistanceKernel, Kernel
from .exp1d import _ou_prior_paths, exp1d_paths
from .grid import SOLVERS, _check_axes, _embedding, _lattice_indices, _spacing, circulant_bytes, fallback_allowed, grid_paths
from .prior import prior_paths

METHODS = ("auto", "exp1d", "circulant", "matheron", "dense")
_F8 = 8


@dataclass(frozen=True)
class SamplerPlan:
    """What :func:`exact_paths` will do for a request, decided before anything is drawn.

    ``method``: the exact sampler; ``unknowns``: the size of the linear system it solves (distinct
    inputs / occupied lattice sites: records sharing a site enter through their count and mean);
    ``bytes``: an estimate of its peak memory (the largest arrays it allocates); ``reason``: why
    another method was not used (empty when the first choice applies); ``solver`` (circulant only):
    "cg" (the structured solve alone), "cg+cholesky" ("auto" with its dense fallback possible, which
    the estimate includes) or "cholesky"."""

    method: str
    unknowns: int
    grid_points: int
    bytes: int
    reason: str = ""
    solver: str = ""

    @property
    def gib(self) -> float:
        return self.bytes / 2**30


def plan_sampler(kernel: Kernel, X, axes, *, L: int = 1, method: str = "auto", refine: int | None = None,
                 solver: str = "auto", memory_limit: float | None = None) -> SamplerPlan:
    """Choose the sampler of :func:`exact_paths` and estimate its memory, without drawing.

    Used by the release mechanisms before any privacy budget is charged: a request that cannot run
    (circulant embedding not exact, memory above a limit) is refused while nothing has been spent.
    For the circulant sampler the estimate is that of its structured solve (no |S| x |S| matrix) when
    the Cholesky fallback cannot run (``solver="cg"``, or "auto" with a ``memory_limit`` that the
    fallback would exceed: :func:`exact_paths` with the same limit then never falls back), and includes
    the fallback's Gram matrix whenever the fallback could run (the safe estimate).
    """
    if method not in METHODS:
        raise v.InvalidParameterError("method", f"one of {METHODS}", method)
    if solver not in SOLVERS:
        raise v.InvalidParameterError("solver", f"one of {SOLVERS}", solver)
    axes = _check_axes(axes, uniform=method not in ("dense", "exp1d"))
    X = v.points("X", X, dim=len(axes))
    L = v.integer("L", L, minimum=1)
    m = int(np.prod([a.shape[0] for a in axes]))
    out_bytes = L * m * _F8
    one_d_exp = kernel.name == "exponential" and len(axes) == 1
    if method == "exp1d" or (method == "auto" and one_d_exp):
        u = int(np.unique(X[:, 0]).size)
        return SamplerPlan("exp1d", u, m, out_bytes + 12 * _F8 * L * (u + m) + 6 * _F8 * X.shape[0])
    reason = ""
    if method in ("auto", "circulant"):
        if not isinstance(kernel, DistanceKernel):
            reason = f"the circulant sampler needs a stationary distance kernel ({kernel.name} is not)"
        else:
            lattice = _lattice_indices(X, axes, refine)
            if lattice is None:
                reason = "the inputs are not on a lattice refining the grid (snap them: snap_to_lattice / --snap)"
            else:
                Rs, idx = lattice
                lo = [min(0, int(j.min())) for j in idx]
                hi = [max(R * (a.shape[0] - 1), int(j.max())) for R, a, j in zip(Rs, axes, idx)]
                sizes = tuple(h - l_ + 1 for l_, h in zip(lo, hi))
                emb = _embedding(kernel, tuple(float(_spacing(a) / R) for a, R in zip(axes, Rs)), sizes)
                if emb.ok:
                    lin = np.ravel_multi_index(tuple(j - l_ for j, l_ in zip(idx, lo)), sizes)
                    s = int(np.unique(lin).size)
                    structured, with_fallback = circulant_bytes(emb, sizes, s, X.shape[0], m, L)
                    if solver == "cg" or (solver == "auto" and not fallback_allowed(with_fallback, memory_limit)):
                        return SamplerPlan("circulant", s, m, structured, solver="cg")
                    return SamplerPlan("circulant", s, m, with_fallback,
                                       solver="cg+cholesky" if solver == "auto" else "cholesky")
                reason = ("the circulant embedding of this kernel on this grid is not positive semidefinite even "
                          "with 16x padding (not exact)")
        if method == "circulant":
            raise v.InvalidParameterError("method", "'matheron', 'dense' or 'auto' here: " + reason, method)
    u = int(np.unique(X, axis=0).shape[0])
    if method in ("auto", "matheron"):
        # the cached grid prior factor (m x m), k(G, X) and L_GG^-1 k(G, X) (m x u each), n x n systems, paths
        est = m * m * _F8 + 3 * m * u * _F8 + 3 * u * u * _F8 + 3 * out_bytes
        return SamplerPlan("matheron", u, m, est, reason)
    est = 2 * u * u * _F8 + 3 * m * m * _F8 + 2 * u * m * _F8 + 2 * out_bytes
    return SamplerPlan("dense", u, m, est, reason)


def exact_paths(kernel: Kernel, X, y, axes, *, r: float, sigma: float, rng: np.random.Generator, L: int = 1,
                eta: float = 0.0, method: str = "auto", refine: int | None = None, solver: str = "auto",
                memory_limit: float | None = None) -> np.ndarray:
    """L exact posterior paths of GP(mu_D, sigma^2 k_D) (+ GP(0, eta^2 k) noise, seed 000 Prop. 2) on
    the grid spanned by ``axes`` (a sequence of 1-D coordinate arrays): shape (L, *grid shape).
    X with zero rows (and an empty y) gives prior paths.

    ``method``: "auto" (see the module docstring), or one sampler by name ("exp1d" needs the
    exponential kernel in 1-D; "matheron" and "dense" take any grid; "circulant" needs the inputs on
    the lattice, see
    :func:`~privgp.models.sampling.snap_to_lattice`). ``solver``, ``memory_limit``: the circulant sampler's
    linear solver and the limit that rules its Cholesky fallback in or out (:func:`grid_paths`;
    pass the limit given to :func:`plan_sampler` so that its estimate holds)."""
    if method not in METHODS:
        raise v.InvalidParameterError("method", f"one of {METHODS}", method)
    if isinstance(axes, np.ndarray) and axes.ndim == 1:
        axes = (axes,)
    axes = tuple(np.asarray(a, dtype=float) for a in axes)
    one_d_exp = kernel.name == "exponential" and len(axes) == 1
    X = v.points("X", X, dim=len(axes), allow_empty=True)
    if X.shape[0] == 0:  # no data: the posterior is the prior GP(0, (sigma^2 + eta^2) k) (r plays no role)
        if np.asarray(y).size:
            raise v.InvalidParameterError("y", "empty when X has no rows", np.shape(y))
        sigma, eta = v.positive("sigma", sigma), v.nonnegative("eta", eta)
        rng, L = v.generator("rng", rng), v.integer("L", L, minimum=1)
        scale = float(np.sqrt(sigma * sigma + eta * eta))
        if method == "exp1d" or (method == "auto" and one_d_exp):
            if not one_d_exp:
                raise v.InvalidParameterError("method", "'exp1d' only for the exponential kernel on a 1-D grid",
                                              f"{kernel.name} kernel on a {len(axes)}-D grid")
            # the Ornstein-Uhlenbeck recursion at any sorted distinct 1-D points (exact, O(m))
            assert isinstance(kernel, DistanceKernel)       # the exponential kernel is one
            t, inv = np.unique(v.finite_array("axes[0]", axes[0], ndim=1), return_inverse=True)
            return scale * _ou_prior_paths(t, rng.standard_normal((L, t.shape[0])), kernel.lengthscale)[:, inv.reshape(-1)]
        prior_method = "auto" if method in ("auto", "matheron") else method  # matheron: nothing to condition on
        return prior_paths(kernel, axes, rng=rng, L=L, scale=scale, method=prior_method)
    if method == "exp1d" or (method == "auto" and one_d_exp):
        if not one_d_exp:
            raise v.InvalidParameterError("method", "'exp1d' only for the exponential kernel on a 1-D grid",
                                          f"{kernel.name} kernel on a {len(axes)}-D grid")
        X = v.points("X", X, dim=1)
        assert isinstance(kernel, DistanceKernel)           # the exponential kernel is one
        paths = exp1d_paths(X[:, 0], y, axes[0], lengthscale=kernel.lengthscale, r=r, sigma=sigma, rng=rng,
                            L=L, eta=eta)
        return np.asarray(paths).reshape((L, axes[0].shape[0]))
    return grid_paths(kernel, X, y, axes, r=r, sigma=sigma, rng=rng, L=L, eta=eta,
                      method="auto" if method == "auto" else method, refine=refine, solver=solver,
                      memory_limit=memory_limit)
