"""Writing a release's outputs from Python: the files ``privgp release`` writes, by the same code.

After ``result = privgp.release(plan, privgp.records(X, y), privgp.Budget(path, epsilon=...))``:

* :func:`write_release` (result, folder): everything ``privgp release --out FOLDER`` writes -- the
  mechanism's data files, the picture, ``report.html`` and ``certificate.json`` (which records
  the sha256 of every other file, for ``privgp verify``) -- into a new or empty folder, atomically,
  then marks the ledger entry completed;
* :func:`write_picture`, :func:`write_report`, :func:`write_certificate`, :func:`write_data`: one
  output each, to a path of your choice.

These functions post-process the released object (no privacy cost) and read nothing private but
n; the certificate and the report name the public settings, the ledger's totals and the keyed
fingerprint, never a local path or a statistic of the data. This module sits with the command
line in the output layer (the library below it writes no file); the command uses
:func:`write_outputs` for its own folder, so the two can never differ.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .cli.release import CERTIFICATE
from .cli.release_publish import REPORT
from .errors import InvalidParameterError
from .jsonable import to_jsonable
from .mechanisms.interface import RELIABLE_SD, reliable_mask  # noqa: F401 (re-exported)


def _parts(result: Any, mechanism: str | None = None) -> tuple[Any, Any, Any, Any]:
    """(mechanism, plan, released, data) of a :class:`~privgp.mechanisms.release.ReleaseResult`;
    ``mechanism``: the command's ``--mechanism`` name (default: the mechanism whose plan it is)."""
    from .mechanisms.interface import check_publishable, for_plan, get
    from .mechanisms.release import ReleaseResult

    if not isinstance(result, ReleaseResult):
        raise InvalidParameterError("result", "what privgp.release returned (a ReleaseResult)", type(result).__name__)
    if result.data is None:
        raise InvalidParameterError("result", "a ReleaseResult that carries its records (from privgp.release)",
                                    "no records")
    mech = for_plan(result.plan) if mechanism is None else get(mechanism, "mechanism").resolve(result.plan)
    check_publishable(for_plan(result.plan), result.plan)   # review 20c B5: a result made without privgp.release
    check_publishable(mech)                    # and a mechanism named for it
    return mech, result.plan, result.released, result.data


def _randomness(result: Any) -> dict:
    from .mechanisms.release import FRESH_ENTROPY

    return dict(result.randomness or FRESH_ENTROPY)


def picture_name(result: Any, *, mechanism: str | None = None) -> str:
    """The file name the command gives this release's picture (e.g. ``excursion.png``)."""
    return str(_parts(result, mechanism)[0].picture)


def write_data(result: Any, folder: str | os.PathLike[str], *, mechanism: str | None = None) -> list[str]:
    """The mechanism's data files (e.g. ``paths.npz`` and ``paths.csv``) in ``folder``; their names."""
    mech, plan, released, data = _parts(result, mechanism)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = data_files(mech, released, plan, list(data.coordinates), getattr(data, "projection", None))
    for f in files:
        _write_file(folder, f)
    return [f.name for f in files]


def data_files(mech: Any, released: Any, plan: Any, coordinates: list[str], projection: Any = None) -> list[Any]:
    """The contents of the mechanism's data files as privgp writes them (``privgp verify`` compares with these):
    ``coordinates``, the input's coordinate names; ``projection``, the recorded projection from a CRS (None: the
    mechanism's own files, unchanged). Records projected to the local metric CRS: the projected coordinates are
    called ``x_m``, ``y_m`` (metres; also the .npz's axis names) and every CSV that starts with them gets the input
    coordinates next to them (the inverse projection, named as in the input)."""
    from .geo import _projected, file_coordinates

    files = mech.files(released, plan, list(file_coordinates(coordinates, projection)))
    proj = _projected(projection)
    return files if proj is None else [_with_input_coordinates(f, proj, coordinates) for f in files]


def _with_input_coordinates(f: Any, proj: Any, coordinates: list[str]) -> Any:
    """A CSV whose first columns are x_m, y_m with the input coordinates inserted after them."""
    from .geo import METRIC_COORDINATES, input_coordinate_names
    from .mechanisms.interface import CsvFile

    k = len(METRIC_COORDINATES)
    if not isinstance(f, CsvFile) or tuple(f.header[:k]) != METRIC_COORDINATES:
        return f
    cols = np.asarray(f.columns, dtype=float).reshape(len(f.columns), -1)
    names = input_coordinate_names(coordinates, f.header)
    return CsvFile(f.name, [*f.header[:k], *names, *f.header[k:]],
                   np.column_stack([cols[:, :k], proj.inverse(cols[:, :k]), cols[:, k:]]))


def csv_text(f: Any) -> str:
    """The text privgp writes for a :class:`~privgp.mechanisms.interface.CsvFile`: its header, then its numbers to 10
    significant digits (``privgp verify`` compares a released CSV with it character for character)."""
    import csv
    import io

    head = io.StringIO()   # RFC 4180: a name holding a comma or a quote is quoted (it shifted every column's label)
    csv.writer(head, lineterminator="").writerow(f.header)
    out = io.StringIO()
    np.savetxt(out, np.asarray(f.columns, dtype=float), delimiter=",", header=head.getvalue(), comments="",
               fmt="%.10g")
    return out.getvalue()


def _write_file(folder: Path, f: Any) -> None:
    """One data file a mechanism describes (:class:`~privgp.mechanisms.interface.NpzFile`, ``CsvFile``, ``JsonFile``)."""
    from .mechanisms.interface import CsvFile, JsonFile, NpzFile

    if isinstance(f, NpzFile):
        np.savez(folder / f.name, **f.arrays)
    elif isinstance(f, CsvFile):
        (folder / f.name).write_text(csv_text(f), encoding="utf-8")
    elif isinstance(f, JsonFile):
        (folder / f.name).write_text(json.dumps(to_jsonable(f.content), indent=2) + "\n")
    else:
        raise TypeError(f"not an output file: {f!r}")


def _file(path: str | os.PathLike[str], example: str) -> Path:
    """``path`` as a file's path, or InvalidParameterError for a folder (the data writer takes the folder)."""
    path = Path(path)
    if path.is_dir():
        raise InvalidParameterError("path", f"the path of a file to write (e.g. {path / example}), not a folder",
                                    str(path))
    return path


def write_picture(result: Any, path: str | os.PathLike[str], *, mechanism: str | None = None,
                  forecast: Any = None) -> Path:
    """The release's picture (PNG: the released map with its uncertainty, the guarantee in the caption;
    ``forecast``: the release's forecast, whose "mostly noise" warning the title then states)."""
    path = _file(path, picture_name(result, mechanism=mechanism))
    path.write_bytes(_picture(result, mechanism, forecast).png)
    return path


def _picture(result: Any, mechanism: str | None, forecast: Any = None) -> Any:
    from .cli import release_publish

    mech, plan, released, data = _parts(result, mechanism)
    return release_publish.picture(mech, released, plan, data, forecast)


def write_report(result: Any, path: str | os.PathLike[str], *, files: tuple[str, ...] | list[str] = (),
                 forecast: Any = None, mechanism: str | None = None, picture: Any = None,
                 interactive_map: bool = False) -> Path:
    """report.html: a self-contained page for publication (what was released, from how many records,
    what the guarantee means, the settings, the ledger's totals, how to verify). ``files``: the names of every
    file published with it, in :func:`write_outputs`' order (the data files, the GIS files, the picture,
    certificate.json and report.html itself), as the page lists them and ``privgp verify`` redoes it; ``forecast``: the utility forecast, if computed
    (:func:`privgp.tasks.forecast.forecast`); ``picture``: this release's picture when already drawn
    (drawn here otherwise); ``interactive_map``: add the map to explore in the page (2-D releases:
    pan, zoom, the value under the pointer; one inline script, no network; :mod:`privgp.cli.release_map`)."""
    from .cli import release_publish

    path = _file(path, REPORT)
    mech, plan, released, data = _parts(result, mechanism)
    pic = _picture(result, mechanism, forecast) if picture is None else picture
    field = mech.fields(released, plan) if interactive_map else None
    path.write_text(release_publish.report(mech, plan, data, pic, result.charge, result.fingerprint,
                                           _randomness(result), list(files), forecast=forecast, map_field=field),
                    encoding="utf-8")
    return path


def certificate_document(result: Any, *, files: tuple[str, ...] | list[str] = (),
                         folder: str | os.PathLike[str] | None = None, forecast: Any = None,
                         mechanism: str | None = None) -> dict:
    """certificate.json's content (public quantities only). With ``folder``, the sha256 of each of
    ``files`` found there is recorded, so that ``privgp verify`` detects a swapped output."""
    from .cli.release import certificate_doc

    mech, plan, _, data = _parts(result, mechanism)
    doc = certificate_doc(mech.name, plan, data, result.fingerprint, result.charge, _randomness(result),
                          list(files), folder=None if folder is None else Path(folder), forecast_=forecast)
    projection = getattr(data, "projection", None)
    if projection is not None:  # the public map from the input CRS to the coordinates the kernels saw
        doc["dataset"]["projection"] = projection
    return to_jsonable(doc)


def write_certificate(result: Any, path: str | os.PathLike[str], *, files: tuple[str, ...] | list[str] = (),
                      forecast: Any = None, mechanism: str | None = None) -> Path:
    """certificate.json (checked by ``privgp verify``): the certificate, the public settings, the
    ledger charge; the sha256 of each of ``files`` lying next to ``path``."""
    path = _file(path, CERTIFICATE)
    doc = certificate_document(result, files=files, folder=path.parent, forecast=forecast, mechanism=mechanism)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def _projection(result: Any) -> Any:
    from .geo import LocalProjection

    p = getattr(result.data, "projection", None)
    return None if p is None else LocalProjection.from_dict(p)


def _projected(result: Any) -> Any:
    """The release's projection, or InvalidParameterError: GIS files are written for projected records only."""
    proj = _projection(result)
    if proj is None:
        raise InvalidParameterError("result", "a release of records projected from a CRS (privgp.geo.project_records "
                                    "or privgp release --crs) for a GIS file: privgp writes and verifies GIS files "
                                    "only for those", "records in planar coordinates")
    return proj


def _field(result: Any, mechanism: str | None) -> Any:
    mech, plan, released, _ = _parts(result, mechanism)
    field = mech.fields(released, plan)
    if field is None:
        raise InvalidParameterError("result", "a release that holds a map", "no map was released")
    if len(field.axes) != 2:
        raise InvalidParameterError("result", "a 2-D map for a GIS output", f"{len(field.axes)}-D")
    return field


#: the layout of the GIS files privgp writes; ``privgp verify`` rebuilds each of :data:`GIS_FORMATS` (an earlier one
#: only to verify an earlier release, checked in part): 1, the map alone (privgp before 2026-11-26); 2, with the
#: picture's reliability marks (the GeoJSON's polygons split by a ``reliable`` property, a reliable band in the
#: GeoTIFF) and the forecast's mostly-noise flag and a note in both
GIS_FORMAT = 2
GIS_FORMATS = (1, 2)


def gis_note(field: Any, forecast: Any = None, *, coordinates: str = "") -> tuple[bool | None, str]:
    """(mostly_noise, note) the GIS files state (format 2): the forecast's mostly-noise flag (None: no forecast, so
    the files cannot say) and a note on what of the map can be read as a finding (public words only)."""
    noisy = None if forecast is None else bool(forecast.noisy)
    words = [coordinates] if coordinates else []
    if field.sd is not None:
        words.append(f"Areas marked reliable = false (0 in field.tif's reliable band) are where the released map is "
                     f"within {RELIABLE_SD:g} released sd of the threshold (hatched as unreliable in the picture, "
                     "reliable = 0 in field.csv): there the release cannot tell on which side of the threshold the "
                     "response lies; do not read them as findings.")
    else:
        words.append("The release states no uncertainty, so no area is marked reliable or unreliable"
                     + (f": {field.caveat.rstrip('.')}." if field.caveat else "."))
    if noisy:
        words.append(forecast.noisy_note(short=True) + "; do not read its boundaries as findings.")
    elif noisy is None:
        words.append("No forecast was recorded with this release, so these files do not say whether it is mostly "
                     "noise.")
    return noisy, " ".join(words)


def write_geotiff(result: Any, path: str | os.PathLike[str], *, mechanism: str | None = None, forecast: Any = None,
                  gis_format: int = GIS_FORMAT) -> Path:
    """The released map(s) as a GeoTIFF (float32, NaN nodata), georeferenced in the metric CRS of the release's
    projection (records projected from a CRS, :func:`privgp.geo.project_records`; refused otherwise, as
    ``privgp verify`` accepts GIS files only for those); each grid point is the centre of a pixel. Bands,
    each described and with a ``units`` tag: every released field in model units, (g(z) - g(T)) / B (the
    excursion set is where it is > 0), then the released sd in model units where the mechanism releases one,
    then every released field in the response's own units, g^-1(g(T) + B f) (the excursion set is where it
    is > T; field.csv's ``field_response_units``), then, where an sd is released, every field's reliable mask (1
    where it is farther than 2 released sd from the threshold, 0 within: field.csv's ``reliable``, the picture's
    unhatched area). The file's tags state the response, the threshold, the clipping bound, the transform,
    epsilon and delta, the forecast's ``mostly_noise`` flag ("true", "false", "unknown": no ``forecast``), a
    ``note`` on what can be read as a finding and the ``privgp_gis_format``. ``gis_format`` 1: the file privgp
    wrote before 2026-11-26 (no reliable band, flag or note; for ``privgp verify``). Needs rasterio
    (``pip install 'privgp[gis]'``)."""
    from .errors import MissingExtraError

    try:
        import rasterio
        from rasterio.transform import Affine
    except ImportError:
        raise MissingExtraError("a GeoTIFF", "rasterio", "gis") from None
    if gis_format not in GIS_FORMATS:
        raise InvalidParameterError("gis_format", f"one of {GIS_FORMATS}", gis_format)
    path = _file(path, GEOTIFF)
    _projected(result)
    field = _field(result, mechanism)
    rm = result.plan.response_map
    response = str(getattr(result.data, "response_name", None) or "the response")
    xs, ys = (np.asarray(a, dtype=float) for a in field.axes)
    dx, dy = float(xs[1] - xs[0]), float(ys[1] - ys[0])
    model = f"model units: (g({response}) - g({rm.threshold:g})) / {rm.clip:g}, transform g = {rm.transform}"
    fields = [np.asarray(b, dtype=float) for b in field.values]
    bands = [(b, f"released {field.noun} {k + 1}, model units (> 0: above the threshold)", model)
             for k, b in enumerate(fields)]
    if field.sd is not None:
        bands.append((np.asarray(field.sd, dtype=float), "released sd, model units", model))
    bands += [(rm.to_response_units(b), f"released {field.noun} {k + 1}, {response} (response units; threshold "
               f"{rm.threshold:g})", f"{response} (the response's own units)") for k, b in enumerate(fields)]
    last = len(bands)   # the last band in response units
    extra: dict[str, str] = {}
    units = ""
    if gis_format >= 2:
        if field.sd is not None:
            bands += [(reliable_mask(b, field.sd).astype(float), f"reliable mask of released {field.noun} {k + 1}: "
                       "1 where it is "
                       f"farther than {RELIABLE_SD:g} released sd from the threshold, 0 within (unreliable: hatched "
                       "in the picture, reliable = 0 in field.csv)", "1 reliable, 0 unreliable")
                      for k, b in enumerate(fields)]
            units = f"; {_bands(last + 1, len(bands))}: 1 where the map is reliable, 0 where it is not"
        noisy, note = gis_note(field, forecast)
        extra = {"mostly_noise": "unknown" if noisy is None else str(noisy).lower(), "note": note,
                 "privgp_gis_format": str(gis_format)}
    proj = _projection(result)
    with rasterio.open(path, "w", driver="GTiff", width=xs.size, height=ys.size, count=len(bands), dtype="float32",
                       crs=None if proj is None else rasterio.crs.CRS.from_wkt(proj.wkt()), nodata=np.nan,
                       transform=Affine(dx, 0.0, xs[0] - dx / 2, 0.0, -dy, ys[-1] + dy / 2)) as dst:
        for i, (b, name, unit) in enumerate(bands, start=1):
            dst.write(np.asarray(b, dtype=float).T[::-1].astype(np.float32), i)   # rows from north to south
            dst.set_band_description(i, name)
            dst.update_tags(i, units=unit)
        first = last - len(fields) + 1   # the first band in response units
        dst.update_tags(units=f"{_bands(1, first - 1)}: {model} (the excursion set is where a released field is > 0); "
                        f"{_bands(first, last)}: {response} (the excursion set is where a released field is > "
                        f"{rm.threshold:g}){units}",
                        response=response, threshold=repr(float(rm.threshold)), clip=repr(float(rm.clip)),
                        transform=str(rm.transform),
                        epsilon=str(float(result.plan.certificate.epsilon)),
                        delta=str(float(result.plan.certificate.delta)), **extra)
    return path


def _bands(a: int, b: int) -> str:
    return f"band {a}" if a == b else f"bands {a}-{b}"


def _filled(xs: np.ndarray, ys: np.ndarray, values: np.ndarray) -> Any:
    """{values > 0} on the grid as a shapely (Multi)Polygon (filled contours, contourpy)."""
    import contourpy
    from shapely.geometry import MultiPolygon, Polygon
    from shapely.ops import unary_union

    gen = contourpy.contour_generator(xs, ys, np.asarray(values, dtype=float).T, fill_type=contourpy.FillType.OuterOffset)
    # FillType.OuterOffset returns (points, offsets); contourpy's stub types every fill type's tuple
    points, offsets = gen.filled(0.0, np.inf)  # type: ignore[misc]
    polys = []
    for pts, offs in zip(points, offsets):
        rings = [pts[a:b] for a, b in zip(offs[:-1], offs[1:])]
        polys.append(Polygon(rings[0], rings[1:]))
    return unary_union(polys) if polys else MultiPolygon()


def _polygonal(geom: Any) -> Any:
    """The polygons of a shapely geometry (an overlay may add lines or points where two sets touch)."""
    import shapely
    from shapely.geometry import MultiPolygon, Polygon

    parts = [g for g in shapely.get_parts(geom) if isinstance(g, Polygon) and not g.is_empty]
    return parts[0] if len(parts) == 1 else MultiPolygon(parts)


def excursion_polygons(result: Any, *, mechanism: str | None = None) -> list[Any]:
    """The excursion set {f > 0} of each released field as a shapely (Multi)Polygon in the metric CRS
    (filled contours of the grid values, contourpy; post-processing of released values)."""
    from .errors import MissingExtraError

    try:
        import contourpy  # noqa: F401
        import shapely  # noqa: F401
    except ImportError:
        raise MissingExtraError("excursion polygons", "shapely and contourpy", "gis") from None
    field = _field(result, mechanism)
    xs, ys = (np.asarray(a, dtype=float) for a in field.axes)
    return [_filled(xs, ys, values) for values in field.values]


def reliable_excursion_polygons(result: Any, *, mechanism: str | None = None) -> list[tuple[Any, Any]] | None:
    """(reliable, unreliable) parts of each released field's excursion set, shapely geometries in the metric CRS:
    reliable where the field is above the threshold by more than :data:`RELIABLE_SD` released sd (the excursion set
    of f - 2 sd, within that of f), unreliable the rest of the excursion set (:func:`reliable_mask`, the picture's
    hatching); None when the mechanism releases no sd."""
    field = _field(result, mechanism)
    if field.sd is None:
        return None
    xs, ys = (np.asarray(a, dtype=float) for a in field.axes)
    sd = np.asarray(field.sd, dtype=float)
    out = []
    for whole, values in zip(excursion_polygons(result, mechanism=mechanism), field.values):
        above = _filled(xs, ys, np.asarray(values, dtype=float) - RELIABLE_SD * sd)
        reliable = _polygonal(whole.intersection(above))
        out.append((reliable, _polygonal(whole.difference(reliable))))
    return out


def write_geojson(result: Any, path: str | os.PathLike[str], *, mechanism: str | None = None, forecast: Any = None,
                  gis_format: int = GIS_FORMAT) -> Path:
    """The released excursion set(s) as GeoJSON polygons, in longitude/latitude (WGS84, RFC 7946): the records must
    have been projected from a CRS (:func:`privgp.geo.project_records`; refused otherwise, as ``privgp verify``
    accepts GIS files only for those). Where the mechanism releases an sd, each
    field's excursion set is two Features, ``reliable`` true (above the threshold by more than 2 released sd) and
    false (within 2 sd: hatched as unreliable in the picture, reliable = 0 in field.csv); otherwise one Feature per
    field, ``reliable`` null. Every Feature and the collection state the forecast's ``mostly_noise`` flag (null: no
    ``forecast``) and the collection a ``note`` on what can be read as a finding, and ``privgp_gis_format``.
    ``gis_format`` 1: the file privgp wrote before 2026-11-26 (one Feature per field, no reliability, flag or
    note; for ``privgp verify``). Needs shapely and contourpy (``privgp[gis]``)."""
    import shapely
    from shapely.geometry import mapping

    if gis_format not in GIS_FORMATS:
        raise InvalidParameterError("gis_format", f"one of {GIS_FORMATS}", gis_format)
    path = _file(path, GEOJSON)
    proj = _projected(result)
    to_lonlat = None
    if proj is not None:
        import pyproj

        tr = pyproj.Transformer.from_crs(pyproj.CRS.from_user_input(proj.target), pyproj.CRS.from_epsg(4326),
                                         always_xy=True)
        def to_lonlat(xy: np.ndarray) -> np.ndarray:
            return np.column_stack(tr.transform(xy[:, 0], xy[:, 1]))

    def geometry(geom: Any) -> Any:
        return mapping(geom if to_lonlat is None else shapely.transform(geom, to_lonlat))

    cert = result.plan.certificate
    common = {"threshold": float(result.plan.response_map.threshold), "epsilon": float(cert.epsilon),
              "delta": float(cert.delta)}
    own_units = "coordinates in the release's own units (no CRS was given)"
    features = []
    if gis_format == 1:
        for k, geom in enumerate(excursion_polygons(result, mechanism=mechanism)):
            features.append({"type": "Feature", "geometry": geometry(geom),
                             "properties": {"released_field": k + 1, "set": "where the released field > 0 (the "
                                            "response exceeds the public threshold)", **common}})
        doc: dict = {"type": "FeatureCollection", "features": features}
        if proj is None:
            doc["note"] = own_units
    else:
        field = _field(result, mechanism)
        noisy, note = gis_note(field, forecast, coordinates=own_units[0].upper() + own_units[1:] + "."
                               if proj is None else "")
        split = reliable_excursion_polygons(result, mechanism=mechanism)
        for k, geom in enumerate(excursion_polygons(result, mechanism=mechanism)):
            parts = [(geom, None, "where the released field > 0 (the response exceeds the public threshold); the "
                      "release states no uncertainty")] if split is None else [
                (split[k][0], True, f"where the released field > 0 (the response exceeds the public threshold) by "
                 f"more than {RELIABLE_SD:g} released sd: reliable"),
                (split[k][1], False, f"where the released field > 0 but within {RELIABLE_SD:g} released sd of the "
                 "threshold: unreliable, the release cannot tell the sides apart (hatched in the picture)")]
            for g, reliable, words in parts:
                features.append({"type": "Feature", "geometry": geometry(g),
                                 "properties": {"released_field": k + 1, "set": words, "reliable": reliable,
                                                "mostly_noise": noisy, **common}})
        doc = {"type": "FeatureCollection", "privgp_gis_format": gis_format, "mostly_noise": noisy,
               "note": note, "features": features}
    path.write_text(json.dumps(to_jsonable(doc)) + "\n")
    return path


#: the GIS outputs written with the others when the records were projected from a CRS (2-D maps)
GEOTIFF = "field.tif"
GEOJSON = "excursion.geojson"


def write_outputs(folder: Path, result: Any, *, report: bool = True, forecast: Any = None,
                  mechanism: str | None = None, interactive_map: bool = False, painter: Any = None) -> list[str]:
    """Every output of the release into ``folder`` (data files, picture, GIS files when the records
    were projected from a CRS, report, certificate last, as it records the others' sha256); returns
    the file names. ``privgp release`` writes with this; ``interactive_map``: see :func:`write_report`;
    ``painter``: the command's :class:`privgp.cli.picture_process.PictureProcess`, which draws the picture
    while the data files are written (the picture is drawn here when it returns none)."""
    from .cli import release_publish

    mech, plan, released, data = _parts(result, mechanism)
    if painter is not None:
        painter.submit(*release_publish.picture_request(mech, released, plan, data, forecast))
    files = write_data(result, folder, mechanism=mechanism)
    if _projection(result) is not None and mech.fields(released, plan) is not None:   # no map (a tuned release that
        # selected nothing): no GIS files
        write_geotiff(result, folder / GEOTIFF, mechanism=mechanism, forecast=forecast)
        write_geojson(result, folder / GEOJSON, mechanism=mechanism, forecast=forecast)
        files += [GEOTIFF, GEOJSON]
    pic = None if painter is None else painter.result()
    if pic is None:
        pic = _picture(result, mechanism, forecast)   # drawn once: the PNG and the report's copy
    (folder / mech.picture).write_bytes(pic.png)
    files += [mech.picture, CERTIFICATE] + ([REPORT] if report else [])
    if report:
        write_report(result, folder / REPORT, files=files, forecast=forecast, mechanism=mechanism, picture=pic,
                     interactive_map=interactive_map)
    write_certificate(result, folder / CERTIFICATE, files=files, forecast=forecast, mechanism=mechanism)
    return files


def _flag(name: str, value: Any) -> None:
    """A yes/no keyword is a bool: "no" is truthy, so overwrite="no" overwrote (red team 26)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(name, "True or False", value)


def check_out(out: str | os.PathLike[str], *, overwrite: bool = False, ledger: Any = None) -> Path:
    """Refuse, before anything is charged, an ``out`` that :func:`write_release` would refuse (not a new or empty
    folder, unless ``overwrite`` and an earlier privgp output; not creatable; the ``ledger`` file inside it), as
    ``privgp release`` checks ``--out`` before its charge: a release whose files cannot be written costs nothing.
    Returns the folder's resolved path."""
    from .cli.outputs import check_output_dir
    from .ledger import Budget, Ledger

    if not isinstance(out, (str, os.PathLike)):
        raise InvalidParameterError("out", "a folder path (a str or os.PathLike)", type(out).__name__)
    _flag("overwrite", overwrite)
    path = ledger.path if isinstance(ledger, Ledger) else ledger.ledger_path if isinstance(ledger, Budget) else ledger
    protect = [] if path is None else [("ledger", Path(path))]
    return check_output_dir(out, overwrite, flag="out", protect=protect)


def write_release(result: Any, out: str | os.PathLike[str], *, report: bool = True, overwrite: bool = False,
                  forecast: Any = None, mechanism: str | None = None, interactive_map: bool = False) -> list[str]:
    """What ``privgp release --out OUT`` writes, into ``out`` (new or empty unless ``overwrite``),
    atomically (a temporary folder renamed into place); then the ledger entry is marked completed.
    Returns the names of the files written. ``result`` must be the very object :func:`privgp.release` returned in this
    process, unchanged (not a copy), whose ledger entry charged its plan; ``forecast``, if given, one that ``privgp
    verify`` can run again (at most 64 simulated releases a family, at most 16 families)."""
    from .cli.outputs import AtomicOutput
    from .mechanisms.release import StatisticsRelease, _issue_result, issued_result
    from .tasks.forecast import MAX_VERIFIED_FAMILIES, MAX_VERIFIED_REPS, Forecast

    if not issued_result(result):   # red team 20d: a result rebuilt with another plan, fingerprint or charge
        raise InvalidParameterError("result", "the very object privgp.release returned in this process, unchanged "
                                    "(not a copy, and no field replaced: that could certify what was not drawn; pass "
                                    "the original; nothing was written)", "another object")
    if isinstance(result.plan, StatisticsRelease):   # red team 20d L3: written as privgp release writes it
        result = _issue_result(dataclasses.replace(result, plan=result.plan.plan))
    _parts(result, mechanism)
    _flag("report", report)
    _flag("interactive_map", interactive_map)
    if forecast is not None and not isinstance(forecast, Forecast):
        raise InvalidParameterError("forecast", "None or what privgp.tasks.forecast.forecast returned (a Forecast)",
                                    type(forecast).__name__)
    if forecast is not None and forecast.reps_per_family > MAX_VERIFIED_REPS:   # red team 20d M2: verify refuses it
        raise InvalidParameterError("forecast", f"a forecast of at most {MAX_VERIFIED_REPS} simulated releases a family "
                                    "(what privgp verify runs again; nothing was written)", forecast.reps_per_family)
    if forecast is not None and len(forecast.families) > MAX_VERIFIED_FAMILIES:   # review 20e: verify refuses it
        raise InvalidParameterError("forecast", f"a forecast of at most {MAX_VERIFIED_FAMILIES} field families (what "
                                    "privgp verify runs again; nothing was written)", len(forecast.families))
    folder = check_out(out, overwrite=overwrite, ledger=result.ledger)   # the check check_out makes before a charge
    # the ledger entry is read before anything is written: a ledger moved or deleted since the charge stops here
    entries = [] if result.ledger is None else [e for e in result.ledger.entries(result.fingerprint)
                                                 if e.id == result.charge.entry_id]
    if not entries or json.loads(json.dumps(result.plan.event.to_dict(), sort_keys=True)) != entries[0].event \
            or json.loads(json.dumps(to_jsonable(result.plan.public_settings()))) != entries[0].settings:
        # red team 20b F6: dataclasses.replace(result, plan=...) certified a draw with another plan's epsilon
        raise InvalidParameterError("result.plan", "the plan whose event its ledger entry charged (an entry not in "
                                    "the result's ledger, or a plan changed after the release, would certify what was "
                                    "not drawn; nothing was written)", type(result.plan).__name__)
    done = any(e.status == "completed" for e in entries)
    with AtomicOutput(folder, bool(overwrite)) as tmp:
        files = write_outputs(tmp, result, report=bool(report), forecast=forecast, mechanism=mechanism,
                              interactive_map=bool(interactive_map))
    if result.ledger is not None and not done:
        result.ledger.complete(result.charge.entry_id)
    return files


__all__ = ["check_out", "write_release", "write_outputs", "write_picture", "write_report", "write_certificate",
           "certificate_document", "write_data", "picture_name", "write_geotiff", "write_geojson",
           "excursion_polygons", "reliable_excursion_polygons", "reliable_mask", "gis_note", "GIS_FORMAT",
           "GIS_FORMATS", "RELIABLE_SD", "CERTIFICATE", "REPORT", "GEOTIFF", "GEOJSON"]
