"""How good README's main command's map is on its own records, against what its forecast says (audit 18c).

``privgp release`` (the README's main command: the embedded Baltimore sales, default settings) is run R times with
seeds 5000, 5001, ...; each released map (field.npz, model units) is compared, as the forecast compares its simulated
releases (:func:`privgp.tasks.forecast.nonprivate_map`, trapezoid weights, the excursion set where the map is > 0),
with the non-private map of the same 211 real records. The forecast simulates records spread evenly over the box;
these records are clustered (a quarter of the 8 x 5 cells hold no sale). Writes ``OUT/embedded.csv`` (one row per
release), ``OUT/summary.json`` and ``OUT/note.txt`` (what `privgp release --dry-run` tells the data holder of these
records). The data are public (shipped with privgp): the releases go to a scratch ledger.

    python scripts/forecast_calibration.py --out docs/runs/forecast-calibration --repeats 20 --epsilon default 2
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from privgp.cli.main import main as privgp
from privgp.datasets import baltimore
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box, trapezoid_weights
from privgp.tasks.forecast import _compare, nonprivate_map

#: README's main command's public settings on the embedded data (its box and response map)
BOX = Box((850.0, 500.0), (1000.0, 590.0))
RESPONSE = ResponseMap(threshold=50.0, clip=1.0, transform="log")


def one_release(epsilon: str, seed: int, scratch: Path) -> dict:
    out = scratch / f"out_{epsilon}_{seed}"
    argv = ["release", "--out", str(out), "--no-report", "--json", "--seed", str(seed), "--ledger",
            str(scratch / "ledger.sqlite"), "--budget-epsilon", "1e12", "--allow-noisy"]
    if epsilon != "default":
        argv += ["--epsilon", epsilon]
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert privgp(argv) == 0
    doc = json.loads(text.getvalue())
    z = np.load(out / "field.npz")
    axes, f = (z["axis_x"], z["axis_y"]), z["field"]
    records = pd.read_csv(baltimore.csv_path())
    X, y = records[["x", "y"]].to_numpy(float), RESPONSE.apply(records["price"].to_numpy(float))
    w = trapezoid_weights(axes).reshape(f.shape)
    w = w / w.sum()
    iou, agree, rmse = _compare(f, f > 0, nonprivate_map(BOX, axes, X, y), w)
    fc = doc["forecast"]
    return {"epsilon": doc["epsilon"], "asked": epsilon, "seed": seed, "cells": "x".join(map(str, doc["cells"])),
            "iou": iou, "agreement": agree, "rmse": rmse, "forecast_iou": fc["expected_iou"],
            "forecast_iou_se": fc["expected_iou_se"], "forecast_agreement": fc["expected_agreement"],
            "forecast_rmse": fc["expected_rmse"], "mostly_noise": fc["mostly_noise"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--epsilon", nargs="+", default=["default"], help="'default' (README's) or numbers")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        err, text = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(text):
            assert privgp(["release", "--dry-run", "--ledger", str(Path(tmp) / "ledger.sqlite")]) == 0
        (args.out / "note.txt").write_text("$ privgp release --dry-run\n" + err.getvalue() + text.getvalue())
        for eps in args.epsilon:
            rows += [one_release(eps, 5000 + s, Path(tmp)) for s in range(args.repeats)]
    df = pd.DataFrame(rows)
    df.to_csv(args.out / "embedded.csv", index=False)
    summary = {}
    for eps, g in df.groupby("asked", sort=False):
        n = len(g)
        summary[eps] = {
            "releases": n, "epsilon": float(g["epsilon"].iloc[0]), "cells": g["cells"].iloc[0],
            "realised_iou_mean": float(g["iou"].mean()), "realised_iou_se": float(g["iou"].std(ddof=1) / math.sqrt(n)),
            "share_below_half": float((g["iou"] < 0.5).mean()),
            "realised_rmse_mean": float(g["rmse"].mean()), "realised_agreement_mean": float(g["agreement"].mean()),
            "forecast_iou": float(g["forecast_iou"].iloc[0]), "forecast_iou_se": float(g["forecast_iou_se"].iloc[0]),
            "forecast_rmse": float(g["forecast_rmse"].iloc[0]),
            "forecast_agreement": float(g["forecast_agreement"].iloc[0]),
            "mostly_noise_by_forecast": bool(g["mostly_noise"].iloc[0])}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    doc = {"command": "python scripts/forecast_calibration.py " + " ".join(
        ["--out", str(args.out), "--repeats", str(args.repeats), "--epsilon", *args.epsilon]),
        "privgp_commit": commit, "reference": "privgp.tasks.forecast.nonprivate_map of the 211 embedded records",
        "summary": summary}
    (args.out / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
