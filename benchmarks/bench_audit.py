"""Benchmark of the LiRA audit (seed 000, sec. 4): one setting end to end, and its stages.

    python benchmarks/bench_audit.py            # n = 10, L = 3, 10^4 shadow + 10^4 eval, r = 0.1, sigma = 0.5
    python benchmarks/bench_audit.py --repeat 5 --threads 1

Prints a small table: data generation (2 x 2 x 10^4 batched posterior solves + release statistics),
the paper attack (fit + scoring + threshold selection + metrics), the exact attack, the whole
``privgp audit lira`` call, for the median of --repeat runs. BLAS is pinned to --threads threads.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--r", type=float, default=0.1)
    ap.add_argument("--sigma", type=float, default=0.5)
    ap.add_argument("--L", type=int, default=3)
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    from privgp.audit.membership.attacks import fit_attack
    from privgp.audit.membership.game import MembershipGame, play
    from privgp.audit.membership.lira import audit_lira
    from privgp.cli.main import main as cli

    game = MembershipGame(n=10, x0=0.5, lengthscale=1.0, r=args.r, sigma=args.sigma, L=args.L)
    stages = {"data (play)": [], "paper: fit + shadow scores": [], "exact: fit + shadow scores": [],
              "audit_lira(paper)": [], "audit_lira(exact)": [], "privgp audit lira --attack paper (CLI)": []}
    for rep in range(args.repeat):
        t = time.perf_counter()
        data, rng = play(game, args.size, args.size, rep)
        stages["data (play)"].append(time.perf_counter() - t)
        t = time.perf_counter()
        fit_attack("paper", data, rng)
        stages["paper: fit + shadow scores"].append(time.perf_counter() - t)
        t = time.perf_counter()
        fit_attack("exact", data, rng)
        stages["exact: fit + shadow scores"].append(time.perf_counter() - t)
        for a in ("paper", "exact"):
            t = time.perf_counter()
            audit_lira(game, attacks=(a,), n_shadow=args.size, n_eval=args.size, seed=rep)
            stages[f"audit_lira({a})"].append(time.perf_counter() - t)
        t = time.perf_counter()
        with open(os.devnull, "w") as devnull:
            import contextlib

            with contextlib.redirect_stdout(devnull):
                cli(["audit", "lira", "--n", "10", "--x0", "0.5", "--ell", "1", "--r", str(args.r), "--sigma",
                     str(args.sigma), "--m-xi", "0", "--L", str(args.L), "--n-shadow", str(args.size), "--n-eval",
                     str(args.size), "--attack", "paper", "--delta", "0.05", "--seed", str(rep), "--json"])
        stages["privgp audit lira --attack paper (CLI)"].append(time.perf_counter() - t)
    print(f"LiRA audit, n=10, L={args.L}, r={args.r:g}, sigma={args.sigma:g}, {args.size} shadow + {args.size} eval "
          f"datasets per hypothesis, BLAS threads={args.threads}, median of {args.repeat}, load avg "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'stage':<42} {'median s':>9} {'min s':>8}")
    for k, v in stages.items():
        print(f"{k:<42} {statistics.median(v):9.3f} {min(v):8.3f}")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
