"""Benchmark: the large-batch order search in one thread against two, and what two cores give two processes (issue 30).

    python benchmarks/bench_search_threads.py [--rounds 20] [--pairs 3]

1. Epsilon for the 10^5 random settings of ``bench_accounting.py`` with the search in one thread
   (``order_search.MAX_THREADS = 1``: parts of BRENT_PART settings one after the other) and in two threads (each
   thread's share whole), alternating in each round of one process: CPU time (``time.process_time``, all threads),
   wall time and voluntary context switches (``resource.getrusage``: a thread waiting for the GIL sleeps) per call,
   and the per-round ratios two / one. Both give the same epsilon to the bit (checked first).
2. The ceiling that two threads can reach on this machine: the one-thread call run by one process alone, then by two
   processes at once (``--pairs`` times each, alternating), CPU time per call. Two processes share no GIL, no memory
   and no Python state, so what slows each of them down when both run is the machine itself (two virtual CPUs
   that share a physical core or its caches); two threads in one process cannot do better than that.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _machine import machine_line  # noqa: E402
from _settings import epsilon_of_settings, random_settings, timed_epsilon  # noqa: E402

from privgp.accounting import order_search  # noqa: E402
from privgp.mechanisms.posterior_sample import epsilon_posterior_sampling  # noqa: E402
from privgp.models.domain import Box  # noqa: E402


def _call(threads: int, settings: dict) -> tuple[float, float, int, bytes]:
    order_search.MAX_THREADS = threads
    return timed_epsilon(epsilon_posterior_sampling, Box, settings, "ru_nvcsw")   # CPU, wall, switches, epsilon's bytes


def _quartiles(x: list[float]) -> str:
    return f"median {statistics.median(x):.3f}, quartiles {np.percentile(x, 25):.3f}-{np.percentile(x, 75):.3f}"


def threads_in_one_process(rounds: int) -> None:
    settings = random_settings(np.random.default_rng(0))
    sides = (1, 2)
    bits = {t: _call(t, settings)[3] for t in sides}             # also the warm-up
    print(f"the same epsilon in one thread and in two, to the bit: {bits[1] == bits[2]}")
    got: dict[int, list[tuple[float, float, int]]] = {t: [] for t in sides}
    for rnd in range(rounds):
        for t in (sides if rnd % 2 == 0 else sides[::-1]):
            got[t].append(_call(t, settings)[:3])
    print(f"{rounds} rounds, epsilon of 10^5 settings, one process")
    for t in sides:
        cpu, wall, sw = (list(c) for c in zip(*got[t]))
        print(f"  {t} thread(s): CPU median {statistics.median(cpu):.4f} s (best {min(cpu):.4f} s), wall median "
              f"{statistics.median(wall):.4f} s (best {min(wall):.4f} s), voluntary context switches per call "
              f"{statistics.median(sw):.0f}")
    for i, label in ((0, "CPU"), (1, "wall")):
        ratios = [b[i] / a[i] for a, b in zip(got[1], got[2])]
        print(f"  {label} ratio per round (two threads / one): {_quartiles(ratios)}")


_CHILD = "--child"


def _child(calls: int) -> None:
    """One process's part of the ceiling: ``calls`` one-thread calls after a warm-up, CPU time per call printed."""
    order_search.MAX_THREADS = 1
    settings = random_settings(np.random.default_rng(0))
    epsilon_of_settings(epsilon_posterior_sampling, Box, settings)
    cpu = []
    for _ in range(calls):
        c = time.process_time()
        epsilon_of_settings(epsilon_posterior_sampling, Box, settings)
        cpu.append(time.process_time() - c)
    print(statistics.median(cpu))


def _processes(n: int, calls: int) -> list[float]:
    procs = [subprocess.Popen([sys.executable, __file__, _CHILD, str(calls)], stdout=subprocess.PIPE, text=True)
             for _ in range(n)]
    return [float(p.communicate()[0]) for p in procs]


def two_processes(pairs: int, calls: int = 8) -> None:
    alone: list[float] = []
    both: list[float] = []
    for k in range(pairs):
        for n in ((1, 2) if k % 2 == 0 else (2, 1)):
            (alone if n == 1 else both).extend(_processes(n, calls))
    print(f"the ceiling: the one-thread call ({calls} per process after a warm-up), median CPU per call of each process")
    print(f"  one process alone:      {', '.join(f'{t:.4f}' for t in alone)} s")
    print(f"  two processes at once:  {', '.join(f'{t:.4f}' for t in both)} s")
    print(f"  two at once / alone: {statistics.median(both) / statistics.median(alone):.3f} (medians)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=3)
    a = ap.parse_args()
    print(machine_line(), flush=True)
    threads_in_one_process(a.rounds)
    two_processes(a.pairs)
    print(machine_line(), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == _CHILD:
        _child(int(sys.argv[2]))
    else:
        main()
