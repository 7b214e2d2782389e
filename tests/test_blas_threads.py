"""privgp.blas_threads: one BLAS thread inside the block, the previous limits after it, and the libraries found
again whenever the process has imported a module since."""
from __future__ import annotations

import sys
import types

import numpy as np
import scipy.linalg  # noqa: F401  (scipy's own BLAS, beside numpy's)
from threadpoolctl import threadpool_info, threadpool_limits

from privgp import blas_threads


def _blas_threads() -> list[int]:
    return [d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"]


def test_one_thread_inside_and_the_previous_limits_restored_after():
    assert _blas_threads(), "no BLAS found by threadpoolctl"
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        with blas_threads.one_blas_thread():
            assert _blas_threads() == [1] * len(before)
            np.linalg.cholesky(np.eye(50) * 2.0)
        assert _blas_threads() == before


def test_the_controller_is_kept_and_found_again_after_an_import():
    with blas_threads.one_blas_thread():
        pass
    kept = blas_threads._controller()
    assert blas_threads._controller() is kept          # nothing imported: the same libraries
    name = "_privgp_test_blas_threads_dummy"
    sys.modules[name] = types.ModuleType(name)         # an import, as a new extension module's would be
    try:
        fresh = blas_threads._controller()
        assert fresh is not kept
        with blas_threads.one_blas_thread(user_api=None):   # OpenMP's pools too, as threadpool_limits(1)
            assert all(d["num_threads"] == 1 for d in threadpool_info())
    finally:
        del sys.modules[name]
