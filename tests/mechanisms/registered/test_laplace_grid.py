"""The Laplace noisy grid (privgp.mechanisms.registered.laplace_grid): its L1 sensitivity found by an
adversarial search, the noise it adds, and the whole command through the registry (release, certificate,
verify, a tampered setting, a foreign option)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from privgp.cli.main import main
from privgp.errors import InvalidParameterError
from privgp.mechanisms.discrete_noise import discrete_laplace_pmf
from privgp.mechanisms.interface import get, registry
from privgp.mechanisms.registered.grid import cell_statistics
from privgp.mechanisms.registered.laplace_grid import L1_SENSITIVITY, lattice, plan_laplace_grid
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box
from tests.mechanisms.registered.neighbours import released_counts_of_a_moved_record, replaced_neighbour

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


def test_noise_is_discrete_laplace_of_scale_four_plus_lattice_over_epsilon():
    plan = plan_laplace_grid(200, BOX, IDENTITY, epsilon=2.0, cells=20)
    g = plan.lattice
    k, T = lattice(2.0, 200)
    assert g == 2.0 ** -k and plan.scale == T * g and (4 + 4 * g) / 2.0 <= plan.scale <= (4 + 4 * g) / 2.0 + g
    assert plan.l1_sensitivity / plan.scale <= 2.0 and plan.event.epsilon == 2.0 and plan.certificate.epsilon <= 2.0
    rng = np.random.default_rng(1)
    X = BOX.lower + rng.random((200, 2)) * BOX.widths
    y = rng.uniform(-1, 1, 200)
    s0, c0 = cell_statistics(plan.domain, plan.cells, X, y)
    draws = [plan.draw(X, y, rng).statistics for _ in range(40)]
    sums_noise = np.concatenate([d["sums"].ravel() for d in draws]) - np.tile(np.rint(s0.ravel() / g) * g, 40)
    counts_noise = np.concatenate([d["counts"].ravel() for d in draws]) - np.tile(c0.ravel(), 40)
    # integers and lattice multiples: nothing below the lattice is released (red team 21)
    assert np.array_equal(counts_noise, np.rint(counts_noise))
    assert np.array_equal(sums_noise / g, np.rint(sums_noise / g))
    # the sums' noise: T = 2^24..2^25 lattice steps, the continuous law to ~1e-7: mean |noise| = b, sd b sqrt(2)
    assert np.mean(np.abs(sums_noise)) == pytest.approx(plan.scale, rel=0.05)
    assert np.std(sums_noise) == pytest.approx(plan.scale * np.sqrt(2), rel=0.07)
    # the counts' noise: the discrete law of scale b, exactly (chi-square against its pmf)
    values = np.arange(-8, 9)
    expected = discrete_laplace_pmf(values, plan.scale) * counts_noise.size
    observed = np.array([np.sum(counts_noise == z) for z in values])
    tail_e, tail_o = counts_noise.size - expected.sum(), counts_noise.size - observed.sum()
    assert chisquare(np.append(observed, tail_o), np.append(expected, tail_e)).pvalue > 1e-4


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 30), st.integers(1, 10), st.floats(0.01, 1e4), st.integers(0, 2**32 - 1))
def test_the_released_integers_change_by_at_most_the_stated_l1_sensitivity(n, cells, epsilon, seed):
    """The discrete release's private integers (lattice sums, counts) move by at most l1_sensitivity / g resp. in
    y units at most 4 + 4 g under one replacement, which the scale pays for: ratio of the laws <= e^epsilon."""
    rng = np.random.default_rng(seed)
    plan = plan_laplace_grid(n, BOX, IDENTITY, epsilon=epsilon, cells=cells)
    g = plan.lattice
    X, y, X2, y2 = replaced_neighbour(rng, BOX, n)

    def released_integers(X_, y_):
        s, c = cell_statistics(plan.domain, plan.cells, X_, y_)
        return np.rint(np.ldexp(s, plan.lattice_exponent)).ravel(), c.ravel()

    (s1, c1), (s2, c2) = released_integers(X, y), released_integers(X2, y2)
    loss = (np.abs(s1 - s2).sum() * g + np.abs(c1 - c2).sum()) / plan.scale     # the privacy loss at any output
    assert loss <= plan.l1_sensitivity / plan.scale <= epsilon


def test_the_low_bits_no_longer_tell_a_record_apart():
    """Red team 21's attack (Mironov 2012): with float noise, a released count in (-0.5, 0.5) was a multiple of
    2^-53 exactly when the cell held a record; it is now always the integer 0, in both neighbouring datasets."""
    plan = plan_laplace_grid(211, Box.unit(2), IDENTITY, epsilon=5.0, cells=8, grid=5)   # a small map: fast draws
    rng = np.random.default_rng(5)
    for out in released_counts_of_a_moved_record(plan, 400, rng):
        near = out[np.abs(out) < 0.5]
        assert near.size > 30 and np.all(near == 0.0)   # about 54% (no record) resp. 15% (one) of the draws
    legacy = plan_laplace_grid(211, Box.unit(2), IDENTITY, epsilon=5.0, cells=8, grid=5, _noise="float")
    out = released_counts_of_a_moved_record(legacy, 200, rng)[0]
    assert np.any((np.abs(out) < 0.5) & (out != 0))    # what the old float noise released (the test can fail)


def test_registered_and_released_verified_by_the_command(tmp_path, capsys):
    assert "laplace-grid" in registry() and get("laplace-grid").in_utility_study
    args = ["release", "--mechanism", "laplace-grid", "--epsilon", "20", "--bandwidth", "0.5", "--seed", "3",
            "--ledger", str(tmp_path / "ledger.sqlite"), "--budget-epsilon", "50", "--json"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    summary = json.loads(capsys.readouterr().out)
    k, T = lattice(20.0, 300)
    assert summary["mechanism"] == "laplace-grid" and summary["laplace_scale"] == T * 2.0 ** -k >= 0.2
    cert = tmp_path / "out" / "certificate.json"
    assert main(["verify", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    doc["public_settings"]["laplace_scale"] = 0.1                  # claim less noise than was added
    cert.write_text(json.dumps(doc))
    assert main(["verify", str(cert)]) == 1
    assert main([*args, "--r", "2", "--out", str(tmp_path / "other")]) == 2   # an option of another mechanism
    assert "--r must be used with --mechanism" in capsys.readouterr().err and not (tmp_path / "other").exists()


def test_a_float_noise_plan_is_refused_before_the_charge(tmp_path):
    """Red team 22: dataclasses.replace(plan, noise="float", ...) matched its own rebuild (a certificate without a
    noise setting rebuilds as one of before 2026-11-26) and was charged and released with float noise."""
    import dataclasses

    import privgp

    plan = privgp.plan("laplace-grid", 40, Box.unit(2), IDENTITY, epsilon=1.0)
    rng = np.random.default_rng(0)
    records = privgp.records(rng.random((40, 2)), rng.uniform(-1, 1, 40))
    ledger = privgp.Ledger(tmp_path / "l.sqlite")
    for bad in (dataclasses.replace(plan, noise="float", scale=4.0, lattice_exponent=0, lattice_steps=0),
                plan_laplace_grid(40, Box.unit(2), IDENTITY, epsilon=1.0, _noise="float")):
        with pytest.raises(InvalidParameterError, match="discrete-laplace noise"):
            privgp.release(bad, records, ledger, rng, budget_epsilon=10, allow_noisy=True)
    assert ledger.entries() == []


def test_verify_refuses_released_statistics_off_the_lattice_or_with_negative_zeros(tmp_path, capsys):
    from tests.cli_scratch import rehash_and_verify

    out = tmp_path / "out"
    assert main(["release", "--mechanism", "laplace-grid", "--epsilon", "1", "--allow-noisy", "--seed", "4",
                 "--ledger", str(tmp_path / "l.sqlite"), "--out", str(out)]) == 0
    arrays = dict(np.load(out / "field.npz"))
    for key, edit in (("released_counts", lambda a: np.where(a == 0, -0.0, a)),      # a bit per zero cell
                      ("released_counts", lambda a: a + 0.5),
                      ("released_sums", lambda a: a + 2.0 ** -40),
                      ("released_sums", lambda a: np.where(a == 0, -0.0, a + 0.0 * a))):
        edited = dict(arrays)
        edited[key] = edit(arrays[key])
        if np.array_equal(np.signbit(edited[key]), np.signbit(arrays[key])) and np.array_equal(edited[key], arrays[key]):
            continue   # no zero to flip in this draw
        np.savez(out / "field.npz", **edited)
        code, res = rehash_and_verify(out, capsys, "--strict")
        assert code == 1 and res["field"] == f"field.npz.{key}", (key, res)
    np.savez(out / "field.npz", **arrays)
    code, res = rehash_and_verify(out, capsys, "--strict")
    assert code == 0, res


def test_a_release_drawn_with_float_noise_is_not_verified(capsys):
    """Walk-through 17: README's main release as privgp wrote it before 2026-11-26 (float Laplace noise; its
    certificate, committed at fe0a8f4^ in docs/runs/release-default) was VERIFIED with a note and exit 0, although
    its epsilon does not hold (red team 21). Now NOT VERIFIED, naming the noise, for both float grids."""
    from pathlib import Path

    from privgp.cli.release_publish import CertificateMismatch
    from privgp.mechanisms.registered.grid import plan_grid

    cert = Path(__file__).resolve().parents[2] / "data" / "float_noise_certificates" / "laplace_grid.json"
    assert json.loads(cert.read_text())["public_settings"].get("noise") is None
    assert main(["verify", str(cert), "--json"]) == 1
    res = json.loads(capsys.readouterr().out)
    assert res["field"] == "public_settings.noise" and "floating point" in res["reason"]
    for plan in (plan_laplace_grid(100, BOX, IDENTITY, epsilon=1.0, _noise="float"),
                 plan_grid(100, BOX, IDENTITY, epsilon=1.0, _noise="float")):
        with pytest.raises(CertificateMismatch, match="its epsilon does not hold"):
            plan.check_verifiable()
    plan_laplace_grid(100, BOX, IDENTITY, epsilon=1.0).check_verifiable()       # discrete: nothing to say
