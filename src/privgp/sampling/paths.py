"""The one place that chooses an exact sampler for a request of posterior paths on a grid.

:func:`exact_paths` is what the release mechanisms, the excursion studies and Thompson sampling
call. The choice depends on public settings only (kernel family, dimension, grid, whether the
inputs sit on the grid lattice), never on private values, and every choice is exact:

* 1-D exponential kernel on a 1-D grid: the O(n + m) Markov sampler (:func:`exp1d_paths`);
* a regular grid in any dimension with the inputs on a lattice that refines it: circulant
  embedding + Matheron conditioning (:func:`grid_paths`, ``method="circulant"``);
* otherwise the dense joint sampler on the grid points (O(m^3); ``method="dense"``).

With no inputs (n = 0) the posterior is the prior: :func:`~privgp.sampling.prior.prior_paths` with the
same choice of sampler (OU recursion, circulant embedding or dense).
"""
from __future__ import annotations

import numpy as np

from .. import validation as v
from ..kernels import Kernel
from .exp1d import exp1d_paths
from .grid import grid_paths
from .prior import prior_paths

METHODS = ("auto", "exp1d", "circulant", "dense")


def exact_paths(kernel: Kernel, X, y, axes, *, r: float, sigma: float, rng: np.random.Generator, L: int = 1,
                eta: float = 0.0, method: str = "auto", refine: int | None = None) -> np.ndarray:
    """L exact posterior paths of GP(mu_D, sigma^2 k_D) (+ GP(0, eta^2 k) noise, seed 000 Prop. 2) on
    the grid spanned by ``axes`` (a sequence of 1-D coordinate arrays): shape (L, *grid shape).
    X with zero rows (and an empty y) gives prior paths.

    ``method``: "auto" (see the module docstring), or one sampler by name ("exp1d" needs the
    exponential kernel in 1-D; "circulant" needs the inputs on the lattice, see
    :func:`~privgp.sampling.snap_to_lattice`)."""
    if method not in METHODS:
        raise v.InvalidParameterError("method", f"one of {METHODS}", method)
    if isinstance(axes, np.ndarray) and axes.ndim == 1:
        axes = (axes,)
    axes = tuple(np.asarray(a, dtype=float) for a in axes)
    one_d_exp = kernel.name == "exponential" and len(axes) == 1
    X = v.points("X", X, dim=len(axes), allow_empty=True)
    if X.shape[0] == 0:  # no data: the posterior is the prior (r plays no role)
        if np.asarray(y).size:
            raise v.InvalidParameterError("y", "empty when X has no rows", np.shape(y))
        return prior_paths(kernel, axes, sigma=sigma, rng=rng, L=L, eta=eta, method=method)
    if method == "exp1d" or (method == "auto" and one_d_exp):
        if not one_d_exp:
            raise v.InvalidParameterError("method", "'exp1d' only for the exponential kernel on a 1-D grid",
                                          f"{kernel.name} kernel on a {len(axes)}-D grid")
        X = v.points("X", X, dim=1)
        paths = exp1d_paths(X[:, 0], y, axes[0], lengthscale=kernel.lengthscale, r=r, sigma=sigma, rng=rng,
                            L=L, eta=eta)
        return np.asarray(paths).reshape((L, axes[0].shape[0]))
    return grid_paths(kernel, X, y, axes, r=r, sigma=sigma, rng=rng, L=L, eta=eta,
                      method="auto" if method == "auto" else method, refine=refine)
