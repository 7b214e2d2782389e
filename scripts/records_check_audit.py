"""How well the dry run's own-records measure and the forecast predict real releases (audit 19b, committed).

For each setting (data, mechanism, epsilon): the forecast (public simulation), ``records_check`` (the plan drawn on
the records themselves, what `privgp release --measure-on-records` prints) and R real releases (``privgp.release``, seeds 9000,
9001, ..., a scratch ledger), each real map scored as records_check scores its draws: the IoU of its excursion set
with the non-private map of the same records (:func:`privgp.tasks.forecast.nonprivate_map`, trapezoid weights).
Data: the embedded Baltimore sales at thresholds $30k-$60k; the README's 2 000 sensor readings; synthetic records on
[0, 10]^2 with a known smooth field, in three Gaussian clusters or spread evenly (n = 200, 1 000, 5 000); a 1-D case.
Writes ``OUT/results.csv`` (one row per setting) and ``OUT/summary.json``.

    python scripts/records_check_audit.py --out docs/runs/records-check-audit --releases 20
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import privgp
from privgp.datasets import baltimore
from privgp.mechanisms.release import check_records
from privgp.models.domain import trapezoid_weights
from privgp.progress import Progress
from privgp.tasks.forecast import NOISY_IOU, _compare, _released_or_empty, forecast, nonprivate_map, records_check

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONAL = {"noise_bound": 0.15}


def _field(X: np.ndarray) -> np.ndarray:
    """A known smooth field on [0, 10]^2: two raised bumps, one sunk, a gentle slope (model units, about +-1.5)."""
    x, y = X[:, 0], X[:, 1]
    return (1.2 * np.exp(-((x - 3) ** 2 + (y - 3) ** 2) / 6) + np.exp(-((x - 7) ** 2 + (y - 7) ** 2) / 4)
            - 0.8 * np.exp(-((x - 7.5) ** 2 + (y - 2.5) ** 2) / 5) + 0.3 * np.sin(x / 2) - 0.3)


def _data(name: str):
    """(records, box, response map) of a data set named 'baltimore:T', 'sensors', 'clustered:n', 'uniform:n' or
    '1d:n'."""
    kind, _, arg = name.partition(":")
    if kind == "baltimore":
        data = privgp.records(baltimore.load_baltimore(), "price", coordinates=["x", "y"])
        return data, baltimore.PUBLIC_BOX, privgp.ResponseMap(threshold=float(arg), clip=1, transform="log")
    if kind == "sensors":
        table = pd.read_csv(ROOT / "docs" / "runs" / "readme-sensors" / "sensors.csv")
        data = privgp.records(table, "no2", coordinates=["x_km", "y_km"])
        return data, privgp.Box((0.0, 0.0), (10.0, 5.0)), privgp.ResponseMap(threshold=40, clip=20)
    n = int(arg)
    if kind == "1d":
        rng = np.random.default_rng(7)
        X = np.concatenate([rng.normal(3, 0.7, n // 2), rng.uniform(0, 10, n - n // 2)]).clip(0, 10)[:, None]
        y = np.sin(X[:, 0]) + 0.3 * np.cos(2.3 * X[:, 0]) + rng.normal(0, 0.3, n)
        return privgp.records(X, y), privgp.Box((0.0,), (10.0,)), privgp.ResponseMap(threshold=0.0, clip=1.5)
    rng = np.random.default_rng(123)
    if kind == "clustered":
        centres = np.array([[2.5, 3.0], [7.0, 7.5], [7.5, 2.0]])
        X = np.clip(centres[rng.choice(3, size=n, p=[0.5, 0.3, 0.2])] + rng.normal(0, 0.8, (n, 2)), 0.0, 10.0)
    else:
        X = rng.uniform(0, 10, (n, 2))
    y = _field(X) + rng.normal(0, 0.3, n)
    return privgp.records(X, y), privgp.Box((0.0, 0.0), (10.0, 10.0)), privgp.ResponseMap(threshold=0.0, clip=1.5)


def settings() -> list[tuple[str, str, float, dict]]:
    """(data, mechanism, epsilon, options): 74 settings."""
    out = [(f"baltimore:{t}", "auto", e, {}) for t in (30, 40, 50, 60) for e in (1, 2, 5)]
    out += [(f"baltimore:{t}", m, e, {}) for t in (40, 50) for m in ("grid", "laplace-grid") for e in (1, 2, 5)]
    for e in (2, 5):
        out += [("baltimore:40", "functional", e, FUNCTIONAL), ("baltimore:40", "posterior-sample", e, {}),
                ("baltimore:40", "sparse-gp", e, {})]
    out += [("sensors", m, e, {}) for m in ("auto", "grid", "laplace-grid") for e in (1, 2, 5)]
    out += [(f"{k}:{n}", "auto", e, {}) for k in ("clustered", "uniform") for n in (200, 1000, 5000) for e in (1, 2, 5)]
    out += [(f"{k}:1000", m, 2, {}) for m in ("grid", "laplace-grid") for k in ("clustered", "uniform")]
    for k in ("clustered", "uniform"):
        out += [(f"{k}:200", "functional", 2, FUNCTIONAL), (f"{k}:200", "posterior-sample", 2, {}),
                (f"{k}:200", "sparse-gp", 2, {})]
    out += [("1d:500", "auto", e, {}) for e in (1, 2, 5)]
    out += [("1d:500", "grid", 2, {}), ("1d:500", "functional", 2, FUNCTIONAL), ("1d:200", "posterior-sample", 2, {}),
            ("sensors", "functional", 2, FUNCTIONAL)]
    return out


def one_setting(name: str, mechanism: str, epsilon: float, options: dict, releases: int, scratch: Path) -> dict:
    data, box, rmap = _data(name)
    plan = privgp.plan(mechanism, data.n, box, rmap, epsilon=epsilon, **options)
    fc = forecast(plan)
    own = records_check(plan, data, fc)
    checked = check_records(plan, data, allow_noisy=True)
    X = np.asarray(checked.X, dtype=float)
    y = np.asarray(rmap.apply(checked.records.response), dtype=float)
    ious, ref, area = [], None, math.nan
    for s in range(releases):
        budget = privgp.Budget(scratch / "ledger.sqlite", epsilon=1e12)
        got = privgp.release(plan, data, budget, np.random.default_rng(9000 + s), budget_epsilon=1e12,
                             allow_noisy=True)
        axes, f, exc = _released_or_empty(got.released, plan.domain)
        w = trapezoid_weights(axes).reshape(f.shape)
        w = w / w.sum()
        if ref is None or ref.shape != f.shape:
            ref = nonprivate_map(plan.domain, axes, X, y)
            area = float(np.sum(w * (ref > 0)))
        ious.append(_compare(f, exc, ref, w)[0])
    real = np.array(ious)
    real_mean, real_se = float(real.mean()), float(real.std(ddof=1) / math.sqrt(real.size))
    return {"data": name, "mechanism": mechanism, "chosen": str(plan.mechanism), "epsilon": epsilon, "n": data.n,
            "area_above": area, "check_iou": own.iou, "check_se": own.iou_se, "check_releases": own.releases,
            "real_iou": real_mean, "real_se": real_se, "real_share_below": float(np.mean(real < NOISY_IOU)),
            "releases": releases, "check_z": (own.iou - real_mean) / math.hypot(own.iou_se, real_se),
            "forecast_iou": fc.iou, "forecast_se": fc.iou_se,
            "forecast_z": (fc.iou - real_mean) / math.hypot(fc.iou_se, real_se)}


def summarise(df: pd.DataFrame) -> dict:
    check_err, fc_err = (df["check_iou"] - df["real_iou"]).abs(), (df["forecast_iou"] - df["real_iou"]).abs()
    real_ok = df["real_iou"] >= NOISY_IOU
    return {
        "settings": len(df),
        "check_abs_z_below_2": int((df["check_z"].abs() < 2).sum()), "check_largest_abs_z": float(df["check_z"].abs().max()),
        "check_z_mean": float(df["check_z"].mean()), "check_z_sd": float(df["check_z"].std(ddof=1)),
        "check_abs_error_median": float(check_err.median()), "check_abs_error_p90": float(check_err.quantile(0.9)),
        "check_abs_error_max": float(check_err.max()), "check_off_by_over_0_1": int((check_err > 0.1).sum()),
        "check_same_side_of_half": int(((df["check_iou"] >= NOISY_IOU) == real_ok).sum()),
        "forecast_abs_error_median": float(fc_err.median()), "forecast_abs_error_p90": float(fc_err.quantile(0.9)),
        "forecast_abs_error_max": float(fc_err.max()), "forecast_off_by_over_0_1": int((fc_err > 0.1).sum()),
        "forecast_same_side_of_half": int(((df["forecast_iou"] >= NOISY_IOU) == real_ok).sum()),
        "forecast_called_mostly_noise": int((df["forecast_iou"] < NOISY_IOU).sum()),
        "forecast_passed": int((df["forecast_iou"] >= NOISY_IOU).sum()),
        "forecast_refused_a_map_real_releases_put_at_half_or_more": int(((df["forecast_iou"] < NOISY_IOU) & real_ok).sum()),
        "forecast_passed_a_map_real_releases_put_below_half": int(((df["forecast_iou"] >= NOISY_IOU) & ~real_ok).sum()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--releases", type=int, default=20)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    todo = settings()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Progress(len(todo), "settings") as bar:
        for name, mech, eps, opts in todo:
            rows.append(one_setting(name, mech, eps, opts, args.releases, Path(tmp)))
            bar.update(1)
    df = pd.DataFrame(rows)
    df.to_csv(args.out / "results.csv", index=False)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    doc = {"command": f"python scripts/records_check_audit.py --out {args.out} --releases {args.releases}",
           "privgp_commit": commit, "summary": summarise(df)}
    (args.out / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc["summary"], indent=2))


if __name__ == "__main__":
    main()
