"""Timing of `privgp release` on the embedded Baltimore data (211 sales, 2-D).

Run:  python benchmarks/bench_release.py
Prints a table: stage, settings, median seconds over repeats. Uses a temporary ledger and output
folders (nothing is written to the user's ledger).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from privgp.datasets import baltimore
from privgp.datasets.tabular import load_embedded_baltimore
from privgp.ledger import Ledger
from privgp.mechanisms.posterior_release import plan_posterior_sample as plan_release
from privgp.mechanisms.posterior_release import sample_release
from privgp.mechanisms.release import ResponseMap

REPEATS = 3


def median_time(fn, repeats=REPEATS):
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def main():
    rows = []
    data = load_embedded_baltimore()
    rmap = ResponseMap(50.0, 1.0, "log")
    box = baltimore.PUBLIC_BOX
    rows.append(("load + check data", "211 records", median_time(load_embedded_baltimore)))
    rows.append(("plan: calibrate r + certify", "target eps 1, delta n^-1.1",
                 median_time(lambda: plan_release(data.n, box, rmap, target_epsilon=1.0, grid=121, snap=1))))
    rng = np.random.default_rng()
    for grid, snap, L in ((121, 1, 1), (121, 1, 10), (301, 1, 1), (81, None, 1)):
        plan = plan_release(data.n, box, rmap, target_epsilon=1.0, grid=grid, snap=snap, L=L)
        how = "circulant (snapped)" if snap else "dense exact"
        rows.append((f"sample: {how}", f"grid {plan.grid[0]} x {plan.grid[1]}, L={L}",
                     median_time(lambda: sample_release(plan, data.X, data.response, rng))))  # noqa: B023 (called within this iteration)
    with tempfile.TemporaryDirectory() as d:
        led = Ledger(Path(d) / "l.sqlite")
        plan = plan_release(data.n, box, rmap, target_epsilon=0.01, grid=121, snap=1)
        fp = led.fingerprint(data.content_digest)
        rows.append(("ledger charge (IMMEDIATE txn)", "1 entry on a fresh ledger",
                     median_time(lambda: led.charge(fp, plan.event, epsilon=plan.epsilon, delta=plan.delta,
                                                    budget_epsilon=1e6, default_budget_delta=plan.delta))))
        env = dict(os.environ, PRIVGP_LEDGER=str(Path(d) / "cli.sqlite"), MPLBACKEND="Agg")
        k = iter(range(100))
        rows.append(("CLI end to end (new process)", "privgp release --out DIR (defaults, large budget)",
                     median_time(lambda: subprocess.run(
                         [sys.executable, "-m", "privgp.cli.main", "release", "--out", str(Path(d) / f"o{next(k)}"),
                          "--budget-epsilon", "1000"],
                         check=True, env=env, capture_output=True))))
    w = max(len(r[0]) for r in rows)
    s = max(len(r[1]) for r in rows)
    print(f"{'stage':<{w}}  {'settings':<{s}}  median s")
    for a, b, t in rows:
        print(f"{a:<{w}}  {b:<{s}}  {t:8.3f}")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
