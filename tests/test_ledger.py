"""The privacy-budget ledger: composition, exhaustion, atomic charging under concurrency, crashes."""
from __future__ import annotations

import math
import multiprocessing as mp
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from privgp.errors import BudgetExceededError, DataError, InvalidParameterError
from privgp.ledger import Ledger

DELTA = 1e-3


def gaussian_rdp(rho):
    """RDP curve of a Gaussian mechanism with rho = Delta^2 / (2 s^2): alpha -> rho * alpha."""
    return lambda a: rho * np.asarray(a, dtype=float)


def eps_continuous(rho_total, delta):
    """Independent reference: min over real alpha > 1 of the improved conversion (Canonne et al.
    2020, Prop. 12) of the curve rho_total * alpha, by scipy's bounded scalar search on log(alpha-1)."""
    def f(u):
        a = 1.0 + math.exp(u)
        return rho_total * a + math.log((a - 1) / a) + (math.log(1 / delta) - math.log(a)) / (a - 1)
    res = minimize_scalar(f, bounds=(-9.0, 11.0), method="bounded", options={"xatol": 1e-10})
    return max(res.fun, 0.0)


def test_composition_matches_continuous_optimum(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    fp = led.fingerprint("d")
    rho = 0.05
    for k in range(1, 5):
        c = led.charge(fp, gaussian_rdp(rho), epsilon=1.0, delta=DELTA, budget_epsilon=100.0, budget_delta=DELTA)
        ref = eps_continuous(k * rho, DELTA)
        # the grid minimum is an upper bound of the continuous one, and close to it (orders 5% apart)
        assert c.spent_after.epsilon >= ref - 1e-9
        assert c.spent_after.epsilon <= ref * 1.002
        assert c.spent_after.entries == k


def test_budget_exhaustion_refuses_and_changes_nothing(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    fp = led.fingerprint("d")
    rho = 0.1
    e2, e3 = eps_continuous(2 * rho, DELTA), eps_continuous(3 * rho, DELTA)
    budget = 0.5 * (e2 + e3)
    assert e2 * 1.002 < budget < e3  # two fit, three do not (the grid only adds < 0.2 %)
    for _ in range(2):
        led.charge(fp, gaussian_rdp(rho), epsilon=1.0, delta=DELTA, budget_epsilon=budget, budget_delta=DELTA)
    before = led.dataset(fp)
    with pytest.raises(BudgetExceededError, match="over its budget"):
        led.charge(fp, gaussian_rdp(rho), epsilon=1.0, delta=DELTA)
    after = led.dataset(fp)
    assert len(led.entries(fp)) == 2
    assert after.spent == before.spent
    assert after.spent.epsilon <= budget


def test_refused_first_release_records_no_dataset(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(BudgetExceededError):
        led.charge(led.fingerprint("d"), gaussian_rdp(5.0), epsilon=30.0, delta=DELTA,
                   budget_epsilon=1.0, budget_delta=DELTA)
    assert led.datasets() == [] and led.entries() == []


def test_budget_is_fixed_when_first_charged(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    fp = led.fingerprint("d")
    led.charge(fp, gaussian_rdp(0.01), epsilon=0.5, delta=DELTA, budget_epsilon=3.0, budget_delta=DELTA)
    with pytest.raises(InvalidParameterError, match="budget_epsilon"):
        led.charge(fp, gaussian_rdp(0.01), epsilon=0.5, delta=DELTA, budget_epsilon=30.0)
    led.charge(fp, gaussian_rdp(0.01), epsilon=0.5, delta=DELTA, budget_epsilon=3.0, budget_delta=DELTA)
    assert len(led.entries(fp)) == 2
    with pytest.raises(InvalidParameterError, match="budget_delta"):
        led.charge(led.fingerprint("other"), gaussian_rdp(0.01), epsilon=0.5, delta=DELTA)


def test_datasets_are_separate(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    a, b = led.fingerprint("a"), led.fingerprint("b")
    led.charge(a, gaussian_rdp(0.1), epsilon=1.0, delta=DELTA, budget_epsilon=2.0, budget_delta=DELTA)
    led.charge(b, gaussian_rdp(0.1), epsilon=1.0, delta=DELTA, budget_epsilon=2.0, budget_delta=DELTA)
    assert [d.spent.entries for d in led.datasets()] == [1, 1]


def test_bad_curves_are_rejected(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    fp = led.fingerprint("d")
    kw = dict(epsilon=1.0, delta=DELTA, budget_epsilon=2.0, budget_delta=DELTA)
    for bad in (lambda a: np.full_like(a, np.nan), lambda a: -a, lambda a: np.full_like(a, np.inf)):
        with pytest.raises(InvalidParameterError):
            led.charge(fp, bad, **kw)
    with pytest.raises(InvalidParameterError):
        led.charge(fp, np.ones(3), **kw)
    assert led.entries() == []


def test_curves_beyond_alpha_max_are_infinite_not_zero(tmp_path):
    """A curve that is +inf beyond its alpha_max must only use orders below it."""
    led = Ledger(tmp_path / "l.sqlite")
    fp = led.fingerprint("d")
    amax = 3.0
    curve = lambda a: np.where(a < amax, 0.2 * a, np.inf)  # noqa: E731
    c = led.charge(fp, curve, epsilon=1.0, delta=DELTA, budget_epsilon=50.0, budget_delta=DELTA)
    assert c.spent_after.alpha < amax
    grid = np.linspace(1.0 + 1e-9, amax - 1e-9, 200001)
    a = grid
    ref = np.min(0.2 * a + np.log((a - 1) / a) + (np.log(1 / DELTA) - np.log(a)) / (a - 1))
    assert ref - 1e-9 <= c.spent_after.epsilon <= ref * 1.002


def test_fingerprint_is_keyed_and_stable(tmp_path):
    a, b = Ledger(tmp_path / "a.sqlite"), Ledger(tmp_path / "b.sqlite")
    digest = "0" * 64
    assert a.fingerprint(digest) != b.fingerprint(digest)
    assert Ledger(tmp_path / "a.sqlite").fingerprint(digest) == a.fingerprint(digest)
    assert a.fingerprint(digest) != digest and len(a.fingerprint(digest)) == 64


def test_not_a_ledger(tmp_path):
    p = tmp_path / "junk.sqlite"
    p.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DataError):
        Ledger(p)
    with pytest.raises(InvalidParameterError):
        Ledger(tmp_path)


@settings(max_examples=25)
@given(st.lists(st.floats(0.001, 2.0), min_size=1, max_size=5))
def test_composition_is_additive_and_order_free(rhos):
    with tempfile.TemporaryDirectory() as d:
        led = Ledger(Path(d) / "l.sqlite")
        one, many, rev = led.fingerprint("one"), led.fingerprint("many"), led.fingerprint("rev")
        kw = dict(epsilon=1.0, delta=DELTA, budget_epsilon=1e9, budget_delta=DELTA)
        led.charge(one, gaussian_rdp(sum(rhos)), **kw)
        spent = []
        for rho in rhos:
            spent.append(led.charge(many, gaussian_rdp(rho), **kw).spent_after.epsilon)
        for rho in reversed(rhos):
            led.charge(rev, gaussian_rdp(rho), **kw)
        s = {x.fingerprint: x.spent.epsilon for x in led.datasets()}
        assert s[many] == pytest.approx(s[one], rel=1e-12)
        assert s[rev] == pytest.approx(s[one], rel=1e-12)
        assert all(np.diff(spent) >= 0)


# -- concurrency ------------------------------------------------------------------------------

def _charge_worker(path, barrier, rho, budget, queue):
    led = Ledger(path)
    fp = led.fingerprint("shared-dataset")
    barrier.wait()
    try:
        c = led.charge(fp, gaussian_rdp(rho), epsilon=1.0, delta=DELTA, budget_epsilon=budget, budget_delta=DELTA)
        queue.put(("ok", c.entry_id))
    except BudgetExceededError:
        queue.put(("refused", None))
    except Exception as exc:  # pragma: no cover - reported to the parent
        queue.put(("error", repr(exc)))


def test_concurrent_charges_never_exceed_the_budget(tmp_path):
    path = tmp_path / "l.sqlite"
    Ledger(path)  # create the file first
    rho = 0.1
    budget = 0.5 * (eps_continuous(2 * rho, DELTA) + eps_continuous(3 * rho, DELTA))  # two fit
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    nproc = 6
    barrier, queue = ctx.Barrier(nproc), ctx.Queue()
    procs = [ctx.Process(target=_charge_worker, args=(str(path), barrier, rho, budget, queue)) for _ in range(nproc)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert [r for r in results if r[0] == "error"] == []
    assert sum(r[0] == "ok" for r in results) == 2
    led = Ledger(path)
    assert len(led.entries()) == 2
    assert led.datasets()[0].spent.epsilon <= budget


# -- crashes ----------------------------------------------------------------------------------

def _run_crashing(path: Path, patch: str) -> int:
    script = textwrap.dedent(f"""
        import os
        import numpy as np
        import privgp.ledger as L
        {patch}
        led = L.Ledger({str(path)!r})
        led.charge(led.fingerprint("d"), lambda a: 0.1 * np.asarray(a), epsilon=1.0, delta={DELTA},
                   budget_epsilon=5.0, budget_delta={DELTA})
        os._exit(17)  # crash after the charge, before any output or completion
    """)
    return subprocess.run([sys.executable, "-c", script], timeout=120).returncode


def test_crash_after_charge_keeps_the_charge(tmp_path):
    path = tmp_path / "l.sqlite"
    assert _run_crashing(path, "") == 17
    led = Ledger(path)
    (entry,) = led.entries()
    assert entry.status == "charged" and entry.completed is None
    assert led.datasets()[0].spent.entries == 1 and led.datasets()[0].spent.epsilon > 0
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    led.complete(entry.id)
    assert led.entries()[0].status == "completed"


def test_crash_inside_the_transaction_rolls_back(tmp_path):
    """A process killed while holding the write lock leaves no partial entry and no lock."""
    path = tmp_path / "l.sqlite"
    patch = ("orig = L.Ledger._compose\n"
             "def boom(self, rdps, delta):\n"
             "    if len(rdps) == 1: os._exit(23)\n"
             "    return orig(self, rdps, delta)\n"
             "L.Ledger._compose = boom\n")
    patch = textwrap.indent(patch, "        ").lstrip()
    assert _run_crashing(path, patch) == 23
    led = Ledger(path, timeout=5.0)
    assert led.entries() == [] and led.datasets() == []
    c = led.charge(led.fingerprint("d"), gaussian_rdp(0.1), epsilon=1.0, delta=DELTA,
                   budget_epsilon=5.0, budget_delta=DELTA)
    assert c.spent_after.entries == 1


def test_ledger_show_does_not_create_a_ledger(tmp_path, capsys):
    from privgp.cli.main import main

    path = tmp_path / "none.sqlite"
    assert main(["ledger", "show", "--ledger", str(path)]) == 0
    assert "no ledger" in capsys.readouterr().out and not path.exists()
    led = Ledger(path)
    led.charge(led.fingerprint("d"), gaussian_rdp(0.1), epsilon=1.0, delta=DELTA, budget_epsilon=5.0,
               budget_delta=DELTA, description="test release")
    assert main(["ledger", "show", "--ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 dataset(s), 1 release(s)" in out and "test release" in out and "charged" in out
