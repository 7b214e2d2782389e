"""Benchmark: ``privgp --help`` against its peer ``python -c "import numpy"`` (issue 30: at most 1.5x).

    python benchmarks/bench_help.py --repeat 21 --baseline HEAD~1

Runs, alternating (the order reversed every other round) in fresh processes: ``privgp --help`` (the
console script on PATH, with this tree's ``src`` on ``PYTHONPATH``), the same with a git revision's
``src`` (``--baseline``, exported with ``git archive``), and ``python -c "import numpy"`` (the ``python``
on PATH: both go through the same launcher, e.g. a pyenv shim). Reports the load average, the median
wall and CPU (user + system of the process and its children) time of each, and the ratios of the
medians against the numpy import measured in the same run: on a shared machine those ratios are the
figures that hold.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _timing import alternating, baseline_src

ROOT = Path(__file__).resolve().parents[1]
PEER = 'python -c "import numpy"'


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--baseline", default=None, help="git revision whose `privgp --help` is timed too")
    a = ap.parse_args()
    privgp, python = shutil.which("privgp"), shutil.which("python")
    if privgp is None or python is None:
        raise SystemExit("needs `privgp` (pip install -e .) and `python` on PATH")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory() as tmp:
        runs = {"privgp --help (this tree)": ([privgp, "--help"], dict(env, PYTHONPATH=str(ROOT / "src"))),
                PEER: ([python, "-c", "import numpy"], env)}
        if a.baseline:
            base = baseline_src(a.baseline, Path(tmp))
            runs[f"privgp --help ({a.baseline})"] = ([privgp, "--help"], dict(env, PYTHONPATH=str(base)))
        for cmd, run_env in runs.values():  # warm the file cache and the .pyc files once, untimed
            _timed(cmd, run_env)
        res, loads = alternating(list(runs), a.repeat, lambda name: _timed(*runs[name]))
    print(f"load average (1 min) during the runs: {min(loads):.2f} .. {max(loads):.2f} ({os.cpu_count()} cores); "
          f"{a.repeat} alternating rounds")
    print(f"{'command':<34} {'wall median s':>14} {'CPU median s':>13}   ratio to the numpy import (wall, CPU)")
    peer = statistics.median(v[0] for v in res[PEER]), statistics.median(v[1] for v in res[PEER])
    for name, vals in res.items():
        w, c = statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals)
        print(f"{name:<34} {w:>14.4f} {c:>13.4f}   {w / peer[0]:.2f}, {c / peer[1]:.2f}")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
