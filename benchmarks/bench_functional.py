"""Speed of the seed-002 pieces: Figure 4, one DPSetConv release, one functional-mechanism release.

Run:  python benchmarks/bench_functional.py [--repeats 20]
Prints (first call, best, median) wall seconds and the median CPU seconds of this process. The
three-mechanism comparison at paper-like scale is timed separately (it is a whole experiment):
    /usr/bin/time -v privgp experiment mechanisms --out DIR --workers 2

Baseline in the same run (issue 30): the DPSetConv release against its non-private part alone, the SetConv
density and signal channels on the same grid (``setconv_channels``); the ratio of the medians is printed.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from _timing import timings  # noqa: E402


def cpu_median(fn, repeats):
    ts = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        ts.append(time.process_time() - t0)
    return float(np.median(ts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    from privgp.datasets import baltimore
    from privgp.datasets.tabular import load_embedded_baltimore
    from privgp.experiments.seed002.figures import fig4
    from privgp.mechanisms.dpsetconv import dpsetconv, plan_dpsetconv
    from privgp.mechanisms.functional import plan_functional, release_functional
    from privgp.mechanisms.release import ResponseMap, grid_sizes
    from privgp.models.domain import PublicGrid
    from privgp.parallel import SerialExecutor

    rows = []
    with tempfile.TemporaryDirectory() as d:
        k = iter(range(10_000))

        def f():
            out = Path(d) / f"f{next(k)}"
            out.mkdir()
            fig4(out, quick=False, executor=SerialExecutor(progress=False))

        rows.append(("Figure 4: 406 epsilons x 3 multipliers + claims + CSV/PNG (seed002-fig4)", *timings(f, 5),
                     cpu_median(f, 3)))
    from privgp.accounting.functional_noise import gdp_multiplier, hall_multiplier, rdp_multiplier

    eps = np.geomspace(0.05, 4.0, 406)
    f = lambda: (hall_multiplier(10**0.5, eps[eps <= 1], 1e-3), rdp_multiplier(10**0.5, eps, 1e-3),
                 gdp_multiplier(10**0.5, eps, 1e-3))
    rows.append(("Figure 4 numbers only (406 epsilons, vectorised)", *timings(f, args.repeats), cpu_median(f, 5)))

    rng = np.random.default_rng(0)
    grid = PublicGrid.convcnp_window(-7, 7, margin=2)             # 512 points, the paper's synthetic grid
    x = rng.uniform(-2, 2, 512)
    y = np.sin(3 * x) + 0.2 * rng.normal(size=512)
    kw = dict(epsilon=1.0, delta=1e-3, lengthscale=0.2, clip=2.0, t=0.5)
    from privgp.models.sampling import prior as _prior

    def fresh():
        _prior._axis_factor.cache_clear()                          # include the Cholesky factor of the grid
        return dpsetconv(x, y, grid, rng=rng, **kw)

    rows.append(("DPSetConv release, N=512, grid 512 (plan + channels + noise; factor cached)",
                 *timings(lambda: dpsetconv(x, y, grid, rng=rng, **kw), args.repeats),
                 cpu_median(lambda: dpsetconv(x, y, grid, rng=rng, **kw), args.repeats)))
    rows.append(("DPSetConv release, N=512, grid 512, uncached (Cholesky of the 512 x 512 Gram each call)",
                 *timings(fresh, 5), cpu_median(fresh, 5)))
    plan = plan_dpsetconv(grid, **kw)
    from privgp.mechanisms.dpsetconv import dpsetconv_release

    rows.append(("DPSetConv release with a prepared plan (channels + noise)",
                 *timings(lambda: dpsetconv_release(plan, x, y, rng), args.repeats),
                 cpu_median(lambda: dpsetconv_release(plan, x, y, rng), args.repeats)))
    from privgp.mechanisms.dpsetconv import setconv_channels

    pts = grid.points()
    rows.append(("baseline: the non-private SetConv channels alone (same grid)",
                 *timings(lambda: setconv_channels(x, y, pts, 0.2, 2.0), args.repeats),
                 cpu_median(lambda: setconv_channels(x, y, pts, 0.2, 2.0), args.repeats)))
    ratios = (rows[2][3] / rows[-1][3], rows[4][3] / rows[-1][3])

    data = load_embedded_baltimore()
    box = baltimore.PUBLIC_BOX
    g = PublicGrid.on_box(box, grid_sizes(box, 121))
    rm = ResponseMap(50.0, 1.0, "log")
    mk = lambda: plan_functional(data.n, box, g, lengthscale=35.0, r=None, noise_std=0.2, epsilon=5.0,
                                 delta=data.n ** -1.1, response_map=rm)
    rows.append(("functional plan: calibrate r for noise std 0.2 + certify (Baltimore, n=211)",
                 *timings(mk, 5), cpu_median(mk, 5)))
    fp = mk()
    rel = lambda: release_functional(fp, data.X, data.response, rng)
    rows.append(("functional release: posterior mean + exact noise on 121 x 73 (circulant)",
                 *timings(rel, 5), cpu_median(rel, 5)))

    w = max(len(r[0]) for r in rows)
    print(f"{'what':<{w}}  first s   best s   median s   CPU median s")
    for name, first, best, med, cpu in rows:
        print(f"{name:<{w}}  {first:7.4f}  {best:7.4f}  {med:8.4f}  {cpu:10.4f}")
    print(f"load average: {os.getloadavg()}")
    print(f"DPSetConv release / its non-private channels: {ratios[0]:.1f}x (factor cached), "
          f"{ratios[1]:.1f}x (prepared plan) (medians, same run)")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
