"""The release's picture drawn by a second Python process while the release runs (``privgp release``).

Importing matplotlib costs about 0.2 s and drawing the picture about 0.1 s, a third of a release of 10^6
records from CSV. Neither needs the data: the picture is post-processing of the released field and public
settings (:mod:`privgp.cli.release_figure`). So the command starts this process first thing; it imports
matplotlib and the figure code on the second core while the command loads, checks, forecasts, charges and
samples, then receives the released field and the public picture context (pickled, on its standard input),
draws exactly what :func:`privgp.cli.release_figure.draw_picture` draws in the command's own process, and
returns the Picture (pickled, on its standard output) while the command writes the data files.

It receives nothing private: no record, no statistic of the data; only what the picture shows (the released
field, the public domain, the response's public name and map, epsilon and delta). It writes no file. If it
cannot start, fails or returns nothing usable, the command draws the picture itself (:meth:`result` returns
None): the outputs are the same bytes either way (``tests/cli/test_picture_process.py``).

It is used when it can help: at least two CPUs are available to this process and matplotlib's figure code
is not imported already (a Python session that drew before draws faster in-process). ``PRIVGP_PICTURE_PROCESS=0``
turns it off (one process, as before); ``=1`` uses it even then (tests).
"""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import threading
from typing import Any

#: the environment variable: "0" draws in the command's process, "1" always in a picture process
ENV = "PRIVGP_PICTURE_PROCESS"
#: the modules the picture process imports before it waits for its request
PRELOAD = ("matplotlib.figure", "matplotlib.backends.backend_agg", "matplotlib.colors", "matplotlib.lines",
           "matplotlib.patches", "matplotlib.patheffects", "matplotlib.ticker")


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def wanted() -> bool:
    """Whether ``privgp release`` should draw its picture in a second process (see the module's text)."""
    setting = os.environ.get(ENV, "").strip()
    if setting in ("0", "1"):
        return setting == "1"
    return _cpus() >= 2 and "matplotlib.figure" not in sys.modules


class PictureProcess:
    """A started picture process: :meth:`submit` the field and context once, then :meth:`result`; :meth:`close`
    ends it (always call it: a release refused before its picture leaves no process behind)."""

    def __init__(self, python: str = sys.executable) -> None:
        self._sender: threading.Thread | None = None
        # this process's module search path, exactly (not the working folder first, as -m would put it): the
        # same privgp and matplotlib, so the same picture
        code = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
                "from privgp.cli.picture_process import main; main()")
        try:
            self._proc: subprocess.Popen | None = subprocess.Popen(
                [python, "-c", code, json.dumps(sys.path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL)
        except (OSError, ValueError):   # no interpreter to start: the command draws the picture itself
            self._proc = None

    def submit(self, field: Any, ctx: Any) -> None:
        """Send the released field (or None: no map was released) and its PictureContext; returns at once
        (a thread writes the request, so a process still importing never blocks the command)."""
        if self._proc is None or self._sender is not None:
            return
        try:
            payload = pickle.dumps((field, ctx), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:   # not picklable: drawn in the command's process
            self.close()
            self._proc = None
            return
        stdin = self._proc.stdin
        assert stdin is not None   # Popen(stdin=PIPE)

        def send() -> None:
            try:
                stdin.write(payload)
            except OSError:   # the process ended early: result() returns None
                pass
            finally:
                try:
                    stdin.close()   # always: the process reads to the end of its input
                except OSError:
                    pass

        self._sender = threading.Thread(target=send, daemon=True)
        self._sender.start()

    def result(self) -> Any:
        """The Picture drawn by the process, or None (not started, failed, or nothing submitted)."""
        if self._proc is None or self._sender is None:
            return None
        stdout = self._proc.stdout
        assert stdout is not None   # Popen(stdout=PIPE)
        try:
            out = stdout.read()
            self._sender.join()
            self._proc.wait()
            status, value = pickle.loads(out)
        except Exception:
            return None
        finally:
            self.close()
        return value if status == "ok" and self._proc.returncode == 0 else None

    def close(self) -> None:
        """End the process (it is killed if still running) and release its pipes; safe to call twice."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass

    def __enter__(self) -> PictureProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: the process :func:`start_early` started for this command, until :func:`claim` takes it
_early: PictureProcess | None = None


def start_early(argv: list[str]) -> None:
    """Start the picture process as the command begins (``privgp release`` without ``--help``), before the
    command's modules are imported: the earlier it starts, the sooner it can draw. :func:`claim` hands it to the
    release; :func:`discard` ends it if nobody claimed it (a parse error)."""
    global _early
    if _early is None and argv[:1] == ["release"] and not {"-h", "--help"} & set(argv) and not _dry_run(argv) \
            and wanted():
        _early = PictureProcess()


def _dry_run(argv: list[str]) -> bool:
    """``--dry-run`` (or an abbreviation argparse accepts: ``--dr``, ``--dry``, ...) is given: nothing is drawn."""
    return any(len(a) >= 4 and "--dry-run".startswith(a) for a in argv)


def claim() -> PictureProcess | None:
    """The process :func:`start_early` started (the caller now closes it), else a new one when :func:`wanted`,
    else None."""
    global _early
    painter, _early = _early, None
    return painter if painter is not None else PictureProcess() if wanted() else None


def discard() -> None:
    """End an early process that no release claimed."""
    global _early
    if _early is not None:
        _early.close()
        _early = None


def _serve() -> int:
    """The picture process: import, wait for one request, draw, answer."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    from .release_figure import draw_picture

    request = sys.stdin.buffer.read()
    if not request:     # the command ended without a picture (e.g. a refused release)
        return 0
    try:
        answer: tuple[str, Any] = ("ok", draw_picture(*pickle.loads(request)))
    except Exception as e:  # the command draws it itself and reports any error there
        answer = ("error", f"{type(e).__name__}: {e}")
    sys.stdout.buffer.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()
    return 0


def main() -> None:
    """The picture process's entry point (:class:`PictureProcess` starts it)."""
    code = _serve()
    sys.stdout.flush()
    os._exit(code)   # answered: the command reads to the end of this output, so skip tearing down matplotlib
