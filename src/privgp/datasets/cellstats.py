"""Exact per-cell sums and counts, mergeable across partitions in any order.

A floating-point sum depends on the order of its terms, so per-partition sums added on a cluster would
differ in the last bits from one in-memory sum. :class:`CellSums` keeps each cell's sum EXACTLY: every
finite double is m 2^(e-53) with an integer mantissa |m| < 2^53 (``numpy.frexp``); the mantissa is split
into a high part (|h| < 2^27) and a low part (0 <= l < 2^26), and for each (cell, exponent) the parts
are summed as integers (``bincount`` in float64 is exact while a batch holds fewer than 2^26 records per
bucket; the running totals are int64). Merging two accumulators adds integers, so the result does not
depend on partitioning or order; :meth:`CellSums.result` rounds each cell's exact sum to the nearest
double once. Counts are integers throughout.
"""
from __future__ import annotations

import math

import numpy as np

#: records per bincount (exactness of the float64 bincount of 27-bit integers needs < 2^26 per bucket)
MAX_BATCH = 1 << 22
_SPLIT = 26


class CellSums:
    """Exact per-cell sums of weights and counts of records over ``size`` cells."""

    def __init__(self, size: int):
        self.size = int(size)
        self.counts = np.zeros(self.size, dtype=np.int64)
        self.parts: dict[int, np.ndarray] = {}   # exponent -> (2, size) int64: high and low mantissa sums

    def add(self, idx: np.ndarray, w: np.ndarray) -> CellSums:
        """Add records with flat cell indices ``idx`` and finite weights ``w``."""
        idx = np.asarray(idx, dtype=np.int64)
        w = np.asarray(w, dtype=float)
        for i in range(0, idx.shape[0], MAX_BATCH):
            self._add(idx[i:i + MAX_BATCH], w[i:i + MAX_BATCH])
        return self

    def _add(self, idx: np.ndarray, w: np.ndarray) -> None:
        if idx.size == 0:
            return
        self.counts += np.bincount(idx, minlength=self.size)
        m, e = np.frexp(w)
        nz = m != 0
        if not nz.any():
            return
        idx, m, e = idx[nz], m[nz], e[nz].astype(np.int64)
        mi = np.ldexp(m, 53).astype(np.int64)          # exact: |m| < 1
        hi = mi >> _SPLIT
        lo = mi - (hi << _SPLIT)
        emin = int(e.min())
        present = np.flatnonzero(np.bincount(e - emin))
        lut = np.zeros(int(present[-1]) + 1, dtype=np.int64)
        lut[present] = np.arange(present.size)
        key = lut[e - emin] * self.size + idx
        total = present.size * self.size
        H = np.bincount(key, weights=hi.astype(float), minlength=total).reshape(present.size, self.size)
        L = np.bincount(key, weights=lo.astype(float), minlength=total).reshape(present.size, self.size)
        for k, p in enumerate(present):
            ex = int(p) + emin
            block = np.stack([H[k], L[k]]).astype(np.int64)
            if ex in self.parts:
                self.parts[ex] += block
            else:
                self.parts[ex] = block

    def merge(self, other: CellSums) -> CellSums:
        """Add another accumulator's records (exact; order does not matter)."""
        if other.size != self.size:
            raise ValueError(f"cannot merge cell sums over {other.size} cells into {self.size}")
        self.counts += other.counts
        for ex, block in other.parts.items():
            if ex in self.parts:
                self.parts[ex] = self.parts[ex] + block
            else:
                self.parts[ex] = block.copy()
        return self

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(sums, counts) as float64 arrays of length ``size``: each sum is the exact sum rounded once."""
        sums = np.zeros(self.size)
        if self.parts:
            emin = min(self.parts)
            exact = np.zeros(self.size, dtype=object)
            for ex, block in self.parts.items():
                hi = block[0].astype(object)
                lo = block[1].astype(object)
                exact = exact + ((hi << _SPLIT) + lo) * (1 << (ex - emin))
            for c in range(self.size):
                t = int(exact[c])
                sums[c] = 0.0 if t == 0 else _scaled(t, emin - 53)
        return sums, self.counts.astype(float)


def _scaled(t: int, shift: int) -> float:
    """The double nearest to t 2^shift (t a Python int)."""
    bits = abs(t).bit_length()
    if bits > 60:  # keep 60 significant bits and a sticky bit, then let float() round once
        drop = bits - 60
        kept = abs(t) >> drop
        if abs(t) & ((1 << drop) - 1):
            kept |= 1
        return math.copysign(math.ldexp(float(kept), shift + drop), -1.0 if t < 0 else 1.0)  # float(t) may overflow
    return math.ldexp(float(t), shift)


def cell_sums(size: int, idx: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact per-cell (sums, counts) of one array of records (see :class:`CellSums`)."""
    return CellSums(size).add(idx, w).result()
