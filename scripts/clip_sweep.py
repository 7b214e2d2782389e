"""What a clip wider than the values' spread costs, which the forecast cannot see (walk-through 20).

For each --clip, the README's sensor example (2 000 synthetic NO2 readings, threshold 40, epsilon 2, --mechanism
auto) and the embedded Baltimore sales (threshold $40k, log scale, privgp's default epsilon): the forecast (public
simulation; it assumes values fill the clip range, so it is the same for every clip) beside what
`privgp release --dry-run --measure-on-records` measures on the records (:func:`privgp.tasks.forecast.records_check`:
the plan drawn on the records, compared with their non-private map; outside the guarantee, which these public and
synthetic records do not need). Writes ``OUT/summary.json``.

    python scripts/clip_sweep.py --out docs/runs/clip-sweep
"""
from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

import privgp
from privgp.datasets import baltimore
from privgp.tasks.forecast import forecast, records_check

ROOT = Path(__file__).resolve().parents[1]
SENSOR_CLIPS = (2, 5, 10, 20, 30, 50, 100, 200)
BALTIMORE_CLIPS = (0.25, 0.5, 1, 2, 3, 7, 20)


def _sweep(data, box, threshold: float, transform: str, clips, epsilon) -> dict:
    out = {}
    for clip in clips:
        rmap = privgp.ResponseMap(threshold=threshold, clip=clip, transform=transform)
        plan = privgp.plan("auto", data.n, box, rmap, **({} if epsilon is None else {"epsilon": epsilon}))
        fc = forecast(plan)
        own = records_check(plan, data, fc)
        out[f"{clip:g}"] = {"forecast_iou": fc.iou, "forecast_iou_se": fc.iou_se, "measured_iou": own.iou,
                            "measured_iou_se": own.iou_se, "measured_share_below_half": own.share_below,
                            "mechanism": str(plan.mechanism)}
        print(f"{transform} clip {clip:g}: forecast {fc.iou:.2f}, measured on the records {own.iou:.2f}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    table = pd.read_csv(ROOT / "docs" / "runs" / "readme-sensors" / "sensors.csv")
    sensors = privgp.records(table, "no2", coordinates=["x_km", "y_km"])
    dev = np.abs(table["no2"].to_numpy() - 40.0)
    sales = privgp.records(baltimore.load_baltimore(), "price", coordinates=["x", "y"])
    log_dev = np.abs(np.log(baltimore.load_baltimore()["price"].to_numpy()) - np.log(baltimore.THRESHOLD))
    summary = {
        "command": "python scripts/clip_sweep.py --out docs/runs/clip-sweep",
        "privgp_commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                        text=True).stdout.strip(),
        "sensors": {"threshold": 40, "epsilon": 2, "n": sensors.n,
                    "distance_from_threshold_median": float(np.median(dev)), "distance_from_threshold_max": float(dev.max()),
                    "clips": _sweep(sensors, privgp.Box((0.0, 0.0), (10.0, 5.0)), 40.0, "identity", SENSOR_CLIPS, 2.0)},
        "baltimore": {"threshold": baltimore.THRESHOLD, "transform": "log", "epsilon": "default", "n": sales.n,
                      "log_distance_from_threshold_median": float(np.median(log_dev)),
                      "log_distance_from_threshold_max": float(log_dev.max()),
                      "clips": _sweep(sales, baltimore.PUBLIC_BOX, baltimore.THRESHOLD, "log", BALTIMORE_CLIPS, None)},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
