"""Issue 25, "The ledger survives its users": every hole refused before the charge (exit 2, one line,
ledger bytes unchanged, nothing left in --out), or handled without losing anything.

* --overwrite on a folder that holds the ledger or an input file;
* --out as a dangling symbolic link or a link to a folder (resolved and checked fully);
* leftover .privgp-tmp-* folders of killed runs: cleaned on the next run (and said), never one in use,
  never a completed output;
* `ledger show` on a read-only ledger and on a zero-byte file (nothing written);
* --budget-epsilon -1 on a new ledger path creates no file.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from privgp.cli.outputs import AtomicOutput, clean_leftovers
from privgp.ledger import Ledger
from tests.cli_scratch import digest, run, scratch_env  # noqa: F401  (scratch_env: the env fixture)

#: a release that passes every check quickly (the forecast's refusal of noisy maps is waived; --json keeps
#: stderr to the error line)
OK = ["--mechanism", "posterior-sample", "--allow-noisy", "--grid", "31", "--seed", "1", "--json"]


def assert_refused(code, err, needle, ledger: Path, before: str | None, out_dir: Path | None = None,
                   out_entries: set | None = None):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("privgp: error:"), err
    assert "Traceback" not in err and needle in err, err
    assert digest(ledger) == before
    if out_dir is not None:
        now = {p.name for p in out_dir.iterdir()} if out_dir.is_dir() else None
        assert now == out_entries
        leftovers = [p.name for p in out_dir.parent.iterdir() if p.name.startswith(".privgp-tmp-")]
        assert leftovers == []


def first_release(capsys, ledger: Path, out: Path) -> None:
    code, _, err = run(capsys, "release", *OK, "--ledger", str(ledger), "--out", str(out))
    assert code == 0, err


def test_overwrite_of_the_folder_that_holds_the_ledger_is_refused_before_the_charge(env, capsys):
    folder = env / "l"
    ledger = folder / "ledger.sqlite"
    first_release(capsys, ledger, env / "rel")
    before = digest(ledger)
    entries = {p.name for p in folder.iterdir()}
    code, _, err = run(capsys, "release", *OK, "--ledger", str(ledger), "--out", str(folder), "--overwrite")
    assert_refused(code, err, "does not hold the ledger", ledger, before, folder, entries)
    assert len(Ledger(ledger).entries()) == 1
    # also an ancestor of the ledger, and a ledger that would be created inside --out
    code, _, err = run(capsys, "release", *OK, "--ledger", str(ledger), "--out", str(env), "--overwrite")
    assert_refused(code, err, "does not hold the ledger", ledger, before)
    new = env / "fresh" / "ledger.sqlite"
    code, _, err = run(capsys, "release", *OK, "--ledger", str(new), "--out", str(env / "fresh"))
    assert_refused(code, err, "does not hold the ledger", new, None)
    assert not (env / "fresh").exists()


def test_overwrite_of_the_folder_that_holds_the_input_data_is_refused(env, capsys):
    folder = env / "work"
    folder.mkdir()
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (30, 2))
    np.savetxt(folder / "data.csv", np.column_stack([X, rng.normal(0, 1, 30)]), delimiter=",",
               header="x,y,response", comments="")
    ledger = env / "ledger.sqlite"
    code, _, err = run(capsys, "release", *OK, "--data", str(folder / "data.csv"), "--y-col", "y", "--box", "0", "1",
                       "0", "1", "--threshold", "0", "--clip", "1", "--ledger", str(ledger), "--out", str(folder),
                       "--overwrite")
    assert_refused(code, err, "does not hold the input data", ledger, None, folder, {"data.csv"})


def test_dangling_symlink_out_is_resolved_before_the_charge(env, capsys):
    ledger = env / "ledger.sqlite"
    link = env / "dangling"
    link.symlink_to(env / "target-not-yet")
    code, out, err = run(capsys, "release", *OK, "--ledger", str(ledger), "--out", str(link))
    assert code == 0, err
    assert link.is_symlink() and (env / "target-not-yet" / "certificate.json").is_file()
    assert (Ledger(ledger).entries()[0]).status == "completed"
    assert [p.name for p in env.iterdir() if p.name.startswith(".privgp-tmp-")] == []
    # a link to a place that cannot be created (under a file) is refused before anything is charged
    (env / "a-file").write_text("x")
    bad = env / "bad-link"
    bad.symlink_to(env / "a-file" / "sub")
    before = digest(ledger)
    code, _, err = run(capsys, "release", *OK, "--ledger", str(ledger), "--out", str(bad))
    assert_refused(code, err, "--out", ledger, before)
    assert len(Ledger(ledger).entries()) == 1


def test_symlink_to_a_folder_keeps_the_link_and_replaces_the_folder(env, capsys):
    ledger = env / "ledger.sqlite"
    target = env / "published"
    first_release(capsys, ledger, target)   # --overwrite replaces only an earlier privgp output
    before = digest(target / "certificate.json")
    link = env / "current"
    link.symlink_to(target)
    code, _, err = run(capsys, "release", *OK, "--ledger", str(ledger), "--out", str(link), "--overwrite")
    assert code == 0, err
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert (target / "certificate.json").is_file() and digest(target / "certificate.json") != before
    assert [p.name for p in env.iterdir() if p.name.startswith(".privgp-tmp-")] == []


def test_leftovers_of_killed_runs_are_cleaned_and_reported(env, capsys):
    ledger = env / "ledger.sqlite"
    dead = env / ".privgp-tmp-k1ll3d"          # a killed run's temporary folder
    dead.mkdir()
    (dead / "paths.npz").write_bytes(b"half")
    done = env / "earlier"                      # a completed output: never touched
    done.mkdir()
    (done / "certificate.json").write_text("{}")
    moved = env / ".privgp-tmp-old-swapped"     # killed between the two renames of an --overwrite
    moved.mkdir()
    (moved / "certificate.json").write_text("{\"kept\": true}")
    busy = env / ".privgp-tmp-busy"             # a run in progress (holds the lock)
    busy.mkdir()
    fd = os.open(busy, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        code, _, err = run(capsys, "release", *OK, "--ledger", str(ledger), "--out", str(env / "new"))
        assert code == 0, err
        assert "removed 1 leftover temporary folder" in err and ".privgp-tmp-k1ll3d" in err
        assert "restored the earlier output folder(s) swapped" in err
        assert not dead.exists() and busy.is_dir()
        assert (done / "certificate.json").read_text() == "{}"
        assert (env / "swapped" / "certificate.json").read_text() == "{\"kept\": true}"
    finally:
        os.close(fd)
    assert "removed 1" in clean_leftovers(env) and not busy.exists()
    assert clean_leftovers(env) == ""


def test_atomic_output_locks_its_folder_while_writing(tmp_path):
    with AtomicOutput(tmp_path / "out") as tmp:
        (tmp / "a.txt").write_text("a")
        assert clean_leftovers(tmp_path) == "" and tmp.is_dir()   # in use: left alone
    assert (tmp_path / "out" / "a.txt").read_text() == "a"


@contextlib.contextmanager
def read_only(path: Path):
    """The file cannot be written, even by root (chattr +i), or the test is skipped."""
    if os.geteuid() == 0:
        res = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
        if res.returncode != 0:
            pytest.skip("running as root without chattr +i: cannot make a file read-only")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    else:
        mode = path.stat().st_mode
        path.chmod(0o444)
        path.parent.chmod(0o555)
        try:
            yield
        finally:
            path.parent.chmod(0o755)
            path.chmod(mode)


@pytest.mark.skipif(shutil.which("chattr") is None and os.geteuid() == 0, reason="needs chattr as root")
def test_ledger_show_reads_a_read_only_ledger(env, capsys):
    ledger = env / "ro" / "ledger.sqlite"
    first_release(capsys, ledger, env / "rel")
    before = digest(ledger)
    with read_only(ledger):
        code, out, err = run(capsys, "ledger", "show", "--ledger", str(ledger))
        assert code == 0, err
        assert "1 dataset(s), 1 release(s)" in out
        code, out, err = run(capsys, "ledger", "show", "--ledger", str(ledger), "--json")
        assert code == 0 and '"exists": true' in out
    assert digest(ledger) == before
    assert sorted(p.name for p in ledger.parent.iterdir()) == ["ledger.sqlite"]


def test_ledger_show_writes_nothing_into_an_empty_file(env, capsys):
    ledger = env / "empty.sqlite"
    ledger.write_bytes(b"")
    code, out, err = run(capsys, "ledger", "show", "--ledger", str(ledger))
    assert code == 0, err
    assert "0 dataset(s), 0 release(s)" in out
    assert ledger.read_bytes() == b""
    with pytest.raises(Exception, match="read-only"):
        Ledger(ledger, readonly=True).complete("x")


@pytest.mark.parametrize("flag,value", [("--budget-epsilon", "-1"), ("--budget-epsilon", "0"),
                                        ("--budget-delta", "1.5")])
def test_a_refused_budget_creates_no_ledger_file(env, capsys, flag, value):
    ledger = env / "new" / "ledger.sqlite"
    code, _, err = run(capsys, "release", *OK, "--ledger", str(ledger), "--out", str(env / "rel"), flag, value)
    assert_refused(code, err, flag, ledger, None)
    assert not (env / "new").exists() and not (env / "rel").exists()
    code, _, err = run(capsys, "optimize", "--function", "branin", "--rounds", "5", "--ledger", str(ledger),
                       "--out", str(env / "opt"), flag, value)
    assert_refused(code, err, flag, ledger, None)
    assert not (env / "new").exists() and not (env / "opt").exists()
