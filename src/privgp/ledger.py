"""A persistent privacy-budget ledger: one SQLite file, keyed by dataset fingerprint.

What it records
    Each private dataset has a total budget (epsilon_B, delta_B), set when the dataset is first
    charged. Each release on it is an *entry* holding the release's Rényi-DP curve evaluated on a
    fixed grid of orders (the ledger's ``orders``, stored once in the file), its own certified
    (epsilon, delta), a short public description, and a status: ``charged`` when the budget was
    taken, ``completed`` once the outputs were written.

How releases compose
    RDP composes additively at every order (Mironov 2017, Prop. 1; seed 000, eq. (3)), for
    releases chosen adaptively too. The ledger adds the stored curves order by order and converts
    the sum to (epsilon, delta) at the dataset's budget delta_B, minimising over the grid of
    orders:
        spent = min_{alpha in orders} conv(sum_i rdp_i(alpha), alpha, delta_B).
    Any order gives a valid bound, so using a grid only makes the total (slightly) larger, never
    smaller. Orders at or beyond a release's alpha_max carry +inf. Entries with status
    ``charged`` count exactly like completed ones.

When a release is refused
    :meth:`Ledger.charge` checks and records inside one ``BEGIN IMMEDIATE`` transaction, so two
    processes charging the same dataset at the same moment are serialised by SQLite: if only one
    release fits, only one passes. A release whose addition would make the spent epsilon exceed
    epsilon_B raises :class:`~privgp.errors.BudgetExceededError` and changes nothing. Callers
    charge *before* writing any output and mark the entry completed afterwards: a crash in between
    wastes budget but never under-counts it.

Fingerprints
    The ledger key is a keyed hash HMAC-SHA256(secret, content digest of the table), where the
    secret is 32 random bytes created with the ledger file. A plain hash of the data would be a
    deterministic function of the private records: anyone knowing all records but one could test
    guesses of the last one against it. The keyed fingerprint can be printed in a certificate;
    only the holder of the ledger file can link it to a table.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from . import validation as v
from .accounting import epsilon_from_rdp
from .errors import BudgetExceededError, DataError, InvalidParameterError

SCHEMA_VERSION = "1"
#: Fixed grid of Rényi orders on which every release's curve is stored: 1 + 10^u, u in [-4, 5],
#: 50 points per decade (adjacent orders differ by under 5% in alpha - 1).
DEFAULT_ORDERS = 1.0 + np.logspace(-4.0, 5.0, 451)
DEFAULT_CONVERSION = "improved"
#: Default total budget of a dataset (the seed paper's epsilon_0 = 10 for its real-data release).
DEFAULT_BUDGET_EPSILON = 10.0
ENV_VAR = "PRIVGP_LEDGER"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS datasets (
    fingerprint TEXT PRIMARY KEY,
    budget_epsilon REAL NOT NULL,
    budget_delta REAL NOT NULL,
    created TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS entries (
    id TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL REFERENCES datasets(fingerprint),
    created TEXT NOT NULL,
    completed TEXT,
    status TEXT NOT NULL CHECK (status IN ('charged', 'completed')),
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    rdp BLOB NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    settings TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS entries_by_dataset ON entries(fingerprint);
"""


def default_path() -> Path:
    """$PRIVGP_LEDGER, else $XDG_DATA_HOME/privgp/ledger.sqlite, else ~/.local/share/privgp/ledger.sqlite."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "privgp" / "ledger.sqlite"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Spent:
    """The composed guarantee of a set of entries at the budget's delta."""

    epsilon: float
    delta: float
    alpha: float | None      # the order of the grid that gave epsilon (None: no entries)
    entries: int


@dataclass(frozen=True)
class DatasetBudget:
    fingerprint: str
    budget_epsilon: float
    budget_delta: float
    created: str
    label: str
    spent: Spent

    @property
    def remaining_epsilon(self) -> float:
        return max(self.budget_epsilon - self.spent.epsilon, 0.0)

    def to_dict(self) -> dict:
        return {"fingerprint": self.fingerprint, "budget_epsilon": self.budget_epsilon,
                "budget_delta": self.budget_delta, "created": self.created, "label": self.label,
                "spent_epsilon": self.spent.epsilon, "spent_at_delta": self.spent.delta,
                "spent_alpha": self.spent.alpha, "entries": self.spent.entries,
                "remaining_epsilon": self.remaining_epsilon}


@dataclass(frozen=True)
class LedgerEntry:
    id: str
    fingerprint: str
    created: str
    completed: str | None
    status: str
    epsilon: float
    delta: float
    description: str
    settings: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"id": self.id, "fingerprint": self.fingerprint, "created": self.created,
                "completed": self.completed, "status": self.status, "epsilon": self.epsilon,
                "delta": self.delta, "description": self.description, "settings": self.settings}


@dataclass(frozen=True)
class Charge:
    """A successful charge: the new entry and the dataset's budget after it."""

    entry_id: str
    fingerprint: str
    budget_epsilon: float
    budget_delta: float
    spent_before: Spent
    spent_after: Spent

    def to_dict(self) -> dict:
        return {"entry_id": self.entry_id, "fingerprint": self.fingerprint,
                "budget_epsilon": self.budget_epsilon, "budget_delta": self.budget_delta,
                "spent_epsilon_before": self.spent_before.epsilon,
                "spent_epsilon_after": self.spent_after.epsilon,
                "remaining_epsilon": max(self.budget_epsilon - self.spent_after.epsilon, 0.0)}


def _to_blob(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, dtype="<f8").tobytes()


def _from_blob(b: bytes) -> np.ndarray:
    return np.frombuffer(b, dtype="<f8").copy()


class Ledger:
    """The ledger stored in one SQLite file (created on first use, with its parent folder)."""

    def __init__(self, path=None, *, timeout: float = 60.0):
        self.path = Path(path).expanduser() if path is not None else default_path()
        if self.path.exists() and self.path.is_dir():
            raise InvalidParameterError("ledger", "a file path (not a directory)", str(self.path))
        self.timeout = float(timeout)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = self._connect()
        except (OSError, sqlite3.Error) as exc:
            raise DataError(f"cannot open the privacy ledger {self.path}: {exc}") from None
        try:
            self._initialise(con)
            meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:
            raise DataError(f"{self.path} is not a usable privgp ledger: {exc}") from None
        finally:
            con.close()
        if meta.get("schema") != SCHEMA_VERSION:
            raise DataError(f"{self.path}: unsupported ledger schema {meta.get('schema')!r}")
        self.orders = _from_blob(meta["orders"])
        self.conversion = str(meta["conversion"])
        self._secret = bytes(meta["secret"])

    # -- low level -----------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(str(self.path), timeout=self.timeout, isolation_level=None)
        con.execute("PRAGMA foreign_keys = ON")
        con.execute("PRAGMA synchronous = FULL")
        return con

    def _initialise(self, con: sqlite3.Connection) -> None:
        con.execute("BEGIN IMMEDIATE")
        try:
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
                    con.execute(stmt)
            defaults = {"schema": SCHEMA_VERSION, "orders": _to_blob(DEFAULT_ORDERS),
                        "conversion": DEFAULT_CONVERSION, "secret": secrets.token_bytes(32)}
            for k, val in defaults.items():
                con.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (k, val))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    # -- fingerprints ----------------------------------------------------------------------------
    def fingerprint(self, content_digest: str) -> str:
        """Keyed fingerprint of a table's content digest (safe to print; see module docstring)."""
        return hmac.new(self._secret, content_digest.encode("ascii"), hashlib.sha256).hexdigest()

    # -- accounting ------------------------------------------------------------------------------
    def _compose(self, rdps: Iterable[np.ndarray], delta: float) -> Spent:
        rdps = list(rdps)
        if not rdps:
            return Spent(0.0, delta, None, 0)
        total = np.sum(np.vstack(rdps), axis=0)
        eps = epsilon_from_rdp(total, self.orders, delta, self.conversion)
        i = int(np.argmin(eps))
        return Spent(float(eps[i]), float(delta), float(self.orders[i]), len(rdps))

    def rdp_on_orders(self, curve) -> np.ndarray:
        """A release's RDP curve (callable on an array of orders) on the ledger's grid, checked."""
        rdp = np.asarray(curve(self.orders) if callable(curve) else curve, dtype=float)
        if rdp.shape != self.orders.shape:
            raise InvalidParameterError("rdp", f"values on the ledger's {self.orders.size} orders", rdp.shape)
        if np.any(np.isnan(rdp)) or np.any(rdp < 0):
            raise InvalidParameterError("rdp", "non-negative (possibly +inf) at every order", "NaN or negative values")
        if not np.any(np.isfinite(rdp)):
            raise InvalidParameterError(
                "the release's RDP curve", f"finite at some order of the ledger's grid (alpha in "
                f"[{self.orders[0]:.6g}, {self.orders[-1]:.6g}]); a release this leaky cannot be accounted "
                "for (increase r)", "+inf at every order")
        return rdp

    def standalone_epsilon(self, rdp, delta: float) -> float:
        """epsilon of one release alone, on the ledger's grid, at ``delta``."""
        return self._compose([self.rdp_on_orders(rdp)], v.probability("delta", delta)).epsilon

    def charge(self, fingerprint: str, rdp, *, epsilon: float, delta: float,
               budget_epsilon: float | None = None, budget_delta: float | None = None,
               default_budget_delta: float | None = None, description: str = "",
               settings: dict | None = None, label: str = "") -> Charge:
        """Record a release if the dataset's budget allows it; otherwise raise BudgetExceededError.

        ``rdp``: the release's RDP curve (callable) or its values on :attr:`orders`;
        ``epsilon``/``delta``: the release's own certified guarantee (recorded for display).
        ``budget_epsilon``/``budget_delta`` set the budget of a dataset seen for the first time
        (``budget_epsilon`` defaults to :data:`DEFAULT_BUDGET_EPSILON`, ``budget_delta`` to
        ``default_budget_delta``, one of which is then required); for a known dataset they must be
        omitted or equal the recorded budget (``default_budget_delta`` is then ignored).
        Check and insert happen in one IMMEDIATE transaction.
        """
        rdp = self.rdp_on_orders(rdp)
        epsilon = v.nonnegative("epsilon", epsilon, allow_inf=False)
        delta = v.probability("delta", delta)
        if budget_epsilon is not None:
            budget_epsilon = v.positive("budget_epsilon", budget_epsilon)
        if budget_delta is not None:
            budget_delta = v.probability("budget_delta", budget_delta)
        if default_budget_delta is not None:
            default_budget_delta = v.probability("default_budget_delta", default_budget_delta)
        settings_json = json.dumps(settings or {}, sort_keys=True, default=str)
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                row = con.execute("SELECT budget_epsilon, budget_delta FROM datasets WHERE fingerprint = ?",
                                  (fingerprint,)).fetchone()
                if row is None:
                    b_eps = DEFAULT_BUDGET_EPSILON if budget_epsilon is None else budget_epsilon
                    b_del = default_budget_delta if budget_delta is None else budget_delta
                    if b_del is None:
                        raise InvalidParameterError("budget_delta", "given for a dataset new to the ledger", None)
                    con.execute("INSERT INTO datasets(fingerprint, budget_epsilon, budget_delta, created, label) "
                                "VALUES (?, ?, ?, ?, ?)", (fingerprint, b_eps, b_del, _now(), label))
                else:
                    b_eps, b_del = float(row[0]), float(row[1])
                    for name, given, rec in (("budget_epsilon", budget_epsilon, b_eps),
                                             ("budget_delta", budget_delta, b_del)):
                        if given is not None and not np.isclose(given, rec, rtol=1e-12, atol=0.0):
                            raise InvalidParameterError(
                                name, f"the budget recorded for this dataset in {self.path} ({rec:g}); "
                                "a dataset's budget is fixed when it is first charged", given)
                previous = [_from_blob(b) for (b,) in con.execute(
                    "SELECT rdp FROM entries WHERE fingerprint = ?", (fingerprint,))]
                before = self._compose(previous, b_del)
                after = self._compose(previous + [rdp], b_del)
                if not after.epsilon <= b_eps:
                    alone = self._compose([rdp], b_del).epsilon
                    raise BudgetExceededError(
                        f"this release would bring the dataset's spent epsilon to {after.epsilon:.4g} "
                        f"(at delta={b_del:.3g}), over its budget epsilon={b_eps:g}; already spent "
                        f"{before.epsilon:.4g} in {before.entries} release(s), this release alone costs "
                        f"{alone:.4g}; nothing was charged or written (ledger: {self.path})")
                entry_id = uuid.uuid4().hex
                con.execute("INSERT INTO entries(id, fingerprint, created, status, epsilon, delta, rdp, "
                            "description, settings) VALUES (?, ?, ?, 'charged', ?, ?, ?, ?, ?)",
                            (entry_id, fingerprint, _now(), epsilon, delta, _to_blob(rdp), description,
                             settings_json))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise DataError(f"privacy ledger {self.path}: {exc}") from None
        finally:
            con.close()
        return Charge(entry_id, fingerprint, b_eps, b_del, before, after)

    def complete(self, entry_id: str) -> None:
        """Mark a charged entry completed (its outputs were written)."""
        con = self._connect()
        try:
            cur = con.execute("UPDATE entries SET status = 'completed', completed = ? WHERE id = ?",
                              (_now(), entry_id))
            if cur.rowcount != 1:
                raise InvalidParameterError("entry_id", "the id of an entry in the ledger", entry_id)
        finally:
            con.close()

    # -- reading ---------------------------------------------------------------------------------
    def entries(self, fingerprint: str | None = None) -> list[LedgerEntry]:
        con = self._connect()
        try:
            q = ("SELECT id, fingerprint, created, completed, status, epsilon, delta, description, settings "
                 "FROM entries")
            rows = (con.execute(q + " WHERE fingerprint = ? ORDER BY created, rowid", (fingerprint,))
                    if fingerprint else con.execute(q + " ORDER BY created, rowid")).fetchall()
        finally:
            con.close()
        return [LedgerEntry(r[0], r[1], r[2], r[3], r[4], float(r[5]), float(r[6]), r[7], json.loads(r[8]))
                for r in rows]

    def datasets(self) -> list[DatasetBudget]:
        con = self._connect()
        try:
            ds = con.execute("SELECT fingerprint, budget_epsilon, budget_delta, created, label FROM datasets "
                             "ORDER BY created, rowid").fetchall()
            out = []
            for fp, b_eps, b_del, created, label in ds:
                rdps = [_from_blob(b) for (b,) in con.execute("SELECT rdp FROM entries WHERE fingerprint = ?", (fp,))]
                out.append(DatasetBudget(fp, float(b_eps), float(b_del), created, label, self._compose(rdps, float(b_del))))
        finally:
            con.close()
        return out

    def dataset(self, fingerprint: str) -> DatasetBudget | None:
        for d in self.datasets():
            if d.fingerprint == fingerprint:
                return d
        return None
