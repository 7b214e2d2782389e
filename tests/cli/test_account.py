"""`privgp account --mechanism NAME`: for every registered mechanism, the certificate its release would carry,
computed from public settings by the same plan function (privgp.plan), before any data is read."""
from __future__ import annotations

import json

import pytest

import privgp
from privgp.cli.main import main
from privgp.mechanisms.interface import registry
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box

EXTRA = {"posterior-sample-tuned": {"lengthscales": [0.2, 0.5]}}


@pytest.mark.parametrize("name", [n for n in registry()])
def test_account_prints_the_certificate_of_the_planned_release(name, capsys):
    extra = EXTRA.get(name, {})
    flags = [f for k, vals in extra.items() for f in (f"--{k}", *map(str, vals))]
    assert main(["account", "--mechanism", name, "--n", "400", "--box", "0", "2", "0", "1", "--epsilon", "3",
                 "--grid", "41", *flags, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    plan = privgp.plan(name, 400, Box((0.0, 0.0), (2.0, 1.0)), ResponseMap(0.0, 1.0), epsilon=3.0, grid=41, **extra)
    assert doc["epsilon"] == plan.certificate.epsilon <= 3.0 and doc["delta"] == plan.certificate.delta
    assert doc["event"] == json.loads(json.dumps(plan.event.to_dict()))


def test_account_refuses_an_unknown_mechanism_and_a_foreign_option(capsys):
    assert main(["account", "--mechanism", "nope", "--n", "10", "--epsilon", "1"]) == 2
    err = capsys.readouterr().err  # the same one line as privgp release's: argparse lists the choices
    assert "argument --mechanism: invalid choice: 'nope'" in err and "'laplace-grid'" in err and err.count("\n") == 1
    assert main(["account", "--mechanism", "grid", "--n", "10", "--epsilon", "1", "--sigma", "2"]) == 2
    assert "--sigma must be used with --mechanism posterior-sample" in capsys.readouterr().err


def test_account_names_a_pure_bound_and_a_large_n_delta(capsys):
    """Walk-through 16: the calculator printed (eps, 0.01) for n = 1000 without a word (a release report gives no word
    of strength above n delta = 0.01), and did not say that a Laplace grid's bound needs no delta."""
    assert main(["account", "--mechanism", "laplace-grid", "--n", "1000", "--epsilon", "2", "--delta", "0.01"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "pure 2-DP: the bound holds with delta = 0 too" in out
    assert any(ln.startswith("warning: n * delta = 10 is above 0.01") for ln in out)
    assert main(["account", "--mechanism", "laplace-grid", "--n", "1000", "--epsilon", "2"]) == 0
    out = capsys.readouterr().out
    assert "warning" not in out and "pure 2-DP" in out                  # default delta: 1e-6, n delta = 1e-3
    assert main(["account", "--n", "1000", "--kernel", "exponential", "--lengthscale", "0.2", "--r", "1", "--sigma",
                 "1", "--delta", "1e-4"]) == 0
    out = capsys.readouterr().out
    assert "warning: n * delta = 0.1 is above 0.01" in out and "pure" not in out
    assert main(["account", "--mechanism", "laplace-grid", "--n", "1000", "--epsilon", "2", "--delta", "0.01",
                 "--json"]) == 0
    json.loads(capsys.readouterr().out)                                 # --json unchanged: one JSON object


def test_account_plans_without_a_memory_limit(capsys):
    """Walk-through 17: the calculator reads no records, yet n = 3e8 was refused on a memory estimate of them (and
    named --memory-limit, which account does not have)."""
    assert main(["account", "--mechanism", "laplace-grid", "--n", "300000000", "--box", "0", "10", "0", "5",
                 "--epsilon", "1"]) == 0
    assert "records planned as laplace-grid" in capsys.readouterr().out
