"""Red team 25 on `privgp optimize`, `privgp ledger show` and the Python API's budget:

* a ledger that lost its fingerprint key was given a new one, so one --dataset-id got a fresh budget (12 spent of 10);
* an objective returning 10**400 (or True) ended the run with a traceback after the charge and wrote nothing;
* `ledger show` printed each entry's epsilon and delta rounded to nearest (below the certified values), crashed on a
  hand-edited BLOB, did not fold a --dataset name as --dataset-id does, and printed a label's control characters;
* `experiment fig1 --set conversion=weird` drew an empty figure and exited 0.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from privgp.cli.main import main
from privgp.errors import InvalidParameterError
from privgp.ledger import Budget
from tests.cli_scratch import run_quiet


def _optimize(tmp: Path, ledger: Path, out: str, *extra: str) -> tuple[int, str]:
    return run_quiet("optimize", "--function", "forrester", "--rounds", "5", "--objective-seed", "1", "--progress", "off",
                     "--out", tmp / out, "--ledger", ledger, *extra)


def _entries(ledger: Path) -> int:
    with sqlite3.connect(ledger) as db:
        return db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]


def test_a_ledger_without_its_key_is_refused_not_rekeyed(tmp_path):
    ledger = tmp_path / "l.sqlite"
    assert _optimize(tmp_path, ledger, "a", "--epsilon", "6", "--dataset-id", "clinic")[0] == 0
    with sqlite3.connect(ledger) as db:
        db.execute("DELETE FROM meta WHERE key = 'secret'")
    code, err = _optimize(tmp_path, ledger, "b", "--epsilon", "6", "--dataset-id", "clinic")
    assert code == 2 and "corrupt ledger" in err and len(err.strip().splitlines()) == 1, err
    assert _entries(ledger) == 1 and not (tmp_path / "b").exists()
    code, err = run_quiet("ledger", "show", "--ledger", ledger)
    assert code == 2 and "corrupt ledger" in err


def test_an_objective_whose_answer_is_no_float_stops_the_run_cleanly(tmp_path, capsys):
    objectives = tmp_path / "objectives.py"
    objectives.write_text("calls = {'n': 0}\n"
                          "def huge(x):\n    calls['n'] += 1\n    return 10**400 if calls['n'] >= 3 else 0.1\n"
                          "def truth(x):\n    calls['n'] += 1\n    return True if calls['n'] >= 3 else 0.1\n")
    for name in ("huge", "truth"):
        code, err = run_quiet("optimize", "--box", "0", "1", "--grid", "50", "--rounds", "6", "--epsilon", "2",
                              "--progress", "off", "--out", tmp_path / name, "--ledger", tmp_path / f"{name}.sqlite",
                              "--callable", f"{objectives}:{name}")
        assert code == 2 and "Traceback" not in err and "the run stopped at round 3" in err, err
        assert "not a number" in err and (tmp_path / name / "certificate.json").exists()
        capsys.readouterr()
        assert main(["verify", str(tmp_path / name)]) == 0


def test_ledger_show_rounds_up_escapes_and_folds(tmp_path, capsys):
    ledger = tmp_path / "l.sqlite"
    assert _optimize(tmp_path, ledger, "a", "--epsilon", "1.23449", "--budget-epsilon", "1.23456",
                     "--dataset-id", "Zurich  Clinic")[0] == 0
    capsys.readouterr()
    assert main(["ledger", "show", "--ledger", str(ledger), "--json"]) == 0
    entry = json.loads(capsys.readouterr().out)["entries"][0]
    assert main(["ledger", "show", "--ledger", str(ledger), "--dataset", "zurich clinic"]) == 0
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if entry["id"] in line)
    shown = float(row.split()[4])
    assert shown >= entry["epsilon"] and shown == 1.235, (row, entry["epsilon"])
    assert " 1.23456 " in text   # the budget as given
    with pytest.raises(InvalidParameterError):
        Budget(ledger, epsilon=10, label="clinic\r  2d890a12bd66efe6  10  1e-06  0  10  0  clinic")
    with sqlite3.connect(ledger) as db:
        db.execute("UPDATE entries SET created = X'4142'")
    for extra in ((), ("--json",)):
        code, err = run_quiet("ledger", "show", "--ledger", ledger, *extra)
        assert code == 2 and "corrupt ledger" in err and "Traceback" not in err, err


def test_an_experiment_refuses_an_unknown_conversion(tmp_path):
    code, err = run_quiet("experiment", "fig1", "--quick", "--out", tmp_path / "e", "--set", "conversion=weird")
    assert code == 2 and "conversion" in err and not (tmp_path / "e" / "fig1.png").exists(), err


def test_an_out_folder_filled_meanwhile_keeps_the_paid_for_outputs_aside(tmp_path):
    """Two runs with one --out: the second, already charged, deleted its outputs under an error that read like a
    check before the charge. Now they are kept in a visible sibling folder, and the error says so."""
    from privgp.cli.outputs import AtomicOutput

    out = tmp_path / "race"
    with pytest.raises(InvalidParameterError) as info:
        with AtomicOutput(out) as tmp:
            (tmp / "certificate.json").write_text("{}")
            out.mkdir()
            (out / "other.txt").write_text("the other run")   # the other run finished first
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("race.privgp-unplaced-")]
    assert len(kept) == 1 and (kept[0] / "certificate.json").read_text() == "{}"
    assert (out / "other.txt").read_text() == "the other run"
    assert str(kept[0]) in str(info.value) and "any charge made stands" in str(info.value)


def test_what_the_objective_prints_does_not_break_json(tmp_path, capsys):
    objective = tmp_path / "talky.py"
    objective.write_text("print('hello at import')\ndef f(x):\n    print('hello from objective')\n    return 0.1\n")
    capsys.readouterr()
    assert main(["optimize", "--box", "0", "1", "--grid", "50", "--rounds", "3", "--callable", f"{objective}:f",
                 "--progress", "off", "--out", str(tmp_path / "o"), "--ledger", str(tmp_path / "l.sqlite"),
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) and "hello from objective" in captured.err and "hello" not in captured.out


def test_a_lookup_tables_points_are_named_by_lookup(tmp_path):
    table = tmp_path / "one.csv"
    table.write_text("x,resp\n0.5,1\n0.5,2\n")
    code, err = run_quiet("optimize", "--lookup", table, "--x-cols", "x", "--response-col", "resp", "--out",
                          tmp_path / "o", "--ledger", tmp_path / "l.sqlite")
    assert code == 2 and err.startswith("privgp: error: --lookup must be") and "--candidates" not in err, err
