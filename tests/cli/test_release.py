"""End-to-end tests of `privgp release` and `privgp ledger show` (subprocesses and in-process).

Checks the files, the certificate (epsilon recomputed for this release's n, delta and domain,
<= the target when calibrated), the ledger (charging, refusal with exit status 3, concurrency,
crash after the charge), privacy hygiene (no training value in any output, only public fields in
the certificate) and bad input (exit status 2, one line, nothing written, nothing charged).
"""
from __future__ import annotations

import json
import os
import re
import sqlite3
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from privgp.cli.main import main
from privgp.datasets.baltimore import PUBLIC_BOX
from privgp.ledger import Ledger
from privgp.mechanisms.posterior_sample import epsilon_posterior_sampling
from privgp.mechanisms.release import default_delta
from privgp.models.domain import Box

FILES = {"paths.npz", "paths.csv", "excursion.png", "certificate.json", "report.html"}


def env_for(tmp_path: Path) -> dict:
    env = dict(os.environ)
    env.update(HOME=str(tmp_path / "home"), XDG_DATA_HOME=str(tmp_path / "xdg"),
               PRIVGP_LEDGER=str(tmp_path / "ledger.sqlite"), MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    return env


def posterior_sample_args(args) -> list[str]:
    """These tests are of the posterior-sample mechanism (privgp's default before `--mechanism auto`): a
    `release` without `--mechanism` gets `--mechanism posterior-sample`, and `--allow-noisy` so that the
    utility forecast (tested in tests/cli/test_release_auto.py) does not refuse their small data sets."""
    args = list(args)
    if args and args[0] == "release" and "--mechanism" not in args and "--help" not in args:
        args[1:1] = ["--mechanism", "posterior-sample", "--allow-noisy"]
    return args


def raw_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The command exactly as given."""
    return subprocess.run([sys.executable, "-m", "privgp.cli.main", *args], capture_output=True, text=True,
                          env=env_for(tmp_path), cwd=tmp_path, timeout=300)


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return raw_cli(tmp_path, *posterior_sample_args(args))


def popen(tmp_path: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "privgp.cli.main", *posterior_sample_args(args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_for(tmp_path),
                            cwd=tmp_path)


def reference_epsilon(cert: dict) -> float:
    s = cert["public_settings"]
    dom = Box(tuple(s["domain"]["lower"]), tuple(s["domain"]["upper"]))
    return float(epsilon_posterior_sampling(
        s["n"], s["r"], s["sigma"], s["delta"], kernel=s["kernel"], lengthscale=s["lengthscale"], domain=dom,
        eta=s["eta"], L=s["L"], M_Y=1.0, sensitivity=s["sensitivity"], conversion=s["conversion"]).epsilon)


def write_csv(path: Path, cols: dict) -> None:
    names = list(cols)
    rows = zip(*(cols[c] for c in names))
    path.write_text(",".join(names) + "\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in rows) + "\n")


def random_2d(tmp_path: Path, n=40, seed=0):
    rng = np.random.default_rng(seed)
    lon, lat = rng.uniform(0.0, 10.0, n), rng.uniform(0.0, 5.0, n)
    v = rng.normal(0.0, 1.5, n)
    p = tmp_path / "private.csv"
    write_csv(p, {"lon": lon, "lat": lat, "v": v})
    return p, lon, lat, v


CSV2D_ARGS = ("--x-col", "lon", "--y-col", "lat", "--response-col", "v", "--box", "0", "10", "0", "5",
              "--threshold", "0.3", "--clip", "2")


# -- end to end ----------------------------------------------------------------------------------

def test_default_data_release(tmp_path):
    res = cli(tmp_path, "release", "--out", "rel", "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    out = tmp_path / "rel"
    assert {p.name for p in out.iterdir()} == FILES
    cert = json.loads((out / "certificate.json").read_text())
    s = cert["public_settings"]
    assert s["n"] == 211 and s["dim"] == 2
    assert s["domain"] == PUBLIC_BOX.to_dict()
    assert s["delta"] == pytest.approx(default_delta(211)) == 1e-6
    assert s["response_map"]["threshold"] == 40.0 and s["response_map"]["transform"] == "log"
    assert s["hyperparameters"] == "calibrated r" and s["sensitivity"] == "generic"
    eps = cert["certificate"]["epsilon"]
    from privgp.mechanisms.posterior_release import DEFAULT_EPSILON

    assert eps <= DEFAULT_EPSILON and eps == pytest.approx(reference_epsilon(cert), rel=1e-3)
    assert summary["epsilon"] == eps and summary["fingerprint"] == cert["dataset"]["fingerprint"]
    assert cert["randomness"]["source"].startswith("fresh OS entropy")
    # released paths on the grid over the public box
    z = np.load(out / "paths.npz")
    assert z["paths"].shape == (1, 121, 73)
    np.testing.assert_allclose(z["axis_x"][[0, -1]], [850, 1000])
    np.testing.assert_allclose(z["axis_y"][[0, -1]], [500, 590])
    table = np.loadtxt(out / "paths.csv", delimiter=",", skiprows=1)
    assert table.shape == (121 * 73, 3)
    assert (out / "paths.csv").read_text().splitlines()[0] == "x,y,path_1"
    np.testing.assert_allclose(table[:, 2], z["paths"].reshape(-1))
    assert (out / "excursion.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # ledger: one completed entry for this dataset
    led = Ledger(tmp_path / "ledger.sqlite")
    (entry,) = led.entries()
    assert entry.id == cert["ledger"]["entry_id"] and entry.status == "completed"
    assert entry.fingerprint == cert["dataset"]["fingerprint"]
    assert entry.epsilon == pytest.approx(eps)
    # a second release composes; the terminal summary is readable
    res2 = cli(tmp_path, "release", "--out", "rel2")
    assert res2.returncode == 0, res2.stderr
    assert "guarantee" in res2.stdout and "fresh OS entropy" in res2.stdout
    (ds,) = led.datasets()
    assert ds.spent.entries == 2 and eps < ds.spent.epsilon < 2 * eps + 1e-9
    shown = cli(tmp_path, "ledger", "show", "--json")
    info = json.loads(shown.stdout)
    assert [e["status"] for e in info["entries"]] == ["completed", "completed"]
    assert info["datasets"][0]["spent_epsilon"] == pytest.approx(ds.spent.epsilon)
    text = cli(tmp_path, "ledger", "show")
    assert text.returncode == 0 and cert["ledger"]["entry_id"] in text.stdout


def test_csv_2d_release_hides_every_training_value(tmp_path):
    p, lon, lat, v = random_2d(tmp_path)
    res = cli(tmp_path, "release", "--data", str(p), *CSV2D_ARGS, "--epsilon", "2", "--L", "2", "--seed", "5",
              "--lengthscale", "2", "--out", "rel")
    assert res.returncode == 0, res.stderr
    out = tmp_path / "rel"
    assert {f.name for f in out.iterdir()} == FILES
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["public_settings"]["n"] == 40 and cert["certificate"]["epsilon"] <= 2.0
    assert cert["certificate"]["epsilon"] == pytest.approx(reference_epsilon(cert), rel=1e-3)
    assert np.load(out / "paths.npz")["paths"].shape == (2, 121, 61)

    y = np.clip(v - 0.3, -2, 2) / 2
    secrets = np.concatenate([lon, lat, v, y[np.abs(y) < 1]])  # saturated y = +-1 is a public constant
    for f in out.iterdir():
        data = f.read_bytes()
        for s in secrets:  # binary and printed forms of every private value
            for pat in (struct.pack("<d", s), struct.pack("<f", s), repr(float(s)).encode(), f"{s:.8g}".encode()):
                assert pat not in data, (f.name, s)
        if f.suffix in (".csv", ".json", ".html"):
            text = f.read_text()
            nums = np.array([float(t) for t in re.findall(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?", text)])
            close = np.isclose(nums[:, None], secrets[None, :], rtol=1e-8, atol=0)
            assert not close.any(), (f.name, nums[close.any(1)][:5])
        if f.suffix == ".npz":
            z = np.load(f)
            for k in z.files:
                a = z[k]
                if a.dtype.kind == "f":
                    assert not np.isin(a, secrets).any(), k
    # the certificate holds only public quantities
    assert set(cert) == {"privgp_version", "mechanism", "certificate", "calibration", "public_settings",
                         "dataset", "ledger", "randomness", "outputs", "notes",
                         "sha256", "forecast"}
    assert set(cert["dataset"]) == {"fingerprint", "n", "dim", "coordinates", "response", "source"}
    assert cert["dataset"]["source"] == "user CSV file" and str(p) not in json.dumps(cert)
    assert set(cert["public_settings"]) <= {
        "n", "dim", "domain", "response_map", "kernel", "lengthscale", "r", "sigma", "eta", "L", "delta",
        "sensitivity", "constants", "conversion", "grid", "hyperparameters", "preprocessing", "target_epsilon"}
    clip_count = re.compile(r"\d+\s+(of\s+\d+\s+)?(values?|responses?|records?)?\s*(were\s+)?clipped|clipped\W+\d+\s+(of|values?)")
    assert not clip_count.search(json.dumps(cert)) and not clip_count.search(res.stdout)
    assert "n_clipped" not in json.dumps(cert)
    # seeded: said so, and the seed itself is not written
    assert "anyone with the seed" in cert["randomness"]["warning"] and "SEEDED" in res.stdout


def test_csv_1d_release_uses_lemma_b7(tmp_path):
    rng = np.random.default_rng(3)
    p = tmp_path / "d1.csv"
    write_csv(p, {"t": rng.uniform(0, 1, 30), "v": rng.normal(size=30)})
    res = cli(tmp_path, "release", "--data", str(p), "--x-col", "t", "--response-col", "v", "--box", "0", "1",
              "--threshold", "0", "--clip", "1", "--r", "3", "--sigma", "2", "--L", "3", "--lengthscale", "0.3",
              "--out", "rel", "--json")
    assert res.returncode == 0, res.stderr
    cert = json.loads((tmp_path / "rel" / "certificate.json").read_text())
    s = cert["public_settings"]
    assert s["sensitivity"] == "exp1d" and s["hyperparameters"] == "given" and s["r"] == 3.0
    assert s["delta"] == pytest.approx(default_delta(30))
    assert cert["certificate"]["epsilon"] == pytest.approx(reference_epsilon(cert), rel=1e-3)
    assert np.load(tmp_path / "rel" / "paths.npz")["paths"].shape == (3, 201)
    assert (tmp_path / "rel" / "paths.csv").read_text().splitlines()[0] == "t,path_1,path_2,path_3"


def test_seeded_releases_reproduce(tmp_path):
    a = cli(tmp_path, "release", "--seed", "987654321", "--out", "a", "--ledger", "la.sqlite", "--grid", "31")
    b = cli(tmp_path, "release", "--seed", "987654321", "--out", "b", "--ledger", "lb.sqlite", "--grid", "31")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "a" / "paths.npz")["paths"],
                                  np.load(tmp_path / "b" / "paths.npz")["paths"])
    assert "987654321" not in (tmp_path / "a" / "certificate.json").read_text()


# -- the ledger through the CLI ------------------------------------------------------------------------

def test_budget_exhaustion_exit_3_writes_nothing(tmp_path):
    args = ("release", "--epsilon", "1", "--budget-epsilon", "1.2", "--grid", "31")
    assert cli(tmp_path, *args, "--out", "first").returncode == 0
    res = cli(tmp_path, *args, "--out", "second")
    assert res.returncode == 3
    assert res.stderr.startswith("privgp: refused:") and len(res.stderr.strip().splitlines()) == 1
    assert "Traceback" not in res.stderr
    assert all(ln.startswith(("forecast before the charge:", "warning: MOSTLY NOISE"))   # nothing else
               for ln in res.stdout.splitlines())
    assert not (tmp_path / "second").exists()
    assert len(Ledger(tmp_path / "ledger.sqlite").entries()) == 1


def test_a_release_certified_at_the_budget_fits_the_ledger(tmp_path):
    """The ledger composes events exactly (no grid of orders): a release whose certificate is within the
    budget is never refused by the ledger's own arithmetic (issue 9: 5.0000074 vs 4.99996 before)."""
    res = cli(tmp_path, "release", "--epsilon", "5", "--budget-epsilon", "5", "--grid", "31", "--out", "a", "--json")
    assert res.returncode == 0, res.stderr
    s = json.loads(res.stdout)
    assert s["epsilon"] <= 5.0 and s["spent_epsilon"] <= 5.0
    assert s["spent_epsilon"] == pytest.approx(s["epsilon"], rel=1e-12)


def test_a_release_too_leaky_for_any_budget_is_refused_before_anything_is_written(tmp_path):
    res = cli(tmp_path, "release", "--r", "0.001", "--out", "leaky")
    assert res.returncode == 3 and res.stderr.startswith("privgp: refused:")
    # a refused first release creates no ledger file either (the file is created by the first charge)
    assert not (tmp_path / "leaky").exists() and not (tmp_path / "ledger.sqlite").exists()


def test_concurrent_cli_releases_only_one_fits(tmp_path):
    p, *_ = random_2d(tmp_path, n=25, seed=1)
    args = ("release", "--data", str(p), *CSV2D_ARGS, "--epsilon", "1", "--budget-epsilon", "1.2", "--grid", "21")
    procs = [popen(tmp_path, *args, "--out", f"out{i}") for i in range(3)]
    codes = [pr.wait(timeout=300) for pr in procs]
    for pr in procs:
        pr.stdout.close()
        pr.stderr.close()
    assert sorted(codes) == [0, 3, 3]
    made = [i for i in range(3) if (tmp_path / f"out{i}").exists()]
    assert made == [codes.index(0)]
    led = Ledger(tmp_path / "ledger.sqlite")
    assert len(led.entries()) == 1 and led.datasets()[0].spent.epsilon <= 1.2


def test_crash_after_charge_leaves_charge_and_no_output(tmp_path):
    script = textwrap.dedent("""
        import os, sys
        import privgp.ledger as L
        charge = L.Ledger.charge
        def crash(*a, **k):   # crash right after the charge (the forecast's draws come before it)
            charge(*a, **k)
            os._exit(9)
        L.Ledger.charge = crash
        from privgp.cli.main import main
        main(["release", "--mechanism", "posterior-sample", "--allow-noisy", "--out", "rel", "--grid", "31"])
    """)
    res = subprocess.run([sys.executable, "-c", script], env=env_for(tmp_path), cwd=tmp_path, timeout=300,
                         capture_output=True, text=True)
    assert res.returncode == 9
    assert not (tmp_path / "rel").exists()
    led = Ledger(tmp_path / "ledger.sqlite")
    (entry,) = led.entries()
    assert entry.status == "charged" and led.datasets()[0].spent.entries == 1
    with sqlite3.connect(tmp_path / "ledger.sqlite") as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    shown = cli(tmp_path, "ledger", "show")
    assert "charged" in shown.stdout


# -- bad input: exit 2, one line, nothing written, nothing charged ---------------------------------

def bad_cases(tmp_path):
    p, *_ = random_2d(tmp_path, n=10)
    (tmp_path / "bin.csv").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "text.csv").write_text("lon,lat,v\n1,2,abc\n")
    (tmp_path / "gap.csv").write_text("lon,lat,v\n1,2,\n3,4,5\n")
    (tmp_path / "neg.csv").write_text("lon,lat,v\n1,2,-3\n3,4,5\n")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old.txt").write_text("x")
    d = ("--data", str(p))
    return {
        "missing file": ("--data", str(tmp_path / "nope.csv"), *CSV2D_ARGS),
        "binary file": ("--data", str(tmp_path / "bin.csv"), *CSV2D_ARGS),
        "non-numeric": ("--data", str(tmp_path / "text.csv"), *CSV2D_ARGS),
        "missing value": ("--data", str(tmp_path / "gap.csv"), *CSV2D_ARGS),
        "wrong column": (*d, *CSV2D_ARGS, "--response-col", "price"),
        "outside box": (*d, *CSV2D_ARGS[:6], "--box", "0", "5", "0", "5", "--threshold", "0", "--clip", "1"),
        "box size": (*d, *CSV2D_ARGS[:6], "--box", "0", "10", "--threshold", "0", "--clip", "1"),
        "no box": (*d, *CSV2D_ARGS[:6], "--threshold", "0", "--clip", "1"),
        "no threshold": (*d, *CSV2D_ARGS[:11], "--clip", "1"),
        "log of negative": ("--data", str(tmp_path / "neg.csv"), *CSV2D_ARGS, "--transform", "log"),
        "bad delta": ("--delta", "1.5"),
        "bad L": ("--L", "0"),
        "bad clip": ("--clip", "0"),
        "unreachable target": ("--epsilon", "1e-12", "--delta", "1e-200"),
        "unreachable eta": ("--r", "0.001", "--epsilon", "1"),
        "column without data": ("--x-col", "lon"),
        "out not empty": ("--out", str(tmp_path / "full")),
        "snap negative": ("--snap", "-1"),
        "budget below zero": ("--budget-epsilon", "-1"),
    }


def test_bad_input_exit_2_nothing_written_or_charged(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PRIVGP_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    for name, args in bad_cases(tmp_path).items():
        argv = ["release", *args] + ([] if "--out" in args else ["--out", str(tmp_path / "rel")])
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2, (name, err)
        assert err.startswith("privgp: error:") and len(err.strip().splitlines()) == 1, (name, err)
        assert not (tmp_path / "rel").exists(), name
        led = tmp_path / "ledger.sqlite"
        assert not led.exists() or Ledger(led).entries() == [], name
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["old.txt"]


def test_bad_input_in_a_subprocess_has_no_traceback(tmp_path):
    res = cli(tmp_path, "release", "--data", str(tmp_path / "missing.csv"), *CSV2D_ARGS)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip() == f"privgp: error: data file not found: {tmp_path / 'missing.csv'}"
    assert not (tmp_path / "privgp_release").exists() and not (tmp_path / "ledger.sqlite").exists()


def test_help_says_hyperparameters_must_be_public(capsys):
    assert main(["release", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "would need its own privacy budget" in text
    assert "exit status 3" in text and "never the min/max of the coordinates" in text
