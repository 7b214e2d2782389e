"""Data at scale (issue 28): ``privgp release`` from Parquet files against the physical limit, reading the
used columns of the same files with pyarrow alone.

    python benchmarks/bench_data_scale.py --records 1000000 --files 8 [--dask local | --dask cluster] \
        [--mechanism grid sparse-gp ...]

Writes synthetic records (x_km, y_km, price and two unused columns; planar coordinates in km; a known field plus noise) into --files
Parquet files under a temporary folder (or --dir; nothing is committed), then times, each in a fresh
process so that peak memory (max RSS) is the command's own:

* ``pyarrow``: ``pyarrow.parquet.read_table(folder, columns=[x_km, y_km, price])`` -- the floor;
* ``privgp``: ``privgp release --data FOLDER --mechanism M ...`` for each ``--mechanism`` (default grid; every
  mechanism that releases from statistics reduced in one pass: grid, sparse-gp, posterior-sample, functional)
  -- the whole command: count (Parquet footers), plan, one checked streaming pass with the fingerprint and the
  statistics, forecast, charge, draw, outputs --
  with ``--dask`` if given: ``--dask local`` passes ``--dask local`` (a LocalCluster inside the command);
  ``--dask cluster`` starts a real ``dask scheduler`` and ``--workers`` ``dask worker`` processes on localhost
  (the Dask CLIs of this interpreter, ``python -m dask``; one thread each), runs ``privgp release ...
  --scheduler tcp://127.0.0.1:PORT`` against them, and stops them at the end. With ``--dask``, the same command
  without a cluster is timed in the same run, before the cluster's (same load).

Prints one line per measurement and the ratios privgp / pyarrow (pyarrow timed again before each mechanism)
(and, with ``--dask``, to the command in process).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

COLUMNS = ["x_km", "y_km", "price"]


def generate(folder: Path, records: int, files: int, seed: int = 0) -> None:
    """``records`` synthetic sales in ``files`` Parquet files (box [0, 10] x [0, 5]); written in chunks."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i, n in enumerate(np.diff(np.linspace(0, records, files + 1).astype(int))):
        x = rng.uniform(0, 10, n)
        y = rng.uniform(0, 5, n)
        price = 100 * np.exp(0.5 * np.sin(x) * np.cos(y) + rng.normal(0, 0.3, n))
        pq.write_table(pa.table({"id": np.arange(n, dtype=np.int64), "x_km": x, "y_km": y, "price": price,
                                 "rooms": rng.integers(1, 8, n)}), folder / f"part-{i:03d}.parquet")


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in GiB, stdout) of a command in a fresh process (GNU time's %M)."""
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "MAXRSS_KB %M", *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    kb = [ln for ln in proc.stderr.splitlines() if ln.startswith("MAXRSS_KB")][-1].split()[1]
    return wall, int(kb) / 2**20, proc.stdout


class DaskCluster:
    """A real ``dask scheduler`` and ``workers`` ``dask worker`` processes on localhost (subprocesses of the Dask
    CLIs), started on entry (returns once every worker has joined) and stopped on exit; ``address``: the
    scheduler's tcp address."""

    def __init__(self, workers: int, folder: Path) -> None:
        self.workers, self.folder = workers, folder
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> DaskCluster:
        import socket

        from distributed import Client

        with socket.socket() as sock:      # a free port on localhost
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{port}"
        self.folder.mkdir(parents=True, exist_ok=True)
        dask = [sys.executable, "-m", "dask"]
        log = open(self.folder / "dask.log", "ab")
        try:
            self.procs.append(subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                                "--no-dashboard"], stdout=log, stderr=log))
            for i in range(self.workers):
                self.procs.append(subprocess.Popen([*dask, "worker", self.address, "--nthreads", "1", "--name",
                                                    f"w{i}", "--no-dashboard", "--local-directory",
                                                    str(self.folder / f"w{i}")], stdout=log, stderr=log))
            with Client(self.address, timeout="60s") as client:
                client.wait_for_workers(self.workers, timeout=120)
        except BaseException:
            self.__exit__()
            raise
        finally:
            log.close()
        return self

    def __exit__(self, *exc: object) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


PYARROW = (f"import sys, pyarrow.parquet as pq; t = pq.read_table(sys.argv[1], columns={COLUMNS!r}); "
           "print(t.num_rows)")


def in_process(folder: Path, repeat: int) -> tuple[float, float]:
    """Best-of-``repeat`` seconds, in this process (warm file cache): pyarrow.parquet.read_table of the used
    columns, and privgp's work on the same files as ``privgp release --mechanism grid`` does it (the count from
    the Parquet footers, then one streaming pass: check, fingerprint and exact per-cell statistics of the
    91 x 46 cells ``auto`` picks at 10^6 records)."""
    import pyarrow.parquet as pq

    from privgp.datasets import sources
    from privgp.mechanisms.release import ResponseMap
    from privgp.models.domain import Box

    rmap, box = ResponseMap(threshold=100.0, clip=1.0, transform="log"), Box([0.0, 0.0], [10.0, 5.0])
    parts = sources.resolve(str(folder))
    pa_t, pg_t = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        pq.read_table(str(folder), columns=COLUMNS)
        pa_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        a = sources.scan(parts, ("x_km", "y_km"), "price", box, rmap.apply, keep=False, count_only=True)
        b = sources.scan(parts, ("x_km", "y_km"), "price", box, rmap.apply, keep=False, cells=(91, 46))
        pg_t.append(time.perf_counter() - t0)
        assert a.n == b.n
    return min(pa_t), min(pg_t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--dir", help="data folder (default: a temporary one, removed at the end)")
    ap.add_argument("--dask", choices=["local", "cluster"],
                    help="local: pass --dask local to privgp release; cluster: start a dask scheduler and --workers "
                         "dask worker processes on localhost and pass --scheduler ADDRESS")
    ap.add_argument("--workers", type=int, default=2, help="dask worker processes for --dask cluster (default 2)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--mechanism", nargs="+", default=["grid"],
                    help="mechanisms to time (default: grid); e.g. grid sparse-gp posterior-sample functional")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.dir) if args.dir else Path(tmp) / "lake"
        if not folder.exists() or not any(folder.glob("*.parquet")):
            t0 = time.perf_counter()
            generate(folder, args.records, args.files)
            print(f"generated {args.records} records in {args.files} files ({sum(f.stat().st_size for f in folder.iterdir()) / 2**20:.0f} MiB) "
                  f"in {time.perf_counter() - t0:.1f} s", flush=True)
        cli = "import sys; from privgp.cli.main import main; sys.exit(main())"
        base = [sys.executable, "-c", cli, "release", "--data", str(folder), "--x-col", "x_km", "--y-col", "y_km",
                "--response-col", "price", "--box", "0", "10", "0", "5", "--threshold", "100", "--clip", "1",
                "--transform", "log", "--epsilon", "1", "--no-report", "--json",
                "--ledger", str(Path(tmp) / "ledger.sqlite"), "--budget-epsilon", "100000", "--allow-noisy"]
        print(f"load average at the start: {os.getloadavg()[0]:.2f} (cpus: {os.cpu_count()})", flush=True)
        with contextlib.ExitStack() as stack:
            variants: list[tuple[str, list[str]]] = [("", [])]
            if args.dask == "local":
                variants.append((" --dask local", ["--dask", "local"]))
            elif args.dask == "cluster":
                t0 = time.perf_counter()
                cluster = stack.enter_context(DaskCluster(args.workers, Path(tmp) / "dask"))
                variants.append((f" --scheduler ADDR ({args.workers} dask workers)", ["--scheduler", cluster.address]))
                print(f"dask scheduler + {args.workers} dask worker processes at {cluster.address}, ready in "
                      f"{time.perf_counter() - t0:.1f} s", flush=True)
            for mech in args.mechanism:
                # the floor again before each mechanism (alternating with privgp: the same load for each ratio)
                pyarrow = [timed([sys.executable, "-c", PYARROW, str(folder)])[:2] for _ in range(args.repeat)]
                pa_wall = min(w for w, _ in pyarrow)
                print(f"pyarrow read_table (used columns): {pa_wall:.2f} s wall, peak RSS {pyarrow[0][1]:.2f} GiB "
                      f"(load {os.getloadavg()[0]:.2f})", flush=True)
                best: dict[str, float] = {}
                for label, extra in variants:
                    runs = []
                    for r in range(args.repeat):
                        w, rss, out = timed([*base, *extra, "--mechanism", mech,
                                             "--out", str(Path(tmp) / f"out-{mech}-{r}{'-dask' if extra else ''}")])
                        runs.append((w, rss))
                        n = json.loads(out)["n"]
                        assert n == args.records, n
                    best[label] = min(w for w, _ in runs)
                    vs = f"; ratio to in process {best[label] / best['']:.2f}" if extra else ""
                    print(f"privgp release --mechanism {mech}{label}: {best[label]:.2f} s wall, peak RSS "
                          f"{max(r for _, r in runs):.2f} GiB; ratio to pyarrow {best[label] / pa_wall:.2f}{vs} "
                          f"(best of {args.repeat}, load {os.getloadavg()[0]:.2f})", flush=True)
        pa_in, pg_in = in_process(folder, max(3, args.repeat))
        print(f"in process, warm cache: pyarrow read_table {pa_in:.3f} s; privgp's count and pass (check, "
              f"fingerprint, statistics) {pg_in:.3f} s; ratio {pg_in / pa_in:.2f}")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
