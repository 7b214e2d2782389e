"""Benchmark: BLAS pinned to one thread for a block, privgp's ``one_blas_thread`` against threadpoolctl's
``threadpool_limits`` in the same process and run (issue 30: the suite made 1 465 such calls).

    python benchmarks/bench_blas_pin.py [--calls 200] [--repeat 5]

In a process that has imported numpy, scipy.linalg and (if installed) torch, as the test suite's workers have:
the median over ``--repeat`` rounds of the mean time of an empty pinned block, each way, alternating.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine_line  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    try:
        import torch  # noqa: F401
        loaded = "numpy, scipy.linalg, torch"
    except ImportError:
        loaded = "numpy, scipy.linalg"
    from threadpoolctl import threadpool_limits

    from privgp.blas_threads import loaded_objects, one_blas_thread

    def threadpoolctl_block():
        with threadpool_limits(limits=1, user_api="blas"):
            pass

    def privgp_block():
        with one_blas_thread():
            pass

    ways = {"threadpoolctl threadpool_limits": threadpoolctl_block, "privgp one_blas_thread": privgp_block}
    times: dict[str, list[float]] = {name: [] for name in ways}
    for fn in ways.values():
        fn()   # warm
    for _ in range(args.repeat):
        for name, fn in ways.items():
            t = time.perf_counter()
            for _ in range(args.calls):
                fn()
            times[name].append((time.perf_counter() - t) / args.calls)
    print(machine_line())
    print(f"loaded: {loaded}; {loaded_objects()} shared objects; {args.calls} calls x {args.repeat} rounds")
    med = {name: statistics.median(ts) for name, ts in times.items()}
    for name, m in med.items():
        print(f"  {name:34s} {m * 1e6:9.1f} us per block")
    peer = med["threadpoolctl threadpool_limits"]
    print(f"  ratio privgp / threadpoolctl      {med['privgp one_blas_thread'] / peer:.4f}")


if __name__ == "__main__":
    main()
