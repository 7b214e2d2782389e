"""Private records where they live: Parquet and CSV files, folders and globs (pyarrow), DuckDB (SQL).

``--data`` specifications (:func:`resolve`):

* ``sales.csv``: one CSV file (read by :func:`privgp.datasets.tabular.load_table`, its own fingerprint);
* ``sales.parquet``, ``lake/`` (every ``*.parquet`` / ``*.csv`` file below it), ``lake/part-*.parquet``
  (a glob): read with ``pyarrow.dataset``, file by file, in record batches of the used columns only;
* ``duckdb:///path/db.duckdb`` or ``db.duckdb`` with ``query`` (any SELECT) or ``table`` (a table or
  view name): the query's result fetched from DuckDB in record batches.

One streaming pass (:func:`scan_part` per file or query, merged by :func:`merge`) checks every record
(types, missing and non-finite values, points outside the public box, responses the public transform
cannot take) -- the first offending row and its file are named in a one-line
:class:`~privgp.errors.DataError`; points outside the box are counted over the whole pass and refused with their
number, and two parts holding the same records (a copied file) are refused -- and computes in the same pass
the ORDER-INDEPENDENT fingerprint of :mod:`privgp.datasets.fingerprint` (version 3:
SHA-256 of d, n and two sums mod 2^64 of per-record 64-bit hashes), merged over parts by adding the sums, so
the same records in 1 or 100 files, or in one CSV file, get the same ledger key. It is private and never
written: the ledger stores only its keyed hash (HMAC with the ledger's secret key,
:meth:`privgp.ledger.Ledger.fingerprint`).

The pass keeps only the used columns as float64 (24 bytes per 2-D record), or, with ``cells``, only the
exact per-cell statistics of the grid mechanism (:mod:`privgp.datasets.cellstats`): that is what a Dask
worker computes per file (:func:`cluster_scan`), so only statistics cross the network.
"""
from __future__ import annotations

import glob as _glob
import importlib.util
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import validation as v
from ..errors import ClusterError, DataError, InvalidParameterError, MissingExtraError
from ..models.domain import Box, CellGrid
from .batch_memory import retained
from .cellstats import CellSums
from .fingerprint import add_sums, digest_of_sums, record_hashes, shortest_digits

#: records per batch read from a file or a query
BATCH_ROWS = 1 << 18
#: at most this many parts scanned at once in one process (each holds a batch's arrays, tens of MB)
MAX_THREADS = 8
DUCKDB_PREFIX = "duckdb://"
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


@dataclass(frozen=True)
class Part:
    """One unit of the pass: a Parquet or CSV file, or a DuckDB query (picklable, sent to Dask workers)."""

    kind: str            # "parquet", "csv" or "duckdb"
    path: str
    query: str | None = None

    @property
    def label(self) -> str:
        return f"{self.path} (query result)" if self.kind == "duckdb" else self.path


def is_single_csv(spec: str) -> bool:
    return not spec.startswith(DUCKDB_PREFIX) and Path(spec).suffix.lower() == ".csv" and Path(spec).is_file()


def resolve(spec: str, *, query: str | None = None, table: str | None = None) -> list[Part]:
    """The parts of a ``--data`` specification (module docstring), sorted by path; a DataError otherwise."""
    spec = str(spec)
    if spec.startswith(DUCKDB_PREFIX) or Path(spec).suffix.lower() in (".duckdb", ".db"):
        path = spec[len(DUCKDB_PREFIX):] if spec.startswith(DUCKDB_PREFIX) else spec
        if path.startswith("/") and spec.startswith(DUCKDB_PREFIX + "/"):
            path = path[1:] if path.startswith("//") else path
        if not Path(path).is_file():
            raise DataError(f"DuckDB database not found: {path}")
        if importlib.util.find_spec("duckdb") is None:   # walk-through 20: the bare ImportError named no extra
            raise MissingExtraError("reading a DuckDB database", "duckdb", "data")
        if (query is None) == (table is None):
            raise DataError("a DuckDB source needs exactly one of --query \"SELECT ...\" or --table NAME")
        if table is not None:
            query = f'SELECT * FROM "{table.replace(chr(34), chr(34) * 2)}"'
        return [Part("duckdb", path, query)]
    if Path(spec).is_file():
        _refuse_sqlite(spec)   # whatever its name: SQLite gets its own message
    if query is not None or table is not None:
        raise DataError("--query and --table are for a DuckDB source (duckdb:///path/db.duckdb or a .duckdb file)")
    p = Path(spec)
    if p.is_dir():
        files = sorted(str(f) for f in p.rglob("*") if f.is_file() and f.suffix.lower() in _SUFFIXES
                       and not any(s.startswith((".", "_")) for s in f.relative_to(p).parts))
        if not files:
            raise DataError(f"folder {spec} holds no .parquet or .csv files")
    elif p.is_file():
        files = [spec]
    elif any(ch in spec for ch in "*?["):
        files = sorted(f for f in _glob.glob(spec, recursive=True) if os.path.isfile(f))
        if not files:
            raise DataError(f"no files match {spec}")
    elif p.exists():   # a FIFO, a device: nothing a release can read twice or hash
        raise DataError(f"data path is not a regular file or a folder: {spec}")
    else:
        raise DataError(f"data file not found: {spec}")
    seen: dict[tuple[int, int], str] = {}
    for f in files:   # one file reached twice (a symbolic or hard link in the folder): its records would count twice
        st = os.stat(f)
        if (st.st_dev, st.st_ino) in seen:
            raise DataError(f"{spec} reaches one file twice ({seen[(st.st_dev, st.st_ino)]} and {f}, a link to it): its "
                            "records would be read twice; remove the link or give the files once")
        seen[(st.st_dev, st.st_ino)] = f
    parts = []
    for f in files:
        kind = _SUFFIXES.get(Path(f).suffix.lower())
        if kind is None:
            raise DataError(f"data file {f}: not a .parquet or .csv file (give a Parquet or CSV file, a folder, "
                            "a glob, or duckdb:///path/db.duckdb)")
        parts.append(Part(kind, f))
    if len({q.kind for q in parts}) > 1:
        raise DataError(f"{spec} mixes Parquet and CSV files; give one format")
    return parts


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _numbers(batch: Any, name: str, where: str, row0: int) -> tuple[np.ndarray, np.ndarray | None]:
    """A record batch's column as float64, as the same numbers written in a CSV file are read, and the float64
    values privgp before 2026-11-29 read from it where they differ (else None), or a DataError naming the
    first bad row (1-based). A DECIMAL column is read through its exact digits (pyarrow's decimal-to-float
    cast misrounds about a third of values by one ulp) and a float32 or float16 column through its shortest
    decimal text (what such a column printed as CSV says; widening it would give other float64 values), so
    that the same records read from Parquet, DuckDB or CSV get the same fingerprint: the ledger knows them
    as one data set (:meth:`ScanResult.aliases` keeps the earlier key for a ledger that charged it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = batch.column(name)
    t = col.type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)):
        raise DataError(f"column {name!r} of {where} has type {t}, not numbers (first row {row0 + 1})")
    if col.null_count:
        raise DataError(f"column {name!r} of {where} has a missing value at row "
                        f"{row0 + _first(np.asarray(pc.is_null(col))) + 1}")
    # integers round to the nearest float64 (as a CSV file's digits are parsed): beyond 2^53 a safe cast refuses
    values = np.asarray(pc.cast(col, pa.float64(), safe=not pa.types.is_integer(t)), dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        raise DataError(f"column {name!r} of {where} has a NaN or infinite value at row {row0 + _first(bad) + 1}")
    if pa.types.is_decimal(t) or t in (pa.float32(), pa.float16()):
        read = (np.asarray(pc.cast(pc.cast(col, pa.string()), pa.float64()), dtype=float) if pa.types.is_decimal(t)
                else shortest_digits(col.to_numpy(zero_copy_only=False)))
        if np.any(read != values):
            return read, values
    return values, None


def _batches(part: Part, columns: Sequence[str], batch_rows: int) -> Iterator[Any]:
    """pyarrow record batches of the used columns of one part, in order."""
    import pyarrow as pa

    where = part.label
    try:
        if part.kind == "duckdb":
            import duckdb

            if part.query is None:     # resolve() gives every DuckDB part its query
                raise DataError(f"{where}: a DuckDB source needs --query or --table")
            _refuse_sqlite(part.path)
            # read-only, and no file system access beyond the database (a --query's COPY TO, read_csv or ATTACH
            # would otherwise write or read other files), locked so the query cannot turn it back on
            con = duckdb.connect(part.path, read_only=True,
                                 config={"enable_external_access": False, "lock_configuration": True})
            try:
                rel = con.sql(part.query)
                have = list(rel.columns)
                folded = [h.lower() for h in have]   # DuckDB resolves names case-insensitively: the first would win
                twice = [c for c in columns if folded.count(c.lower()) > 1]
                if twice:
                    raise DataError(f"column {twice[0]!r} appears more than once in {where} (its columns are: "
                                    + ", ".join(map(repr, have[:20])) + "); name each column of the query once")
                missing = [c for c in columns if c not in have]
                if missing:
                    raise DataError(f"column(s) {', '.join(map(repr, missing))} not in {where}; its columns are: "
                                    + ", ".join(map(repr, have[:20])))
                cols = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
                reader = rel.project(cols).to_arrow_reader(batch_rows) if hasattr(rel, "to_arrow_reader") \
                    else rel.project(cols).fetch_arrow_reader(batch_rows)
                yield from reader
            finally:
                con.close()
            return
        import pyarrow.dataset as ds

        fmt: Any = "parquet"
        if part.kind == "csv":
            import pyarrow.csv as pacsv

            fmt = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
                column_types={c: pa.float64() for c in columns}, strings_can_be_null=False))
        dset = ds.dataset(part.path, format=fmt)
        have = dset.schema.names
        missing = [c for c in columns if c not in have]
        if missing:
            raise DataError(f"column(s) {', '.join(map(repr, missing))} not found in {where}; its columns are: "
                            + ", ".join(map(repr, have[:20])))
        yield from dset.to_batches(columns=list(columns), batch_size=batch_rows)
    except DataError:
        raise
    except Exception as exc:  # pyarrow / duckdb: unreadable file, bad SQL, unparsable CSV value
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if part.kind == "csv" and "conversion error" in first.lower():
            _locate_csv(part.path, columns)
        raise DataError(f"cannot read {where}: {first}") from None


def _refuse_sqlite(path: str) -> None:
    """A SQLite file given as a DuckDB database: DuckDB would try to load its sqlite extension, which privgp's
    locked, offline connection forbids ("Loading external extensions is disabled"); say what to do instead."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return    # DuckDB's own message names the unreadable file
    if head == b"SQLite format 3\x00":
        raise DataError(f"{path} is a SQLite database; privgp reads DuckDB databases, Parquet and CSV files: export "
                        "the table (e.g. sqlite3 -header -csv FILE 'SELECT ...' > records.csv, or DuckDB's "
                        "ATTACH ... (TYPE sqlite) and COPY ... TO 'records.parquet')")


def _locate_csv(path: str, columns: Sequence[str]) -> None:
    """Error path only: re-read a CSV file as text to name the first non-numeric row."""
    from .tabular import _numeric_column, _read_strings

    df = _read_strings(Path(path))
    for c in columns:
        if c in df.columns:
            _numeric_column(df, c, path)


@dataclass
class ScanResult:
    """What the pass over some records found: n, the two hash sums, and the used columns (``keep``) or
    the per-cell statistics (``cells``). Merge results with :func:`merge` in any order. ``hashed`` is False
    where some records were only counted (:func:`count_part`): then there is no digest."""

    dim: int
    n: int = 0
    s1: int = 0
    s2: int = 0
    #: the hash sums of the records as read before 2026-11-29, and whether any differed (:meth:`aliases`)
    e1: int = 0
    e2: int = 0
    changed: bool = False
    #: the hash sums of 2-D records with their two coordinates swapped (:meth:`aliases`)
    w1: int = 0
    w2: int = 0
    X: list = field(default_factory=list)
    z: list = field(default_factory=list)
    cells: Any = None   # the accumulator of the reduction (per-site sums and counts, or a plan's own)
    hashed: bool = True
    #: per-axis least and greatest coordinate and the least and greatest response read (None: nothing read)
    lo: Any = None
    hi: Any = None
    z_range: tuple[float, float] | None = None
    #: records outside the public box (not hashed nor reduced) and where the first is, in words
    outside: int = 0
    first_outside: str | None = None
    #: (label, n, s1, s2) of each hashed part read: two parts holding the same records are refused (:func:`merge`)
    part_sums: list = field(default_factory=list)

    def extend(self, lo: np.ndarray, hi: np.ndarray, z_lo: float, z_hi: float) -> None:
        """Widen the extents to cover more records."""
        self.lo = lo if self.lo is None else np.minimum(self.lo, lo)
        self.hi = hi if self.hi is None else np.maximum(self.hi, hi)
        self.z_range = (z_lo, z_hi) if self.z_range is None else (min(self.z_range[0], z_lo),
                                                                  max(self.z_range[1], z_hi))

    def digest(self) -> str:
        if not self.hashed:
            raise ValueError("no fingerprint: some records were counted, not read (count_part)")
        return digest_of_sums(self.dim, self.n, self.s1, self.s2)

    def aliases(self) -> tuple[str, ...]:
        """The digest privgp gave these records before 2026-11-29, where it differs (a DECIMAL, float32 or float16
        column was read otherwise then: :func:`_numbers`): a ledger that charged them under that key keeps it
        (:meth:`privgp.ledger.Ledger.fingerprint_of`); and for 2-D records the digest of the same records with their
        coordinates swapped (:func:`~privgp.datasets.fingerprint.swapped_digests`). Private like :meth:`digest`."""
        if not self.hashed:
            raise ValueError("no fingerprint: some records were counted, not read (count_part)")
        return (((digest_of_sums(self.dim, self.n, self.e1, self.e2),) if self.changed else ())
                + ((digest_of_sums(self.dim, self.n, self.w1, self.w2),) if self.dim == 2 else ()))


def merge(results: Sequence[ScanResult]) -> ScanResult:
    """The results of disjoint parts as one; a DataError where records lie outside the public box (how many,
    and the first) or two parts hold the same records (a copy of a file: its records would count twice)."""
    out = ScanResult(dim=results[0].dim)
    for r in results:
        out.n += r.n
        out.outside += r.outside
        out.first_outside = out.first_outside or r.first_outside
        out.part_sums.extend(r.part_sums)
        out.hashed = out.hashed and r.hashed
        out.s1, out.s2 = add_sums((out.s1, out.s2), (r.s1, r.s2))
        out.e1, out.e2 = add_sums((out.e1, out.e2), (r.e1, r.e2))
        out.changed = out.changed or r.changed
        out.w1, out.w2 = add_sums((out.w1, out.w2), (r.w1, r.w2))
        out.X.extend(r.X)
        out.z.extend(r.z)
        if r.cells is not None:
            out.cells = r.cells if out.cells is None else out.cells.merge(r.cells)
        if r.z_range is not None:
            out.extend(r.lo, r.hi, *r.z_range)
    if out.outside:
        raise DataError(f"{out.first_outside}; {out.outside} of the {out.n} records read lie outside it")
    seen: dict[tuple[int, int, int], str] = {}
    for label, n, s1, s2 in out.part_sums:
        if n and (n, s1, s2) in seen:
            raise DataError(f"{seen[(n, s1, s2)]} and {label} hold the same {n} records (a copy of one file?): they "
                            "would count twice; remove the copy or give the files once")
        seen.setdefault((n, s1, s2), label)
    return out


class SiteSums:
    """The accumulator of a site rule (``size``, ``index(X)``: cells of a grid, lattice sites): exact per-site
    sums of the responses and counts (:class:`~privgp.datasets.cellstats.CellSums`), merged in any order."""

    def __init__(self, rule: Any, sums: CellSums | None = None) -> None:
        self.rule = rule
        self.sums = CellSums(rule.size) if sums is None else sums

    def add(self, X: np.ndarray, y: np.ndarray) -> SiteSums:
        self.sums.add(self.rule.index(X), y)
        return self

    def merge(self, other: SiteSums) -> SiteSums:
        return SiteSums(self.rule, self.sums.merge(other.sums))

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        return self.sums.result()


@dataclass(frozen=True)
class _SiteReduction:
    rule: Any

    def start(self) -> SiteSums:
        return SiteSums(self.rule)


def reduction_of(domain: Box, cells: Any) -> Any:
    """The reduction of ``cells``: cells per axis (a tuple), a site rule (``size``, ``index``) or a reduction
    (``start()`` giving an accumulator with ``add(X, y)``, ``merge``, ``result``: a plan's own statistics)."""
    if isinstance(cells, (tuple, list)):
        return _SiteReduction(CellGrid(domain, tuple(int(c) for c in cells)))
    if hasattr(cells, "start"):
        return cells
    if hasattr(cells, "size") and callable(getattr(cells, "index", None)):
        return _SiteReduction(cells)
    raise InvalidParameterError("cells", "cells per axis, a site rule or a reduction", type(cells).__name__)


def scan_part(part: Part, coordinates: Sequence[str], response: str, domain: Box,
              transform: Callable[[np.ndarray], np.ndarray] | None = None, *, keep: bool = True,
              cells: Any = None, batch_rows: int = BATCH_ROWS) -> ScanResult:
    """One streaming pass over a part: check every record, hash it, keep the used columns (``keep``) and/or
    reduce the transformed responses ``transform(z)`` to exact per-cell statistics (``cells``: cells per axis
    of :func:`privgp.models.domain.cell_index`, or any public rule with ``size`` and ``index(X)``, such as
    the lattice sites of a snapped posterior-sample release). A DataError names the first bad row and file;
    records outside the public box are only counted here (``outside``, ``first_outside``: neither hashed nor
    reduced) and refused by :func:`merge`, which every caller applies, so that the refusal says how many there are
    over all parts: a result of this function alone is not checked data."""
    coordinates = tuple(coordinates)
    res = ScanResult(dim=len(coordinates))
    res.cells = None if cells is None else reduction_of(domain, cells).start()
    with retained():     # a Dask worker's allocator returns each batch's memory to the kernel otherwise
        return _scan_batches(part, coordinates, response, domain, transform, keep, res, batch_rows)


def _scan_batches(part: Part, coordinates: tuple[str, ...], response: str, domain: Box,
                  transform: Callable[[np.ndarray], np.ndarray] | None, keep: bool, res: ScanResult,
                  batch_rows: int) -> ScanResult:
    cols = coordinates + (response,)
    lo, hi = np.asarray(domain.lower, dtype=float), np.asarray(domain.upper, dtype=float)
    row0 = 0
    where = part.label
    for batch in _batches(part, cols, batch_rows):
        k = batch.num_rows
        if k == 0:
            continue
        read = [_numbers(batch, c, where, row0) for c in cols]
        cx, z = [r[0] for r in read[:-1]], read[-1][0]
        earlier = None if all(r[1] is None for r in read) else [r[0] if r[1] is None else r[1] for r in read]
        X = np.column_stack(cx)
        # the box per column (contiguous): min/max over axis 0 of the n x d array cost 40x more
        c_lo, c_hi = np.array([c.min() for c in cx]), np.array([c.max() for c in cx])
        res.extend(c_lo, c_hi, float(z.min()), float(z.max()))
        if np.any(c_lo < lo) or np.any(c_hi > hi):   # counted over the whole pass, refused by merge()
            out = ~np.all((X >= lo) & (X <= hi), axis=1)
            if res.first_outside is None:
                i = _first(out)
                res.first_outside = (f"row {row0 + i + 1} of {where} lies outside the public box {domain.describe()} "
                                     f"({', '.join(coordinates)} = {', '.join(f'{x:g}' for x in X[i])})")
            res.outside += int(out.sum())
            res.n += k
            row0 += k
            continue
        y = None
        if transform is not None:
            try:
                y = transform(z)
            except ValueError:
                for i in range(k):
                    try:
                        transform(z[i:i + 1])
                    except ValueError as exc:
                        raise DataError(f"row {row0 + i + 1} of {where}: response {response!r} = {z[i]:g} cannot "
                                        f"be used ({str(exc).splitlines()[0]})") from None
                raise
        s1, s2 = record_hashes([*cx, z])
        res.s1, res.s2 = add_sums((res.s1, res.s2), (s1, s2))
        if len(cx) == 2:   # the same records with their coordinates swapped (ScanResult.aliases)
            res.w1, res.w2 = add_sums((res.w1, res.w2), record_hashes([cx[1], cx[0], z]))
        if earlier is not None:   # the records as privgp read them before 2026-11-29 (ScanResult.aliases)
            res.changed = True
            s1, s2 = record_hashes(earlier)
        res.e1, res.e2 = add_sums((res.e1, res.e2), (s1, s2))
        res.n += k
        if keep:
            res.X.append(X)
            res.z.append(z)
        if res.cells is not None and y is not None:
            res.cells.add(X, y)
        row0 += k
    if res.hashed:
        res.part_sums.append((where, res.n, res.s1, res.s2))
    return res


def count_part(part: Part, coordinates: Sequence[str], response: str, domain: Box,
               transform: Callable[[np.ndarray], np.ndarray] | None = None, *, keep: bool = False,
               cells: Any = None, batch_rows: int = BATCH_ROWS) -> ScanResult:
    """The number of records of a part, without reading them where the format stores it: a Parquet file's
    footer (``hashed=False``: neither checked nor fingerprinted -- the pass that reduces the records does both);
    any other part (CSV, a DuckDB query) is read, checked and hashed by :func:`scan_part`."""
    if part.kind != "parquet":
        return scan_part(part, coordinates, response, domain, transform, keep=False, batch_rows=batch_rows)
    import pyarrow.parquet as pq

    try:
        n = pq.ParquetFile(part.path).metadata.num_rows
    except Exception as exc:  # not a Parquet file, unreadable
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DataError(f"cannot read {part.label}: {first}") from None
    return ScanResult(dim=len(tuple(coordinates)), n=int(n), hashed=False)


def scan(parts: Sequence[Part], coordinates: Sequence[str], response: str, domain: Box,
         transform: Callable[[np.ndarray], np.ndarray] | None = None, *, keep: bool = True,
         cells: Any = None, batch_rows: int = BATCH_ROWS, count_only: bool = False,
         threads: int | None = None) -> ScanResult:
    """:func:`scan_part` (or, ``count_only``, :func:`count_part`) over every part in this process, merged in the
    parts' order. ``threads`` (default: one per core, at most MAX_THREADS and one per part) scan parts at once:
    pyarrow and numpy release the GIL for most of a batch's work; the result is the serial one exactly (each
    part is reduced alone, and the merge order is the same), and the first bad part in order raises. BLAS runs
    on one thread meanwhile (the threads are the parallelism)."""
    from concurrent.futures import ThreadPoolExecutor

    from ..blas_threads import one_blas_thread

    fn = count_part if count_only else scan_part

    def one(p: Part) -> ScanResult:
        return fn(p, coordinates, response, domain, transform, keep=keep, cells=cells, batch_rows=batch_rows)

    k = min(len(parts), os.cpu_count() or 1, MAX_THREADS) if threads is None else min(int(threads), len(parts))
    if k <= 1 or count_only:
        return merge([one(p) for p in parts])
    with one_blas_thread(), ThreadPoolExecutor(max_workers=k) as pool:
        return merge(list(pool.map(one, parts)))


def cluster_scan(client: Any, parts: Sequence[Part], coordinates: Sequence[str], response: str, domain: Box,
                 transform: Callable[[np.ndarray], np.ndarray] | None = None, *,
                 cells: Any = None, batch_rows: int = BATCH_ROWS, count_only: bool = False) -> ScanResult:
    """:func:`scan_part` (or, ``count_only``, :func:`count_part`) of every part on a Dask cluster
    (``distributed.Client``), one task per part; only the results (n, hash sums, per-cell statistics -- never
    records) come back, merged here. A DataError raised on a worker is raised here; any other failure of the
    cluster (a worker killed mid-aggregation, the scheduler lost) is a :class:`~privgp.errors.ClusterError`,
    raised before the release charges anything."""
    # absolute paths: a worker started elsewhere would read a relative path from its own working directory
    parts = [Part(p.kind, os.path.abspath(p.path), p.query) for p in parts]
    futures = client.map(count_part if count_only else scan_part, list(parts), coordinates=tuple(coordinates),
                         response=response, domain=domain, transform=transform, keep=False, cells=cells,
                         batch_rows=batch_rows, pure=False)
    try:
        return merge(client.gather(futures))
    except (DataError, InvalidParameterError):
        raise
    except Exception as exc:   # KilledWorker, CommClosedError, TimeoutError, ...: the cluster, not the data
        raise ClusterError(f"the Dask cluster failed while reducing the records ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else 'no message'}); nothing was charged") from None
    finally:
        for f in futures:
            f.release()


def as_table(result: ScanResult, coordinates: Sequence[str], response: str, source: str):
    """The kept records of a pass as :class:`~privgp.datasets.tabular.TabularData` (v3 digest)."""
    from .tabular import TabularData, issued

    if result.n == 0:
        raise DataError(f"{source} has no data rows")
    d = len(coordinates)
    X = np.concatenate(result.X) if result.X else np.zeros((0, d))
    z = np.concatenate(result.z) if result.z else np.zeros(0)
    return issued(TabularData(X=X, response=z, coordinates=tuple(coordinates), response_name=response,
                              source=source, content_digest=result.digest(), aliases=result.aliases()))


@dataclass(frozen=True)
class ReducedData:
    """Private records known only through a pass: n, the v3 digest and names (no records in memory).
    ``content_digest`` is None while the records were only counted (Parquet footers): the pass that reduces
    them computes it, and nothing can be charged without it."""

    n: int
    dim: int
    coordinates: tuple[str, ...]
    response_name: str
    source: str
    content_digest: str | None
    projection: dict | None = None
    #: the digests earlier privgp versions gave these records, where they differ (:meth:`ScanResult.aliases`)
    aliases: tuple[str, ...] = ()

    def __post_init__(self):
        v.column_names(self.coordinates, self.response_name)

    @property
    def X(self) -> np.ndarray:
        return np.zeros((0, self.dim))

    @property
    def response(self) -> np.ndarray:
        return np.zeros(0)
