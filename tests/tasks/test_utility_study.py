"""`privgp experiment utility` (quick) and its library part: paired releases of every mechanism, the pilot
choice of the tuned GP mechanisms, the which-mechanism table."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privgp.datasets.fields import SyntheticField
from privgp.experiments import run_experiment
from privgp.experiments.studies.utility import choose_pilot_settings, which_table
from privgp.models.domain import Box
from privgp.tasks.utility_study import IDENTITY, MECHANISMS, PILOT_CANDIDATES, TUNED, default_plan, release_scores


def test_quick_study_writes_its_tables_and_figure(tmp_path):
    out = run_experiment("utility", tmp_path / "u", quick=True, workers=1)
    which = pd.read_csv(tmp_path / "u" / "which.csv")
    assert set(MECHANISMS + TUNED) <= set(which.columns)
    assert len(which) == 4 and which["best_single"].isin(MECHANISMS + TUNED).all()
    assert (tmp_path / "u" / "which_mechanism.png").stat().st_size > 10_000
    assert (tmp_path / "u" / "pilot_choices.csv").exists()
    run = json.loads((tmp_path / "u" / "run.json").read_text())
    assert run["config"]["quick"] is True and out["releases"] > 0
    bal = pd.read_csv(tmp_path / "u" / "baltimore.csv")
    assert bal["records_correct_side"].between(0, 1).all()


def test_every_mechanism_is_certified_at_the_target_and_scored_against_the_truth():
    field = SyntheticField("blobs", Box.unit(2))
    rng = np.random.default_rng(0)
    X, y = field.records(300, rng)
    settings = {(m, 300, 2.0): PILOT_CANDIDATES[m][0] for m in TUNED}
    rows = release_scores(X, y, field.domain, IDENTITY, MECHANISMS + TUNED, (2.0,), 1e-7, 21, rng, truth=field,
                          settings=settings)
    assert {r["mechanism"] for r in rows} == set(MECHANISMS + TUNED)
    for r in rows:
        assert r["certified_epsilon"] <= 2.0
        assert 0 <= r["iou"] <= 1 and r["rmse"] >= 0
    tuned = [r for r in rows if r["mechanism"] in TUNED]
    assert all(r["params"] for r in tuned)


def test_pilot_choice_is_the_best_mean_and_ties_go_to_the_first():
    pilot = pd.DataFrame([
        {"mechanism": "sparse-gp:pilot", "n": 100, "epsilon": 1.0, "candidate": c, "iou": v}
        for c, v in [(0, 0.2), (1, 0.5), (2, 0.5), (1, 0.3), (2, 0.3)]])
    chosen = choose_pilot_settings(pilot)
    assert chosen[("sparse-gp:pilot", 100, 1.0)] == PILOT_CANDIDATES["sparse-gp:pilot"][1]


def test_which_table_checks_auto_against_the_best_and_the_grid():
    summary = pd.DataFrame([
        {"family": f, "n": 100, "epsilon": 1.0, "mechanism": m, "iou": v, "iou_se": 0.01}
        for f in ("bump", "rough") for m, v in [("grid", 0.5), ("auto", 0.48), ("posterior-sample", 0.52)]])
    w = which_table(summary)
    assert w.loc[0, "best_single"] == "posterior-sample"
    assert w.loc[0, "auto_minus_best"] == pytest.approx(-0.04)
    assert not w.loc[0, "auto_ok"]


def test_tuned_plans_use_the_pilot_parameters():
    p = default_plan("posterior-sample:pilot", 500, Box.unit(2), IDENTITY, 1.0, 1e-7, 21,
                     {"kernel": "squared_exponential", "lengthscale": 0.1, "sigma": 0.3})
    assert p.kernel == "squared_exponential" and p.sigma == 0.3
    assert p.lengthscale == pytest.approx(0.1 * np.sqrt(2))
