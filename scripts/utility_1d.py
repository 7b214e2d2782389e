"""The 1-D default map against fixed alternatives, on a transect with a known answer (walk-through 11).

    python scripts/utility_1d.py [--seeds 30]   (under a minute)

Truth z(x) = 10 + 5 sin(x / 10) on the public box [0, 100]; n records at uniform x with N(0, 1) noise; the task
is where z > 12 (threshold 12, clip 6, identity transform); epsilon 1 (and 5), privgp's default delta. For each
seed every candidate releases from the same records, each with its own noise (the Python API, a throwaway
ledger):

* ``auto``: ``--mechanism auto`` as released now (the 1-D tuning table);
* ``auto, 2-D table``: the cells and bandwidth the 2-D table gave 1-D data before (what auto released);
* ``laplace-grid C``: the Laplace noisy grid with C cells and bandwidth 0.5 (C = 10, 20, 40): what a user who
  tunes by hand might pick, and the histogram a general DP library gives (per-cell Laplace sums and counts)
  with privgp's smoothing.

Reported per (n, epsilon): RMSE against the truth on the release grid (response units), the share of the
transect on the wrong side of the threshold, and the share wrongly marked reliable; mean +- standard error
over seeds.

A second case (walk-through 12), where privgp loses: a seasonal series over two years, z(t) = 18 + 8 sin(2 pi (t -
100) / 365) + 4 exp(-((t - 480) / 15)^2) on [0, 730] days with N(0, 3^2) noise, threshold 24, clip 10, n = 300,
1500 and 5000, epsilon 1 and 2: auto against the baseline a user of a general DP library writes -- per-bin sums
and counts with Laplace noise (L1 sensitivity 4 in model units, as privgp's Laplace grid), bin means linearly
interpolated between bin centres -- at bin widths of 15, 30, 61 and 91 days; the best width per row is chosen
with the truth in hand, which flatters the baseline. Writes docs/runs/utility-1d/results.txt (the table),
results.csv (every row, unrounded) and run.json (command, commit, versions, timing).
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import privgp
from privgp.experiments.common import write_run_record
from privgp.mechanisms.registered.auto import cells_for_box, choose_grid_settings, choose_noise
from privgp.mechanisms.registered.laplace_grid import L1_SENSITIVITY
from privgp.mechanisms.release import default_delta

OUT = Path(__file__).resolve().parents[1] / "docs" / "runs" / "utility-1d" / "results.txt"
T, B = 12.0, 6.0
BOX = privgp.Box((0.0,), (100.0,))
RMAP = privgp.ResponseMap(threshold=T, clip=B)


def truth(x: np.ndarray) -> np.ndarray:
    return 10.0 + 5.0 * np.sin(x / 10.0)


def candidates(n: int, epsilon: float) -> dict[str, object]:
    """name -> plan, public inputs only."""
    plans = {"auto": privgp.plan("auto", n, BOX, RMAP, epsilon=epsilon)}
    delta = default_delta(n)
    assert choose_noise(epsilon, delta) == "laplace"
    old = choose_grid_settings(n, L1_SENSITIVITY * math.sqrt(2.0) / epsilon, "laplace", dim=2)
    plans["auto, 2-D table"] = privgp.plan("laplace-grid", n, BOX, RMAP, epsilon=epsilon,
                                           cells=cells_for_box(int(old["cells"]), BOX), bandwidth=old["bandwidth"])
    for c in (10, 20, 40):
        plans[f"laplace-grid {c}"] = privgp.plan("laplace-grid", n, BOX, RMAP, epsilon=epsilon, cells=c, bandwidth=0.5)
    return plans


def score(result) -> tuple[float, float, float]:
    released = result.released
    x = np.asarray(released.axes[0], float)
    f = np.asarray(released.field, float)
    sd = np.asarray(released.sd, float)
    z = f * B + T                                   # model units back to the response (inside the clip range)
    t = truth(x)
    wrong = (z > T) != (t > T)
    reliable = np.abs(f) > 2.0 * sd
    return float(np.sqrt(np.mean((z - t) ** 2))), float(wrong.mean()), float((wrong & reliable).mean())


SEASON_BOX = privgp.Box((0.0,), (730.0,))
SEASON_T, SEASON_B = 24.0, 10.0
SEASON_RMAP = privgp.ResponseMap(threshold=SEASON_T, clip=SEASON_B)


def season(t: np.ndarray) -> np.ndarray:
    return 18.0 + 8.0 * np.sin(2.0 * np.pi * (t - 100.0) / 365.0) + 4.0 * np.exp(-(((t - 480.0) / 15.0) ** 2))


def laplace_bins(t: np.ndarray, z: np.ndarray, epsilon: float, width: float, grid: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
    """The baseline: per-bin sums and counts of the clipped responses (model units) plus Laplace noise of scale
    4 / epsilon each (replace-one: L1 sensitivity 2 for the sums and 2 for the counts), bin means (0 where the
    noisy count is below 1) interpolated linearly between bin centres; response units on ``grid``."""
    k = max(1, int(round(730.0 / width)))
    edges = np.linspace(0.0, 730.0, k + 1)
    y = np.clip(z - SEASON_T, -SEASON_B, SEASON_B) / SEASON_B
    idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, k - 1)
    sums = np.bincount(idx, y, k) + rng.laplace(0.0, 4.0 / epsilon, k)
    counts = np.bincount(idx, None, k) + rng.laplace(0.0, 4.0 / epsilon, k)
    means = np.where(counts >= 1.0, np.clip(sums / np.maximum(counts, 1.0), -1.0, 1.0), 0.0)
    return SEASON_T + SEASON_B * np.interp(grid, 0.5 * (edges[:-1] + edges[1:]), means)


def seasonal(seeds: int, budget, rows: list[dict]) -> list[str]:
    lines = ["# seasonal series (walk-through 12): auto against Laplace bins + linear interpolation, the best width "
             "per row chosen with the truth in hand", ""]
    for epsilon in (1.0, 2.0):
        for n in (300, 1500, 5000):
            plan = privgp.plan("auto", n, SEASON_BOX, SEASON_RMAP, epsilon=epsilon)
            got: dict[str, list] = {}
            for seed in range(seeds):
                rng = np.random.default_rng(7000 + 10 * n + seed)
                t = rng.uniform(0.0, 730.0, n)
                z = season(t) + rng.normal(0.0, 3.0, n)
                r = privgp.release(plan, privgp.records(t, z), budget, np.random.default_rng(rng.integers(2**63)))
                grid = np.asarray(r.released.axes[0], float)
                truth_on = season(grid)
                for name, f in [("auto", SEASON_T + SEASON_B * np.asarray(r.released.field, float))] + [
                        (f"bins {w:g} d", laplace_bins(t, z, epsilon, w, grid, rng)) for w in (15, 30, 61, 91)]:
                    shown = np.clip(truth_on, SEASON_T - SEASON_B, SEASON_T + SEASON_B)
                    got.setdefault(name, []).append((float(np.sqrt(np.mean((f - shown) ** 2))),
                                                     float(np.mean((f > SEASON_T) != (truth_on > SEASON_T)))))
            stats = {k: (np.mean(v, axis=0), np.std(v, axis=0, ddof=1) / math.sqrt(len(v))) for k, v in got.items()}
            best = min((k for k in stats if k != "auto"), key=lambda k: stats[k][0][0])
            lines.append(f"n = {n}, epsilon = {epsilon:g}")
            for k in ("auto", best):
                m, se = stats[k]
                label = f"auto ({plan.cells[0]} cells)" if k == "auto" else f"best baseline: {k}"
                rows.append({"case": "seasonal", "n": n, "epsilon": epsilon, "method": label, "rmse": m[0],
                             "rmse_se": se[0], "wrong": m[1], "wrong_se": se[1]})
                lines.append(f"  {label:<28} RMSE {m[0]:.2f} +- {se[0]:.2f}   wrong {100 * m[1]:5.1f}% +- "
                             f"{100 * se[1]:.1f}")
            lines.append("")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30)
    a = ap.parse_args()
    lines = [f"# {__doc__.splitlines()[0]}", "# python scripts/utility_1d.py --seeds " + str(a.seeds),
             "# mean +- standard error over seeds; RMSE in response units; wrong = share of the transect on the wrong "
             "side of 12; wrong+reliable = wrong and not hatched", ""]
    rows: list[dict] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        budget = privgp.Budget(Path(tmp) / "ledger.sqlite", epsilon=1e9)
        for epsilon in (1.0, 5.0):
            for n in (1000, 5000):
                plans = candidates(n, epsilon)
                res: dict[str, list] = {k: [] for k in plans}
                for seed in range(a.seeds):
                    rng = np.random.default_rng(1000 * n + seed)
                    x = rng.uniform(0.0, 100.0, n)
                    data = privgp.records(x, truth(x) + rng.normal(0.0, 1.0, n))
                    for k, plan in plans.items():
                        r = privgp.release(plan, data, budget, np.random.default_rng(rng.integers(2**63)))
                        res[k].append(score(r))
                lines.append(f"n = {n}, epsilon = {epsilon:g}")
                for k, plan in plans.items():
                    v = np.array(res[k])
                    m, se = v.mean(axis=0), v.std(axis=0, ddof=1) / math.sqrt(len(v))
                    rows.append({"case": "transect", "n": n, "epsilon": epsilon, "method": k, "cells": plan.cells[0],
                                 "bandwidth": plan.bandwidth, "rmse": m[0], "rmse_se": se[0], "wrong": m[1],
                                 "wrong_se": se[1], "wrong_reliable": m[2], "wrong_reliable_se": se[2]})
                    lines.append(f"  {k:<18} cells {plan.cells[0]:>3}, bandwidth {plan.bandwidth:<3g}  RMSE "
                                 f"{m[0]:.2f} +- {se[0]:.2f}   wrong {100 * m[1]:5.1f}% +- {100 * se[1]:.1f}   "
                                 f"wrong+reliable {100 * m[2]:4.1f}% +- {100 * se[2]:.1f}")
                lines.append("")
                print("\n".join(lines[-len(plans) - 2:]), file=sys.stderr, flush=True)
        lines += seasonal(a.seeds, budget, rows)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines))
    pd.DataFrame(rows).to_csv(OUT.with_name("results.csv"), index=False)   # every row, unrounded
    write_run_record(OUT.parent, "utility-1d", {"seeds": a.seeds}, {"rows": len(rows)}, time.perf_counter() - t0)
    print(f"wrote {OUT}, results.csv and run.json", file=sys.stderr)


if __name__ == "__main__":
    main()
