"""Memory for a streaming pass on a Dask worker: keep freed blocks while a part is scanned.

A Dask nanny starts its worker processes with ``MALLOC_TRIM_THRESHOLD_=65536`` (distributed's
``nanny.pre-spawn-environ``): glibc then hands every freed block above 64 KiB back to the kernel and maps
every array above 128 KiB afresh, so the few dozen arrays of one record batch (2 MiB each at 2^18 records)
are page-faulted in again for every batch. Measured on three files of 1.56 million records each (the
10^8-record benchmark's file size, grid statistics; benchmarks/bench_data_scale_parts.py): 17x the page
faults (370 897 against 22 243) and 3.6x the CPU time (0.80 s against 0.22 s) of the same pass with freed
memory kept. :func:`retained` raises glibc's trim and mmap thresholds to 32 MiB while a
part is scanned -- freed batch memory is reused, not returned -- and restores the process's settings after.
It changes nothing where the variable is not set (a plain process) or where the C library is not glibc.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Iterator
from contextlib import contextmanager

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: glibc's largest mmap threshold on 64-bit systems (DEFAULT_MMAP_THRESHOLD_MAX)
_KEEP = 32 * 2**20
#: glibc's mmap threshold when the trim threshold is set by the environment (the dynamic one is off)
_MMAP_DEFAULT = 128 * 1024


def _libc():
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return lib if hasattr(lib, "mallopt") and hasattr(lib, "gnu_get_libc_version") else None
    except OSError:  # pragma: no cover - no C library to load
        return None


def keep_freed_memory() -> bool:
    """For the rest of this process, glibc keeps freed blocks up to 32 MiB for reuse (trim and mmap thresholds;
    glibc's adaptive thresholds end): for a command that streams records and exits (``privgp release --data``),
    whose passes then fault in far fewer pages (measured: 48 599 -> 293 faults and 0.27 -> 0.19 s CPU for 4.7
    million records). Returns whether the setting took (glibc only). Not for a long-lived library caller."""
    lib = _libc()
    if lib is None:
        return False
    return bool(lib.mallopt(_M_TRIM_THRESHOLD, _KEEP)) and bool(lib.mallopt(_M_MMAP_THRESHOLD, _KEEP))


@contextmanager
def retained() -> Iterator[None]:
    """While inside, glibc keeps freed memory for reuse (only in a process started with
    ``MALLOC_TRIM_THRESHOLD_``, such as a Dask worker; see the module docstring)."""
    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    lib = None if trim is None else _libc()
    if trim is None or lib is None:
        yield
        return
    try:
        restore = (int(trim), int(os.environ.get("MALLOC_MMAP_THRESHOLD_", _MMAP_DEFAULT)))
    except ValueError:   # a setting glibc itself would not have parsed: leave the allocator alone
        yield
        return
    lib.mallopt(_M_TRIM_THRESHOLD, _KEEP)
    lib.mallopt(_M_MMAP_THRESHOLD, _KEEP)
    try:
        yield
    finally:
        lib.mallopt(_M_TRIM_THRESHOLD, restore[0])
        lib.mallopt(_M_MMAP_THRESHOLD, restore[1])
