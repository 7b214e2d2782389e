"""The order search of a large batch against the search it replaced, in the same run (issue 30).

    python benchmarks/bench_order_search.py [--repeat 5] [--settings 100000]

For two sets of random posterior-sample settings -- ``bench`` (those of ``bench_accounting.py``) and ``wide``
(r and sigma over six decades, sigma = inf for a fifth) -- and both conversions, epsilon at delta = 1e-5 is
computed by the accountant with

* the golden-section search (17-point grid, 24 golden steps: what a batch of more than 64 settings got
  before 2026-11-27; forced here by withholding the ``rows`` argument of ``minimize_over_alpha``),
* Brent's search (the default for such a batch), in one thread and with the default threads.

Printed per case: best wall and CPU seconds of each, objective evaluations per setting, and how Brent's epsilon
compares with golden section's: the largest relative excess (Brent looser) and how many settings Brent finds
lower by more than 1e-9 (tighter).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from privgp.accounting import accountant, order_search
from privgp.mechanisms.posterior_sample import epsilon_posterior_sampling
from privgp.models.domain import Box


def settings(kind: str, size: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = dict(n=rng.integers(2, 2000, size), r=np.exp(rng.uniform(np.log(0.05), np.log(50), size)),
             sigma=np.exp(rng.uniform(np.log(0.01), np.log(10), size)))
    if kind == "wide":
        s["sigma"] = np.where(rng.random(size) < 0.2, np.inf, np.exp(rng.uniform(np.log(1e-3), np.log(1e3), size)))
        s["r"] = np.exp(rng.uniform(np.log(1e-3), np.log(1e3), size))
    s.update(ell=np.exp(rng.uniform(np.log(0.05), np.log(2), size)), L=rng.integers(1, 100, size),
             eta=np.where(rng.random(size) < 0.5, 0.0, rng.uniform(0, 2, size)))
    return s


def epsilon(s: dict[str, np.ndarray], conversion: str) -> np.ndarray:
    return epsilon_posterior_sampling(s["n"], s["r"], s["sigma"], 1e-5, lengthscale=s["ell"], L=s["L"], eta=s["eta"],
                                      kernel="matern32", domain=Box.unit(2), conversion=conversion).epsilon


def golden(objective, alpha_max, **kw):
    kw.pop("rows", None)
    return order_search.minimize_over_alpha(objective, alpha_max, **kw)


def timed(fn, repeat: int) -> tuple[float, float, np.ndarray]:
    walls, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus), out


def evaluations(fn, size: int) -> float:
    """Objective evaluations per setting of one call (orders evaluated / settings)."""
    count = [0]
    plain = order_search._evaluator

    def counting(objective, alpha_max):
        evaluate = plain(objective, alpha_max)

        def wrapped(t):
            count[0] += t.size
            return evaluate(t)
        return wrapped

    order_search._evaluator = counting
    try:
        fn()
    finally:
        order_search._evaluator = plain
    return count[0] / size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--settings", type=int, default=10 ** 5)
    args = ap.parse_args()
    threads = order_search.MAX_THREADS
    print(f"{'case':18s} {'golden wall':>11s} {'golden CPU':>10s} {'Brent 1 thr':>11s} {'Brent wall':>10s} "
          f"{'Brent CPU':>9s} {'evals g/B':>10s} {'max excess':>10s} {'lower':>6s}")
    for kind, seed in (("bench", 0), ("wide", 1)):
        s = settings(kind, args.settings, seed)
        for conversion in ("improved", "mironov"):
            run = lambda s=s, conversion=conversion: epsilon(s, conversion)  # noqa: E731
            run()                                                   # warm-up
            accountant.minimize_over_alpha = golden
            try:
                g_wall, g_cpu, ref = timed(run, args.repeat)
                g_evals = evaluations(run, args.settings)
            finally:
                accountant.minimize_over_alpha = order_search.minimize_over_alpha
            order_search.MAX_THREADS = 1
            one_wall, _, _ = timed(run, args.repeat)
            order_search.MAX_THREADS = threads
            b_wall, b_cpu, new = timed(run, args.repeat)
            b_evals = evaluations(run, args.settings)
            fin = np.isfinite(ref) & (ref > 0)
            if not np.array_equal(np.isfinite(ref), np.isfinite(new)) or not np.array_equal(ref == 0, new == 0):
                raise SystemExit(f"{kind} {conversion}: the searches disagree on which epsilons are 0 or inf")
            rel = (new[fin] - ref[fin]) / ref[fin]
            print(f"{kind + ' ' + conversion:18s} {g_wall:10.3f}s {g_cpu:9.3f}s {one_wall:10.3f}s {b_wall:9.3f}s "
                  f"{b_cpu:8.3f}s {g_evals:4.0f}/{b_evals:4.1f} {max(rel.max(), 0.0):10.1e} {int((rel < -1e-9).sum()):6d}")
    print(f"Brent: {order_search.BRENT_GRID}-point grid, tolerance {order_search.BRENT_TOL:g} in t, "
          f"up to {threads} threads from {2 * order_search.THREAD_MIN_SETTINGS} settings; "
          f"'lower': settings where Brent's epsilon is below golden section's by more than 1e-9 relative")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
    print(machine_line())
