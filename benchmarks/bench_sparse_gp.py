"""Speed targets of the DP sparse GP (seed 001, issue 11).

Run:  python benchmarks/bench_sparse_gp.py [--repeats 3] [--threads 1] [--workers 2] [--skip-fig3]
Prints a table: target, sizes, first-call seconds, best and median wall seconds, the median CPU
seconds (this process, or the worker processes for Figure 3), the limit and whether the median wall
time meets it. On a loaded shared machine the CPU time (divided by the workers) is what an idle
machine's wall time would be; both are printed, with the load average.

1. One fit (statistics + calibrated noise + noise-aware posterior) for n = 10^6 2-D records and
   |Z| = 64 (an 8 x 8 grid): :func:`privgp.mechanisms.sparse_gp.fit_sparse_gp`. Limit 3 s.
2. The Figure 2 protocol: 40 repeats x 48 scenarios (4 sigma x 4 epsilon x 3 alpha; one release
   and three posteriors per (repeat, sigma, epsilon)), N_tot = 1024, in this process:
   :func:`privgp.experiments.seed001.fig2.calibration_repeat`. Limit 10 s (paper: < 30 s).
3. The Figure 3 protocol: 100 repeats x 4 epsilon_tot of Alg. 2 over 9 candidates, N = 2048,
   gamma = 0.01, on ``--workers`` processes (the experiment's own tasks). Limit 120 s (paper: ~10 min).
   Timed once (it is long), so first = best = median.

Baseline in the same run (issue 30) for the fit: the same statistics without privacy, as numpy computes them
directly -- K_ZX K_XZ and K_ZX y for the same Z, kernel and records, in chunks of 10^5 records -- the floor of
any fit from these statistics; the ratio of the medians is printed.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import time

from _timing import timings


def timed(fn, repeats):
    """(first, best, median wall s) from timings() and the median CPU s of this process per call."""
    import numpy as np

    cpu = []

    def once():
        c0 = time.process_time()
        fn()
        cpu.append(time.process_time() - c0)
    first, best, med = timings(once, repeats)
    return first, best, med, float(np.median(cpu[1:] or cpu))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (set before numpy is imported)")
    ap.add_argument("--workers", type=int, default=2, help="processes for the Figure 3 protocol")
    ap.add_argument("--skip-fig3", action="store_true")
    args = ap.parse_args(argv)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import numpy as np

    from privgp.experiments.seed001 import fig2 as f2
    from privgp.experiments.seed001 import fig3 as f3
    from privgp.mechanisms.sparse_gp import fit_sparse_gp, sparse_gp_spec
    from privgp.parallel import get_executor

    load = os.getloadavg()[0]
    rows = []
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(1_000_000, 2))
    y = np.sin(3 * X[:, 0]) * np.cos(2 * X[:, 1]) + 0.1 * rng.standard_normal(X.shape[0])
    g = np.linspace(-1, 1, 8)
    Z = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    spec = sparse_gp_spec(Z, response_bound=1.5, lengthscale=0.4)
    rows.append(("fit (stats + noise + posterior)", "n = 10^6, |Z| = 64, d = 2",
                 *timed(lambda: fit_sparse_gp(X, y, spec, noise_std=0.1, epsilon=1.0, delta=1e-6, rng=rng),
                        args.repeats), 3.0))


    def plain_statistics():
        A, b = np.zeros((Z.shape[0], Z.shape[0])), np.zeros(Z.shape[0])
        for i in range(0, X.shape[0], 100_000):
            K = spec.kernel(Z, X[i:i + 100_000])
            A += K @ K.T
            b += K @ y[i:i + 100_000]
        return A, b

    rows.append(("baseline: K_ZX K_XZ and K_ZX y, non-private", "n = 10^6, |Z| = 64, d = 2, chunks of 10^5",
                 *timed(plain_statistics, args.repeats), None))

    tasks = [(0, r, f2.N_TOTAL, f2.SIGMAS, f2.EPSILONS, f2.ALPHAS, 3.0, "auto") for r in range(40)]
    rows.append(("Figure 2 protocol (1 process)", "40 repeats x 48 scenarios, N_tot = 1024",
                 *timed(lambda: [f2.calibration_repeat(t) for t in tasks], args.repeats), 10.0))

    if not args.skip_fig3:
        t0 = time.perf_counter()
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        with get_executor(workers=args.workers, progress=False) as ex:
            ex.map(f3.nonprivate_best, [(0, r, f3.N, 1.5) for r in range(100)])
            out = ex.map(f3.selection_repeat, [(0, r, e, f3.N, f3.GAMMA, 1.5) for e in f3.EPSILONS for r in range(100)])
        t = time.perf_counter() - t0
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
        draws = sum(o["draws"] for o in out)
        rows.append((f"Figure 3 protocol ({args.workers} processes)", f"100 repeats x 4 eps, 9 candidates, N = 2048; "
                     f"{draws} runs of Alg. 1 + COINPRESS", t, t, t, cpu, 120.0))

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"numpy {np.__version__}, load average {load:.1f} before / {os.getloadavg()[0]:.1f} after, "
          f"BLAS threads {args.threads}")
    print("| target | sizes | first call s | best s | median s | median CPU s | limit s | met (wall) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, sizes, first, best, med, cpu, limit in rows:
        met = "-" if limit is None else ("yes" if med <= limit else "NO")
        print(f"| {name} | {sizes} | {first:.3f} | {best:.3f} | {med:.3f} | {cpu:.3f} | {limit or '-'} | {met} |")
    print(f"the DP fit takes {rows[0][4] / rows[1][4]:.2f}x the non-private statistics' time (median wall), "
          f"{rows[0][5] / rows[1][5]:.2f}x their CPU")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
