"""Benchmark: the large-batch order search in parts of BRENT_PART settings against one part, in one process (issue 30).

    python benchmarks/bench_brent_parts.py --rounds 12

Times epsilon for the 10^5 random settings of ``bench_accounting.py`` (the search in one thread) with
``order_search.BRENT_PART`` as shipped and with one part for the whole batch, alternating in each round, and counts
the process's minor page faults during each call (``resource.getrusage``). The two give the same epsilon to the bit
(checked first). Prints the CPU times, the per-round ratios and the faults per call.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _machine import machine_line  # noqa: E402
from _settings import epsilon_of_settings, random_settings  # noqa: E402

from privgp.accounting import order_search  # noqa: E402
from privgp.mechanisms.posterior_sample import epsilon_posterior_sampling  # noqa: E402
from privgp.models.domain import Box  # noqa: E402


def _call(part: int, settings: dict) -> tuple[float, int, bytes]:
    order_search.BRENT_PART = part
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    c = time.process_time()
    eps = epsilon_of_settings(epsilon_posterior_sampling, Box, settings).epsilon
    cpu = time.process_time() - c
    return cpu, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults, np.asarray(eps).tobytes()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=12)
    a = ap.parse_args()
    print(machine_line(), flush=True)
    order_search.MAX_THREADS = 1
    settings = random_settings(np.random.default_rng(0))
    shipped = order_search.BRENT_PART
    sides = {f"parts of {shipped}": shipped, "one part": 10**9}
    bits = {name: _call(part, settings)[2] for name, part in sides.items()}
    print(f"the same epsilon, to the bit: {len(set(bits.values())) == 1}")
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    faults: dict[str, list[int]] = {name: [] for name in sides}
    for rnd in range(a.rounds):
        for name in (list(sides) if rnd % 2 == 0 else list(sides)[::-1]):
            t, f, _ = _call(sides[name], settings)
            cpu[name].append(t)
            faults[name].append(f)
    order_search.BRENT_PART = shipped
    ours, one = cpu[f"parts of {shipped}"], cpu["one part"]
    print(f"{a.rounds} rounds, epsilon of 10^5 settings, the search in one thread, CPU time")
    for name in sides:
        print(f"  {name:16s} median {statistics.median(cpu[name]):.4f} s (best {min(cpu[name]):.4f} s), "
              f"minor page faults per call: median {statistics.median(faults[name]):.0f}")
    ratios = [x / y for x, y in zip(ours, one)]
    print(f"  ratio per round (parts / one part): median {statistics.median(ratios):.3f}, quartiles "
          f"{np.percentile(ratios, 25):.3f}-{np.percentile(ratios, 75):.3f}")
    print(machine_line(), flush=True)


if __name__ == "__main__":
    main()
