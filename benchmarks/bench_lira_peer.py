"""Benchmark: one LiRA setting, whole process, privgp against seed 000's published script in the same run.

    python benchmarks/bench_lira_peer.py --peer /path/to/lira_fhat_vhat_latent_gmm_exp1d_logv.py --repeat 3
    python benchmarks/bench_lira_peer.py --peer ... --repeat 3 --baseline 14b408f   # also a git revision of privgp

The peer is the paper's published LiRA script (github.com/tmaciazek/gaussian_process_dp,
``lira_fhat_vhat_latent_gmm_exp1d_logv.py``, MIT licence; not part of privgp: give its path). Both run the
paper's setting (n = 10, x0 = 0.5, lengthscale 1, r = 0.1, sigma = 0.5, M_xi = 0, L = 3, 10^4 shadow + 10^4
evaluation datasets per hypothesis, the latent-mixture attack, seed 0) as a user runs them: a fresh Python
process each, ``privgp audit lira ...`` and ``python <peer> ... --no-save`` (in a temporary folder: it always
writes one .npy there), BLAS pinned to one thread in both (the project's benchmark convention, the same
for both). Runs alternate between the two (and the baseline, if given); the medians
of wall and CPU time (user + system of the child process) and their ratios are printed with the load.
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

from _timing import baseline_src, bytecode

ROOT = Path(__file__).resolve().parents[1]
SETTING = {"n": "10", "x0": "0.5", "r": "0.1", "sigma": "0.5", "L": "3", "n-shadow": "10000", "n-eval": "10000",
           "seed": "0"}


def _privgp_argv() -> list[str]:
    s = SETTING
    return ["-m", "privgp.cli.main", "audit", "lira", "--n", s["n"], "--x0", s["x0"], "--ell", "1", "--r", s["r"],
            "--sigma", s["sigma"], "--m-xi", "0", "--L", s["L"], "--n-shadow", s["n-shadow"], "--n-eval",
            s["n-eval"], "--attack", "paper", "--delta", "0.05", "--seed", s["seed"]]


def _peer_argv(peer: Path) -> list[str]:
    s = SETTING
    return [str(peer), "--n", s["n"], "--x0", s["x0"], "--ell", "1", "--r", s["r"], "--sigma", s["sigma"],
            "--m-eps", "0", "--n-posterior-draws", s["L"], "--n-shadow", s["n-shadow"], "--n-eval", s["n-eval"],
            "--seed", s["seed"], "--no-save"]


def _timed(argv: list[str], env: dict, cwd: str) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, *argv], env=env, cwd=cwd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    auc = ([ln.split()[-1] for ln in out.splitlines() if ln.strip().startswith("AUC")] or ["?"])[-1]   # the final attack's
    return wall, cpu, auc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", type=Path, required=True, help="path of the published lira_fhat_vhat_latent_gmm_exp1d_logv.py")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", default=None, help="also time this git revision of privgp")
    a = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    bytecode(ROOT / "src")
    with tempfile.TemporaryDirectory() as tmp:
        runs = {"privgp (this tree)": (_privgp_argv(), dict(env, PYTHONPATH=str(ROOT / "src")))}
        if a.baseline:
            base = baseline_src(a.baseline, Path(tmp) / "baseline")
            runs[f"privgp {a.baseline}"] = (_privgp_argv(), dict(env, PYTHONPATH=str(base)))
        runs["published script"] = (_peer_argv(a.peer.resolve()), env)
        loads = [os.getloadavg()[0]]
        res: dict[str, list[tuple[float, float, str]]] = {k: [] for k in runs}
        for rep in range(a.repeat):
            order = list(runs) if rep % 2 == 0 else list(runs)[::-1]
            for k in order:
                res[k].append(_timed(*runs[k], cwd=tmp))
                print(f"  repeat {rep + 1}: {k:<22} {res[k][-1][0]:7.2f} s wall {res[k][-1][1]:7.2f} s CPU  "
                      f"AUC {res[k][-1][2]}  (load {os.getloadavg()[0]:.1f})", flush=True)
                loads.append(os.getloadavg()[0])
    print(f"load average during the runs: {min(loads):.1f} .. {max(loads):.1f} (2 cores)")
    med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for k, v in res.items()}
    for k, (w, c) in med.items():
        print(f"{k:<22} wall median {w:7.3f} s  CPU median {c:7.3f} s   all wall: "
              f"{', '.join(f'{r[0]:.2f}' for r in res[k])}")
    pw, pc = med["published script"]
    for k, (w, c) in med.items():
        if k != "published script":
            print(f"published script / {k}: wall {pw / w:.1f}x, CPU {pc / c:.1f}x")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
