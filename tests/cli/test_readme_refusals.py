"""The refusals README quotes are what privgp prints now.

A refusal charges nothing and draws no privacy noise: its forecast is a seeded simulation, so the committed text
(docs/runs/*/, written by scripts/readme_*.sh) must be reproduced word for word. The README's ε = 2 refusal once
said "overlap it by 50%" after the forecast's words had been fixed to say 49% for an IoU of 0.49: a stale quote
that no test caught. Re-run the script named in the failure message when this fails."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from privgp.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "docs" / "runs"
SENSORS = ["--data", "sensors.csv", "--x-col", "x_km", "--y-col", "y_km", "--response-col", "no2",
           "--box", "0", "10", "0", "5", "--threshold", "40", "--clip", "20"]

# (committed file, the script that writes it, the command's arguments as the script gives them); README quotes
# the first two whole and the sensors' refusals by their expected IoU (checked by tests/test_results_doc.py)
REFUSALS = [
    ("release-default-output/refused.txt", "readme_release.sh", ["--epsilon", "1", "--out", "release_eps1"]),
    ("readme-functional/refused.txt", "readme_functional.sh",
     ["--mechanism", "functional", "--epsilon", "2", "--noise-bound", "0.15", "--out", "baltimore_mean"]),
    ("readme-sensors/sparse_gp.txt", "readme_sensors.sh",
     ["--mechanism", "sparse-gp", *SENSORS, "--kernel", "squared_exponential", "--epsilon", "2", "--out", "no2_sgp"]),
    ("readme-sensors/posterior_sample_L3.txt", "readme_sensors.sh",
     ["--mechanism", "posterior-sample", "--L", "3", *SENSORS, "--epsilon", "2", "--out", "no2_paths"]),
    ("readme-sensors/tuned.txt", "readme_sensors.sh",
     ["--mechanism", "posterior-sample-tuned", "--lengthscales", "0.5", "1", "2", *SENSORS, "--epsilon", "2",
      "--out", "no2_tuned"]),
]


@pytest.mark.parametrize("committed, script, args", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_quoted_refusal_is_what_privgp_prints(committed, script, args, tmp_path, monkeypatch, capsys):
    expected = (RUNS / committed).read_text()
    message, status = expected.rstrip("\n").rsplit("\n", 1)
    assert status == "(exit status 2)", committed
    if committed.startswith("readme-sensors/"):
        assert f"<!-- in: docs/runs/{committed} -->" in (ROOT / "README.md").read_text()
    else:
        assert message in (ROOT / "README.md").read_text(), f"README does not quote {committed} whole"
    shutil.copy(RUNS / "readme-sensors" / "sensors.csv", tmp_path / "sensors.csv")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRIVGP_LEDGER", str(tmp_path / "ledger.sqlite"))
    assert main(["release", *args]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.rstrip("\n") == message, f"stale: re-run scripts/{script}"
    assert not any(tmp_path.glob(args[args.index("--out") + 1])), "a refusal wrote its output folder"
