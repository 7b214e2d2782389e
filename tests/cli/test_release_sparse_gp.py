"""`privgp release --mechanism sparse-gp` end to end (in-process): files, certificate, ledger, bad input."""
from __future__ import annotations

import json

import numpy as np
import pytest

from privgp.accounting import PrivacyCertificate
from privgp.cli.main import main
from privgp.ledger import Ledger


def run(tmp_path, *args):
    return main(["release", "--mechanism", "sparse-gp", "--allow-noisy", "--ledger", str(tmp_path / "l.sqlite"), *args])


def test_embedded_release(tmp_path, capsys):
    assert run(tmp_path, "--out", str(tmp_path / "out"), "--seed", "1", "--epsilon", "3", "--json") == 0
    s = json.loads(capsys.readouterr().out)
    assert s["mechanism"] == "sparse-gp" and s["epsilon"] <= 3.0 and s["inducing_points"] == 40
    files = {p.name for p in (tmp_path / "out").iterdir()}
    assert files == {"prediction.npz", "prediction.csv", "inducing.csv", "prediction.png", "certificate.json", "report.html"}
    report = (tmp_path / "out" / "report.html").read_text()
    assert "sparse-gp" in report
    # picture format 6: its sd is the model's predictive one, not the privacy noise's alone (walk-through 21)
    assert "the model&#x27;s predictive one" in report and "privacy noise&#x27;s only" not in report
    doc = json.loads((tmp_path / "out" / "certificate.json").read_text())
    cert = PrivacyCertificate.from_dict(doc["certificate"])
    assert cert.event.kind == "zcdp"   # exact discrete noise on lattice statistics (sparse_gp_lattice)
    assert doc["public_settings"]["noise"] == "discrete-gaussian" and len(doc["public_settings"]["lattice"]["steps"]) == 3
    assert cert.recompute().epsilon == cert.epsilon <= 3.0
    assert str(tmp_path) not in (tmp_path / "out" / "certificate.json").read_text()
    (entry,) = Ledger(tmp_path / "l.sqlite").entries()
    assert entry.event == cert.event.to_dict() and entry.status == "completed"
    pred = np.loadtxt(tmp_path / "out" / "prediction.csv", delimiter=",", skiprows=1)
    assert pred.shape == (121 * 73, 6) and np.all(pred[:, 3] >= 0)


def test_csv_1d_release_and_bad_input(tmp_path, capsys):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, 300)
    z = np.sin(x) + 0.2 * rng.standard_normal(300)
    (tmp_path / "d.csv").write_text("x,response\n" + "\n".join(f"{a:.17g},{b:.17g}" for a, b in zip(x, z)) + "\n")
    common = ["--data", str(tmp_path / "d.csv"), "--box", "0", "10", "--threshold", "0", "--clip", "1.5",
              "--kernel", "squared_exponential", "--lengthscale", "1.5", "--epsilon", "10", "--grid", "101"]
    assert run(tmp_path, *common, "--out", str(tmp_path / "o1"), "--inducing", "21", "--noise-ratio",
               "min-sensitivity", "--s2", "paper") == 0
    out = capsys.readouterr().out
    assert "21 inducing inputs" in out and "S_2 paper" in out
    pred = np.loadtxt(tmp_path / "o1" / "prediction.csv", delimiter=",", skiprows=1)
    truth = np.clip(np.sin(pred[:, 0]), -1.5, 1.5) / 1.5
    assert np.sqrt(np.mean((pred[:, 1] - truth) ** 2)) < 0.3
    # posterior-sample options, impossible R_k rules and bad numbers: exit 2, nothing written or charged
    for extra in (["--L", "2"], ["--sigma", "0.5"], ["--r", "1"], ["--noise-ratio", "x"], ["--noise-std", "-1"],
                  ["--inducing", "0"]):
        assert run(tmp_path, *common, "--out", str(tmp_path / "bad"), *extra) == 2, extra
        assert not (tmp_path / "bad").exists()
    assert len(Ledger(tmp_path / "l.sqlite").entries()) == 1


@pytest.mark.parametrize("bound", ["trivial", "separation", "grid-1d", "grid-1d-printed"])
def test_kernel_bound_rules_in_1d(tmp_path, bound, capsys):
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, 50)
    (tmp_path / "d.csv").write_text("x,response\n" + "\n".join(f"{a:.17g},{a:.17g}" for a in x) + "\n")
    assert run(tmp_path, "--data", str(tmp_path / "d.csv"), "--box", "0", "1", "--threshold", "0.5", "--clip", "1",
               "--grid", "21", "--kernel-bound", bound, "--out", str(tmp_path / "o"), "--json") == 0
    assert json.loads(capsys.readouterr().out)["kernel_bound"] == bound


def test_no_refusal_depends_on_where_the_records_lie(tmp_path, capsys):
    """The plan's inducing inputs are a grid over the public box: a record that happens to sit on the only inducing
    input (the box centre) must not refuse the release (that refusal would depend on the private records); a caller's
    own Z that is all training inputs is still refused by the library."""
    from privgp.errors import InvalidParameterError
    from privgp.mechanisms.sparse_gp import fit_sparse_gp, sparse_gp_spec

    rng = np.random.default_rng(2)
    x = np.concatenate([[5.0], rng.uniform(0, 10, 99)])
    z = np.sin(x)
    (tmp_path / "d.csv").write_text("x,response\n" + "\n".join(f"{a:.17g},{b:.17g}" for a, b in zip(x, z)) + "\n")
    assert run(tmp_path, "--data", str(tmp_path / "d.csv"), "--box", "0", "10", "--threshold", "0", "--clip", "1",
               "--inducing", "1", "--out", str(tmp_path / "o")) == 0
    X = x[:, None]
    spec = sparse_gp_spec(X[:5], response_bound=1.0, lengthscale=1.0)
    with pytest.raises(InvalidParameterError, match="inducing_points"):
        fit_sparse_gp(X, z, spec, noise_std=0.5, epsilon=1.0, delta=1e-5, rng=rng)


def test_memory_is_estimated_before_the_inducing_inputs_are_built(tmp_path, capsys):
    """--inducing 100000 in 2-D (6e9 inducing inputs) ended in a MemoryError traceback (or ran for minutes)."""
    assert run(tmp_path, "--out", str(tmp_path / "o"), "--inducing", "100000") == 2
    err = capsys.readouterr().err
    assert err.startswith("privgp: error: memory must be at most the limit") and "6000000000 inducing" in err
    assert not (tmp_path / "o").exists() and not (tmp_path / "l.sqlite").exists()
