#!/usr/bin/env bash
# README's Quickstart release and its report, as committed: runs the Quickstart command
# (`privgp release --out release_out`, default ledger, fresh OS entropy) in a scratch folder, then
# screenshots report.html in headless Chromium (desktop 1280 px, phone 390 px at 2x), and copies
#   docs/figures/release_default.png      the release's picture (excursion.png)
#   docs/figures/report_desktop.png       report.html, desktop screenshot
#   docs/figures/report_phone.png         report.html, phone screenshot
#   docs/runs/release-default/            stdout.txt, certificate.json, report.html, excursion.png
# NOTE: this charges the default ledger (~/.local/share/privgp/ledger.sqlite, or $PRIVGP_LEDGER) like
# the Quickstart does; the README's "spent epsilon 5 of 10" is a ledger that had no release of the
# embedded data before.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
cd "$SCRATCH"
privgp release --out release_out | tee stdout.txt
CHROMIUM="${PRIVGP_CHROMIUM:-chromium}"
FLAGS=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --hide-scrollbars)
URL="file://$SCRATCH/release_out/report.html"
"$CHROMIUM" "${FLAGS[@]}" --user-data-dir="$SCRATCH/p1" --window-size=1280,1900 \
    --screenshot="$SCRATCH/report_desktop.png" "$URL" 2>/dev/null
"$CHROMIUM" "${FLAGS[@]}" --user-data-dir="$SCRATCH/p2" --window-size=390,1300 --force-device-scale-factor=2 \
    --screenshot="$SCRATCH/report_phone.png" "$URL" 2>/dev/null
mkdir -p "$ROOT/docs/figures" "$ROOT/docs/runs/release-default"
cp release_out/excursion.png "$ROOT/docs/figures/release_default.png"
cp report_desktop.png report_phone.png "$ROOT/docs/figures/"
cp stdout.txt release_out/certificate.json release_out/report.html release_out/excursion.png "$ROOT/docs/runs/release-default/"
echo "written: docs/figures/{release_default,report_desktop,report_phone}.png, docs/runs/release-default/"
