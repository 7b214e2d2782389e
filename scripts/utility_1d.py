"""The 1-D default map against fixed alternatives, on a transect with a known answer (walk-through 11).

    python scripts/utility_1d.py [--seeds 30]   (a few seconds)

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
over seeds. Writes docs/runs/utility-1d/results.txt.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

import privgp
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30)
    a = ap.parse_args()
    lines = [f"# {__doc__.splitlines()[0]}", "# python scripts/utility_1d.py --seeds " + str(a.seeds),
             "# mean +- standard error over seeds; RMSE in response units; wrong = share of the transect on the wrong "
             "side of 12; wrong+reliable = wrong and not hatched", ""]
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
                    lines.append(f"  {k:<18} cells {plan.cells[0]:>3}, bandwidth {plan.bandwidth:<3g}  RMSE "
                                 f"{m[0]:.2f} +- {se[0]:.2f}   wrong {100 * m[1]:5.1f}% +- {100 * se[1]:.1f}   "
                                 f"wrong+reliable {100 * m[2]:4.1f}% +- {100 * se[2]:.1f}")
                lines.append("")
                print("\n".join(lines[-len(plans) - 2:]), file=sys.stderr, flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
