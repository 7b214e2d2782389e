"""Benchmark: the large-batch order search in parts of BRENT_PART settings against one part, in one process (issue 30).

    python benchmarks/bench_brent_parts.py --rounds 12 [--threads 2] [--parts 25000 8000 ...]

Times epsilon for the 10^5 random settings of ``bench_accounting.py`` (the search in one thread, or in
``--threads`` threads, where the shipped search does not use parts, ``PARTS_IN_THREADS``: this shows why) with
``order_search.BRENT_PART`` as shipped and with one part for the whole batch (or with the part sizes ``--parts``,
the first the reference), alternating in each round, and counts the process's minor page faults during each call
(``resource.getrusage``). All give the same epsilon to the bit (checked first). Prints the CPU times, the per-round
ratios and the faults per call.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _machine import machine_line  # noqa: E402
from _settings import random_settings, timed_epsilon  # noqa: E402

from privgp.accounting import order_search  # noqa: E402
from privgp.mechanisms.posterior_sample import epsilon_posterior_sampling  # noqa: E402
from privgp.models.domain import Box  # noqa: E402


def _call(part: int, settings: dict) -> tuple[float, float, int, bytes]:
    order_search.BRENT_PART = part
    return timed_epsilon(epsilon_posterior_sampling, Box, settings)      # CPU, wall, page faults, epsilon's bytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--parts", type=int, nargs="+", help="part sizes to compare (default: as shipped, and one part)")
    a = ap.parse_args()
    print(machine_line(), flush=True)
    order_search.MAX_THREADS = a.threads
    order_search.PARTS_IN_THREADS = True    # "one part" below is then each thread's share whole, as shipped
    settings = random_settings(np.random.default_rng(0))
    shipped = order_search.BRENT_PART
    sides = ({f"parts of {n}": n for n in a.parts} if a.parts else {f"parts of {shipped}": shipped, "one part": 10**9})
    bits = {name: _call(part, settings)[3] for name, part in sides.items()}
    print(f"the same epsilon, to the bit: {len(set(bits.values())) == 1}")
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    wall: dict[str, list[float]] = {name: [] for name in sides}
    faults: dict[str, list[int]] = {name: [] for name in sides}
    for rnd in range(a.rounds):
        for name in (list(sides) if rnd % 2 == 0 else list(sides)[::-1]):
            t, w, f, _ = _call(sides[name], settings)
            cpu[name].append(t)
            wall[name].append(w)
            faults[name].append(f)
    order_search.BRENT_PART = shipped
    print(f"{a.rounds} rounds, epsilon of 10^5 settings, the search in {a.threads} thread(s), CPU time")
    for name in sides:
        print(f"  {name:16s} median {statistics.median(cpu[name]):.4f} s (best {min(cpu[name]):.4f} s), "
              f"wall median {statistics.median(wall[name]):.4f} s, "
              f"minor page faults per call: median {statistics.median(faults[name]):.0f}")
    names = list(sides)
    ref, rest = (names[1], names[:1]) if not a.parts else (names[0], names[1:])   # default: parts / one part
    for name in rest:
        for label, series in (("CPU", cpu), ("wall", wall)):
            ratios = [p / q for p, q in zip(series[name], series[ref])]
            print(f"  {label} ratio per round ({name} / {ref}): median {statistics.median(ratios):.3f}, quartiles "
                  f"{np.percentile(ratios, 25):.3f}-{np.percentile(ratios, 75):.3f}")
    print(machine_line(), flush=True)


if __name__ == "__main__":
    main()
