#!/usr/bin/env bash
# README's functional-mechanism example, as committed. In a scratch folder with a fresh ledger (PRIVGP_LEDGER):
#   1. `privgp release --mechanism functional --epsilon 2 --noise-bound 0.15 --out baltimore_mean` on the embedded
#      211 records: refused before anything is read (exit 2, nothing charged or written): its float noise leaks
#      (red team 20f);
#   2. `privgp account` of the same mechanism and settings: the guarantee it would carry in exact arithmetic,
#      no data read.
# Writes docs/runs/readme-functional/: refused.txt, account.txt.
source "$(dirname "$0")/readme_scratch.sh"   # set -euo pipefail; ROOT; a scratch folder (cd) with its own ledger
{ privgp release --mechanism functional --epsilon 2 --noise-bound 0.15 --out baltimore_mean 2>&1 \
    || echo "(exit status $?)"; } | tee refused.txt
privgp account --mechanism functional --n 211 --box 850 1000 500 590 --epsilon 2 --noise-bound 0.15 2>&1 | tee account.txt
mkdir -p "$ROOT/docs/runs/readme-functional"
rm -f "$ROOT/docs/runs/readme-functional/"{certificate.json,released_1e5.txt}
cp refused.txt account.txt "$ROOT/docs/runs/readme-functional/"
