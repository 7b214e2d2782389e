"""The seed-003 experiments at their --quick sizes (reduced further here), and the image data helpers."""
import json
import pickle

import numpy as np
import pytest

from privgp.datasets.images import ChannelNormaliser, balanced_subset, load_cifar10_batches, load_digits_images
from privgp.errors import DataError, InvalidParameterError
from privgp.experiments import run_experiment


def _run(name, tmp_path, **opts):
    summary = run_experiment(name, tmp_path, quick=True, workers=1, **opts)
    rec = json.loads((tmp_path / "run.json").read_text())
    assert rec["experiment"] == name and rec["config"]["quick"] is True
    return summary


def test_toy(tmp_path):
    s = _run("seed003-toy", tmp_path, n_grid=121)
    for png in ("fig4a.png", "fig7.png", "fig11.png", "fig12.png"):
        assert (tmp_path / png).stat().st_size > 0
    assert s["fig4a_max_abs_argmax_minus_S"] < 1e-4                     # KL maximum at the differing record
    assert abs(s["argmax_KL_at_S_star"] - s["S_star"]) < 1e-4           # Fig. 7 right
    assert abs(s["argmax_M_at_S_star"] - s["S_star"]) > 0.05            # Fig. 7 left: Q* != S*
    assert s["M_at_Q_star_over_M_at_S_star"] > 1.0


def test_activations(tmp_path):
    s = _run("seed003-activations", tmp_path, n_records=40, depths=(2, 6))
    assert (tmp_path / "fig5_nngp.png").exists() and (tmp_path / "lood_per_record.csv").exists()
    assert set(s["median_ratio_matched"]) == {"2", "6"}
    assert s["h_corr_relu_below_gelu_all_depths"]


def test_reconstruction(tmp_path):
    s = _run("seed003-reconstruction", tmp_path, n=40, runs=2, restarts=1, steps=8, group_rounds=1, group_inits=1,
             landscape_records=2)
    assert s["max_ratio"] <= 1 + 1e-9 and s["group_max_ratio"] <= 1 + 1e-9
    assert s["landscape_argmax_mean"] == 0.0 and s["landscape_argmax_std"] == 0.0
    for f in ("reconstruction.png", "fig9.png", "summary.png", "reconstruction.csv", "group.csv"):
        assert (tmp_path / f).exists()


def test_multiquery(tmp_path):
    s = _run("seed003-multiquery", tmp_path, pairs=1, steps=8, qs=(1, 2))
    assert s["frac_exceeds_S"] == 0.0 and s["max_ratio"] <= 1 + 1e-9


def test_mia(tmp_path):
    s = _run("seed003-mia", tmp_path, n=60, records=5, mc_samples=2000)
    assert set(s["correlations"]) == {"rbf:kl", "rbf:mean_distance", "nngp_fc1:kl", "nngp_fc1:mean_distance"}
    assert s["max_abs_mc_minus_exact_auc"] < 0.06   # 2000 samples per side: SE <= 0.011
    assert (tmp_path / "fig6.png").exists()


def test_cifar_option_needs_a_folder(tmp_path):
    with pytest.raises(InvalidParameterError, match="cifar_dir"):
        run_experiment("seed003-mia", tmp_path, quick=True, workers=1, dataset="cifar10")
    with pytest.raises(DataError, match="not found"):
        run_experiment("seed003-mia", tmp_path, quick=True, workers=1, dataset="cifar10",
                       cifar_dir=str(tmp_path / "none"))


def test_local_cifar_batches_are_read(tmp_path):
    rng = np.random.default_rng(0)
    for b in (1, 2):
        with open(tmp_path / f"data_batch_{b}", "wb") as fh:
            pickle.dump({b"data": rng.integers(0, 256, size=(20, 3072), dtype=np.uint8),
                         b"labels": list(rng.integers(0, 10, 20))}, fh)
    data = load_cifar10_batches(tmp_path)
    assert data.X.shape == (40, 3072) and data.channels == 3 and data.pixel_range == (0.0, 255.0)
    (tmp_path / "data_batch_3").write_bytes(b"not a pickle")
    with pytest.raises(DataError, match="data_batch_3"):
        load_cifar10_batches(tmp_path)


class _Planted:
    """What a planted batch could hold: reading it would call ``marker.write_text``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (type(self.marker).write_text, (self.marker, "ran"))


def test_a_planted_batch_is_refused_before_it_runs(tmp_path):
    """A CIFAR-10 batch is a pickle, and a pickle may call any importable function while it is read: a planted
    data_batch_1 used to run its code in `privgp experiment seed003-* --cifar-dir`. The batches are now read by a
    restricted unpickler; genuine batches (numpy 1's names in a protocol-2 pickle as distributed, numpy 2's in
    protocols 2, 4 and 5) are still read."""
    marker = tmp_path / "ran.txt"
    planted = tmp_path / "planted"
    planted.mkdir()
    with open(planted / "data_batch_1", "wb") as fh:
        pickle.dump({b"data": _Planted(marker), b"labels": [0]}, fh, protocol=2)
    with pytest.raises(DataError, match=r"data_batch_1: it names .* which a CIFAR-10 batch does not hold"):
        load_cifar10_batches(planted)
    assert not marker.exists()

    rng = np.random.default_rng(1)
    batch = {b"batch_label": b"training batch 1 of 5", b"labels": [int(c) for c in rng.integers(0, 10, 6)],
             b"data": rng.integers(0, 256, size=(6, 3072), dtype=np.uint8), b"filenames": [b"a.png"] * 6}
    for protocol in (2, 4, 5):
        folder = tmp_path / f"p{protocol}"
        folder.mkdir()
        raw = pickle.dumps(batch, protocol=protocol)
        (folder / "data_batch_1").write_bytes(raw)
        if protocol == 2:   # numpy 1's module names, as in the distributed files
            assert b"numpy._core.multiarray" in raw
            (folder / "data_batch_2").write_bytes(raw.replace(b"numpy._core.multiarray", b"numpy.core.multiarray"))
        data = load_cifar10_batches(folder)
        copies = 2 if protocol == 2 else 1
        assert np.array_equal(data.X, np.tile(batch[b"data"], (copies, 1)).astype(float)), protocol
        assert list(data.labels) == batch[b"labels"] * copies


def test_image_helpers():
    d = load_digits_images()
    assert d.X.shape == (1797, 64) and d.pixel_range == (0.0, 16.0)
    two = d.select_classes((3, 7))
    assert set(two.labels) == {0, 1}
    idx = balanced_subset(d.labels, 105, np.random.default_rng(0))
    counts = np.bincount(d.labels[idx], minlength=10)
    assert counts.sum() == 105 and counts.max() - counts.min() <= 1 and np.unique(idx).size == 105
    nm = ChannelNormaliser.fit(d.X[idx], 1)
    np.testing.assert_allclose(nm.inverse(nm(d.X[:5])), d.X[:5])
    np.testing.assert_allclose(nm(d.X[idx]).mean(), 0.0, atol=1e-12)
    with pytest.raises(InvalidParameterError, match="classes"):
        d.select_classes((3, 11))
    with pytest.raises(InvalidParameterError, match="size"):
        balanced_subset(d.labels, 5000, np.random.default_rng(0))


def test_nn_side(tmp_path):
    pytest.importorskip("torch")
    s = _run("seed003-nn", tmp_path, records=3, models=4, epochs=5, width=16, depth=2, splits=2)
    assert set(s["median_nn_auc"]) == {"relu", "gelu"} and 0.0 <= s["mean_train_accuracy"] <= 1.0
    assert (tmp_path / "fig1bc_fig5nn.png").exists()


def test_half_split_auc_matches_the_gaussian_value():
    """Two unit-variance Gaussians one apart in one coordinate: AUC = Phi(1/sqrt(2)) = 0.760."""
    from privgp.audit.lood.mia import half_split_gaussian_lr_auc

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(400, 2)) + [1.0, 0.0], rng.normal(size=(400, 2))
    mean, sd = half_split_gaussian_lr_auc(a, b, splits=20, rng=rng)
    assert mean == pytest.approx(0.760, abs=0.03) and sd < 0.05
    with pytest.raises(InvalidParameterError, match="scores_in"):
        half_split_gaussian_lr_auc(a[:2], b, rng=rng)
