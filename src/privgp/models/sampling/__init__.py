"""Exact sample paths of the released GP posterior (seed 000, sec. 2; docs/architecture.md, "sampling").

The privacy guarantee is for draws from the exact posterior, so every sampler here is exact (up to
the fixed, data-independent jitter of the documented jitter policy, which only adds variance):

* :func:`sample_joint` - L joint draws at finite points (dense Cholesky);
* :class:`LazyPath` - one function-valued draw evaluated lazily, X1 now and X2 | X1 later;
* :func:`exp1d_paths` - O(n + m) paths for the 1-D exponential kernel (Markov / Kalman);
* :func:`grid_paths` - paths on regular grids by circulant embedding + Matheron conditioning,
  with :func:`snap_to_lattice` (public per-record preprocessing) and a dense fallback.

* :func:`exact_paths` - the one place that chooses among them for a request on a grid.
* :func:`prior_paths` - exact draws of the prior GP(0, scale^2 k) on a grid (the noise of the
  functional mechanism and DPSetConv, seed 002).

``eta > 0`` everywhere adds an independent prior draw of GP(0, eta^2 k) (Prop. 2, eq. 5).
"""
from .exp1d import exp1d_paths
from .gaussian import jitter_for, psd_factor
from .grid import grid_paths, snap_to_lattice
from .joint import LazyPath, sample_joint
from .paths import SamplerPlan, exact_paths, plan_sampler
from .prior import prior_paths

__all__ = ["SamplerPlan", "exact_paths", "plan_sampler", "prior_paths", "sample_joint", "LazyPath", "exp1d_paths",
           "grid_paths", "snap_to_lattice",
           "psd_factor", "jitter_for"]
