"""Data where it lives (issue 28): Parquet files, folders and globs, CSV folders and DuckDB read in one
checked streaming pass (privgp.datasets.sources), an order-independent fingerprint, exact per-cell
statistics (privgp.datasets.cellstats) and the noisy grid reduced on a real Dask cluster."""
from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")

from privgp.cli.main import main  # noqa: E402
from privgp.datasets import sources  # noqa: E402
from privgp.datasets.cellstats import CellSums, cell_sums  # noqa: E402
from privgp.errors import ClusterError, DataError, InvalidParameterError, MissingExtraError  # noqa: E402
from privgp.mechanisms.registered.grid import plan_grid  # noqa: E402
from privgp.mechanisms.release import ResponseMap  # noqa: E402
from privgp.models.domain import Box  # noqa: E402

BOX = Box([0.0, 0.0], [10.0, 5.0])
RMAP = ResponseMap(threshold=0.0, clip=1.0, transform="identity")
COORDS, RESP = ("lon", "lat"), "price"
ARGS = ["--x-col", "lon", "--y-col", "lat", "--response-col", "price", "--box", "0", "10", "0", "5",
        "--threshold", "0", "--clip", "1", "--mechanism", "grid", "--cells", "6", "--grid", "21",
        "--epsilon", "2", "--seed", "7", "--allow-noisy", "--no-report"]


def records(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform([0, 0], [10, 5], (n, 2))
    X[0] = [10.0, 5.0]   # a corner: the upper edge belongs to the last cell
    return X, np.sin(X[:, 0]) + rng.normal(0, 0.5, n)


def table(X, z, idx=None):
    idx = np.arange(len(z)) if idx is None else idx
    return pa.table({"id": pa.array(idx), "lon": X[idx, 0], "lat": X[idx, 1], "price": z[idx],
                     "note": pa.array(["x"] * len(idx))})


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """The same records as one Parquet file, five shuffled Parquet files, five CSV files and a DuckDB table."""
    root = tmp_path_factory.mktemp("lake")
    X, z = records()
    pq.write_table(table(X, z), root / "one.parquet")
    perm = np.random.default_rng(1).permutation(len(z))
    (root / "five").mkdir()
    (root / "csv").mkdir()
    for i, chunk in enumerate(np.array_split(perm, 5)):
        pq.write_table(table(X, z, chunk), root / "five" / f"part-{i}.parquet")
        table(X, z, chunk).to_pandas().to_csv(root / "csv" / f"part-{i}.csv", index=False, float_format="%.17g")
    con = duckdb.connect(str(root / "db.duckdb"))
    frame = table(X, z).to_pandas()  # noqa: F841 (read by DuckDB's replacement scan)
    con.execute("CREATE TABLE sales AS SELECT * FROM frame")
    con.close()
    return root, X, z


def scan(spec, **kw):
    return sources.scan(sources.resolve(str(spec), **kw), COORDS, RESP, BOX, RMAP.apply)


def test_every_source_reads_the_same_records_with_one_order_independent_fingerprint(lake):
    root, X, z = lake
    specs = [(root / "one.parquet", {}), (root / "five", {}), (f"{root}/five/part-*.parquet", {}),
             (root / "csv", {}), (f"duckdb://{root}/db.duckdb", {"query": "SELECT lon, lat, price FROM sales"}),
             (root / "db.duckdb", {"table": "sales"})]
    digests = set()
    ref = np.lexsort(np.column_stack([X, z]).T[::-1])
    for spec, kw in specs:
        res = scan(spec, **kw)
        data = sources.as_table(res, COORDS, RESP, str(spec))
        assert data.n == len(z)
        got = np.column_stack([data.X, data.response])
        np.testing.assert_array_equal(got[np.lexsort(got.T[::-1])], np.column_stack([X, z])[ref])
        digests.add(data.content_digest)
    assert len(digests) == 1
    assert len(sources.resolve(str(root / "five"))) == 5
    # other batch sizes (other partitioning inside the files): the same digest; a changed value: another
    again = sources.scan(sources.resolve(str(root / "five")), COORDS, RESP, BOX, batch_rows=97)
    assert again.digest() in digests
    z2 = z.copy()
    z2[17] += 1e-12
    pq.write_table(table(X, z2), root / "changed.parquet")
    assert scan(root / "changed.parquet").digest() not in digests


def test_single_csv_has_the_fingerprint_of_every_other_source(lake, tmp_path):
    """One CSV file (read whole by load_table, the CLI's single-file path) gets the v3 digest the streaming
    pass gives the same records from Parquet, a folder or DuckDB, in any row order."""
    from privgp.datasets.tabular import load_table

    root, X, z = lake
    want = scan(root / "one.parquet").digest()
    for i, perm in enumerate([np.arange(len(z)), np.random.default_rng(5).permutation(len(z))]):
        p = tmp_path / f"one-{i}.csv"
        table(X, z, perm).to_pandas().to_csv(p, index=False, float_format="%.17g")
        assert sources.is_single_csv(str(p))
        assert load_table(p, COORDS, RESP).content_digest == want


def test_exact_cell_sums_do_not_depend_on_order_or_partitioning():
    rng = np.random.default_rng(3)
    n = 5000
    idx = rng.integers(0, 9, n)
    w = rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-30, 1, n)
    sums, counts = cell_sums(9, idx, w)
    for c in range(9):
        assert sums[c] == float(sum(Fraction(x) for x in w[idx == c]))  # the exact sum, rounded once
        assert counts[c] == np.sum(idx == c)
    perm = rng.permutation(n)
    parts = [CellSums(9).add(idx[p], w[p]) for p in np.array_split(perm, 7)]
    total = parts[3]
    for i in (6, 0, 5, 1, 4, 2):
        total = total.merge(parts[i])
    s2, c2 = total.result()
    np.testing.assert_array_equal(s2, sums)
    np.testing.assert_array_equal(c2, counts)


def test_draw_from_statistics_is_draw():
    X, z = records(500)
    plan = plan_grid(500, BOX, RMAP, epsilon=2.0, cells=6, grid=21)
    Xc, y = plan.check(X, z)
    a = plan.draw(Xc, y, np.random.default_rng(4))
    b = plan.draw_from_statistics(*plan.statistics(Xc, y), np.random.default_rng(4))
    np.testing.assert_array_equal(a.field, b.field)
    np.testing.assert_array_equal(a.sd, b.sd)


@pytest.mark.parametrize("bad, needle", [
    ("nan", "NaN or infinite value at row 42"),
    ("outside", "row 42 of"),
    ("missing", "missing value at row 42"),
    ("string", "has type string"),
])
def test_a_bad_record_is_named_by_file_and_row_and_nothing_is_charged(lake, tmp_path, capsys, bad, needle):
    root, X, z = lake
    folder = tmp_path / "lake"
    folder.mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(len(z)), 3)):
        pq.write_table(table(X, z, chunk), folder / f"p{i}.parquet")
    ledger = tmp_path / "ledger.sqlite"
    common = ["release", "--data", str(folder), *ARGS, "--ledger", str(ledger)]
    assert main([*common, "--out", str(tmp_path / "ok")]) == 0
    before = ledger.read_bytes()
    t = table(X, z, np.arange(1000, 2000))
    cols = {n: t.column(n) for n in t.column_names}
    lon = t.column("lon").to_numpy().copy()
    if bad == "nan":
        lon[41] = np.nan
        cols["lon"] = pa.array(lon)
    elif bad == "outside":
        lon[41] = 11.0
        cols["lon"] = pa.array(lon)
    elif bad == "missing":
        cols["price"] = pa.array([None if i == 41 else v for i, v in enumerate(t.column("price").to_pylist())],
                                 type=pa.float64())
    else:
        cols["lat"] = pa.array([str(v) for v in t.column("lat").to_pylist()])
    pq.write_table(pa.table(cols), folder / "p1.parquet")
    capsys.readouterr()
    code = main([*common, "--out", str(tmp_path / "bad")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert needle in err and "p1.parquet" in err, err
    assert ledger.read_bytes() == before and not (tmp_path / "bad").exists()


def test_csv_folder_and_duckdb_errors_name_the_row(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.csv").write_text("lon,lat,price\n1,1,0\n2,2,abc\n")
    with pytest.raises(DataError, match=r"a\.csv.*row 2"):
        scan(tmp_path / "c")
    con = duckdb.connect(str(tmp_path / "d.duckdb"))
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1.0, 1.0, 0.5), (2.0, 7.0, 0.1)) v(lon, lat, price)")
    con.close()
    with pytest.raises(DataError, match=r"row 2 of .*d\.duckdb.*outside"):
        scan(tmp_path / "d.duckdb", table="t")
    with pytest.raises(DataError, match="exactly one of --query"):
        sources.resolve(str(tmp_path / "d.duckdb"))
    with pytest.raises(DataError, match="no files match"):
        sources.resolve(str(tmp_path / "nothing-*.parquet"))


def test_a_duckdb_query_cannot_touch_other_files(tmp_path):
    """The database is opened read-only and without file system access: a --query that would COPY the private rows
    to a file, read another file or attach another database fails (exit 2 in the CLI) and writes nothing."""
    con = duckdb.connect(str(tmp_path / "d.duckdb"))
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (0.5, 0.5, 0.5)) v(lon, lat, price)")
    con.close()
    (tmp_path / "other.csv").write_text("lon,lat,price\n0.1,0.1,0.1\n")
    for query in (f"COPY t TO '{tmp_path / 'leak.csv'}'", f"SELECT * FROM read_csv('{tmp_path / 'other.csv'}')",
                  "SET enable_external_access = true"):
        with pytest.raises(DataError):
            scan(tmp_path / "d.duckdb", query=query)
    assert not (tmp_path / "leak.csv").exists()
    assert scan(tmp_path / "d.duckdb", query="SELECT lon, lat, price FROM t") is not None


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as c, distributed.Client(c) as client:
        yield c, client


def test_cluster_statistics_equal_the_in_memory_ones_exactly(lake, cluster):
    root, X, z = lake
    _, client = cluster
    plan = plan_grid(len(z), BOX, RMAP, epsilon=2.0, cells=6, grid=21)
    res = sources.cluster_scan(client, sources.resolve(str(root / "five")), COORDS, RESP, BOX, RMAP.apply,
                               cells=plan.cells)
    sums, counts = res.cells.result()
    ref_sums, ref_counts = plan.statistics(*plan.check(X, z))
    np.testing.assert_array_equal(sums.reshape(plan.cells), ref_sums)
    np.testing.assert_array_equal(counts.reshape(plan.cells), ref_counts)
    assert res.n == len(z) and res.digest() == scan(root / "one.parquet").digest()


def test_a_release_through_the_cluster_equals_the_in_memory_release(lake, cluster, tmp_path, capsys):
    root, X, z = lake
    c, _ = cluster
    base = ["release", *ARGS, "--ledger", str(tmp_path / "ledger.sqlite"), "--budget-epsilon", "100"]
    csv = tmp_path / "one.csv"   # a single CSV: the records in memory, plan.draw
    table(X, z).to_pandas().to_csv(csv, index=False, float_format="%.17g")
    assert main([*base, "--data", str(csv), "--out", str(tmp_path / "mem")]) == 0
    # Parquet in this process: two streaming passes, no records kept; then the cluster
    assert main([*base, "--data", str(root / "one.parquet"), "--out", str(tmp_path / "stream")]) == 0
    assert main([*base, "--data", str(root / "five"), "--scheduler", c.scheduler_address,
                 "--out", str(tmp_path / "dask")]) == 0
    import json

    cert = json.loads((tmp_path / "dask" / "certificate.json").read_text())
    assert cert["dataset"]["source"].startswith("user data") and str(root) not in json.dumps(cert)
    a = np.load(tmp_path / "mem" / "field.npz")
    for other in ("stream", "dask"):
        b = np.load(tmp_path / other / "field.npz")
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])
    capsys.readouterr()


@pytest.mark.parametrize("mechanism", ["posterior-sample"])
def test_gp_mechanisms_from_per_site_statistics_equal_the_in_memory_release(lake, cluster, tmp_path, capsys, mechanism):
    """Snapped posterior sampling (2-D default) reads per-lattice-site counts and sums
    from one pass, in this process or on the cluster: the same paths as from the records in memory (same seed),
    to rounding."""
    root, X, z = lake
    c, _ = cluster
    gp = ["release", *ARGS[:15], "--mechanism", mechanism, "--grid", "21", "--epsilon", "2", "--seed", "7",
          "--allow-noisy", "--no-report", "--ledger", str(tmp_path / "ledger.sqlite"), "--budget-epsilon", "100"]
    csv = tmp_path / "one.csv"
    table(X, z).to_pandas().to_csv(csv, index=False, float_format="%.17g")
    assert main([*gp, "--data", str(csv), "--out", str(tmp_path / "mem")]) == 0
    assert main([*gp, "--data", str(root / "five"), "--out", str(tmp_path / "stream")]) == 0
    assert main([*gp, "--data", str(root / "five"), "--scheduler", c.scheduler_address, "--out",
                 str(tmp_path / "dask")]) == 0
    a = np.load(tmp_path / "mem" / "paths.npz")["paths"]
    for other in ("stream", "dask"):
        b = np.load(tmp_path / other / "paths.npz")["paths"]
        assert a.shape == b.shape and np.max(np.abs(a - b)) < 1e-9
    assert main(["verify", str(tmp_path / "dask" / "certificate.json")]) == 0
    capsys.readouterr()
    code = main([*gp, "--snap", "0", "--data", str(root / "five"), "--scheduler", c.scheduler_address, "--out",
                 str(tmp_path / "nosnap")])
    assert code == 2 and "with snapping" in capsys.readouterr().err


def test_help_documents_the_sources(capsys):
    try:
        main(["release", "--help"])
    except SystemExit:
        pass
    out = capsys.readouterr().out
    assert "duckdb:///" in out and "--query" in out and "Parquet" in out and "--scheduler" in out


def test_sparse_gp_from_sufficient_statistics_reduced_where_the_records_live(lake, cluster, tmp_path):
    """The DP sparse GP's sufficient statistics (A, B of seed 001 eq. 3) are sums over records: reduced per file
    (in this process or on the cluster), merged, released: the same prediction as from the records in memory."""
    root, X, z = lake
    c, _ = cluster
    sgp = ["release", *ARGS[:15], "--mechanism", "sparse-gp", "--grid", "21", "--epsilon", "2", "--seed", "7",
           "--allow-noisy", "--no-report", "--ledger", str(tmp_path / "ledger.sqlite"), "--budget-epsilon", "100"]
    csv = tmp_path / "one.csv"
    table(X, z).to_pandas().to_csv(csv, index=False, float_format="%.17g")
    assert main([*sgp, "--data", str(csv), "--out", str(tmp_path / "mem")]) == 0
    assert main([*sgp, "--data", str(root / "five"), "--out", str(tmp_path / "stream")]) == 0
    assert main([*sgp, "--data", str(root / "five"), "--scheduler", c.scheduler_address, "--out",
                 str(tmp_path / "dask")]) == 0
    a = np.load(tmp_path / "mem" / "prediction.npz")
    for other in ("stream", "dask"):
        b = np.load(tmp_path / other / "prediction.npz")
        for key in ("mean", "sd", "m"):
            np.testing.assert_allclose(a[key], b[key], rtol=1e-8, atol=1e-10)
    assert main(["verify", str(tmp_path / "dask" / "certificate.json")]) == 0


def _die(z):
    """A response transform that kills the worker process running it (mid-aggregation)."""
    import os

    os._exit(1)


def test_a_worker_killed_mid_aggregation_stops_the_release_before_the_charge(lake, tmp_path):
    """A real worker process dies while it reduces its part (a nanny-less process cluster that allows no task
    retries): the reduction raises ClusterError (a PrivgpError: one line from the command), and the command
    charges only after the reduction, so nothing is charged."""
    distributed = pytest.importorskip("distributed")
    root, _, _ = lake
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                     dashboard_address=":0") as c, distributed.Client(c) as client:
        with pytest.raises(ClusterError, match="nothing was charged"):
            sources.cluster_scan(client, sources.resolve(str(root / "five")), COORDS, RESP, BOX, _die, cells=(4, 2))


def test_parquet_footers_are_counted_and_the_one_pass_fingerprints_the_records(lake):
    """Before the plan, ``privgp release`` needs only n: Parquet footers give it without reading a record
    (count_only: no fingerprint, so nothing can be charged on it); CSV files are read, checked and hashed."""
    root, X, z = lake
    parts = sources.resolve(str(root / "five"))
    counted = sources.scan(parts, COORDS, RESP, BOX, RMAP.apply, keep=False, count_only=True)
    assert counted.n == len(z) and not counted.hashed
    with pytest.raises(ValueError, match="no fingerprint"):
        counted.digest()
    read = sources.scan(sources.resolve(str(root / "csv")), COORDS, RESP, BOX, RMAP.apply, keep=False,
                        count_only=True)
    assert read.n == len(z) and read.hashed and read.digest() == scan(root / "five").digest()
    (root / "broken").mkdir(exist_ok=True)
    (root / "broken" / "a.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match=r"cannot read .*a\.parquet"):
        sources.scan(sources.resolve(str(root / "broken")), COORDS, RESP, BOX, count_only=True)


def test_the_reduction_must_find_the_records_that_were_counted(lake):
    """The plan was made for the n counted first; a reduction that finds other records (the files changed in
    between) is refused before anything is charged, and the fingerprint charged is that of the records reduced."""
    import argparse
    import dataclasses

    from privgp.cli.release import _cluster_statistics

    root, X, z = lake
    args = argparse.Namespace(data=str(root / "five"), query=None, table=None, dask=None, scheduler=None)
    plan = plan_grid(len(z), BOX, RMAP, epsilon=2.0, cells=6, grid=21)
    data = sources.ReducedData(n=len(z), dim=2, coordinates=COORDS, response_name=RESP, source="five",
                               content_digest=None)
    _, reduced = _cluster_statistics(args, plan, data)
    assert reduced.content_digest == scan(root / "one.parquet").digest()
    with pytest.raises(InvalidParameterError, match="did the data change"):
        _cluster_statistics(args, plan_grid(len(z) + 1, BOX, RMAP, epsilon=2.0, cells=6, grid=21),
                            dataclasses.replace(data, n=len(z) + 1))
    with pytest.raises(InvalidParameterError, match="did the data change"):
        _cluster_statistics(args, plan, dataclasses.replace(data, content_digest="0" * 64))


def test_dask_local_starts_one_cluster_for_the_whole_command(lake, tmp_path, monkeypatch, capsys):
    """--dask local: the count and the reduction share one LocalCluster (started once, closed at the end), its
    scratch folder (Dask's lock files) is removed at the end, and the release equals the one computed in this
    process."""
    import dask

    distributed = pytest.importorskip("distributed")
    root, X, z = lake
    started, scratch = [], []

    class Counted(distributed.LocalCluster):
        def __init__(self, *a, **kw):
            started.append(self)
            scratch.append((kw.get("local_directory"), dask.config.get("temporary-directory")))
            super().__init__(*a, **{**kw, "processes": False})

    monkeypatch.setattr(distributed, "LocalCluster", Counted)
    base = ["release", "--data", str(root / "five"), *ARGS, "--ledger", str(tmp_path / "ledger.sqlite"),
            "--budget-epsilon", "100", "--json"]
    assert main([*base, "--out", str(tmp_path / "here")]) == 0
    assert main([*base, "--dask", "local", "--out", str(tmp_path / "dask")]) == 0
    assert len(started) == 1 and started[0].status.name == "closed"
    (local, temporary), = scratch
    assert local == temporary and "privgp-dask-" in local and not Path(local).exists()
    a, b = np.load(tmp_path / "here" / "field.npz"), np.load(tmp_path / "dask" / "field.npz")
    for k in a.files:
        np.testing.assert_array_equal(a[k], b[k])
    import json

    fps = {json.loads((tmp_path / d / "certificate.json").read_text())["dataset"]["fingerprint"] for d in ("here", "dask")}
    assert len(fps) == 1
    capsys.readouterr()


def test_parts_scanned_in_threads_give_the_serial_result_exactly(lake, tmp_path):
    """scan() reduces parts in threads (one per core by default): per-cell sums, the DP sparse GP's float
    sufficient statistics and the fingerprint equal the one-thread scan's bit for bit (each part alone, merged
    in the same order), and of two bad parts the first in order is named."""
    from privgp.mechanisms.sparse_gp_release import plan_sparse_gp

    root, X, z = lake
    parts = sources.resolve(str(root / "five"))
    sgp = plan_sparse_gp(len(z), BOX, RMAP, epsilon=2.0, grid=21).reduction()
    for cells in ((6, 3), sgp):
        one = sources.scan(parts, COORDS, RESP, BOX, RMAP.apply, keep=False, cells=cells, threads=1)
        many = sources.scan(parts, COORDS, RESP, BOX, RMAP.apply, keep=False, cells=cells, threads=3)
        assert one.digest() == many.digest() and one.n == many.n == len(z)
        for a, b in zip(one.cells.result(), many.cells.result()):
            np.testing.assert_array_equal(a, b)
    kept = sources.scan(parts, COORDS, RESP, BOX, threads=2)
    np.testing.assert_array_equal(np.concatenate(kept.X), np.concatenate(sources.scan(parts, COORDS, RESP, BOX,
                                                                                      threads=1).X))
    folder = tmp_path / "bad"
    folder.mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(len(z)), 4)):
        Xb = X.copy()
        if i in (1, 3):
            Xb[chunk[9], 0] = 11.0     # outside the box, in the second and the fourth file
        pq.write_table(table(Xb, z, chunk), folder / f"p{i}.parquet")
    with pytest.raises(DataError, match=r"row 10 of .*p1\.parquet"):
        sources.scan(sources.resolve(str(folder)), COORDS, RESP, BOX, keep=False, threads=4)


def test_a_data_path_that_exists_but_is_no_file_is_named_so():
    with pytest.raises(DataError, match="not a regular file or a folder"):
        sources.resolve("/dev/null")


def test_a_folder_or_glob_that_reaches_one_file_twice_is_refused(tmp_path):
    """Red team round 18: a link in a Parquet folder (latest.parquet -> part0.parquet) read that file twice: every
    record counted, reduced and fingerprinted twice (1015 records released as 2030, under a new ledger key)."""
    import os

    root = tmp_path / "lake"
    root.mkdir()
    pq.write_table(pa.table({"x": [0.5, 1.5], "y": [0.5, 1.5], "v": [1.0, 2.0]}), root / "part0.parquet")
    sources.resolve(str(root))                                        # one file: fine
    os.symlink(root / "part0.parquet", root / "latest.parquet")
    for spec in (str(root), str(root / "*.parquet")):
        with pytest.raises(DataError, match="reaches one file twice"):
            sources.resolve(spec)
    os.unlink(root / "latest.parquet")     # red team 19: a hard link too
    os.link(root / "part0.parquet", root / "latest.parquet")
    with pytest.raises(DataError, match="reaches one file twice"):
        sources.resolve(str(root))


def test_decimal_float32_and_float16_columns_get_the_key_of_the_same_values_in_csv(tmp_path):
    """Red team 26 (privacy): pyarrow's DECIMAL-to-float cast misrounds about a third of values by one ulp, and a
    float32 column widened is not what its digits say, so the same records from DuckDB DECIMAL or float32 Parquet
    and from a CSV file got two ledger keys (a budget each). Each column is now read as its digits are: one key.
    The key an earlier privgp gave them is kept as an alias (a ledger that charged it keeps charging it)."""
    import pandas as pd

    from privgp.datasets.fingerprint import records_digest, swapped_digests
    from privgp.datasets.tabular import load_table

    rng = np.random.default_rng(11)
    n = 400
    X = np.round(rng.uniform([0, 0], [10, 5], (n, 2)), 4)
    z = np.round(rng.normal(0, 1, n), 4)
    csv = tmp_path / "dec.csv"
    csv.write_text("lon,lat,price\n" + "".join(f"{a:.4f},{b:.4f},{c:.4f}\n" for (a, b), c in zip(X, z)))
    want = load_table(csv, COORDS, RESP).content_digest
    assert scan(csv).digest() == want                       # the streaming CSV pass agrees
    con = duckdb.connect(str(tmp_path / "dec.duckdb"))
    frame = pa.table({"lon": X[:, 0], "lat": X[:, 1], "price": z})  # noqa: F841 (read by DuckDB)
    con.execute("CREATE TABLE sales AS SELECT CAST(lon AS DECIMAL(12, 4)) AS lon, CAST(lat AS DECIMAL(12, 4)) AS "
                "lat, CAST(price AS DECIMAL(12, 4)) AS price FROM frame")
    con.close()
    res = scan(tmp_path / "dec.duckdb", table="sales")
    assert res.digest() == want
    import pyarrow.compute as pc
    old = [np.asarray(pc.cast(pa.array(c, type=pa.float64()).cast(pa.decimal128(12, 4)), pa.float64()))
           for c in (X[:, 0], X[:, 1], z)]
    assert any(np.any(o != c) for o, c in zip(old, (X[:, 0], X[:, 1], z)))   # the old reading differed
    read = load_table(csv, COORDS, RESP)
    assert res.aliases() == (records_digest(np.column_stack(old[:2]), old[2]), *swapped_digests(read.X, read.response))
    # float32 coordinates and a float16 response in Parquet; the CSV holds their shortest digits
    X32, z16 = X.astype(np.float32), z.astype(np.float16)
    small = pa.table({"lon": X32[:, 0], "lat": X32[:, 1], "price": z16})
    pq.write_table(small, tmp_path / "f32.parquet")
    csv32 = tmp_path / "f32.csv"
    small.to_pandas().to_csv(csv32, index=False)     # pandas prints a float32 or float16 by its shortest digits
    res32 = scan(tmp_path / "f32.parquet")
    assert res32.digest() == load_table(csv32, COORDS, RESP).content_digest == scan(csv32).digest()
    read32 = load_table(csv32, COORDS, RESP)
    assert res32.aliases() == (records_digest(X32.astype(float), z16.astype(float)),
                               *swapped_digests(read32.X, read32.response))
    # float64 sources: only the alias of the coordinates swapped
    assert scan(csv32).aliases() == swapped_digests(read32.X, read32.response)
    assert scan(csv).aliases() == swapped_digests(read.X, read.response)
    # Python: float32/float16 arrays or DataFrame columns are read the same way, with the same alias
    import privgp

    for rec in (privgp.records(X32, z16), privgp.records(X32.astype(">f4"), z16.astype(">f2")),   # big-endian too
                privgp.records(small.to_pandas(), "price", coordinates=list(COORDS)),
                privgp.records(small.to_pandas(types_mapper=lambda t: {pa.float32(): pd.Float32Dtype()}.get(t)),
                               "price", coordinates=list(COORDS))):
        assert rec.content_digest == res32.digest() and rec.aliases == res32.aliases()
    plain = privgp.records(X32.astype(float), z16.astype(float))     # widened by the caller: other values
    assert plain.content_digest == res32.aliases()[0] and plain.aliases == swapped_digests(plain.X, plain.response)


def test_a_ledger_that_charged_a_float32_file_under_its_earlier_key_keeps_it(tmp_path, capsys):
    """The same float32 Parquet records released before and after the reading changed: one data set in the ledger,
    its budget spent by both (not a fresh budget under a new key); and the same values as CSV share it."""
    import json

    from privgp.accounting import GaussianEvent
    from privgp.datasets.fingerprint import records_digest
    from privgp.ledger import Ledger

    X, z = records(600, seed=4)
    X32, z32 = X.astype(np.float32), z.astype(np.float32)
    path = tmp_path / "f32.parquet"
    small = pa.table({"lon": X32[:, 0], "lat": X32[:, 1], "price": z32})
    pq.write_table(small, path)
    ledger = tmp_path / "ledger.sqlite"
    led = Ledger(ledger, create_on_charge=True)
    earlier = led.fingerprint(records_digest(X32.astype(float), z32.astype(float)))   # the key until 2026-11-29
    led.charge(earlier, GaussianEvent(sensitivity=1.0, noise_std=5.0), budget_epsilon=100.0, budget_delta=1e-6)
    base = ["release", *ARGS, "--ledger", str(ledger), "--budget-epsilon", "100", "--json"]
    assert main([*base, "--data", str(path), "--out", str(tmp_path / "a")]) == 0
    csv = tmp_path / "f32.csv"
    small.to_pandas().to_csv(csv, index=False)
    assert main([*base, "--data", str(csv), "--out", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    for d in ("a", "b"):
        assert json.loads((tmp_path / d / "certificate.json").read_text())["dataset"]["fingerprint"] == earlier
    (only,) = Ledger(ledger).datasets()
    assert only.fingerprint == earlier and len(Ledger(ledger).entries(earlier)) == 3


def test_a_duckdb_source_without_duckdb_names_the_extra(tmp_path, monkeypatch, capsys):
    """Walk-through 20: without the ``data`` extra a DuckDB source failed with "No module named 'duckdb'"; it now names
    ``pip install 'privgp[data]'`` (exit 2, one line, before anything is charged)."""
    con = duckdb.connect(str(tmp_path / "d.duckdb"))
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (0.5, 0.5, 0.5)) v(lon, lat, price)")
    con.close()
    monkeypatch.setitem(sys.modules, "duckdb", None)   # import duckdb now fails as it does without the package
    with pytest.raises(MissingExtraError, match=r"pip install 'privgp\[data\]'"):
        sources.resolve(str(tmp_path / "d.duckdb"), table="t")
    capsys.readouterr()
    code = main(["release", "--data", str(tmp_path / "d.duckdb"), "--table", "t", "--x-col", "lon", "--y-col", "lat",
                 "--response-col", "price", "--box", "0", "1", "0", "1", "--threshold", "0.4", "--clip", "1",
                 "--ledger", str(tmp_path / "l.sqlite"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "pip install 'privgp[data]'" in err, err
    assert not (tmp_path / "o").exists() and not (tmp_path / "l.sqlite").exists()
