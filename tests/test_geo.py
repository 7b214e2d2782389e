"""Maps that open in GIS (issue 27): longitude/latitude projected to a local metric CRS before any
kernel sees it (privgp.geo), and the GeoTIFF / GeoJSON outputs, opened with rasterio and shapely."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

pyproj = pytest.importorskip("pyproj")
rasterio = pytest.importorskip("rasterio")
shapely_geometry = pytest.importorskip("shapely.geometry")

from privgp.cli.main import main  # noqa: E402
from privgp.errors import InvalidParameterError  # noqa: E402
from privgp.geo import LocalProjection  # noqa: E402
from privgp.models.domain import Box  # noqa: E402

BOX = Box((-76.7, 39.25), (-76.5, 39.35))   # around Baltimore, longitude first


def test_a_geographic_crs_is_projected_to_metres_around_the_box():
    proj = LocalProjection.for_box("EPSG:4326", BOX)
    assert "+proj=aeqd" in proj.target and not proj.identity
    centre = np.array([[-76.6, 39.3]])
    np.testing.assert_allclose(proj.forward(centre), [[0.0, 0.0]], atol=1e-6)
    # 0.01 degree of latitude is about 1.11 km; of longitude, cos(39.3 deg) times that
    P = proj.forward([[-76.6, 39.31], [-76.59, 39.3]])
    assert P[0, 1] == pytest.approx(1110.0, rel=3e-3) and abs(P[0, 0]) < 1e-6
    assert P[1, 0] == pytest.approx(1113.2 * math.cos(math.radians(39.3)), rel=3e-3)
    pts = np.column_stack([np.random.default_rng(0).uniform(-76.7, -76.5, 200),
                           np.random.default_rng(1).uniform(39.25, 39.35, 200)])
    np.testing.assert_allclose(proj.inverse(proj.forward(pts)), pts, atol=1e-9)
    box_m = proj.project_box(BOX)
    assert np.all(box_m.contains(proj.forward(pts)))
    # a projected CRS is used as it is
    utm = LocalProjection.for_box("EPSG:32618", Box((350000.0, 4340000.0), (370000.0, 4360000.0)))
    assert utm.identity
    with pytest.raises(InvalidParameterError, match="crs"):
        LocalProjection.for_box("EPSG:not-a-code", BOX)
    with pytest.raises(InvalidParameterError, match="latitudes"):
        LocalProjection.for_box("EPSG:4326", Box((0.0, 80.0), (1.0, 95.0)))


def test_release_with_crs_writes_georeferenced_outputs(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 300
    lon, lat = rng.uniform(-76.7, -76.5, n), rng.uniform(39.25, 39.35, n)
    z = 50 + 30 * np.sin((lon + 76.6) * 40) * np.cos((lat - 39.3) * 60)
    pd.DataFrame({"lon": lon, "lat": lat, "z": z}).to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "out"
    assert main(["release", "--mechanism", "posterior-sample", "--allow-noisy", "--data", str(tmp_path / "d.csv"),
                 "--x-col", "lon", "--y-col", "lat", "--response-col", "z", "--box", "-76.7", "-76.5", "39.25",
                 "39.35", "--crs", "EPSG:4326", "--threshold", "50", "--clip", "40", "--lengthscale", "3000",
                 "--grid", "31", "--epsilon", "5", "--out", str(out), "--ledger", str(tmp_path / "l.sqlite")]) == 0
    capsys.readouterr()
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["dataset"]["projection"]["input_crs"] == "EPSG:4326"
    assert cert["public_settings"]["lengthscale"] == 3000.0   # metres
    paths = np.load(out / "paths.npz")
    xs, ys, values = paths["axis_lon"], paths["axis_lat"], paths["paths"][0]
    with rasterio.open(out / "field.tif") as src:
        assert src.crs is not None and src.crs.to_dict().get("proj") == "aeqd"
        assert src.count == 1 and src.width == xs.size and src.height == ys.size and math.isnan(src.nodata)
        band = src.read(1)
        # the centre of pixel (row 0, col 0) is the grid's north-west point; every value matches the release
        np.testing.assert_allclose(src.xy(0, 0), (xs[0], ys[-1]), rtol=0, atol=1e-6)
        np.testing.assert_allclose(src.xy(src.height - 1, src.width - 1), (xs[-1], ys[0]), rtol=0, atol=1e-6)
        np.testing.assert_allclose(band, values.T[::-1], rtol=1e-6, atol=1e-6)
    gj = json.loads((out / "excursion.geojson").read_text())
    assert gj["type"] == "FeatureCollection" and len(gj["features"]) == 1
    geom = shapely_geometry.shape(gj["features"][0]["geometry"])
    assert geom.is_valid and not geom.is_empty
    minx, miny, maxx, maxy = geom.bounds                      # longitude/latitude, inside the public box
    assert -76.71 <= minx and maxx <= -76.49 and 39.24 <= miny and maxy <= 39.36
    # the polygons cover about the share of the grid where the released path is above the threshold
    proj = LocalProjection.for_box("EPSG:4326", BOX)
    import shapely

    area = shapely.transform(geom, proj.forward).area
    total = (xs[-1] - xs[0]) * (ys[-1] - ys[0])
    assert area / total == pytest.approx(np.mean(values > 0), abs=0.1)
    assert main(["verify", str(out / "certificate.json"), "--strict"]) == 0   # the GIS files are hashed and checked
    capsys.readouterr()
    # forged GIS files (rehashed): another epsilon stated in the GeoJSON, another map in the GeoTIFF; GIS files
    # hashed by a certificate that records no projection
    import hashlib
    import shutil

    def forged(edit, name):
        f = tmp_path / f"forged_{name}"
        shutil.copytree(out, f)
        edit(f)
        doc = json.loads((f / "certificate.json").read_text())
        for k in doc["sha256"]:
            doc["sha256"][k] = hashlib.sha256((f / k).read_bytes()).hexdigest()
        (f / "certificate.json").write_text(json.dumps(doc))
        capsys.readouterr()
        code = main(["verify", str(f / "certificate.json"), "--json"])
        return code, json.loads(capsys.readouterr().out)

    def geojson_epsilon(f):
        g = json.loads((f / "excursion.geojson").read_text())
        g["features"][0]["properties"]["epsilon"] = 0.1
        (f / "excursion.geojson").write_text(json.dumps(g))

    def tif_band(f):
        with rasterio.open(f / "field.tif", "r+") as dst:
            dst.write(np.full((dst.height, dst.width), 0.777, np.float32), 1)

    def no_projection(f):
        doc = json.loads((f / "certificate.json").read_text())
        doc["dataset"].pop("projection")
        (f / "certificate.json").write_text(json.dumps(doc))

    for edit, name, field in ((geojson_epsilon, "geojson", "excursion.geojson"), (tif_band, "tif", "field.tif"),
                              (no_projection, "noproj", "sha256.field.tif")):
        code, res = forged(edit, name)
        assert code == 1 and res["field"] == field, (name, res)


def test_python_release_in_a_crs_and_without_one(tmp_path):
    import privgp
    from privgp.geo import project_records
    from privgp.publish import write_geojson, write_geotiff, write_release

    rng = np.random.default_rng(2)
    lon, lat = rng.uniform(-76.7, -76.5, 200), rng.uniform(39.25, 39.35, 200)
    raw = privgp.records(np.column_stack([lon, lat]), 40 * np.sin((lon + 76.6) * 50))
    data, box_m, proj = project_records(raw, BOX, "EPSG:4326")
    assert data.content_digest == raw.content_digest          # the ledger still knows the records
    plan = privgp.plan_posterior_sample(data.n, box_m, privgp.ResponseMap(0.0, 40.0), target_epsilon=5.0,
                                        lengthscale=2000.0, grid=21)
    budget = privgp.Budget(tmp_path / "l.sqlite")
    files = write_release(privgp.release(plan, data, budget), tmp_path / "geo")
    assert {"field.tif", "excursion.geojson"} <= set(files)
    with pytest.raises(InvalidParameterError, match="coordinates"):
        project_records(privgp.records([[0.0, 0.0], [1.0, 1.0]], [1.0, 2.0]), BOX, "EPSG:4326")
    # without a CRS: plain coordinates, no GIS files by default, the writers still work on request
    plain = privgp.plan_posterior_sample(raw.n, BOX, privgp.ResponseMap(0.0, 40.0), target_epsilon=5.0, grid=21)
    res = privgp.release(plain, raw, budget)
    assert "field.tif" not in write_release(res, tmp_path / "plain")
    with rasterio.open(write_geotiff(res, tmp_path / "plain.tif")) as src:
        assert src.crs is None and src.width == 21
    assert "no CRS" in json.loads(write_geojson(res, tmp_path / "plain.geojson").read_text())["note"]


def test_a_tuned_release_in_a_crs_that_selects_nothing_writes_no_gis_files(tmp_path, capsys):
    """The private selection's validation points, snapped in the projected CRS, lay a rounding outside the grid
    (a traceback in the forecast); a release without a map then failed after its charge writing the GIS files."""
    rng = np.random.default_rng(0)
    n = 400
    lon, lat, z = rng.uniform(-76.7, -76.5, n), rng.uniform(39.2, 39.35, n), rng.normal(size=n)
    pd.DataFrame({"lon": lon, "lat": lat, "z": z}).to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "out"
    assert main(["release", "--data", str(tmp_path / "d.csv"), "--x-col", "lon", "--y-col", "lat", "--response-col",
                 "z", "--box", "-76.7", "-76.5", "39.2", "39.35", "--crs", "EPSG:4326", "--threshold", "0", "--clip",
                 "1", "--mechanism", "posterior-sample-tuned", "--lengthscales", "2000", "5000", "--epsilon", "1",
                 "--allow-noisy", "--seed", "1", "--grid", "21", "--out", str(out),
                 "--ledger", str(tmp_path / "l.sqlite")]) == 0
    assert not json.loads((out / "selection.json").read_text())["selected"]
    assert not (out / "field.tif").exists() and not (out / "excursion.geojson").exists()
    assert main(["verify", str(out / "certificate.json"), "--strict"]) == 0
    capsys.readouterr()
