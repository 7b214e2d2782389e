"""Exact per-cell sums (privgp.datasets.cellstats): each sum is the exact rational sum rounded once, whatever
the magnitudes in a cell."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.datasets.cellstats import cell_sums

FINITE = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), FINITE), min_size=1, max_size=30))
def test_each_cell_is_the_exact_sum_rounded_once(records):
    idx = np.array([c for c, _ in records])
    w = np.array([x for _, x in records])
    sums, counts = cell_sums(3, idx, w)
    for c in range(3):
        exact = sum((Fraction(x) for k, x in records if k == c), Fraction(0))
        assert sums[c] == float(exact)
        assert counts[c] == sum(1 for k, _ in records if k == c)


def test_a_cell_spanning_a_thousand_binary_orders_of_magnitude():
    """1e300 and 1e-300 in one cell (about 2000 bits apart): the sum is 1e300, not an OverflowError."""
    sums, _ = cell_sums(1, np.array([0, 0, 0]), np.array([1e300, 1e-300, -1e-300 / 3]))
    assert sums[0] == float(Fraction(1e300) + Fraction(1e-300) - Fraction(1e-300 / 3))
    sums, _ = cell_sums(1, np.array([0, 0]), np.array([-1e300, 1e-300]))
    assert sums[0] == -1e300
