"""How weak the diabetes relationships of seed002-sim2real are: for each of its two tasks, the Pearson
correlation of the scaled input with the standardised response and the residual standard deviation of
the standardised response around a least-squares line, on all 442 patients (the data and preprocessing
of ``privgp.experiments.seed002.nn``, imported, not copied). Deterministic, no randomness, a second:

    python scripts/seed002_diabetes_stats.py --out docs/runs/seed002-diabetes
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/runs/seed002-diabetes")
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    from privgp.experiments.common import write_run_record
    from privgp.experiments.seed002.nn import _diabetes

    t0 = time.perf_counter()
    _, tasks = _diabetes()
    summary = {}
    for name, (x, y) in tasks.items():
        slope, intercept = np.polyfit(x, y, 1)
        resid = y - (slope * x + intercept)
        summary[name] = {"patients": int(len(x)), "pearson_r": float(np.corrcoef(x, y)[0, 1]),
                         "residual_sd_linear_fit": float(resid.std()), "response_sd": float(y.std())}
    config = {"data": "sklearn.datasets.load_diabetes (scaled=False), as seed002-sim2real",
              "residual_sd": "population sd (ddof 0) of y - (a x + b), least squares"}
    write_run_record(out, "seed002-diabetes-stats", config, summary, seconds=time.perf_counter() - t0)
    print(summary)


if __name__ == "__main__":
    main()
