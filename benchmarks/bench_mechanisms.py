"""Per-mechanism release time at n = 10^6 records (issue "Maps worth publishing"): every release mechanism
at its default public settings (privgp.tasks.utility_study.default_plan, as `privgp release` plans it), on
the Baltimore public box with the CLI's default 2-D grid (121 x 73), synthetic records of the bump field.

Run:  python benchmarks/bench_mechanisms.py [--n 1000000] [--grid 121] [--repeat 3]

Stages per mechanism (medians of ``--repeat`` runs, CPU seconds and wall seconds of this process):
plan (calibration from public inputs), forecast (the public simulation before the charge, as `privgp
release` runs it), check + draw (the release itself: the private pass over the records and the noise).
The peer in the same run is the noisy-grid baseline (`grid`): each mechanism's release time is also
given as a ratio to it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from privgp.datasets.baltimore import PUBLIC_BOX
from privgp.datasets.fields import SyntheticField
from privgp.mechanisms.interface import for_plan
from privgp.mechanisms.release import ResponseMap, default_delta
from privgp.tasks.forecast import forecast
from privgp.tasks.utility_study import MECHANISMS, default_plan


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--grid", type=int, default=121)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--no-forecast", action="store_true", help="skip the forecast stage")
    a = ap.parse_args()
    rm = ResponseMap(0.0, 1.0)
    field = SyntheticField("bump", PUBLIC_BOX)
    rng = np.random.default_rng(0)
    X, y = field.records(a.n, rng)
    delta = default_delta(a.n)
    print(f"n = {a.n}, grid {a.grid}, epsilon {a.epsilon:g}, delta {delta:g}; load average {os.getloadavg()[0]:.2f}")
    print("| mechanism | plan (s) | forecast (s, wall) | check + draw (s, wall) | check + draw CPU (s) | ratio to grid |")
    print("|---|---:|---:|---:|---:|---:|")
    rows = {}
    for mech in MECHANISMS:
        plan, t_plan, _ = timed(lambda: default_plan(mech, a.n, PUBLIC_BOX, rm, a.epsilon, delta, a.grid))  # noqa: B023 (called within this iteration)
        t_fc = float("nan")
        if not a.no_forecast:
            _, t_fc, _ = timed(lambda: forecast(plan, reps=for_plan(plan).forecast_reps))  # noqa: B023 (called within this iteration)
        walls, cpus = [], []
        for _ in range(a.repeat):
            _, w, c = timed(lambda: plan.draw(*plan.check(X, y), rng))  # noqa: B023 (called within this iteration)
            walls.append(w)
            cpus.append(c)
        rows[mech] = (t_plan, t_fc, statistics.median(walls), statistics.median(cpus))
    base = rows["grid"][2]
    for mech, (tp, tf, w, c) in rows.items():
        print(f"| {mech} | {tp:.2f} | {tf:.2f} | {w:.2f} | {c:.2f} | {w / base:.1f} |")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
