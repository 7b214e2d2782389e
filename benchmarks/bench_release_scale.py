"""`privgp release` at the scale of real data (issue 10): the whole command as a user runs it.

Run:  python benchmarks/bench_release_scale.py [--n2d 1000000] [--n1d 100000] [--keep DIR]

* 2-D: n synthetic records (house-sale-like prices on the Baltimore public box), the default
  121 x 73 grid, inputs snapped to the grid (one unknown per occupied site), exact draw.
  Targets: n = 10^6 in <= 30 s wall and <= 4 GB peak memory.
* 1-D: n records on [0, 1] with the exponential kernel (the O(n + m) sampler). Target: n = 10^5 in <= 2 s
  (the release's own stages, i.e. excluding the Python start-up and imports, which the table reports).
* 2-D functional mechanism (``--mechanism functional``, issue 25): the same n records and grid, inputs
  snapped to the grid, the exact posterior mean with one unknown per occupied site plus GP noise.
  Target: n = 10^6 in <= 60 s wall and <= 4 GB peak memory.

``--rows`` picks the rows (default: all three), e.g. ``--rows functional``.

Peer in the same run (issue 30): before each release, ``python -c "import pandas; pandas.read_csv(FILE)"`` of
the same file under the same /usr/bin/time; each row prints the ratio of the release's wall time to it.

Each command runs in a fresh process under /usr/bin/time -v (wall time and maximum resident set size
of the whole process, CSV loading included), with a temporary ledger; the script prints the
table rows for BENCHMARKS.md, the machine load, and the command's own output.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def write_2d(path: Path, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(850, 1000, n)
    y = rng.uniform(500, 590, n)
    # a smooth price surface in $1,000 with multiplicative noise (synthetic; no real records)
    price = 55 * np.exp(0.35 * np.sin((x - 850) / 25) + 0.25 * np.cos((y - 500) / 20) + 0.3 * rng.standard_normal(n))
    np.savetxt(path, np.column_stack([x, y, price]), delimiter=",", header="x,y,price", comments="", fmt="%.6f")


def write_1d(path: Path, n: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 1, n)
    v = np.sin(6 * t) + 0.3 * rng.standard_normal(n)
    np.savetxt(path, np.column_stack([t, v]), delimiter=",", header="t,v", comments="", fmt="%.8f")


def timed(cmd: list[str], env: dict) -> tuple[float, float, str, float]:
    """(wall seconds, peak RSS GiB, stdout, in-command seconds from --progress lines)."""
    t0 = time.perf_counter()
    res = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        sys.exit(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-2000:]}")
    rss = float(re.search(r"Maximum resident set size \(kbytes\): (\d+)", res.stderr).group(1)) / 2**20
    stages = [float(m) for m in re.findall(r"privgp: release: .*?, ([0-9.]+) s$", res.stderr, flags=re.M)]
    return wall, rss, res.stdout, (stages[-1] if stages else float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n2d", type=int, default=10**6)
    ap.add_argument("--n1d", type=int, default=10**5)
    ap.add_argument("--keep", default=None, help="keep the outputs in this folder")
    ap.add_argument("--rows", nargs="+", choices=("2d", "1d", "functional"), default=["2d", "1d", "functional"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        d = Path(args.keep or d)
        d.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PRIVGP_LEDGER=str(d / "ledger.sqlite"))
        big2, big1 = d / "sales_2d.csv", d / "series_1d.csv"
        if {"2d", "functional"} & set(args.rows):
            write_2d(big2, args.n2d)
        if "1d" in args.rows:
            write_1d(big1, args.n1d)
        priv = [sys.executable, "-m", "privgp.cli.main", "release", "--progress"]
        base2 = priv + ["--data", str(big2), "--x-col", "x", "--y-col", "y", "--response-col", "price",
                        "--box", "850", "1000", "500", "590", "--threshold", "50", "--clip", "1", "--transform", "log",
                        "--json", "--no-report"]
        # the mechanism named: the CLI's default is now --mechanism auto
        cmd2 = base2 + ["--mechanism", "posterior-sample", "--out", str(d / "out2d")]
        cmd1 = priv + ["--data", str(big1), "--x-col", "t", "--response-col", "v", "--box", "0", "1",
                       "--threshold", "0", "--clip", "2", "--out", str(d / "out1d"), "--json", "--no-report"]
        cmdf = base2 + ["--mechanism", "functional", "--out", str(d / "outfn")]
        rows = []

        def peer(path: Path) -> str:
            w = timed([sys.executable, "-c", "import sys, pandas; pandas.read_csv(sys.argv[1])", str(path)], env)[0]
            return f"{w:.2f} s"

        print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        if "2d" in args.rows:
            p2 = peer(big2)
            w2, m2, out2, s2 = timed(cmd2, env)
            j2 = json.loads(out2)
            rows.append(f"| 2-D, snapped (circulant, one unknown per site) | {j2['n']} | 121 x 73 | {w2:.1f} s | "
                        f"{s2:.1f} s | {m2:.2f} GiB | {j2['epsilon']:.4g} | {p2} ({w2 / float(p2[:-2]):.1f}x) | "
                        "<= 30 s, <= 4 GB |")
        if "1d" in args.rows:
            p1 = peer(big1)
            w1, m1, out1, s1 = timed(cmd1, env)
            j1 = json.loads(out1)
            rows.append(f"| 1-D exponential kernel (O(n + m)) | {j1['n']} | 201 | {w1:.2f} s | {s1:.2f} s | "
                        f"{m1:.2f} GiB | {j1['epsilon']:.4g} | {p1} ({w1 / float(p1[:-2]):.1f}x) | <= 2 s |")
        if "functional" in args.rows:
            pf = peer(big2)
            wf, mf, outf, sf = timed(cmdf, dict(env, PRIVGP_LEDGER=str(d / "ledger_functional.sqlite")))
            jf = json.loads(outf)
            rows.append(f"| 2-D functional mechanism, snapped (exact mean, one unknown per site) | {jf['n']} | "
                        f"121 x 73 | {wf:.1f} s | {sf:.1f} s | {mf:.2f} GiB | {jf['epsilon']:.4g} | "
                        f"{pf} ({wf / float(pf[:-2]):.1f}x) | <= 60 s, <= 4 GB |")
        print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print("| release | n | grid | wall (whole process) | stages (in-command) | peak memory | epsilon | "
              "pandas.read_csv of the file (ratio) | target |")
        print("|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
