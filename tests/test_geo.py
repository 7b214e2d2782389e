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
    xs, ys, values = paths["axis_x_m"], paths["axis_y_m"], paths["paths"][0]   # metres, not named lon, lat
    assert "axis_lon" not in paths and list(paths["coordinates"]) == ["x_m", "y_m"]
    with rasterio.open(out / "field.tif") as src:
        assert src.crs is not None and src.crs.to_dict().get("proj") == "aeqd"
        # the path in model units, then in the response's units
        assert src.count == 2 and src.width == xs.size and src.height == ys.size and math.isnan(src.nodata)
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
    import shutil

    def forged(edit, name):
        f = tmp_path / f"forged_{name}"
        shutil.copytree(out, f)
        edit(f)
        return _rehash_and_verify(f, capsys)

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
                              (no_projection, "noproj", "paths.npz")):   # its axes are x_m, y_m, not lon, lat
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
    result = privgp.release(plan, data, budget)
    files = write_release(result, tmp_path / "geo")
    assert {"field.tif", "excursion.geojson"} <= set(files)
    with pytest.raises(InvalidParameterError, match="coordinates"):
        project_records(privgp.records([[0.0, 0.0], [1.0, 1.0]], [1.0, 2.0]), BOX, "EPSG:4326")
    # without a CRS: plain coordinates, no GIS files; the writers refuse them (walk-through 16: verify refused
    # the files they wrote), before writing anything
    plain = privgp.plan_posterior_sample(raw.n, BOX, privgp.ResponseMap(0.0, 40.0), target_epsilon=5.0, grid=21)
    res = privgp.release(plain, raw, budget)
    assert "field.tif" not in write_release(res, tmp_path / "plain")
    for write, name in ((write_geotiff, "plain.tif"), (write_geojson, "plain.geojson")):
        with pytest.raises(InvalidParameterError, match="projected from a CRS"):
            write(res, tmp_path / name)
        assert not (tmp_path / name).exists()
    with pytest.raises(InvalidParameterError, match=r"path must be the path of a file to write \(e.g. .*field.tif"):
        write_geotiff(result, tmp_path)


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


def _rehash_and_verify(folder, capsys):
    import hashlib

    doc = json.loads((folder / "certificate.json").read_text())
    for k in doc["sha256"]:
        doc["sha256"][k] = hashlib.sha256((folder / k).read_bytes()).hexdigest()
    (folder / "certificate.json").write_text(json.dumps(doc))
    capsys.readouterr()
    code = main(["verify", str(folder / "certificate.json"), "--json"])
    return code, json.loads(capsys.readouterr().out)


def rows_cols(src, table):
    from rasterio.transform import rowcol

    return tuple(np.asarray(a) for a in rowcol(src.transform, table["x_m"].to_numpy(), table["y_m"].to_numpy()))


def test_outputs_of_a_crs_release_say_their_numbers_are_projected_metres(tmp_path, capsys):
    """A --crs EPSG:4326 release wrote the projected metres under the input's names (field.csv's lon, lat columns
    held -10438.85...), drew them on axes labelled lon/lat, and its GeoTIFF held model units only. Now: x_m, y_m
    (metres) with lon, lat beside them (the inverse projection), axes in metres, and a band in the response's
    units equal to field.csv's."""
    import shutil

    from privgp.cli import release_publish
    from privgp.cli.verify_report import public_data

    rng = np.random.default_rng(3)
    n = 2000
    lon, lat = rng.uniform(-0.25, 0.05, n), rng.uniform(51.40, 51.60, n)
    no2 = 30 + 25 * np.exp(-((lon + 0.1) ** 2 / 0.005 + (lat - 51.5) ** 2 / 0.002)) + rng.normal(0, 3, n)
    pd.DataFrame({"lon": lon, "lat": lat, "no2": no2}).to_csv(tmp_path / "s.csv", index=False)
    out = tmp_path / "out"
    assert main(["release", "--data", str(tmp_path / "s.csv"), "--x-col", "lon", "--y-col", "lat", "--response-col",
                 "no2", "--box", "-0.25", "0.05", "51.40", "51.60", "--crs", "EPSG:4326", "--threshold", "40",
                 "--clip", "20", "--epsilon", "2", "--out", str(out), "--ledger", str(tmp_path / "l.sqlite")]) == 0
    capsys.readouterr()
    table = pd.read_csv(out / "field.csv")
    assert list(table.columns[:4]) == ["x_m", "y_m", "lon", "lat"]
    assert abs(table["x_m"]).max() > 1000            # metres
    # degrees (the metric box holds the whole lon/lat box, so its corners reach a little beyond it)
    assert table["lon"].between(-0.26, 0.06).all() and table["lat"].between(51.39, 51.61).all()
    cert = json.loads((out / "certificate.json").read_text())
    proj = LocalProjection.from_dict(cert["dataset"]["projection"])
    np.testing.assert_allclose(proj.forward(table[["lon", "lat"]].to_numpy()), table[["x_m", "y_m"]].to_numpy(),
                               rtol=0, atol=1e-3)
    npz = np.load(out / "field.npz")
    assert "axis_x_m" in npz and "axis_lon" not in npz
    with rasterio.open(out / "field.tif") as src:
        # field and sd in model units, the field in response units, the reliable mask (field.csv's reliable column)
        assert src.count == 4 and "model units" in src.descriptions[0] and "model units" in src.descriptions[1]
        assert "reliable" in src.descriptions[3]
        np.testing.assert_array_equal(src.read(4)[rows_cols(src, table)], table["reliable"].to_numpy(dtype=float))
        assert "no2" in src.descriptions[2] and "response units" in src.descriptions[2]
        assert src.tags(3)["units"].startswith("no2") and "model units" in src.tags(1)["units"]
        assert src.tags()["response"] == "no2" and float(src.tags()["threshold"]) == 40.0
        # at every grid point, the response-units band is field.csv's field_response_units
        from rasterio.transform import rowcol

        rows, cols = (np.asarray(a) for a in rowcol(src.transform, table["x_m"].to_numpy(), table["y_m"].to_numpy()))
        band = src.read(3)[rows, cols]
        np.testing.assert_allclose(band, table["field_response_units"], rtol=1e-6)
        np.testing.assert_allclose(src.read(1)[rows, cols], table["field_model_units"],
                                   rtol=1e-5, atol=1e-6)
    # the picture's axes say metres of the local projection; its legend the domain's unit
    data = public_data(cert)
    labels = release_publish.axis_labels(data)
    assert labels[0].startswith("x_m (metres") and labels[1].startswith("y_m (metres") and "lat 51.5" in labels[0]
    assert main(["verify", str(out / "certificate.json"), "--strict"]) == 0
    capsys.readouterr()

    # edited files fail (rehashed): a lon column put back in degrees' place, a response band changed
    def edited(name, edit):
        f = tmp_path / name
        shutil.copytree(out, f)
        edit(f)
        return _rehash_and_verify(f, capsys)

    def relabel_csv(f):
        text = (f / "field.csv").read_text()
        (f / "field.csv").write_text(text.replace("x_m,y_m,lon,lat,", "lon,lat,x_m,y_m,", 1))

    def response_band(f):
        with rasterio.open(f / "field.tif", "r+") as dst:
            dst.write(dst.read(3) + np.float32(1.0), 3)

    def band_units(f):
        with rasterio.open(f / "field.tif", "r+") as dst:
            dst.update_tags(3, units="ppb")

    def old_names(f):   # the files of an earlier privgp: the projected axes named lon, lat
        z = dict(np.load(f / "field.npz"))
        z["axis_lon"], z["axis_lat"] = z.pop("axis_x_m"), z.pop("axis_y_m")
        np.savez(f / "field.npz", **z)

    # what GIS software applies or shows beyond the full-resolution pixels (red-team round 9, F1)
    def scale_offset(f):
        with rasterio.open(f / "field.tif", "r+") as dst:
            dst.scales, dst.offsets = (2.0,) * dst.count, (0.5,) * dst.count

    def overview(f):   # another map at lower zoom
        with rasterio.open(f / "field.tif", "r+") as dst:
            dst.build_overviews([2])

    def hidden_tags(f):
        with rasterio.open(f / "field.tif", "r+") as dst:
            dst.update_tags(ns="PRIVATE", secret="12.5,51.48")

    def trailing(f):
        with open(f / "field.tif", "ab") as fh:
            fh.write(b"secret rows")

    for name, edit, field in (("csv", relabel_csv, "field.csv"), ("band", response_band, "field.tif"),
                              ("units", band_units, "field.tif"), ("old", old_names, "field.npz"),
                              ("scale", scale_offset, "field.tif"), ("overview", overview, "field.tif"),
                              ("tags", hidden_tags, "field.tif")):
        code, res = edited(name, edit)
        assert code == 1 and res["field"] == field, (name, res)
        if name == "old":
            assert "earlier privgp" in json.dumps(res)
    # bytes GDAL never reads: the same map, but not the file privgp writes: checked in part (--strict fails)
    code, res = edited("trailing", trailing)
    assert not (code == 0 and res["verified"] and not res["notes"]), res


def test_outputs_without_a_crs_keep_the_input_names(tmp_path, capsys):
    """Without --crs nothing changes: the coordinates keep the input's names and no column is added."""
    from privgp.cli import release_publish
    from privgp.cli.verify_report import public_data

    rng = np.random.default_rng(4)
    x, y = rng.uniform(0, 1, 300), rng.uniform(0, 1, 300)
    pd.DataFrame({"east": x, "north": y, "z": np.sin(5 * x) + y}).to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "out"
    assert main(["release", "--data", str(tmp_path / "d.csv"), "--x-col", "east", "--y-col", "north",
                 "--response-col", "z", "--box", "0", "1", "0", "1", "--threshold", "0.5", "--clip", "2",
                 "--epsilon", "2", "--allow-noisy", "--out", str(out), "--ledger", str(tmp_path / "l.sqlite")]) == 0
    capsys.readouterr()
    head = (out / "field.csv").read_text().splitlines()[0]
    assert head == "east,north,field_model_units,field_response_units,sd_model_units,reliable"
    assert {"axis_east", "axis_north"} <= set(np.load(out / "field.npz").files)
    cert = json.loads((out / "certificate.json").read_text())
    assert release_publish.axis_labels(public_data(cert)) == ("east", "north")
    assert main(["verify", str(out / "certificate.json"), "--strict"]) == 0
    capsys.readouterr()


def test_a_gdal_sidecar_beside_the_geotiff_fails(tmp_path, capsys):
    """field.tif.aux.xml (or .ovr, .msk) beside a verified --crs release: GIS software applies its scales, nodata and
    metadata to the map, and no certificate covers it (red-team round 10)."""
    rng = np.random.default_rng(3)
    n = 800
    lon, lat = rng.uniform(-0.25, 0.05, n), rng.uniform(51.40, 51.60, n)
    pd.DataFrame({"lon": lon, "lat": lat, "v": 30 + 20 * (lon > -0.1) + rng.normal(0, 3, n)}).to_csv(
        tmp_path / "s.csv", index=False)
    out = tmp_path / "out"
    assert main(["release", "--data", str(tmp_path / "s.csv"), "--x-col", "lon", "--y-col", "lat", "--response-col",
                 "v", "--box", "-0.25", "0.05", "51.40", "51.60", "--crs", "EPSG:4326", "--threshold", "40", "--clip",
                 "20", "--epsilon", "5", "--allow-noisy", "--seed", "1", "--ledger", str(tmp_path / "l.sqlite"),
                 "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    (out / "field.tif.aux.xml").write_text('<PAMDataset><PAMRasterBand band="1"><Scale>2</Scale></PAMRasterBand>'
                                           "</PAMDataset>")
    assert main(["verify", str(out / "certificate.json"), "--json"]) == 1
    res = json.loads(capsys.readouterr().out)
    assert res["field"] == "field.tif.aux.xml", res
    # red team 24: GDAL finds sidecars in any letter case (field.tif.OVR overviews, .MSK masks passed) and by the
    # stem too (field.aux, world files, field_rpc.txt): each is refused alone, and the release verifies without them
    (out / "field.tif.aux.xml").unlink()
    for name in ("field.tif.OVR", "field.tif.MSK", "FIELD.TIF.ovr", "field.aux", "field.TFW", "field_rpc.txt"):
        (out / name).write_bytes(b"x")
        assert main(["verify", str(out / "certificate.json"), "--json"]) == 1
        res = json.loads(capsys.readouterr().out)
        assert res["field"] == name and "find these names in any letter case" in res["reason"], res
        (out / name).unlink()
    assert main(["verify", str(out / "certificate.json"), "--strict"]) == 0


def test_a_crs_is_taken_by_its_authority_code_only(tmp_path, capsys):
    """Red team round 17: --crs "+proj=longlat ... +title=<records>" put 30 private records into the certificate's
    dataset.projection.input_crs, and verify --strict passed. A CRS is an authority and a code (EPSG:4326), refused
    otherwise before anything is read or charged."""
    import privgp
    from privgp.cli.main import main
    from privgp.geo import project_records

    for crs in ("+proj=longlat +datum=WGS84 +no_defs +title=secret", "EPSG:4326 secret", "EPSG:"):
        with pytest.raises(InvalidParameterError, match="authority and code"):
            LocalProjection.for_box(crs, BOX)
    assert LocalProjection.for_box("EPSG:4326", BOX).source == "EPSG:4326"
    raw = privgp.records(np.column_stack([np.full(3, -76.6), np.full(3, 39.3)]), [1.0, 2.0, 3.0])
    with pytest.raises(InvalidParameterError, match="authority and code"):
        project_records(raw, BOX, "+proj=longlat +datum=WGS84 +title=x")
    code = main(["release", "--crs", "+proj=longlat +datum=WGS84 +title=x", "--ledger", str(tmp_path / "l.sqlite"),
                 "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and not (tmp_path / "o").exists() and not (tmp_path / "l.sqlite").exists()
