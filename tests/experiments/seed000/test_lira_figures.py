"""Figures 2, 3, 5, 6 (privgp.experiments.seed000.lira_figures, lira_histograms; sweeps in lira_sweep) at a tiny size, and a
sweep on a real local Dask cluster."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from privgp.experiments import run_experiment
from privgp.experiments.seed000 import lira_figures as lf
from privgp.experiments.seed000 import lira_sweep as sw
from privgp.parallel import get_executor

TINY = dict(seeds=1, size=150, fig2_sigmas=(0.5,), fig2_r=(0.05, 3.0), fig3_L=(1, 4))


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setattr(sw, "QUICK", TINY)


@pytest.mark.parametrize("name", ["fig2", "fig3", "fig5", "fig6"])
def test_figure_experiments_write_png_csv_and_check_the_bounds(tmp_path, tiny, name):
    summary = run_experiment(name, tmp_path, quick=True, workers=1)
    assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    rec = json.loads((tmp_path / "run.json").read_text())
    assert rec["experiment"] == name and rec["config"]["quick"] is True
    if name == "fig6":
        df = pd.read_csv(tmp_path / "fig6.csv")
        assert set(df["statistic"]) == {"fhat", "log_vhat"} and len(set(zip(df["r"], df["sigma"]))) == 4
        assert (df[["hist_in", "hist_out", "fitted_in", "fitted_out"]] >= 0).all().all()
        return
    stem = {"fig5": "fig5_left"}.get(name, name)
    runs = pd.read_csv(tmp_path / f"{stem}_runs.csv")
    private = runs[runs["attack"] != "benchmark"]
    assert (private["epsilon_lower_bound"] <= private["epsilon_certified"]).all()
    assert summary["lower_le_certified_checked"] >= len(private) > 0
    assert {"paper", "exact"} <= set(runs["attack"])
    summ = pd.read_csv(tmp_path / f"{stem}_summary.csv")
    assert {"excess@0.1_mean", "excess@0.1_std", "excess@0.01_mean", "epsilon_certified"} <= set(summ.columns)
    if name in ("fig3", "fig5"):
        right = pd.read_csv(tmp_path / ("fig3_runs.csv" if name == "fig3" else "fig5_right_runs.csv"))
        assert "benchmark" in set(right["attack"])


def test_published_constants_change_the_axis_never_the_certified_check(tmp_path, monkeypatch):
    monkeypatch.setattr(sw, "QUICK", dict(TINY, fig3_L=(1,)))
    plotted = []
    monkeypatch.setattr(lf, "plot_vs_L", lambda ax, summ, fpr, eps_col="epsilon_certified": plotted.append(eps_col))
    run_experiment("fig3", tmp_path, quick=True, workers=1, constants="published")
    assert plotted == ["epsilon_published_not_covered"]
    rec = json.loads((tmp_path / "run.json").read_text())
    assert rec["config"]["x_axis_constants"] == "published"
    runs = pd.read_csv(tmp_path / "fig3_runs.csv")
    private = runs[runs["attack"] != "benchmark"]
    # the certified column holds the proven epsilon; the published one is smaller (Delta_n / sqrt 2)
    assert (private["epsilon_published_not_covered"] < private["epsilon_certified"]).all()
    with pytest.raises(Exception, match="constants"):
        run_experiment("fig3", tmp_path / "bad", quick=True, workers=1, constants="loose")


def test_a_violated_certificate_stops_the_experiment():
    df = pd.DataFrame({"attack": ["paper", "benchmark"], "epsilon_lower_bound": [2.0, 9.0],
                       "epsilon_certified": [1.0, math.inf]})
    with pytest.raises(RuntimeError, match="certificate"):
        sw.check_lower_le_certified(df)
    assert sw.check_lower_le_certified(df.assign(epsilon_lower_bound=[0.5, 9.0])) == 1


def test_sweep_on_a_local_dask_cluster_matches_the_serial_run():
    from distributed import LocalCluster

    tasks = [sw.Task(sw.game_at(r, 0.5, 1), 3, ("paper",), 150, 100) for r in (0.05, 2.0)]
    with get_executor(workers=1) as ex:
        serial = sw.run_sweep(tasks, ex, desc="serial")
    with LocalCluster(n_workers=1, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        with get_executor(scheduler=cluster.scheduler_address) as ex:
            assert ex.kind == "dask"
            dask = sw.run_sweep(tasks, ex, desc="dask")
    pd.testing.assert_frame_equal(serial.drop(columns="seconds"), dask.drop(columns="seconds"))
    assert dask["auc"].iloc[0] > dask["auc"].iloc[1]


def test_fig5_can_be_drawn_from_the_fig2_and_fig3_sweeps(tmp_path, tiny):
    run_experiment("fig2", tmp_path / "f2", quick=True, workers=1)
    run_experiment("fig3", tmp_path / "f3", quick=True, workers=1)
    runs = (str(tmp_path / "f2" / "fig2_runs.csv"), str(tmp_path / "f3" / "fig3_runs.csv"))
    summary = run_experiment("fig5", tmp_path / "f5", quick=True, workers=1, sweeps_from=runs)
    assert (tmp_path / "f5" / "fig5.png").stat().st_size > 10_000
    left = pd.read_csv(tmp_path / "f5" / "fig5_left_runs.csv")
    pd.testing.assert_frame_equal(left, pd.read_csv(runs[0]))
    assert summary["lower_le_certified_checked"] > 0
    rec = json.loads((tmp_path / "f5" / "run.json").read_text())
    assert rec["config"]["sweeps_from"] == list(runs)
    # runs of another sweep (another base seed: other data) are refused, nothing is reused silently
    with pytest.raises(Exception, match="sweeps_from"):
        run_experiment("fig5", tmp_path / "bad", quick=True, workers=1, seed=1, sweeps_from=runs)
    with pytest.raises(Exception, match="sweeps_from"):
        run_experiment("fig5", tmp_path / "bad", quick=True, workers=1, sweeps_from=runs[0])
