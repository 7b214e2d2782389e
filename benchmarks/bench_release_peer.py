"""`privgp release` from a CSV file, whole process, against its peers measured in the same run (issue 30).

    python benchmarks/bench_release_peer.py --n 100000 1000000 --repeat 7 [--baseline REV]

For each n: n synthetic records (``bench_release_scale.write_2d``: house-sale-like prices on the Baltimore
public box; no real records) in one CSV file, and, alternating in fresh processes (the order reversed every
other round):

* ``privgp release`` with the default mechanism and settings (the README's large-data command without
  ``--dataset-id``: box, threshold, clip and transform given, report and picture written; a fresh scratch
  ledger each time, so every run is a first release);
* the peer: ``python -c "import pandas; pandas.read_csv(FILE)"`` (the same file read by pandas);
* the floor: a process that only imports the modules the release ended with (``sys.modules`` of one
  in-process release of the same command drawing its picture in the same process, ``PRIVGP_PICTURE_PROCESS=0``,
  imported one by one) -- "the bare imports": every module the release needs, matplotlib included, although
  the release imports matplotlib in its picture process (``privgp.cli.picture_process``) on the other core;
* the release in one process (``PRIVGP_PICTURE_PROCESS=0``: the picture drawn by the command's own process);
* with ``--baseline REV``: the same release with a git revision's ``src`` (``git archive``, ``PYTHONPATH``).

With ``--readme`` the release is ``scripts/readme_large_release.sh``'s command exactly (``--dataset-id
city-sales --progress`` added; its ``--ledger`` is ``PRIVGP_LEDGER`` here).

Prints the machine line (one-thread DGEMM speed, load), the median wall and CPU (user + system) seconds of
each, and the ratios of the medians: the release to the pandas read (target 2 at 10^6 records) and to the
bare imports (target 1.3 at 10^5).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _machine import machine_line  # noqa: E402
from _timing import alternating, baseline_src, bytecode  # noqa: E402
from bench_release_scale import write_2d  # noqa: E402

ARGS = ["--x-col", "x", "--y-col", "y", "--response-col", "price", "--box", "850", "1000", "500", "590",
        "--threshold", "50", "--clip", "1", "--transform", "log"]
_MODULES = """
import json, sys
from privgp.cli.main import main
code = main(sys.argv[2:])
json.dump(sorted(m for m in sys.modules if not m.startswith("__")), open(sys.argv[1], "w"))
"""


_IMPORT_ALL = """
import importlib, sys
for m in sys.argv[1:]:
    try:
        importlib.import_module(m)
    except Exception:   # a name that only exists inside another module (vendored, generated)
        pass
"""


def _timed(cmd: list[str], env: dict[str, str], before_run=None) -> tuple[float, float]:
    if before_run is not None:
        before_run()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--baseline", default=None, help="git revision whose `privgp release` is timed too")
    ap.add_argument("--readme", action="store_true",
                    help="release with `--dataset-id city-sales --progress` too: scripts/readme_large_release.sh's "
                         "command exactly (its --ledger is PRIVGP_LEDGER here)")
    a = ap.parse_args()
    args = [*ARGS, "--dataset-id", "city-sales", "--progress"] if a.readme else ARGS
    py = sys.executable
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    print(machine_line())
    bytecode(ROOT / "src")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ledger = tmp / "ledger.sqlite"
        this_env = dict(env, PYTHONPATH=str(ROOT / "src"), PRIVGP_LEDGER=str(ledger))
        base_env = None
        if a.baseline:
            base_env = dict(env, PYTHONPATH=str(baseline_src(a.baseline, tmp / "base")), PRIVGP_LEDGER=str(ledger))

        def fresh_ledger() -> None:
            for p in tmp.glob("ledger.sqlite*"):
                p.unlink()

        for n in a.n:
            csv = tmp / f"sales_{n}.csv"
            write_2d(csv, n)
            release = [py, "-m", "privgp.cli.main", "release", "--data", str(csv), *args, "--out", str(tmp / "out"),
                       "--overwrite"]
            mods = tmp / "modules.json"
            fresh_ledger()
            one_process = dict(this_env, PRIVGP_PICTURE_PROCESS="0")
            subprocess.run([py, "-c", _MODULES, str(mods), "release", "--data", str(csv), *args, "--out",
                            str(tmp / "out"), "--overwrite"], env=one_process, check=True, stdout=subprocess.DEVNULL)
            modules = json.loads(mods.read_text())
            runs = {"privgp release (this tree)": (release, this_env, fresh_ledger),
                    "privgp release, one process": (release, one_process, fresh_ledger),
                    "pandas.read_csv (peer)": ([py, "-c", "import sys, pandas; pandas.read_csv(sys.argv[1])", str(csv)],
                                               env, None),
                    f"bare imports ({len(modules)} modules)": (
                        [py, "-c", _IMPORT_ALL, *modules], this_env, None)}
            if base_env is not None:
                runs[f"privgp release ({a.baseline})"] = (release, base_env, fresh_ledger)
            for cmd, run_env, before in runs.values():   # warm the file cache and the .pyc files, untimed
                _timed(cmd, run_env, before)
            res, loads = alternating(list(runs), a.repeat, lambda name, runs=runs: _timed(*runs[name]))
            med = {name: (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals))
                   for name, vals in res.items()}
            peer, bare = med["pandas.read_csv (peer)"], med[next(k for k in med if k.startswith("bare"))]
            print(f"\nn = {n}: {csv.stat().st_size / 2**20:.1f} MiB CSV; load average (1 min) during the runs "
                  f"{min(loads):.2f} .. {max(loads):.2f}; {a.repeat} alternating rounds")
            print(f"{'command':<36} {'wall median s':>13} {'CPU median s':>13}   wall ratio to pandas read, "
                  "to bare imports (CPU ratios)")
            for name, (w, c) in med.items():
                print(f"{name:<36} {w:>13.3f} {c:>13.3f}   {w / peer[0]:.2f}, {w / bare[0]:.2f} "
                      f"({c / peer[1]:.2f}, {c / bare[1]:.2f})")
    print("\n" + machine_line())


if __name__ == "__main__":
    main()
