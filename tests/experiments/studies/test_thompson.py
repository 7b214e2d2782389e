"""`privgp experiment thompson --quick`: files, the table's methods and certified budgets, paired seeds."""
from __future__ import annotations

import json
import math

import pandas as pd

from privgp.experiments import run_experiment


def test_quick_experiment_writes_its_artefacts(tmp_path):
    summary = run_experiment("thompson", tmp_path, quick=True, workers=1, progress=False)
    for name in ("thompson.png", "thompson_curves.csv", "thompson_table.csv", "thompson_table.md",
                 "thompson_settings.csv", "run.json"):
        assert (tmp_path / name).exists(), name
    table = pd.read_csv(tmp_path / "thompson_table.csv")
    assert set(table["method"]) == {"private TS", "non-private TS", "random search", "noisy argmax"}
    private = table[table["method"].isin(["private TS", "noisy argmax"])]
    assert (private["certified_epsilon"] <= private["epsilon"] * (1 + 1e-12)).all()
    nonpriv = table[table["method"] == "non-private TS"]
    assert math.isinf(float(nonpriv["epsilon"].iloc[0])) and float(nonpriv["certified_epsilon"].iloc[0]) > 1e3
    curves = pd.read_csv(tmp_path / "thompson_curves.csv")
    run = json.loads((tmp_path / "run.json").read_text())
    T, S = run["config"]["rounds"], run["config"]["seeds"]
    assert curves["round"].max() == T and (curves["seeds"] == S).all()
    assert (curves["recommendation_mean"] >= 0).all()
    # best-query regret never increases with t (it is a running minimum)
    for _, g in curves[curves["method"] != "noisy argmax"].groupby(["method", "epsilon"]):
        assert (g.sort_values("round")["best_query_mean"].diff().dropna() <= 1e-12).all()
    assert summary["rows"] == len(table)
