"""seed004-thm2 (Theorem 2 against the exact laws of cyclic SGLD), quick size."""
import json

import pandas as pd

from privgp.experiments import run_experiment


def test_seed004_thm2_quick(tmp_path):
    s = run_experiment("seed004-thm2", tmp_path, quick=True)
    assert s["rows"] == 6 and s["theorem_holds_everywhere"]
    df = pd.read_csv(tmp_path / "thm2.csv")
    # W_2 to the posterior shrinks as SGLD runs; at K = 0 the bound is vacuous, at the limit it is not
    for _, g in df.groupby("data"):
        assert g.W2.is_monotonic_decreasing
        assert g.vacuous_best.iloc[0] and not g.vacuous_best.iloc[-1]
    rec = json.loads((tmp_path / "run.json").read_text())
    assert rec["config"]["n_values"] == [20] and (tmp_path / "page_thm2.md").exists()
