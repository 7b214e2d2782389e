"""Progress reporting for long runs: a bar on a terminal, plain periodic lines in logs.

``mode``: ``None`` (a bar when stderr is a terminal, nothing otherwise), ``True``/``"bar"`` (a tqdm bar
on stderr), ``"lines"`` (plain lines ``privgp: <desc>: k/N (p%), t s`` at most every ``interval``
seconds and at the end, so a log shows where a long job is), ``False``/``"off"`` (nothing).
"""
from __future__ import annotations

import sys
import time
from typing import Any

MODES = ("bar", "lines", "off")


def resolve_mode(mode: Any) -> str:
    if mode is None:
        return "bar" if sys.stderr.isatty() else "off"
    if mode is True:
        return "bar"
    if mode is False:
        return "off"
    if mode in MODES:
        return str(mode)
    from .errors import InvalidParameterError

    raise InvalidParameterError("progress", f"None, True, False or one of {MODES}", mode)


class Progress:
    """``with Progress(total, desc, mode) as p: ... p.update(1)``; ``p.stage(name)`` names the current step."""

    def __init__(self, total: int, desc: str = "", mode: Any = None, *, interval: float = 5.0):
        self.mode = resolve_mode(mode)
        self.total, self.desc, self.interval = int(total), desc, float(interval)
        self.done = 0
        self._t0 = time.monotonic()
        self._last = -1e9
        self._bar = None
        if self.mode == "bar":
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.total, desc=desc, leave=False, file=sys.stderr)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _line(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= self.interval:
            self._last = now
            pct = 100.0 * self.done / self.total if self.total else 100.0
            print(f"privgp: {self.desc}: {self.done}/{self.total} ({pct:.0f}%), {now - self._t0:.1f} s",
                  file=sys.stderr, flush=True)

    def update(self, k: int = 1) -> None:
        self.done += k
        if self._bar is not None:
            self._bar.update(k)
        elif self.mode == "lines":
            self._line(force=self.done >= self.total)

    def stage(self, name: str) -> None:
        """Name the step now running (a bar's description; a line in "lines" mode)."""
        if self._bar is not None:
            self._bar.set_description(f"{self.desc}: {name}" if self.desc else name)
        elif self.mode == "lines":
            print(f"privgp: {self.desc}: {name} ({time.monotonic() - self._t0:.1f} s)", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
