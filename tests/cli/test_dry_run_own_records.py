"""`privgp release --dry-run` measures the plan on the data holder's own records (stderr, or `on_your_records` in
--json) and nothing of it reaches a release's outputs; the embedded example's default threshold is $40k (at $50k its
map was borderline on these records: docs/runs/forecast-calibration)."""
from __future__ import annotations

import json

from privgp.cli.main import main
from privgp.datasets import baltimore

OWN = "note (yours alone: read from your records, publish none of it)"


def test_a_dry_run_tells_the_data_holder_how_the_plan_does_on_their_records(tmp_path, capsys):
    ledger = str(tmp_path / "l.sqlite")
    assert main(["release", "--dry-run", "--ledger", ledger]) == 0
    got = capsys.readouterr()
    assert OWN not in got.out and got.err.count(OWN) == 1, got.err
    line = next(x for x in got.err.splitlines() if OWN in x)
    assert "24 releases of this plan drawn on your own records" in line and "against the forecast's 0.68" in line
    assert not (tmp_path / "l.sqlite").exists()   # a dry run writes nothing

    assert main(["release", "--dry-run", "--json", "--ledger", ledger, "--threshold", "50"]) == 0
    got = capsys.readouterr()
    own = json.loads(got.out)["on_your_records"]
    assert OWN not in got.err
    assert own["releases"] == 24 and own["iou"] < 0.6 and own["share_below_half"] > 0.3, own
    assert own["iou"] < own["forecast_iou"] - 0.1 and "do not publish" in own["private"]


def test_a_release_of_the_embedded_example_at_40k_tells_the_holder_and_publishes_nothing_of_it(tmp_path, capsys):
    """A noisy grid's release (the default) draws again after its charge, where it is cheap, and says so on stderr;
    none of it reaches stdout or a written file. A GP mechanism's release does not (its draws are costly: --dry-run
    measures it)."""
    out = tmp_path / "out"
    assert main(["release", "--seed", "3", "--out", str(out), "--ledger", str(tmp_path / "l.sqlite")]) == 0
    got = capsys.readouterr()
    assert got.err.count(OWN) == 1 and OWN not in got.out and "24 releases of this plan" in got.err, got.err
    gp = tmp_path / "gp"
    assert main(["release", "--mechanism", "posterior-sample", "--allow-noisy", "--seed", "3", "--out", str(gp),
                 "--ledger", str(tmp_path / "l.sqlite")]) == 0
    got = capsys.readouterr()
    assert OWN not in got.err + got.out
    for f in out.iterdir():
        text = f.read_bytes().decode("utf-8", "replace")
        assert "yours alone" not in text and "on_your_records" not in text, f.name
    assert baltimore.THRESHOLD == 40.0
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["public_settings"]["response_map"]["threshold"] == 40.0


def test_statistics_streamed_from_parquet_have_no_records_to_measure(tmp_path, capsys):
    """Parquet is reduced to per-cell statistics in one pass that keeps no records: the dry run says nothing of the
    records (`on_your_records` null), as with statistics reduced on a cluster."""
    import pandas as pd


    pd.read_csv(baltimore.csv_path()).to_parquet(tmp_path / "s.parquet")
    assert main(["release", "--data", str(tmp_path / "s.parquet"), "--x-col", "x", "--y-col", "y", "--response-col",
                 "price", "--box", "850", "1000", "500", "590", "--threshold", "40", "--clip", "1", "--transform",
                 "log", "--dry-run", "--json", "--ledger", str(tmp_path / "l.sqlite")]) == 0
    got = capsys.readouterr()
    assert json.loads(got.out)["on_your_records"] is None and OWN not in got.err


def test_a_map_that_is_mostly_noise_on_the_holders_records_gets_a_warning(tmp_path, capsys):
    """Audit 19b: at $60k (7.5% of the box above) the forecast passes the default map (0.68) that real releases
    overlap by 0.26; the release prints, after its charge, a warning of the holder's own, not a note."""
    out = tmp_path / "out"
    assert main(["release", "--threshold", "60", "--seed", "2", "--out", str(out), "--ledger",
                 str(tmp_path / "l.sqlite")]) == 0
    got = capsys.readouterr()
    warn = "privgp: warning (yours alone: read from your records, publish none of it): on your own records this plan's"
    assert got.err.count(warn) == 1 and OWN not in got.err and "think twice" in got.err, got.err
    assert "warning (yours alone" not in got.out
