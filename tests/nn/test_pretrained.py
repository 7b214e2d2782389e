"""Where the shipped DPConvCNP checkpoint comes from: not the wheel (tests/test_packaging.py checks
that), but a clone / editable install, ``$PRIVGP_NN_WEIGHTS``, or the user folder that
``python -m privgp.nn.pretrained install SDIST`` fills; without it, a one-line error saying how."""
from __future__ import annotations

import io
import shutil
import tarfile

import pytest

pytest.importorskip("torch")

from privgp.errors import DataError  # noqa: E402
from privgp.nn import pretrained  # noqa: E402

REAL = pretrained.PACKAGE_WEIGHTS / pretrained.SHIPPED


@pytest.fixture
def no_weights(tmp_path, monkeypatch):
    """An install without the checkpoint (as from the wheel): empty package folder and user folder."""
    monkeypatch.setattr(pretrained, "PACKAGE_WEIGHTS", tmp_path / "pkg")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv(pretrained.ENV, raising=False)
    return tmp_path


def test_the_repository_holds_the_shipped_checkpoint():
    assert REAL.is_file() and pretrained._sha256(REAL) == pretrained.SHIPPED_SHA256
    assert pretrained.locate() in (REAL, pretrained.user_dir() / pretrained.SHIPPED)


def test_missing_checkpoint_is_a_one_line_error_saying_how_to_get_it(no_weights):
    for fn in (pretrained.load, pretrained.training_record, pretrained.locate):
        with pytest.raises(DataError) as info:
            fn()
        msg = str(info.value)
        assert "\n" not in msg
        assert "not installed" in msg and "pip download --no-deps --no-binary privgp privgp==" in msg
        assert "python -m privgp.nn.pretrained install" in msg and pretrained.ENV in msg


def _sdist(path, payload: bytes):
    with tarfile.open(path, "w:gz") as tf:
        info = tarfile.TarInfo(f"privgp-9.9.9/src/privgp/nn/weights/{pretrained.SHIPPED}")
        info.size = len(payload)
        tf.addfile(info, io.BytesIO(payload))


def test_install_from_the_sdist_then_load(no_weights, capsys):
    sdist = no_weights / "privgp-9.9.9.tar.gz"
    _sdist(sdist, REAL.read_bytes())
    assert pretrained._main(["install", str(sdist)]) == 0
    dest = pretrained.user_dir() / pretrained.SHIPPED
    assert capsys.readouterr().out.strip() == str(dest) and dest.is_file()
    assert pretrained.locate() == dest
    assert pretrained.training_record()["best_step"] > 0
    assert pretrained.load().training is False


def test_a_changed_checkpoint_is_refused(no_weights, monkeypatch):
    bad = no_weights / "privgp-9.9.9.tar.gz"
    data = bytearray(REAL.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte changed
    _sdist(bad, bytes(data))
    with pytest.raises(DataError, match="SHA-256 differs"):
        pretrained.install(bad)
    assert not list(pretrained.user_dir().iterdir())
    copy = no_weights / "copy.pt"
    copy.write_bytes(REAL.read_bytes() + b"\0")
    monkeypatch.setenv(pretrained.ENV, str(copy))
    with pytest.raises(DataError, match="SHA-256 differs"):
        pretrained.load()


def test_environment_variable_names_the_file_or_its_folder(no_weights, monkeypatch):
    folder = no_weights / "mine"
    folder.mkdir()
    shutil.copyfile(REAL, folder / pretrained.SHIPPED)
    for value in (folder, folder / pretrained.SHIPPED):
        monkeypatch.setenv(pretrained.ENV, str(value))
        assert pretrained.locate() == folder / pretrained.SHIPPED
    monkeypatch.setenv(pretrained.ENV, str(no_weights / "nowhere"))
    with pytest.raises(DataError, match="does not name"):
        pretrained.locate()


def test_the_paper_width_checkpoint_is_the_one_its_comparison_scored():
    """docs/runs/seed002-train-gpu holds the GPU-trained paper-width model in float16 (its parameters;
    the grid buffer stays float32); it loads into a float32 model unchanged, and it is the file
    (sha256) that docs/runs/seed002-gpu-compare scored."""
    import json
    from pathlib import Path

    import torch

    root = Path(__file__).resolve().parents[2]
    path = root / "docs" / "runs" / "seed002-train-gpu" / "dpconvcnp_paper_width_fp16.pt"
    if not path.is_file():
        pytest.skip("docs/runs is not in the sdist")
    rec = json.loads((root / "docs" / "runs" / "seed002-gpu-compare" / "run.json").read_text())
    assert pretrained._sha256(path) == rec["config"]["checkpoint_sha256"]
    raw = pretrained.load_checkpoint(path)
    model = pretrained.load(path)
    assert model.cfg.channels == (256,) * 7 and model.n_parameters() == 6_276_550
    assert raw["training"]["best_step"] == 26000 and raw["training"]["train_config"]["stream"] == "indexed"
    for k, t in model.state_dict().items():
        assert t.dtype == torch.float32
        assert torch.equal(t, raw["state_dict"][k].float()), k
        assert raw["state_dict"][k].dtype == (torch.float32 if k.endswith("grid") else torch.float16), k
