"""`privgp release --mechanism posterior-sample-tuned`: a privately selected lengthscale (seed 001, Alg. 2)
charged as one selection event."""
from __future__ import annotations

import json

from privgp.cli.main import main
from privgp.ledger import Ledger


def run(tmp_path, *args):
    return main(["release", "--mechanism", "posterior-sample-tuned", "--allow-noisy", "--ledger", str(tmp_path / "l.sqlite"),
                 "--grid", "41", *args])


def test_tuned_release(tmp_path, capsys):
    assert run(tmp_path, "--lengthscales", "15", "60", "--gamma", "0.5", "--epsilon", "8", "--seed", "2",
               "--budget-epsilon", "9", "--out", str(tmp_path / "o"), "--json") == 0
    s = json.loads(capsys.readouterr().out)
    assert s["epsilon"] <= 8.0 and s["lengthscales"] == [15.0, 60.0]
    sel = json.loads((tmp_path / "o" / "selection.json").read_text())
    files = {p.name for p in (tmp_path / "o").iterdir()}
    assert {"selection.json", "certificate.json"} <= files
    assert ({"paths.npz", "paths.csv", "excursion.png"} <= files) == sel["selected"]
    assert "runs" not in sel and "accepted_runs" not in sel   # not covered by Liu & Talwar's Thm 3.4
    (entry,) = Ledger(tmp_path / "l.sqlite").entries()
    assert entry.event["type"] == "selection"
    # a second search would exceed the budget of 9: refused (exit 3), nothing written
    assert run(tmp_path, "--lengthscales", "15", "60", "--epsilon", "8", "--out", str(tmp_path / "o2")) == 3
    assert not (tmp_path / "o2").exists()


def test_tuned_release_bad_options(tmp_path):
    for extra in ([], ["--lengthscales", "15", "--lengthscale", "20"], ["--lengthscales", "15", "--r", "2"],
                  ["--lengthscales", "15", "--L", "2"], ["--lengthscales", "15", "--gamma", "2"],
                  ["--lengthscales", "15", "--validation-fraction", "1.5"]):
        assert run(tmp_path, *extra, "--out", str(tmp_path / "bad")) == 2, extra
    assert not (tmp_path / "l.sqlite").exists() or Ledger(tmp_path / "l.sqlite").entries() == []


def test_selection_json_states_exactly_what_was_selected(tmp_path, capsys):
    """Red team round 18: in a tuned release that selected nothing, selection.json's "lengthscale" was never
    checked (all 2000 private records passed verify --strict there). Nothing selected: null only (a selected one is
    now matched by type and value: the candidate's float, not True or 1 for 1.0)."""
    from tests.cli_scratch import rehash_and_verify

    out = tmp_path / "o"
    assert run(tmp_path, "--lengthscales", "15", "60", "--epsilon", "3", "--seed", "0", "--out", str(out)) == 0
    capsys.readouterr()
    original = json.loads((out / "selection.json").read_text())
    assert original["selected"] is False and original["lengthscale"] is None
    for forged in ("x,y,no2\n1,2,3\n", 15.0):
        (out / "selection.json").write_text(json.dumps({**original, "lengthscale": forged}, indent=2) + "\n")
        code, res = rehash_and_verify(out, capsys, "--strict")
        assert code == 1 and res["field"] == "selection.json.lengthscale", (forged, res)
    (out / "selection.json").write_text(json.dumps(original, indent=2) + "\n")
    assert rehash_and_verify(out, capsys, "--strict")[0] == 0
