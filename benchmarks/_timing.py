"""Timing helper shared by the benchmark scripts (run them as ``python benchmarks/bench_*.py``)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timings(fn, repeats: int) -> tuple[float, float, float]:
    """(first call, best, median) wall seconds of ``fn``: one first call (imports, caches), then
    ``repeats`` more."""
    import numpy as np

    ts = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    rest = ts[1:] or ts
    return ts[0], min(rest), float(np.median(rest))


def baseline_src(rev: str, into: Path) -> Path:
    """Export git revision ``rev``'s ``src`` folder into the folder ``into`` (created) and return the exported
    ``src``: what PYTHONPATH points to for timing privgp at that revision beside this tree."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    bytecode(into / "src")
    bytecode(ROOT / "src")
    return into / "src"


def bytecode(src: Path) -> None:
    """Compile every module under ``src`` to its cached bytecode, as an installed package has it: with
    PYTHONDONTWRITEBYTECODE set (this sandbox sets it), a tree whose .pyc files are missing or stale is
    recompiled by every fresh process, which would time the compiler rather than the code (an exported
    revision has no .pyc at all)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True, stdout=subprocess.DEVNULL)


def alternating(names: list[str], repeat: int, run_one: Callable[[str], tuple]) -> tuple[dict[str, list], list[float]]:
    """``repeat`` rounds of ``run_one(name)`` for every name, in the given order in even rounds and reversed in
    odd ones (so neither side always runs first); returns the results by name and the 1-min load averages
    (before the first round and after each)."""
    res: dict[str, list] = {name: [] for name in names}
    loads = [os.getloadavg()[0]]
    for rep in range(repeat):
        for name in (names if rep % 2 == 0 else names[::-1]):
            res[name].append(run_one(name))
        loads.append(os.getloadavg()[0])
    return res, loads
