"""Arithmetic that gives the same bits on every CPU, for the numbers ``privgp verify`` rebuilds exactly.

numpy picks its float64 ``exp``, ``log10`` and ``power`` loops by CPU: where AVX-512 is found it runs its own
SIMD versions, elsewhere the C library's; the two round the last bit differently for some inputs. A
certificate or a released map made on one CPU was then rebuilt a few ulp away on another, and ``privgp verify``
(which compares exactly, so that low digits cannot carry anything else: red team 17, H7) failed there. The
same holds for BLAS products, whose kernels differ in summation order and in the use of fused multiply-adds.

Here: the C library's ``exp``, ``log10`` and ``pow`` (Python's :mod:`math`; numpy's own loops where they are the
C library's on this machine), and sums of products in a fixed order with separately rounded operations.
Addition, multiplication, division and square roots are IEEE-exact in numpy everywhere.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

#: inputs on which numpy's exp is compared with the C library's once (where AVX-512 is used, several differ)
_PROBE = np.linspace(-40.0, 5.0, 4099)


@lru_cache(maxsize=1)
def numpy_exp_is_the_c_librarys() -> bool:
    """Whether ``numpy.exp`` on float64 gives the C library's bits on this machine (probed once)."""
    return bool(np.array_equal(np.exp(_PROBE), np.array([math.exp(v) for v in _PROBE.tolist()])))


def exp(x) -> np.ndarray:
    """``exp`` elementwise, the C library's (the same bits on every CPU with the same C library)."""
    x = np.asarray(x, dtype=float)
    if numpy_exp_is_the_c_librarys():
        return np.exp(x)
    return np.fromiter(map(math.exp, x.ravel().tolist()), dtype=float, count=x.size).reshape(x.shape)


def geomspace(lo: float, hi: float, num: int) -> np.ndarray:
    """``numpy.geomspace(lo, hi, num)`` for 0 < lo < hi with the C library's log10 and pow: the same numbers as
    numpy's where numpy uses the C library (CPUs without AVX-512), on every CPU."""
    ys = np.linspace(math.log10(lo), math.log10(hi), num)
    out = np.array([math.pow(10.0, y) for y in ys.tolist()], dtype=float)
    if num > 0:
        out[0] = lo
    if num > 1:
        out[-1] = hi
    return out


def contract(W: np.ndarray, A: np.ndarray, axis: int) -> np.ndarray:
    """``W`` (p, c) applied along ``axis`` of ``A`` (size c there): out[.., i, ..] = sum_k W[i, k] A[.., k, ..],
    the terms added in the order k = 0, 1, ..., each product rounded before it is added (what
    ``np.moveaxis(np.tensordot(W, A, axes=([1], [axis])), 0, axis)`` computes up to BLAS's rounding)."""
    W = np.asarray(W, dtype=float)
    A = np.moveaxis(np.asarray(A, dtype=float), axis, 0)
    shape = (W.shape[0],) + A.shape[1:]
    out, term = np.zeros(shape), np.empty(shape)
    columns = W.T.reshape((W.shape[1], -1) + (1,) * (A.ndim - 1))
    for k in range(W.shape[1]):
        np.multiply(columns[k], A[k], out=term)
        out += term
    return np.moveaxis(out, 0, axis)
