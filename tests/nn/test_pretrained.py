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
