"""The data holder's own measurement (:func:`privgp.tasks.forecast.records_check`): the plan drawn on the private
records and compared with their non-private map, what `privgp release --dry-run` prints beside the forecast.

The forecast simulates records spread over the box and an excursion set of about half of it; on the embedded sales
at $50k (clustered, a third of the box above) 20 real releases overlapped the non-private map by IoU 0.51 where the
forecast said 0.68 (docs/runs/forecast-calibration). The check must measure what real releases realise, whatever
the forecast says."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import privgp
from privgp.datasets import baltimore
from privgp.errors import InvalidParameterError
from privgp.ledger import Ledger
from privgp.mechanisms.release import ResponseMap, check_records
from privgp.models.domain import Box, trapezoid_weights
from privgp.tasks.forecast import _compare, forecast, nonprivate_map, records_check


def _sales(threshold: float):
    table = pd.read_csv(baltimore.csv_path())
    data = privgp.records(table, "price", coordinates=["x", "y"])
    rmap = ResponseMap(threshold=threshold, clip=1.0, transform="log")
    return table, data, rmap


def _realised(plan, data, table, rmap, seeds, tmp_path) -> np.ndarray:
    """IoU of real releases (privgp.release, charged to a scratch ledger) against the non-private map, computed here
    from the released field and the records, independently of records_check."""
    X = table[["x", "y"]].to_numpy(float)
    y = rmap.apply(table["price"].to_numpy(float))
    ledger = Ledger(tmp_path / "scratch.sqlite")
    out = []
    for seed in seeds:
        got = privgp.release(plan, data, ledger, np.random.default_rng(seed), budget_epsilon=1e9)
        f = np.asarray(got.released.field)
        w = trapezoid_weights(got.released.axes).reshape(f.shape)
        out.append(_compare(f, f > 0, nonprivate_map(plan.domain, got.released.axes, X, y), w / w.sum())[0])
    return np.array(out)


@pytest.mark.parametrize("threshold", [40.0, 50.0])
def test_the_check_measures_what_real_releases_realise(threshold, tmp_path):
    table, data, rmap = _sales(threshold)
    plan = privgp.plan("auto", data.n, baltimore.PUBLIC_BOX, rmap, epsilon=5.0)
    fc = forecast(plan)
    own = records_check(plan, data, fc)
    assert own.releases == fc.reps_per_family * len(fc.families) == 24
    real = _realised(plan, data, table, rmap, range(7000, 7024), tmp_path)
    se = math.hypot(own.iou_se, real.std(ddof=1) / math.sqrt(real.size))
    assert abs(own.iou - real.mean()) < 4 * se, (own, real.mean(), se)
    assert own.forecast_iou == fc.iou


def test_at_50k_it_finds_the_borderline_map_the_forecast_misses():
    """The audit's finding, from the check alone: at $50k the forecast promises 0.68 on these clustered records,
    the check measures far less (about 0.54), and a third or more of its draws fall below 0.5."""
    _, data, rmap = _sales(50.0)
    plan = privgp.plan("auto", data.n, baltimore.PUBLIC_BOX, rmap, epsilon=5.0)
    fc = forecast(plan)
    own = records_check(plan, data, fc)
    assert own.iou < fc.iou - 3 * max(own.iou_se, fc.iou_se), (own, fc.iou)
    assert own.share_below > 0.3


def test_a_huge_epsilon_on_the_reference_cells_reproduces_the_nonprivate_map():
    """Noise that vanishes, the reference map's own cells and bandwidth: every draw is the non-private map."""
    rng = np.random.default_rng(3)
    n = 400
    X = rng.uniform(0.0, 1.0, (n, 2))
    z = np.sin(4 * X[:, 0]) * np.cos(3 * X[:, 1]) + rng.normal(0.0, 0.2, n)
    box = Box((0.0, 0.0), (1.0, 1.0))
    rmap = ResponseMap(threshold=0.0, clip=1.0)
    from privgp.tasks.forecast import reference_settings

    cells, bandwidth = reference_settings(box, n)
    plan = privgp.plan("laplace-grid", n, box, rmap, epsilon=1e7, cells=int(max(cells)), bandwidth=bandwidth)
    assert plan.cells == cells
    own = records_check(plan, privgp.records(X, z), forecast(plan, reps=2), releases=4)
    assert own.iou > 0.999 and own.share_below == 0.0, own


def test_it_accepts_the_records_the_cli_checked_and_refuses_too_few_releases():
    _, data, rmap = _sales(40.0)
    plan = privgp.plan("laplace-grid", data.n, baltimore.PUBLIC_BOX, rmap, epsilon=5.0)
    fc = forecast(plan, reps=2)
    checked = check_records(plan, data, allow_noisy=True)
    assert records_check(plan, checked, fc, releases=6) == records_check(plan, data, fc, releases=6)
    with pytest.raises(InvalidParameterError, match="releases"):
        records_check(plan, data, fc, releases=1)
    assert "do not publish" in records_check(plan, data, fc, releases=2).to_dict()["private"]


def test_it_draws_at_least_24_releases_where_the_forecast_simulated_6():
    """Audit 19b: with the forecast's 6 draws (the GP mechanisms), the check's standard error was 0.05-0.12 and one
    answer in ten fell more than 2 standard errors from the real releases' mean."""
    _, data, rmap = _sales(40.0)
    plan = privgp.plan("functional", data.n, baltimore.PUBLIC_BOX, rmap, epsilon=5.0, noise_bound=0.15)
    fc = forecast(plan)
    assert fc.reps_per_family * len(fc.families) == 6
    assert records_check(plan, data, fc).releases == 24
