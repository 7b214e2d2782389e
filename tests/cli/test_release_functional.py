"""`--mechanism functional`: the functional mechanism (posterior mean + c g, seed 002 Thm 4.1) is planned and
accounted (`privgp account`) but not released (its float noise leaks, red team 20f); its options belong to it."""
from __future__ import annotations

import json

import pytest

from privgp.accounting import accountant, event_from_dict
from privgp.accounting.functional_noise import FunctionalEvent, gdp_multiplier
from privgp.cli.main import main
from privgp.ledger import Ledger
from privgp.mechanisms.functional import posterior_mean_sensitivity
from privgp.models.domain import Box


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVGP_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_account_states_the_event_a_functional_release_would_carry(env, capsys):
    """`privgp account --mechanism functional` plans the embedded data's release as `privgp release` planned it before
    2026-11-29: the event is recomputable from public numbers (Delta from the lemma at this n, r, box; c = Delta / mu)."""
    assert main(["account", "--mechanism", "functional", "--n", "211", "--box", "850", "1000", "500", "590",
                 "--epsilon", "5", "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)
    assert cert["mechanism"] == "functional"
    ev = event_from_dict(cert["event"])
    assert isinstance(ev, FunctionalEvent) and cert["method"] == "exact-gdp"
    s = cert["public_settings"]
    assert s["n"] == 211 and s["hyperparameters"] == "calibrated r" and s["multiplier"] <= 0.2
    eps = cert["epsilon"]
    assert eps <= 5.0 and eps == pytest.approx(5.0, rel=1e-8)
    Delta = float(posterior_mean_sensitivity(211, s["r"], kernel="exponential", lengthscale=s["lengthscale"],
                                             domain=Box(tuple(s["domain"]["lower"]), tuple(s["domain"]["upper"]))).value)
    assert ev.sensitivity == pytest.approx(Delta, rel=1e-12)
    assert ev.noise_std == pytest.approx(gdp_multiplier(Delta, 5.0, s["delta"]), rel=1e-9)
    assert accountant.epsilon(ev, s["delta"]).epsilon <= 5.0


@pytest.mark.parametrize("mechanism", ["functional", "discretised-gaussian"])
def test_account_of_a_mechanism_never_released_says_so(mechanism, capsys):
    """The calculator plans it (seed 002's mechanisms), and says on stderr that `privgp release` refuses it; with
    --json the document on stdout is unchanged."""
    args = ["account", "--mechanism", mechanism, "--n", "211", "--box", "0", "1", "0", "1", "--epsilon", "2"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "(2, 1e-06)-DP" in out and err.startswith(f"privgp: note: privgp release refuses --mechanism {mechanism}")
    assert main([*args, "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["mechanism"] == mechanism and "low-order bits" in err
    assert main(["account", "--mechanism", "grid", *args[3:]]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("args", [(), ("--sigma", "0.3"), ("--eta", "0.1"), ("--snap", "-1"), ("--L", "2"),
                                  ("--r", "2", "--noise-bound", "0.1"), ("--noise-bound", "0"), ("--epsilon", "0"),
                                  ("--delta", "2"), ("--r", "-1"), ("--lengthscale", "0"), ("--memory-limit", "0.0001"),
                                  ("--dry-run",)])
def test_a_functional_release_is_refused_whatever_its_options(env, capsys, args):
    """Red team 20f: its float noise leaks (δ ≈ 1 at a certified (5, 1e-6)). Refused before anything is read, with or
    without other faults in the command: exit 2, one line, nothing written or charged."""
    code = main(["release", "--mechanism", "functional", "--allow-noisy", *args, "--out", str(env / "rel")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("privgp: error:") and len(err.strip().splitlines()) == 1, err
    assert "whose certificate holds as computed" in err and "low-order bits" in err, err
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
    for m in ("posterior-sample", "sparse-gp", "posterior-sample-tuned") if m != owner])
def test_an_option_of_another_mechanism_is_refused_before_anything(env, capsys, args, owner, mechanism):
    assert main(["release", "--mechanism", mechanism, "--allow-noisy", *args, "--out", str(env / "rel")]) == 2
    err = capsys.readouterr().err
    assert f"--mechanism {owner} only" in err and len(err.strip().splitlines()) == 1
    assert not (env / "rel").exists()
    led = env / "ledger.sqlite"
    assert not led.exists() or Ledger(led).entries() == []
