"""BLAS pinned to one thread for a block of code, at the cost of a few ctypes calls.

threadpoolctl's ``threadpool_limits(...)`` finds the loaded BLAS and OpenMP libraries anew on every call, walking
every shared library of the process: about 3 ms where torch and scipy are loaded, paid by each sparse-GP posterior
(:mod:`privgp.models.gp.sparse_posterior`) and each chunk of the sweeps. :func:`one_blas_thread` keeps one
``ThreadpoolController`` and finds the libraries again only when the process has imported or dropped a module since
(a new BLAS arrives with an extension module's import), about 15 microseconds otherwise. The limits are those of
``threadpool_limits``: set on entry, the previous ones restored on exit.
"""
from __future__ import annotations

import sys
from typing import Any

_cached: tuple[int, Any] | None = None   # (len(sys.modules) when found, the controller)


def _controller() -> Any:
    global _cached
    from threadpoolctl import ThreadpoolController

    modules = len(sys.modules)
    if _cached is None or _cached[0] != modules:
        _cached = (modules, ThreadpoolController())
    return _cached[1]


def one_blas_thread(user_api: str | None = "blas") -> Any:
    """A context manager: the BLAS libraries (``user_api=None``: OpenMP's too) on one thread inside it."""
    return _controller().limit(limits=1, user_api=user_api)
