#!/usr/bin/env bash
# README's "Data at scale" example, as committed: 10^6 synthetic sales (no real records) in 8 Parquet files
# (the generator of benchmarks/bench_data_scale.py, seed 0), released with the defaults at epsilon 1 into a
# scratch ledger, then the same records through DuckDB (one dataset: the ledger reports 2 of 10 spent), each
# under /usr/bin/time. Writes benchmarks/logs/issue28_readme_release.txt (commands, outputs, times, load).
# Needs the `data` extra (duckdb) for the second command.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
LOG="$ROOT/benchmarks/logs/issue28_readme_release.txt"
python -c "import sys; sys.path.insert(0, '$ROOT/benchmarks'); from bench_data_scale import generate; \
from pathlib import Path; generate(Path('$SCRATCH/lake'), 1_000_000, 8)"
python -c "import duckdb; duckdb.connect('$SCRATCH/sales.duckdb').execute(\"CREATE TABLE sales AS SELECT * FROM read_parquet('$SCRATCH/lake/*.parquet')\")"
cd "$SCRATCH"
COMMON=(--x-col x_km --y-col y_km --response-col price --box 0 10 0 5 --threshold 100 --transform log --clip 1
        --epsilon 1 --ledger ledger.sqlite)
{
    echo "\$ cd SCRATCH   # lake: 10^6 records in 8 Parquet files (benchmarks/bench_data_scale.py generator, seed 0); commit $(git -C "$ROOT" rev-parse --short HEAD); load average at the start $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "\$ /usr/bin/time -f 'WALL %e s MAXRSS_KB %M' privgp release --data 'lake/*.parquet' ${COMMON[*]} --out sales_map"
    /usr/bin/time -f 'WALL %e s MAXRSS_KB %M' privgp release --data 'lake/*.parquet' "${COMMON[@]}" --out sales_map 2>&1
    echo "\$ /usr/bin/time -f 'WALL %e s MAXRSS_KB %M' privgp release --data duckdb://sales.duckdb --query \"SELECT x_km, y_km, price FROM sales\" ${COMMON[*]} --out sales_map2   # sales: the same records, CREATE TABLE sales AS SELECT * FROM read_parquet('lake/*.parquet')"
    /usr/bin/time -f 'WALL %e s MAXRSS_KB %M' privgp release --data duckdb://sales.duckdb --query "SELECT x_km, y_km, price FROM sales" "${COMMON[@]}" --out sales_map2 2>&1
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$LOG"
