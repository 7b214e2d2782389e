"""Quick runs of the excursion experiments (seed 000, Tables 1-4, Figs 4, 7, 8) and the paper's
qualitative findings on them; bad input gives clear errors."""
import json

import numpy as np
import pandas as pd
import pytest

from privgp.errors import InvalidParameterError
from privgp.experiments import run_experiment


@pytest.fixture(scope="module")
def table1(tmp_path_factory):
    out = tmp_path_factory.mktemp("table1")
    run_experiment("table1", out, quick=True, workers=1, progress=False)
    return out


@pytest.fixture(scope="module")
def table3(tmp_path_factory):
    out = tmp_path_factory.mktemp("table3")
    run_experiment("table3", out, quick=True, workers=1, progress=False, constants="published")
    return out


def _summary(out, constants):
    return json.loads((out / "run.json").read_text())["summary"][constants]


def _med(s, key):
    return s[key]["median"]


def test_table1_writes_every_table_for_both_constant_sets(table1):
    for stem in ("table1_proven", "table1_published", "table1_paper", "table2_proven", "table2_published",
                 "table1_settings_proven"):
        assert (table1 / f"{stem}.md").exists() and (table1 / f"{stem}.csv").exists()
    rec = json.loads((table1 / "run.json").read_text())
    assert rec["config"]["constant_sets"] == ["proven", "published"]
    assert "numpy" in rec["versions"]
    per = pd.read_csv(table1 / "per_pair_M_xi0.5_proven.csv")
    assert len(per) == rec["config"]["n_pairs"]


@pytest.mark.parametrize("constants", ["proven", "published"])
def test_unconstrained_optimum_grows_more_regularised_with_noise(table1, constants):
    s = _summary(table1, constants)
    cols = ["0.1", "0.3", "0.5", "0.6"]
    eps = [s[c]["epsilon_star"] for c in cols]
    deff = [_med(s[c], "deff_star") for c in cols]
    assert all(a > b for a, b in zip(deff, deff[1:])), deff
    assert eps[0] > 10 * eps[-1], eps
    for c in cols:   # the private optimum is feasible, certified below eps0 and more regularised
        assert s[c]["feasible"] and s[c]["epsilon_priv"] < 10
        assert _med(s[c], "deff_priv") < _med(s[c], "deff_star")


@pytest.mark.parametrize("constants", ["proven", "published"])
def test_privacy_cost_in_bce_shrinks_as_noise_grows(table1, constants):
    s = _summary(table1, constants)
    inc = [_med(s[c], "rel_bce_increase") for c in ("0.1", "0.3", "0.5", "0.6")]
    assert inc[0] > 2 * inc[-1] and inc[0] > inc[1] > inc[3], inc


def test_private_one_path_iou_is_well_above_chance(table1):
    """Chance: an estimate independent of f* with the true set's volume v has IoU about v / (2 - v)."""
    for constants in ("proven", "published"):
        for col in ("0.1", "0.6"):
            per = pd.read_csv(table1 / f"per_pair_M_xi{col}_{constants}.csv")
            assert per["iou_path_mean"].median() > 0.5
    s = _summary(table1, "proven")
    assert _med(s["0.6"], "iou_path_mean") > 1.5 * (0.5 / 1.5)


def test_privacy_cost_shrinks_as_the_dataset_grows(table3):
    s = _summary(table3, "published")
    ns = sorted(s, key=int)
    inc = [_med(s[n], "rel_bce_increase") for n in ns]
    gap = [_med(s[n], "rel_iou_gap") for n in ns]
    assert inc[0] > inc[-1], inc
    assert gap[0] > gap[-1], gap
    assert _med(s[ns[-1]], "iou_path_mean") > _med(s[ns[0]], "iou_path_mean")


def test_table4_quick_writes_tables_and_figures(tmp_path):
    run_experiment("table4", tmp_path, quick=True, workers=1, progress=False, M_xi_values=(0.1, 0.5))
    assert (tmp_path / "fig7.png").stat().st_size > 10_000 and (tmp_path / "fig8.png").exists()
    s = json.loads((tmp_path / "run.json").read_text())["summary"]
    for c in ("proven", "published"):
        lo, hi = s[c]["0.1"], s[c]["0.5"]
        assert lo["epsilon_star"] > hi["epsilon_star"] and _med(lo, "deff_star") > _med(hi, "deff_star")
        assert hi["feasible"] and hi["epsilon_priv"] < 10
        assert _med(lo, "rel_bce_increase") > _med(hi, "rel_bce_increase")
    assert (tmp_path / "table4_paper.md").read_text().count("5.64 [5.63, 5.64]") == 1


def test_realdata_quick_never_plots_private_points_and_certifies_below_eps0(tmp_path):
    res = run_experiment("realdata", tmp_path, quick=True, workers=1, progress=False)
    assert set(res["feasible"]) == {"proven", "published"}
    tab = pd.read_csv(tmp_path / "realdata.csv")
    assert (tab["eps_priv"] < 10).all() and (tab["n_private"] + tab["n_public"] == 211).all()
    assert (tmp_path / "realdata_proven.png").exists()


@pytest.mark.parametrize("name, opts, match", [
    ("table1", {"M_xi_values": (0.5, 1.0)}, "M_xi"),
    ("table1", {"M_xi_values": (-0.2,)}, "M_xi"),
    ("table1", {"eps0": 0.0}, "eps0"),
    ("table3", {"eps0": -5.0}, "eps0"),
    ("table4", {"M_xi_values": (1.2,)}, "M_xi"),
    ("table1", {"constants": "loose"}, "constants"),
])
def test_bad_input_is_a_clear_error(tmp_path, name, opts, match):
    with pytest.raises(InvalidParameterError, match=match):
        run_experiment(name, tmp_path, quick=True, workers=1, progress=False, **opts)


def test_an_unreachable_budget_is_reported_as_no_feasible_setting(tmp_path):
    run_experiment("table1", tmp_path, quick=True, workers=1, progress=False, M_xi_values=(0.5,), eps0=1e-3,
                   constants="proven")
    s = json.loads((tmp_path / "run.json").read_text())["summary"]["proven"]["0.5"]
    assert s["feasible"] is False and "no feasible setting" in s["message"]
    assert "no feasible setting" in (tmp_path / "table1_proven.md").read_text()
    assert np.isfinite(s["deff_star"]["median"])


def test_a_local_dask_cluster_gives_the_same_study_as_in_process(tmp_path):
    """Sweeps go through the executor; seeds are per pair, so the scheduler cannot change results."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        with distributed.Client(lc) as client:
            run_experiment("table1", tmp_path / "dask", quick=True, scheduler=client, progress=False,
                           M_xi_values=(0.5,), constants="published")
    run_experiment("table1", tmp_path / "serial", quick=True, workers=1, progress=False, M_xi_values=(0.5,),
                   constants="published")
    a = pd.read_csv(tmp_path / "dask" / "per_pair_M_xi0.5_published.csv")
    b = pd.read_csv(tmp_path / "serial" / "per_pair_M_xi0.5_published.csv")
    pd.testing.assert_frame_equal(a, b, rtol=1e-9)


@pytest.mark.parametrize("name", ["fig7", "fig8"])
def test_figure_experiments_quick(tmp_path, name):
    res = run_experiment(name, tmp_path, quick=True, workers=1, progress=False, constants="proven")
    assert res["figures"] == [f"{name}.png"] and (tmp_path / f"{name}.png").stat().st_size > 5_000
    assert json.loads((tmp_path / "run.json").read_text())["config"]["plume_prior"]["K"] == 2
