"""The release forecast (privgp.tasks.forecast): when it stops simulating, its per-family public streams, and
the grids' fast simulated statistics."""
from __future__ import annotations

import numpy as np

from privgp.mechanisms.registered.auto import plan_auto
from privgp.mechanisms.registered.grid import plan_grid
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box
from privgp.tasks import forecast as F

IDENTITY = ResponseMap(0.0, 1.0)


def test_a_precise_forecast_stops_after_two_rounds_and_a_noisy_one_runs_every_release():
    large = F.forecast(plan_auto(50_000, Box.unit(2), IDENTITY, epsilon=5.0, delta=1e-7, grid=41), reps=8)
    assert large.reps_per_family < 8 and large.iou_se <= F.PRECISE_SE
    small = F.forecast(plan_auto(200, Box.unit(2), IDENTITY, epsilon=2.0, delta=1e-6, grid=41), reps=8)
    assert small.reps_per_family == 8 and small.iou_se > F.PRECISE_SE
    # asking for no early stop runs every release, and the first rounds are the same draws
    full = F.forecast(plan_auto(50_000, Box.unit(2), IDENTITY, epsilon=5.0, delta=1e-7, grid=41), reps=8,
                      precise_se=0.0)
    assert full.reps_per_family == 8 and abs(full.iou - large.iou) < 3 * large.iou_se + 1e-3


def test_each_family_has_its_own_public_stream():
    plan = plan_grid(300, Box.unit(2), IDENTITY, epsilon=2.0, delta=1e-6, cells=5, grid=31)
    alone = F.forecast(plan, reps=3, families=("blobs",), precise_se=0.0)
    together = F.forecast(plan, reps=3, precise_se=0.0)
    assert alone.per_family["blobs"] == together.per_family["blobs"]


def test_the_simulated_grid_statistics_give_the_release_of_the_exact_ones():
    plan = plan_grid(2_000, Box.unit(2), IDENTITY, epsilon=2.0, delta=1e-6, cells=6, grid=31)
    rng = np.random.default_rng(3)
    X, y = rng.random((2_000, 2)), rng.uniform(-1, 1, 2_000)
    fast = F._simulated_draw(plan, X, y, np.random.default_rng(1))
    exact = plan.draw(X, y, np.random.default_rng(1))
    np.testing.assert_allclose(fast.field, exact.field, rtol=0, atol=1e-12)
