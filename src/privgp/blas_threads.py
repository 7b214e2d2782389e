"""BLAS pinned to one thread for a block of code, at the cost of a few ctypes calls.

threadpoolctl's ``threadpool_limits(...)`` finds the loaded BLAS libraries anew on every call, walking every shared
library of the process: about 3 ms where torch and scipy are loaded, paid by each sparse-GP posterior
(:mod:`privgp.models.gp.sparse_posterior`) and each chunk of the sweeps. :func:`one_blas_thread` keeps one
``ThreadpoolController`` and finds the libraries again only when the process has loaded a shared object since (on
Linux, counted by ``dl_iterate_phdr``: a BLAS cannot arrive without one; elsewhere the libraries are found on every
call, as before). The limits are process-wide, so the pin is too: the first block to enter (in any thread) sets BLAS
to one thread, and the last to leave restores what it found (red team 22a F2: with a limiter per block, the first
thread to leave restored the old count while another thread's block still computed, and the last left BLAS on one
thread for good). A library loaded while blocks run is pinned at the next entry and restored with the rest. The
pin works from any thread: threadpoolctl >= 3.8 lets only the first thread that set OpenBLAS's limits set them again
(:func:`_take_control`).
"""
from __future__ import annotations

import ctypes
import sys
import threading
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


def _take_control() -> None:
    """Let this thread set OpenBLAS's (process-wide) limits: threadpoolctl >= 3.8 lets only the first thread that set
    them do so and silently ignores every other (so a block entered in a worker thread, after the main thread had set
    a limit, ran on all threads: red team 22a F2). The pin is this module's, under its lock, for the whole process."""
    try:
        from threadpoolctl import OpenBLASController
    except ImportError:   # pragma: no cover - an older threadpoolctl: no controlling thread
        return
    clear = getattr(OpenBLASController, "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


class _OneThread:
    def __enter__(self) -> _OneThread:
        global _depth
        with _lock:
            controller = _controller()
            if _depth == 0 or not _blas_paths(controller) <= _pinned:   # first in, or a BLAS loaded meanwhile
                _take_control()
                _active.append(controller.limit(limits=1, user_api="blas"))
                _pinned.update(_blas_paths(controller))
            _depth += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        global _depth
        with _lock:
            _depth -= 1
            if _depth == 0:
                _take_control()   # the last to leave may be another thread than the first to enter
                while _active:    # the last one first: each restores what it found
                    _active.pop().restore_original_limits()
                _pinned.clear()
                _take_control()   # and no thread keeps the control after it


def one_blas_thread() -> _OneThread:
    """A context manager: the process's BLAS libraries on one thread while any thread is inside one."""
    return _OneThread()
