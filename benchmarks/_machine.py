"""The machine's speed, printed beside every benchmark's numbers: one-thread DGEMM GFLOP/s and the load.

    from _machine import machine_line; print(machine_line())

A DGEMM of two n x n float64 matrices (2 n^3 flops), best of ``repeats``, in a separate process with BLAS
limited to one thread (this module imports no numpy: the scripts set their own BLAS threads before they do). On a shared machine the figure moves with
the load; an absolute time in BENCHMARKS.md is only comparable with another taken at a similar DGEMM speed,
which is why each row states it, and why the rows are ratios against a peer measured in the same run.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys

_DGEMM = """
import time
import numpy as np
n, repeats = {n}, {repeats}
rng = np.random.default_rng(0)
a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
a @ b
best = float("inf")
for _ in range(repeats):
    t0 = time.perf_counter()
    a @ b
    best = min(best, time.perf_counter() - t0)
print(2.0 * n ** 3 / best / 1e9)
"""


def dgemm_gflops(n: int = 1024, repeats: int = 5) -> float:
    """Measured in a fresh process with BLAS pinned to one thread: the calling script has not imported numpy
    yet when it prints this line first, and some scripts set their BLAS threads before importing it."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _DGEMM.format(n=n, repeats=repeats)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out)


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
