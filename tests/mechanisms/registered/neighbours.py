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
