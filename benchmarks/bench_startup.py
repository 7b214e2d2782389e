"""Benchmark: whole-process time of the commands as a user runs them, this tree against a git revision.

    python benchmarks/bench_startup.py --repeat 7 --baseline 00132ad

Runs, alternating between this tree and the baseline (exported with ``git archive`` to a temporary
folder, both on ``PYTHONPATH`` in fresh processes):

* ``privgp --help``;
* ``privgp audit lira --n 10 --x0 0.5 --lengthscale 1 --r 0.1 --sigma 0.5 --M-xi 0 --L 3 --n-shadow 10000
  --n-eval 10000 --attack paper --delta 0.05 --seed 0`` (the paper's setting; the baseline gets the old
  spellings --ell / --m-xi, which this tree still accepts).

Reports the median wall and CPU (user + system, of the process and its children) time per command and
tree, the load average, and the ratio of the medians. On a shared machine the wall time depends on the
load; the CPU time and the ratio measured in the same run are the figures that hold.

``--instructions``: instead, each command once per tree under valgrind's cachegrind (instruction counts only, BLAS
in one thread), and their ratio: a change of a few per cent that this machine's phases hide in times (the machine
line of ``bench_instructions.py``'s docstring). Needs valgrind.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import baseline_src

ROOT = Path(__file__).resolve().parents[1]
LIRA = ["audit", "lira", "--n", "10", "--x0", "0.5", "--ell", "1", "--r", "0.1", "--sigma", "0.5", "--m-xi", "0",
        "--L", "3", "--n-shadow", "10000", "--n-eval", "10000", "--attack", "paper", "--delta", "0.05", "--seed", "0"]
COMMANDS = {"privgp --help": ["--help"], "privgp audit lira (paper setting)": LIRA}


def _timed(src: Path, args: list[str]) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=str(src))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "privgp.cli.main", *args], env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _instructions(src: Path, args: list[str]) -> int:
    env = dict(os.environ, PYTHONPATH=str(src), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    res = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                          sys.executable, "-m", "privgp.cli.main", *args], env=env, capture_output=True, text=True,
                         check=True)
    refs = re.search(r"I\s+refs:\s+([\d,]+)", res.stderr)
    if refs is None:
        raise SystemExit(f"no instruction count from valgrind:\n{res.stderr[-2000:]}")
    return int(refs.group(1).replace(",", ""))


def _count_instructions(baseline: str) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_startup --instructions: valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": ROOT / "src", f"baseline {baseline}": baseline_src(baseline, Path(tmp) / "baseline")}
        for cmd, args in COMMANDS.items():
            counts = {tree: _instructions(src, args) for tree, src in trees.items()}
            for tree, n in counts.items():
                print(f"{cmd:<36} {tree:<22} {n:>16,} instructions")
            first, second = counts.values()
            print(f"ratio this tree / baseline, {cmd}: instructions {first / second:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--baseline", default=None, help="git revision to compare against")
    ap.add_argument("--instructions", action="store_true", help="count instructions (valgrind) instead of timing")
    a = ap.parse_args()
    if a.instructions:
        if not a.baseline:
            raise SystemExit("bench_startup --instructions needs --baseline")
        _count_instructions(a.baseline)
        return
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": ROOT / "src"}
        if a.baseline:
            trees[f"baseline {a.baseline}"] = baseline_src(a.baseline, Path(tmp) / "baseline")
        loads = [os.getloadavg()[0]]
        res: dict = {}
        for rep in range(a.repeat):
            for cmd, args in COMMANDS.items():
                order = list(trees) if rep % 2 == 0 else list(trees)[::-1]
                for tree in order:
                    res.setdefault((cmd, tree), []).append(_timed(trees[tree], args))
            loads.append(os.getloadavg()[0])
    print(f"load average during the runs: {min(loads):.1f} .. {max(loads):.1f} (2 cores)")
    print(f"{'command':<36} {'tree':<22} {'wall median s':>14} {'CPU median s':>13}   all wall times")
    med = {}
    for (cmd, tree), vals in res.items():
        w = statistics.median(v[0] for v in vals)
        c = statistics.median(v[1] for v in vals)
        med[(cmd, tree)] = (w, c)
        print(f"{cmd:<36} {tree:<22} {w:>14.3f} {c:>13.3f}   {', '.join(f'{v[0]:.2f}' for v in vals)}")
    if a.baseline:
        for cmd in COMMANDS:
            (w1, c1), (w0, c0) = med[(cmd, "this tree")], med[(cmd, f"baseline {a.baseline}")]
            print(f"ratio this tree / baseline, {cmd}: wall {w1 / w0:.3f}, CPU {c1 / c0:.3f}")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
