"""privgp.datasets.batch_memory: in a process started as a Dask nanny starts its workers
(MALLOC_TRIM_THRESHOLD_=65536), retained() makes glibc reuse freed batch memory instead of faulting it in
again, and restores the process's allocator settings after (counted in page faults, not timed)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from privgp.datasets.batch_memory import _libc

SCRIPT = """
import json, resource
import numpy as np
from privgp.datasets.batch_memory import retained

def faults(rounds=60):
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(rounds):
        a = np.ones(1 << 18)          # 2 MiB, freed at once: a record batch's column
        b = a * 2.0
        del a, b
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0

faults(5)
before = faults()
with retained():
    inside = faults()
after = faults()
print(json.dumps([before, inside, after]))
"""


@pytest.mark.skipif(_libc() is None, reason="glibc only")
def test_freed_batch_memory_is_reused_inside_and_the_worker_settings_come_back_after():
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    before, inside, after = json.loads(out.stdout)
    # each 2 MiB array faults in 512 pages when it is mapped afresh: 60 rounds x 2 arrays ~ 61 000 faults
    assert before > 30_000 and after > 30_000, (before, inside, after)
    assert inside < before / 10, (before, inside, after)


def test_without_the_setting_nothing_changes(monkeypatch):
    from privgp.datasets import batch_memory

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.setattr(batch_memory, "_libc", lambda: pytest.fail("the allocator was touched"))
    with batch_memory.retained():
        pass
