"""The privacy-budget ledger: composition, exhaustion, atomic charging under concurrency, crashes."""
from __future__ import annotations

import json
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

from privgp.accounting import ComposedEvent, GaussianEvent, PureDpEvent, TabulatedRdpEvent, ZcdpEvent
from privgp.accounting import epsilon as account_epsilon
from privgp.errors import BudgetExceededError, DataError, InvalidParameterError
from privgp.ledger import Ledger

DELTA = 1e-3


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
        c = led.charge(fp, ZcdpEvent(rho), budget_epsilon=100.0, budget_delta=DELTA)
        ref = eps_continuous(k * rho, DELTA)
        # exact composition over alpha (no grid): the continuous optimum up to the search tolerance
        assert c.spent_after.epsilon >= ref - 1e-9
        assert c.spent_after.epsilon <= ref * (1 + 1e-7)
        assert c.spent_after.entries == k


def test_budget_exhaustion_refuses_and_changes_nothing(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    fp = led.fingerprint("d")
    rho = 0.1
    e2, e3 = eps_continuous(2 * rho, DELTA), eps_continuous(3 * rho, DELTA)
    budget = 0.5 * (e2 + e3)
    assert e2 * (1 + 1e-7) < budget < e3  # two fit, three do not
    for _ in range(2):
        led.charge(fp, ZcdpEvent(rho), budget_epsilon=budget, budget_delta=DELTA)
    before = led.dataset(fp)
    with pytest.raises(BudgetExceededError, match="over its budget"):
        led.charge(fp, ZcdpEvent(rho))
    after = led.dataset(fp)
    assert len(led.entries(fp)) == 2
    assert after.spent == before.spent
    assert after.spent.epsilon <= budget


def test_refused_first_release_records_no_dataset(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(BudgetExceededError):
        led.charge(led.fingerprint("d"), ZcdpEvent(5.0),
                   budget_epsilon=1.0, budget_delta=DELTA)
    assert led.datasets() == [] and led.entries() == []


def test_a_ledger_created_on_charge_writes_nothing_when_refused(tmp_path):
    path = tmp_path / "new" / "l.sqlite"
    led = Ledger(path, create_on_charge=True)
    assert led.datasets() == [] and led.entries() == [] and not path.parent.exists()
    with pytest.raises(BudgetExceededError):
        led.charge(led.fingerprint("d"), ZcdpEvent(5.0), budget_epsilon=1.0, budget_delta=DELTA)
    assert not path.parent.exists()                          # neither the file nor its folder
    fp = led.fingerprint("d")
    c = led.charge(fp, ZcdpEvent(0.01), budget_epsilon=1.0, budget_delta=DELTA)
    # the file now holds the key this object used: every later opening finds the dataset under it
    assert Ledger(path).fingerprint("d") == fp and Ledger(path).dataset(fp).spent.entries == 1 == c.spent_after.entries


def test_a_ledger_created_on_charge_rekeys_for_a_file_created_meanwhile(tmp_path):
    """Two first releases on a missing file: the second to charge finds a file keyed with another secret; it
    records the data under that file's key (the same budget for the same data), and a fingerprint it did not
    compute itself is refused."""
    path = tmp_path / "l.sqlite"
    slow, stranger = Ledger(path, create_on_charge=True), Ledger(path, create_on_charge=True)
    fp_slow = slow.fingerprint("d")
    fast = Ledger(path, create_on_charge=True)
    fast.charge(fast.fingerprint("d"), ZcdpEvent(0.01), budget_epsilon=1.0, budget_delta=DELTA)
    c = slow.charge(fp_slow, ZcdpEvent(0.01), budget_epsilon=1.0, budget_delta=DELTA)
    key = Ledger(path).fingerprint("d")
    assert c.fingerprint == key != fp_slow and c.spent_after.entries == 2
    assert [d.fingerprint for d in Ledger(path).datasets()] == [key]
    with pytest.raises(DataError, match="created by another process"):
        stranger.charge(fp_slow, ZcdpEvent(0.01), budget_epsilon=1.0, budget_delta=DELTA)
    assert len(Ledger(path).entries()) == 2


def test_every_provisional_fingerprint_is_rekeyed_after_another_process_created_the_file(tmp_path):
    """A fingerprint computed before another process created the file, charged again and again (or a second
    dataset's): each charge re-keys it, so the records keep one budget (review of create_on_charge)."""
    path = tmp_path / "l.sqlite"
    led = Ledger(path, create_on_charge=True)
    fp, other = led.fingerprint("B"), led.fingerprint("C")
    Ledger(path)                                             # the file appears, with another secret
    outcomes = []
    for _ in range(5):
        try:
            outcomes.append(led.charge(fp, ZcdpEvent(0.05), budget_epsilon=3.0, budget_delta=1e-6).fingerprint)
        except BudgetExceededError:
            outcomes.append("refused")
    key = Ledger(path).fingerprint("B")
    assert set(outcomes) == {key, "refused"} and outcomes.count(key) == 3   # three fit one budget of 3
    assert led.charge(other, ZcdpEvent(0.05), budget_epsilon=3.0, budget_delta=1e-6).fingerprint == \
        Ledger(path).fingerprint("C")
    assert sorted(d.spent.entries for d in Ledger(path).datasets()) == [1, 3]


def test_an_empty_file_is_a_ledger_created_on_charge(tmp_path):
    path = tmp_path / "l.sqlite"
    path.write_bytes(b"")
    led = Ledger(path, create_on_charge=True)
    with pytest.raises(BudgetExceededError):
        led.charge(led.fingerprint("d"), ZcdpEvent(5.0), budget_epsilon=1.0, budget_delta=DELTA)
    assert path.read_bytes() == b""                          # refused: still empty
    fp = led.fingerprint("d")
    led.charge(fp, ZcdpEvent(0.01), budget_epsilon=1.0, budget_delta=DELTA)
    assert Ledger(path).fingerprint("d") == fp


def test_a_ledger_in_a_folder_that_cannot_be_created_is_refused_when_opened(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DataError, match="is not a folder"):
        Ledger(blocker / "l.sqlite", create_on_charge=True)


def test_a_ledger_that_cannot_be_created_leaves_no_folder(tmp_path):
    led = Ledger(tmp_path / "new1" / "new2" / ("x" * 300), create_on_charge=True)   # a name too long to create
    with pytest.raises(DataError, match="cannot open the privacy ledger"):
        led.charge(led.fingerprint("d"), ZcdpEvent(0.01), budget_epsilon=1.0, budget_delta=DELTA)
    assert list(tmp_path.iterdir()) == []


def test_a_refused_budget_charge_creates_no_file(tmp_path):
    from privgp.ledger import Budget

    path = tmp_path / "l.sqlite"
    budget = Budget(path, epsilon=1.0, delta=DELTA)
    assert budget.spent((np.zeros((2, 1)), np.zeros(2))) is None and not path.exists()
    with pytest.raises(BudgetExceededError):
        budget.charge((np.zeros((2, 1)), np.zeros(2)), ZcdpEvent(5.0))
    assert not path.exists()


def test_budget_is_fixed_when_first_charged(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    fp = led.fingerprint("d")
    led.charge(fp, ZcdpEvent(0.01), budget_epsilon=3.0, budget_delta=DELTA)
    with pytest.raises(InvalidParameterError, match="budget_epsilon"):
        led.charge(fp, ZcdpEvent(0.01), budget_epsilon=30.0)
    led.charge(fp, ZcdpEvent(0.01), budget_epsilon=3.0, budget_delta=DELTA)
    assert len(led.entries(fp)) == 2
    with pytest.raises(InvalidParameterError, match="budget_delta"):
        led.charge(led.fingerprint("other"), ZcdpEvent(0.01))


def test_datasets_are_separate(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    a, b = led.fingerprint("a"), led.fingerprint("b")
    led.charge(a, ZcdpEvent(0.1), budget_epsilon=2.0, budget_delta=DELTA)
    led.charge(b, ZcdpEvent(0.1), budget_epsilon=2.0, budget_delta=DELTA)
    assert [d.spent.entries for d in led.datasets()] == [1, 1]


def test_bad_events_are_rejected_before_anything_is_recorded(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    fp = led.fingerprint("d")
    kw = dict(budget_epsilon=2.0, budget_delta=DELTA)
    for bad in (lambda a: a, np.ones(3), {"type": "zcdp", "rho": 0.1}):
        with pytest.raises(InvalidParameterError, match="event"):
            led.charge(fp, bad, **kw)
    for make in (lambda: ZcdpEvent(math.nan), lambda: ZcdpEvent(-1.0), lambda: GaussianEvent(1.0, 0.0)):
        with pytest.raises(InvalidParameterError):
            make()
    # an event with no finite guarantee at all: refused as a user error, not composed into inf or nan
    leaky = TabulatedRdpEvent((2.0, 3.0), (math.inf, math.inf))
    with pytest.raises(InvalidParameterError, match="finite"):
        led.charge(fp, leaky, **kw)
    assert led.entries() == [] and led.datasets() == []


def test_an_event_no_lemma_covers_is_never_charged(tmp_path):
    """Red team round 11: a posterior-sample event with seed 000's published constants (Delta_n / sqrt(2), NOT
    covered by Lemmas B.1/B.7; for reproducing the paper's numbers only) was charged at its smaller epsilon."""
    from privgp.mechanisms.posterior_sample import posterior_sample_event
    from privgp.models.domain import Box

    kw = dict(kernel="exponential", lengthscale=0.2, domain=Box((0.0,), (1.0,)), L=1)
    published = posterior_sample_event(100, 20.0, 0.5, constants="published", **kw)
    assert not published.covered
    led = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(InvalidParameterError, match="covered by a proven result"):
        led.charge(led.fingerprint("d"), published, budget_epsilon=10.0, budget_delta=DELTA)
    assert led.entries() == [] and led.datasets() == []
    proven = posterior_sample_event(100, 20.0, 0.5, **kw)
    led.charge(led.fingerprint("d"), proven, budget_epsilon=10.0, budget_delta=DELTA)   # the proven one is


def test_curves_beyond_alpha_max_are_infinite_not_zero(tmp_path):
    """A curve that is +inf beyond its largest order must only use orders below it: a tabulated curve
    0.2 alpha known on orders up to 3 (beyond: +inf), composed exactly."""
    led = Ledger(tmp_path / "l.sqlite")
    fp = led.fingerprint("d")
    orders = np.linspace(1.001, 3.0, 4000)
    curve = TabulatedRdpEvent(tuple(orders), tuple(0.2 * orders))
    c = led.charge(fp, curve, budget_epsilon=50.0, budget_delta=DELTA)
    assert c.spent_after.alpha <= 3.0
    a = np.linspace(1.0 + 1e-9, 3.0, 200001)
    ref = np.min(0.2 * a + np.log((a - 1) / a) + (np.log(1 / DELTA) - np.log(a)) / (a - 1))
    assert ref - 1e-9 <= c.spent_after.epsilon <= ref * 1.002


@st.composite
def _events(draw):
    kind = draw(st.sampled_from(["gauss", "zcdp", "pure", "tab"]))
    if kind == "gauss":
        return GaussianEvent(draw(st.floats(0.1, 2.0)), draw(st.floats(0.5, 20.0)))
    if kind == "zcdp":
        return ZcdpEvent(draw(st.floats(1e-4, 0.5)))
    if kind == "pure":
        return PureDpEvent(draw(st.floats(0.01, 1.0)))
    o = np.sort(draw(st.lists(st.floats(1.01, 200.0), min_size=2, max_size=6, unique=True)))
    return TabulatedRdpEvent(tuple(o), tuple(draw(st.floats(0.001, 0.2)) * o))


@settings(max_examples=30, deadline=None)
@given(st.lists(_events(), min_size=1, max_size=6), st.floats(1e-8, 1e-2))
def test_spent_is_the_accountants_epsilon_of_the_composed_event(events, delta):
    """For random sequences of events, the ledger's spent epsilon equals the accountant's epsilon of
    the ComposedEvent, and is never below any single certificate's epsilon at the same delta."""
    with tempfile.TemporaryDirectory() as d:
        led = Ledger(Path(d) / "l.sqlite")
        fp = led.fingerprint("d")
        singles = []
        for ev in events:
            cert_eps = float(account_epsilon(ev, delta).epsilon)
            singles.append(cert_eps)
            led.charge(fp, ev, epsilon=cert_eps, delta=delta, budget_epsilon=1e9, budget_delta=delta)
        spent = led.dataset(fp).spent.epsilon
        composed = events[0] if len(events) == 1 else ComposedEvent.of(events)
        ref = float(account_epsilon(composed, delta).epsilon)
        assert spent == pytest.approx(ref, rel=1e-12) or spent == max(singles)
        assert spent >= max(singles)
        assert spent >= ref


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
        kw = dict(budget_epsilon=1e9, budget_delta=DELTA)   # each entry displays its event's own epsilon
        led.charge(one, ZcdpEvent(sum(rhos)), **kw)
        spent = []
        for rho in rhos:
            spent.append(led.charge(many, ZcdpEvent(rho), **kw).spent_after.epsilon)
        for rho in reversed(rhos):
            led.charge(rev, ZcdpEvent(rho), **kw)
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
        c = led.charge(fp, ZcdpEvent(rho), budget_epsilon=budget, budget_delta=DELTA)
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
        from privgp.accounting import ZcdpEvent
        led.charge(led.fingerprint("d"), ZcdpEvent(0.1), budget_epsilon=5.0, budget_delta={DELTA})
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
    c = led.charge(led.fingerprint("d"), ZcdpEvent(0.1),
                   budget_epsilon=5.0, budget_delta=DELTA)
    assert c.spent_after.entries == 1


def test_ledger_show_does_not_create_a_ledger(tmp_path, capsys):
    from privgp.cli.main import main

    path = tmp_path / "none.sqlite"
    assert main(["ledger", "show", "--ledger", str(path)]) == 0
    assert "no ledger" in capsys.readouterr().out and not path.exists()
    led = Ledger(path)
    led.charge(led.fingerprint("d"), ZcdpEvent(0.1), budget_epsilon=5.0,
               budget_delta=DELTA, description="test release")
    assert main(["ledger", "show", "--ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 dataset(s), 1 release(s); composition rule 'profile'" in out and "test release" in out
    assert "charged" in out
    assert main(["ledger", "show", "--ledger", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["composition"] == "profile"
    # --dataset: a fingerprint prefix or a label; one that matches nothing is an error, not "0 dataset(s)"
    led.charge(led.fingerprint("e"), ZcdpEvent(0.1), budget_epsilon=5.0, budget_delta=DELTA, label="city-sales")
    fp = led.fingerprint("d")
    for key in (fp[:8], "city-sales"):
        assert main(["ledger", "show", "--ledger", str(path), "--dataset", key, "--json"]) == 0
        assert len(json.loads(capsys.readouterr().out)["datasets"]) == 1
    assert main(["ledger", "show", "--ledger", str(path), "--dataset", "zzzz"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("privgp: error: --dataset must be") and len(err.strip().splitlines()) == 1


# -- old files and tampering ------------------------------------------------------------------------

_V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE datasets (fingerprint TEXT PRIMARY KEY, budget_epsilon REAL NOT NULL, budget_delta REAL NOT NULL,
    created TEXT NOT NULL, label TEXT NOT NULL DEFAULT '');
CREATE TABLE entries (id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL REFERENCES datasets(fingerprint),
    created TEXT NOT NULL, completed TEXT, status TEXT NOT NULL CHECK (status IN ('charged', 'completed')),
    epsilon REAL NOT NULL, delta REAL NOT NULL, rdp BLOB NOT NULL, description TEXT NOT NULL DEFAULT '',
    settings TEXT NOT NULL DEFAULT '{}');
"""
_V1_ORDERS = 1.0 + np.logspace(-4.0, 5.0, 451)


def _write_v1(path: Path, rdp_blobs: list[bytes], epsilon=1.0) -> None:
    """A schema-1 ledger file as privgp 0.1 wrote it (RDP curves on a fixed grid of orders)."""
    with sqlite3.connect(path) as con:
        con.executescript(_V1_SCHEMA)
        con.executemany("INSERT INTO meta VALUES (?, ?)", [("schema", "1"), ("orders", _V1_ORDERS.astype("<f8").tobytes()),
                                                          ("conversion", "improved"), ("secret", b"k" * 32)])
        con.execute("INSERT INTO datasets VALUES ('fp', 10.0, ?, '2026-01-01', '')", (DELTA,))
        for i, blob in enumerate(rdp_blobs):
            con.execute("INSERT INTO entries VALUES (?, 'fp', '2026-01-01', NULL, 'completed', ?, ?, ?, 'old', '{}')",
                        (f"e{i}", epsilon, DELTA, blob))


def test_schema_1_ledgers_are_migrated_soundly(tmp_path):
    path = tmp_path / "old.sqlite"
    rho = 0.05
    _write_v1(path, [(rho * _V1_ORDERS).astype("<f8").tobytes()] * 2, epsilon=0.5)
    led = Ledger(path)
    (ds,) = led.datasets()
    # the old grid's own minimum of 2 * rho * alpha, and the continuous optimum below it
    grid = 2 * rho * _V1_ORDERS + np.log((_V1_ORDERS - 1) / _V1_ORDERS) + (np.log(1 / DELTA) - np.log(_V1_ORDERS)) / (_V1_ORDERS - 1)
    assert eps_continuous(2 * rho, DELTA) - 1e-9 <= ds.spent.epsilon <= grid.min() + 1e-9
    assert [e.event["type"] for e in led.entries()] == ["tabulated_rdp"] * 2
    with sqlite3.connect(path) as con:
        assert dict(con.execute("SELECT key, value FROM meta"))["schema"] == "2"
    # charging continues on the migrated file
    led.charge("fp", ZcdpEvent(rho))
    assert led.dataset("fp").spent.entries == 3


def test_corrupt_ledgers_are_reported_never_composed(tmp_path, capsys):
    from privgp.cli.main import main

    bad_blob = tmp_path / "blob.sqlite"
    _write_v1(bad_blob, [b"\x00" * 17])
    with pytest.raises(DataError, match="corrupt"):
        Ledger(bad_blob)
    nan_curve = tmp_path / "nan.sqlite"
    _write_v1(nan_curve, [np.full(_V1_ORDERS.size, np.nan).astype("<f8").tobytes()])
    with pytest.raises(DataError, match="corrupt"):
        Ledger(nan_curve)
    good = tmp_path / "v2.sqlite"
    led = Ledger(good)
    led.charge("fp", ZcdpEvent(0.1), budget_epsilon=5.0, budget_delta=DELTA)
    for sql in ("UPDATE entries SET event = '{\"type\": \"zcdp\", \"rho\": \"nan\"}'",
                "UPDATE entries SET event = 'not json'", "UPDATE entries SET epsilon = 'x'",
                "UPDATE datasets SET budget_delta = 2.0"):
        path = tmp_path / f"t{abs(hash(sql))}.sqlite"
        path.write_bytes(good.read_bytes())
        with sqlite3.connect(path) as con:
            con.execute(sql)
        with pytest.raises(DataError, match="corrupt"):
            Ledger(path).datasets()
        assert main(["ledger", "show", "--ledger", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("privgp: error:") and "corrupt" in err and len(err.strip().splitlines()) == 1


def test_the_composition_rule_is_the_ledger_files_own(tmp_path, capsys):
    """A new ledger composes (epsilon, delta)-DP releases through privacy profiles and says so in its meta
    table; a file written before the rule was recorded (privgp 0.1, schema 1 or 2) keeps basic composition
    and shows the spent epsilon it showed, also when opened read-only."""
    from privgp.accounting import ApproxDpEvent

    events = [ZcdpEvent(0.01), ApproxDpEvent(0.1, 1e-6), ApproxDpEvent(0.1, 1e-6)]
    total = ComposedEvent.of(events)
    new_rule = account_epsilon(total, DELTA).epsilon
    old_rule = account_epsilon(total, DELTA, composition="basic").epsilon
    assert new_rule < old_rule
    path = tmp_path / "new.sqlite"
    led = Ledger(path)
    for ev in events:
        led.charge("fp", ev, budget_delta=DELTA)
    assert led.composition == "profile" and led.dataset("fp").spent.epsilon == new_rule
    assert led.dataset("fp").spent.method == "profile"
    with sqlite3.connect(path) as con:
        assert dict(con.execute("SELECT key, value FROM meta"))["composition"] == "profile"
        con.execute("DELETE FROM meta WHERE key = 'composition'")  # as privgp 0.1 wrote it
    ro = Ledger(path, readonly=True)
    assert ro.composition == "basic" and ro.dataset("fp").spent.epsilon == old_rule
    with sqlite3.connect(path) as con:  # reading wrote nothing
        assert "composition" not in dict(con.execute("SELECT key, value FROM meta"))
    again = Ledger(path)
    assert again.composition == "basic" and again.dataset("fp").spent.epsilon == old_rule
    again.charge("fp", ZcdpEvent(0.01))  # charging goes on under the file's rule
    assert again.dataset("fp").spent.epsilon == account_epsilon(ComposedEvent.of([*events, ZcdpEvent(0.01)]), DELTA,
                                                                composition="basic").epsilon
    with sqlite3.connect(path) as con:
        assert dict(con.execute("SELECT key, value FROM meta"))["composition"] == "basic"
    from privgp.cli.main import main

    assert main(["ledger", "show", "--ledger", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["composition"] == "basic"
    v1 = tmp_path / "v1.sqlite"
    _write_v1(v1, [(0.05 * _V1_ORDERS).astype("<f8").tobytes()])
    assert Ledger(v1).composition == "basic"
    with sqlite3.connect(path) as con:
        con.execute("UPDATE meta SET value = 'pld' WHERE key = 'composition'")
    with pytest.raises(DataError, match="corrupt ledger"):
        Ledger(path)


def test_a_gaussian_and_a_laplace_release_fit_a_budget_of_their_sum(tmp_path):
    """A Gaussian grid release certified (5, 1e-6) and a Laplace-grid 5-DP release on one dataset fit a budget
    of (10, 1e-6): basic composition of their certificates gives exactly that, and the ledger's rule composes
    the pure release as randomized response with the Gaussian's exact profile (below 10; the sum of their
    Renyi curves gave 10.34 and refused the second). A third release does not fit."""
    from privgp.accounting import calibrate_gaussian

    gauss, cert = calibrate_gaussian(2.0, 5.0, 1e-6)
    led = Ledger(tmp_path / "l.sqlite")
    led.charge("fp", gauss, budget_epsilon=10.0, budget_delta=1e-6)
    led.charge("fp", PureDpEvent(5.0))
    spent = led.dataset("fp").spent
    assert spent.method == "profile" and cert.epsilon < spent.epsilon < 10.0
    assert spent.epsilon == account_epsilon(ComposedEvent.of([gauss, PureDpEvent(5.0)]), 1e-6).epsilon
    with pytest.raises(BudgetExceededError):
        led.charge("fp", PureDpEvent(0.5))
    assert len(led.entries()) == 2


def test_the_default_ledger_ignores_a_relative_xdg_data_home(monkeypatch, tmp_path):
    """XDG Base Directory spec: a relative $XDG_DATA_HOME is ignored; otherwise every working folder would get a
    ledger of its own and each would start from an empty budget."""
    from privgp.ledger import default_path

    monkeypatch.delenv("PRIVGP_LEDGER", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", "rel/data")
    assert default_path() == tmp_path / ".local" / "share" / "privgp" / "ledger.sqlite"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "abs"))
    assert default_path() == tmp_path / "abs" / "privgp" / "ledger.sqlite"


def test_a_relative_privgp_ledger_is_refused_before_anything_is_written(monkeypatch, tmp_path, capsys):
    """A relative $PRIVGP_LEDGER (set once in a shell) named another ledger, with fresh budgets, in each folder a
    command ran from (red team 17). It is refused, by the Python API and the commands alike; --ledger REL is a
    path given with each command and stays allowed; the help still shows the default."""
    from privgp.cli.main import main
    from privgp.ledger import default_path

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRIVGP_LEDGER", "ledger.sqlite")
    with pytest.raises(InvalidParameterError, match="PRIVGP_LEDGER must be an absolute path"):
        default_path()
    with pytest.raises(InvalidParameterError, match="PRIVGP_LEDGER must be an absolute path"):
        Ledger()
    for argv in (["release", "--out", "o"], ["ledger", "show"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "privgp: error: PRIVGP_LEDGER must be an absolute path" in err
    assert main(["ledger", "show", "--help"]) == 0 and "$PRIVGP_LEDGER or" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("PRIVGP_LEDGER", "~/ledger.sqlite")   # ~ is absolute once expanded
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_path() == tmp_path / "ledger.sqlite"
    assert Ledger("rel.sqlite").path == Path("rel.sqlite")


def test_another_programs_sqlite_file_is_not_used_as_a_ledger(tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes (t TEXT)")
    con.commit()
    con.close()
    with pytest.raises(DataError, match="not a privgp ledger"):
        Ledger(path).charge("x", PureDpEvent(1.0), epsilon=1.0, delta=0.0, budget_epsilon=10, budget_delta=1e-6)
    names = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert names == {"notes"}


def test_a_dataset_id_may_be_any_text(tmp_path):
    """--dataset-id NAME keys the ledger by a keyed hash of NAME: non-ASCII names too (a traceback before)."""
    led = Ledger(tmp_path / "l.sqlite")
    fp = led.fingerprint("dataset-id:prix-été-東京")
    assert len(fp) == 64 and fp != led.fingerprint("dataset-id:prix-ete")
    assert led.fingerprint("dataset-id:abc") == led.fingerprint("dataset-id:abc")


def test_an_entry_never_displays_a_guarantee_its_event_does_not_have(tmp_path):
    """The certified (epsilon, delta) recorded beside an event is checked against it before anything is written."""
    from privgp.accounting import GdpEvent

    led = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(InvalidParameterError, match="event's own epsilon"):
        led.charge("x", GdpEvent(0.5), epsilon=0.0, delta=1e-6, budget_epsilon=10, budget_delta=1e-6)
    assert led.entries() == []
    own = account_epsilon(GdpEvent(0.5), 1e-6).epsilon
    led.charge("x", GdpEvent(0.5), epsilon=own, delta=1e-6, budget_epsilon=10, budget_delta=1e-6)
    assert len(led.entries()) == 1


def test_a_budget_spent_exactly_shows_nothing_remaining_not_a_millionth(tmp_path):
    """Walk-through 11: two releases of epsilon 5 in a budget of 10 left "remaining epsilon = 1e-06" (the profile
    composition's slack), read as a delta. What remains is shown rounded down to 1e-5 of the budget."""
    from privgp.ledger import remaining_epsilon

    assert remaining_epsilon(10.0, 10.0 - 1e-6) == 0.0
    assert remaining_epsilon(10.0, 12.0) == 0.0
    assert remaining_epsilon(10.0, 5.0) == pytest.approx(5.0) and remaining_epsilon(10.0, 5.0) <= 5.0
    assert 0.01 - 1e-4 <= remaining_epsilon(10.0, 9.99) <= 0.01        # at most one unit (1e-4) below
    led = Ledger(tmp_path / "l.sqlite")
    fp = led.fingerprint("d")
    led.charge(fp, PureDpEvent(5.0), budget_epsilon=10.0, budget_delta=DELTA)
    ch = led.charge(fp, PureDpEvent(5.0), budget_epsilon=10.0, budget_delta=DELTA)
    exact = 10.0 - ch.spent_after.epsilon
    for shown in (ch.to_dict()["remaining_epsilon"], led.dataset(fp).remaining_epsilon):
        assert shown == remaining_epsilon(10.0, ch.spent_after.epsilon) and exact - 1e-4 <= shown <= exact


def test_a_refusal_never_shows_less_spent_than_the_truth(tmp_path):
    """Red team round 13: the budget refusal printed the spent epsilon with .4g (8.00004 spent showed "8")."""
    led = Ledger(tmp_path / "l.sqlite")
    fp = led.fingerprint("d")
    import re

    for eps in (8.00004, 7.9999, 3.33333):
        fp = led.fingerprint(f"d{eps}")
        led.charge(fp, PureDpEvent(eps), budget_epsilon=10.0, budget_delta=DELTA)
        with pytest.raises(BudgetExceededError) as refused:
            led.charge(fp, PureDpEvent(8.0), budget_epsilon=10.0, budget_delta=DELTA)
        shown = re.search(r"already spent ([0-9.e+-]+) in 1 release", str(refused.value))
        assert shown and float(shown.group(1)) >= led.dataset(fp).spent.epsilon, str(refused.value)
    before = led.entries()
    led.charge(fp, PureDpEvent(1.0), budget_epsilon=10.0, budget_delta=DELTA, dry_run=True)   # fits: decided only
    assert led.entries() == before
