"""Exact prior paths on a grid: the posterior of the empty dataset (n = 0).

The released process of seed 000 (eq. (1), with the optional noise of Prop. 2 / eq. (5)) for a
dataset without records is f + g with f ~ GP(0, sigma^2 k) and g ~ GP(0, eta^2 k) independent,
i.e. GP(0, (sigma^2 + eta^2) k): one prior path scaled by sqrt(sigma^2 + eta^2). It depends on no
data, so releasing it costs no privacy (e.g. the first round of Thompson sampling).

Samplers (all exact; chosen by :func:`privgp.sampling.exact_paths`, which calls this for n = 0):

* ``"exp1d"``: the exponential kernel in 1-D is an Ornstein-Uhlenbeck process, sampled by its exact
  Markov transition on the sorted distinct points (:mod:`privgp.sampling.exp1d`), O(m);
* ``"circulant"``: a regular grid, stationary kernel, circulant embedding (exact when the embedding
  is positive semidefinite, see :mod:`privgp.sampling.grid`);
* ``"dense"``: :func:`privgp.sampling.sample_joint` of the prior at the grid points, O(m^3).
"""
from __future__ import annotations

import math

import numpy as np

from .. import validation as v
from ..gp.posterior import ExactPosterior
from ..kernels import DistanceKernel, Kernel
from .exp1d import _ou_prior_paths
from .grid import _check_axes, _embedding, _spacing
from .joint import sample_joint


def prior_paths(kernel: Kernel, axes, *, sigma: float, rng: np.random.Generator, L: int = 1, eta: float = 0.0,
                method: str = "auto") -> np.ndarray:
    """L exact paths of GP(0, (sigma^2 + eta^2) k) on the grid spanned by ``axes``: (L, *grid shape)."""
    sigma = v.positive("sigma", sigma)
    eta = v.nonnegative("eta", eta)
    rng = v.generator("rng", rng)
    L = v.integer("L", L, minimum=1)
    scale = math.sqrt(sigma * sigma + eta * eta)
    one_d_exp = kernel.name == "exponential" and (len(axes) == 1 if not isinstance(axes, np.ndarray) else axes.ndim == 1)
    if method == "exp1d" or (method == "auto" and one_d_exp):
        if not one_d_exp:
            raise v.InvalidParameterError("method", "'exp1d' only for the exponential kernel on a 1-D grid", kernel.name)
        a = v.finite_array("axes[0]", axes if isinstance(axes, np.ndarray) else axes[0], ndim=1)
        t, inv = np.unique(a, return_inverse=True)
        h = _ou_prior_paths(t, rng.standard_normal((L, t.shape[0])), kernel.lengthscale)
        return scale * h[:, inv.reshape(-1)]
    axes = _check_axes(axes, uniform=method != "dense")
    shape = tuple(a.shape[0] for a in axes)
    if method != "dense" and isinstance(kernel, DistanceKernel):
        emb = _embedding(kernel, tuple(_spacing(a) for a in axes), shape)
        if emb.ok:
            half = (L + 1) // 2
            Z = rng.standard_normal((half,) + emb.M) + 1j * rng.standard_normal((half,) + emb.M)
            return scale * emb.fields(Z)[:L]
    if method == "circulant":
        raise v.InvalidParameterError("method", "'dense' or 'auto' here: no exact circulant embedding for this "
                                      "kernel and grid", method)
    mesh = np.meshgrid(*axes, indexing="ij")
    G = np.stack([m.ravel() for m in mesh], axis=-1)
    prior = ExactPosterior.prior(kernel, G.shape[1], 1.0, sigma)  # r is irrelevant without data
    return sample_joint(prior, G, L, rng, eta=eta).reshape((L,) + shape)


__all__ = ["prior_paths"]
