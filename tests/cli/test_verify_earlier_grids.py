"""A value calibrated by privgp before 2026-11-27 came from numpy's geomspace, whose last bits depend on the CPU
(numpy's own AVX-512 log10 and power). privgp verify rebuilds it exactly where numpy rounds as it did then, with a
note (so --strict fails), and says NOT VERIFIED, naming the value, where it does not. numpy with AVX-512 is played
here by a geomspace whose results are one ulp up."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from privgp import portable
from privgp.accounting.calibrate import numpy_grids
from privgp.cli.main import main
from privgp.cli.verify import EARLIER_GRIDS_NOTE
from tests.test_portable import last_bit_moved as _one_ulp_up


def _verify(path: Path, capsys, *extra) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["verify", str(path), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture
def earlier_run(tmp_path, monkeypatch, capsys):
    """An optimize run whose r was calibrated as before 2026-11-27 by a numpy that rounds its own way."""
    real = np.geomspace
    monkeypatch.setattr(np, "geomspace", _one_ulp_up(real))
    out = tmp_path / "bo"
    with numpy_grids():
        assert main(["optimize", "--function", "forrester", "--rounds", "8", "--epsilon", "20", "--budget-epsilon",
                     "20", "--objective-seed", "0", "--seed", "1", "--ledger", str(tmp_path / "l.sqlite"),
                     "--out", str(out)]) == 0
    capsys.readouterr()
    return out / "certificate.json", real


def test_an_earlier_calibration_verifies_where_numpy_rounds_as_it_did_with_a_note(earlier_run, capsys):
    path, _ = earlier_run
    code, res = _verify(path, capsys)
    assert code == 0 and res["verified"], res
    assert EARLIER_GRIDS_NOTE in res["notes"]
    code, res = _verify(path, capsys, "--strict")
    assert code == 1 and res["strict_failed"]


def test_an_earlier_calibration_is_not_verified_where_numpy_rounds_otherwise(earlier_run, monkeypatch, capsys):
    path, real = earlier_run
    monkeypatch.setattr(np, "geomspace", real)      # another CPU: numpy's geomspace is the C library's
    code, res = _verify(path, capsys)
    assert code == 1 and not res["verified"]
    assert res["field"].endswith(".r"), res


@pytest.fixture
def todays_run(tmp_path, capsys):
    out = tmp_path / "bo"
    assert main(["optimize", "--function", "forrester", "--rounds", "8", "--epsilon", "20", "--budget-epsilon", "20",
                 "--objective-seed", "0", "--seed", "1", "--ledger", str(tmp_path / "l.sqlite"), "--out", str(out)]) == 0
    capsys.readouterr()
    return out / "certificate.json"


def test_todays_calibration_verifies_without_the_note_whatever_numpy_does(todays_run, monkeypatch, capsys):
    monkeypatch.setattr(np, "geomspace", _one_ulp_up(np.geomspace))   # verified on a CPU that rounds otherwise
    code, res = _verify(todays_run, capsys)
    assert code == 0 and res["verified"] and EARLIER_GRIDS_NOTE not in res["notes"], res


def test_a_refused_certificate_is_rebuilt_with_numpys_grids_only_where_they_differ(todays_run, monkeypatch, capsys):
    """The second rebuild (numpy's grids) is the first one again, bit for bit, where numpy's grids are privgp's:
    verify skips it there (issue 30), and still makes it where they differ."""
    import privgp.cli.verify as verify_module

    doc = json.loads(todays_run.read_text())
    doc["certificate"]["epsilon"] *= 0.99
    todays_run.write_text(json.dumps(doc))
    rebuilds = []
    real = verify_module._rebuild
    monkeypatch.setattr(verify_module, "_rebuild", lambda d, kind: (rebuilds.append(kind), real(d, kind))[1])
    monkeypatch.setattr(np, "geomspace", portable.geomspace)            # numpy's grids are privgp's
    code, res = _verify(todays_run, capsys)
    assert code == 1 and res["field"] == "certificate.epsilon" and rebuilds == ["optimize"], (res, rebuilds)
    rebuilds.clear()
    monkeypatch.setattr(np, "geomspace", _one_ulp_up(np.geomspace))    # a CPU whose numpy rounds its own way
    code, again = _verify(todays_run, capsys)
    assert code == 1 and again == res and rebuilds == ["optimize", "optimize"], rebuilds
