"""seed002-fig5 (Figure 5: DP-SVGP at several DP-SGD step counts next to the DPConvCNP), quick size."""
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from privgp.experiments import run_experiment  # noqa: E402


def test_seed002_fig5_quick(tmp_path):
    pytest.importorskip("opacus")   # the DP-SVGP's noise multiplier (privgp.nn.dpsvgp.noise_multiplier)
    torch.set_num_threads(1)
    run_experiment("seed002-fig5", tmp_path / "a", quick=True)
    df = pd.read_csv(tmp_path / "a" / "fig5.csv")
    sv = df[df.method == "DP-SVGP"]
    assert list(sv[sv.family == "eq"].epochs) == [1, 3] and (df.seconds_per_task > 0).all()
    assert (tmp_path / "a" / "fig5.png").exists() and (tmp_path / "a" / "page_fig5.md").exists()
