"""The CLI audit's data-loss and out-of-memory holes: every case is refused up front (exit 2, one line naming
the flag, nothing written, nothing charged to the ledger), or, for --overwrite of a genuine earlier output,
done without deleting a file privgp did not write.

* --save-responses onto the ledger, an input, an existing file, a folder, '' (optimize);
* --overwrite of a folder that is not an earlier privgp output (release, optimize, demo, experiment), and a
  file that appears in an earlier output between the check and the swap (kept, moved aside);
* memory checks before allocating: optimize --grid, audit lira --n-shadow / --n, audit lood --candidates;
* experiment --set errors leave no --out; audit sampler --png of another format or onto another file;
* small ones: lood --candidates 0 / --top 0, optimize --early-factor without
  --schedule early, --grid with --lookup / --candidates.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from privgp.cli.outputs import AtomicOutput, check_output_dir
from privgp.ledger import Ledger
from tests.cli_scratch import digest, run, scratch_env  # noqa: F401  (scratch_env: the env fixture)

OPT = ["--function", "forrester", "--rounds", "5", "--grid", "65", "--objective-seed", "1", "--seed", "2",
       "--epsilon", "1", "--budget-epsilon", "1000", "--json"]
REL = ["--mechanism", "posterior-sample", "--allow-noisy", "--grid", "31", "--seed", "1", "--json"]


def entries(ledger: Path) -> int:
    return len(Ledger(ledger).entries()) if ledger.exists() else 0


def refused(code, err, *needles):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("privgp: error:") and "Traceback" not in err, err
    for n in needles:
        assert n in err, (n, err)


# -- 1. --save-responses ------------------------------------------------------------------------------------------

def test_save_responses_never_overwrites_the_ledger_an_input_or_another_file(env, capsys):
    led = env / "l.sqlite"
    assert run(capsys, "optimize", *OPT, "--out", env / "first", "--ledger", led)[0] == 0
    before, n = digest(led), entries(led)
    table = env / "table.csv"
    table.write_text("x,response\n" + "".join(f"{x / 10},{x / 20}\n" for x in range(11)))
    cand = env / "cand.csv"
    cand.write_text("x\n0\n0.5\n1\n")
    (env / "m.py").write_text("def f(x):\n    return 0.0\n")
    other = env / "notes.txt"
    other.write_text("precious\n")
    keep = {p: digest(p) for p in (table, cand, other)}
    cases = [
        ([*OPT, "--save-responses", led], "other than the ledger"),
        ([*OPT, "--save-responses", f"{led}-journal"], "other than the ledger"),
        (["--lookup", table, "--save-responses", table, "--rounds", 5, "--epsilon", 1, "--budget-epsilon", 1000],
         "other than the lookup table"),
        (["--callable", f"{env / 'm.py'}:f", "--candidates", cand, "--save-responses", cand, "--rounds", 5],
         "other than the candidates file"),
        ([*OPT, "--save-responses", other], "a new file"),
        ([*OPT, "--save-responses", other, "--overwrite"], "an earlier --save-responses file"),
        ([*OPT, "--save-responses", env / "first" / "certificate.json", "--overwrite"], "an earlier --save-resp"),
        ([*OPT, "--save-responses", env / "o" / "r.csv"], "outside --out"),
        ([*OPT, "--save-responses", env / "first"], "(this is a folder)"),
        ([*OPT, "--save-responses", ""], "not empty"),
    ]
    for args, needle in cases:
        code, _, err = run(capsys, "optimize", *args, "--out", env / "o", "--ledger", led)
        refused(code, err, "--save-responses", needle)
        assert digest(led) == before and entries(led) == n
        assert {p: digest(p) for p in keep} == keep
        assert not (env / "o").exists()


def test_save_responses_replaces_only_an_earlier_responses_file_with_overwrite(env, capsys):
    led, resp = env / "l.sqlite", env / "private.csv"
    assert run(capsys, "optimize", *OPT, "--out", env / "a", "--ledger", led, "--save-responses", resp)[0] == 0
    first = resp.read_text()
    assert first.splitlines()[0].endswith(",response_private")
    code, _, err = run(capsys, "optimize", *OPT, "--out", env / "b", "--ledger", led, "--save-responses", resp)
    refused(code, err, "--save-responses", "a new file")
    assert entries(led) == 1 and not (env / "b").exists()
    code, _, err = run(capsys, "optimize", *OPT, "--out", env / "b", "--ledger", led, "--save-responses", resp,
                       "--overwrite")
    assert code == 0, err
    assert entries(led) == 2 and resp.read_text().splitlines()[0] == first.splitlines()[0]
    assert [p.name for p in env.iterdir() if p.name.startswith(".privgp-tmp-")] == []


# -- 2. --overwrite -----------------------------------------------------------------------------------------------

def test_release_overwrite_of_a_folder_that_is_no_earlier_release_deletes_nothing(env, capsys):
    led = env / "l.sqlite"
    work = env / "work"
    work.mkdir()
    (work / "precious.txt").write_text("mine")
    code, _, err = run(capsys, "release", *REL, "--ledger", led, "--out", work, "--overwrite")
    refused(code, err, "--out", "no earlier privgp output")
    assert (work / "precious.txt").read_text() == "mine" and not led.exists()
    os.chdir(work)   # the current directory itself is never replaced, whatever it holds (red team 26)
    code, _, err = run(capsys, "release", *REL, "--ledger", led, "--out", ".", "--overwrite")
    refused(code, err, "--out must be a folder other than the current directory or one holding it", "got '.'")
    assert (work / "precious.txt").read_text() == "mine" and not led.exists()
    os.chdir(env)
    # a genuine earlier release is replaced; a file added to it is not deleted (refused before the charge)
    assert run(capsys, "release", *REL, "--ledger", led, "--out", env / "rel")[0] == 0
    assert run(capsys, "release", *REL, "--ledger", led, "--out", env / "rel", "--overwrite")[0] == 0
    assert entries(led) == 2
    (env / "rel" / "notes.txt").write_text("mine")
    before = digest(led)
    code, _, err = run(capsys, "release", *REL, "--ledger", led, "--out", env / "rel", "--overwrite")
    refused(code, err, "--out", "did not write there: notes.txt")
    assert digest(led) == before and (env / "rel" / "notes.txt").read_text() == "mine"


def test_optimize_and_demo_overwrite_only_their_earlier_outputs(env, capsys):
    led = env / "l.sqlite"
    home = env / "home"
    home.mkdir()
    (home / ".bashrc").write_text("keep")
    code, _, err = run(capsys, "optimize", *OPT, "--ledger", led, "--out", home, "--overwrite")
    refused(code, err, "--out", "no earlier privgp output")
    assert (home / ".bashrc").read_text() == "keep" and entries(led) == 0
    assert run(capsys, "optimize", *OPT, "--ledger", led, "--out", env / "o")[0] == 0
    assert run(capsys, "optimize", *OPT, "--ledger", led, "--out", env / "o", "--overwrite")[0] == 0
    assert {p.name for p in (env / "o").iterdir()} == {"history.csv", "queries.png", "certificate.json",
                                                       "summary.json"}
    code, _, err = run(capsys, "demo", "--out", home, "--overwrite", "--seed", "1")
    refused(code, err, "--out", "no earlier privgp output")
    assert sorted(p.name for p in home.iterdir()) == [".bashrc"]
    assert run(capsys, "demo", "--out", env / "d", "--seed", "1")[0] == 0
    assert run(capsys, "demo", "--out", env / "d", "--seed", "2", "--overwrite")[0] == 0
    (env / "d" / "mine.txt").write_text("x")
    code, _, err = run(capsys, "demo", "--out", env / "d", "--overwrite", "--seed", "1")
    refused(code, err, "--out", "mine.txt")


def test_experiment_overwrite_needs_an_earlier_experiment_folder(env, capsys):
    work = env / "work"
    work.mkdir()
    (work / "precious.txt").write_text("mine")
    code, _, err = run(capsys, "experiment", "fig6", "--out", work, "--overwrite", "--quick")
    refused(code, err, "--out", "no run.json of an experiment")
    assert sorted(p.name for p in work.iterdir()) == ["precious.txt"]
    run_json = {"experiment": "fig6", "command": "privgp experiment fig6", "versions": {}}
    (work / "run.json").write_text(json.dumps(run_json))
    check_output_dir(work, True, replace=False)   # an earlier experiment: written into, nothing deleted


def test_a_file_added_to_an_earlier_output_after_the_check_is_kept(env, capsys):
    out = env / "rel"
    out.mkdir()
    (out / "paths.csv").write_text("1\n")
    (out / "certificate.json").write_text(json.dumps({"privgp_version": "x", "outputs": ["paths.csv",
                                                                                         "certificate.json"]}))
    check_output_dir(out, True)
    (out / "late.txt").write_text("written meanwhile")
    with AtomicOutput(out, True) as tmp:
        (tmp / "certificate.json").write_text("{}")
    assert sorted(p.name for p in out.iterdir()) == ["certificate.json"]
    kept = [p for p in env.iterdir() if p.name.startswith("rel.privgp-previous-")]
    assert len(kept) == 1 and sorted(p.name for p in kept[0].iterdir()) == ["late.txt"]
    assert "privgp did not write" in capsys.readouterr().err


# -- 3. memory checks (in a child limited to 4 GB of address space: without the check it fails, never the host) --

def limited(*args, timeout=120):
    code = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (4_000_000_000, 4_000_000_000))
        from privgp.cli.main import main
        sys.exit(main({[str(a) for a in args]!r}))
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("args,flag", [
    (["optimize", "--function", "hartmann3", "--rounds", "5", "--grid", "1000"], "--grid"),
    (["audit", "lira", "--r", "1", "--sigma", "5", "--n-shadow", "1000000000"], "--n-shadow"),
    (["audit", "lira", "--r", "1", "--sigma", "5", "--n", "100000000"], "--n"),
    (["audit", "lood", "--candidates", "100000"], "--candidates"),
])
def test_memory_is_estimated_before_allocating(env, args, flag):
    led = env / "l.sqlite"
    extra = ["--ledger", led, "--out", env / "o"] if args[0] == "optimize" else []
    code, _, err = limited(*args, *extra)
    refused(code, err, f"{flag} must be", "GiB", "an estimated")
    assert not led.exists() and not (env / "o").exists()


# -- 4. experiment --set errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("option", ["M_xi_values=abc", "foo=1"])
def test_experiment_option_errors_leave_no_out(env, capsys, option):
    code, _, err = run(capsys, "experiment", "table1", "--out", env / "NEW", "--quick", "--set", option)
    refused(code, err)
    assert "--set M_xi_values must be" in err if option.startswith("M_xi") else "'foo'" in err   # as typed
    assert not (env / "NEW").exists()
    code, _, err = run(capsys, "experiment", "fig6", "--out", env / "NEW", "--set", "foo=1")
    refused(code, err, "--set option 'foo'", "fig6")
    assert not (env / "NEW").exists()


def test_a_failed_experiment_keeps_what_it_wrote(env, capsys, monkeypatch):
    """Any error after the run has written (a NaN loss hours into training, a lost worker): its checkpoints stay."""
    import privgp.cli.experiment as cli_experiment
    from privgp.errors import NumericalError

    def fails_late(name, out, **kw):
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "last.pt").write_text("hours of training")
        raise NumericalError("NaN loss at step 90000")

    monkeypatch.setattr(cli_experiment, "run_experiment", fails_late)
    code, _, err = run(capsys, "experiment", "fig2-bound", "--out", env / "RUN")
    assert code == 2 and "NaN loss" in err
    assert (env / "RUN" / "last.pt").read_text() == "hours of training"


# -- 5. audit sampler --png -------------------------------------------------------------------------------------

def test_sampler_png_is_checked_before_the_work(env, capsys):
    victim = env / "victim.csv"
    victim.write_text("a,b\n1,2\n")
    code, _, err = run(capsys, "audit", "sampler", "--png", victim)
    refused(code, err, "--png", "ending in .png")
    fake = env / "fake.png"
    fake.write_text("not a picture\n")
    code, _, err = run(capsys, "audit", "sampler", "--png", fake)
    refused(code, err, "--png", "an existing PNG picture")
    assert victim.read_text() == "a,b\n1,2\n" and fake.read_text() == "not a picture\n"


# -- 6. small ones ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,flag", [
    (["audit", "lood", "--candidates", "0"], "--candidates"),
    (["audit", "lood", "--top", "0"], "--top"),
    (["optimize", *OPT, "--early-factor", "3"], "--early-factor"),
    (["optimize", "--callable", "m.py:f", "--candidates", "cand.csv", "--grid", "5"], "--grid"),
    (["optimize", "--lookup", "table.csv", "--grid", "5"], "--grid"),
])
def test_silently_ignored_settings_are_refused(env, capsys, args, flag):
    (env / "table.csv").write_text("x,response\n0,0\n1,1\n")
    (env / "cand.csv").write_text("x\n0\n1\n")
    (env / "m.py").write_text("def f(x):\n    return 0.0\n")
    extra = ["--ledger", env / "l.sqlite", "--out", env / "o"] if args[0] == "optimize" else []
    code, _, err = run(capsys, *args, *extra)
    refused(code, err, f"{flag} must be")
    assert not (env / "l.sqlite").exists() and not (env / "o").exists()


def test_the_early_factor_is_used_with_the_early_schedule(env, capsys):
    code, out, err = run(capsys, "optimize", *OPT, "--schedule", "early", "--early-factor", "3",
                         "--ledger", env / "l.sqlite", "--out", env / "o")
    assert code == 0, err
    cert = json.loads((env / "o" / "certificate.json").read_text())
    assert np.isclose(cert["plan_arguments"]["early_factor"], 3.0)


def test_overwrite_recognises_an_optimize_run_whose_certificate_hashed_no_files(env, capsys):
    """optimize certificates before 2026-11-25 list no outputs and no sha256: its four files are still its own."""
    out = env / "old-opt"
    out.mkdir()
    (out / "certificate.json").write_text(json.dumps({"privgp_version": "0.1.0", "planned_rounds": 5,
                                                      "released_rounds": 5}))
    for name in ("history.csv", "queries.png", "summary.json"):
        (out / name).write_text("x")
    from privgp.cli.outputs import earlier_output

    assert earlier_output(out) == frozenset({"certificate.json", "history.csv", "queries.png", "summary.json"})
    (out / "notes.txt").write_text("mine")
    assert "notes.txt" not in earlier_output(out)


def test_an_out_under_a_folder_where_no_file_can_be_made_says_so(tmp_path, monkeypatch):
    """Walk-through 15: --out under /proc said "/proc (No such file or directory)" of a folder that exists: the
    message says a file cannot be created there, and why."""
    import errno
    import tempfile

    from privgp.errors import InvalidParameterError

    def refuse(*a, **k):
        raise OSError(errno.ENOENT, os.strerror(errno.ENOENT))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(InvalidParameterError, match=r"cannot create a file there: No such file or directory"):
        check_output_dir(tmp_path / "out")
