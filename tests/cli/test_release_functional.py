"""`privgp release --mechanism functional`: the functional mechanism (posterior mean + c g, seed 002
Thm 4.1) through the same CLI workflow as posterior sampling: data, box, response map, certificate,
ledger, outputs; bad input exits 2 with nothing written or charged."""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from privgp.accounting import accountant, event_from_dict
from privgp.accounting.functional_noise import FunctionalEvent, gdp_multiplier
from privgp.cli.main import main
from privgp.ledger import Ledger
from privgp.mechanisms.functional import posterior_mean_sensitivity
from privgp.models.domain import Box

FILES = {"paths.npz", "paths.csv", "excursion.png", "certificate.json", "report.html"}


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVGP_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_default_data_functional_release(env, capsys):
    assert main(["release", "--mechanism", "functional", "--allow-noisy", "--out", "rel", "--json", "--grid", "61"]) == 0
    summary = json.loads(capsys.readouterr().out)
    out = env / "rel"
    assert {p.name for p in out.iterdir()} == FILES
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["mechanism"] == "functional" and cert["certificate"]["mechanism"].startswith("functional mechanism")
    ev = event_from_dict(cert["certificate"]["event"])
    assert isinstance(ev, FunctionalEvent) and cert["certificate"]["method"] == "exact-gdp"
    s = cert["public_settings"]
    assert s["n"] == 211 and s["hyperparameters"] == "calibrated r" and s["multiplier"] <= 0.2
    assert s["response_map"]["transform"] == "log"
    eps = cert["certificate"]["epsilon"]
    assert eps <= 5.0 and eps == pytest.approx(5.0, rel=1e-8)
    # the event is recomputable from public numbers: Delta from the lemma at this n, r, box; c = Delta / mu
    Delta = float(posterior_mean_sensitivity(211, s["r"], kernel="exponential", lengthscale=s["lengthscale"],
                                             domain=Box(tuple(s["domain"]["lower"]), tuple(s["domain"]["upper"]))).value)
    assert ev.sensitivity == pytest.approx(Delta, rel=1e-12)
    assert ev.noise_std == pytest.approx(gdp_multiplier(Delta, 5.0, s["delta"]), rel=1e-9)
    assert accountant.epsilon(ev, s["delta"]).epsilon <= 5.0
    z = np.load(out / "paths.npz")
    assert z["paths"].shape == (1, 61, 37)
    (entry,) = Ledger(env / "ledger.sqlite").entries()
    assert entry.status == "completed" and entry.epsilon == pytest.approx(eps)
    assert summary["mechanism"] == "functional" and summary["multiplier"] == pytest.approx(s["multiplier"])


def test_csv_1d_functional_release_with_given_r_hides_training_values(env, capsys):
    rng = np.random.default_rng(4)
    t, v = rng.uniform(0, 1, 25), rng.normal(0, 0.4, 25)
    (env / "d.csv").write_text("t,v\n" + "\n".join(f"{float(a)!r},{float(b)!r}" for a, b in zip(t, v)) + "\n")
    code = main(["release", "--mechanism", "functional", "--allow-noisy", "--data", "d.csv", "--x-col", "t", "--response-col", "v",
                 "--box", "0", "1", "--threshold", "0", "--clip", "1", "--r", "3", "--lengthscale", "0.3",
                 "--epsilon", "2", "--seed", "3", "--out", "rel"])
    assert code == 0
    text = capsys.readouterr().out
    assert "Lemma B.7" in text and "SEEDED" in text
    cert = json.loads((env / "rel" / "certificate.json").read_text())
    assert cert["public_settings"]["r"] == 3.0 and "B.7" in cert["public_settings"]["sensitivity_lemma"]
    assert np.load(env / "rel" / "paths.npz")["paths"].shape == (1, 201)
    secrets = np.concatenate([t, v])
    for f in (env / "rel").iterdir():
        data = f.read_bytes()
        for s in secrets:
            assert struct.pack("<d", s) not in data and repr(float(s)).encode() not in data, f.name


@pytest.mark.parametrize("args", [("--sigma", "0.3"), ("--eta", "0.1"), ("--snap", "-1"), ("--L", "2"),
                                  ("--conversion", "mironov"), ("--r", "2", "--noise-bound", "0.1"),
                                  ("--noise-bound", "0"), ("--noise-analysis", "hall"), ("--epsilon", "0"),
                                  ("--delta", "2"), ("--r", "-1"), ("--lengthscale", "0"), ("--memory-limit", "0.0001")])
def test_bad_input_exit_2_nothing_written_or_charged(env, capsys, args):
    code = main(["release", "--mechanism", "functional", "--allow-noisy", *args, "--out", str(env / "rel")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("privgp: error:") and len(err.strip().splitlines()) == 1, err
    assert not (env / "rel").exists()
    led = env / "ledger.sqlite"
    assert not led.exists() or Ledger(led).entries() == []


def test_functional_only_options_refused_for_posterior_sampling(env, capsys):
    for args in (("--noise-bound", "0.1"), ("--noise-analysis", "rdp")):
        assert main(["release", "--allow-noisy", *args, "--out", str(env / "rel")]) == 2
        assert "--mechanism functional only" in capsys.readouterr().err
    assert not (env / "rel").exists()


FOREIGN = [(("--lengthscales", "1", "2"), "posterior-sample-tuned"), (("--gamma", "0.1"), "posterior-sample-tuned"),
           (("--noise-std", "0.1"), "sparse-gp"), (("--inducing", "9"), "sparse-gp"), (("--noise-bound", "0.1"), "functional")]


@pytest.mark.parametrize("args, owner, mechanism", [
    (args, owner, m) for args, owner in FOREIGN
    for m in ("posterior-sample", "functional", "sparse-gp", "posterior-sample-tuned") if m != owner])
def test_an_option_of_another_mechanism_is_refused_before_anything(env, capsys, args, owner, mechanism):
    assert main(["release", "--mechanism", mechanism, "--allow-noisy", *args, "--out", str(env / "rel")]) == 2
    err = capsys.readouterr().err
    assert f"--mechanism {owner} only" in err and len(err.strip().splitlines()) == 1
    assert not (env / "rel").exists()
    led = env / "ledger.sqlite"
    assert not led.exists() or Ledger(led).entries() == []
