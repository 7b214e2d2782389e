#!/usr/bin/env bash
# README's "Large data" example, as committed: 10^6 synthetic house-sale-like records (the generator
# of benchmarks/bench_release_scale.py, seed 0; no real records) on the Baltimore public box, released
# with the defaults (--mechanism auto: the tuned noisy grid, map on the 121 x 73 grid) into a scratch ledger,
# under /usr/bin/time. Writes docs/runs/release-1e6/: output.txt (stdout + progress + time),
# certificate.json, excursion.png.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
python -c "import sys; sys.path.insert(0, '$ROOT/benchmarks'); from bench_release_scale import write_2d; \
from pathlib import Path; write_2d(Path('$SCRATCH/sales.csv'), 1_000_000)"
cd "$SCRATCH"
/usr/bin/time -f "wall %e s, peak RSS %M KB" \
    privgp release --data sales.csv --x-col x --y-col y --response-col price --box 850 1000 500 590 \
    --threshold 50 --clip 1 --transform log --dataset-id city-sales --ledger ledger.sqlite --out release_out \
    --progress 2>&1 | tee output.txt
mkdir -p "$ROOT/docs/runs/release-1e6"
cp output.txt release_out/certificate.json release_out/excursion.png "$ROOT/docs/runs/release-1e6/"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$ROOT/docs/runs/release-1e6/output.txt"
