"""Replace-one neighbouring datasets for the noisy grids' sensitivity property tests."""
from __future__ import annotations

import numpy as np


def replaced_neighbour(rng: np.random.Generator, box, n: int):
    """(X, y, X2, y2): n records uniform in ``box`` with responses at the clip bounds or inside, and the same data
    with one record replaced by another anywhere in the box (a response at a bound or inside)."""
    X = box.lower + rng.random((n, 2)) * box.widths
    y = rng.choice([-1.0, 1.0, rng.uniform(-1, 1)], n)
    X2, y2 = X.copy(), y.copy()
    i = rng.integers(n)
    X2[i] = box.lower + rng.random(2) * box.widths
    y2[i] = rng.choice([-1.0, 1.0, rng.uniform(-1, 1)])
    return X, y, X2, y2


def released_counts_of_a_moved_record(plan, draws: int, rng: np.random.Generator):
    """Red team 21's neighbouring pair for the low-bit attack: all n records in cell (0, 0) with y = 0, and the
    same with one record moved into cell (1, 0). For each, the released count of cell (1, 0) over ``draws``
    draws of ``plan`` (an array per dataset)."""
    sums, counts = np.zeros(plan.cells), np.zeros(plan.cells)
    counts[0, 0] = plan.n
    moved = counts.copy()
    moved[0, 0], moved[1, 0] = plan.n - 1, 1
    return [np.array([plan.draw_from_statistics(sums, c, rng).statistics["counts"][1, 0] for _ in range(draws)])
            for c in (counts, moved)]
