"""The cost of a sparse-GP release's exact discrete noise (privgp.mechanisms.sparse_gp_lattice), against the float
path it replaced, in the same run.

    python benchmarks/bench_sparse_gp_lattice.py [--n 1000000] [--repeat 5]

For n 2-D records on the embedded data's box and the release plan's defaults (40 inducing inputs; 64 on a square
box): the float sufficient statistics (`sufficient_statistics`, what seed 001's mechanism sums) against the lattice
statistics (`lattice_statistics`: rounded per-record terms, exact int64 sums), alternating, median of --repeat; then
the noise alone (the float normals against the exact discrete Gaussian of the same stds, `privatise` against
`privatise_lattice`). BLAS on one thread, as a release's statistics pass runs from 5e4 records.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine_line  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    import numpy as np

    from privgp.mechanisms.release import ResponseMap
    from privgp.mechanisms.sparse_gp import SufficientStatistics, privatise, sufficient_statistics
    from privgp.mechanisms.sparse_gp_lattice import lattice_statistics, privatise_lattice
    from privgp.mechanisms.sparse_gp_release import plan_sparse_gp
    from privgp.models.domain import Box

    print(machine_line())
    rng = np.random.default_rng(0)
    for box in (Box((850.0, 500.0), (1000.0, 590.0)), Box((0.0, 0.0), (1.0, 1.0))):
        plan = plan_sparse_gp(a.n, box, ResponseMap(0.0, 1.0), epsilon=2.0)
        lo, hi = np.asarray(box.lower), np.asarray(box.upper)
        X = lo + rng.uniform(0, 1, (a.n, 2)) * (hi - lo)
        y = rng.uniform(-1, 1, a.n)
        fl, lat = [], []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            sufficient_statistics(X, y, plan.spec, check_inducing=False)
            fl.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            A, B, _, _ = lattice_statistics(X, y, plan.spec, plan.lattice)
            lat.append(time.perf_counter() - t0)
        d = plan.spec.n_inducing
        stats = SufficientStatistics(A.astype(float), B.astype(float), a.n, 0)
        nf, nl = [], []
        for r in range(a.repeat):
            t0 = time.perf_counter()
            privatise(stats, plan.noise, np.random.default_rng(r))
            nf.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            privatise_lattice(A, B, plan.lattice, np.random.default_rng(r))
            nl.append(time.perf_counter() - t0)
        mf, ml = statistics.median(fl), statistics.median(lat)
        print(f"n = {a.n}, {d} inducing inputs ({d + d * (d + 1) // 2} noisy numbers): statistics float {mf:.3f} s, "
              f"lattice {ml:.3f} s ({ml / mf:.2f}x); noise float {statistics.median(nf) * 1e3:.2f} ms, exact discrete "
              f"{statistics.median(nl) * 1e3:.1f} ms (median of {a.repeat}, alternating)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
