"""Benchmark: ``privgp verify --strict`` of fresh releases, whole process, this tree against a git revision.

    python benchmarks/bench_verify.py --baseline a1510ce --repeat 3 CERT.json [CERT.json ...]
    python benchmarks/bench_verify.py --baseline b5ad37b --repeat 3 --calls 10 CERT.json [CERT.json ...]

Each certificate (with its released files beside it) is verified by a fresh ``python -m privgp.cli.main verify``
process with this tree's ``src`` and with the baseline's on ``PYTHONPATH``, alternating (one untimed run each
first); the medians of wall time and their ratio are printed with the load. Since issue 30's stop of 2026-11-26
verify redraws the picture, reruns the forecast and redoes the report, which the baseline did not.

``--calls K``: each fresh process verifies the certificate K times in process after one untimed call (imports and
first-call costs excluded) and reports the median of those calls, so a change of a few tens of milliseconds per
verify is not lost in the interpreter's start-up; the medians of the processes' medians are compared. The pictures
verify keeps in a process (``verify_report.redrawn``) are dropped before each call, so that each is timed as a
first verify of its release.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import baseline_src, bytecode

ROOT = Path(__file__).resolve().parents[1]


def _wall(cert: Path, src: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(src), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "privgp.cli.main", "verify", str(cert), "--strict"], env=env,
                   capture_output=True, check=False)
    return time.perf_counter() - t0


_IN_PROCESS = """
import contextlib, importlib, io, statistics, sys, time
from privgp.cli.main import main
def once():
    try:   # each timed call verifies as a first verify in a process does: the pictures drawn before are not kept
        importlib.import_module("privgp.cli.verify_report").__dict__.get("_REDRAWN", {}).clear()
    except ImportError:
        pass
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["verify", sys.argv[1], "--strict"])
once()
times = []
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter()
    once()
    times.append(time.perf_counter() - t0)
print(statistics.median(times))
"""


def _per_call(cert: Path, src: Path, calls: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(src), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _IN_PROCESS, str(cert), str(calls)], env=env, capture_output=True,
                         text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("certificates", nargs="+", type=Path)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--calls", type=int, default=0, help="verify K times in each process (in-process median)")
    a = ap.parse_args()
    measure = (lambda cert, src: _per_call(cert, src, a.calls)) if a.calls > 0 else _wall
    bytecode(ROOT / "src")
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"this tree": ROOT / "src", a.baseline: baseline_src(a.baseline, Path(tmp) / "base")}
        print(f"load {os.getloadavg()[0]:.2f}")
        for cert in a.certificates:
            times: dict[str, list[float]] = {k: [] for k in sides}
            if a.calls <= 0:
                for src in sides.values():
                    _wall(cert, src)
            for rep in range(a.repeat):
                for k in (list(sides) if rep % 2 == 0 else list(sides)[::-1]):
                    times[k].append(measure(cert, sides[k]))
            med = {k: statistics.median(v) for k, v in times.items()}
            unit = f"s per call, median of {a.calls} in process" if a.calls > 0 else "s"
            print(f"  {cert.parent.name:<22} this tree {med['this tree']:.3f} s, {a.baseline} {med[a.baseline]:.3f} {unit}, "
                  f"ratio {med['this tree'] / med[a.baseline]:.2f}")
        print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
