"""Speed targets of the exact GP layer (issue "Foundation").

Run:  python benchmarks/bench_gp.py [--repeats 5] [--threads N]
Prints a table: target, sizes, first-call seconds (fresh process, includes memory first touch),
best and median seconds over the repeats, the target and whether the median meets it.

1. Posterior mean and variance at one point for 4x10^4 datasets of n = 10 (the membership
   attack): :func:`privgp.models.gp.batched_mean_var`.
2. Mean and variance on 800 points for 100 datasets of n = 100 at 7 values of r (hyperparameter
   search): :class:`privgp.models.gp.EigenPosterior` (one eigendecomposition per dataset, built inside
   the timed region) and ``mean_var``; 1-D and 2-D inputs.

Baselines in the same run (issue 30): the loop a user would write with scipy -- per dataset (and per r),
``cho_factor(K + r^2 I)`` and ``cho_solve`` for the mean and the variance -- on a slice of the datasets,
scaled to all of them, checked to give the same mean and variance (1e-8); the ratio of the medians is
printed.
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
    from scipy.linalg import cho_factor, cho_solve

    def loop(Xs, ys, Xq, r_values):
        """The scipy loop: per dataset and r, a Cholesky factor of K + r^2 I, the mean and k_D(x, x)."""
        out = []
        for Xb, yb in zip(Xs, ys):
            K, Kq, kqq = kernel(Xb), kernel(Xq, Xb), kernel.diag(Xq)
            for r in r_values:
                c = cho_factor(K + r * r * np.eye(K.shape[0]), lower=True)
                out.append((Kq @ cho_solve(c, yb), kqq - np.einsum("ij,ji->i", Kq, cho_solve(c, Kq.T))))
        return out

    sl = 2000
    ref = batched_mean_var(kernel, X[:sl], y[:sl], xq, 1.0)
    got = loop(X[:sl], y[:sl], xq, [1.0])
    assert np.allclose(ref[0][:, 0], [g[0][0] for g in got], atol=1e-8)
    assert np.allclose(ref[1][:, 0], np.maximum([g[1][0] for g in got], 0.0), atol=1e-8)
    scale = X.shape[0] / sl
    rows.append((f"baseline: scipy loop ({sl} timed, x{scale:g})", "per dataset cho_factor + cho_solve",
                 *(t * scale for t in timings(lambda: loop(X[:sl], y[:sl], xq, [1.0]), args.repeats)), None))

    r_values = np.logspace(-1, 1, 7)
    for d in (1, 2):
        X = rng.uniform(size=(100, 100, d))
        y = rng.uniform(-1, 1, size=(100, 100))
        Xq = rng.uniform(size=(800, d))
        rows.append(("mean+var, 7 r (eigh incl.)", f"100 datasets x n=100, 800 points, d={d}",
                     *timings(lambda: EigenPosterior(kernel, X, y).mean_var(Xq, r_values), args.repeats), 0.5))  # noqa: B023 (called within this iteration)
        mv = EigenPosterior(kernel, X[:10], y[:10]).mean_var(Xq, r_values)
        got = loop(X[:10], y[:10], Xq, r_values)
        assert np.allclose(mv[0].transpose(1, 0, 2).reshape(-1, Xq.shape[0]), [g[0] for g in got], atol=1e-8)
        assert np.allclose(mv[1].transpose(1, 0, 2).reshape(-1, Xq.shape[0]), np.maximum([g[1] for g in got], 0.0),
                           atol=1e-8)
        rows.append(("baseline: scipy loop (10 timed, x10)", f"per dataset and r cho_factor + cho_solve, d={d}",
                     *(10 * t for t in timings(lambda: loop(X[:10], y[:10], Xq, r_values), args.repeats)), None))  # noqa: B023

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"numpy {np.__version__}, load average {os.getloadavg()[0]:.1f}, BLAS threads {args.threads or 'default'}")
    print("| target | sizes | first call s | best s | median s | limit s | met |")
    print("|---|---|---|---|---|---|---|")
    for name, sizes, first, best, med, limit in rows:
        met = "-" if limit is None else ("yes" if med <= limit else "NO")
        print(f"| {name} | {sizes} | {first:.3f} | {best:.3f} | {med:.3f} | {limit or '-'} | {met} |")
    for i in (0, 2, 4):
        print(f"{rows[i][0]} ({rows[i][1]}): the scipy loop takes {rows[i + 1][4] / rows[i][4]:.1f}x its time (medians)")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
