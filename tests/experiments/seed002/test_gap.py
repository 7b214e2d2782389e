"""seed002-s1 (Fig. S1's lower-bound model next to the shipped DPConvCNP), quick sizes."""
import json

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from privgp.errors import InvalidParameterError  # noqa: E402
from privgp.experiments import run_experiment  # noqa: E402
from privgp.nn.model import noise_scales, rbf_weights  # noqa: E402
from privgp.nn.pretrained import load  # noqa: E402


def test_the_bound_sees_the_release_noise_of_the_dpconvcnp():
    """The experiment re-draws the signal noise with a fresh generator of the DPConvCNP's seed: with
    responses inside [-C, C] (no clipping) that gives the released signal channel itself."""
    torch.set_num_threads(1)
    model = load()
    g = torch.Generator().manual_seed(3)
    xc = torch.rand(2, 30, generator=g) * 4 - 2
    yc = (torch.rand(2, 30, generator=g) - 0.5) * 0.5          # |y| < 0.25 < C
    mu = torch.tensor([0.4, 0.9])
    with torch.no_grad():
        channels, info = model.encoder(xc, yc, mu, torch.Generator().manual_seed(1))
        noise = model.encoder.sample_noise(2, torch.Generator().manual_seed(1))[:, 0]
        c, t = model.encoder.clip_and_split(mu, torch.full((2,), 30.0))
        s_sig, _ = noise_scales(mu.double() * (1 - 1e-12), c.double(), t.double())
        w = rbf_weights(model.encoder.grid.double(), xc.double(), model.encoder.lengthscale.double())
    rebuilt = (w @ yc.double()[..., None])[..., 0] + s_sig[:, None] * noise
    assert torch.all(c > 0.25)
    np.testing.assert_allclose(s_sig.numpy(), info["sigma_signal"].numpy(), rtol=1e-12)
    np.testing.assert_allclose(channels[:, 0].double().numpy(), rebuilt.numpy(), atol=1e-4)


def test_seed002_s1_quick_on_the_tasks_of_an_nll_run(tmp_path):
    torch.set_num_threads(1)
    run_experiment("seed002-nll", tmp_path / "nll", quick=True, dpsvgp=0)
    run_experiment("seed002-s1", tmp_path / "s1", quick=True, nll_run=str(tmp_path / "nll"))
    rec = json.loads((tmp_path / "s1" / "run.json").read_text())
    assert {p["tasks_from"] for p in rec["summary"]["gaps"]} == {"seed002-nll"}
    s1 = pd.read_csv(tmp_path / "s1" / "s1.csv")
    nll = pd.read_csv(tmp_path / "nll" / "nll.csv")
    for n in (8, 16):
        for method in ("DPConvCNP", "oracle"):
            ours = s1[(s1.N == n) & (s1.method == method)]["nll"].item()
            theirs = nll[(nll.family == "eq") & (nll.N == n) & (nll.method == method) & (nll.sweep == "N")]["nll"].item()
            assert ours == pytest.approx(theirs, abs=1e-12)
    for p in rec["summary"]["gaps"]:     # the paper's C = 2, t = 0.5 adds more noise than the shipped C, t
        assert p["sigma_signal_paper"] > p["sigma_signal_shipped"]
    assert (tmp_path / "s1" / "s1.png").exists() and (tmp_path / "s1" / "page_s1.md").exists()
    assert "lower bound, shipped C, t" in set(s1.method) and "bound, shipped C, t" in (tmp_path / "s1" / "page_s1.md").read_text()
    with pytest.raises(InvalidParameterError, match="nll_run"):
        run_experiment("seed002-s1", tmp_path / "bad", quick=True, nll_run=str(tmp_path / "nll"), seed=1)


def test_seed002_s1_scores_another_checkpoint_on_the_tasks_of_an_nll_run(tmp_path):
    """With a checkpoint other than the one the nll run scored, the tasks are still checked (the oracle's
    NLL equals the run's) but the DPConvCNP's NLL is this checkpoint's own; other tasks are refused."""
    torch.set_num_threads(1)
    run_experiment("seed002-nll", tmp_path / "nll", quick=True, dpsvgp=0)
    model = load()
    with torch.no_grad():
        model.unet.last.bias.add_(0.3)      # another model: a shifted predictive mean
    torch.save(model.export(), tmp_path / "other.pt")
    run_experiment("seed002-s1", tmp_path / "s1", quick=True, nll_run=str(tmp_path / "nll"),
                   checkpoint=str(tmp_path / "other.pt"))
    s1 = pd.read_csv(tmp_path / "s1" / "s1.csv")
    nll = pd.read_csv(tmp_path / "nll" / "nll.csv")
    def pick(df, n, method):
        keep = (df.N == n) & (df.method == method)
        if "family" in df:                       # the nll run: its EQ N sweep
            keep &= (df.family == "eq") & (df.sweep == "N")
        return df[keep]["nll"].item()

    for n in (8, 16):
        assert pick(s1, n, "oracle") == pytest.approx(pick(nll, n, "oracle"), abs=1e-12)
        assert abs(pick(s1, n, "DPConvCNP") - pick(nll, n, "DPConvCNP")) > 1e-6
    # the bound at the model's own C, t is this checkpoint's, and is named so (not the shipped model's)
    assert set(s1.method) == {"oracle", "lower bound, C = 2, t = 0.5", "lower bound, model's C, t", "DPConvCNP"}
    page = (tmp_path / "s1" / "page_s1.md").read_text()
    assert "bound, model's C, t" in page and "shipped" not in page
    gaps = json.loads((tmp_path / "s1" / "run.json").read_text())["summary"]["gaps"]
    assert all("clip_model" in g and not any("shipped" in k for k in g) for g in gaps)
    with pytest.raises(InvalidParameterError, match="nll_run"):
        run_experiment("seed002-s1", tmp_path / "bad", quick=True, nll_run=str(tmp_path / "nll"), seed=1,
                       checkpoint=str(tmp_path / "other.pt"))
