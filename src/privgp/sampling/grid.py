"""Exact posterior paths on regular grids without the m x m posterior covariance.

Method (``method="circulant"``): pathwise (Matheron) conditioning of an exact prior draw.

1. Lattice. The grid (regular axes, 1-D or 2-D or more) is refined R_k times per axis and extended
   so that the lattice contains the grid *and every data input*. Circulant embedding is exact only
   on lattice points, so the inputs must lie on it (up to 1e-9 lattice spacings of floating-point
   representation); :func:`snap_to_lattice` moves inputs there.
2. Exact prior draw on the lattice by circulant embedding (Dietrich & Newsam 1997): the
   covariance of a stationary kernel on a regular lattice with N_k points per axis is a block
   Toeplitz matrix, embedded in a block circulant one on a torus of M_k >= 2 (N_k - 1) points whose
   eigenvalues are the FFT of its first row. If all eigenvalues are >= 0 the embedded matrix is a
   covariance, and the real and imaginary parts of FFT(sqrt(lambda / M) Z), Z complex standard
   normal, are two independent draws whose restriction to the lattice has *exactly* the kernel's
   covariance. Negative eigenvalues are handled by padding (M doubled, up to 16 x); only
   negative eigenvalues of round-off size (their total, divided by M, at most SAMPLING_JITTER; each
   covariance entry changes by at most that) are raised to 0, which adds variance. Otherwise the
   method is not exact and ``method="auto"`` falls back to the dense sampler.
3. Matheron's rule (seed 000's posterior is that of f = sigma h, h ~ GP(0, k), observed with noise
   variance sigma^2 r^2):  f(.) = sigma h(.) + k_X(.)^T (K_XX + r^2 I)^{-1} (y - sigma h(X) - sigma r e),
   e ~ N(0, I), is exactly distributed as GP(mu_D, sigma^2 k_D). The kernel-weighted sum on the grid
   is a lattice convolution computed with the same FFT (exact: lags on the lattice are never
   wrapped because M_k >= 2 (N_k - 1)).
4. ``eta > 0`` adds an independent exact prior draw eta h' (seed 000, Prop. 2).

Dense fallback (``method="dense"``): :func:`privgp.sampling.sample_joint` on the grid points, i.e.
the m x m posterior covariance, O(m^3): only for small grids.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.fft import fftn, irfftn, next_fast_len, rfftn
from scipy.linalg import cho_factor, cho_solve

from .. import validation as v
from ..gp.posterior import SAMPLING_JITTER, ExactPosterior
from ..kernels import DistanceKernel, Kernel
from .joint import sample_joint

#: inputs within this many lattice spacings of a lattice point are taken to lie on it
LATTICE_TOL = 1e-9
#: largest refinement factor per axis tried when detecting the lattice of the inputs
MAX_REFINE = 64
#: largest embedding torus (number of points) used by the circulant method
MAX_EMBEDDING = 2**24
_CHUNK_POINTS = 2**22  # torus points processed at once (memory bound)


def _check_axes(axes, *, uniform: bool = True) -> tuple[np.ndarray, ...]:
    if isinstance(axes, np.ndarray) and axes.ndim == 1:
        axes = (axes,)
    try:
        axes = tuple(axes)
    except TypeError:
        raise v.InvalidParameterError("axes", "a sequence of 1-D coordinate arrays", axes) from None
    if not 1 <= len(axes) <= 3:
        raise v.InvalidParameterError("axes", "1 to 3 coordinate arrays", f"{len(axes)} arrays")
    out = []
    for k, a in enumerate(axes):
        a = v.finite_array(f"axes[{k}]", a, ndim=1)
        if a.shape[0] < 2 or np.any(np.diff(a) <= 0):
            raise v.InvalidParameterError(f"axes[{k}]", "at least 2 strictly increasing coordinates", a)
        if uniform:
            h = (a[-1] - a[0]) / (a.shape[0] - 1)
            if np.max(np.abs(np.diff(a) - h)) > 1e-9 * h:
                raise v.InvalidParameterError(f"axes[{k}]", "uniformly spaced (a regular grid)", a)
        out.append(a)
    return tuple(out)


def _spacing(a: np.ndarray) -> float:
    return (a[-1] - a[0]) / (a.shape[0] - 1)


def snap_to_lattice(X, axes, refine: int = 1) -> np.ndarray:
    """Move each input to the nearest point of the grid lattice refined ``refine`` times per axis.

    The lattice is {axes[k][0] + j * h_k / refine : j integer} per axis, h_k the grid spacing
    (it extends beyond the grid if an input does). This is a fixed, public map applied to each
    record separately, chosen before seeing the data, i.e. data-independent preprocessing: it maps
    replace-one neighbouring datasets to replace-one neighbouring (or equal) datasets, so every
    privacy guarantee of the release on the snapped data holds for the original data. It changes
    the model (inputs move by at most half a lattice spacing per axis) and the certificate must say
    so; if the grid spans the public domain box, snapped inputs stay in the box.
    """
    axes = _check_axes(axes)
    refine = v.integer("refine", refine, minimum=1)
    X = v.points("X", X, dim=len(axes))
    out = np.empty_like(X)
    for k, a in enumerate(axes):
        step = _spacing(a) / refine
        out[:, k] = a[0] + np.round((X[:, k] - a[0]) / step) * step
    return out


def _lattice_indices(X: np.ndarray, axes, refine) -> tuple[list[int], list[np.ndarray]] | None:
    """Per-axis refinement R_k and integer lattice indices of X, or None if X is off every lattice."""
    Rs, idx = [], []
    for k, a in enumerate(axes):
        u = (X[:, k] - a[0]) / _spacing(a)
        cands = [refine] if refine is not None else range(1, MAX_REFINE + 1)
        for R in cands:
            j = np.round(u * R)
            if np.all(np.abs(u * R - j) <= LATTICE_TOL):
                Rs.append(int(R))
                idx.append(j.astype(np.int64))
                break
        else:
            return None
    return Rs, idx


class _Embedding:
    """Circulant embedding of a stationary kernel on a regular lattice (exact when eigenvalues >= 0)."""

    def __init__(self, kernel: DistanceKernel, steps, sizes):
        self.kernel, self.steps, self.sizes = kernel, tuple(steps), tuple(sizes)
        self.ok = False
        for pad in (1, 2, 4, 8, 16):
            M = tuple(next_fast_len(max(1, pad * 2 * (N - 1))) for N in sizes)
            if np.prod(M, dtype=float) > MAX_EMBEDDING:
                break
            lags = [np.minimum(np.arange(m), m - np.arange(m)) * h for m, h in zip(M, steps)]
            grids = np.meshgrid(*lags, indexing="ij", sparse=True)
            dist = np.sqrt(sum(g * g for g in grids))
            c = kernel.of_distance(dist)
            lam = fftn(c).real
            neg = np.minimum(lam, 0.0)
            self.M, self.lam = M, lam
            self.size = int(np.prod(M))
            if -np.sum(neg) / self.size <= SAMPLING_JITTER:
                self.sqrt_lam = np.sqrt(np.maximum(lam, 0.0) / self.size)
                self.ok = True
                return

    def fields(self, Z: np.ndarray) -> np.ndarray:
        """Prior fields on the lattice from complex normals Z (k, *M): the k real parts, then the k imaginary parts.

        With Z = Z1 + i Z2 (Z1, Z2 independent standard normal) and lambda >= 0, the real and
        imaginary parts of FFT(sqrt(lambda / M) Z) are independent with covariance the circulant
        matrix, whose restriction to the lattice is the kernel's Gram matrix.
        """
        axes = tuple(range(1, len(self.M) + 1))
        w = fftn(self.sqrt_lam * Z, axes=axes)
        w = w[(slice(None),) + tuple(slice(0, N) for N in self.sizes)]
        return np.concatenate([w.real, w.imag])

    def convolve(self, W: np.ndarray) -> np.ndarray:
        """sum_q k(p - q) W[..., q] for lattice points p (W: (count, *sizes) on the lattice)."""
        axes = tuple(range(1, len(self.M) + 1))
        # real FFTs: the spectrum lambda of the symmetric first row is real and even
        half = self.lam[..., : self.M[-1] // 2 + 1]
        out = irfftn(rfftn(W, s=self.M, axes=axes) * half, s=self.M, axes=axes)
        return out[(slice(None),) + tuple(slice(0, N) for N in self.sizes)]


@lru_cache(maxsize=16)
def _embedding(kernel: DistanceKernel, steps: tuple[float, ...], sizes: tuple[int, ...]) -> _Embedding:
    """The embedding of (kernel, lattice steps, lattice sizes), built once and reused (it holds no
    randomness and is never modified; repeated draws on one grid, e.g. Thompson-sampling rounds, share it)."""
    return _Embedding(kernel, steps, sizes)


def _lattice_gram(kernel: DistanceKernel, sites: np.ndarray, steps, block: int = 512) -> np.ndarray:
    """Gram matrix of the kernel on lattice points given by integer indices (|S|, d): k depends only
    on the lag, so the matrix is gathered from a table of k over all lags (no pairwise distances).
    Lags are flattened to one integer per pair: key(a) - key(b) + centre indexes the raveled table."""
    n, dim = sites.shape
    span = (sites.max(axis=0) - sites.min(axis=0)).astype(np.int64) if n else np.zeros(dim, dtype=np.int64)
    widths = 2 * span + 1
    lags = [np.arange(-int(w), int(w) + 1) * h for w, h in zip(span, steps)]
    grids = np.meshgrid(*lags, indexing="ij", sparse=True)
    table = np.ascontiguousarray(kernel.of_distance(np.sqrt(sum(g * g for g in grids)))).reshape(-1)
    strides = np.array([int(np.prod(widths[k + 1:])) for k in range(dim)], dtype=np.int64)  # row-major
    key = (sites - sites.min(axis=0)) @ strides
    centre = int(span @ strides)
    out = np.empty((n, n))
    for i in range(0, n, block):
        blk = slice(i, min(n, i + block))
        np.take(table, key[blk, None] - key[None, :] + centre, out=out[blk])
    return out


class _CirculantPlan:
    """Circulant embedding + Matheron conditioning for one dataset on one grid (``ok`` if exact)."""

    def __init__(self, kernel, X, y, axes, Rs, idx, r, sigma):
        lo = [min(0, int(j.min())) for j in idx]
        hi = [max(R * (a.shape[0] - 1), int(j.max())) for R, a, j in zip(Rs, axes, idx)]
        self.sizes = tuple(h - l + 1 for l, h in zip(lo, hi))
        steps = [_spacing(a) / R for a, R in zip(axes, Rs)]
        self.emb = _embedding(kernel, tuple(float(h) for h in steps), self.sizes)
        self.ok = self.emb.ok
        if not self.ok:
            return
        lin = np.ravel_multi_index(tuple(j - l for j, l in zip(idx, lo)), self.sizes)
        # Records sharing a lattice site enter only through their count c and mean (noise r^2 / c):
        # one unknown per occupied site, the exact posterior whatever n is (gp.aggregate_duplicates).
        self.lin, first, inv, counts = np.unique(lin, return_index=True, return_inverse=True, return_counts=True)
        inv = inv.reshape(-1)
        self.counts = counts.astype(float)
        self.y = np.bincount(inv, weights=y, minlength=self.lin.size) / self.counts
        self.pick = [np.arange(a.shape[0]) * R - l for a, R, l in zip(axes, Rs, lo)]
        self.n = self.lin.size
        self.r, self.sigma = r, sigma
        sites = np.stack(np.unravel_index(self.lin, self.sizes), axis=-1)  # (|S|, d) lattice indices
        A = _lattice_gram(kernel, sites, steps)
        A[np.diag_indices(self.n)] += r**2 / self.counts
        self.A = cho_factor(A, lower=True, overwrite_a=True)

    def condition(self, h: np.ndarray, eps: np.ndarray) -> np.ndarray:
        """Matheron's rule on the lattice, restricted to the grid: (L, *grid shape).

        f = sigma h + k_S^T (K_SS + r^2 C^-1)^{-1} (ybar - sigma h(S) - sigma r C^-1/2 eps) over the
        occupied sites S with counts C and mean responses ybar; h (L, *sizes) prior fields, eps (L, |S|)
        standard normals. (With all counts 1 this is the usual rule on the n inputs.)
        """
        Lc = h.shape[0]
        resid = (self.y[None, :] - self.sigma * h.reshape(Lc, -1)[:, self.lin]
                 - self.sigma * self.r * eps / np.sqrt(self.counts)[None, :])
        w = cho_solve(self.A, resid.T).T  # (Lc, |S|)
        W = np.zeros((Lc, int(np.prod(self.sizes))))
        W[:, self.lin] = w  # sites are distinct
        f = self.sigma * h + self.emb.convolve(W.reshape(h.shape))
        return f[np.ix_(np.arange(Lc), *self.pick)]

    def restrict(self, h: np.ndarray) -> np.ndarray:
        return h[np.ix_(np.arange(h.shape[0]), *self.pick)]

    def sample(self, rng: np.random.Generator, L: int, eta: float) -> np.ndarray:
        out = np.empty((L,) + tuple(p.shape[0] for p in self.pick))
        chunk = max(1, _CHUNK_POINTS // self.emb.size)
        for start in range(0, L, chunk):
            Lc = min(chunk, L - start)
            count = 2 * Lc if eta > 0 else Lc
            half = (count + 1) // 2
            Z = rng.standard_normal((half,) + self.emb.M) + 1j * rng.standard_normal((half,) + self.emb.M)
            prior = self.emb.fields(Z)
            f = self.condition(prior[:Lc], rng.standard_normal((Lc, self.n)))
            if eta > 0:
                f += eta * self.restrict(prior[Lc:2 * Lc])
            out[start:start + Lc] = f
        return out


def grid_paths(kernel: Kernel, X, y, axes, *, r: float, sigma: float, rng: np.random.Generator,
               L: int = 1, eta: float = 0.0, method: str = "auto", refine: int | None = None) -> np.ndarray:
    """L exact posterior paths on the regular grid ``axes``: shape (L, len(axes[0]), len(axes[1]), ...).

    ``method``: "circulant" (exact prior by circulant embedding + Matheron conditioning; requires
    the inputs on a lattice refining the grid, see :func:`snap_to_lattice`, and a distance kernel),
    "dense" (:func:`sample_joint` on the grid points, O(m^3)), or "auto" (circulant when it is
    exact, else dense). ``refine``: the lattice refinement per axis (default: the smallest
    R <= MAX_REFINE that puts every input on the lattice). ``eta > 0`` adds an independent prior
    draw of GP(0, eta^2 k) (seed 000, Prop. 2).
    """
    if method not in ("auto", "circulant", "dense"):
        raise v.InvalidParameterError("method", "one of 'auto', 'circulant', 'dense'", method)
    axes = _check_axes(axes, uniform=method != "dense")
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma)
    eta = v.nonnegative("eta", eta)
    rng = v.generator("rng", rng)
    L = v.integer("L", L, minimum=1)
    X = v.points("X", X, dim=len(axes))
    y = v.responses("y", y, X.shape[0])
    if refine is not None:
        refine = v.integer("refine", refine, minimum=1)
    shape = tuple(a.shape[0] for a in axes)
    if method != "dense":
        lattice = _lattice_indices(X, axes, refine) if isinstance(kernel, DistanceKernel) else None
        if lattice is not None:
            plan = _CirculantPlan(kernel, X, y, axes, *lattice, r, sigma)
            if plan.ok:
                return plan.sample(rng, L, eta)
        if method == "circulant":
            if not isinstance(kernel, DistanceKernel):
                raise v.InvalidParameterError("kernel", "a stationary distance kernel for method='circulant'",
                                              kernel.name)
            if lattice is None:
                raise v.InvalidParameterError(
                    "X", f"on a lattice refining the grid (at most {MAX_REFINE} times per axis) for "
                    "method='circulant'; use snap_to_lattice or method='dense'", "inputs off the lattice")
            raise v.InvalidParameterError(
                "method", "'dense' or 'auto' here: the circulant embedding is not positive semidefinite "
                "even with padding (not exact)", method)
    post = ExactPosterior.aggregated(kernel, X, y, r, sigma)  # exact: duplicates enter via count and mean
    mesh = np.meshgrid(*axes, indexing="ij")
    G = np.stack([m.ravel() for m in mesh], axis=-1)
    return sample_joint(post, G, L, rng, eta=eta).reshape((L,) + shape)
