"""Speed targets of the exact GP layer (issue "Foundation").

Run:  python benchmarks/bench_gp.py [--repeats 5] [--threads N]
Prints a table: target, sizes, first-call seconds (fresh process, includes memory first touch),
best and median seconds over the repeats, the target and whether the median meets it.

1. Posterior mean and variance at one point for 4x10^4 datasets of n = 10 (the membership
   attack): :func:`privgp.models.gp.batched_mean_var`.
2. Mean and variance on 800 points for 100 datasets of n = 100 at 7 values of r (hyperparameter
   search): :class:`privgp.models.gp.EigenPosterior` (one eigendecomposition per dataset, built inside
   the timed region) and ``mean_var``; 1-D and 2-D inputs.
"""
from __future__ import annotations

import argparse
import os
import platform

from _timing import timings


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="BLAS threads (set before numpy is imported)")
    args = ap.parse_args(argv)
    if args.threads:
        # before numpy is imported: numpy and scipy load separate OpenBLAS libraries, and a runtime
        # limit (threadpoolctl) misses those not loaded yet; oversubscribed BLAS threads cost up to
        # 1000x for small factorisations on a loaded machine
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    import numpy as np

    from privgp.models.gp import EigenPosterior, batched_mean_var
    from privgp.models.kernels import Exponential

    rng = np.random.default_rng(0)
    kernel = Exponential(0.2)
    rows = []

    X = rng.uniform(size=(40_000, 10, 1))
    y = rng.uniform(-1, 1, size=(40_000, 10))
    xq = np.array([[0.5]])
    rows.append(("mean+var at 1 point", "40000 datasets x n=10, d=1",
                 *timings(lambda: batched_mean_var(kernel, X, y, xq, 1.0), args.repeats), 0.5))

    r_values = np.logspace(-1, 1, 7)
    for d in (1, 2):
        X = rng.uniform(size=(100, 100, d))
        y = rng.uniform(-1, 1, size=(100, 100))
        Xq = rng.uniform(size=(800, d))
        rows.append(("mean+var, 7 r (eigh incl.)", f"100 datasets x n=100, 800 points, d={d}",
                     *timings(lambda: EigenPosterior(kernel, X, y).mean_var(Xq, r_values), args.repeats), 0.5))  # noqa: B023 (called within this iteration)

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"numpy {np.__version__}, load average {os.getloadavg()[0]:.1f}, BLAS threads {args.threads or 'default'}")
    print("| target | sizes | first call s | best s | median s | limit s | met |")
    print("|---|---|---|---|---|---|---|")
    for name, sizes, first, best, med, limit in rows:
        print(f"| {name} | {sizes} | {first:.3f} | {best:.3f} | {med:.3f} | {limit} | {'yes' if med <= limit else 'NO'} |")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
