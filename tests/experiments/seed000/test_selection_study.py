"""The selection study (privgp.experiments.seed000.selection_study) and the published script's design options it
varies: one target shared by a pool of datasets, the script's refinement."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privgp.datasets.synthetic import excursion_pairs_1d
from privgp.experiments import run_experiment
from privgp.experiments.seed000 import selection_study as study
from privgp.experiments.seed000.excursion_1d import SEARCHES, config_1d


def test_shared_target_pairs_are_one_target_with_independent_datasets():
    p = excursion_pairs_1d(12, 20, 0.3, rng=np.random.default_rng(0), mesh_size=100, shared_target=True,
                           target_filter="published")
    assert np.all(p.signal == p.signal[0])                      # one f*
    assert len({tuple(x) for x in p.X[..., 0]}) == 12           # twelve designs
    assert np.max(np.abs(p.y)) <= 1.0 + 1e-12 and p.info["shared_target"]
    q = excursion_pairs_1d(12, 20, 0.3, rng=np.random.default_rng(0), mesh_size=100)
    assert not np.all(q.signal == q.signal[0])                  # the default: independent pairs


def test_script_search_refines_wider_and_longer():
    ours, script = config_1d(quick=False, n=100), config_1d(quick=False, n=100, search="script")
    assert len(ours["refinement"]) == len(ours["private_refinement"]) == 2
    assert len(script["refinement"]) == 1 and len(script["private_refinement"]) == 3
    assert max(script["refinement"][0][1]) == 4.0 and SEARCHES["script"][0][0][1][0] == 0.4
    with pytest.raises(Exception, match="search"):
        config_1d(quick=False, n=100, search="other")


def test_selection_study_quick(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "VARIANTS", {"baseline": ({}, (0,)), "script_design": ({"shared_target": True}, (0, 1))})
    summary = run_experiment("selection-study", tmp_path, quick=True, workers=1, M_xi_values=0.5, n=30, n_mc=2)
    runs = pd.read_csv(tmp_path / "selection_runs.csv")
    assert summary["rows"] == 3 and set(runs["variant"]) == {"baseline", "script_design"}
    assert (runs["eps_star"] > 0).all() and (runs["eps_priv"] < 10).all()
    table = (tmp_path / "selection_table.md").read_text()
    assert "| script_design |" in table and "[" in table        # two seeds: a range
    deff = pd.read_csv(tmp_path / "delta_effect.csv")
    assert len(deff) == 1 and (deff.filter(like="improved").to_numpy() <= deff.filter(like="mironov").to_numpy()).all()
    rec = json.loads((tmp_path / "run.json").read_text())
    assert rec["config"]["variants"]["script_design"]["shared_target"] is True
