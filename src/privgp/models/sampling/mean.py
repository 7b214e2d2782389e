"""Exact GP posterior means on a public grid at any n (the estimator of the functional mechanism, seed 002).

The posterior mean with ridge r of records (X, y) on grid points G is

    mu_D(G) = k(G, X) (K_XX + r^2 I)^{-1} y.

Records that share an input x_s enter it only through their count c_s and mean response ybar_s:

    mu_D(G) = k(G, S) (K_SS + r^2 diag(1 / c_s))^{-1} ybar       (S: the distinct inputs)

*exactly* (c observations of f(x) with noise variance r^2 have the likelihood of one observation ybar
with variance r^2 / c, up to a factor free of f; :func:`privgp.models.gp.posterior.aggregate_duplicates`).
So the cost depends on the number of distinct inputs (occupied lattice sites after snapping), not on
n, exactly as for the posterior-sample samplers of :mod:`privgp.models.sampling.grid`.

Methods (chosen by the caller from public settings; :func:`plan_posterior_mean` estimates memory and
time before anything is computed, so a mechanism can refuse before any budget is charged):

* ``"lattice"``: the inputs lie on a lattice refining the regular grid (moved there by
  :func:`~privgp.models.sampling.snap_to_lattice`, a public per-record map). One unknown per occupied site.
  Two solvers of the same linear system (``solver``):

  - ``"cg"``: conjugate gradients on the whole lattice L in the precision form
    m = K_GL P^{1/2} (I + P^{1/2} K_LL P^{1/2})^{-1} P^{1/2} ybar, P = diag(c_s / r^2) (0 on empty sites),
    which equals k(G, S) (K_SS + r^2 diag(1 / c_s))^{-1} ybar (push-through identity
    P^{1/2} (I + P^{1/2} K P^{1/2})^{-1} P^{1/2} = (P^{-1} + K)^{-1} on the occupied sites). The matrix
    has eigenvalues >= 1, and K_LL times a vector is a lattice convolution done by FFT on a torus of
    M_k >= 2 (N_k - 1) points (no lag wraps, so it is the exact product, as in
    :mod:`privgp.models.sampling.grid`). It stops when the recursive residual is below 1e-14 |b| and is
    accepted only if the *true* residual |b - B x| <= 1e-12 |b| (checked with one more product; the
    solver is :func:`privgp.models.sampling.lattice_cg.precision_cg`, shared with the posterior-sample paths);
  - ``"cholesky"``: K_SS gathered from a table of k over integer lattice lags (no pairwise distances),
    one Cholesky factorisation of the |S| x |S| system (O(|S|^3), O(|S|^2) memory).

  ``"auto"`` runs CG for at most as many iterations as a Cholesky factorisation would cost and falls
  back to Cholesky when it has not converged (or is not accepted). Both are deterministic functions of
  the data; they agree to rounding (about 1e-13 in the tests), as two factorisations would.
* ``"exp1d"``: the 1-D exponential kernel, any inputs: the O(n + m) Kalman smoother of
  :mod:`privgp.models.sampling.exp1d` (the mean of its exact sampler: the same affine map at zero normals).
* ``"dense"``: distinct inputs, dense Cholesky of the u x u system, k(G, S) in row blocks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from ... import validation as v
from ...errors import NumericalError
from ..kernels import DistanceKernel, Kernel
from .exp1d import _Exp1dPlan
from .grid import _check_axes, _lattice_indices, _spacing
from .lattice_cg import auto_iterations, lattice_product, precision_cg

MEAN_METHODS = ("lattice", "exp1d", "dense")
SOLVERS = ("auto", "cg", "cholesky")
_F8 = 8
#: elements of a gathered kernel block (rows x sites) held at once
_BLOCK_ELEMENTS = 2**21
#: conservative rates for the time estimate (a shared 2-core machine measured ~1e11 flop/s in a
#: Cholesky factorisation and ~1e8 gathered kernel entries per second; both are divided by 5)
_FLOPS = 2e10
_GATHERS = 2e7
_RECORDS = 2e6


@dataclass(frozen=True)
class MeanPlan:
    """What :func:`posterior_mean_on_grid` will do, decided before computing: ``unknowns`` = the size of
    its linear system (distinct inputs / occupied lattice sites), ``bytes`` an estimate of its peak
    memory beyond the input arrays, ``seconds`` a rough (conservative) estimate of its run time."""

    method: str
    unknowns: int
    grid_points: int
    bytes: int
    seconds: float

    @property
    def gib(self) -> float:
        return self.bytes / 2**30


def _lattice(kernel: Kernel, X: np.ndarray, axes, refine: int | None):
    """(steps, lo, sizes, linear site index of each record) of the inputs on the grid lattice."""
    if not isinstance(kernel, DistanceKernel):
        raise v.InvalidParameterError("kernel", "a stationary distance kernel for method='lattice'", kernel.name)
    lattice = _lattice_indices(X, axes, refine)
    if lattice is None:
        raise v.InvalidParameterError("X", "on a lattice refining the grid for method='lattice' (snap the inputs "
                                      "with snap_to_lattice)", "inputs off the lattice")
    Rs, idx = lattice
    lo = [min(0, int(j.min())) for j in idx]
    hi = [max(R * (a.shape[0] - 1), int(j.max())) for R, a, j in zip(Rs, axes, idx)]
    sizes = tuple(h - l_ + 1 for l_, h in zip(lo, hi))
    lin = np.ravel_multi_index(tuple(j - l_ for j, l_ in zip(idx, lo)), sizes)
    steps = [_spacing(a) / R for a, R in zip(axes, Rs)]
    return Rs, steps, lo, sizes, lin


def _checked(X, axes, method: str):
    if method not in MEAN_METHODS:
        raise v.InvalidParameterError("method", f"one of {MEAN_METHODS}", method)
    axes = _check_axes(axes, uniform=method == "lattice")
    X = v.points("X", X, dim=len(axes))
    return X, axes


def _estimate(method: str, s: int, n: int, m: int, dim: int) -> tuple[int, float]:
    if method == "exp1d":
        return 12 * _F8 * (s + m) + 6 * _F8 * n, (n + s + m) / _RECORDS + 10 * (s + m) / _GATHERS
    block = max(1, min(m, _BLOCK_ELEMENTS // max(s, 1)))
    gather = 2 * _F8 * block * s                      # index and value blocks of k(G, S)
    records = 6 * _F8 * n                             # site indices, inverse map, bincounts
    flops = s**3 / 3 + 2 * s * s
    if method == "lattice":
        table = _F8 * (3 ** dim) * max(m, s)          # k over all lags of the lattice span
        mem = _F8 * s * s + 2 * _F8 * 512 * s + gather + records + table + 2 * _F8 * m
        secs = flops / _FLOPS + (s * s + m * s) / _GATHERS + n * np.log2(max(n, 2)) / (20 * _RECORDS)
    else:
        mem = 2 * _F8 * s * s + gather + records + 2 * _F8 * m + _F8 * n * dim
        secs = flops / _FLOPS + (s * s + m * s) * dim / _GATHERS + n * np.log2(max(n, 2)) / _RECORDS
    return int(mem), float(secs)


def plan_posterior_mean(kernel: Kernel, X, axes, *, method: str, refine: int | None = None) -> MeanPlan:
    """Memory and time of :func:`posterior_mean_on_grid` for these inputs, without computing it. Used by
    mechanisms before any budget is charged (the counts of distinct inputs/sites are private: an error
    that names them is for the data holder, not for publication)."""
    X, axes = _checked(X, axes, method)
    n, m = X.shape[0], int(np.prod([a.shape[0] for a in axes]))
    if method == "lattice":
        s = int(np.unique(_lattice(kernel, X, axes, refine)[4]).size)
    elif method == "exp1d":
        if not (kernel.name == "exponential" and len(axes) == 1):
            raise v.InvalidParameterError("method", "'exp1d' only for the exponential kernel on a 1-D grid",
                                          f"{kernel.name} kernel on a {len(axes)}-D grid")
        s = int(np.unique(X[:, 0]).size)
    else:
        s = int(np.unique(X, axis=0).shape[0])
    mem, secs = _estimate(method, s, n, m, len(axes))
    return MeanPlan(method, s, m, mem, secs)


def _grid_points(axes) -> np.ndarray:
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([g.ravel() for g in mesh], axis=-1)


def posterior_mean_on_grid(kernel: Kernel, X, y, axes, *, r: float, method: str,
                           refine: int | None = None, solver: str = "auto") -> np.ndarray:
    """The exact posterior mean k(G, X) (K_XX + r^2 I)^{-1} y on the grid G spanned by ``axes``
    (shape: the grid's), computed with one unknown per distinct input (module docstring).

    ``method``: "lattice" (inputs on the grid lattice refined ``refine`` times per axis; default: the
    smallest refinement that fits, see :func:`~privgp.models.sampling.snap_to_lattice`), "exp1d" (1-D
    exponential kernel), or "dense". ``solver`` (lattice only): "auto" (CG, Cholesky when CG has not
    converged within the cost of a factorisation), "cg" (raises NumericalError if not accepted) or
    "cholesky"."""
    if solver not in SOLVERS:
        raise v.InvalidParameterError("solver", f"one of {SOLVERS}", solver)
    X, axes = _checked(X, axes, method)
    y = v.responses("y", y, X.shape[0])
    r = v.positive("r", r)
    if refine is not None:
        refine = v.integer("refine", refine, minimum=1)
    shape = tuple(a.shape[0] for a in axes)
    if method == "exp1d":
        return exp1d_mean(X, y, _grid_points(axes), lengthscale=_exp_lengthscale(kernel, len(axes)),
                          r=r).reshape(shape)
    if method == "lattice":
        Rs, steps, lo, sizes, lin = _lattice(kernel, X, axes, refine)
        assert isinstance(kernel, DistanceKernel)                          # _lattice checked it
        sites, inv, counts = np.unique(lin, return_inverse=True, return_counts=True)
        counts = counts.astype(float)
        ybar = np.bincount(inv.reshape(-1), weights=y, minlength=sites.size) / counts
        pick = tuple(np.arange(N) * R - l_ for N, R, l_ in zip(shape, Rs, lo))   # grid points on the lattice
        return _lattice_mean(kernel, tuple(float(h) for h in steps), sizes, sites, counts, ybar, r, pick, shape,
                             solver)
    Xu, inv, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    counts = counts.astype(float)
    ybar = np.bincount(inv.reshape(-1), weights=y, minlength=Xu.shape[0]) / counts
    A = kernel(Xu)
    A[np.diag_indices(Xu.shape[0])] += r * r / counts
    alpha = _solve_spd(A, ybar)
    del A
    P = _grid_points(axes)
    out = np.empty(P.shape[0])
    block = max(1, _BLOCK_ELEMENTS // Xu.shape[0])
    for i in range(0, P.shape[0], block):
        out[i:i + block] = kernel(P[i:i + block], Xu) @ alpha
    return out.reshape(shape)


def _lattice_mean_cg(kernel: DistanceKernel, steps: tuple[float, ...], sizes: tuple[int, ...], sites: np.ndarray,
                     counts: np.ndarray, ybar: np.ndarray, r: float, pick, *, max_iter: int) -> np.ndarray | None:
    """The posterior mean on the grid by CG in the precision form (module docstring;
    :func:`privgp.models.sampling.lattice_cg.precision_cg`), or None if CG did not converge within ``max_iter``
    iterations or its true residual is above 1e-12 |b| (``lattice_cg.CG_ACCEPT``)."""
    K = lattice_product(kernel, steps, sizes)
    size = int(np.prod(sizes))
    sp = np.zeros(size)
    sp[sites] = np.sqrt(counts) / r                 # P^{1/2}: 0 on empty sites
    b = np.zeros((1, size))
    b[0, sites] = sp[sites] * ybar
    x = precision_cg(K, sp, b, max_iter=max_iter)
    if x is None:
        return None
    return K(sp * x).reshape(sizes)[np.ix_(*pick)]


def _lattice_gram_upper(kernel: DistanceKernel, sites: np.ndarray, steps, block: int = 512) -> np.ndarray:
    """The upper triangle (and some of the lower one) of the Gram matrix on lattice sites, C order: what
    :func:`_solve_spd` reads (the entries A[i, j], j >= i). Half the gathers of
    :func:`privgp.models.sampling.grid._lattice_gram`; entries below the diagonal blocks are left unset."""
    n, dim = sites.shape
    span = (sites.max(axis=0) - sites.min(axis=0)).astype(np.int64)
    widths = 2 * span + 1
    lags = [np.arange(-int(w), int(w) + 1) * h for w, h in zip(span, steps)]
    grids = np.meshgrid(*lags, indexing="ij", sparse=True)
    table = np.ascontiguousarray(kernel.of_distance(np.sqrt(sum(g * g for g in grids)))).reshape(-1)
    strides = np.array([int(np.prod(widths[k + 1:])) for k in range(dim)], dtype=np.int64)
    key = (sites - sites.min(axis=0)) @ strides
    centre = int(span @ strides)
    out = np.empty((n, n))
    for i in range(0, n, block):
        j = min(n, i + block)
        np.take(table, key[i:j, None] - key[None, i:] + centre, out=out[i:j, i:])
    return out


def _solve_spd(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A^{-1} b for a symmetric positive definite A, factored in place (A is overwritten; only its entries
    A[i, j], j >= i, are read): the transpose of a C-ordered matrix is its transpose in Fortran order, which
    LAPACK takes without a copy, and the lower triangle of A.T is the upper triangle of A."""
    return cho_solve(cho_factor(A.T, lower=True, overwrite_a=True, check_finite=False), b, check_finite=False)


def _exp_lengthscale(kernel: Kernel, dim: int) -> float:
    if not (kernel.name == "exponential" and dim == 1 and isinstance(kernel, DistanceKernel)):
        raise v.InvalidParameterError("method", "'exp1d' only for the exponential kernel on a 1-D grid",
                                      f"{kernel.name} kernel on a {dim}-D grid")
    return float(kernel.lengthscale)


def _lattice_cross_apply(kernel: DistanceKernel, rows: np.ndarray, cols: np.ndarray, steps, w: np.ndarray) -> np.ndarray:
    """k(rows, cols) @ w for lattice points given by integer indices (rows (p, d), cols (q, d)), gathered
    in row blocks from a table of k over the lags (as :func:`privgp.models.sampling.grid._lattice_gram`)."""
    both = np.vstack([rows, cols])
    base = both.min(axis=0)
    span = (both.max(axis=0) - base).astype(np.int64)
    widths = 2 * span + 1
    lags = [np.arange(-int(s), int(s) + 1) * h for s, h in zip(span, steps)]
    grids = np.meshgrid(*lags, indexing="ij", sparse=True)
    table = np.ascontiguousarray(kernel.of_distance(np.sqrt(sum(g * g for g in grids)))).reshape(-1)
    dim = rows.shape[1]
    strides = np.array([int(np.prod(widths[k + 1:])) for k in range(dim)], dtype=np.int64)
    centre = int(span @ strides)
    kr = (rows - base) @ strides + centre
    kc = (cols - base) @ strides
    out = np.empty(rows.shape[0])
    block = max(1, _BLOCK_ELEMENTS // max(cols.shape[0], 1))
    for i in range(0, rows.shape[0], block):
        out[i:i + block] = np.take(table, kr[i:i + block, None] - kc[None, :]) @ w
    return out


def exp1d_mean(X, y, Xq, *, lengthscale: float, r: float) -> np.ndarray:
    """The exact posterior mean at Xq of the 1-D exponential-kernel GP with ridge r: (m,).

    The Kalman smoother of :mod:`privgp.models.sampling.exp1d` in O((n + m) log(n + m)): its exact sampler
    is an affine map of standard normals whose value at zero normals is the posterior mean (the
    smoothed means at the distinct inputs, then E[g(q) | g at the inputs] by the OU bridge)."""
    ell = v.positive("lengthscale", lengthscale)
    r = v.positive("r", r)
    x = v.points("X", X, dim=1)[:, 0]
    yv = v.responses("y", y, x.shape[0])
    q = v.points("Xq", Xq, dim=1)[:, 0]
    xb, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    obs = np.bincount(inv.reshape(-1), weights=yv, minlength=xb.shape[0]) / counts
    qu, qinv = np.unique(q, return_inverse=True)
    plan = _Exp1dPlan(xb, obs, r * r / counts, qu, ell)
    zeros = [np.zeros((1, size)) for size in plan.normal_sizes(False)]
    return plan.paths(zeros, 1.0, 0.0)[0, qinv.reshape(-1)]


def _lattice_mean(kernel: DistanceKernel, steps: tuple[float, ...], sizes: tuple[int, ...], sites: np.ndarray,
                  counts: np.ndarray, ybar: np.ndarray, r: float, pick: tuple, shape: tuple[int, ...],
                  solver: str) -> np.ndarray:
    """The lattice posterior mean from the occupied sites (raveled indices in ``sizes``), their counts and mean
    responses: CG with FFT products, or the dense Cholesky solve (``solver``); its values at the grid points
    ``pick`` (lattice indices per axis)."""
    if solver != "cholesky":
        out = _lattice_mean_cg(kernel, steps, sizes, sites, counts, ybar, r, pick,
                               max_iter=10**6 if solver == "cg" else auto_iterations(sites.size, sizes))
        if out is not None:
            return out
        if solver == "cg":
            raise NumericalError("posterior mean: conjugate gradients did not converge (use solver='cholesky')")
    S = np.stack(np.unravel_index(sites, sizes), axis=-1)              # (|S|, d) lattice indices
    A = _lattice_gram_upper(kernel, S, steps)
    A[np.diag_indices(sites.size)] += r * r / counts
    alpha = _solve_spd(A, ybar)
    del A
    mesh = np.meshgrid(*pick, indexing="ij")
    G = np.stack([g.ravel() for g in mesh], axis=-1)                   # grid points as lattice indices
    return _lattice_cross_apply(kernel, G, S, steps, alpha).reshape(shape)


def posterior_mean_from_sites(kernel: Kernel, sites, sums, counts, axes, *, r: float, solver: str = "auto") -> np.ndarray:
    """:func:`posterior_mean_on_grid` ("lattice") from per-site statistics of the snapped records: ``sums`` and
    ``counts`` of the responses at every site of ``sites`` (a :class:`~privgp.models.sampling.grid.LatticeSites`).
    The mean depends on the records only through them (one unknown per occupied site)."""
    from .grid import LatticeSites

    if not isinstance(sites, LatticeSites):
        raise v.InvalidParameterError("sites", "a LatticeSites", type(sites).__name__)
    if not isinstance(kernel, DistanceKernel):
        raise v.InvalidParameterError("kernel", "a stationary distance kernel for method='lattice'", kernel.name)
    if solver not in SOLVERS:
        raise v.InvalidParameterError("solver", f"one of {SOLVERS}", solver)
    axes = _check_axes(axes)
    r = v.positive("r", r)
    sums = np.asarray(sums, dtype=float).reshape(-1)
    counts = np.asarray(counts, dtype=float).reshape(-1)
    if sums.shape != (sites.size,) or counts.shape != (sites.size,):
        raise v.InvalidParameterError("sums/counts", f"one value per lattice site ({sites.size})",
                                      (sums.shape, counts.shape))
    shape = tuple(a.shape[0] for a in axes)
    occupied = np.flatnonzero(counts > 0)
    if occupied.size == 0:
        return np.zeros(shape)
    pick = tuple(np.arange(N) * sites.refine for N in shape)
    return _lattice_mean(kernel, sites.step, sites.shape, occupied, counts[occupied],
                         sums[occupied] / counts[occupied], r, pick, shape, solver)
