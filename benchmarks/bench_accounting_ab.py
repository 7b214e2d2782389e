"""Benchmark: the accountant of this tree against a git revision, both in ONE process, calls alternating (issue 30).

    python benchmarks/bench_accounting_ab.py --baseline 41d3440 --rounds 20

This shared 2-core machine runs in slow and fast phases that last seconds to minutes (the peer of
``bench_accounting.py`` moved between 0.38 and 0.79 ms within one run), so two trees timed in separate processes,
even alternating, differ by more than a change of 10-20 % does. Here the revision's ``src`` (``git archive``) and
this tree's are imported into one process as two copies of the package, and each round times both, in alternating
order, on the same workloads: 200 calls of one posterior-sample epsilon (``bench_accounting.py``'s one-setting row)
and one call on its 10^5 random settings with the search in one thread (its "in one thread" row). Both see the same
phases; the per-round ratios (this tree / revision) and their median and quartiles are printed, with CPU times
(``time.process_time``). Both trees must give the same epsilon (checked first).
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _machine import machine_line  # noqa: E402
from _settings import epsilon_of_settings, random_settings  # noqa: E402
from _timing import ROOT, baseline_src  # noqa: E402


def _load(src: Path):
    """The posterior-sample epsilon, Box and the order search of the privgp under ``src`` (a fresh copy of the
    package: the modules of any copy imported before are dropped from sys.modules, not from memory)."""
    sys.path.insert(0, str(src))
    for k in [k for k in sys.modules if k == "privgp" or k.startswith("privgp.")]:
        del sys.modules[k]
    ps = importlib.import_module("privgp.mechanisms.posterior_sample")
    box = importlib.import_module("privgp.models.domain").Box
    search = importlib.import_module("privgp.accounting.order_search")
    sys.path.remove(str(src))
    search.MAX_THREADS = 1
    return ps.epsilon_posterior_sampling, box


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="git revision timed beside this tree")
    ap.add_argument("--rounds", type=int, default=20)
    a = ap.parse_args()
    print(machine_line(), flush=True)
    settings = random_settings(np.random.default_rng(0))     # bench_accounting.py's 10^5 settings
    with tempfile.TemporaryDirectory() as tmp:
        sides = {a.baseline: _load(baseline_src(a.baseline, Path(tmp) / "base")), "this tree": _load(ROOT / "src")}
        results = {}
        for name, (eps, box) in sides.items():
            one = float(eps(10, 1.0, 5.0, 0.05, sensitivity="exp1d").epsilon)
            many = epsilon_of_settings(eps, box, settings)
            results[name] = (one, np.asarray(many.epsilon).tobytes())
        same = results[a.baseline] == results["this tree"]
        print(f"the same epsilon, to the bit, for one setting and all 10^5: {same}")
        times: dict[str, dict[str, list[float]]] = {s: {"one": [], "batch": []} for s in sides}
        for rnd in range(a.rounds):
            for name in (list(sides) if rnd % 2 == 0 else list(sides)[::-1]):
                eps, box = sides[name]
                c = time.process_time()
                for _ in range(200):
                    eps(10, 1.0, 5.0, 0.05, sensitivity="exp1d")
                times[name]["one"].append((time.process_time() - c) / 200)
                c = time.process_time()
                epsilon_of_settings(eps, box, settings)
                times[name]["batch"].append(time.process_time() - c)
    b, t = times[a.baseline], times["this tree"]
    print(f"{a.rounds} rounds, CPU time")
    for key, label, unit, f in (("one", "epsilon, one setting", "ms", 1e3),
                                ("batch", "epsilon, 10^5 settings, one thread", "s", 1.0)):
        ratios = [x / y for x, y in zip(t[key], b[key])]
        print(f"{label}: {a.baseline} median {statistics.median(b[key]) * f:.4g} {unit} (best {min(b[key]) * f:.4g}), "
              f"this tree median {statistics.median(t[key]) * f:.4g} {unit} (best {min(t[key]) * f:.4g}); "
              f"ratio per round: median {statistics.median(ratios):.3f}, quartiles {np.percentile(ratios, 25):.3f}"
              f"-{np.percentile(ratios, 75):.3f}")
    print(machine_line(), flush=True)


if __name__ == "__main__":
    main()
