"""BLAS pinned to one thread for a block of code, at the cost of a few ctypes calls.

threadpoolctl's ``threadpool_limits(...)`` finds the loaded BLAS libraries anew on every call, walking every shared
library of the process (about 1-5 ms where torch and scipy are loaded; ``benchmarks/bench_blas_pin.py``), paid by each
sparse-GP posterior (:mod:`privgp.models.gp.sparse_posterior`) and each chunk of the sweeps. :func:`one_blas_thread` keeps one
``ThreadpoolController`` and finds the libraries again only when the process has loaded a shared object since (on
Linux, counted by ``dl_iterate_phdr``: a BLAS cannot arrive without one; elsewhere the libraries are found on every
call, as before). The limits are process-wide, so the pin is too: the first block to enter (in any thread) sets BLAS
to one thread, and the last to leave restores what it found (red team 22a F2: with a limiter per block, the first
thread to leave restored the old count while another thread's block still computed, and the last left BLAS on one
thread for good). A library loaded while blocks run is pinned at the next entry and restored with the rest. The
pin works from any thread, and holds against other threads: threadpoolctl >= 3.8 lets only one thread at a time set
OpenBLAS's limits, and while a block is inside that is none (:data:`_PIN`). So a caller's own ``threadpool_limits``
in another thread has no effect on OpenBLAS while a privgp block runs: one that ends meanwhile leaves the limits
privgp found when its first block entered (threadpoolctl's limits are process-wide snapshots; do not let one span a
privgp call in another thread). A process forked inside a block starts with the limits found
(:func:`_after_fork_in_child`).
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

_lock = threading.Lock()
_depth = 0                                   # blocks inside, over all threads
_active: list[Any] = []                      # the limiters of the blocks' pin, first first
_pinned: set[str] = set()                    # the libraries (their paths) the active limiters hold at one thread
_cached: tuple[int, Any] | None = None       # (loaded shared objects when found, the controller)

_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
_dl_iterate_phdr: Any = None
if sys.platform.startswith("linux"):
    try:
        _dl_iterate_phdr = ctypes.CDLL(None).dl_iterate_phdr
    except (OSError, AttributeError):   # pragma: no cover - a libc without it
        pass


def loaded_objects() -> int | None:
    """How many shared objects the process has loaded (Linux), or None where that cannot be counted."""
    if _dl_iterate_phdr is None:
        return None
    count = 0

    def seen(info: Any, size: int, data: Any) -> int:
        nonlocal count
        count += 1
        return 0

    _dl_iterate_phdr(_CALLBACK(seen), None)
    return count


def _controller() -> Any:
    """The controller of the BLAS libraries loaded now (found again only after a shared object was loaded)."""
    global _cached
    from threadpoolctl import ThreadpoolController

    objects = loaded_objects()
    if objects is None:
        return ThreadpoolController()
    if _cached is None or _cached[0] != objects:
        _cached = (objects, ThreadpoolController())
    return _cached[1]


def _blas_paths(controller: Any) -> set[str]:
    return {lib.filepath for lib in controller.lib_controllers if lib.user_api == "blas"}


class _Pin:
    """threadpoolctl's controlling thread while a block is inside: always alive, and no thread is it, so no
    ``threadpool_limits`` of any thread changes OpenBLAS's limits during a block (red team 22b F1: the thread that had
    entered first, or any thread once it had ended, could)."""

    @staticmethod
    def is_alive() -> bool:
        return True


_PIN = _Pin()


def _shared_state() -> Any:
    """threadpoolctl >= 3.8's record of the thread allowed to set OpenBLAS's limits (None before 3.8): it lets only
    the first thread that set them do so and silently ignores every other (a block entered in a worker thread, after
    the main thread had set a limit, ran on all threads: red team 22a F2)."""
    try:
        from threadpoolctl import OpenBLASController
    except ImportError:   # pragma: no cover
        return None
    return getattr(OpenBLASController, "_SHARED_STATE", None)


def _set(limit: Callable[[], Any], *, hold: bool) -> Any:
    """Run ``limit`` (which sets OpenBLAS's limits) as the controlling thread, then leave ``_PIN`` in control
    (``hold``: a block is inside) or no thread."""
    state = _shared_state()
    if state is None:   # pragma: no cover - threadpoolctl before 3.8: any thread sets
        return limit()
    with state.lock:
        state.controlling_thread = threading.current_thread()
    try:
        return limit()
    finally:
        with state.lock:
            state.controlling_thread = _PIN if hold else None


class _OneThread:
    def __enter__(self) -> _OneThread:
        global _depth
        with _lock:
            controller = _controller()
            if _depth == 0 or not _blas_paths(controller) <= _pinned:   # first in, or a BLAS loaded meanwhile
                _active.append(_set(lambda: controller.limit(limits=1, user_api="blas"), hold=True))
                _pinned.update(_blas_paths(controller))
            _depth += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        global _depth
        with _lock:
            _depth -= 1
            if _depth == 0:
                while _active:   # the last one first: each restores what it found
                    _set(_active.pop().restore_original_limits, hold=False)
                _pinned.clear()


def _after_fork_in_child() -> None:
    """A process forked while a block was inside inherits the pin but not the block (red team 22b F3): restore the
    limits found, with a fresh lock (another thread may have held this one at the fork)."""
    global _lock, _depth, _cached
    _lock = threading.Lock()
    if _depth:
        while _active:
            try:
                _set(_active.pop().restore_original_limits, hold=False)
            except Exception:   # pragma: no cover - leave the child on one thread rather than fail it
                pass
    _depth, _cached = 0, None
    _active.clear()
    _pinned.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def one_blas_thread() -> _OneThread:
    """A context manager: the process's BLAS libraries on one thread while any thread is inside one."""
    return _OneThread()
