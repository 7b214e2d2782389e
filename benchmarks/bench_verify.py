"""Benchmark: ``privgp verify --strict`` of fresh releases, whole process, this tree against a git revision.

    python benchmarks/bench_verify.py --baseline a1510ce --repeat 3 CERT.json [CERT.json ...]

Each certificate (with its released files beside it) is verified by a fresh ``python -m privgp.cli.main verify``
process with this tree's ``src`` and with the baseline's on ``PYTHONPATH``, alternating (one untimed run each
first); the medians of wall time and their ratio are printed with the load. Since issue 30's stop of 2026-11-26
verify redraws the picture, reruns the forecast and redoes the report, which the baseline did not.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("certificates", nargs="+", type=Path)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    bytecode(ROOT / "src")
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"this tree": ROOT / "src", a.baseline: baseline_src(a.baseline, Path(tmp) / "base")}
        print(f"load {os.getloadavg()[0]:.2f}")
        for cert in a.certificates:
            times: dict[str, list[float]] = {k: [] for k in sides}
            for src in sides.values():
                _wall(cert, src)
            for rep in range(a.repeat):
                for k in (list(sides) if rep % 2 == 0 else list(sides)[::-1]):
                    times[k].append(_wall(cert, sides[k]))
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"  {cert.parent.name:<22} this tree {med['this tree']:.3f} s, {a.baseline} {med[a.baseline]:.3f} s, "
                  f"ratio {med['this tree'] / med[a.baseline]:.2f}")
        print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
