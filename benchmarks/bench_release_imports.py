"""What `privgp release` imports, and what each package costs (issue 30): ``python -X importtime`` of one release.

    python benchmarks/bench_release_imports.py [--n 100000] [--top 25]

Writes n synthetic records (``bench_release_scale.write_2d``) to a CSV file, runs the README's large-data
command with the defaults once (a scratch ledger) under ``-X importtime``, and prints the import time summed
by package (self times; ``privgp`` by its first three name parts, scipy and matplotlib by two), largest first,
then the chain of importers of a few modules that are not needed by the work itself (``--why``).
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_release_peer import ARGS  # noqa: E402
from bench_release_scale import write_2d  # noqa: E402

ROW = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--why", nargs="*", default=["numpy.f2py", "scipy._lib.array_api_compat.numpy",
                                                 "mpl_toolkits.mplot3d", "subprocess"])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "sales.csv"
        write_2d(csv, a.n)
        env = dict(os.environ, PRIVGP_LEDGER=str(Path(tmp) / "ledger.sqlite"), PYTHONPATH=str(HERE.parent / "src"))
        res = subprocess.run([sys.executable, "-X", "importtime", "-m", "privgp.cli.main", "release", "--data",
                              str(csv), *ARGS, "--out", str(Path(tmp) / "out")], env=env, capture_output=True,
                             text=True, check=True)
    rows = [(int(m.group(1)), int(m.group(2)), len(m.group(3)), m.group(4))
            for m in map(ROW.match, res.stderr.splitlines()) if m]
    agg: collections.Counter = collections.Counter()
    for self_us, _, _, name in rows:
        parts = name.split(".")
        key = ".".join(parts[:3]) if parts[0] == "privgp" else ".".join(parts[:2]) if parts[0] in (
            "scipy", "matplotlib") else parts[0]
        agg[key] += self_us
    print(f"{len(rows)} modules imported, {sum(agg.values()) / 1e6:.3f} s of import time in all (self times)")
    for key, us in agg.most_common(a.top):
        print(f"{us / 1e3:8.1f} ms  {key}")
    for target in a.why:
        for i, (_, cum, ind, name) in enumerate(rows):
            if name == target:
                chain, cur = [f"{name} ({cum / 1e3:.1f} ms)"], ind
                for _, cum2, ind2, name2 in rows[i + 1:]:   # importtime lists a module before its importer
                    if ind2 < cur:
                        chain.append(f"{name2} ({cum2 / 1e3:.1f} ms)")
                        cur = ind2
                print("imported by: " + " <- ".join(chain))
                break


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
