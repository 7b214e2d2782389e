"""Red team (GIS path of ``privgp release --crs``): CRSs that are neither geographic nor projected, CRSs of another
body, and boxes whose grid reaches a pole or longitude 180 are refused before anything is read twice, charged or
written."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyproj")
pytest.importorskip("rasterio")
shapely_geometry = pytest.importorskip("shapely.geometry")

import privgp  # noqa: E402
from privgp.cli.main import main  # noqa: E402
from privgp.errors import InvalidParameterError  # noqa: E402
from privgp.geo import LocalProjection, project_records  # noqa: E402
from privgp.models.domain import Box  # noqa: E402

BOX = Box((-0.25, 51.40), (0.05, 51.60))


def _csv(tmp_path, lo, hi, n=400, seed=0):
    rng = np.random.default_rng(seed)
    lon, lat = rng.uniform(lo[0], hi[0], n), rng.uniform(lo[1], hi[1], n)
    pd.DataFrame({"lon": lon, "lat": lat, "z": lon + lat}).to_csv(tmp_path / "d.csv", index=False)
    return tmp_path / "d.csv"


def _release(tmp_path, box, crs, threshold):
    return ["release", "--data", str(tmp_path / "d.csv"), "--x-col", "lon", "--y-col", "lat", "--response-col", "z",
            "--box", *(str(v) for v in (box.lower[0], box.upper[0], box.lower[1], box.upper[1])), "--crs", crs,
            "--threshold", str(threshold), "--clip", "5", "--epsilon", "3", "--allow-noisy",
            "--out", str(tmp_path / "o"), "--ledger", str(tmp_path / "l.sqlite")]


@pytest.mark.parametrize("crs, kind", [("EPSG:4978", "Geocentric"), ("EPSG:5714", "Vertical")])
def test_a_crs_neither_geographic_nor_projected_is_refused(crs, kind):
    """EPSG:4978 (geocentric) and EPSG:5714 (heights) were taken as projected CRSs: the GeoJSON's polygons lay at
    latitude 90 (invalid), the GeoTIFF had no CRS, and verify passed them."""
    with pytest.raises(InvalidParameterError, match=f"geographic or projected CRS.*{kind}"):
        LocalProjection.for_box(crs, BOX)


@pytest.mark.parametrize("crs", ["IAU_2015:30100", "IAU_2015:30110"])
def test_a_crs_of_another_body_fails_before_the_charge(tmp_path, capsys, crs):
    """IAU_2015:30110 (a projected CRS of the Moon) was charged, then the GeoJSON writer raised pyproj's ProjError
    (a traceback, exit 1, nothing written, the budget spent); IAU_2015:30100 gave a traceback before the charge."""
    with pytest.raises(InvalidParameterError, match="CRS of the Earth"):
        LocalProjection.for_box(crs, BOX)
    _csv(tmp_path, BOX.lower, BOX.upper)
    code = main(_release(tmp_path, BOX, crs, 51))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--crs must be a CRS of the Earth" in err, err
    assert not (tmp_path / "o").exists() and not (tmp_path / "l.sqlite").exists()


@pytest.mark.parametrize("crs, lower, upper", [
    ("EPSG:4326", (-180.0, 60.0), (180.0, 90.0)),        # around the north pole
    ("EPSG:4326", (170.0, -10.0), (180.0, 10.0)),        # up to longitude 180: the grid reaches past it
    ("EPSG:4326", (-180.0, -90.0), (180.0, 90.0)),       # the whole world
    ("EPSG:3413", (-1e6, -1e6), (1e6, 1e6)),             # a polar stereographic box around the pole
    ("EPSG:3832", (2.5e6, -1e6), (3.8e6, 1e6)),          # a Pacific Mercator box across longitude 180
])
def test_a_box_whose_grid_reaches_a_pole_or_the_antimeridian_is_refused(lower, upper, crs):
    """The GeoJSON's polygons are written point by point in longitude/latitude: around a pole or across longitude
    180 they came out invalid (shapely is_valid False), spanning the globe, and verify passed them."""
    box = Box(lower, upper)
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(lower[0], upper[0], 20), rng.uniform(lower[1], upper[1], 20)])
    with pytest.raises(InvalidParameterError, match="clear of the poles and of longitude"):
        project_records(privgp.records(X, X[:, 0]), box, crs)


def test_a_box_near_the_antimeridian_and_clear_of_it_writes_valid_polygons(tmp_path, capsys):
    box = Box((170.0, -10.0), (179.5, 10.0))
    _csv(tmp_path, box.lower, box.upper, n=1500)
    assert main(_release(tmp_path, box, "EPSG:4326", 175)) == 0
    capsys.readouterr()
    doc = json.loads((tmp_path / "o" / "excursion.geojson").read_text())
    for feature in doc["features"]:
        geom = shapely_geometry.shape(feature["geometry"])
        assert geom.is_valid and (geom.is_empty or 160 < geom.bounds[0] and geom.bounds[2] < 180), geom.bounds
    # the same box up to 180 is refused before the charge, in one line
    code = main(_release(tmp_path, Box((170.0, -10.0), (180.0, 10.0)), "EPSG:4326", 175)[:-4] +
                ["--out", str(tmp_path / "o2"), "--ledger", str(tmp_path / "l2.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("privgp: error: --box must be a box whose map")
    assert not (tmp_path / "o2").exists() and not (tmp_path / "l2.sqlite").exists()


def test_a_one_dimensional_box_with_a_crs_is_shown_as_a_box(tmp_path, capsys):
    _csv(tmp_path, BOX.lower, BOX.upper)
    code = main(["release", "--data", str(tmp_path / "d.csv"), "--x-col", "lon", "--response-col", "z", "--box",
                 "-0.25", "0.05", "--crs", "EPSG:4326", "--threshold", "51", "--clip", "5", "--dry-run",
                 "--ledger", str(tmp_path / "l.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--y-col" in err and "got '[-0.25, 0.05]'" in err, err


@pytest.mark.parametrize("package", ["rasterio", "shapely", "contourpy"])
def test_a_missing_gis_writer_fails_before_the_charge(tmp_path, capsys, monkeypatch, package):
    """With pyproj but without rasterio (or shapely, contourpy), a --crs release was charged, then failed writing
    field.tif (exit 2 after the charge, nothing written, the budget spent)."""
    import sys

    _csv(tmp_path, BOX.lower, BOX.upper, n=1500)
    monkeypatch.setitem(sys.modules, package, None)   # import raises ImportError
    code = main(_release(tmp_path, BOX, "EPSG:4326", 51))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"needs the optional package '{package}'" in err, err
    assert not (tmp_path / "o").exists() and not (tmp_path / "l.sqlite").exists()


@pytest.mark.parametrize("crs, words", [("EPSG:4807", "grads from Paris"), ("EPSG:4901", "grads from Paris RGS")])
def test_a_geographic_crs_not_in_degrees_from_greenwich_is_refused(crs, words):
    """Red team 26: NTF (Paris), in grads from Paris, was read as degrees from Greenwich: the local projection's
    centre landed about 600 km from the box."""
    from privgp.geo import LocalProjection

    with pytest.raises(InvalidParameterError, match=rf"^crs must be a geographic CRS in degrees from Greenwich .*{words}"):
        LocalProjection.for_box(crs, Box((2.0, 54.0), (3.0, 55.0)))
    assert LocalProjection.for_box("EPSG:4275", Box((2.0, 48.0), (3.0, 49.0))).target.startswith("+proj=aeqd")
