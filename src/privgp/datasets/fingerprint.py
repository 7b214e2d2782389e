"""The content digest of private records: one home for the formula (order-independent, version 3).

    digest = SHA-256("privgp-records-v3:" d ":" n ":" S1 ":" S2),  S_k = sum over records of h_k(record) mod 2^64

where d is the number of coordinates, n the number of records, and h_k chains MurmurHash3's 64-bit
finaliser fmix64 over the record's float64 bit patterns (coordinates, then the response; -0.0 read as
0.0) with two different seeds (:func:`record_hashes`). A sum of per-record hashes depends neither on the
row order nor on how the records are split into files or batches, so every source (one CSV, Parquet
files, a folder, DuckDB, Python arrays; privgp.datasets.sources merges the sums of its parts) gives the
same records the same digest, in O(n) -- no sort. Two different multisets of records get different
digests unless two 64-bit sums collide at once (n and d are hashed too). Equal records counted twice are
two records (n differs). What the ledger needs holds in every case: the same records always get the same
key (so their releases always compose); a collision -- chance about 2^-128 for data not built to collide,
though a sum of hashes is not collision-resistant against someone who crafts records -- would make two
data sets share one budget, which over-counts, never under-counts.

Version 2 (:func:`legacy_digest_v2`: SHA-256 of the records sorted lexicographically) was the key of a
single CSV file, the embedded tables and :func:`privgp.records` in earlier versions of privgp; a ledger written
by them may still know a dataset by it (:meth:`privgp.ledger.Ledger.fingerprint_of` tries it
there, and only there). Both digests are deterministic functions of private data and are never written
anywhere: the ledger stores only a keyed hash (HMAC) of them.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

VERSION = "v3"
_SEEDS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD1B54A32D192ED03))
_M1, _M2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_MASK = (1 << 64) - 1


#: records hashed per block: the block's three uint64 buffers stay in cache and nothing of size n is allocated
#: (in a fresh process each new n-sized array costs its page faults, more than the hashing itself)
BLOCK = 1 << 15


def _fmix(h: np.ndarray, t: np.ndarray) -> np.ndarray:
    """MurmurHash3's fmix64, in place on ``h`` (``t`` a scratch array of the same shape)."""
    np.right_shift(h, _S33, out=t)
    h ^= t
    h *= _M1
    np.right_shift(h, _S33, out=t)
    h ^= t
    h *= _M2
    np.right_shift(h, _S33, out=t)
    h ^= t
    return h


def _hash_block(cols: Sequence[np.ndarray], start: int, stop: int, seed: np.uint64, bits: np.ndarray,
                out: np.ndarray, t: np.ndarray) -> np.ndarray:
    """One 64-bit hash per record of rows start:stop into ``out`` (``bits``, ``t``: scratch arrays of its size)."""
    value = bits.view("<f8")
    np.add(cols[0][start:stop], 0.0, out=value)   # -0.0 + 0.0 = 0.0: one bit pattern for zero
    np.bitwise_xor(bits, seed, out=out)
    for c in cols[1:]:
        _fmix(out, t)
        np.add(c[start:stop], 0.0, out=value)
        out ^= bits
    return _fmix(out, t)


def record_hashes(columns: Sequence[np.ndarray]) -> tuple[int, int]:
    """(S1, S2): sums mod 2^64 of two 64-bit hashes of each record, the records given as equal-length float64
    ``columns`` (coordinates, then the response; -0.0 read as 0.0): h = fmix64(... fmix64(seed ^ b_1) ...
    ^ b_k) over the columns' bit patterns b_j, for two seeds. Computed in blocks of :data:`BLOCK` records
    (sums mod 2^64 add up over blocks), the columns read in place (strided columns of a 2-D array too)."""
    cols = [np.asarray(c, dtype="<f8").reshape(-1) for c in columns]
    n = cols[0].shape[0] if cols else 0
    size = min(n, BLOCK)
    bits, h, t = np.empty(size, dtype=np.uint64), np.empty(size, dtype=np.uint64), np.empty(size, dtype=np.uint64)
    sums = [0, 0]
    with np.errstate(over="ignore"):
        for start in range(0, n, BLOCK):
            stop = min(start + BLOCK, n)
            m = stop - start
            for k, seed in enumerate(_SEEDS):
                hb = _hash_block(cols, start, stop, seed, bits[:m], h[:m], t[:m])
                sums[k] = (sums[k] + int(np.add.reduce(hb, dtype=np.uint64))) & _MASK
    return sums[0], sums[1]


def repeated_records(X: np.ndarray, response: np.ndarray) -> tuple[int, int]:
    """(how many records repeat an earlier one exactly, the most copies of one record): from the records' 64-bit
    hashes (a hash collision, about 2^-64 per pair, can only add to the count). For the data holder's eyes only."""
    cols = [np.asarray(c, dtype="<f8").reshape(-1) for c in (*np.asarray(X, dtype=float).reshape(len(response), -1).T,
                                                              response)]
    n = cols[0].shape[0]
    if n < 2:
        return 0, n
    h, bits, t = np.empty(n, dtype=np.uint64), np.empty(min(n, BLOCK), dtype=np.uint64), np.empty(min(n, BLOCK), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for start in range(0, n, BLOCK):
            stop = min(start + BLOCK, n)
            _hash_block(cols, start, stop, _SEEDS[0], bits[:stop - start], h[start:stop], t[:stop - start])
    h.sort()
    new = np.empty(n, dtype=bool)
    new[0], new[1:] = True, h[1:] != h[:-1]
    starts = np.flatnonzero(new)
    return int(n - starts.size), int(np.max(np.diff(np.append(starts, n))))


def narrow_float(dtype: object) -> str | None:
    """"float32" or "float16" where ``dtype`` (a numpy dtype of either byte order, or a pandas dtype such as
    ``Float32Dtype``) is such a float, whose values privgp reads through their shortest decimal digits
    (:func:`shortest_digits`); None otherwise."""
    try:
        d = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:   # a pandas extension dtype: "Float32", "Float16", or Arrow-backed "float[pyarrow]"
        inner = getattr(dtype, "numpy_dtype", None)   # pandas' masked and Arrow dtypes name their numpy type
        try:
            d = np.dtype(inner)
        except TypeError:
            name = str(dtype).lower()
            return name if name in ("float32", "float16") else None
        if inner is None:
            return None
    return f"float{8 * d.itemsize}" if d.kind == "f" and d.itemsize in (2, 4) else None


def shortest_digits(a: np.ndarray) -> np.ndarray:
    """The float64 values of a float32 or float16 array's shortest decimal text (``str`` of each element): what
    a CSV file of those values says, read as every source reads digits. Widening (``astype(float)``) would
    give other float64 values (float32(0.1) is 0.100000001490116...), hence another fingerprint for the same
    records written as text. Finite inputs only."""
    a = np.asarray(a)
    if a.dtype == np.float16:   # pyarrow prints a half float's exact binary value, numpy its shortest text
        return a.astype(str).astype(float)
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pc.cast(pa.array(np.ascontiguousarray(a).reshape(-1)), pa.string())
    return np.asarray(pc.cast(text, pa.float64()), dtype=float).reshape(a.shape)


def add_sums(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The sums of two disjoint parts of the records (mod 2^64)."""
    return (a[0] + b[0]) & _MASK, (a[1] + b[1]) & _MASK


def digest_of_sums(dim: int, n: int, s1: int, s2: int) -> str:
    """The version-3 digest from the number of coordinates, the number of records and the two hash sums."""
    return hashlib.sha256(f"privgp-records-v3:{dim}:{n}:{s1}:{s2}".encode("ascii")).hexdigest()


def _table(X: np.ndarray, response: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    return np.column_stack([X.reshape(X.shape[0], -1), np.asarray(response, dtype=float)])


def records_digest(X: np.ndarray, response: np.ndarray) -> str:
    """The version-3 digest of records given as coordinates X (n, d) and responses (n,)."""
    X = np.asarray(X, dtype=float)
    X = X.reshape(X.shape[0], -1)
    y = np.asarray(response, dtype=float).reshape(-1)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"records_digest: {X.shape[0]} coordinate rows but {y.shape[0]} responses")
    s1, s2 = record_hashes([*(X[:, j] for j in range(X.shape[1])), y])
    return digest_of_sums(X.shape[1], X.shape[0], s1, s2)


def swapped_digests(X: np.ndarray, response: np.ndarray) -> tuple[str, ...]:
    """The digest of 2-D records with their two coordinates given the other way round (x as y, y as x), as an alias
    (:meth:`privgp.ledger.Ledger.fingerprint_of`): the same records released with their axes swapped, as after a
    mix-up of longitude and latitude, are the same data set. () for 1-D records."""
    X = np.asarray(X, dtype=float)
    X = X.reshape(X.shape[0], -1)
    return (records_digest(X[:, ::-1], response),) if X.shape[1] == 2 else ()


def legacy_digest_v2(X: np.ndarray, response: np.ndarray) -> str:
    """The version-2 digest (for ledgers written before version 3): SHA-256 of the records as float64 in
    canonical row order (sorted lexicographically; -0.0 counted as 0.0), with the number of coordinates.
    O(n log n); computed only where an old ledger may need it."""
    table = _table(X, response) + 0.0
    order = np.lexsort(table.T[::-1])
    payload = np.ascontiguousarray(table[order], dtype="<f8").tobytes()
    h = hashlib.sha256(f"privgp-records-v2:{table.shape[1] - 1}:".encode("ascii"))
    h.update(payload)
    return h.hexdigest()
