"""The exact discrete Laplace sampler against the same sampler at a git revision, in the same run (issue 30).

    python benchmarks/bench_discrete_noise.py --baseline e337ffd [--rounds 3]

One call draws the noise of the README release's noisy grid: 62 x 37 cells, t = 26 843 547, for the sums (s = 1)
and the counts (s = 2^25). Each side runs in a fresh process (this tree's ``src``, or the revision's exported by
``git archive`` on PYTHONPATH), alternating, and prints the best of 5 timings of 10 calls per scale, and a digest of
the draws: equal digests mean the two samplers drew the same integers from the same seed.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _machine import machine_line  # noqa: E402
from _timing import baseline_src  # noqa: E402

_CODE = """
import hashlib, time
import numpy as np
from privgp.mechanisms.discrete_noise import discrete_laplace
h = hashlib.sha256()
for s in (1, 2 ** 25):
    rng = np.random.default_rng(0)
    h.update(discrete_laplace(26843547, s, (62, 37), rng).tobytes())
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(10):
            discrete_laplace(26843547, s, (62, 37), rng)
        times.append((time.perf_counter() - t0) / 10)
    best = min(times)
    print(f"  s = {s:>9d}: {best * 1e3:7.2f} ms per call")
print(f"  draws sha256 {h.hexdigest()[:16]}")
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"this tree": str(ROOT / "src"), a.baseline: str(baseline_src(a.baseline, Path(tmp) / "base"))}
        for r in range(a.rounds):
            for name in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
                env = dict(os.environ, PYTHONPATH=sides[name])
                print(f"round {r + 1}, {name}:", flush=True)
                subprocess.run([sys.executable, "-c", _CODE], env=env, check=True)
    print(machine_line())


if __name__ == "__main__":
    main()
