"""Red team 19c (/work/notes/redteam19c.md): release folders crafted to pass ``privgp verify --strict``.

* F1/F2: a file privgp does not write, hashed by the certificate (raw records listed in ``outputs``, which the rebuilt
  report then named among privgp's published files; a format-5 page renamed ``report.htm``), passed ``--strict`` as
  "hashed only, not read". It is now a note: ``--strict`` fails.
* F4: a noisy grid's certificate stating n = 5000 over released counts summing to 197 passed, with a better forecast
  and a report of 5000 records. The stated n must now agree with the counts up to their noise.
* F5: QGIS sidecars of ``excursion.geojson`` (``excursion.qml``, a style applied when the layer loads) passed; they are
  refused as the GeoTIFF's are.
* F6: a forecast stating 1e308 simulated releases kept verify busy; more than verify runs again is NOT VERIFIED.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from privgp.cli.main import main


def _verify(cert, capsys, *extra):
    capsys.readouterr()
    code = main(["verify", str(cert), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def _rewrite(out, doc):
    (out / "certificate.json").write_text(json.dumps(doc, indent=2) + "\n")


def test_a_hashed_file_privgp_does_not_write_fails_strict(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["release", "--seed", "1", "--no-report", "--out", str(out), "--ledger", str(tmp_path / "l.sqlite")]) == 0
    assert _verify(out / "certificate.json", capsys, "--strict")[0] == 0
    (out / "full_records.csv").write_text("x,y,price\n900,550,41.5\n")
    doc = json.loads((out / "certificate.json").read_text())
    doc["sha256"]["full_records.csv"] = hashlib.sha256((out / "full_records.csv").read_bytes()).hexdigest()
    doc["outputs"].insert(-1, "full_records.csv")
    _rewrite(out, doc)
    code, res = _verify(out / "certificate.json", capsys)
    assert code == 0, res   # verified: the hash matches, and the note says what was not read
    assert any(n.startswith("full_records.csv: hashed only, not read") and "outputs lists it" in n
               for n in res["notes"]), res["notes"]
    code, res = _verify(out / "certificate.json", capsys, "--strict")
    assert code == 1 and res["strict_failed"], res


def test_a_noisy_grid_certificate_must_state_the_n_of_its_released_counts(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["release", "--mechanism", "grid", "--allow-noisy", "--seed", "4", "--no-report", "--out", str(out),
                 "--ledger", str(tmp_path / "l.sqlite")]) == 0
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["public_settings"]["n"] == 211
    counts = np.load(out / "field.npz")["released_counts"]
    assert abs(counts.sum() - 211) < 100
    for n in (5000, 1000):
        doc["public_settings"]["n"] = doc["dataset"]["n"] = n
        _rewrite(out, doc)
        code, res = _verify(out / "certificate.json", capsys)
        assert code == 1 and res["field"] == "field.npz.released_counts", res
        assert "the certificate states another n than the records'" in res["reason"]


def test_a_qgis_style_beside_the_geojson_is_refused(tmp_path, capsys):
    pytest.importorskip("pyproj")
    pytest.importorskip("rasterio")
    rng = np.random.default_rng(3)
    n = 1500
    lon, lat = rng.uniform(-0.25, 0.05, n), rng.uniform(51.40, 51.60, n)
    pd.DataFrame({"lon": lon, "lat": lat, "no2": 30 + rng.normal(0, 10, n)}).to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "out"
    assert main(["release", "--data", str(tmp_path / "d.csv"), "--x-col", "lon", "--y-col", "lat", "--response-col",
                 "no2", "--box", "-0.25", "0.05", "51.4", "51.6", "--crs", "EPSG:4326", "--threshold", "40", "--clip",
                 "20", "--allow-noisy", "--seed", "1", "--no-report", "--out", str(out), "--ledger",
                 str(tmp_path / "l.sqlite")]) == 0
    assert _verify(out / "certificate.json", capsys, "--strict")[0] == 0
    for name in ("excursion.qml", "EXCURSION.qmd", "excursion.sld", "excursion.geojson.aux.xml", "excursion_x.qml",
                 "METADATA.DIM", "summary.txt", "HDRld.txt", "rpcld.txt"):   # red team 19e: names GDAL reads anywhere
        (out / name).write_text("<qgis/>")
        code, res = _verify(out / "certificate.json", capsys)
        assert code == 1 and res["field"] == name and "GeoTIFF or GeoJSON" in res["reason"], res
        (out / name).unlink()


def test_an_account_certificate_refuses_a_look_alike_of_privgps_files_beside_it(tmp_path, capsys):
    """Red team 19e: only privgp's exact names were refused beside an account certificate (which certifies a planned
    release and no file); Report.html or FIELD.TIF passed --strict."""
    folder = tmp_path / "acct"
    folder.mkdir()
    assert main(["account", "--mechanism", "grid", "--n", "211", "--epsilon", "5", "--box", "0", "1", "0", "1",
                 "--json"]) == 0
    (folder / "certificate.json").write_text(capsys.readouterr().out)
    assert _verify(folder / "certificate.json", capsys, "--strict")[0] == 0
    for name in ("Report.html", "FIELD.TIF", "report.html"):
        (folder / name).write_text("x")
        code, res = _verify(folder / "certificate.json", capsys)
        assert code == 1 and res["field"] == name, res
        (folder / name).unlink()


def test_verify_shows_the_counts_beside_n_and_quotes_a_name_with_a_trailing_space(tmp_path, capsys):
    """Red team 19e: at a small epsilon the n check's band is wide (n inflated 10x passed at epsilon 0.05), so verify
    prints the released counts' total and its noise sd beside the stated n; and it printed a hashed "field.npz " as
    field.npz."""
    out = tmp_path / "out"
    assert main(["release", "--seed", "1", "--no-report", "--out", str(out), "--ledger", str(tmp_path / "l.sqlite")]) == 0
    code, res = _verify(out / "certificate.json", capsys)
    total = float(np.load(out / "field.npz")["released_counts"].sum())
    assert code == 0 and res["counts"]["stated_n"] == 211 and res["counts"]["released_counts_total"] == total, res
    assert 5 < res["counts"]["noise_sd_of_total"] < 10
    capsys.readouterr()
    assert main(["verify", str(out / "certificate.json")]) == 0
    assert "  n:      211 records stated; the released noisy counts sum to" in capsys.readouterr().out
    (out / "field.npz ").write_bytes(b"x")
    doc = json.loads((out / "certificate.json").read_text())
    doc["sha256"]["field.npz "] = hashlib.sha256(b"x").hexdigest()
    _rewrite(out, doc)
    capsys.readouterr()
    assert main(["verify", str(out / "certificate.json")]) == 0
    text = capsys.readouterr().out
    assert "hashed only, not read: 'field.npz '" in text, text


def test_a_forecast_stating_more_simulated_releases_than_verify_runs_is_not_verified(tmp_path, capsys):
    """F6: a certificate whose forecast states 1e308 simulated releases kept verify busy (17 s for a sparse GP); verify
    runs at most ``MAX_VERIFIED_REPS`` a family again, and a forecast stating more is not one it can check: NOT
    VERIFIED (review 20c: as a note, its unchecked numbers passed without --strict)."""
    from privgp.tasks.forecast import MAX_VERIFIED_REPS as VERIFY_FORECAST_REPS

    out = tmp_path / "out"
    assert main(["release", "--seed", "1", "--no-report", "--out", str(out), "--ledger", str(tmp_path / "l.sqlite")]) == 0
    doc = json.loads((out / "certificate.json").read_text())
    families = len(doc["forecast"]["families"])
    for releases in (10**300, (VERIFY_FORECAST_REPS + 1) * families):
        doc["forecast"]["simulated_releases"] = releases
        doc["forecast"]["expected_iou"] = 0.99
        _rewrite(out, doc)
        code, res = _verify(out / "certificate.json", capsys)
        assert code == 1 and res["field"] == "forecast" and f"more than {VERIFY_FORECAST_REPS} simulated" in res["reason"], res
