"""Timing helper shared by the benchmark scripts (run them as ``python benchmarks/bench_*.py``)."""
from __future__ import annotations

import time


def timings(fn, repeats: int) -> tuple[float, float, float]:
    """(first call, best, median) wall seconds of ``fn``: one first call (imports, caches), then
    ``repeats`` more."""
    import numpy as np

    ts = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    rest = ts[1:] or ts
    return ts[0], min(rest), float(np.median(rest))
