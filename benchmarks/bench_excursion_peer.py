"""Benchmark: the 1-D excursion study per dataset, privgp against seed 000's published script in the same run.

    python benchmarks/bench_excursion_peer.py --peer /path/to/nonprivate_gridsearch_exp_excursion_set_bce.py \\
        --trials 10 20 --repeat 3

The peer is the paper's published Tables 1-3 script (github.com/tmaciazek/gaussian_process_dp,
``nonprivate_gridsearch_exp_excursion_set_bce.py``, MIT licence; not part of privgp: give its path, with its
``dp_utils.py`` beside it; on numpy 2 it needs its two-argument fix, r and sigma passed to dp_utils as floats).
Matched work: the script's design and search on both sides: one target shared by T datasets of n = 100
(``shared_target=True``), 800-point mesh, the README's coarse grid, the script's refinement (one wide
round for the unconstrained search, three for the private one, eps_1 < 10, delta = 0.005), 50 exact
posterior draws per dataset for the one-path IoU; privgp's column adds one validation dataset and its
per-pair metrics (the script has neither). Each run is a fresh process (imports included), BLAS on one
thread, the two alternating; the per-dataset cost is the slope between the two values of T (fixed costs
such as imports cancel), medians over --repeat.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEER_ARGS = ["--n-train", "100", "--n-target-grid", "800", "--ell-true", "1", "--ell-model",
             "0.08,0.13,0.2,0.25,0.35,0.5,0.6,0.75,1", "--r-values", "0.05,0.1,0.2,0.5,1,2,5", "--sigma-values",
             "0,0.1,0.5,1,2,5", "--n-posterior-draws", "50", "--m-eps", "0.5", "--seed", "6", "--target-reject",
             "--target-reject-max-components", "13", "--target-reject-min-mean-component-width", "0.05",
             "--epsilon-threshold", "10"]
PRIVGP = """
import sys
from privgp.experiments.seed000.excursion_1d import config_1d, run_column
from privgp.parallel import get_executor
cfg = config_1d(quick=False, n=100, n_pairs=int(sys.argv[1]), n_val=1, search="script", shared_target=True)
with get_executor(workers=1, progress=False) as exe:
    run_column(cfg, 0.5, executor=exe, seed=0, constants=("published",))
"""


def _timed(argv: list[str], env: dict, cwd: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *argv], env=env, cwd=cwd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", type=Path, required=True, help="path of the published 1-D excursion script")
    ap.add_argument("--trials", type=int, nargs=2, default=[10, 20], help="two numbers of datasets")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=str(ROOT / "src"))
    peer = a.peer.resolve()
    runs = {}
    for T in a.trials:
        runs[("published script", T)] = [str(peer), *PEER_ARGS, "--n-trials", str(T)]
        runs[("privgp", T)] = ["-c", PRIVGP, str(T)]
    res: dict = {k: [] for k in runs}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:   # the script writes its outputs into the working folder
        for rep in range(a.repeat):
            order = list(runs) if rep % 2 == 0 else list(runs)[::-1]
            for k in order:
                res[k].append(_timed(runs[k], env, tmp))
                loads.append(os.getloadavg()[0])
                print(f"  repeat {rep + 1}: {k[0]:<17} T = {k[1]:>3}: {res[k][-1][0]:7.2f} s wall "
                      f"{res[k][-1][1]:7.2f} s CPU  (load {loads[-1]:.1f})", flush=True)
    print(f"load average during the runs: {min(loads):.1f} .. {max(loads):.1f} (2 cores)")
    t1, t2 = a.trials
    per = {}
    for who in ("published script", "privgp"):
        med = {T: (statistics.median(r[0] for r in res[(who, T)]), statistics.median(r[1] for r in res[(who, T)]))
               for T in a.trials}
        per[who] = ((med[t2][0] - med[t1][0]) / (t2 - t1), (med[t2][1] - med[t1][1]) / (t2 - t1))
        print(f"{who:<17} whole process T = {t1}: {med[t1][0]:.2f} s wall, T = {t2}: {med[t2][0]:.2f} s wall "
              f"({med[t2][1]:.2f} s CPU); per dataset {per[who][0]:.3f} s wall, {per[who][1]:.3f} s CPU")
    pw, pc = per["published script"]
    qw, qc = per["privgp"]
    print(f"published script / privgp per dataset: wall {pw / qw:.1f}x, CPU {pc / qc:.1f}x")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
