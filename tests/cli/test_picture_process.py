"""The release's picture drawn by a second process (privgp.cli.picture_process): the same bytes as drawn in the
command's own process, a fallback when the process fails, and no process left behind."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from privgp.cli import picture_process
from privgp.cli.main import main
from privgp.cli.picture_process import PictureProcess
from privgp.cli.release_figure import PictureContext, ReleasedField, ResponseDisplay
from privgp.cli.release_publish import draw_picture
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box

BOX = Box((0.0, 0.0), (2.0, 1.0))


def context() -> PictureContext:
    return PictureContext(domain=BOX, axis_labels=("east", "north"), response=ResponseDisplay("price", "$1,000", "${:g}k"),
                          response_map=ResponseMap(threshold=50.0, clip=1.0, transform="log"), epsilon=2.0, delta=1e-3)


def released(K: int = 1) -> ReleasedField:
    axes = (np.linspace(0.0, 2.0, 31), np.linspace(0.0, 1.0, 17))
    values = 0.4 * np.random.default_rng(3).standard_normal((K, 31, 17))
    return ReleasedField(axes=axes, values=values, noun="path", plural="paths",
                         sd=None if K > 1 else np.full((31, 17), 0.1))


@pytest.mark.parametrize("field", [released(1), released(5), None], ids=["one map", "vote map", "no map"])
def test_the_process_draws_the_same_picture(field):
    """PNG bytes, caption, alt text and size equal those drawn in this process (the placeholder too)."""
    ctx = context()
    with PictureProcess() as painter:
        painter.submit(field, ctx)
        pic = painter.result()
    assert pic is not None
    assert pic == draw_picture(field, ctx)


def test_a_failed_process_returns_none_and_leaves_nothing_running():
    """A process that cannot start, or whose drawing fails, gives None (the command then draws itself and
    raises the drawing's error there); nothing keeps running."""
    with PictureProcess(python=str(Path(sys.executable).with_name("no-such-python"))) as painter:
        painter.submit(released(), context())
        assert painter.result() is None
    bad = ReleasedField(axes=(np.zeros(2),) * 3, values=np.zeros((1, 2, 2, 2)), noun="path", plural="paths")
    painter = PictureProcess()
    painter.submit(bad, context())
    assert painter.result() is None
    assert painter._proc.returncode == 0   # it answered with the error and ended
    with pytest.raises(ValueError, match="no picture for 3-D"):
        draw_picture(bad, context())


def test_a_process_nobody_uses_is_ended():
    """Started, never given a request (the release was refused), closed: it is gone, killed if need be."""
    painter = PictureProcess()
    proc = painter._proc
    painter.close()
    assert proc.poll() is not None
    painter.close()   # twice is fine


def test_wanted_follows_the_setting_and_the_cpus(monkeypatch):
    monkeypatch.setenv(picture_process.ENV, "0")
    assert not picture_process.wanted()
    monkeypatch.setenv(picture_process.ENV, "1")
    assert picture_process.wanted()
    monkeypatch.delenv(picture_process.ENV)
    monkeypatch.setattr(picture_process, "_cpus", lambda: 1)
    assert not picture_process.wanted()
    monkeypatch.setattr(picture_process, "_cpus", lambda: 2)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", sys.modules.get("matplotlib.figure", object()))
    assert not picture_process.wanted()   # already imported here: drawing in-process is cheaper


def test_a_refused_release_ends_its_early_process(tmp_path, monkeypatch):
    """`privgp release` starts the process first thing; a release refused by a user error (exit 2) ends it and
    writes nothing; --help starts none."""
    started: list[PictureProcess] = []

    class Recorded(PictureProcess):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            started.append(self)

    monkeypatch.setenv(picture_process.ENV, "1")
    monkeypatch.setenv("PRIVGP_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setattr(picture_process, "PictureProcess", Recorded)
    out = tmp_path / "out"
    for bad in (["--epsilon", "nan"], ["--data", str(tmp_path / "missing.csv")]):   # refused parsing; in the command
        assert main(["release", *bad, "--out", str(out)]) == 2
        assert started[-1]._proc.poll() is not None
        assert picture_process._early is None and not out.exists() and not (tmp_path / "ledger.sqlite").exists()
    assert len(started) == 2
    assert main(["release", "--help"]) == 0
    assert len(started) == 2
    # red team 15 (round 12's F9): a dry run started the process, whose matplotlib wrote its font cache
    for flag in ("--dry-run", "--dry"):
        assert main(["release", flag]) == 0
    assert len(started) == 2 and not (tmp_path / "ledger.sqlite").exists()


def test_the_command_writes_the_same_files_with_and_without_the_process(tmp_path):
    """`privgp release` (embedded data, fixed seed) in a fresh process, the picture drawn by a picture process
    or by the command itself: the same picture and data files, byte for byte; the report differs only by
    the ledger's keyed fingerprint (each run has its own ledger)."""
    script = ("import sys; from privgp.cli.main import main; code = main(sys.argv[1:]); "
              "print('drew here:', 'matplotlib.figure' in sys.modules); sys.exit(code)")
    outs = {}
    for setting in ("1", "0"):
        env = dict(os.environ, PRIVGP_PICTURE_PROCESS=setting, PRIVGP_LEDGER=str(tmp_path / f"ledger{setting}.sqlite"),
                   MPLBACKEND="Agg", OMP_NUM_THREADS="1")
        outs[setting] = tmp_path / f"out{setting}"
        res = subprocess.run([sys.executable, "-c", script, "release", "--seed", "7", "--out", str(outs[setting])],
                             env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        # with the process, the command never imported matplotlib: the picture came from the process
        assert f"drew here: {setting == '0'}" in res.stdout
    files = sorted(p.name for p in outs["1"].iterdir())
    assert files == sorted(p.name for p in outs["0"].iterdir()) and "excursion.png" in files
    for name in files:
        if name not in ("report.html", "certificate.json"):
            assert (outs["1"] / name).read_bytes() == (outs["0"] / name).read_bytes(), name
