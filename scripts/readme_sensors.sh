#!/usr/bin/env bash
# README's "Your own data" examples, as committed, on a synthetic sensors.csv (no real records). In a scratch
# folder with a fresh ledger (PRIVGP_LEDGER):
#   1. writes sensors.csv: 2000 readings (x_km, y_km, no2; planar kilometres) at uniform places in the box [0, 10] x [0, 5], a smooth
#      field (a bump of +25 at (3, 3), a dip of -12 at (7.5, 1.5), base 30) plus N(0, 5^2) noise, seed 0;
#   2. `privgp release --data sensors.csv ... --epsilon 2 --out no2_release`   (--mechanism auto: released)
#   3. the same data with `--mechanism sparse-gp --kernel squared_exponential`, `--mechanism posterior-sample
#      --L 3` and `--mechanism posterior-sample-tuned --lengthscales 0.5 1 2`: each refused by its forecast
#      (exit 2, nothing charged or written).
# Writes docs/runs/readme-sensors/: sensors.csv, auto.txt, excursion.png, certificate.json, sparse_gp.txt, posterior_sample_L3.txt,
# tuned.txt.
source "$(dirname "$0")/readme_scratch.sh"   # set -euo pipefail; ROOT; a scratch folder (cd) with its own ledger
python - <<'PY'
import numpy as np

rng = np.random.default_rng(0)
n = 2000
x, y = rng.uniform(0, 10, n), rng.uniform(0, 5, n)
field = (30 + 25 * np.exp(-((x - 3) ** 2 + (y - 3) ** 2) / 2.0)
         - 12 * np.exp(-((x - 7.5) ** 2 + (y - 1.5) ** 2) / 1.5))
no2 = field + rng.normal(0, 5, n)
np.savetxt("sensors.csv", np.column_stack([x, y, no2]), delimiter=",", header="x_km,y_km,no2", comments="",
           fmt="%.4f")
PY
DATA=(--data sensors.csv --x-col x_km --y-col y_km --response-col no2 --box 0 10 0 5 --threshold 40 --clip 20)
refused() {   # a command the forecast must refuse: its output and exit status, which must be 2
    local rc=0
    "$@" > refused.out 2>&1 || rc=$?
    cat refused.out
    echo "(exit status $rc)"
    [ "$rc" = 2 ] || { echo "readme_sensors.sh: expected exit status 2 from: $*" >&2; return 1; }
}
privgp release "${DATA[@]}" --epsilon 2 --out no2_release | tee auto.txt
refused privgp release --mechanism sparse-gp "${DATA[@]}" --kernel squared_exponential --epsilon 2 --out no2_sgp \
    | tee sparse_gp.txt
refused privgp release --mechanism posterior-sample --L 3 "${DATA[@]}" --epsilon 2 --out no2_paths \
    | tee posterior_sample_L3.txt
refused privgp release --mechanism posterior-sample-tuned --lengthscales 0.5 1 2 "${DATA[@]}" --epsilon 2 \
    --out no2_tuned | tee tuned.txt
sed -i "s#$SCRATCH/##g" auto.txt sparse_gp.txt posterior_sample_L3.txt tuned.txt
mkdir -p "$ROOT/docs/runs/readme-sensors"
rm -f "$ROOT/docs/runs/readme-sensors/"*
cp sensors.csv auto.txt no2_release/excursion.png no2_release/certificate.json sparse_gp.txt posterior_sample_L3.txt tuned.txt \
    "$ROOT/docs/runs/readme-sensors/"
echo "written: docs/runs/readme-sensors/"
