"""Coordinates in a coordinate reference system (CRS): longitude/latitude projected to a local metric
CRS before any kernel or grid sees them (optional extra ``privgp[gis]``: pyproj).

A lengthscale in degrees means different distances east-west and north-south (and at different
latitudes), so a geographic CRS (e.g. ``EPSG:4326``) is projected to an azimuthal equidistant
projection centred on the PUBLIC box (distances from the centre exact, scale error below 0.1 % within
about 250 km); lengthscales and domains are then in metres. A projected CRS (e.g. a UTM zone) is used
as it is, in its own units. The projection depends on the public CRS and box only: it is a fixed
public per-record map, so replace-one neighbours stay neighbours and the guarantee is unchanged. It
is stated in the certificate (:meth:`LocalProjection.to_dict`).

The public box may be given in the input CRS: :meth:`LocalProjection.project_box` is the smallest
box in the metric CRS that contains the image of the whole input box (its densified boundary).

Released files name what their numbers are (:func:`file_coordinates`, :func:`picture_labels`): when the
records were projected (not a projected CRS used as it is), the coordinates the kernels saw are ``x_m``,
``y_m`` (metres of the local projection), never the input's names; the output layer adds the input
coordinates by :meth:`LocalProjection.inverse`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import validation as v
from .errors import InvalidParameterError, MissingExtraError
from .models.domain import Box


def _pyproj() -> Any:
    try:
        import pyproj
    except ImportError:
        raise MissingExtraError("reading coordinates in a CRS", "pyproj", "gis") from None
    return pyproj


#: a CRS as privgp takes and records it: an authority and a code ("EPSG:4326", "ESRI:102003"), nothing else (the
#: input CRS is published in the certificate; a PROJ string could carry any text)
CRS_CODE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,15}:[0-9A-Za-z_.]{1,24}")

@dataclass(frozen=True)
class LocalProjection:
    """The public map from the input CRS (``source``, as given) to the metric CRS the kernels see
    (``target``, a PROJ string or the source itself when it is already projected)."""

    source: str
    target: str

    @classmethod
    def for_box(cls, crs: str, box: Box) -> LocalProjection:
        """The local metric CRS of a public box given in ``crs`` (a geographic CRS: azimuthal
        equidistant centred on the box, WGS84 datum; a projected CRS: itself)."""
        pyproj = _pyproj()
        if not isinstance(crs, str) or not CRS_CODE.fullmatch(crs):
            raise InvalidParameterError("crs", "a CRS named by its authority and code, such as 'EPSG:4326' (it is "
                                        "published in the certificate: no free text)",
                                        crs if not isinstance(crs, str) or len(crs) <= 40 else crs[:37] + "...")
        try:
            src = pyproj.CRS.from_user_input(crs)
        except pyproj.exceptions.CRSError:
            raise InvalidParameterError("crs", "a CRS pyproj knows (e.g. 'EPSG:4326')", crs) from None
        if not isinstance(box, Box) or box.dim != 2:
            raise InvalidParameterError("box", "a 2-D privgp.Box in the input CRS (x/longitude, y/latitude; with "
                                        "privgp release: --x-col and --y-col)",
                                        box.describe() if isinstance(box, Box) else box)
        if not (src.is_geographic or src.is_projected):   # red team: a geocentric or vertical CRS was taken as a
            # projected one (GeoJSON polygons at latitude 90, a GeoTIFF without a CRS)
            raise InvalidParameterError("crs", "a geographic or projected CRS (longitude/latitude, or planar x/y)",
                                        f"{crs} (a {src.type_name})")
        try:   # the GeoJSON is written in WGS84 longitude/latitude: a CRS of another body failed after the charge
            pyproj.Transformer.from_crs(src, pyproj.CRS.from_epsg(4326), always_xy=True)
        except pyproj.exceptions.ProjError:
            raise InvalidParameterError("crs", "a CRS of the Earth, which pyproj can map to longitude/latitude "
                                        "(WGS84)", crs) from None
        if not src.is_geographic:
            return cls(crs, src.to_string())
        if src.prime_meridian.longitude != 0.0 or any(a.unit_name != "degree" for a in src.axis_info[:2]):
            # the box is read as degrees from Greenwich (its centre, its ranges): NTF (Paris), in grads from Paris,
            # put the projection's centre 600 km from the box (red team 26)
            raise InvalidParameterError("crs", "a geographic CRS in degrees from Greenwich (e.g. EPSG:4326, or its "
                                        "own datum's: EPSG:4275 for NTF), or a projected one",
                                        f"{crs} ({src.axis_info[0].unit_name}s from {src.prime_meridian.name})")
        lon0, lat0 = (0.5 * (a + b) for a, b in zip(box.lower, box.upper))
        if not (-180.0 <= box.lower[0] and box.upper[0] <= 180.0 and -90.0 <= box.lower[1] and box.upper[1] <= 90.0):
            raise InvalidParameterError("box", "longitudes in [-180, 180] and latitudes in [-90, 90] (x is the "
                                        "longitude, y the latitude)", box.describe())
        return cls(crs, f"+proj=aeqd +lat_0={lat0!r} +lon_0={lon0!r} +x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs")

    def _transformer(self, inverse: bool = False) -> Any:
        pyproj = _pyproj()
        a, b = (self.target, self.source) if inverse else (self.source, self.target)
        return pyproj.Transformer.from_crs(pyproj.CRS.from_user_input(a), pyproj.CRS.from_user_input(b),
                                           always_xy=True)

    @classmethod
    def from_dict(cls, d: Any) -> LocalProjection:
        """The projection a certificate records (:meth:`to_dict`)."""
        if not (isinstance(d, dict) and isinstance(d.get("input_crs"), str) and isinstance(d.get("metric_crs"), str)):
            raise InvalidParameterError("projection", "a mapping with the input_crs and metric_crs strings", d)
        return cls(d["input_crs"], d["metric_crs"])

    @property
    def identity(self) -> bool:
        return self.target == _pyproj().CRS.from_user_input(self.source).to_string()

    def forward(self, X: Any) -> np.ndarray:
        """Points (n, 2) in the input CRS (x/longitude first) -> the metric CRS."""
        X = v.points("coordinates", X, dim=2)
        if self.identity:
            return X.copy()
        x, y = self._transformer().transform(X[:, 0], X[:, 1])
        out = np.column_stack([x, y])
        if not np.all(np.isfinite(out)):
            raise InvalidParameterError("coordinates", f"points the projection from {self.source} can map",
                                        f"{int(np.sum(~np.isfinite(out).all(axis=1)))} point(s) it cannot")
        return out

    def inverse(self, X: Any) -> np.ndarray:
        """Points (n, 2) in the metric CRS -> the input CRS."""
        X = v.points("coordinates", X, dim=2, allow_empty=True)
        if self.identity or X.shape[0] == 0:
            return X.copy()
        x, y = self._transformer(inverse=True).transform(X[:, 0], X[:, 1])
        return np.column_stack([x, y])

    def project_box(self, box: Box) -> Box:
        """The smallest box of the metric CRS containing the image of ``box`` (input CRS)."""
        if self.identity:
            return box
        t = np.linspace(0.0, 1.0, 101)
        (x0, y0), (x1, y1) = box.lower, box.upper
        xs = np.concatenate([x0 + (x1 - x0) * t, np.full_like(t, x1), x1 - (x1 - x0) * t, np.full_like(t, x0)])
        ys = np.concatenate([np.full_like(t, y0), y0 + (y1 - y0) * t, np.full_like(t, y1), y1 - (y1 - y0) * t])
        P = self.forward(np.column_stack([xs, ys]))
        return Box(tuple(float(a) for a in P.min(axis=0)), tuple(float(b) for b in P.max(axis=0)))

    def wkt(self) -> str:
        """The metric CRS as WKT (what a GeoTIFF records)."""
        return str(_pyproj().CRS.from_user_input(self.target).to_wkt())

    def centre(self) -> tuple[float, float]:
        """(longitude, latitude) of the local projection's centre (the public box's centre)."""
        op = _pyproj().CRS.from_user_input(self.target).coordinate_operation
        params = {} if op is None else {p.name: float(p.value) for p in op.params}
        return params.get("Longitude of natural origin", 0.0), params.get("Latitude of natural origin", 0.0)

    def to_dict(self) -> dict:
        return {"input_crs": self.source, "metric_crs": self.target,
                "rule": ("the input CRS itself (projected)" if self.identity else
                         "azimuthal equidistant projection centred on the public box (WGS84), metres"),
                "public": "a fixed map of each record computed from the public CRS and box only"}


#: the names privgp's files give the projected coordinates (metres of the local projection), x first
METRIC_COORDINATES = ("x_m", "y_m")


def _projected(projection: Any) -> LocalProjection | None:
    """The recorded projection (a dict or a :class:`LocalProjection`), None when there is none or it is the
    identity (a projected CRS used as it is, whose coordinates are the input's own)."""
    if projection is None:
        return None
    proj = projection if isinstance(projection, LocalProjection) else LocalProjection.from_dict(projection)
    return None if proj.identity else proj


def file_coordinates(names: Any, projection: Any) -> tuple[str, ...]:
    """The names privgp's files give the coordinates the kernels saw: the input's ``names``, or
    :data:`METRIC_COORDINATES` when the records were projected (the numbers are then metres, not the input's)."""
    return tuple(names) if _projected(projection) is None else METRIC_COORDINATES


def coordinate_unit(projection: Any) -> str:
    """The unit of the coordinates the kernels saw, where privgp chose it: "m" when the records were projected
    (the local projection's metres), "" otherwise (the input's own units)."""
    return "" if _projected(projection) is None else "m"


def input_coordinate_names(names: Any, taken: Any = ()) -> tuple[str, ...]:
    """The names of the input coordinates added beside projected ones: the input's, or ``input_<name>`` where a
    name is already taken (``taken``: the file's other columns)."""
    taken = set(taken) | set(METRIC_COORDINATES)
    return tuple(f"input_{nm}" if nm in taken else str(nm) for nm in names)


def picture_labels(names: Any, projection: Any) -> tuple[str, ...]:
    """Axis labels for the coordinates the kernels saw: the input's ``names``, or, when the records were projected,
    ``x_m``/``y_m`` in metres of the local projection with its centre in the input CRS."""
    proj = _projected(projection)
    if proj is None:
        return tuple(names)
    lon0, lat0 = proj.centre()
    where = f"metres, local azimuthal equidistant projection centred on {names[0]} {lon0:.6g}, {names[1]} {lat0:.6g}"
    return tuple(f"{m} ({where})" for m in METRIC_COORDINATES)


def project_records(data: Any, box: Box, crs: str) -> tuple[Any, Box, LocalProjection]:
    """(records with projected coordinates, the public box in the metric CRS, the projection) for
    records and a public box given in ``crs``. Records outside the box (input CRS) are refused. The
    records keep their content digest (the ledger still recognises the same records)."""
    proj = LocalProjection.for_box(crs, box)
    require_gis_writers()
    box.check_contains("coordinates", data.X)
    box_m = proj.project_box(box)
    _check_lonlat_continuous(proj, box, box_m)
    return data.projected(proj.forward(data.X), proj.to_dict()), box_m, proj


def require_gis_writers() -> None:
    """MissingExtraError unless the packages of the GIS files (field.tif, excursion.geojson) that a release of
    projected records writes are installed: checked when the records are projected, before anything is charged (red
    team: with pyproj alone a --crs release was charged, then failed writing field.tif, and nothing was written)."""
    import importlib

    for package, feature in (("rasterio", "a GeoTIFF"), ("shapely", "excursion polygons"),
                             ("contourpy", "excursion polygons")):
        try:
            importlib.import_module(package)
        except ImportError:
            raise MissingExtraError(f"{feature} (written by a release of records projected from a CRS)", package,
                                    "gis") from None


def _check_lonlat_continuous(proj: LocalProjection, box: Box, box_m: Box) -> None:
    """Refuse (before anything is charged) a box whose release grid, the metric box ``box_m``, reaches a pole or
    the antimeridian or leaves the projection's domain: the GeoJSON's polygons are written in longitude/latitude
    point by point, and a polygon around a pole or across longitude 180 came out invalid, spanning the globe."""
    pyproj = _pyproj()
    to_lonlat = pyproj.Transformer.from_crs(pyproj.CRS.from_user_input(proj.target), pyproj.CRS.from_epsg(4326),
                                            always_xy=True)
    (x0, y0), (x1, y1) = box_m.lower, box_m.upper
    xs, ys = np.meshgrid(np.linspace(x0, x1, 129), np.linspace(y0, y1, 129))
    lon, lat = (np.asarray(a) for a in to_lonlat.transform(xs, ys))
    poles = np.column_stack(to_lonlat.transform([0.0, 0.0], [90.0, -90.0], direction="INVERSE"))
    at_pole = np.any(np.all(np.isfinite(poles), axis=1) & (poles[:, 0] >= x0) & (poles[:, 0] <= x1)
                     & (poles[:, 1] >= y0) & (poles[:, 1] <= y1))
    if not (np.all(np.isfinite(lon)) and np.all(np.isfinite(lat))) or at_pole or \
            np.any(np.abs(np.diff(lon, axis=0)) > 180.0) or np.any(np.abs(np.diff(lon, axis=1)) > 180.0):
        raise InvalidParameterError("box", "a box whose map (the smallest box of the metric CRS around it, the "
                                    "release's grid) stays clear of the poles and of longitude +-180, within the "
                                    "projection's domain: the excursion polygons are written in longitude/latitude",
                                    box.describe())


__all__ = ["LocalProjection", "project_records", "require_gis_writers", "METRIC_COORDINATES", "coordinate_unit",
           "file_coordinates", "input_coordinate_names", "picture_labels"]
