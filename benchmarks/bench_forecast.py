"""Where the release forecast's time goes (issue 30): the public simulation ``privgp release`` runs before the
charge, for the default mechanism on the Baltimore public box, by stage, in CPU seconds.

    python benchmarks/bench_forecast.py [--n 1000000 100000]

For each n: the plan of the default mechanism (``auto``: box, threshold 50, clip 1, log transform, as
bench_release_peer), then the forecast's simulated releases (the families times the mechanism's
``forecast_reps``, at min(n, tasks.forecast.SIMULATED_N) records each) timed by stage -- synthetic records,
the plan's checks, the draw, the score -- and the whole ``tasks.forecast.forecast`` call once more.
"""
from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[1_000_000, 100_000])
    a = ap.parse_args()
    import numpy as np

    from privgp.datasets.fields import SyntheticField
    from privgp.mechanisms.interface import Request, registry
    from privgp.mechanisms.release import ResponseMap
    from privgp.models.domain import Box
    from privgp.tasks import forecast as F

    dom, rm = Box([850, 500], [1000, 590]), ResponseMap(threshold=50, clip=1, transform="log")
    mech = registry()["auto"]
    for n in a.n:
        plan = mech.build(Request(n=n, domain=dom, response_map=rm, epsilon=None, delta=None, grid=None,
                                  memory_limit=4 * 2**30, options={}))
        reps = mech.resolve(plan).forecast_reps
        sim = F._scaled_plan(F._simulation_plan(plan))
        rng = np.random.default_rng(0)
        cpu = dict.fromkeys(("records", "check", "draw", "score"), 0.0)
        for fam in F.FAMILIES:
            field = SyntheticField(fam, plan.domain)
            for _ in range(reps):
                t0 = time.process_time()
                X, y = field.records(sim.n, rng, F.DEFAULT_NOISE)
                t1 = time.process_time()
                Xc, yc = sim.check(X, y)
                t2 = time.process_time()
                drawn = sim.draw(Xc, yc, rng)
                t3 = time.process_time()
                F.score(drawn, field, X, y)
                t4 = time.process_time()
                for k, dt in zip(cpu, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                    cpu[k] += dt
        t0 = time.process_time()
        F.forecast(plan, reps=reps)
        total = time.process_time() - t0
        print(f"n = {n}: {plan.mechanism}, {len(F.FAMILIES)} x {reps} simulated releases of {sim.n} records; "
              f"CPU s by stage: " + ", ".join(f"{k} {v:.3f}" for k, v in cpu.items())
              + f"; forecast() in all {total:.3f}")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
