"""`privgp optimize` (issue 17): outputs, certificate, ledger (one charge for the whole run, refusal with
exit status 3), clean stops of failing objectives (exit 2, outputs kept, charge kept) and bad input
(exit 2, one line, nothing charged or written)."""
from __future__ import annotations

import json
import textwrap

import pandas as pd
import pytest

from privgp.accounting import accountant
from privgp.accounting.events import event_from_dict
from privgp.cli.main import main
from privgp.ledger import Ledger

FILES = {"history.csv", "queries.png", "certificate.json", "summary.json"}


def run(capsys, *args):
    code = main(["optimize", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def base(tmp_path, name="out", **extra):
    args = ["--function", "forrester", "--rounds", 8, "--epsilon", 5, "--grid", 65, "--objective-seed", 1,
            "--seed", 2, "--out", tmp_path / name, "--ledger", tmp_path / "l.sqlite"]
    for k, v in extra.items():
        args += ["--" + k.replace("_", "-"), v]
    return args


def test_a_run_writes_public_outputs_and_a_certificate_matching_the_accountant(tmp_path, capsys):
    code, out, err = run(capsys, *base(tmp_path), "--json")
    assert code == 0, err
    s = json.loads(out)
    assert s["status"] == "completed" and s["rounds_released"] == 8 and s["records_collected"] == 8
    assert set(p.name for p in (tmp_path / "out").iterdir()) == FILES
    doc = json.loads((tmp_path / "out" / "certificate.json").read_text())
    cert = doc["certificate"]
    ev = event_from_dict(cert["event"])
    assert [e.n for e, _ in ev.events] == list(range(1, 8))
    assert cert["epsilon"] == float(accountant.epsilon(ev, cert["delta"]).epsilon) <= 5.0
    assert any("replace-one among the records collected" in a for a in cert["assumptions"])
    assert any("query points are themselves released" in a for a in cert["assumptions"])
    hist = pd.read_csv(tmp_path / "out" / "history.csv")
    assert len(hist) == 8 and not any("response" in c for c in hist.columns)
    assert hist["spent_epsilon"].iloc[-1] == pytest.approx(cert["epsilon"], rel=1e-9)
    entries = Ledger(tmp_path / "l.sqlite").entries()
    assert len(entries) == 1 and entries[0].status == "completed"
    assert entries[0].epsilon == pytest.approx(cert["epsilon"])


def test_a_second_run_over_the_budget_is_refused_and_writes_nothing(tmp_path, capsys):
    assert run(capsys, *base(tmp_path), "--budget-epsilon", 6)[0] == 0
    code, out, err = run(capsys, *base(tmp_path, "again"))
    assert code == 3 and err.startswith("privgp: refused:") and err.count("\n") == 1
    assert not (tmp_path / "again").exists()
    assert len(Ledger(tmp_path / "l.sqlite").entries()) == 1


def test_a_failing_objective_stops_cleanly_keeps_outputs_and_the_charge(tmp_path, capsys):
    mod = tmp_path / "userobj.py"
    mod.write_text(textwrap.dedent("""\
        state = {"n": 0}
        def flaky(x):
            state["n"] += 1
            if state["n"] == 4:
                raise RuntimeError("sensor offline")
            return float(x[0])
        """))
    code, out, err = run(capsys, "--callable", f"{mod}:flaky", "--box", 0, 1, "--grid", 33, "--rounds", 10,
                         "--epsilon", 3, "--out", tmp_path / "o", "--ledger", tmp_path / "l.sqlite",
                         "--dataset-id", "pilot", "--save-responses", tmp_path / "private.csv")
    assert code == 2
    assert err.count("\n") == 1 and "round 4" in err and "sensor offline" in err and "charge for the whole run" in err
    doc = json.loads((tmp_path / "o" / "certificate.json").read_text())
    assert doc["status"] == "stopped" and doc["released_rounds"] == 4
    assert doc["certificate"]["epsilon"] < doc["planned_certificate"]["epsilon"] <= 3.0
    # the objective's own message (it may hold private values) is told to the data holder, never published
    for name in ("certificate.json", "summary.json", "history.csv"):
        assert "sensor offline" not in (tmp_path / "o" / name).read_text(), name
    assert doc["stop_reason"].startswith("round 4: the objective gave no response")
    # verify: the released rounds' certificate holds only for a stop that did not depend on the responses
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "o" / "certificate.json"), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["verified"] and any("stopped early (round 4)" in n for n in res["notes"]), res
    assert main(["verify", str(tmp_path / "o" / "certificate.json"), "--strict"]) == 1
    capsys.readouterr()
    led = Ledger(tmp_path / "l.sqlite")
    (entry,) = led.entries()
    assert entry.epsilon == pytest.approx(doc["planned_certificate"]["epsilon"])
    assert entry.status == "completed"
    private = pd.read_csv(tmp_path / "private.csv")
    assert private["response_private"].notna().sum() == 3


def test_a_lookup_table_is_used_record_by_record(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("x,response\n0.1,0.2\n0.1,0.3\n0.5,0.9\n0.9,-0.4\n")
    code, out, err = run(capsys, "--lookup", tmp_path / "t.csv", "--box", 0, 1, "--rounds", 20, "--epsilon", 20,
                         "--budget-epsilon", 20, "--out", tmp_path / "o", "--ledger", tmp_path / "l.sqlite", "--json",
                         "--seed", 5)
    assert code == 2 and "record(s) at" in err and "are used" in err
    s = json.loads(out)
    # 4 records at 3 candidates: the run stops at the first query of a candidate whose records are used up
    assert s["status"] == "stopped" and 1 <= s["records_collected"] <= 4
    assert s["rounds_released"] == s["records_collected"] + 1
    assert s["candidates"].startswith("3 public points")


@pytest.mark.parametrize("args,fragment", [
    (["--epsilon", 0], "epsilon must be finite and > 0"),
    (["--rounds", 1], "rounds must be an integer >= 2"),
    (["--sigma", -1], "sigma must be"),
    (["--box", 0, 1], "--box must be left out with --function"),
    (["--r", 1.0], "--r must be left out with --knob r"),
    (["--grid", 1], "--grid must be an integer >= 2"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_is_charged(tmp_path, capsys, args, fragment):
    code, out, err = run(capsys, *base(tmp_path), *args)
    assert code == 2 and err.startswith("privgp: error:") and err.count("\n") == 1 and fragment in err
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "l.sqlite").exists() or Ledger(tmp_path / "l.sqlite").entries() == []


def test_bad_objectives_and_domains_are_user_errors(tmp_path, capsys):
    led = ["--out", tmp_path / "o", "--ledger", tmp_path / "l.sqlite"]
    (tmp_path / "empty.csv").write_text("x\n")
    (tmp_path / "m.py").write_text("def f(x):\n    return 0.0\n")
    cases = [
        (["--callable", f"{tmp_path / 'm.py'}:f", "--candidates", tmp_path / "empty.csv"], "public domain is empty"),
        (["--callable", f"{tmp_path / 'm.py'}:g", "--box", 0, 1], "name of a function"),
        (["--callable", "no_such_module_xyz:f", "--box", 0, 1], "cannot import"),
        (["--callable", "nocolon", "--box", 0, 1], "MODULE:FUNCTION"),
        (["--callable", f"{tmp_path / 'm.py'}:f"], "--box must be given"),
        (["--lookup", tmp_path / "missing.csv"], "not found"),
        (["--function", "forrester", "--save-responses", tmp_path / "o" / "r.csv"], "outside --out"),
    ]
    for args, fragment in cases:
        code, out, err = run(capsys, *args, *led)
        assert code == 2 and err.count("\n") == 1 and fragment in err, (args, err)
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "l.sqlite").exists() or Ledger(tmp_path / "l.sqlite").entries() == []


def test_an_objective_that_cannot_answer_the_first_query_costs_nothing(tmp_path, capsys):
    """Red team round 13: an objective failing at round 1 (a prior draw, no record: a wrong box, a broken lookup)
    kept the whole run's charge, the entire default budget. Round 1 is asked before the charge; its failure is a
    user error with nothing charged or written. And summary.json names files, not where they lie."""
    mod = tmp_path / "userobj.py"
    mod.write_text("def two_d(x):\n    return float(x[0] * x[1])\n\ndef one_d(x):\n    return float(x[0])\n")
    common = ["--box", 0, 1, "--grid", 33, "--rounds", 6, "--epsilon", 3, "--ledger", tmp_path / "l.sqlite"]
    code, out, err = run(capsys, "--callable", f"{mod}:two_d", *common, "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and "answers the first query" in err and "nothing was charged" in err
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "l.sqlite").exists() or Ledger(tmp_path / "l.sqlite").entries() == []
    code, out, err = run(capsys, "--callable", f"{mod}:one_d", *common, "--out", tmp_path / "o")
    assert code == 0, err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["out"] == "o" and str(tmp_path) not in json.dumps(summary)


def test_the_printed_and_drawn_epsilon_is_rounded_up_and_an_earlier_picture_verifies_in_part(tmp_path, capsys):
    """Red team round 15: optimize printed the guarantee, the charge and the spent epsilon rounded to nearest
    (2.044 for a certified 2.04439...) and titled queries.png "epsilon 2.04". Every printed bound is rounded up;
    a queries.png an earlier privgp drew (its title rounded to nearest) verifies in part, with a note."""
    import re

    from privgp.cli.optimize import queries_png, rebuilt_plan
    from privgp.formatting import format_upper

    args = base(tmp_path, rounds=20)
    args[args.index("--epsilon") + 1] = 2.0444
    code, out, err = run(capsys, *args)
    assert code == 0, err
    folder = tmp_path / "out"
    doc = json.loads((folder / "certificate.json").read_text())
    eps = doc["certificate"]["epsilon"]
    printed = [float(re.search(p, out).group(1)) for p in (r"guarantee\s+\(([0-9.e+-]+),", r"charged ([0-9.e+-]+)",
                                                             r"spent ([0-9.e+-]+) of")]
    assert all(x >= eps for x in printed) and f"{eps:.4g}" != format_upper(eps, 4), (printed, eps)
    assert main(["verify", str(folder / "certificate.json"), "--strict"]) == 0
    capsys.readouterr()
    # the picture an earlier privgp drew: its title said f"{eps:.3g}"
    hist = pd.read_csv(folder / "history.csv")
    queries = hist[[c for c in hist.columns if c.startswith("x")]].to_numpy()
    plan = rebuilt_plan(doc)
    regret = json.loads((folder / "summary.json").read_text())["simulation"]["regret_recommendation"]
    (folder / "queries.png").write_bytes(queries_png(plan, queries, eps, regret, fmt=1))
    sha = __import__("hashlib").sha256((folder / "queries.png").read_bytes()).hexdigest()
    doc["sha256"]["queries.png"] = sha
    (folder / "certificate.json").write_text(json.dumps(doc))
    assert main(["verify", str(folder / "certificate.json")]) == 0
    assert "drawn by an earlier privgp, whose title rounds epsilon to nearest" in capsys.readouterr().out
    assert main(["verify", str(folder / "certificate.json"), "--strict"]) != 0
