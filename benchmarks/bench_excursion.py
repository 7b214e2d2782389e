"""Benchmark: one column of Table 1 (1-D) and of Table 4 (2-D) of seed 000, App. D.

    python benchmarks/bench_excursion.py                      # Table-1 column at paper scale + Table-4 column at 50 worlds
    python benchmarks/bench_excursion.py --t4-pairs 1000      # Table-4 column at paper scale (long)
    python benchmarks/bench_excursion.py --t1-pairs 200 --t4-pairs 20   # a short smoke run
    python benchmarks/bench_excursion.py --skip-t1 --t4-pairs 40 --repeat 3 --baseline 00132ad
        # this tree against git revision 00132ad, alternating runs in fresh processes (ratio = the figure
        # that holds on a shared machine)
    python benchmarks/bench_excursion.py --skip-t1 --t4-pairs 20 --workers 1 --profile
        # where the time goes (cProfile, one process): the stages and the heaviest functions

A column = pair generation, unconstrained + private (eps_1 < 10) coarse search with two refinement
rounds, validation of C, and per-pair metrics with the Monte-Carlo one-path IoU, for one constant
set (--constants). Runs on local worker processes (--workers, default 2) with BLAS pinned to one thread.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import baseline_src

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]


def _columns(a) -> list[tuple]:
    from privgp.experiments.seed000.excursion_1d import config_1d, run_column
    from privgp.experiments.seed000.excursion_2d import config_2d, run_column_2d
    from privgp.parallel import get_executor

    rows = []
    with get_executor(workers=a.workers, progress=False) as exe:
        if not a.skip_t1:
            cfg = config_1d(quick=False, n=100, n_pairs=a.t1_pairs, n_val=max(20, a.t1_pairs // 4))
            t0 = time.perf_counter()
            res = run_column(cfg, 0.5, executor=exe, seed=0, constants=(a.constants,))
            dt = time.perf_counter() - t0
            study = res[a.constants][0]
            n_eval = len(study.unconstrained.table) + int(study.private.table["feasible"].sum())
            rows.append(("Table 1 column (M_xi=0.5, |D|=100, 800 mesh, 50 draws)", a.t1_pairs, n_eval, dt,
                         getattr(study, "stage_seconds", {})))
        if not a.skip_t4:
            cfg = config_2d(quick=False, n_pairs=a.t4_pairs, n_val=max(10, a.t4_pairs // 4), n_mc=a.t4_mc)
            t0 = time.perf_counter()
            res, _, _ = run_column_2d(cfg, 0.5, executor=exe, seed=0, constants=(a.constants,))
            dt = time.perf_counter() - t0
            study = res[a.constants][0]
            n_eval = len(study.unconstrained.table) + int(study.private.table["feasible"].sum())
            rows.append((f"Table 4 column (M_xi=0.5, |D|=400, 80^2 mesh, 60^2 paths, {a.t4_mc} draws)",
                         a.t4_pairs, n_eval, dt, getattr(study, "stage_seconds", {})))
    return rows


def _print(rows) -> None:
    print(f"{'benchmark':<72} {'pairs':>6} {'settings':>9} {'seconds':>9} {'s per 10^3 pairs (linear)':>26}")
    for name, n, k, dt, stages in rows:
        print(f"{name:<72} {n:>6} {k:>9} {dt:>9.1f} {dt * 1000 / n:>26.0f}")
        if stages:
            print("    stages (s): " + ", ".join(f"{s} {t:.1f}" for s, t in stages.items()))


def _profile(a) -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    rows = _columns(a)
    prof.disable()
    _print(rows)
    stats = pstats.Stats(prof)
    total = sum(r[3] for r in rows)
    groups = {  # function (file suffix, name) -> stage
        "BCE search: Gram matrices from distances": [("kernels.py", "of_distance"), ("kernels.py", "pairwise_distances")],
        "BCE search: eigendecompositions": [("_linalg.py", "eigh")],
        "BCE search: k(mesh, X) Q products and r values": [("posterior.py", "mean_var")],
        "1-D search: posterior by the Kalman smoother": [("markov1d.py", name) for name in ("smooth", "_bridge", "_at_queries", "take")],
        "BCE from margins": [("excursion.py", "bce_from_margin"), ("excursion.py", "standardized_margin"),
                             ("fast_bce.py", "_sum"), ("fast_bce.py", "_log_ndtr"), ("fast_bce.py", "of_posterior")],
        "one-path draws (sampler)": [("sampling/paths.py", "exact_paths")],
    }
    print(f"\nprofile ({a.workers} process(es); cumulative seconds, share of {total:.1f} s):")
    for label, keys in groups.items():
        secs = 0.0
        for (file, _line, fn), (_cc, _nc, tt, ct, _callers) in stats.stats.items():
            for suffix, name in keys:
                if file.endswith(suffix) and fn == name:
                    secs += ct if label.startswith("one-path") else tt
        print(f"  {label:<50} {secs:8.1f} s  {100 * secs / total:5.1f} %")
    stats.sort_stats("tottime").print_stats(12)


def _run_tree(src: Path, argv: list[str]) -> float:
    """Wall time of one benchmark run of the tree at ``src`` in a fresh process (imports excluded)."""
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv, "--json"], env=env,
                         capture_output=True, text=True, check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["seconds"])


def _compare(a, argv: list[str]) -> None:
    """Alternate runs of this tree and of git revision ``a.baseline`` (exported to a temporary folder)."""
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": ROOT / "src", f"baseline {a.baseline}": baseline_src(a.baseline, Path(tmp) / "baseline")}
        times: dict[str, list[float]] = {k: [] for k in trees}
        for rep in range(a.repeat):
            order = list(trees) if rep % 2 == 0 else list(trees)[::-1]
            for k in order:
                times[k].append(_run_tree(trees[k], argv))
                print(f"  repeat {rep + 1}: {k:<22} {times[k][-1]:8.1f} s  (load {os.getloadavg()[0]:.1f})",
                      flush=True)
    med = {k: statistics.median(t) for k, t in times.items()}
    for k, m in med.items():
        print(f"{k:<24} median {m:8.1f} s over {a.repeat} runs: {', '.join(f'{t:.1f}' for t in times[k])}")
    names = list(med)
    print(f"ratio this tree / baseline: {med[names[0]] / med[names[1]]:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--t1-pairs", type=int, default=1000)
    ap.add_argument("--t4-pairs", type=int, default=50)
    ap.add_argument("--t4-mc", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--constants", default="published", choices=["proven", "published"])
    ap.add_argument("--skip-t1", action="store_true")
    ap.add_argument("--skip-t4", action="store_true")
    ap.add_argument("--profile", action="store_true", help="cProfile breakdown (use --workers 1)")
    ap.add_argument("--baseline", default=None, help="git revision to compare against (alternating runs)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tree with --baseline (default 3)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.baseline:
        argv = [x for x in sys.argv[1:] if x not in ("--baseline", a.baseline, "--repeat", str(a.repeat))]
        print(f"load before: {os.getloadavg()}")
        _compare(a, argv)
        return
    if a.profile:
        _profile(a)
        return
    t0 = time.perf_counter()
    rows = _columns(a)
    if a.json:
        print(json.dumps({"seconds": time.perf_counter() - t0, "rows": [r[:4] for r in rows]}))
        return
    _print(rows)


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
