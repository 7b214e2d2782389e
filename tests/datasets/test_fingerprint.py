"""The records' content digest (privgp.datasets.fingerprint): order- and partition-independent, different
for different records, equal to an independent pure-Python computation; the version-2 digest of earlier
privgp versions, and how a ledger written by them keeps its datasets' keys."""
from __future__ import annotations

import hashlib
import sqlite3
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.datasets.fingerprint import (
    add_sums,
    digest_of_sums,
    legacy_digest_v2,
    record_hashes,
    records_digest,
)
from privgp.datasets.tabular import load_table, records
from privgp.ledger import Budget, Ledger

MASK = (1 << 64) - 1
SEEDS = (0x9E3779B97F4A7C15, 0xD1B54A32D192ED03)


def _fmix(h: int) -> int:   # MurmurHash3 fmix64 on Python integers (the reference)
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    return h ^ (h >> 33)


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x + 0.0))[0]


def reference_v3(rows: list[tuple[float, ...]]) -> str:
    sums = []
    for seed in SEEDS:
        total = 0
        for row in rows:
            h = _bits(row[0]) ^ seed
            for x in row[1:]:
                h = _fmix(h) ^ _bits(x)
            total = (total + _fmix(h)) & MASK
        sums.append(total)
    return hashlib.sha256(f"privgp-records-v3:{len(rows[0]) - 1}:{len(rows)}:{sums[0]}:{sums[1]}".encode()).hexdigest()


def reference_v2(rows: list[tuple[float, ...]]) -> str:
    rows = sorted(tuple(x + 0.0 for x in r) for r in rows)
    h = hashlib.sha256(f"privgp-records-v2:{len(rows[0]) - 1}:".encode())
    for r in rows:
        h.update(struct.pack(f"<{len(r)}d", *r))
    return h.hexdigest()


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
tables = st.integers(1, 2).flatmap(lambda d: st.lists(st.tuples(*[finite] * (d + 1)), min_size=1, max_size=30))


def _arrays(rows):
    a = np.array(rows, dtype=float)
    return a[:, :-1], a[:, -1]


@given(tables, st.randoms(use_true_random=False))
def test_v3_equals_the_reference_and_ignores_order_and_partitioning(rows, rnd):
    X, y = _arrays(rows)
    d = records_digest(X, y)
    assert d == reference_v3(rows)
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    assert records_digest(X[perm], y[perm]) == d
    cut = rnd.randint(0, len(rows))
    a = record_hashes([*X[perm[:cut]].T, y[perm[:cut]]])
    b = record_hashes([*X[perm[cut:]].T, y[perm[cut:]]])
    assert digest_of_sums(X.shape[1], len(rows), *add_sums(a, b)) == d


@given(tables, st.data())
def test_v3_tells_other_records_apart(rows, data):
    X, y = _arrays(rows)
    d = records_digest(X, y)
    i = data.draw(st.integers(0, len(rows) - 1))
    j = data.draw(st.integers(0, X.shape[1]))          # a coordinate or the response
    t = np.column_stack([X, y])
    changed = t.copy()
    with np.errstate(over="ignore"):
        towards = 0.0 if np.isinf(np.nextafter(changed[i, j], np.inf)) else np.inf
    changed[i, j] = np.nextafter(changed[i, j], towards)
    others = [changed, np.vstack([t, t[i:i + 1]])]      # one value one ulp away; one record twice
    if len(rows) > 1:
        others.append(np.delete(t, i, axis=0))          # one record fewer
    if X.shape[1] == 1:
        others.append(t[:, ::-1])                       # coordinate and response swapped
    for o in others:
        if sorted(map(tuple, (o + 0.0).tolist())) != sorted(map(tuple, (t + 0.0).tolist())):
            assert records_digest(o[:, :-1], o[:, -1]) != d
    # the same numbers with one coordinate more are another dataset
    assert records_digest(np.column_stack([X, y]), np.zeros(len(y))) != d


def test_minus_zero_is_zero_and_v2_equals_its_reference():
    rows = [(0.5, -0.0, 3.0), (0.25, 2.0, -1.0), (0.25, 2.0, -1.0)]
    X, y = _arrays(rows)
    assert records_digest(X, y) == records_digest(np.abs(X), y) == reference_v3(rows)
    assert legacy_digest_v2(X, y) == reference_v2(rows)
    assert legacy_digest_v2(X[::-1], y[::-1]) == legacy_digest_v2(X, y)
    assert legacy_digest_v2(X, y) != records_digest(X, y)


def _old_ledger(path, X, y, epsilon=1.0):
    """A ledger as an earlier privgp left it: no 'digests' marker, a dataset keyed by the v2 digest."""
    from privgp.accounting import GaussianEvent

    led = Ledger(path)
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM meta WHERE key = 'digests'")
    led.charge(led.fingerprint(legacy_digest_v2(X, y)), GaussianEvent(sensitivity=1.0, noise_std=5.0),
               budget_epsilon=10.0, budget_delta=1e-6)
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM meta WHERE key = 'digests'")
    return led


def test_a_ledger_written_before_v3_keeps_the_budget_of_its_csv_datasets(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.uniform(0, 1, (50, 2)), rng.normal(size=50)
    path = tmp_path / "old.sqlite"
    old = _old_ledger(path, X, y)
    p = tmp_path / "d.csv"
    p.write_text("a,b,v\n" + "".join(f"{float(a)!r},{float(b)!r},{float(c)!r}\n" for (a, b), c in zip(X[::-1], y[::-1])))
    data = load_table(p, ["a", "b"], "v")
    led = Ledger(path)                      # opened by this version: marked "v2" (it has datasets)
    key = led.fingerprint_of(data.content_digest, data.legacy_digests)
    assert key == old.fingerprint(legacy_digest_v2(X, y)) != led.fingerprint(data.content_digest)
    spent = Budget(path).spent(records(X, y))
    assert spent is not None and spent.fingerprint == key
    # other records in the same old ledger: the v3 key
    other = records(X, y + 1.0)
    assert Budget(path).fingerprint(other) == led.fingerprint(other.content_digest)


def test_a_new_ledger_never_computes_the_old_digest(tmp_path):
    def boom():
        raise AssertionError("the v2 digest was computed for a ledger created with v3 digests")

    led = Ledger(tmp_path / "new.sqlite")
    assert led.fingerprint_of("abc", boom) == led.fingerprint("abc")
    # an old file without datasets is marked v3 too
    path = tmp_path / "empty-old.sqlite"
    Ledger(path)
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM meta WHERE key = 'digests'")
    assert Ledger(path).fingerprint_of("abc", boom) == Ledger(path).fingerprint("abc")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1, max_size=40),
       st.sampled_from(["float32", "float16"]))
def test_a_narrow_float_is_read_as_its_shortest_digits_say(values, width):
    """Law: each float32 or float16 value is read as the float64 its shortest decimal text (numpy's ``str``, what
    pandas writes to CSV) parses to -- from a Parquet/DuckDB column, privgp.records or an estimator alike."""
    import pyarrow as pa

    from privgp.datasets.fingerprint import shortest_digits
    from privgp.datasets.sources import _numbers

    with np.errstate(over="ignore"):   # float32 values beyond float16's range become inf: dropped
        a = np.asarray(values, dtype=np.float32).astype(width)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return
    want = np.array([float(str(x)) for x in a])
    np.testing.assert_array_equal(shortest_digits(a), want)
    read, earlier = _numbers(pa.record_batch({"v": pa.array(a)}), "v", "t", 0)
    np.testing.assert_array_equal(read, want)
    assert earlier is None or np.array_equal(earlier, a.astype(float))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.decimals(allow_nan=False, allow_infinity=False, places=6, min_value=-10**12, max_value=10**12),
                min_size=1, max_size=40))
def test_a_decimal_is_read_as_its_digits_say(values):
    """Law: a DECIMAL value is read as the correctly rounded float64 of its digits (Python's ``float(str(d))``), as
    the same digits in a CSV file are; pyarrow's own decimal-to-float cast is not (about a third are one ulp off)."""
    import pyarrow as pa

    from privgp.datasets.sources import _numbers

    col = pa.array(values, type=pa.decimal128(19, 6))
    read, _ = _numbers(pa.record_batch({"v": col}), "v", "t", 0)
    np.testing.assert_array_equal(read, np.array([float(str(d)) for d in col.to_pylist()]))


def test_aliases_are_tried_in_any_ledger_and_only_where_the_key_is_unknown(tmp_path):
    """The key an earlier privgp gave records it read otherwise (a DECIMAL or float32 column before 2026-11-29) is
    kept by any ledger that charged it -- a v3 file too -- and never replaces a key the ledger knows already; a
    charge under it links the records' own key to that data set (the same values from a CSV file, which has no
    alias), and a dry run links nothing."""
    from privgp.accounting import GaussianEvent

    def boom():
        raise AssertionError("the v2 digest was computed for a ledger created with v3 digests")

    def charge(led, key, **kw):
        return led.charge(key, GaussianEvent(sensitivity=1.0, noise_std=5.0), budget_epsilon=10.0,
                          budget_delta=1e-6, **kw)

    path = tmp_path / "l.sqlite"
    led = Ledger(path, create_on_charge=True)
    assert led.fingerprint_of("new", boom, ("old",)) == led.fingerprint("new")   # nothing charged yet
    for old in ("old", "a", "b", "old3"):
        charge(led, led.fingerprint(old))
    led = Ledger(path)
    assert led.fingerprint_of("new2", None, ("other",)) == led.fingerprint("new2")
    assert led.fingerprint_of("b", None, ("a",)) == led.fingerprint("b")          # its own key, known: kept
    key = led.fingerprint_of("new3", None, ("old3",))
    assert key == led.fingerprint("old3")
    charge(led, key, dry_run=True)
    assert Ledger(path).fingerprint_of("new3") == led.fingerprint("new3")         # a dry run links nothing
    key = led.fingerprint_of("new", boom, ("other", "old"))
    assert key == led.fingerprint("old")
    charge(led, key)
    again = Ledger(path)
    assert again.fingerprint_of("new") == again.fingerprint("old")                # linked, without the alias
    assert len(again.entries(key)) == 2 and len(again.datasets()) == 4
    assert Ledger(path, readonly=True).fingerprint_of("new") == again.fingerprint("old")


@pytest.mark.parametrize("text", ["x,v\n1,2\n3,4\n", "v,x\n4,3\n2,1\n", "x,v\n3.0,4e0\n1,2.000\n"])
def test_csv_python_and_formats_share_the_digest(tmp_path, text):
    p = tmp_path / "t.csv"
    p.write_text(text)
    assert load_table(p, ["x"], "v").content_digest == records([1.0, 3.0], [2.0, 4.0]).content_digest


def test_digest_across_blocks_equals_the_reference():
    """The hashes are summed block by block (fingerprint.BLOCK records at a time, columns read in place): a
    multi-block input, strided and Fortran-ordered coordinates and -0.0 entries give the pure-Python value."""
    from privgp.datasets import fingerprint

    n = 2 * fingerprint.BLOCK + 5
    rng = np.random.default_rng(7)
    X = np.asfortranarray(rng.normal(size=(n, 2)))
    y = rng.normal(size=n)
    X[fingerprint.BLOCK, 1] = -0.0
    y[-1] = -0.0
    rows = [(float(a), float(b), float(c)) for (a, b), c in zip(X, y)]
    assert records_digest(X, y) == reference_v3(rows)
    assert records_digest(np.ascontiguousarray(X), y) == reference_v3(rows)
    with pytest.raises(ValueError, match="responses"):
        records_digest(X, y[:-1])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 30), st.integers(1, 2), st.integers(0, 2**32 - 1))
def test_repeated_records_counts_exact_copies_as_numpy_unique_does(n, copies, d, seed):
    """repeated_records (the data holder's note on rows that repeat) against np.unique over whole rows: the number
    of rows that repeat an earlier one and the largest multiplicity; -0.0 and 0.0 are one value, as in the digest."""
    from privgp.datasets.fingerprint import repeated_records

    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, (n, d)).astype(float)          # small integers: copies happen by chance too
    y = rng.integers(-1, 2, n).astype(float)
    pick = rng.integers(0, n, copies)
    X, y = np.vstack([X, X[pick]]), np.concatenate([y, y[pick]])
    X[X == 0] = rng.choice([0.0, -0.0], int(np.sum(X == 0)))
    _, counts = np.unique(np.column_stack([X + 0.0, y + 0.0]), axis=0, return_counts=True)
    assert repeated_records(X, y) == (len(y) - counts.size, int(counts.max()))
