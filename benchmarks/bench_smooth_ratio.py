"""The noisy grids' smoothing (``smooth_ratio``), this tree against a git revision in the same run.

    python benchmarks/bench_smooth_ratio.py --baseline 59ebcca --repeat 50

Two sizes: the README's release (8 x 5 cells onto the 121 x 73 grid) and a large one (64 x 40 cells onto
601 x 401). Each side runs in a fresh process with its ``src`` on PYTHONPATH, BLAS on one thread; prints the
median milliseconds per call and the ratio this tree / baseline."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _machine import machine_line
from _timing import ROOT, baseline_src

SIZES = {"readme 8x5 -> 121x73": ((8, 5), (121, 73)), "large 64x40 -> 601x401": ((64, 40), (601, 401))}

_CHILD = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from _timing import timings
from privgp.mechanisms.registered.grid import smooth_ratio
from privgp.models.domain import Box
box = Box(np.array([0.0, 0.0]), np.array([1.0, 1.0]))
out = {}
for name, (cells, grid) in json.loads(sys.argv[2]).items():
    rng = np.random.default_rng(0)
    S, C = rng.normal(size=cells), rng.integers(0, 9, size=cells).astype(float)
    axes = tuple(np.linspace(0.0, 1.0, g) for g in grid)
    reps = int(sys.argv[3]) if grid[0] < 200 else max(3, int(sys.argv[3]) // 10)
    out[name] = 1e3 * timings(lambda: smooth_ratio(axes, box, tuple(cells), S, C, 1.0, 0.5), reps)[2]
print(json.dumps(out))
"""


def run(src: Path, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT / "benchmarks"), json.dumps(SIZES), str(repeat)],
                         env=env, check=True, capture_output=True, text=True)
    return json.loads(res.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="git revision timed beside this tree")
    ap.add_argument("--repeat", type=int, default=50)
    a = ap.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp:
        base = baseline_src(a.baseline, Path(tmp) / "base")
        here, there = run(ROOT / "src", a.repeat), run(base, a.repeat)
    print(f"{'size':<26}{'this tree ms':>14}{a.baseline + ' ms':>16}{'ratio':>8}")
    for name in SIZES:
        print(f"{name:<26}{here[name]:>14.3f}{there[name]:>16.3f}{here[name] / there[name]:>8.2f}")
    print(machine_line())


if __name__ == "__main__":
    main()
