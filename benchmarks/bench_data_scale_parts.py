"""Data at scale (issue 28), the parts behind BENCHMARKS.md's "what changed": per-record costs of the pass,
what a Dask worker's allocator setting costs it, and the DP sparse GP's statistics with and without BLAS threads.

    python benchmarks/bench_data_scale_parts.py [--records-per-file 1562500] [--files 3]

Writes ``--files`` Parquet files with ``bench_data_scale.generate`` (the 10^8 benchmark's file size by
default) into a temporary folder, then prints:

1. per record, for one batch of 2^18 records: the box check over axis 0 of the n x 2 array (as before) and
   per column (as now), the record hash, the exact per-cell sums (91 x 46 cells), best of 7;
2. the grid pass over the files in a fresh process started with ``MALLOC_TRIM_THRESHOLD_=65536`` (what a Dask
   nanny gives its workers): batches as before (``sources._scan_batches``) and inside
   ``batch_memory.retained()`` (as ``scan_part`` runs them now), alternating, CPU seconds and minor page faults;
   and in a plain process, before and after ``batch_memory.keep_freed_memory()`` (as ``privgp release --data``);
3. the DP sparse GP's sufficient statistics of the same records (40 inducing inputs), BLAS with its default
   threads (the accumulation before) against one thread (now), alternating, wall seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine_line  # noqa: E402

PASS = """
import json, resource, sys
from privgp.datasets import sources
from privgp.datasets.batch_memory import retained
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box
rmap, box = ResponseMap(threshold=100.0, clip=1.0, transform="log"), Box([0.0, 0.0], [10.0, 5.0])
parts = sources.resolve(sys.argv[1])

def one_pass(kept):
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    for p in parts:
        res = sources.ScanResult(dim=2)
        res.cells = sources.reduction_of(box, (91, 46)).start()
        if kept:
            with retained():
                sources._scan_batches(p, ("lon", "lat"), "price", box, rmap.apply, False, res, sources.BATCH_ROWS)
        else:
            sources._scan_batches(p, ("lon", "lat"), "price", box, rmap.apply, False, res, sources.BATCH_ROWS)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt)

one_pass(False)   # warm the file cache and the imports
if sys.argv[2] == "worker":
    out = {"before": [], "retained": []}
    for _ in range(3):
        out["before"].append(one_pass(False))
        out["retained"].append(one_pass(True))
else:   # a plain process: as it is, then after keep_freed_memory() (privgp release --data); no way back
    from privgp.datasets.batch_memory import keep_freed_memory

    out = {"plain": [one_pass(False) for _ in range(3)]}
    keep_freed_memory()
    out["keep_freed_memory"] = [one_pass(False) for _ in range(3)]
print(json.dumps(out))
"""


def best(f, repeat: int = 7) -> float:
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def stages(folder: Path) -> None:
    import numpy as np
    import pyarrow.dataset as ds

    from privgp.datasets import sources
    from privgp.datasets.cellstats import CellSums
    from privgp.datasets.fingerprint import record_hashes
    from privgp.models.domain import Box, CellGrid

    batch = next(iter(ds.dataset(str(sorted(folder.glob("*.parquet"))[0])).to_batches(
        columns=["lon", "lat", "price"], batch_size=1 << 18)))
    k = batch.num_rows
    cx = [sources._numbers(batch, c, "b", 0) for c in ("lon", "lat")]
    z = sources._numbers(batch, "price", "b", 0)
    X = np.column_stack(cx)
    lo, hi = np.array([0.0, 0.0]), np.array([10.0, 5.0])
    grid = CellGrid(Box([0.0, 0.0], [10.0, 5.0]), (91, 46))
    idx = grid.index(X)
    y = np.clip(np.log(z) - np.log(100.0), -1, 1)
    rows = {
        "box check, min/max over axis 0 of the n x 2 array (before)":
            lambda: bool(np.any(X.min(axis=0) < lo) or np.any(X.max(axis=0) > hi)),
        "box check per column (now)": lambda: any(c.min() < a or c.max() > b for c, a, b in zip(cx, lo, hi)),
        "record hash (two 64-bit sums)": lambda: record_hashes([*cx, z]),
        "exact per-cell sums, 91 x 46 cells": lambda: CellSums(grid.size).add(idx, y),
    }
    for name, f in rows.items():
        print(f"  {name}: {best(f) / k * 1e9:.1f} ns per record", flush=True)


def sparse_gp(folder: Path) -> None:
    import numpy as np
    import pyarrow.parquet as pq

    from privgp.mechanisms.release import ResponseMap
    from privgp.mechanisms.sparse_gp import CHUNK, kernel_vectors, sufficient_statistics
    from privgp.mechanisms.sparse_gp_release import plan_sparse_gp
    from privgp.models.domain import Box

    rmap, box = ResponseMap(threshold=100.0, clip=1.0, transform="log"), Box([0.0, 0.0], [10.0, 5.0])
    t = pq.read_table(str(sorted(folder.glob("*.parquet"))[0]), columns=["lon", "lat", "price"])
    X = np.column_stack([t.column("lon").to_numpy(), t.column("lat").to_numpy()])
    y = rmap.apply(t.column("price").to_numpy())
    spec = plan_sparse_gp(len(y), box, rmap, epsilon=1.0, kernel="exponential").spec

    def threaded_blas():   # the accumulation before e066e56: BLAS with its default threads
        A, B = np.zeros(spec.n_inducing), np.zeros((spec.n_inducing, spec.n_inducing))
        for s in range(0, X.shape[0], CHUNK):
            Kc = kernel_vectors(X[s:s + CHUNK], spec)
            A += Kc @ y[s:s + CHUNK]
            B += Kc @ Kc.T
        return A, B

    times: dict[str, list[float]] = {"BLAS default threads (before)": [], "BLAS one thread (now)": []}
    for _ in range(3):
        times["BLAS default threads (before)"].append(best(threaded_blas, 1))
        times["BLAS one thread (now)"].append(best(lambda: sufficient_statistics(X, y, spec), 1))
    for name, ts in times.items():
        print(f"  {name}: {', '.join(f'{x:.2f}' for x in ts)} s for {len(y)} records, |Z| = {spec.n_inducing} "
              f"(load {os.getloadavg()[0]:.2f})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records-per-file", type=int, default=1_562_500)
    ap.add_argument("--files", type=int, default=3)
    args = ap.parse_args()
    print(machine_line(), flush=True)
    from bench_data_scale import generate

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "lake"
        generate(folder, args.records_per_file * args.files, args.files)
        print("1. per record, one batch of 2^18 records (best of 7):", flush=True)
        stages(folder)
        print(f"2. the grid pass over {args.files} files of {args.records_per_file} records in a process started "
              "with MALLOC_TRIM_THRESHOLD_=65536 (3 alternating rounds), then in a plain process (3 rounds each; "
              "CPU s, minor page faults):", flush=True)
        env = dict(os.environ, MALLOC_TRIM_THRESHOLD_="65536")
        plain = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
        for kind, e, (a, b) in (("worker", env, ("before", "retained")),
                                ("plain", plain, ("plain", "keep_freed_memory"))):
            out = json.loads(subprocess.run([sys.executable, "-c", PASS, str(folder), kind], env=e, check=True,
                                            capture_output=True, text=True).stdout)
            for name, runs in out.items():
                print(f"  {name}: " + "; ".join(f"{c:.2f} s, {f} faults" for c, f in runs), flush=True)
            cpu = {k: min(c for c, _ in v) for k, v in out.items()}
            flt = {k: min(f for _, f in v) for k, v in out.items()}
            print(f"  {a} / {b}: CPU {cpu[a] / cpu[b]:.1f}x, faults {flt[a] / max(flt[b], 1):.1f}x (best rounds)",
                  flush=True)
        print("3. the DP sparse GP's sufficient statistics of one file (3 alternating rounds):", flush=True)
        sparse_gp(folder)


if __name__ == "__main__":
    main()
