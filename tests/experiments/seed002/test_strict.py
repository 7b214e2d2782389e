"""seed002-s6 (Figs. S6-S7 with the shipped model, out of its training range), quick size."""
import json

import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from privgp.experiments import run_experiment  # noqa: E402


def test_seed002_s6_quick(tmp_path):
    torch.set_num_threads(1)
    run_experiment("seed002-s6", tmp_path, quick=True)
    df = pd.read_csv(tmp_path / "s6.csv")
    assert set(df.method) == {"DPConvCNP", "oracle", "context-free", "lower bound, shipped C, t"}
    assert set(df[df.family == "sawtooth"].method) == {"DPConvCNP", "oracle", "context-free"}
    assert not df.in_training_range.any()          # eps = 1/3, delta = 1e-5: mu = 0.098 < 0.36
    assert df.mu.iloc[0] == pytest.approx(0.09802117, rel=1e-6)
    rec = json.loads((tmp_path / "run.json").read_text())
    lo, hi = rec["config"]["training_mu_range"]
    assert lo == pytest.approx(0.3555, abs=1e-4) and hi == pytest.approx(1.2150, abs=1e-4)
    assert (tmp_path / "fits.png").exists() and (tmp_path / "s6.png").exists() and (tmp_path / "page_s6.md").exists()
