"""One executor interface for embarrassingly parallel sweeps.

``get_executor()`` gives local worker processes (default), ``get_executor(scheduler=ADDRESS)`` a
Dask distributed cluster (the optional extra ``privgp[dask]``; without it a scheduler address is a
one-line :class:`~privgp.errors.MissingExtraError`). Both expose ``map(fn, items, desc=...)`` returning results in input
order, with progress on stderr (:mod:`privgp.progress`: a bar on a terminal, ``progress="lines"`` for
plain periodic lines in logs).
Worker processes pin BLAS to one thread: the small dense linear algebra of the sweeps runs faster
that way and oversubscription cost the published scripts a factor 27 (docs/notes/seed000_published_scripts.md, sec. 3).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from . import validation as v
from .progress import Progress


def _single_thread_blas():
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except Exception:  # pragma: no cover - threadpoolctl missing or no BLAS found
        pass
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


class SerialExecutor:
    """Runs tasks in this process (workers = 1); same interface as the others."""

    kind = "serial"

    def __init__(self, progress: Any = None):
        self.progress = progress

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], desc: str | None = None) -> list:
        items = list(items)
        out = []
        with Progress(len(items), desc or "tasks", self.progress) as bar:
            for x in items:
                out.append(fn(x))
                bar.update(1)
        return out


class LocalExecutor:
    """A pool of local worker processes."""

    kind = "local"

    def __init__(self, workers: int | None = None, progress: Any = None):
        self.workers = v.integer("workers", workers if workers is not None else (os.cpu_count() or 1), minimum=1)
        self.progress = progress
        self._pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_single_thread_blas)

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], desc: str | None = None) -> list:
        items = list(items)
        futures = [self._pool.submit(fn, x) for x in items]
        with Progress(len(futures), desc or "tasks", self.progress) as bar:
            out = []
            for f in futures:
                out.append(f.result())
                bar.update(1)
        return out

    def close(self):
        self._pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor:
    """Tasks on a Dask distributed cluster (a scheduler address or an existing Client)."""

    kind = "dask"

    def __init__(self, scheduler: Any, progress: Any = None, timeout: float = 10.0):
        from .errors import DataError, MissingExtraError

        try:
            from distributed import Client
        except ImportError:
            raise MissingExtraError("a Dask scheduler (--scheduler)", "distributed", "dask") from None

        self._own = not isinstance(scheduler, Client)
        if self._own:
            try:
                self.client = Client(scheduler, timeout=timeout)
            except (OSError, TimeoutError, ValueError, TypeError) as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise DataError(f"cannot reach the Dask scheduler at {scheduler!r} within {timeout:g} s: {first}") from None
        else:
            self.client = scheduler
        self.progress = progress
        self.client.run(_single_thread_blas)

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], desc: str | None = None) -> list:
        from distributed import as_completed

        items = list(items)
        futures = self.client.map(fn, items, pure=False)
        with Progress(len(futures), desc or "tasks", self.progress) as bar:
            for _ in as_completed(futures):
                bar.update(1)
        return self.client.gather(futures)

    def close(self):
        if self._own:
            self.client.close()


@contextmanager
def get_executor(scheduler: Any = None, workers: int | None = None,
                 progress: Any = None) -> Iterator[SerialExecutor | LocalExecutor | DaskExecutor]:
    """Local processes by default (``workers=1`` runs in-process), Dask when a scheduler is given."""
    ex: SerialExecutor | LocalExecutor | DaskExecutor
    if scheduler is not None:
        ex = DaskExecutor(scheduler, progress=progress)
    elif workers is not None and int(workers) == 1:
        ex = SerialExecutor(progress=progress)
    else:
        ex = LocalExecutor(workers, progress=progress)
    try:
        yield ex
    finally:
        if hasattr(ex, "close"):
            ex.close()
