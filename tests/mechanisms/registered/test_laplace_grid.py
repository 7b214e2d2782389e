"""The Laplace noisy grid (privgp.mechanisms.registered.laplace_grid): its L1 sensitivity found by an
adversarial search, the noise it adds, and the whole command through the registry (release, certificate,
verify, a tampered setting, a foreign option)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.cli.main import main
from privgp.mechanisms.interface import get, registry
from privgp.mechanisms.registered.grid import cell_statistics
from privgp.mechanisms.registered.laplace_grid import L1_SENSITIVITY, plan_laplace_grid
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box

IDENTITY = ResponseMap(0.0, 1.0)
BOX = Box((0.0, 0.0), (3.0, 2.0))


def _stats(plan, X, y):
    s, c = cell_statistics(plan.domain, plan.cells, X, y)
    return np.concatenate([s.ravel(), c.ravel()])


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 30), st.integers(1, 10), st.integers(0, 2**32 - 1))
def test_l1_change_of_one_replaced_record_is_at_most_four(n, cells, seed):
    rng = np.random.default_rng(seed)
    plan = plan_laplace_grid(n, BOX, IDENTITY, epsilon=1.0, cells=cells)
    X = BOX.lower + rng.random((n, 2)) * BOX.widths
    y = rng.uniform(-1, 1, n)
    X2, y2 = X.copy(), y.copy()
    i = rng.integers(n)
    X2[i] = BOX.lower + rng.random(2) * BOX.widths
    y2[i] = rng.choice([-1.0, 1.0, rng.uniform(-1, 1)])
    assert np.abs(_stats(plan, X, y) - _stats(plan, X2, y2)).sum() <= L1_SENSITIVITY + 1e-12


def test_the_worst_replacement_attains_four():
    plan = plan_laplace_grid(3, BOX, IDENTITY, epsilon=1.0, cells=3)
    X = np.array([[0.2, 0.2], [1.5, 1.0], [2.8, 1.8]])
    y = np.array([1.0, 0.3, -0.2])
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [2.9, 1.9], -1.0        # another cell, opposite extreme response
    assert np.abs(_stats(plan, X, y) - _stats(plan, X2, y2)).sum() == pytest.approx(L1_SENSITIVITY)


def test_noise_is_laplace_of_scale_four_over_epsilon():
    plan = plan_laplace_grid(200, BOX, IDENTITY, epsilon=2.0, cells=20)
    assert plan.scale == 2.0 and plan.event.epsilon == 2.0 and plan.certificate.epsilon <= 2.0
    rng = np.random.default_rng(1)
    X = BOX.lower + rng.random((200, 2)) * BOX.widths
    y = rng.uniform(-1, 1, 200)
    truth = _stats(plan, X, y)
    noise = np.concatenate([np.concatenate([r.statistics["sums"].ravel(), r.statistics["counts"].ravel()]) - truth
                            for r in (plan.draw(X, y, rng) for _ in range(40))])
    # Laplace(b): mean |noise| = b, sd b sqrt(2); 40 x 2 x 260 values give the mean to about 0.4%
    assert np.mean(np.abs(noise)) == pytest.approx(plan.scale, rel=0.03)
    assert np.std(noise) == pytest.approx(plan.scale * np.sqrt(2), rel=0.05)


def test_registered_and_released_verified_by_the_command(tmp_path, capsys):
    assert "laplace-grid" in registry() and get("laplace-grid").in_utility_study
    args = ["release", "--mechanism", "laplace-grid", "--epsilon", "20", "--bandwidth", "0.5", "--seed", "3",
            "--ledger", str(tmp_path / "ledger.sqlite"), "--budget-epsilon", "50", "--json"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["mechanism"] == "laplace-grid" and summary["laplace_scale"] == 0.2
    cert = tmp_path / "out" / "certificate.json"
    assert main(["verify", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    doc["public_settings"]["laplace_scale"] = 0.1                  # claim less noise than was added
    cert.write_text(json.dumps(doc))
    assert main(["verify", str(cert)]) == 1
    assert main([*args, "--r", "2", "--out", str(tmp_path / "other")]) == 2   # an option of another mechanism
    assert "--r must be used with --mechanism" in capsys.readouterr().err and not (tmp_path / "other").exists()
