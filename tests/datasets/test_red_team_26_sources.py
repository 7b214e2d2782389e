"""Red team 26: the data sources of ``privgp release`` (Parquet files and folders, DuckDB queries, Dask)."""
from __future__ import annotations

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")

from privgp.cli.main import main  # noqa: E402
from privgp.datasets import sources  # noqa: E402
from privgp.errors import DataError  # noqa: E402
from privgp.models.domain import Box  # noqa: E402

BOX = Box([0.0, 0.0], [10.0, 5.0])
ARGS = ["--x-col", "x", "--y-col", "y", "--response-col", "z", "--box", "0", "10", "0", "5", "--threshold", "0",
        "--clip", "1", "--mechanism", "grid", "--cells", "4", "--grid", "11", "--epsilon", "1", "--seed", "3",
        "--allow-noisy", "--no-report"]


def frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.uniform(0, 10, n), "y": rng.uniform(0, 5, n), "z": rng.normal(0, 1, n)}


def scan(spec, **kw):
    return sources.scan(sources.resolve(str(spec), **kw), ("x", "y"), "z", BOX)


def refused(tmp_path, capsys, spec, *extra, needle):
    """The command exits 2 with one line naming ``needle``, and neither the ledger nor the output exists."""
    capsys.readouterr()
    code = main(["release", "--data", str(spec), *extra, *ARGS, "--ledger", str(tmp_path / "ledger.sqlite"),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert needle in err, err
    assert not (tmp_path / "ledger.sqlite").exists() and not (tmp_path / "out").exists()
    return err


def test_a_duckdb_query_with_a_used_column_name_twice_is_refused(tmp_path, capsys):
    """``SELECT x, y, z, y / 5 AS Z`` released the first ``z`` silently (DuckDB resolves names case-insensitively):
    which column is the response must not depend on the order of the query's columns."""
    f = frame()  # noqa: F841 (read by DuckDB's replacement scan)
    db = tmp_path / "d.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT * FROM f")
    con.close()
    for query in ("SELECT x, y, z, y / 5 AS z FROM t", "SELECT x, y, z, y / 5 AS Z FROM t"):
        with pytest.raises(DataError, match="'z' appears more than once"):
            scan(db, query=query)
    assert scan(db, query="SELECT x, y, z, 1 AS w, 2 AS w FROM t").n == 400   # unused names: not ours to judge
    refused(tmp_path, capsys, db, "--query", "SELECT x, y, z, y / 5 AS z FROM t", needle="appears more than once")


def test_integers_beyond_2_to_the_53_are_read_as_a_csv_file_reads_them(tmp_path):
    """An int64/uint64 column beyond 2^53 raised pyarrow's ArrowInvalid (a traceback, exit 1); it is now rounded to
    the nearest float64, as the same digits in a CSV file are parsed: one fingerprint for both."""
    f = frame()
    big = np.arange(400, dtype=np.uint64) + np.uint64(1 << 63)
    pq.write_table(pa.table({"x": f["x"], "y": f["y"], "z": pa.array(big)}), tmp_path / "u.parquet")
    (tmp_path / "c").mkdir()
    with open(tmp_path / "c" / "u.csv", "w") as fh:
        fh.write("x,y,z\n" + "".join(f"{float(a)!r},{float(b)!r},{int(c)}\n" for a, b, c in zip(f["x"], f["y"], big)))
    a, b = scan(tmp_path / "u.parquet"), scan(tmp_path / "c")
    assert a.n == 400 and a.digest() == b.digest()


def test_records_outside_the_box_are_counted_over_every_file(tmp_path, capsys):
    """The streamed pass stopped at the first record outside --box; like a CSV file it now says how many."""
    (tmp_path / "lake").mkdir()
    f = frame(600)
    f["x"][[5, 250, 590]] = [11.0, -1.0, 12.0]
    for i, idx in enumerate(np.array_split(np.arange(600), 3)):
        pq.write_table(pa.table({k: v[idx] for k, v in f.items()}), tmp_path / "lake" / f"p{i}.parquet")
    with pytest.raises(DataError, match=r"row 6 of .*p0\.parquet lies outside .*; 3 of the 600 records"):
        sources.scan(sources.resolve(str(tmp_path / "lake")), ("x", "y"), "z", BOX, threads=2)
    refused(tmp_path, capsys, tmp_path / "lake", needle="3 of the 600 records read lie outside")


def test_a_copy_of_a_file_in_a_folder_is_refused(tmp_path, capsys):
    """A copy of a part (``p0 (1).parquet``, not a link) counted its records twice under a new ledger key: the
    same records got a fresh budget. Two parts holding the same records are refused before the charge."""
    (tmp_path / "lake").mkdir()
    f = frame(600)
    for i, idx in enumerate(np.array_split(np.arange(600), 2)):
        pq.write_table(pa.table({k: v[idx] for k, v in f.items()}), tmp_path / "lake" / f"p{i}.parquet")
    assert scan(tmp_path / "lake").n == 600
    t = pq.read_table(tmp_path / "lake" / "p0.parquet")
    pq.write_table(t.take(np.arange(t.num_rows)[::-1]), tmp_path / "lake" / "p2.parquet", row_group_size=50)
    with pytest.raises(DataError, match=r"p0\.parquet and .*p2\.parquet hold the same 300 records"):
        scan(tmp_path / "lake")
    refused(tmp_path, capsys, tmp_path / "lake", needle="hold the same 300 records")


def test_an_unreachable_scheduler_is_one_line(tmp_path, capsys):
    """--scheduler with no port, or nothing listening: distributed's OSError/ValueError was a traceback (exit 1)."""
    pytest.importorskip("distributed")
    pq.write_table(pa.table(frame()), tmp_path / "a.parquet")
    refused(tmp_path, capsys, tmp_path / "a.parquet", "--scheduler", "no-port-here",
            needle="cannot connect to the Dask scheduler")


def test_cluster_tasks_name_files_by_absolute_path(tmp_path, monkeypatch):
    """``--data lake --scheduler ADDR``: the parts were sent as relative paths, which a worker started in another
    working directory reads from there (another file of that name, or none). They are sent absolute."""
    (tmp_path / "lake").mkdir()
    pq.write_table(pa.table(frame()), tmp_path / "lake" / "a.parquet")
    monkeypatch.chdir(tmp_path)
    parts = sources.resolve("lake")
    sent = []

    class Future:
        def __init__(self, value):
            self.value = value

        def release(self):
            pass

    class Client:   # runs the tasks here, recording what a worker would be sent
        def map(self, fn, items, pure=True, **kw):
            sent.extend(items)
            return [Future(fn(p, **kw)) for p in items]

        def gather(self, futures):
            return [f.value for f in futures]

    res = sources.cluster_scan(Client(), parts, ("x", "y"), "z", BOX, cells=(2, 2))
    assert res.n == 400 and [p.path for p in sent] == [str(tmp_path / "lake" / "a.parquet")]
