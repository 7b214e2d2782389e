"""privgp.blas_threads: one BLAS thread inside the block and the previous limits after it, whichever thread enters
and leaves first, and every BLAS pinned, also one loaded after the libraries were last found."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

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
            with blas_threads.one_blas_thread():   # nested: still one thread, and still after the inner block
                pass
            assert _blas_threads() == [1] * len(before)
        assert _blas_threads() == before


def test_the_controller_is_kept_until_a_shared_object_is_loaded(monkeypatch):
    with blas_threads.one_blas_thread():
        pass
    kept = blas_threads._controller()
    assert blas_threads._controller() is kept          # nothing loaded: the same libraries
    count = blas_threads.loaded_objects()
    assert count is not None and count > 1
    monkeypatch.setattr(blas_threads, "loaded_objects", lambda: count + 1)   # as after a dlopen
    assert blas_threads._controller() is not kept


def test_a_thread_leaving_first_leaves_the_other_threads_block_pinned():
    """Red team 22a F2: A enters, B enters, A leaves while B computes: B's block must stay on one thread, and after
    both have left the limits are the ones found before."""
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        a_in, b_in, a_out, b_done = (threading.Event() for _ in range(4))
        seen: dict[str, list[int]] = {}

        def a():
            with blas_threads.one_blas_thread():
                a_in.set()
                b_in.wait(10)
            a_out.set()

        def b():
            a_in.wait(10)
            with blas_threads.one_blas_thread():
                b_in.set()
                a_out.wait(10)
                seen["inside B after A left"] = _blas_threads()
            b_done.set()

        threads = [threading.Thread(target=f) for f in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert b_done.is_set()
        assert seen["inside B after A left"] == [1] * len(before)
        assert _blas_threads() == before


def test_a_blas_loaded_after_the_libraries_were_found_is_pinned():
    """Red team 22a F1: found while numpy's BLAS alone was loaded, then scipy's loaded with sys.modules back to the
    same length (the earlier key): scipy's BLAS was left on its threads."""
    code = textwrap.dedent("""
        import sys
        from unittest import mock
        import numpy
        from threadpoolctl import threadpool_info
        from privgp.blas_threads import one_blas_thread
        with one_blas_thread():
            pass
        n = len(sys.modules)
        with mock.patch.dict(sys.modules):
            import scipy.linalg
        assert len(sys.modules) == n
        with one_blas_thread():
            print(sorted(d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"))
    """)
    env = {"OPENBLAS_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1, 1]", out.stdout


def test_another_threads_limits_do_not_reach_inside_a_block():
    """Red team 22b F1: the thread whose block entered first stayed threadpoolctl's controlling thread, so its own
    threadpool_limits, after its block had left, changed OpenBLAS inside another thread's block."""
    start = _blas_threads()
    a_in, b_in, a_out, limited = (threading.Event() for _ in range(4))
    seen: dict[str, list[int]] = {}

    def a():
        with blas_threads.one_blas_thread():
            a_in.set()
            b_in.wait(10)
        with threadpool_limits(limits=2, user_api="blas"):   # A's own work, while B's block computes
            a_out.set()
            limited.wait(10)

    def b():
        a_in.wait(10)
        with blas_threads.one_blas_thread():
            b_in.set()
            a_out.wait(10)
            seen["inside B"] = _blas_threads()
            limited.set()

    threads = [threading.Thread(target=f) for f in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen["inside B"] == [1] * len(start)
    assert _blas_threads() == start


def test_a_process_forked_inside_a_block_starts_with_the_limits_found():
    """Red team 22b F3: the child inherited the pin, but not the block that would restore it."""
    code = textwrap.dedent("""
        import os
        import scipy.linalg
        from threadpoolctl import threadpool_info
        from privgp import blas_threads
        def blas():
            return sorted(d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas")
        with blas_threads.one_blas_thread():
            pid = os.fork()
            if pid == 0:
                ok = blas() == [2, 2] and blas_threads._depth == 0
                with blas_threads.one_blas_thread():
                    ok = ok and blas() == [1, 1]
                os._exit(0 if ok and blas() == [2, 2] else 1)
            _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), blas())
    """)
    env = {"OPENBLAS_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0 [2, 2]", out.stdout
