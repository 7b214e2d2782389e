"""`privgp release` where real data holders take it (issue 10): every failure the user can cause is
refused before the charge (exit 2, one line, nothing written, nothing charged), outputs are atomic,
the certificate is publishable, the fingerprint is of the records used, and large n runs exactly."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from privgp.cli.main import main
from privgp.ledger import Ledger

ROOT = Path(__file__).resolve().parents[2]


def write_csv(path: Path, X: np.ndarray, v: np.ndarray, names=("lon", "lat", "v"), fmt="%.10g") -> Path:
    cols = np.column_stack([X, v])
    np.savetxt(path, cols, delimiter=",", header=",".join(names[: cols.shape[1]]), comments="", fmt=fmt)
    return path


def data_2d(tmp_path: Path, n: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    X = rng.uniform([0.0, 0.0], [10.0, 5.0], (n, 2))
    return write_csv(tmp_path / f"d{n}.csv", X, rng.normal(0.0, 1.0, n))


ARGS2D = ["--x-col", "lon", "--y-col", "lat", "--response-col", "v", "--box", "0", "10", "0", "5",
          "--threshold", "0", "--clip", "2"]


def run(capsys, *args):
    if "--mechanism" not in args:   # these tests are of the posterior-sample release path (auto: test_release_auto_cli)
        args = ("--mechanism", "posterior-sample", *args)
    code = main(["release", "--allow-noisy", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_refused(code, out, err, led_path: Path, out_dir: Path, needle: str):
    assert code == 2, err
    assert err.startswith("privgp: error:") and len(err.strip().splitlines()) == 1, err
    assert needle in err, err
    assert all(ln.startswith(("forecast before the charge:", "warning: MOSTLY NOISE")) for ln in out.splitlines())
    assert not out_dir.exists() and not led_path.exists()   # the ledger file is created by the first charge only
    leftovers = [p.name for p in out_dir.parent.iterdir() if p.name.startswith(".privgp-tmp-")]
    assert leftovers == []


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVGP_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_user_error_is_refused_before_the_charge(env, capsys):
    big = data_2d(env, 200_000)
    (env / "afile").write_text("x")
    led, out = env / "ledger.sqlite", env / "rel"
    cases = {
        # a dense 200 000 x 200 000 system would need ~600 GiB: refused, naming the option that works
        "dense n=2e5": (["--data", str(big), *ARGS2D, "--snap", "0", "--grid", "41"], "--snap 1"),
        "huge L": (["--L", "200000", "--r", "50"], "memory"),
        "negative seed": (["--seed", "-1"], "--seed"),
        "non-integer seed": (["--seed", "1.5"], "--seed"),
        "out under a file": (["--out", str(env / "afile" / "rel")], "--out"),
        "out is a file": (["--out", str(env / "afile")], "--out"),
        "out unwritable": (["--out", "/proc/privgp-release-test/rel"], "--out"),
        "embedding not exact": (["--kernel", "squared_exponential", "--lengthscale", "400"], "circulant"),
        "bad memory limit": (["--memory-limit", "0"], "--memory-limit"),
        "empty dataset id": (["--dataset-id", " "], "--dataset-id"),
        "bad L value": (["--L", "many"], "--L"),
    }
    for name, (args, needle) in cases.items():
        argv = list(args) + ([] if "--out" in args else ["--out", str(out)])
        code, o, err = run(capsys, *argv)
        target = Path(argv[argv.index("--out") + 1])
        assert_refused(code, o, err, led, out if not target.exists() else out, needle)
        assert not led.exists(), name        # every check runs before the ledger is even opened
        assert not (env / "afile").is_dir()


def test_corrupt_ledger_is_refused_before_anything(env, capsys):
    led = env / "ledger.sqlite"
    Ledger(led).charge("fp", __import__("privgp").GaussianEvent(1.0, 5.0), budget_epsilon=5.0, budget_delta=1e-3)
    with sqlite3.connect(led) as con:
        con.execute("UPDATE entries SET event = 'garbage'")
    code, out, err = run(capsys, "--out", str(env / "rel"), "--dataset-id", "x")
    assert code == 2 and "corrupt" in err and not (env / "rel").exists()


def test_large_n_in_2d_runs_exactly_and_certifies_for_n(env, capsys):
    """n = 20 000 records on a 41-point grid: one unknown per occupied site (the 10^6 case is the benchmark)."""
    p = data_2d(env, 20_000, seed=1)
    code, out, err = run(capsys, "--data", str(p), *ARGS2D, "--grid", "41", "--out", str(env / "rel"), "--json")
    assert code == 0, err
    s = json.loads(out)
    assert s["n"] == 20_000 and s["epsilon"] <= 5.0
    cert = json.loads((env / "rel" / "certificate.json").read_text())
    assert cert["certificate"]["event"]["n"] == 20_000


def test_certificate_is_publishable_and_outputs_are_atomic(env, capsys):
    code, out, err = run(capsys, "--out", str(env / "rel"), "--grid", "31", "--seed", "3")
    assert code == 0, err
    for name in ("certificate.json", "report.html"):  # both are for publication
        text = (env / "rel" / name).read_text()
        assert str(env) not in text and "/home" not in text and "ledger.sqlite" not in text, name
    assert [p.name for p in env.iterdir() if p.name.startswith(".privgp-tmp-")] == []
    # --overwrite replaces the folder only once the new release is complete
    code, out, err = run(capsys, "--out", str(env / "rel"), "--grid", "31", "--overwrite")
    assert code == 0, err
    assert sorted(p.name for p in (env / "rel").iterdir()) == sorted(
        ["paths.npz", "paths.csv", "excursion.png", "certificate.json", "report.html"])


def test_a_kill_while_writing_leaves_no_out_and_keeps_the_charge(tmp_path):
    script = textwrap.dedent("""
        import os
        import privgp.publish as P
        def crash(*a, **k):
            os._exit(9)
        P.write_report = crash   # dies after the paths and the picture were written into the temporary folder
        from privgp.cli.main import main
        main(["release", "--mechanism", "posterior-sample", "--allow-noisy", "--out", "rel", "--grid", "31"])
    """)
    env = {"PRIVGP_LEDGER": str(tmp_path / "ledger.sqlite"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    res = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, timeout=300)
    assert res.returncode == 9 and not (tmp_path / "rel").exists()
    (entry,) = Ledger(tmp_path / "ledger.sqlite").entries()
    assert entry.status == "charged"


def test_fingerprint_follows_the_records_and_dataset_id_names_them(env, capsys):
    rng = np.random.default_rng(5)
    X, v = rng.uniform([0, 0], [10, 5], (30, 2)), rng.normal(0, 1, 30)
    a = write_csv(env / "a.csv", X, v, fmt="%.17g")
    b = env / "renamed.csv"  # same records: other number format, an extra column, other row order
    order = rng.permutation(30)
    np.savetxt(b, np.column_stack([v[order], X[order], np.arange(30)]), delimiter=",", header="v,lon,lat,extra",
               comments="", fmt="%.16e")
    base = [*ARGS2D, "--grid", "21", "--epsilon", "1", "--budget-epsilon", "1.2"]
    assert run(capsys, "--data", str(a), *base, "--out", str(env / "r1"))[0] == 0
    code, out, err = run(capsys, "--data", str(b), *base, "--out", str(env / "r2"))
    assert code == 3 and "refused" in err  # the same dataset: its budget is already (mostly) spent
    c = write_csv(env / "c.csv", X, v + 0.5)  # other records: a fresh budget, unless named by --dataset-id
    assert run(capsys, "--data", str(c), *base, "--out", str(env / "r3"))[0] == 0
    named = [*base, "--dataset-id", "survey-2026"]
    d, e = write_csv(env / "d.csv", X, v + 1.0), write_csv(env / "e.csv", X, v + 1.5)
    assert run(capsys, "--data", str(d), *named, "--out", str(env / "r4"))[0] == 0
    code, out, err = run(capsys, "--data", str(e), *named, "--out", str(env / "r5"))
    assert code == 3   # other records, the same name: one budget
    code, out, err = run(capsys, "--data", str(a), *named, "--out", str(env / "r6"))
    assert code == 2 and "charged before without a name" in err   # a's records have their own budget already
    labels = {d.label for d in Ledger(env / "ledger.sqlite").datasets()}
    assert "survey-2026" in labels


def test_progress_lines_for_logs(env, capsys):
    code, out, err = run(capsys, "--out", str(env / "rel"), "--grid", "31", "--progress")
    assert code == 0
    lines = [ln for ln in err.splitlines() if ln.startswith("privgp: release:")]
    assert any("charge and sample" in ln for ln in lines) and any("5/5" in ln for ln in lines)


def test_experiment_and_demo_refuse_bad_out_and_unreachable_scheduler(tmp_path, capsys, monkeypatch):
    from privgp.parallel import DaskExecutor

    # the connection refused here is retried until the timeout: 0.5 s instead of the 10 s the command gives a
    # scheduler that is slow to answer
    assert DaskExecutor.__init__.__defaults__ == (None, 10.0)
    monkeypatch.setattr(DaskExecutor.__init__, "__defaults__", (None, 0.5))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("x")
    (tmp_path / "file").write_text("x")
    for argv, needle in [(["experiment", "fig1", "--quick", "--out", str(tmp_path / "full")], "--out"),
                         (["experiment", "fig1", "--quick", "--out", str(tmp_path / "file")], "--out"),
                         (["demo", "--out", str(tmp_path / "full")], "--out"),
                         (["demo", "--out", str(tmp_path / "file")], "--out"),
                         (["experiment", "fig1", "--quick", "--out", str(tmp_path / "s"), "--scheduler",
                           "tcp://127.0.0.1:9"], "scheduler"),
                         (["experiment", "nosuch", "--out", str(tmp_path / "n")], "experiment")]:
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, (argv, err)
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["keep.txt"]
    assert (tmp_path / "file").read_text() == "x"
