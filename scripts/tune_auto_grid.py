"""Tune the public settings of the noisy-grid mechanisms for ``--mechanism auto`` (writes
src/privgp/mechanisms/data/auto_grid.json for Gaussian noise, the noisy grid, and
src/privgp/mechanisms/data/auto_laplace_grid.json with ``--noise laplace``, the Laplace grid; with ``--dim 1``
the 1-D tables auto_grid_1d.json and auto_laplace_grid_1d.json, tuned on the unit interval).

Pilot data only: synthetic records from the three public field families of
privgp.datasets.fields (bump, blobs, rough) on the unit square, with seeds that the utility study
does not use (PILOT_SEED) (``--dim 1``: the unit interval, where a record count
fills k cells, not k^2, so the 2-D table's cells are far too few). For every record count n and noise std s of the released
per-cell statistics (Gaussian: s = 2 / mu(epsilon, delta), so any delta maps onto the table; Laplace:
s = 4 sqrt(2) / epsilon, the std of Laplace noise of scale 4 / epsilon), every candidate (cells along the
longest side, smoothing bandwidth in cells) is scored by the mean excursion IoU over the families (REPS_SMALL
releases each up to n = 2000, REPS above); the best is stored with its mean IoU.
The best candidate replaces the practitioner's default (BASELINE: 8 cells, bandwidth 1) only when it beats it
by more than two standard errors of the paired difference (pilot data sets shared by the candidates): where
the pilot cannot tell them apart, auto keeps the baseline. No private data is read.
Run: python scripts/tune_auto_grid.py [--noise laplace] [--dim 1]  (a few minutes on 2 cores each)
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from privgp.datasets.fields import FAMILIES, SyntheticField
from privgp.mechanisms.registered.grid import cell_sizes, cell_statistics, smooth_ratio
from privgp.models.domain import Box
from privgp.tasks.forecast import FORECAST_SEED

PILOT_SEED = 7_000_001
assert PILOT_SEED != FORECAST_SEED
NS = [100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 100_000, 300_000, 1_000_000]
NOISE_STDS = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
CELLS = [2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64]
#: 1-D: n records fill k cells (not k^2), so the candidates reach further; the map grid resolves the finest
CELLS_1D = CELLS + [96, 128, 192, 256]
BANDWIDTHS = [0.5, 1.0, 1.5, 2.0]
GRID = 41
GRID_1D = 513
REPS = 8
#: the practitioner's default (cells along the longest side, bandwidth in cells): kept unless clearly beaten
BASELINE = (8, 1.0)
#: 1-D: the same number of cells in all (8 x 8 = 64)
BASELINE_1D = (64, 1.0)
#: more pilot releases where the data are few and the comparison is noisier
REPS_SMALL, SMALL_N = 32, 2_000
DATA = Path(__file__).resolve().parents[1] / "src" / "privgp" / "mechanisms" / "data"
OUT = {("gaussian", 2): DATA / "auto_grid.json", ("laplace", 2): DATA / "auto_laplace_grid.json",
       ("gaussian", 1): DATA / "auto_grid_1d.json", ("laplace", 1): DATA / "auto_laplace_grid_1d.json"}


def noise(kind: str, rng: np.random.Generator, std: float, shape) -> np.ndarray:
    """Noise of standard deviation ``std``: Gaussian, or Laplace of scale std / sqrt(2)."""
    return rng.normal(0, std, shape) if kind == "gaussian" else rng.laplace(0, std / np.sqrt(2.0), shape)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--noise", choices=("gaussian", "laplace"), default="gaussian")
    ap.add_argument("--dim", type=int, choices=(1, 2), default=2)
    a = ap.parse_args()
    kind, dim = a.noise, a.dim
    cells_list = CELLS if dim == 2 else CELLS_1D
    baseline = BASELINE if dim == 2 else BASELINE_1D
    t0 = time.time()
    dom = Box.unit(dim)
    axes = tuple(np.linspace(0, 1, GRID if dim == 2 else GRID_1D) for _ in range(dim))
    rng = np.random.default_rng(PILOT_SEED)
    truths = {f: SyntheticField(f, dom).on_axes(axes) > 0 for f in FAMILIES}
    # iou[n][s][(c, b)] = list over families of mean IoU
    table = []
    for n in NS:
        reps = REPS_SMALL if n <= SMALL_N else REPS
        vals = np.zeros((len(NOISE_STDS), len(cells_list), len(BANDWIDTHS), len(FAMILIES), reps))
        for fi, fam in enumerate(FAMILIES):
            field = SyntheticField(fam, dom)
            for ri in range(reps):
                X, y = field.records(n, rng)
                for ci, c in enumerate(cells_list):
                    cs = cell_sizes(dom, c)
                    sums, counts = cell_statistics(dom, cs, X, y, exact=False)
                    for si, s in enumerate(NOISE_STDS):
                        ns, nc = noise(kind, rng, s, cs), noise(kind, rng, s, cs)
                        for bi, b in enumerate(BANDWIDTHS):
                            m, _ = smooth_ratio(axes, dom, cs, sums + ns, counts + nc, s, b)
                            e = m > 0
                            t = truths[fam]
                            union = np.sum(t | e)
                            vals[si, ci, bi, fi, ri] = np.sum(t & e) / union if union else 1.0
        acc = vals.mean(axis=-1)                       # per family
        base = (cells_list.index(baseline[0]), BANDWIDTHS.index(baseline[1]))
        for si, s in enumerate(NOISE_STDS):
            mean = acc[si].mean(axis=-1)
            ci, bi = np.unravel_index(np.argmax(mean), mean.shape)
            diff = (vals[si, ci, bi] - vals[si, base[0], base[1]]).mean(axis=0)   # per pilot data set, over families
            se = float(diff.std(ddof=1) / np.sqrt(diff.size))
            kept = not diff.mean() > 2 * se
            if kept:
                ci, bi = base
            table.append({"n": n, "noise_std": s, "cells": cells_list[ci], "bandwidth": BANDWIDTHS[bi],
                          "pilot_iou": round(float(mean[ci, bi]), 4), "baseline_kept": bool(kept),
                          "gain_over_baseline": round(float(diff.mean()), 4), "gain_se": round(se, 4),
                          "pilot_iou_by_family": {f: round(float(acc[si, ci, bi, k]), 4) for k, f in enumerate(FAMILIES)}})
        print(f"n={n} done ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    doc = {"what": f"tuned public settings of the {'Laplace ' if kind == 'laplace' else ''}noisy-grid mechanism for "
                   "--mechanism auto", **({"noise": kind} if kind == "laplace" else {}),
           "generator": "scripts/tune_auto_grid.py", "pilot_seed": PILOT_SEED, "families": list(FAMILIES),
           "reps_per_family": {f"n <= {SMALL_N:d}": REPS_SMALL, "larger n": REPS}, "grid": len(axes[0]),
           "box": "unit square (cells along the longest side)" if dim == 2 else "unit interval",
           "candidates": {"cells": cells_list, "bandwidth": BANDWIDTHS},
           "criterion": f"mean excursion IoU over families; the baseline ({baseline[0]} cells, bandwidth "
                        f"{baseline[1]:g}) is kept unless the best beats it by more than 2 standard errors of the "
                        "paired difference", "baseline": list(baseline),
           "entries": table}
    OUT[kind, dim].write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT[kind, dim]} in {time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
