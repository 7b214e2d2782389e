"""Quick versions of the seed-002 experiments: Figure 4 with the paper's claims checked, the exact
profile audit, and the three-mechanism comparison (privgp experiment ... --quick)."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from privgp.experiments import get_experiment, run_experiment
from privgp.parallel import SerialExecutor


def test_fig4_quick(tmp_path):
    s = run_experiment("seed002-fig4", tmp_path, quick=True, workers=1)
    for f in ("fig4.png", "fig4.csv", "fig4.md", "claims.md", "run.json"):
        assert (tmp_path / f).exists()
    at = s["at"]
    assert at[1.0]["hall"] == pytest.approx(12.3296, abs=1e-4)
    assert at[1.0]["rdp"] == pytest.approx(12.1650, abs=1e-4)
    assert at[4.0]["gdp"] == pytest.approx(2.6028, abs=1e-4) and at[4.0]["hall"] is None
    c = s["claims"]
    assert c["at_least_25pct_lower"]["holds_for_epsilon_up_to"] == pytest.approx(2.595, abs=1e-3)   # docs/notes/seed002_dpconvcnp.md, sec. 6
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
    assert len(ok) == len(df) == 3 * (2 + 3 * 2)                       # tasks x (2 references + 3 mechanisms x 2 eps)
    assert set(ok["mechanism"]) == {"posterior_sampling", "functional", "dp_sparse_gp", "non_private",
                                    "non_private_sparse_gp"}
    priv = ok[~ok["mechanism"].str.startswith("non_private")]
    assert (priv["used_certified_epsilon"] <= priv["epsilon"]).all()
    assert np.isfinite(ok["rmse"]).all() and ((ok["iou"] >= 0) & (ok["iou"] <= 1)).all()
    assert (ok["releases"] == 3).all()
    # bands: the functional mechanism and the DP sparse GP have one, one posterior-sample path has none
    banded = ok[ok["mechanism"].isin(["functional", "dp_sparse_gp", "non_private_sparse_gp"])]
    assert ((banded["coverage"] >= 0) & (banded["coverage"] <= 1)).all() and (banded["band_half_width"] > 0).all()
    assert ok.loc[ok["mechanism"].isin(["posterior_sampling", "non_private"]), "coverage"].isna().all()
    # the DP sparse GP's public settings come from its own pilot candidates
    sgp = ok[ok["mechanism"] == "dp_sparse_gp"]
    assert set(sgp["chosen_kernel"]) <= {"exponential", "squared_exponential"}
    assert (sgp["used_sigma_a"] > 0).all() and (sgp["used_sensitivity"] > 0).all()
    assert ((sgp["repaired"] >= 0) & (sgp["repaired"] <= 1)).all()
    pilot = pd.read_csv(tmp_path / "pilot.csv")
    p_sgp = pilot[pilot["mechanism"] == "dp_sparse_gp"]
    assert len(p_sgp) == 3 * 2 * 8                                     # tasks x eps x (2 kernels x 2 ells x 1 sigma x 2 |Z|)
    assert (p_sgp.groupby(["task", "epsilon"])["chosen"].sum() == 1).all()
    assert (tmp_path / "mechanisms.png").exists()
    assert set(s["best"]["1-D GP field @ eps=1"]["rmse_by_mechanism"]) == {"posterior_sampling", "functional",
                                                                          "dp_sparse_gp"}
