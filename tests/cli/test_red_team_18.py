"""Red team 18 (the composed mechanisms: /work/notes/redteam18b.md).

* F2: every ``--mechanism posterior-sample-tuned --crs`` release that selected a path was NOT VERIFIED by ``privgp
  verify``: it rebuilt the GIS files from the chosen run's plan, whose certificate states the per-run epsilon, while
  the release writes the whole selection's (the guarantee the certificate states).
* F1: ``--mechanism posterior-sample-tuned --map`` (and ``--dry-run --map``) ended in a traceback (exit 1).
"""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from privgp.cli.main import main

pytest.importorskip("pyproj")
pytest.importorskip("rasterio")

TUNED = ["--mechanism", "posterior-sample-tuned", "--lengthscales", "3000", "10000", "--epsilon", "10",
         "--budget-epsilon", "100", "--allow-noisy", "--seed", "1", "--grid", "21"]


def _london(path):
    rng = np.random.default_rng(3)
    n = 1500
    lon, lat = rng.uniform(-0.25, 0.05, n), rng.uniform(51.40, 51.60, n)
    no2 = 30 + 25 * np.exp(-((lon + 0.1) ** 2 / 0.005 + (lat - 51.5) ** 2 / 0.002)) + rng.normal(0, 3, n)
    pd.DataFrame({"lon": lon, "lat": lat, "no2": no2}).to_csv(path, index=False)
    return ["--data", str(path), "--x-col", "lon", "--y-col", "lat", "--response-col", "no2", "--box", "-0.25", "0.05",
            "51.4", "51.6", "--crs", "EPSG:4326", "--threshold", "40", "--clip", "20"]


def _verify(cert, capsys, *extra):
    capsys.readouterr()
    code = main(["verify", str(cert), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_a_tuned_release_in_a_crs_that_selects_a_path_verifies_and_its_gis_files_state_the_whole_selection(
        tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["release", *_london(tmp_path / "d.csv"), *TUNED, "--out", str(out), "--ledger",
                 str(tmp_path / "l.sqlite"), "--map", "--json"]) == 0
    release = json.loads(capsys.readouterr().out)
    assert json.loads((out / "selection.json").read_text())["selected"]
    assert {"field.tif", "excursion.geojson"} <= set(release["files"])
    geo = json.loads((out / "excursion.geojson").read_text())
    assert {f["properties"]["epsilon"] for f in geo["features"]} == {release["epsilon"]}
    assert release["epsilon"] > 3 * release["per_run_epsilon"] * 0.99
    assert "interactive map" in (out / "report.html").read_text()   # --map: the map's values in the page
    code, res = _verify(out / "certificate.json", capsys, "--strict")
    assert code == 0, res
    # the GeoJSON restated at the chosen run's epsilon (what verify rebuilt before): refused
    for f in geo["features"]:
        f["properties"]["epsilon"] = release["per_run_epsilon"]
    (out / "excursion.geojson").write_text(json.dumps(geo) + "\n")
    doc = json.loads((out / "certificate.json").read_text())
    doc["sha256"]["excursion.geojson"] = hashlib.sha256((out / "excursion.geojson").read_bytes()).hexdigest()
    (out / "certificate.json").write_text(json.dumps(doc, indent=2) + "\n")
    code, res = _verify(out / "certificate.json", capsys)
    assert code == 1 and "excursion.geojson" in json.dumps(res), res


def test_a_tuned_dry_run_with_map_prints_its_forecast(tmp_path, capsys):
    code = main(["release", "--mechanism", "posterior-sample-tuned", "--lengthscales", "10", "20", "40", "--epsilon",
                 "5", "--dry-run", "--map", "--ledger", str(tmp_path / "l.sqlite"), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    assert doc["dry_run"] is True and doc["a_real_run_would"].startswith("be "), doc


NOTE = "hold none of your records"


def test_records_that_leave_cells_empty_get_a_note_of_their_own_and_nothing_is_published(tmp_path, capsys):
    """Audit 18c: the forecast simulates records spread over the box; the embedded sales leave a quarter of the 8 x 5
    cells empty, where the map is noise, and 20 releases overlapped the non-private map by IoU 0.51 where the forecast
    said 0.68 (docs/runs/forecast-calibration). The data holder is told (stderr), before a dry run's verdict and
    after a release's charge; no published file says it (the count of empty cells is private)."""
    ledger = str(tmp_path / "l.sqlite")
    assert main(["release", "--dry-run", "--ledger", ledger]) == 0
    err = capsys.readouterr().err
    assert err.count(NOTE) == 1 and "10 of the map's 40 cells (8 x 5)" in err and "(25%;" in err, err
    out = tmp_path / "out"
    assert main(["release", "--seed", "1", "--out", str(out), "--ledger", ledger]) == 0
    assert capsys.readouterr().err.count(NOTE) == 1
    for f in out.iterdir():
        assert NOTE not in f.read_bytes().decode("utf-8", "replace") and "(25%;" not in f.read_bytes().decode(
            "utf-8", "replace"), f.name
    # a refusal stays one line
    assert main(["release", "--epsilon", "0.5", "--out", str(tmp_path / "o2"), "--ledger", ledger]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("privgp: error:"), err


def test_records_spread_over_the_box_get_no_note(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 600
    X = rng.uniform(0.0, 1.0, (n, 2))
    pd.DataFrame({"x": X[:, 0], "y": X[:, 1], "z": np.sin(3 * X[:, 0]) + rng.normal(0, 0.3, n)}).to_csv(
        tmp_path / "d.csv", index=False)
    assert main(["release", "--data", str(tmp_path / "d.csv"), "--x-col", "x", "--y-col", "y", "--response-col", "z",
                 "--box", "0", "1", "0", "1", "--threshold", "0", "--clip", "2", "--dry-run", "--ledger",
                 str(tmp_path / "l.sqlite")]) == 0
    assert NOTE not in capsys.readouterr().err


def test_the_forecasts_reference_map_of_a_very_elongated_box_stays_small():
    """Red team 18g: a box of aspect 1e12 (0 1e6 x 0 1e-6) asked the non-private reference map for 6e6 cells along
    it: a 121 x 6e6 smoothing matrix, 23 GB, before any charge (a MemoryError traceback under a memory limit)."""
    import tracemalloc

    from privgp.models.domain import Box
    from privgp.tasks.forecast import REFERENCE_CELLS_PER_POINT, nonprivate_map

    box = Box((0.0, 0.0), (1e6, 1e-6))
    axes = (np.linspace(0.0, 1e6, 121), np.linspace(0.0, 1e-6, 3))
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 1e6, 300), rng.uniform(0, 1e-6, 300)])
    tracemalloc.start()
    try:
        ref = nonprivate_map(box, axes, X, rng.uniform(-1, 1, 300))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ref.shape == (121, 3) and np.all(np.isfinite(ref))
    assert peak < 50e6 and REFERENCE_CELLS_PER_POINT * 121 < 1e4   # MB, not the 23 GB of 121 x 6e6 doubles


def test_the_tightness_audit_says_an_inf_over_inf_ratio_is_undefined(capsys):
    """Red team 18g: at an order past the lemmas' range both divergences are inf and the ratio printed "nan"."""
    assert main(["audit", "tightness", "--r", "1", "--sigma", "10", "--alpha", "1e300"]) == 0
    out = capsys.readouterr().out
    assert "found / certified                  undefined (both are inf at this order)" in out and "nan" not in out
