"""The records' content digest against the CSV parse it follows (issue 30: at most 2x the parse time).

    python benchmarks/bench_digest.py [--n 1000000] [--repeat 7]

n synthetic records (``bench_release_scale.write_2d``) in one CSV file; in one process, alternating, with
medians of CPU time (``time.process_time``; pyarrow's parse is multi-threaded, so its wall time is printed
too): the parse ``privgp release`` does (``pyarrow.csv`` of the three used columns, as
``privgp.datasets.tabular.load_table``), pandas' ``read_csv`` of the same file (the peer), the
order-independent version-3 digest of the parsed records, and the sorted version-2 digest it replaces
(computed now only for ledgers written before version 3). Prints the ratios of each digest to each parse.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_release_scale import write_2d  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from privgp.datasets.fingerprint import legacy_digest_v2, records_digest
    from privgp.datasets.tabular import _float64_values

    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "sales.csv"
        write_2d(csv, a.n)
        cols = ["x", "y", "price"]
        opts = pacsv.ConvertOptions(include_columns=cols, column_types={c: pa.float64() for c in cols})

        def parse():
            t = pacsv.read_csv(csv, convert_options=opts)
            v = [_float64_values(t.column(c)) for c in cols]
            return v[:2], v[2]

        X, y = parse()
        import numpy as np

        X = np.column_stack(X)
        runs = {"pyarrow.csv parse (privgp)": parse, "pandas.read_csv (peer)": lambda: pd.read_csv(csv),
                "v3 digest (order-independent)": lambda: records_digest(X, y),
                "v2 digest (sorted; old ledgers only)": lambda: legacy_digest_v2(X, y)}
        for fn in runs.values():
            fn()
        res: dict[str, list[tuple[float, float]]] = {k: [] for k in runs}
        for rep in range(a.repeat):
            for name in (list(runs) if rep % 2 == 0 else list(runs)[::-1]):
                c0, w0 = time.process_time(), time.perf_counter()
                runs[name]()
                res[name].append((time.process_time() - c0, time.perf_counter() - w0))
    med = {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v)) for k, v in res.items()}
    print(f"n = {a.n}; {a.repeat} alternating rounds; medians")
    print(f"{'what':40s} {'CPU s':>8s} {'wall s':>8s}")
    for k, (c, w) in med.items():
        print(f"{k:40s} {c:8.3f} {w:8.3f}")
    parse_, peer = med["pyarrow.csv parse (privgp)"], med["pandas.read_csv (peer)"]
    for k in ("v3 digest (order-independent)", "v2 digest (sorted; old ledgers only)"):
        c, w = med[k]
        print(f"{k}: {c / parse_[0]:.2f}x the pyarrow parse CPU ({w / parse_[1]:.2f}x wall), "
              f"{c / peer[0]:.2f}x the pandas parse CPU ({w / peer[1]:.2f}x wall)")


if __name__ == "__main__":
    from _machine import machine_line  # the machine's DGEMM speed and load, beside the numbers

    print(machine_line())
    main()
