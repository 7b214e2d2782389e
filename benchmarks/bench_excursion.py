"""Benchmark: one column of Table 1 (1-D) and of Table 4 (2-D) of seed 000, App. D.

    python benchmarks/bench_excursion.py                      # Table-1 column at paper scale + Table-4 column at 50 worlds
    python benchmarks/bench_excursion.py --t4-pairs 1000      # Table-4 column at paper scale (long)
    python benchmarks/bench_excursion.py --t1-pairs 200 --t4-pairs 20   # a short smoke run

A column = pair generation, unconstrained + private (eps_1 < 10) coarse search with two refinement
rounds, validation of C, and per-pair metrics with the Monte-Carlo one-path IoU, for one constant
set (--constants). Runs on local worker processes (--workers, default 2) with BLAS pinned to one thread.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from privgp.experiments.excursion_1d import config_1d, run_column  # noqa: E402
from privgp.experiments.excursion_2d import config_2d, run_column_2d  # noqa: E402
from privgp.parallel import get_executor  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--t1-pairs", type=int, default=1000)
    ap.add_argument("--t4-pairs", type=int, default=50)
    ap.add_argument("--t4-mc", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--constants", default="published", choices=["proven", "published"])
    ap.add_argument("--skip-t1", action="store_true")
    ap.add_argument("--skip-t4", action="store_true")
    a = ap.parse_args()
    rows = []
    with get_executor(workers=a.workers, progress=False) as exe:
        if not a.skip_t1:
            cfg = config_1d(quick=False, n=100, n_pairs=a.t1_pairs, n_val=max(20, a.t1_pairs // 4))
            t0 = time.perf_counter()
            res = run_column(cfg, 0.5, executor=exe, seed=0, constants=(a.constants,))
            dt = time.perf_counter() - t0
            study = res[a.constants][0]
            n_eval = len(study.unconstrained.table) + int(study.private.table["feasible"].sum())
            rows.append(("Table 1 column (M_xi=0.5, |D|=100, 800 mesh, 50 draws)", a.t1_pairs, n_eval, dt,
                         dt * 1000 / a.t1_pairs))
        if not a.skip_t4:
            cfg = config_2d(quick=False, n_pairs=a.t4_pairs, n_val=max(10, a.t4_pairs // 4), n_mc=a.t4_mc)
            t0 = time.perf_counter()
            res, _, _ = run_column_2d(cfg, 0.5, executor=exe, seed=0, constants=(a.constants,))
            dt = time.perf_counter() - t0
            study = res[a.constants][0]
            n_eval = len(study.unconstrained.table) + int(study.private.table["feasible"].sum())
            rows.append((f"Table 4 column (M_xi=0.5, |D|=400, 80^2 mesh, 60^2 paths, {a.t4_mc} draws)",
                         a.t4_pairs, n_eval, dt, dt * 1000 / a.t4_pairs))
    print(f"{'benchmark':<72} {'pairs':>6} {'settings':>9} {'seconds':>9} {'s per 10^3 pairs (linear)':>26}")
    for name, n, k, dt, per in rows:
        print(f"{name:<72} {n:>6} {k:>9} {dt:>9.1f} {per:>26.0f}")


if __name__ == "__main__":
    main()
