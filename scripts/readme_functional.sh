#!/usr/bin/env bash
# README's functional-mechanism example, as committed. In a scratch folder with a fresh ledger (PRIVGP_LEDGER):
#   1. `privgp release --mechanism functional --epsilon 2 --noise-bound 0.15 --out baltimore_mean` on the embedded
#      211 records: refused by the forecast (exit 2, nothing charged or written);
#   2. the same mechanism and settings on 10^5 synthetic house-sale-like records (the generator of
#      benchmarks/bench_release_scale.py, seed 0; no real records) on the same public box: released.
# Writes docs/runs/readme-functional/: refused.txt, released_1e5.txt, certificate.json.
source "$(dirname "$0")/readme_scratch.sh"   # set -euo pipefail; ROOT; a scratch folder (cd) with its own ledger
{ privgp release --mechanism functional --epsilon 2 --noise-bound 0.15 --out baltimore_mean 2>&1 \
    || echo "(exit status $?)"; } | tee refused.txt
python -c "import sys; sys.path.insert(0, '$ROOT/benchmarks'); from bench_release_scale import write_2d; \
from pathlib import Path; write_2d(Path('$SCRATCH/sales.csv'), 100_000)"
privgp release --mechanism functional --epsilon 2 --noise-bound 0.15 --data sales.csv --x-col x --y-col y \
    --response-col price --box 850 1000 500 590 --threshold 50 --clip 1 --transform log --out sales_mean \
    | tee released_1e5.txt
sed -i "s#$SCRATCH/##g" refused.txt released_1e5.txt
mkdir -p "$ROOT/docs/runs/readme-functional"
cp refused.txt released_1e5.txt sales_mean/certificate.json "$ROOT/docs/runs/readme-functional/"
