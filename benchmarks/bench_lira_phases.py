"""Where the whole-process time of ``privgp audit lira`` at the paper's setting goes (issue 30).

    python benchmarks/bench_lira_phases.py [--repeat 5]

Each repeat is a fresh process (BLAS on one thread, as in ``bench_lira_peer.py``) that imports, in the
order the command needs them, numpy, scipy.special, scipy.linalg, the privgp modules of the command and
scipy.optimize (the paper attack's BFGS), timing each group, then runs the command (output discarded) and
times that: the work, lazy imports already done. The interpreter's own start (``python -c pass``, with
``site`` and its .pth files) is timed separately. Medians are printed, then the split of the work by the
functions that cost most (cProfile cumulative times of one more, warm run in the last process).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from bench_lira_peer import _privgp_argv

CHILD = r"""
import cProfile, contextlib, io, json, pstats, sys, time
marks = [("start", time.perf_counter())]
import numpy
marks.append(("numpy", time.perf_counter()))
import scipy.special
marks.append(("scipy.special (+ scipy._lib)", time.perf_counter()))
import scipy.linalg
marks.append(("scipy.linalg", time.perf_counter()))
import privgp.cli.main, privgp.cli.audit, privgp.audit.membership.lira, privgp.mechanisms.posterior_sample
marks.append(("privgp modules", time.perf_counter()))
import scipy.optimize
marks.append(("scipy.optimize", time.perf_counter()))
split_wanted, argv = sys.argv[1] == "split", sys.argv[2:]
with contextlib.redirect_stdout(io.StringIO()):
    assert privgp.cli.main.main(argv) == 0
marks.append(("work (the command, imports done)", time.perf_counter()))
out = {b[0]: b[1] - a[1] for a, b in zip(marks, marks[1:])}
split = {}
if split_wanted:
    prof = cProfile.Profile()
    with contextlib.redirect_stdout(io.StringIO()):
        prof.runcall(privgp.cli.main.main, argv)
    stats = pstats.Stats(prof).stats
    wanted = ("play", "batched_mean_var", "certified_epsilons", "fit_latent_tanh_mixture", "fit_gaussian_mixture_1d",
              "logpdf", "_ndtr_steps", "roc_metrics", "select_threshold")
    for (path, _, name), (_, _, _, cum, _) in stats.items():
        if name in wanted and "privgp" in path:
            split[name] = split.get(name, 0.0) + cum
print(json.dumps({"phases": out, "split": split}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = _privgp_argv()[2:]   # drop "-m privgp.cli.main": the child calls main() itself
    starts, runs = [], []
    for rep in range(a.repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        starts.append(time.perf_counter() - t0)
        split = "split" if rep == a.repeat - 1 else "no-split"
        out = subprocess.run([sys.executable, "-c", CHILD, split, *cmd], env=env, check=True, capture_output=True,
                             text=True).stdout
        runs.append(json.loads(out.splitlines()[-1]))
    rows = {"interpreter start (python -c pass)": statistics.median(starts)}
    rows.update({k: statistics.median(r["phases"][k] for r in runs) for k in runs[0]["phases"]})
    for k, t in rows.items():
        print(f"  {k:<36} {1e3 * t:7.0f} ms")
    print(f"  {'total':<36} {1e3 * sum(rows.values()):7.0f} ms   (median of {a.repeat}; load "
          f"{os.getloadavg()[0]:.1f})")
    print("work split (cProfile cumulative, one warm run; calls nest, so these do not add up):")
    for k, t in sorted(runs[-1]["split"].items(), key=lambda kv: -kv[1]):
        print(f"  {k:<36} {1e3 * t:7.0f} ms")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
