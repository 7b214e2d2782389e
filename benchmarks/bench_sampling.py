"""Speed targets of the exact samplers (issue "Foundation").

Run:  python benchmarks/bench_sampling.py [--repeats 3] [--threads N] [--dense-full]
Prints a table: target, sizes, first-call seconds, best and median seconds over the repeats, the
target (if any) and whether the median meets it.

1. 1-D exponential kernel, n = 10^4 data, m = 10^6 query points, one exact path:
   :func:`privgp.models.sampling.exp1d_paths` (Kalman filter + backward sampling + OU bridges); its
   baseline in the same run: drawing the n + m standard normal variates alone (the floor of any exact
   sampler of the path at those points), and the ratio of the medians.
2. 2-D, n = 400 data on the grid lattice (:func:`snap_to_lattice`), 128 x 128 grid, one exact path:
   :func:`privgp.models.sampling.grid_paths` (circulant embedding + Matheron), exponential kernel with
   l = 0.2 (the paper's 2-D setting) and l = 1 (needs 8x padding).
3. Dense fallback (inputs off the lattice): :func:`grid_paths` with ``method="dense"``, i.e. the
   m x m posterior covariance and its Cholesky factor, on 32 x 32 and 64 x 64 grids (and
   128 x 128 with ``--dense-full``: a 16384^2 matrix, 2 GiB, about a minute).
   The dense sampler is also the peer of the circulant one (issue 30): on the 64 x 64 grid both run on the
   same snapped inputs in the same run and the ratio is printed.
"""
from __future__ import annotations

import argparse
import os
import platform

from _timing import timings


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="BLAS threads (set before numpy is imported)")
    ap.add_argument("--dense-full", action="store_true", help="also time the dense fallback on 128 x 128")
    args = ap.parse_args(argv)
    if args.threads:
        # before numpy is imported: numpy and scipy load separate OpenBLAS libraries, and a runtime
        # limit (threadpoolctl) misses those not loaded yet; oversubscribed BLAS threads cost up to
        # 1000x for small factorisations on a loaded machine
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    import numpy as np

    from privgp.models.kernels import Exponential
    from privgp.models.sampling import exp1d_paths, grid_paths, snap_to_lattice

    rng = np.random.default_rng(0)
    rows = []

    X = rng.uniform(size=10_000)
    y = rng.uniform(-1, 1, size=10_000)
    Xq = np.linspace(0, 1, 1_000_000)
    rows.append(("exp1d, one path", "n=10^4, m=10^6, l=0.2",
                 *timings(lambda: exp1d_paths(X, y, Xq, lengthscale=0.2, r=1.0, sigma=1.0, rng=rng), args.repeats),
                 2.0))
    rows.append(("baseline: n + m standard normals", "1.01 x 10^6 variates",
                 *timings(lambda: rng.standard_normal(X.size + Xq.size), args.repeats), None))

    ax = np.linspace(0, 1, 128)
    axes = (ax, ax)
    X2 = rng.uniform(size=(400, 2))
    y2 = rng.uniform(-1, 1, size=400)
    Xs = snap_to_lattice(X2, axes)
    for ell in (0.2, 1.0):
        k = Exponential(ell)
        rows.append(("grid 2-D circulant, one path", f"n=400 on lattice, 128x128, l={ell}",
                     *timings(lambda: grid_paths(k, Xs, y2, axes, r=4.0, sigma=0.12, rng=rng, method="circulant"),  # noqa: B023 (called within this iteration)
                              args.repeats), 5.0))
    k = Exponential(0.2)
    a64 = np.linspace(0, 1, 64)
    X64 = snap_to_lattice(X2, (a64, a64))
    peer_rows = len(rows)
    rows.append(("grid 2-D circulant, one path", "n=400 on lattice, 64x64, l=0.2",
                 *timings(lambda: grid_paths(k, X64, y2, (a64, a64), r=4.0, sigma=0.12, rng=rng, method="circulant"),
                          args.repeats), None))
    rows.append(("peer: grid 2-D dense, one path", "the same n=400 on lattice, 64x64, l=0.2",
                 *timings(lambda: grid_paths(k, X64, y2, (a64, a64), r=4.0, sigma=0.12, rng=rng, method="dense"),
                          args.repeats), None))
    sizes = (32, 64, 128) if args.dense_full else (32, 64)
    for s in sizes:
        a = np.linspace(0, 1, s)
        reps = args.repeats if s < 128 else 0
        rows.append(("grid 2-D dense fallback, one path", f"n=400 off lattice, {s}x{s}, l=0.2",
                     *timings(lambda: grid_paths(k, X2, y2, (a, a), r=4.0, sigma=0.12, rng=rng, method="dense"),  # noqa: B023 (called within this iteration)
                              reps), None))

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"numpy {np.__version__}, load average {os.getloadavg()[0]:.1f}, BLAS threads {args.threads or 'default'}")
    print("| target | sizes | first call s | best s | median s | limit s | met |")
    print("|---|---|---|---|---|---|---|")
    for name, sizes_, first, best, med, limit in rows:
        met = "-" if limit is None else ("yes" if med <= limit else "NO")
        print(f"| {name} | {sizes_} | {first:.3f} | {best:.3f} | {med:.3f} | {limit or '-'} | {met} |")
    print(f"exp1d path / its variates alone: {rows[0][4] / rows[1][4]:.1f}x (medians, same run)")
    print(f"64 x 64 on the lattice: the dense sampler takes {rows[peer_rows + 1][4] / rows[peer_rows][4]:.0f}x the "
          "circulant sampler's time (medians, same run)")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
