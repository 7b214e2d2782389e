#!/usr/bin/env bash
# README's Quickstart release and its report, as committed. In a scratch folder with a fresh ledger
# (PRIVGP_LEDGER, so that the README's "spent epsilon 5 of 10" is a ledger that had no release of the
# embedded data before), it runs
#   1. `privgp release --epsilon 1 --out release_eps1` (refused by the forecast, exit 2)
#   2. `privgp release --out release_out`              (README's main command: the defaults, epsilon 5; fresh
#                                                       OS entropy)
#   3. the same command twice more                     (the second fills the budget of 10, the third is
#                                                       refused by it, exit 3)
#   4. `privgp verify release_out/certificate.json --strict` on the first release (exit 0), and on a copy whose
#      certificate was edited to claim epsilon = 1 (exit 1: a forged certificate)
# then screenshots report.html in headless Chromium (desktop 1280 px, phone 390 px at 2x), and copies
#   docs/figures/release_default.png      the release's picture (excursion.png)
#   docs/figures/report_desktop.png       report.html, desktop screenshot
#   docs/figures/report_phone.png         report.html, phone screenshot
#   docs/runs/release-default/            every file of release_out/ and nothing else (`privgp verify --strict` checks
#                                         them all, and notes any file beside them that the certificate does not cover)
#   docs/runs/release-default-output/     refused.txt, output.txt (stdout and stderr), second.txt, third.txt, verify.txt,
#                                         forged.txt
source "$(dirname "$0")/readme_scratch.sh"   # set -euo pipefail; ROOT; a scratch folder (cd) with its own ledger
{ privgp release --epsilon 1 --out release_eps1 2>&1 || echo "(exit status $?)"; } | tee refused.txt
privgp release --out release_out 2>&1 | tee output.txt
privgp release --out second_out 2>&1 | tee second.txt
{ privgp release --out third_out 2>&1 || echo "(exit status $?)"; } | tee third.txt
privgp verify release_out/certificate.json --strict | tee verify.txt
cp -r release_out forged_out
python - <<'PY'
import json
cert = json.load(open("forged_out/certificate.json"))
cert["certificate"]["epsilon"] = 1.0          # the forger's claim: epsilon 1 instead of 5
json.dump(cert, open("forged_out/certificate.json", "w"), indent=2)
PY
{ privgp verify forged_out/certificate.json --strict 2>&1 || echo "(exit status $?)"; } | tee forged.txt
sed -i "s#$SCRATCH/##g" refused.txt output.txt second.txt third.txt verify.txt forged.txt   # no scratch paths in the committed text
CHROMIUM="${PRIVGP_CHROMIUM:-chromium}"
FLAGS=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --hide-scrollbars)
URL="file://$SCRATCH/release_out/report.html"
"$CHROMIUM" "${FLAGS[@]}" --user-data-dir="$SCRATCH/p1" --window-size=1280,2300 \
    --screenshot="$SCRATCH/report_desktop.png" "$URL" 2>/dev/null
"$CHROMIUM" "${FLAGS[@]}" --user-data-dir="$SCRATCH/p2" --window-size=390,1500 --force-device-scale-factor=2 \
    --screenshot="$SCRATCH/report_phone.png" "$URL" 2>/dev/null
mkdir -p "$ROOT/docs/figures" "$ROOT/docs/runs/release-default" "$ROOT/docs/runs/release-default-output"
rm -f "$ROOT/docs/runs/release-default/"* "$ROOT/docs/runs/release-default-output/"*.txt
cp release_out/excursion.png "$ROOT/docs/figures/release_default.png"
cp report_desktop.png report_phone.png "$ROOT/docs/figures/"
cp refused.txt output.txt second.txt third.txt verify.txt forged.txt "$ROOT/docs/runs/release-default-output/"
cp release_out/* "$ROOT/docs/runs/release-default/"
echo "written: docs/figures/{release_default,report_desktop,report_phone}.png, docs/runs/release-default/, docs/runs/release-default-output/"
