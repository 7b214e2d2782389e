"""Quick versions of the seed-002 experiments: Figure 4 with the paper's claims checked, the exact
profile audit, and the three-mechanism comparison (privgp experiment ... --quick)."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from privgp.experiments import run_experiment
from privgp.parallel import SerialExecutor
from privgp.experiments import get_experiment


def test_fig4_quick(tmp_path):
    s = run_experiment("seed002-fig4", tmp_path, quick=True, workers=1)
    for f in ("fig4.png", "fig4.csv", "fig4.md", "claims.md", "run.json"):
        assert (tmp_path / f).exists()
    at = s["at"]
    assert at[1.0]["hall"] == pytest.approx(12.3296, abs=1e-4)
    assert at[1.0]["rdp"] == pytest.approx(12.1650, abs=1e-4)
    assert at[4.0]["gdp"] == pytest.approx(2.6028, abs=1e-4) and at[4.0]["hall"] is None
    c = s["claims"]
    assert c["at_least_25pct_lower"]["holds_for_epsilon_up_to"] == pytest.approx(2.595, abs=1e-3)   # digest, sec. 6
    assert not c["at_least_25pct_lower"]["holds_on_paper_range_0.9_to_4"]
    df = pd.read_csv(tmp_path / "fig4.csv")
    assert df["hall"][df["epsilon"] > 1].isna().all() and (df["gdp"] < df["rdp"]).all()
    assert json.loads((tmp_path / "run.json").read_text())["experiment"] == "seed002-fig4"


def test_audit_quick(tmp_path):
    s = run_experiment("seed002-audit", tmp_path, quick=True, workers=1)
    assert s["dpsetconv_exact_le_certified"] and s["mean_sensitivity_found_le_bound"]
    assert s["dpsetconv_density_ratio_min"] == pytest.approx(1.0, abs=1e-6)
    assert s["dpsetconv_signal_ratio_min"] == pytest.approx(1.0, abs=1e-6)
    assert s["dpsetconv_joint_ratio_t0.5"] == pytest.approx(math.sqrt(0.75), rel=1e-6)
    assert (tmp_path / "profile.png").exists() and (tmp_path / "mean_sensitivity.csv").exists()


def test_mechanisms_quick(tmp_path):
    fn = get_experiment("mechanisms")
    s = fn(tmp_path, quick=True, executor=SerialExecutor(progress=False), seed=1, datasets=3, pilot=2)
    df = pd.read_csv(tmp_path / "mechanisms.csv")
    ok = df[df["status"] == "ok"]
    assert set(ok["mechanism"]) == {"posterior_sampling", "functional", "non_private"}
    assert len(ok) == 3 * (1 + 2 * 2)                                  # tasks x (reference + 2 mechanisms x 2 eps)
    pend = df[df["mechanism"] == "dp_sparse_gp"]
    assert len(pend) == 6 and pend["status"].str.startswith("pending").all()
    priv = ok[ok["mechanism"] != "non_private"]
    assert (priv["used_certified_epsilon"] <= priv["epsilon"]).all()
    assert np.isfinite(ok["rmse"]).all() and ((ok["iou"] >= 0) & (ok["iou"] <= 1)).all()
    cov = ok.loc[ok["mechanism"] == "functional", "coverage"]
    assert ((cov >= 0) & (cov <= 1)).all()
    assert (ok["releases"] == 3).all()
    assert (tmp_path / "mechanisms.png").exists() and (tmp_path / "pilot.csv").exists()
    assert "pending" in s["dp_sparse_gp"]
