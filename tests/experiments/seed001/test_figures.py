"""Quick versions of the seed-001 experiments (Figures 1-3) write their artefacts and record their choices."""
from __future__ import annotations

import json

import pandas as pd

from privgp.cli.main import main
from privgp.experiments import run_experiment


def _record(path):
    rec = json.loads((path / "run.json").read_text())
    assert rec["config"]["quick"] is True and rec["config"]["chosen_here"]
    return rec


def test_fig1_quick(tmp_path):
    s = run_experiment("seed001-fig1", tmp_path, quick=True, workers=1, progress=False)
    assert (tmp_path / "seed001_fig1.png").stat().st_size > 10_000
    rec = _record(tmp_path)
    assert rec["config"]["n"] == 256 and rec["config"]["kernel_bound"] == "auto"
    runs = pd.read_csv(tmp_path / "seed001_fig1_runs.csv")
    dp = runs[runs["method"] == "DP-GP"].groupby("epsilon")["rmse"].mean()
    assert dp.loc[30.0] < dp.loc[1.0]
    assert s["rmse_nonprivate"] < dp.min()


def test_fig2_quick_s2_never_lowers_coverage(tmp_path):
    run_experiment("seed001-fig2", tmp_path, quick=True, workers=1, progress=False, repeats=2)
    runs = pd.read_csv(tmp_path / "seed001_fig2_runs.csv")
    assert len(runs) == 2 * 4 * (4 * 4 + 1) * 3
    piv = runs[runs["epsilon"] < float("inf")].pivot_table(index=["repeat", "sigma", "epsilon", "alpha"], columns="method", values="coverage")
    # the same release, S_2 PSD: the DP-GP bands contain the naive ones point by point
    assert (piv["DP-GP (eq. 14)"] >= piv["naive"]).all()
    assert (piv["DP-GP (symmetric)"] >= piv["naive"]).all()
    assert _record(tmp_path)["summary"]["scenarios"] == 48


def test_fig3_quick_via_cli(tmp_path, capsys):
    code = main(["experiment", "seed001-fig3", "--out", str(tmp_path), "--quick", "--workers", "1",
                 "--set", "repeats=2", "--set", "epsilons=3,30", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["mean_draws"]) == {"eps=3", "eps=30"}
    freq = pd.read_csv(tmp_path / "seed001_fig3.csv")
    for _eps, g in freq.groupby("epsilon_total"):
        assert abs(g["selected"].sum() - 1.0) < 1e-9          # 9 candidates + "none"
    assert _record(tmp_path)["config"]["gamma"] == 0.1
