"""Speed targets of private Thompson sampling (issue 17).

Run:  python benchmarks/bench_thompson.py [--repeats 3] [--threads 1]
Prints a table: target, sizes, first-call seconds, best and median seconds over the repeats, the
target and whether the median meets it. Every timed call is a whole private run *including
accounting*: :func:`privgp.tasks.thompson.plan_thompson` (calibrating the per-round ridge r for the
total budget over all rounds with the batched composition, re-checking with the composed event,
certifying, per-round and cumulative epsilons) followed by :func:`run_thompson` (100 exact
posterior paths, one argmax and one objective call per round). The objective is the simulated
Forrester / Branin function with noise 0.1 (its cost is negligible).

1. 1-D: 100 rounds on 10^4 grid candidates, exponential kernel (O(n + m) sampler), epsilon = 10.
2. 2-D: 100 rounds on a 128 x 128 grid, Matern-5/2 with lengthscale 0.2 (and 0.1), circulant
   embedding + Matheron conditioning (queries are grid points, so exactly on the lattice),
   epsilon = 100.

Baseline in the same run (issue 30): each setting's run without the privacy calibration -- the same 100
rounds, samplers and seeds with the ridge r given (r = 1, ``epsilon=None``: no calibration, no composed
check; the certificate still states its cost) -- so the ratio is what planning a private run adds.
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
    args = ap.parse_args(argv)
    if args.threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    import time

    import numpy as np

    from privgp.datasets.objectives import get_function
    from privgp.models.domain import Box
    from privgp.tasks.thompson import Candidates, plan_thompson, run_thompson

    rows = []

    def private_run(cand, f, epsilon, **kw):
        seeds = iter(range(10_000))

        def go():
            s = next(seeds)
            t0, c0 = time.perf_counter(), time.process_time()
            plan = plan_thompson(cand, rounds=100, epsilon=epsilon, sigma=0.5, **kw)
            go.plan_s.append(time.perf_counter() - t0)
            res = run_thompson(plan, f.noisy(0.1, np.random.default_rng(s)), np.random.default_rng(s + 1))
            go.cpu_s.append(time.process_time() - c0)
            assert res.status == "completed" and res.released == 100
            assert epsilon is None or res.epsilon <= epsilon
        go.plan_s, go.cpu_s = [], []
        return go

    c1 = Candidates.grid(Box.unit(1), 10_000)
    go = private_run(c1, get_function("forrester"), 10.0, kernel="exponential", lengthscale=0.2)
    rows.append(("1-D TS, 100 rounds, accounting included", "m=10^4 grid, exponential l=0.2, eps=10",
                 *timings(go, args.repeats), float(np.median(go.plan_s)), float(np.median(go.cpu_s[1:] or go.cpu_s)), 2.0))
    go = private_run(c1, get_function("forrester"), None, kernel="exponential", lengthscale=0.2, r=1.0)
    rows.append(("baseline: the same, r = 1 given (no calibration)", "m=10^4 grid, exponential l=0.2",
                 *timings(go, args.repeats), float(np.median(go.plan_s)), float(np.median(go.cpu_s[1:] or go.cpu_s)), None))
    c2 = Candidates.grid(Box.unit(2), 128)
    for ell in (0.2, 0.1):
        go = private_run(c2, get_function("branin"), 100.0, kernel="matern52", lengthscale=ell)
        rows.append(("2-D TS, 100 rounds, accounting included", f"128x128 grid, Matern-5/2 l={ell:g}, eps=100",
                     *timings(go, args.repeats), float(np.median(go.plan_s)), float(np.median(go.cpu_s[1:] or go.cpu_s)),
                     20.0))
        go = private_run(c2, get_function("branin"), None, kernel="matern52", lengthscale=ell, r=1.0)
        rows.append(("baseline: the same, r = 1 given (no calibration)", f"128x128 grid, Matern-5/2 l={ell:g}",
                     *timings(go, args.repeats), float(np.median(go.plan_s)), float(np.median(go.cpu_s[1:] or go.cpu_s)),
                     None))

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"numpy {np.__version__}; load average {os.getloadavg()[0]:.1f}")
    print("| target | sizes | first call s | best s | median s | of which plan (median) s | CPU s (median) | limit s | met |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for name, sizes, first, best, med, plan_s, cpu_s, limit in rows:
        met = "-" if limit is None else ("yes" if med <= limit else "NO")
        print(f"| {name} | {sizes} | {first:.3f} | {best:.3f} | {med:.3f} | {plan_s:.3f} | {cpu_s:.3f} | {limit or '-'} | "
              f"{met} |")
    for i in (0, 2, 4):
        print(f"{rows[i][1]}: the private run takes {rows[i][4] / rows[i + 1][4]:.2f}x its baseline's time (median wall), "
              f"{rows[i][6] / rows[i + 1][6]:.2f}x its CPU")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
