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


def _c_exp(x: np.ndarray) -> np.ndarray:
    """The C library's exp, one Python call a value (about 0.1 us each)."""
    return np.fromiter(map(math.exp, x.ravel().tolist()), dtype=float, count=x.size).reshape(x.shape)


def _reversed_exp(x: np.ndarray) -> np.ndarray:
    """numpy's exp read backwards into a forward array. numpy runs its AVX-512 float64 loop only where the input
    and output strides allow it; an input read backwards into a forward output does not (numpy 2.4), so numpy
    calls the C library's exp for each value, at about a tenth of :func:`_c_exp`'s time. Used only where
    :func:`exp_route` has checked that it gives the C library's bits."""
    backwards = np.exp(np.ascontiguousarray(x).ravel()[::-1])
    return np.ascontiguousarray(backwards[::-1]).reshape(x.shape)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.view(np.int64), b.view(np.int64)))


@lru_cache(maxsize=1)
def exp_route() -> str:
    """How :func:`exp` gets the C library's bits on this machine (probed once): ``"numpy"`` where ``numpy.exp`` is
    the C library's (CPUs without AVX-512), ``"reversed"`` where numpy's exp read backwards is (see
    :func:`_reversed_exp`), else ``"python"`` (:func:`_c_exp`). numpy's float64 exp is either its SIMD loop or the
    C library's, and the SIMD loop differs from the C library on several percent of the probe's values, so a probe
    that agrees bit for bit, at every length it checks, tells which one runs."""
    want = _c_exp(_PROBE)
    if _same_bits(np.exp(_PROBE), want):
        return "numpy"
    differ = np.flatnonzero(np.exp(_PROBE) != want)
    if _same_bits(_reversed_exp(_PROBE), want) and all(   # short arrays too, at values where the SIMD loop differs
            _same_bits(_reversed_exp(_PROBE[i:i + k]), want[i:i + k]) for i in differ[:8] for k in (1, 2, 3, 9, 17)):
        return "reversed"
    return "python"


def numpy_exp_is_the_c_librarys() -> bool:
    """Whether ``numpy.exp`` on float64 gives the C library's bits on this machine (:func:`exp_route`)."""
    return exp_route() == "numpy"


def exp(x) -> np.ndarray:
    """``exp`` elementwise, the C library's (the same bits on every CPU with the same C library)."""
    x = np.asarray(x, dtype=float)
    route = exp_route()
    if route == "numpy":
        return np.exp(x)
    if route == "reversed":
        return _reversed_exp(x)
    return _c_exp(x)


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
    # Where W[i, k] is 0 and A is finite the term is +-0, and adding it leaves out[i] as it is (out starts at +0
    # and a sum of terms never becomes -0 in round-to-nearest), so each k adds only over the rows from W[:, k]'s
    # first nonzero to its last: the same bits, and a Gaussian smoothing matrix whose tails underflow to 0 is
    # banded.
    rows = np.zeros((W.shape[1], 2), dtype=np.intp)
    rows[:, 1] = W.shape[0]
    if np.all(np.isfinite(A)):
        nonzero = W != 0
        rows[:, 0] = np.argmax(nonzero, axis=0)
        rows[:, 1] = W.shape[0] - np.argmax(nonzero[::-1], axis=0)
        rows[~nonzero.any(axis=0)] = 0
    for k, (lo, hi) in enumerate(rows.tolist()):
        if lo < hi:
            np.multiply(columns[k, lo:hi], A[k], out=term[lo:hi])
            out[lo:hi] += term[lo:hi]
    return np.moveaxis(out, 0, axis)
