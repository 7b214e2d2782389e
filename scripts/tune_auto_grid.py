"""Tune the public settings of the noisy-grid mechanism for ``--mechanism auto`` (writes
src/privgp/mechanisms/data/auto_grid.json).

Pilot data only: synthetic records from the three public field families of
privgp.datasets.fields (bump, blobs, rough) on the unit square, with seeds that the utility study
does not use (PILOT_SEED). For every record count n and Gaussian noise std s of the released
per-cell statistics (s = 2 / mu(epsilon, delta): the table is keyed by (n, s), so any delta maps onto
it), every candidate (cells along the longest side, smoothing bandwidth in cells) is scored by the
mean excursion IoU over the families (REPS_SMALL releases each up to n = 2000, REPS above); the best is stored with its mean IoU.
No private data is read. Run: python scripts/tune_auto_grid.py  (about a minute on 2 cores)
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from privgp.datasets.fields import FAMILIES, SyntheticField
from privgp.domain import Box
from privgp.mechanisms.grid import cell_index, cell_sizes, smooth_ratio
from privgp.tasks.forecast import FORECAST_SEED

PILOT_SEED = 7_000_001
assert PILOT_SEED != FORECAST_SEED
NS = [100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 100_000, 300_000, 1_000_000]
NOISE_STDS = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
CELLS = [2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64]
BANDWIDTHS = [0.5, 1.0, 1.5, 2.0]
GRID = 41
REPS = 8
#: more pilot releases where the data are few and the comparison is noisier
REPS_SMALL, SMALL_N = 32, 2_000
OUT = Path(__file__).resolve().parents[1] / "src" / "privgp" / "mechanisms" / "data" / "auto_grid.json"


def main() -> None:
    t0 = time.time()
    dom = Box.unit(2)
    axes = tuple(np.linspace(0, 1, GRID) for _ in range(2))
    rng = np.random.default_rng(PILOT_SEED)
    truths = {f: SyntheticField(f, dom).on_axes(axes) > 0 for f in FAMILIES}
    # iou[n][s][(c, b)] = list over families of mean IoU
    table = []
    for n in NS:
        acc = np.zeros((len(NOISE_STDS), len(CELLS), len(BANDWIDTHS), len(FAMILIES)))
        for fi, fam in enumerate(FAMILIES):
            field = SyntheticField(fam, dom)
            reps = REPS_SMALL if n <= SMALL_N else REPS
            for _ in range(reps):
                X, y = field.records(n, rng)
                for ci, c in enumerate(CELLS):
                    cs = cell_sizes(dom, c)
                    idx = cell_index(dom, cs, X)
                    sums = np.bincount(idx, weights=y, minlength=int(np.prod(cs))).reshape(cs)
                    counts = np.bincount(idx, minlength=int(np.prod(cs))).astype(float).reshape(cs)
                    for si, s in enumerate(NOISE_STDS):
                        ns, nc = rng.normal(0, s, cs), rng.normal(0, s, cs)
                        for bi, b in enumerate(BANDWIDTHS):
                            m, _ = smooth_ratio(axes, dom, cs, sums + ns, counts + nc, s, b)
                            e = m > 0
                            t = truths[fam]
                            union = np.sum(t | e)
                            acc[si, ci, bi, fi] += (np.sum(t & e) / union if union else 1.0) / reps
        for si, s in enumerate(NOISE_STDS):
            mean = acc[si].mean(axis=-1)
            ci, bi = np.unravel_index(np.argmax(mean), mean.shape)
            table.append({"n": n, "noise_std": s, "cells": CELLS[ci], "bandwidth": BANDWIDTHS[bi],
                          "pilot_iou": round(float(mean[ci, bi]), 4),
                          "pilot_iou_by_family": {f: round(float(acc[si, ci, bi, k]), 4) for k, f in enumerate(FAMILIES)}})
        print(f"n={n} done ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    doc = {"what": "tuned public settings of the noisy-grid mechanism for --mechanism auto",
           "generator": "scripts/tune_auto_grid.py", "pilot_seed": PILOT_SEED, "families": list(FAMILIES),
           "reps_per_family": {f"n <= {SMALL_N:d}": REPS_SMALL, "larger n": REPS}, "grid": GRID, "box": "unit square (cells along the longest side)",
           "candidates": {"cells": CELLS, "bandwidth": BANDWIDTHS}, "criterion": "mean excursion IoU over families",
           "entries": table}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT} in {time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
