"""Conjugate gradients on a lattice with FFT products: the one structured solver of the lattice paths.

Both lattice paths solve systems (K_SS + r^2 C^{-1}) w = b over the occupied sites S of a regular
lattice L (counts C, ridge r): the functional mechanism's posterior mean (:mod:`privgp.models.sampling.mean`)
and the Matheron conditioning of the posterior-sample paths (:mod:`privgp.models.sampling.grid`). They use
the precision form on the whole lattice,

    w = P^{1/2} x,   (I + P^{1/2} K_LL P^{1/2}) x = P^{1/2} b,   P = diag(c_s / r^2) (0 on empty sites),

which equals (K_SS + r^2 C^{-1})^{-1} b on the occupied sites (push-through identity
P^{1/2} (I + P^{1/2} K P^{1/2})^{-1} P^{1/2} = (P^{-1} + K)^{-1}) and is 0 elsewhere. The matrix
B = I + P^{1/2} K_LL P^{1/2} is symmetric with eigenvalues >= 1, and K_LL times a vector is a lattice
convolution done by real FFTs on a torus of M_k >= 2 (N_k - 1) points: no lag between two lattice
points wraps, so it is the exact product (to rounding), and neither K_SS nor any |S| x |S| array is
formed.

Tolerance (what "exact" means numerically): CG stops when the recursive residual is below
:data:`CG_RTOL` |b| and its answer is *accepted only if the true residual* |b - B x|, computed with one
more product, is <= :data:`CG_ACCEPT` |b| = 1e-12 |b| (for every right-hand side). An accepted x is
thus the exact solution of B x = b + e with |e| <= 1e-12 |b|: a relative backward error of the same
order as a float64 Cholesky factorisation of a system with thousands of unknowns (which guarantees
about |S| * 1.1e-16 relative to |A|), so the two solvers agree to rounding (about 1e-13 in the tests,
times the condition number of the system). Callers fall back to the Cholesky factorisation when CG is
not accepted within an iteration budget (:func:`auto_iterations`).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
from scipy.fft import irfftn, next_fast_len, rfftn

from ..kernels import DistanceKernel

#: CG stops when the recursive residual is below this fraction of |b| ...
CG_RTOL = 1e-14
#: ... and is accepted only if the true residual |b - B x| is below this fraction of |b|
CG_ACCEPT = 1e-12
#: most iterations of the "auto" solvers before they fall back to a Cholesky factorisation
MAX_AUTO_ITERATIONS = 10**4
_F8 = 8


def torus_sizes(sizes: tuple[int, ...]) -> tuple[int, ...]:
    """The FFT torus of the lattice products: M_k = the first fast length >= 2 (N_k - 1)."""
    return tuple(next_fast_len(max(1, 2 * (N - 1))) for N in sizes)


@lru_cache(maxsize=8)
def lattice_spectrum(kernel: DistanceKernel, steps: tuple[float, ...], sizes: tuple[int, ...]):
    """(torus sizes M, real FFT of the first row of the circulant that embeds k on the lattice): with
    M_k >= 2 (N_k - 1) no lag between two lattice points wraps, so the circular convolution restricted
    to the lattice is the exact product with K_LL. Cached: it holds no data (forecasts reuse it)."""
    M = torus_sizes(sizes)
    lags = [np.minimum(np.arange(m), m - np.arange(m)) * h for m, h in zip(M, steps)]
    grids = np.meshgrid(*lags, indexing="ij", sparse=True)
    spec = rfftn(kernel.of_distance(np.sqrt(sum(g * g for g in grids))))
    spec.setflags(write=False)
    return M, spec


def lattice_product(kernel: DistanceKernel, steps: tuple[float, ...],
                    sizes: tuple[int, ...]) -> Callable[[np.ndarray], np.ndarray]:
    """V -> K_LL V for V of shape (k, prod(sizes)) (k vectors on the raveled lattice, C order): (k, prod(sizes))."""
    M, spec = lattice_spectrum(kernel, tuple(float(h) for h in steps), tuple(int(N) for N in sizes))
    sizes = tuple(int(N) for N in sizes)
    dims = tuple(range(1, len(sizes) + 1))
    inner = (slice(None),) + tuple(slice(0, N) for N in sizes)

    def K(V: np.ndarray) -> np.ndarray:
        k = V.shape[0]
        out = irfftn(rfftn(V.reshape((k,) + sizes), s=M, axes=dims) * spec, s=M, axes=dims)[inner]
        return out.reshape(k, -1)

    return K


def auto_iterations(sites: int, sizes: tuple[int, ...]) -> int:
    """The iteration budget of the "auto" solvers: CG products (each O(torus log torus)) costing at most
    about a Cholesky factorisation of the |S| x |S| system (|S|^3 / 3 flops), between 100 and
    :data:`MAX_AUTO_ITERATIONS`."""
    torus = int(np.prod(torus_sizes(sizes)))
    budget = (sites ** 3 / 3) / (25.0 * torus * max(np.log2(torus), 1.0))
    return int(min(MAX_AUTO_ITERATIONS, max(100, budget)))


def cg_bytes(rows: int, sizes: tuple[int, ...]) -> int:
    """Peak memory of :func:`precision_cg` for ``rows`` right-hand sides on this lattice (its vectors,
    the FFT buffers of one product and the cached spectrum); no |S| x |S| array."""
    size = int(np.prod(sizes))
    torus = int(np.prod(torus_sizes(sizes)))
    return int(_F8 * rows * (7 * size + 4 * torus) + _F8 * torus)


def precision_cg(K: Callable[[np.ndarray], np.ndarray], sp: np.ndarray, b: np.ndarray, *,
                 max_iter: int) -> np.ndarray | None:
    """x with (I + diag(sp) K diag(sp)) x = b for each row of b (k, size), by conjugate gradients
    (independent recursions run side by side), or None if any row did not converge within ``max_iter``
    products or its true residual is above CG_ACCEPT |b_row| (module docstring). ``K``: the lattice
    product of :func:`lattice_product`; ``sp``: P^{1/2} on the raveled lattice (0 on empty sites)."""
    b = np.atleast_2d(np.asarray(b, dtype=float))

    def B(V: np.ndarray) -> np.ndarray:
        return V + sp * K(sp * V)

    nb = np.sqrt(np.einsum("ij,ij->i", b, b))
    x = np.zeros_like(b)
    res = b.copy()
    p = res.copy()
    rr = nb * nb
    active = np.sqrt(rr) > CG_RTOL * nb
    for _ in range(max_iter):
        if not active.any():
            break
        idx = slice(None) if active.all() else np.flatnonzero(active)
        P, R = p[idx], res[idx]
        BP = B(P)
        a = rr[idx] / np.einsum("ij,ij->i", P, BP)
        x[idx] += a[:, None] * P
        R -= a[:, None] * BP
        rn = np.einsum("ij,ij->i", R, R)
        p[idx] = R + (rn / rr[idx])[:, None] * P
        res[idx] = R
        rr[idx] = rn
        active[idx] = np.sqrt(rn) > CG_RTOL * nb[idx]
    true = b - B(x)
    if not np.all(np.sqrt(np.einsum("ij,ij->i", true, true)) <= CG_ACCEPT * nb):
        return None
    return x
