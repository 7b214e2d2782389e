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
   wrapped because M_k >= 2 (N_k - 1)). The linear system over the occupied sites is solved by
   conjugate gradients with FFT products on the lattice (:mod:`privgp.models.sampling.lattice_cg`, accepted
   only when the true residual is <= 1e-12 |b|), with the dense Cholesky factor as fallback
   (``solver``; :func:`grid_paths` says what "exact" means numerically for both).
4. ``eta > 0`` adds an independent exact prior draw eta h' (seed 000, Prop. 2).

Off the lattice (``method="matheron"``): the same Matheron rule with an exact joint prior draw on
grid u inputs, factored blockwise: the grid block's Cholesky factor L_GG of k(G, G) + j I depends only
on the kernel and the grid, so it is computed once and cached (for grids of at most
:data:`MAX_CACHED_GRID` points); per dataset only L_XG = k(X, G) L_GG^-T (a triangular solve, O(m^2 n))
and the n x n Cholesky factor of k(X, X) + j I - L_XG L_XG^T are new. This is the Cholesky factor of
the whole jittered joint prior covariance (the jitter j = SAMPLING_JITTER only adds variance), so the
draw is exact in the sense of the jitter policy; for many datasets on one grid it costs O(m^2 n)
each instead of the O(m^3) of a posterior covariance.

Dense (``method="dense"``): :func:`privgp.models.sampling.sample_joint` on the grid points, i.e. the m x m
posterior covariance, O(m^3).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.fft import fftn, irfftn, next_fast_len, rfftn
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from ... import validation as v
from ...errors import NumericalError
from ..gp.posterior import SAMPLING_JITTER, ExactPosterior, aggregate_duplicates
from ..kernels import DistanceKernel, Kernel
from .gaussian import psd_factor
from .joint import sample_joint
from .lattice_cg import auto_iterations, cg_bytes, lattice_product, precision_cg

#: inputs within this many lattice spacings of a lattice point are taken to lie on it
LATTICE_TOL = 1e-9
#: largest refinement factor per axis tried when detecting the lattice of the inputs
MAX_REFINE = 64
#: largest embedding torus (number of points) used by the circulant method
MAX_EMBEDDING = 2**24
_CHUNK_POINTS = 2**22  # torus points processed at once (memory bound)
#: largest grid (number of points) whose prior Cholesky factor is cached by the Matheron method
MAX_CACHED_GRID = 4096
METHODS = ("auto", "circulant", "matheron", "dense")
#: solvers of the circulant method's conditioning step (see :meth:`_CirculantPlan.solve`)
SOLVERS = ("auto", "cg", "cholesky")
_F8 = 8


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
            # relative to the spacing, plus the rounding of the coordinates themselves (np.linspace of 10^8 points)
            if np.max(np.abs(np.diff(a) - h)) > 1e-9 * h + 8 * np.finfo(float).eps * max(abs(a[0]), abs(a[-1])):
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


def aggregate_on_lattice(idx: list[np.ndarray], y: np.ndarray) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """(per-axis indices of the occupied sites in raveled order, counts, mean responses) of records at
    lattice indices ``idx`` (per axis, one entry per record)."""
    lo = [int(j.min()) for j in idx]
    sizes = tuple(int(j.max()) - l + 1 for j, l in zip(idx, lo))
    lin = np.ravel_multi_index(tuple(j - l for j, l in zip(idx, lo)), sizes)
    lin, first, inv, counts = np.unique(lin, return_index=True, return_inverse=True, return_counts=True)
    counts = counts.astype(float)
    means = np.bincount(inv.reshape(-1), weights=y, minlength=lin.size) / counts
    return [j[first] for j in idx], counts, means


@dataclass(frozen=True)
class LatticeSites:
    """The sites of the grid lattice refined ``refine`` times per axis over a grid with ``axes``: the public
    map of a record to its nearest site (:func:`snap_to_lattice`) as a linear index, for reducing records
    to per-site counts and sums in one pass (``privgp.datasets.sources``; the rule has no private part)."""

    origin: tuple[float, ...]
    step: tuple[float, ...]
    shape: tuple[int, ...]
    refine: int

    @classmethod
    def of(cls, axes, refine: int) -> LatticeSites:
        axes = _check_axes(axes)
        refine = v.integer("refine", refine, minimum=1)
        return cls(origin=tuple(float(a[0]) for a in axes), step=tuple(_spacing(a) / refine for a in axes),
                   shape=tuple(refine * (a.shape[0] - 1) + 1 for a in axes), refine=refine)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def indices(self, X: np.ndarray) -> list[np.ndarray]:
        """Per-axis lattice indices of the nearest sites (the rounding of :func:`snap_to_lattice`), clipped to
        the lattice (inputs in the grid's box are never clipped)."""
        X = np.asarray(X, dtype=float)
        return [np.clip(np.round((X[:, k] - a) / h), 0, m - 1).astype(np.int64)
                for k, (a, h, m) in enumerate(zip(self.origin, self.step, self.shape))]

    def index(self, X: np.ndarray) -> np.ndarray:
        """Linear site index of each record (C order)."""
        return np.ravel_multi_index(tuple(self.indices(X)), self.shape)

    def points(self, lin: np.ndarray) -> np.ndarray:
        """The coordinates of the sites with linear indices ``lin``."""
        ij = np.unravel_index(np.asarray(lin, dtype=np.int64), self.shape)
        return np.column_stack([a + h * j for a, h, j in zip(self.origin, self.step, ij)])


class _CirculantPlan:
    """Circulant embedding + Matheron conditioning for one dataset on one grid (``ok`` if exact)."""

    def __init__(self, kernel, axes, Rs, idx, counts, means, r, sigma, solver: str = "auto",
                 fallback_ok: bool = True):
        """``idx``: per-axis lattice indices of the OCCUPIED sites (one entry per site, in the order of their
        raveled index), ``counts`` and ``means`` of the responses there: records sharing a lattice site enter
        only through their count c and mean (noise r^2 / c), one unknown per occupied site, the exact
        posterior whatever n is (gp.aggregate_duplicates; :func:`aggregate_on_lattice` from records)."""
        lo = [min(0, int(j.min())) for j in idx]
        hi = [max(R * (a.shape[0] - 1), int(j.max())) for R, a, j in zip(Rs, axes, idx)]
        self.sizes = tuple(h - l + 1 for l, h in zip(lo, hi))
        steps = [_spacing(a) / R for a, R in zip(axes, Rs)]
        self.emb = _embedding(kernel, tuple(float(h) for h in steps), self.sizes)
        self.ok = self.emb.ok
        if not self.ok:
            return
        self.lin = np.ravel_multi_index(tuple(j - l for j, l in zip(idx, lo)), self.sizes)
        self.counts = np.asarray(counts, dtype=float)
        self.y = np.asarray(means, dtype=float)
        self.pick = [np.arange(a.shape[0]) * R - l for a, R, l in zip(axes, Rs, lo)]
        self.n = self.lin.size
        self.r, self.sigma = r, sigma
        self.kernel, self.steps = kernel, tuple(float(h) for h in steps)
        self.solver, self.fallback_ok = solver, fallback_ok
        self.A = None
        if solver == "cholesky":
            self._factor()
        else:
            self.K = lattice_product(kernel, self.steps, self.sizes)
            self.sp = np.zeros(int(np.prod(self.sizes)))
            self.sp[self.lin] = np.sqrt(self.counts) / r          # P^{1/2}: 0 on empty sites
            self.max_iter = 10**6 if solver == "cg" else auto_iterations(self.n, self.sizes)

    def _factor(self) -> None:
        """The dense path: the Cholesky factor of K_SS + r^2 C^{-1} (Gram matrix gathered from a lag table)."""
        sites = np.stack(np.unravel_index(self.lin, self.sizes), axis=-1)  # (|S|, d) lattice indices
        A = _lattice_gram(self.kernel, sites, self.steps)
        A[np.diag_indices(self.n)] += self.r**2 / self.counts
        self.A = cho_factor(A, lower=True, overwrite_a=True)

    def solve(self, resid: np.ndarray) -> np.ndarray:
        """W = (K_SS + r^2 C^{-1})^{-1} resid^T on the raveled lattice (0 on empty sites): (Lc, lattice size).

        Structured path (``solver`` "auto"/"cg"): CG in the precision form
        (:func:`privgp.models.sampling.lattice_cg.precision_cg`), accepted only when every true residual is
        <= 1e-12 |b|; "auto" falls back to the dense Cholesky factor when CG is not accepted within
        :func:`~privgp.models.sampling.lattice_cg.auto_iterations` (and then keeps it for later chunks),
        unless the fallback's memory was ruled out (``fallback_ok`` False: NumericalError)."""
        Lc = resid.shape[0]
        W = np.zeros((Lc, int(np.prod(self.sizes))))
        if self.A is None:
            b = np.zeros_like(W)
            b[:, self.lin] = self.sp[self.lin] * resid
            x = precision_cg(self.K, self.sp, b, max_iter=self.max_iter)
            if x is not None:
                x *= self.sp
                return x
            if self.solver == "cg" or not self.fallback_ok:
                raise NumericalError("posterior paths: conjugate gradients were not accepted (true residual above "
                                     "1e-12 |b|) and the dense Cholesky fallback is "
                                     + ("not allowed (solver='cg')" if self.solver == "cg" else
                                        "over the memory limit"))
            self._factor()
        W[:, self.lin] = cho_solve(self.A, resid.T).T  # sites are distinct
        return W

    def condition(self, h: np.ndarray, eps: np.ndarray) -> np.ndarray:
        """Matheron's rule on the lattice, restricted to the grid: (L, *grid shape).

        f = sigma h + k_S^T (K_SS + r^2 C^-1)^{-1} (ybar - sigma h(S) - sigma r C^-1/2 eps) over the
        occupied sites S with counts C and mean responses ybar; h (L, *sizes) prior fields, eps (L, |S|)
        standard normals. (With all counts 1 this is the usual rule on the n inputs.)
        """
        Lc = h.shape[0]
        resid = (self.y[None, :] - self.sigma * h.reshape(Lc, -1)[:, self.lin]
                 - self.sigma * self.r * eps / np.sqrt(self.counts)[None, :])
        W = self.solve(resid)
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


def circulant_bytes(emb: _Embedding, sizes: tuple[int, ...], sites: int, n: int, m: int, L: int) -> tuple[int, int]:
    """(structured, with fallback): peak-memory estimates of the circulant sampler for ``sites`` occupied
    lattice sites, n records, m grid points and L paths. The structured path (CG with FFT products)
    holds the prior fields of one chunk, its CG vectors and the paths, never an |S| x |S| array; the
    "auto" solver's Cholesky fallback adds the Gram matrix over the occupied sites (and its gathers)."""
    torus = emb.size
    chunk = max(1, min(L, _CHUNK_POINTS // torus))
    lattice = int(np.prod(sizes))
    common = 3 * 16 * torus * chunk + 2 * _F8 * chunk * lattice + 6 * _F8 * n + 2 * _F8 * L * m
    structured = common + cg_bytes(chunk, sizes) + _F8 * lattice
    return int(structured), int(structured + 2 * _F8 * sites * sites)


def fallback_allowed(fallback_bytes: int, memory_limit: float | None) -> bool:
    """Whether the "auto" solver may fall back to the dense Cholesky factor: always without a memory
    limit, else only when the estimate with the fallback is within it (the caller's estimate then
    names only the structured path, and a CG answer that is not accepted raises NumericalError)."""
    return memory_limit is None or fallback_bytes <= memory_limit


def _grid_points(axes) -> np.ndarray:
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=-1)


_PRIOR_FACTORS: dict = {}


def grid_prior_factor(kernel: Kernel, axes) -> np.ndarray:
    """Lower-triangular L_GG with L_GG L_GG^T = k(G, G) + j I (+ a PSD repair, see
    :func:`~privgp.models.sampling.psd_factor`) on the grid points G of ``axes`` ('ij' order), j the
    jitter of a unit-scale process. Cached per (kernel, grid) for grids of at most
    :data:`MAX_CACHED_GRID` points (the two most recent)."""
    key = (kernel, tuple(np.asarray(a, dtype=float).tobytes() for a in axes))
    hit = _PRIOR_FACTORS.get(key)
    if hit is not None:
        return hit
    G = _grid_points(axes)
    F = psd_factor(kernel(G), 1.0, triangular=True, overwrite=True)
    F.setflags(write=False)
    if G.shape[0] <= MAX_CACHED_GRID:
        while len(_PRIOR_FACTORS) >= 2:
            _PRIOR_FACTORS.pop(next(iter(_PRIOR_FACTORS)))
        _PRIOR_FACTORS[key] = F
    return F


class _MatheronPlan:
    """Matheron's rule with an exact joint prior on grid u inputs, the grid block's factor shared.

    Joint prior h ~ N(0, k(J, J) + j I), J = (G, X), factored blockwise: h(G) = L_GG z1,
    h(X) = L_XG z1 + L_XX z2 with L_XG = k(X, G) L_GG^-T and L_XX L_XX^T = k(X, X) + j I - L_XG L_XG^T;
    then f(G) = sigma h(G) + k(G, X) (K + r^2 C^-1)^-1 (ybar - sigma h(X) - sigma r C^-1/2 e), e ~ N(0, I)
    (the module docstring, step 3) on the distinct inputs X with counts C and mean responses ybar
    (:func:`~privgp.models.gp.posterior.aggregate_duplicates`), exactly GP(mu_D, sigma^2 k_D) on G (plus jitter
    variance).
    """

    def __init__(self, kernel: Kernel, X, y, axes, r: float, sigma: float):
        X, y, counts = aggregate_duplicates(X, y)    # exact: records at one input enter via count and mean
        self.L_GG = grid_prior_factor(kernel, axes)
        G = _grid_points(axes)
        K_GX = kernel(G, X)
        K_XX = kernel(X)
        W = solve_triangular(self.L_GG, K_GX, lower=True, check_finite=False)     # (m, u) = L_XG^T
        self.W = W
        self.L_XX = psd_factor(K_XX - W.T @ W, 1.0)                              # adds the jitter j I
        self.A = cho_factor(K_XX + np.diag(r**2 / counts), lower=True)
        self.K_GX = K_GX
        self.y, self.r, self.sigma, self.noise_sd = y, r, sigma, r / np.sqrt(counts)

    def draw(self, z1: np.ndarray, z2: np.ndarray, e: np.ndarray) -> np.ndarray:
        """Paths (L, m) from standard normals z1 (L, m), z2 (L, n), e (L, n) (a linear map: tests use it
        to check the covariance exactly)."""
        hG = z1 @ self.L_GG.T
        hX = z1 @ self.W + z2 @ self.L_XX.T
        resid = self.y[None, :] - self.sigma * hX - self.sigma * self.noise_sd * e
        return self.sigma * hG + cho_solve(self.A, resid.T).T @ self.K_GX.T

    def sample(self, rng: np.random.Generator, L: int, eta: float) -> np.ndarray:
        m, n = self.W.shape
        f = self.draw(rng.standard_normal((L, m)), rng.standard_normal((L, n)), rng.standard_normal((L, n)))
        if eta > 0:
            f += eta * (rng.standard_normal((L, m)) @ self.L_GG.T)
        return f


def grid_paths(kernel: Kernel, X, y, axes, *, r: float, sigma: float, rng: np.random.Generator,
               L: int = 1, eta: float = 0.0, method: str = "auto", refine: int | None = None,
               solver: str = "auto", memory_limit: float | None = None) -> np.ndarray:
    """L exact posterior paths on the regular grid ``axes``: shape (L, len(axes[0]), len(axes[1]), ...).

    ``method``: "circulant" (exact prior by circulant embedding + Matheron conditioning; requires
    the inputs on a lattice refining the grid, see :func:`snap_to_lattice`, and a distance kernel),
    "matheron" (exact joint prior on grid u inputs with the grid block's factor cached, then
    Matheron conditioning; O(m^2 n) per dataset once the grid factor exists), "dense"
    (:func:`sample_joint` on the grid points, O(m^3)), or "auto" (circulant when it is exact, else
    matheron). ``refine``: the lattice refinement per axis (default: the smallest
    R <= MAX_REFINE that puts every input on the lattice). ``eta > 0`` adds an independent prior
    draw of GP(0, eta^2 k) (seed 000, Prop. 2).

    ``solver`` (circulant method): the linear system (K_SS + r^2 C^{-1}) w = b of the conditioning step
    over the occupied sites S is solved by "cg" (conjugate gradients in the precision form with FFT
    products on the lattice, :mod:`privgp.models.sampling.lattice_cg`; no |S| x |S| matrix), "cholesky" (the
    dense factor of the Gram matrix gathered from a lag table) or "auto" (CG, falling back to Cholesky
    when CG is not accepted within about a factorisation's cost; with ``memory_limit`` the fallback
    only if :func:`circulant_bytes` with it is within the limit, else NumericalError).

    What "exact" means numerically. The law is exact in real arithmetic; in float64 the draw is the
    Matheron map applied to exactly distributed normals, with a solve that is exact to rounding:
    the dense path's Cholesky solve has a relative backward error of order |S| * 1.1e-16 (a few
    1e-13 for the 8 833 sites of the default 2-D release); the structured path's answer is accepted only
    when its *true* residual |b - B x| is <= 1e-12 |b| (a backward error of the same order), otherwise
    the dense path is used. Either way the paths differ from the exact map's by about that backward
    error times the system's condition number; the tests find the two solvers' paths from the same
    prior draw equal to 1e-10 and their law equal to the exact posterior's. The FFT prior draw is exact
    up to rounding and the embedding's round-off eigenvalues (module docstring, step 2).
    """
    if solver not in SOLVERS:
        raise v.InvalidParameterError("solver", f"one of {SOLVERS}", solver)
    if method not in METHODS:
        raise v.InvalidParameterError("method", "one of " + ", ".join(repr(m) for m in METHODS), method)
    axes = _check_axes(axes, uniform=method in ("auto", "circulant"))
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
    if method in ("auto", "circulant"):
        lattice = _lattice_indices(X, axes, refine) if isinstance(kernel, DistanceKernel) else None
        if lattice is not None:
            Rs, idx = lattice
            plan = _CirculantPlan(kernel, axes, Rs, *aggregate_on_lattice(idx, y), r, sigma, solver=solver)
            if plan.ok:
                if solver == "auto" and memory_limit is not None:
                    plan.fallback_ok = fallback_allowed(
                        circulant_bytes(plan.emb, plan.sizes, plan.n, X.shape[0], int(np.prod(shape)), L)[1],
                        memory_limit)
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
                "method", "'matheron', 'dense' or 'auto' here: the circulant embedding is not positive "
                "semidefinite even with padding (not exact)", method)
    if method in ("auto", "matheron"):
        return _MatheronPlan(kernel, X, y, axes, r, sigma).sample(rng, L, eta).reshape((L,) + shape)
    post = ExactPosterior.aggregated(kernel, X, y, r, sigma)  # exact: duplicates enter via count and mean
    return sample_joint(post, _grid_points(axes), L, rng, eta=eta).reshape((L,) + shape)


def grid_paths_from_sites(kernel: Kernel, sites: LatticeSites, sums, counts, axes, *, r: float, sigma: float,
                          rng: np.random.Generator, L: int = 1, eta: float = 0.0, solver: str = "auto",
                          memory_limit: float | None = None) -> np.ndarray:
    """The circulant sampler of :func:`grid_paths` from per-site statistics instead of records: ``sums`` and
    ``counts`` of the responses at every site of ``sites`` (records reduced in one pass, e.g. on a Dask
    cluster). The posterior given records snapped to the lattice depends on them only through these
    (module docstring of :mod:`privgp.models.gp`, duplicate inputs), so the law is that of :func:`grid_paths`
    on the records; the draws equal it up to the rounding of the per-site means. (L, *grid shape)."""
    if not isinstance(sites, LatticeSites):
        raise v.InvalidParameterError("sites", "a LatticeSites", type(sites).__name__)
    if not isinstance(kernel, DistanceKernel):
        raise v.InvalidParameterError("kernel", "a stationary distance kernel for the circulant sampler", kernel.name)
    axes = _check_axes(axes, uniform=True)
    r, sigma, eta = v.positive("r", r), v.positive("sigma", sigma), v.nonnegative("eta", eta)
    rng, L = v.generator("rng", rng), v.integer("L", L, minimum=1)
    sums = np.asarray(sums, dtype=float).reshape(-1)
    counts = np.asarray(counts, dtype=float).reshape(-1)
    if sums.shape != (sites.size,) or counts.shape != (sites.size,):
        raise v.InvalidParameterError("sums/counts", f"one value per lattice site ({sites.size})", (sums.shape, counts.shape))
    lin = np.flatnonzero(counts > 0)
    shape = tuple(a.shape[0] for a in axes)
    if lin.size == 0:   # no record: the prior GP(0, (sigma^2 + eta^2) k), as exact_paths
        from .prior import prior_paths

        return prior_paths(kernel, axes, rng=rng, L=L, scale=float(np.sqrt(sigma * sigma + eta * eta)))
    idx = list(np.unravel_index(lin, sites.shape))
    plan = _CirculantPlan(kernel, axes, [sites.refine] * len(axes), idx, counts[lin], sums[lin] / counts[lin], r,
                          sigma, solver=solver)
    if not plan.ok:
        raise v.InvalidParameterError("grid", "a grid on which the circulant embedding is exact", shape)
    if solver == "auto" and memory_limit is not None:
        plan.fallback_ok = fallback_allowed(
            circulant_bytes(plan.emb, plan.sizes, plan.n, int(counts.sum()), int(np.prod(shape)), L)[1], memory_limit)
    return plan.sample(rng, L, eta)
