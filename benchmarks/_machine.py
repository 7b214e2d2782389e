"""The machine's speed, printed beside every benchmark's numbers: one-thread DGEMM GFLOP/s and the load.

    from _machine import machine_line; print(machine_line())

A DGEMM of two n x n float64 matrices (2 n^3 flops), best of ``repeats``, with BLAS limited to one thread
(threadpoolctl; the benchmarks pin BLAS to one thread anyway). On a shared machine the figure moves with
the load; an absolute time in BENCHMARKS.md is only comparable with another taken at a similar DGEMM speed,
which is why each row states it, and why the rows are ratios against a peer measured in the same run.
"""
from __future__ import annotations

import os
import platform
import time


def dgemm_gflops(n: int = 1024, repeats: int = 5) -> float:
    import numpy as np
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    best = float("inf")
    with threadpool_limits(1):
        a @ b  # warm-up
        for _ in range(repeats):
            t0 = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best / 1e9


def machine_line() -> str:
    """'machine: DGEMM 1024^3 ... GFLOP/s (1 thread), load ..., N cores, CPU model'."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), model)
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"machine: DGEMM 1024x1024 {dgemm_gflops():.1f} GFLOP/s (1 thread, best of 5); load average {load}; "
            f"{os.cpu_count()} cores; {model}")


if __name__ == "__main__":
    print(machine_line())
