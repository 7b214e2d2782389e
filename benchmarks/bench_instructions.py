"""Benchmark: instructions the accountant executes, this tree against a git revision, counted by valgrind (issue 30).

    python benchmarks/bench_instructions.py --baseline 85105ab [--calls 2] [--singles 300]

Why: this shared 2-core machine runs in slow and fast phases (the same call's CPU time moved by 1.5x within minutes
during issue 30's work), so a change of a few per cent cannot be seen in times, even alternating in one process
(``bench_accounting_ab.py``). The number of instructions a call executes does not depend on the phase: each workload
runs in a fresh interpreter under valgrind's cachegrind (``--cache-sim=no``: instruction counts only), once with the
warm-up call alone and once with ``--calls`` more (``--singles`` more for one epsilon); the difference divided by the
calls is the count per call (imports, the warm-up and start-up cancel). BLAS and the search run in one thread, so
no idle thread's spinning is counted. What this leaves out is what costs time without instructions: memory traffic
and page faults (``bench_brent_parts.py`` counts the faults); instruction ratios are therefore a floor on what a
change saves or costs in time, not the time. The workloads are ``bench_accounting.py``'s: epsilon for its 10^5
random settings in one call (the search in one thread) and one posterior-sample epsilon. Needs valgrind (Debian's
``valgrind`` package); prints the counts and the ratios, both trees giving the same epsilon to the bit (checked).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _machine import machine_line  # noqa: E402
from _timing import ROOT, baseline_src  # noqa: E402

_WORKLOAD = """
import hashlib, sys
import numpy as np
sys.path.insert(0, {bench!r})
from _settings import epsilon_of_settings, random_settings
from privgp.accounting import order_search
from privgp.mechanisms.posterior_sample import epsilon_posterior_sampling
from privgp.models.domain import Box
order_search.MAX_THREADS = 1
settings = random_settings(np.random.default_rng(0))
many = epsilon_of_settings(epsilon_posterior_sampling, Box, settings)       # the warm-up
one = epsilon_posterior_sampling(10, 1.0, 5.0, 0.05, sensitivity="exp1d")
for _ in range({calls}):
    epsilon_of_settings(epsilon_posterior_sampling, Box, settings)
for _ in range({singles}):
    epsilon_posterior_sampling(10, 1.0, 5.0, 0.05, sensitivity="exp1d")
digest = hashlib.sha256(np.asarray(many.epsilon).tobytes() + np.float64(one.epsilon).tobytes()).hexdigest()
print("EPSILON", digest)
"""


def _count(src: Path, calls: int, singles: int) -> tuple[int, str]:
    """(instructions, digest of the epsilons) of the workload with ``calls`` 10^5-setting calls and ``singles``
    one-setting calls after the warm-up, privgp imported from ``src``."""
    env = dict(os.environ, PYTHONPATH=str(src), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    code = _WORKLOAD.format(bench=str(HERE), calls=calls, singles=singles)
    res = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                          sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    refs = re.search(r"I\s+refs:\s+([\d,]+)", res.stderr)
    digest = re.search(r"EPSILON (\w+)", res.stdout)
    if refs is None or digest is None:
        raise SystemExit(f"no instruction count from valgrind:\n{res.stderr[-2000:]}")
    return int(refs.group(1).replace(",", "")), digest.group(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="git revision counted beside this tree")
    ap.add_argument("--calls", type=int, default=2, help="10^5-setting calls counted after the warm-up")
    ap.add_argument("--singles", type=int, default=300, help="one-setting calls counted after the warm-up")
    a = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("bench_instructions: valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        raise SystemExit(2)
    print(machine_line(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {a.baseline: baseline_src(a.baseline, Path(tmp) / "base"), "this tree": ROOT / "src"}
        counts: dict[str, dict[str, int]] = {}
        digests = set()
        for name, src in trees.items():
            base, d0 = _count(src, 0, 0)
            many, d1 = _count(src, a.calls, 0)
            single, d2 = _count(src, 0, a.singles)
            digests |= {d0, d1, d2}
            counts[name] = {"batch": (many - base) // a.calls, "one": (single - base) // a.singles}
            print(f"{name}: epsilon for 10^5 settings {counts[name]['batch'] / 1e6:.1f} M instructions per call, "
                  f"one epsilon {counts[name]['one'] / 1e3:.1f} k", flush=True)
    print(f"the same epsilon, to the bit, for one setting and all 10^5: {len(digests) == 1}")
    for key, label in (("batch", "epsilon, 10^5 settings, one thread"), ("one", "epsilon, one setting")):
        print(f"{label}: this tree / {a.baseline} = {counts['this tree'][key] / counts[a.baseline][key]:.3f} "
              f"of the instructions")


if __name__ == "__main__":
    main()
