"""The release protocol shared by every mechanism: plan (public), check, charge, draw.

A *plan* fixes every public quantity of one release before any private value is used and carries
the release's privacy event and certificate. Each mechanism module provides one plan class with:

* ``mechanism`` (name, e.g. "posterior-sample"), ``n``, ``domain``, ``response_map``, ``event``,
  ``certificate``, ``describe()`` (one public line for the ledger), ``public_settings()`` (dict);
* ``check(X, z) -> (X, y)``: every check of the private inputs that can fail (shape, n, domain,
  responses, feasibility), returning the inputs the mechanism uses;
* ``draw(X, y, rng) -> released``: the randomness; the released object is public.

:func:`release` is the library's whole workflow: check (the plan against its own public settings,
:func:`check_plan`; the private inputs), charge the ledger (atomic; a refusal changes nothing), draw,
return. It writes no file; the CLI writes outputs and then marks the ledger entry completed. Everything
that can fail because of the user's input must fail in ``check`` or before: after the charge only failures
the user could not have caused remain, and the charge stands.

Also here: :class:`ResponseMap` (bounded responses, seed 000 App. D.2), :func:`default_delta`,
:func:`grid_sizes` — shared by the mechanisms.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import weakref
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..accounting import PrivacyCertificate, PrivacyEvent
from ..errors import InvalidParameterError
from ..jsonable import as_written, first_difference, to_jsonable
from ..models.domain import Box

TRANSFORMS = ("identity", "log")
#: the clipping range in response units lies within +-MAX_RESPONSE, and a log map's above MIN_LOG_RESPONSE: beyond,
#: drawing the map failed after the charge (red team 17: a 1-D map's axis from 2e308 wide, a log colour scale from
#: below about 1e-287; matplotlib's "Invalid vmin or vmax"), and exp overflowed where a log range was wider
MAX_RESPONSE = 1e300
MIN_LOG_RESPONSE = 1e-280


#: the largest default delta, whatever n
MAX_DEFAULT_DELTA = 1e-6


def default_delta(n: int) -> float:
    """privgp's default delta: min(1e-6, 1 / (10 n)). delta is the probability that the guarantee may
    fail outright; with n records n delta must stay far below 1 (here <= 0.1 at any n, and
    n delta <= 1e-6 n is below 0.01 up to n = 10^4). n is public (replace-one DP)."""
    n = v.integer("n", n, minimum=2)
    return min(MAX_DEFAULT_DELTA, 1.0 / (10.0 * n))


def seed000_delta(n: int) -> float:
    """delta = n^(-1.1), seed 000's choice in its real-data study: only to reproduce the paper (with n
    records, n delta = n^-0.1 is far from small: 0.59 at n = 211)."""
    n = v.integer("n", n, minimum=2)
    return float(n) ** -1.1


@dataclass(frozen=True)
class ResponseMap:
    """How a raw response becomes the bounded value every mechanism sees, from public settings only:
    y = clip(g(z) - g(T), -B, B) / B with public T (threshold, response units) and B (clip,
    transformed units); |y| <= 1 = M_Y (seed 000, App. D.2). y > 0 iff g(z) > g(T), up to saturation."""

    threshold: float
    clip: float
    transform: str = "identity"

    def __post_init__(self):
        if self.transform not in TRANSFORMS:
            raise InvalidParameterError("transform", f"one of {TRANSFORMS}", self.transform)
        t = v.positive("threshold", self.threshold) if self.transform == "log" else \
            v.finite_array("threshold", self.threshold, ndim=0).item()
        object.__setattr__(self, "threshold", float(t))
        object.__setattr__(self, "clip", v.positive("clip", self.clip))
        self._check_range()

    def _check_range(self) -> None:
        """The clipping range in response units, g^-1(g(T) -+ B), that every released value lies in: within
        +-:data:`MAX_RESPONSE` and, for ``log``, above :data:`MIN_LOG_RESPONSE`. Outside, the released values could
        not be written in response units (exp overflows: ``--clip 1000`` with ``--transform log``, taken for a price
        range) and drawing the map failed after the charge (red team 17)."""
        with np.errstate(over="ignore", under="ignore"):
            lo, hi = (float(x) for x in self.to_response_units([-1.0, 1.0]))
        log = self.transform == "log"
        floor = MIN_LOG_RESPONSE if log else -MAX_RESPONSE
        if floor <= lo and hi <= MAX_RESPONSE:   # NaN fails
            return
        name, value = ("clip", self.clip) if self._threshold_alone_fits() else ("threshold", self.threshold)
        raise InvalidParameterError(
            name, f"{'small enough that' if name == 'clip' else 'one for which'} the clipping range "
            + ("threshold * exp(-+clip) (clip is in log units)" if log else "threshold -+ clip")
            + f" lies within [{floor:g}, {MAX_RESPONSE:g}] (here {lo:.6g} .. {hi:.6g})", value)

    def _threshold_alone_fits(self) -> bool:
        """Whether a clip of 1 keeps the range inside the limits: then the clip is at fault, else the threshold."""
        if self.transform == "log":
            return MIN_LOG_RESPONSE <= self.threshold * math.exp(-1.0) and self.threshold * math.e <= MAX_RESPONSE
        return abs(self.threshold) + 1.0 <= MAX_RESPONSE

    @property
    def centre(self) -> float:
        """g(T): the centring constant on the transformed scale."""
        return math.log(self.threshold) if self.transform == "log" else self.threshold

    def transformed(self, z: ArrayLike) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        self.check(z)
        return np.log(z) if self.transform == "log" else z

    def check(self, z: ArrayLike) -> None:
        """Raise where :meth:`apply` cannot map the responses (the log of a value <= 0), computing nothing else."""
        z = np.asarray(z, dtype=float)
        if self.transform == "log" and z.size and not z.min() > 0:   # NaN fails too
            raise InvalidParameterError("responses", "> 0 for transform 'log'",
                                        f"{int(np.sum(~(z > 0)))} value(s) <= 0")

    def apply(self, z: ArrayLike) -> np.ndarray:
        """Model responses in [-1, 1]: clip(g(z) - g(T), -B, B) / B, computed in one new array."""
        z = np.asarray(z, dtype=float)
        self.check(z)
        out = np.empty(z.shape)
        if self.transform == "log":
            np.log(z, out=out)
            out -= self.centre
        else:
            np.subtract(z, self.centre, out=out)
        np.clip(out, -self.clip, self.clip, out=out)
        out /= self.clip
        return out if out.ndim else out[()]

    def to_response_units(self, f: ArrayLike) -> np.ndarray:
        """g^-1(g(T) + B f): a released path on the response's own scale (post-processing;
        meaningful inside the clipping range)."""
        u = self.centre + self.clip * np.asarray(f, dtype=float)
        return np.exp(u) if self.transform == "log" else u

    def to_dict(self) -> dict:
        return {"threshold": self.threshold, "clip": self.clip, "transform": self.transform,
                "centre": self.centre, "M_Y": 1.0,
                "formula": "y = clip(g(z) - g(threshold), -clip, clip) / clip, g = " + self.transform}


def grid_sizes(domain: Box, points: int) -> tuple[int, ...]:
    """Grid points per axis: ``points`` along the longest side, and on the others as many as keep
    the spacing (nearly) equal: round(width / h) + 1 with h = longest / (points - 1), at least 2."""
    points = v.integer("grid", points, minimum=2)
    w = domain.widths
    h = w.max() / (points - 1)
    return tuple(int(max(2, np.floor(wi / h + 0.5) + 1)) for wi in w)


class ReleasePlan(Protocol):
    """What :func:`release` needs from a mechanism's plan (see the module docstring)."""

    mechanism: str
    n: int
    domain: Box
    event: PrivacyEvent
    certificate: PrivacyCertificate

    def check(self, X: ArrayLike, z: ArrayLike) -> tuple[np.ndarray, np.ndarray]: ...

    def draw(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> Any: ...

    def describe(self) -> str: ...

    def public_settings(self) -> dict: ...


class PrivateRecords(Protocol):
    """The private data :func:`release` takes (e.g. :class:`privgp.datasets.tabular.TabularData`)."""

    @property
    def X(self) -> np.ndarray: ...

    @property
    def response(self) -> np.ndarray: ...

    @property
    def content_digest(self) -> str: ...


@dataclass(frozen=True)
class ReleaseResult:
    """What one release produced: the plan, the released (public) object, the ledger charge."""

    plan: Any
    released: Any
    charge: Any
    fingerprint: str
    #: the private records released from (for the writers of :mod:`privgp.publish`; never publish it)
    data: Any = None
    #: where the randomness came from (recorded in the certificate and the report)
    randomness: dict | None = None
    #: the ledger file charged (its path is what the CLI prints)
    ledger: Any = None


#: what the certificate says about randomness from fresh OS entropy (the CLI's words, see privgp.cli.common)
FRESH_ENTROPY = {"source": "fresh OS entropy (numpy default_rng())"}
#: the randomness a release states for a Generator its caller passed (privgp's words; verify knows them: red team 20b F5)
CALLER_GENERATOR = {"source": "a numpy Generator supplied by the caller (a fixed seed is for demos only: anyone with "
                              "the seed can reproduce the release)"}


def as_records(data: Any) -> PrivateRecords:
    """The private records of a release: an object with ``X``, ``response`` and ``content_digest``
    (:func:`privgp.records`, :func:`privgp.datasets.tabular.load_table`), or a pair (X, y) of arrays.
    Anything else is an InvalidParameterError that says what to pass (never an AttributeError)."""
    if isinstance(data, tuple) and len(data) == 2:
        from ..datasets.tabular import records

        return records(*data)
    if hasattr(data, "X") and hasattr(data, "response") and isinstance(getattr(data, "content_digest", None), str):
        return data
    raise InvalidParameterError("data", "private records: privgp.records(X, y) (arrays or a DataFrame), "
                                "a pair (X, y), or privgp.datasets.tabular.load_table(...)", type(data).__name__)


@dataclass(frozen=True, eq=False)
class CheckedRecords:
    """Records already checked against one plan by :func:`check_records` (the arrays ``plan.check``
    returned): :func:`release` of THAT plan uses them instead of checking again (``privgp release`` checks
    before it opens the ledger, so that bad data creates no file)."""

    plan: Any
    records: Any
    X: np.ndarray
    y: np.ndarray


#: the CheckedRecords that check_records made, with the plan, records and arrays it made them with: release() skips
#: the check only for one of these, unchanged (a copy by dataclasses.replace, or a field set again by
#: object.__setattr__, is checked again); entries go with their CheckedRecords
_ISSUED: weakref.WeakKeyDictionary[CheckedRecords, tuple] = weakref.WeakKeyDictionary()


def check_records(plan: ReleasePlan, data: Any, *, allow_noisy: bool = False, map_checked: bool = False
                  ) -> CheckedRecords:
    """Check ``data`` (as :func:`release` accepts it) against ``plan``, and that a map is possible
    (:func:`check_map_is_possible`; ``allow_noisy`` as :func:`release`'s; ``map_checked``: the caller has run
    that on these very records and box, as ``privgp release`` does when it loads them); raises on bad private
    input."""
    records = as_records(data)
    X, y, key = _checked(plan, records, allow_noisy, map_checked)
    X, y = _frozen(X), _frozen(y)   # what was checked is what is drawn from
    out = CheckedRecords(plan=plan, records=records, X=X, y=y)
    _ISSUED[out] = (plan, records, X, y, key)
    return out


def _checked(plan: Any, records: Any, allow_noisy: bool, map_checked: bool = False) -> tuple[Any, Any, Any]:
    """(X, y, key) of ``records``: each attribute read once (:func:`~privgp.datasets.tabular.read_records`),
    checked against ``plan``; ``key()`` gives the ledger key's digests of exactly what was checked (a records
    object whose arrays are set again afterwards changes neither what is drawn nor what is charged)."""
    from ..datasets.tabular import read_records

    Xr, zr, key = read_records(records)
    X, y = plan.check(Xr, zr)
    if not map_checked:
        _check_possible(plan, X, zr, allow_noisy)
    return X, y, key


def _frozen(a: Any) -> Any:
    """A private copy that cannot be made writeable again (:func:`~privgp.validation.immutable_copy`), or ``a``
    itself if it is not an array."""
    return v.immutable_copy(a) if isinstance(a, np.ndarray) else a


def _issued(data: Any, plan: Any) -> bool:
    """``data`` is a CheckedRecords that :func:`check_records` made for this very plan, unchanged since."""
    if not (isinstance(data, CheckedRecords) and data.plan is plan):
        return False
    parts = _ISSUED.get(data, ())
    return len(parts) == 5 and all(a is b for a, b in zip(parts, (data.plan, data.records, data.X, data.y)))


def _check_possible(plan: Any, X: Any, z: Any, allow_noisy: bool) -> None:
    rmap = getattr(plan, "response_map", None)
    if np.asarray(X).ndim == 2 and np.asarray(X).shape[0] and isinstance(rmap, ResponseMap):
        check_map_is_possible(np.asarray(X), z, plan.domain, rmap, allow_noisy=allow_noisy)


#: the records' extent must reach MIN_EXTENT_SHARE ** (1 / d) of the box on at least one side (in 2-D: an extent
#: under 3.2% of the box on both sides, under 0.1% of its area, is refused: most likely a box in GIS order)
MIN_EXTENT_SHARE = 1e-3
#: ... and MIN_SIDE_SHARE of it on at least one side unless the caller allows a noisy map: records within a tenth of
#: the box on every side fall in a cell or two of a coarse map, noise fills the rest, and the utility forecast (which
#: assumes records spread over the box) cannot tell
MIN_SIDE_SHARE = 0.1


def check_map_is_possible(X: np.ndarray, z: ArrayLike, domain: Box, rmap: ResponseMap, *,
                          allow_noisy: bool = False) -> None:
    """Two likely mistakes, refused before anything is charged (the data holder's own records decide; the message
    is theirs, nothing is published): a box far larger than the records (e.g. given in GIS order minx miny maxx
    maxy, or a country's box for one city's records), so that the map would be empty almost everywhere (the
    second case is released with ``allow_noisy``); and a threshold so far outside the responses that
    every one is clipped to the same bound, so that the map would show that bound, not the data."""
    # per-column extremes (one pass each; X.min(axis=0) of an (n, 2) array is far slower), g monotone: no new arrays
    z = np.asarray(z, dtype=float)
    check_extents(np.array([X[:, j].min() for j in range(X.shape[1])]),
                  np.array([X[:, j].max() for j in range(X.shape[1])]),
                  (float(z.min()), float(z.max())) if z.size else None, z.size, domain, rmap, allow_noisy=allow_noisy,
                  core=_core_extent(X, domain))


#: the core of the records: all but the CORE_TRIM share at each end of each axis (a few stragglers far from the rest
#: must not hide that the rest fill a corner of the box), located to CORE_BINS bins per side of the box
CORE_TRIM = 0.01
CORE_BINS = 1024


def _core_extent(X: np.ndarray, domain: Box) -> tuple[np.ndarray, np.ndarray]:
    """Per-axis bounds of the records but the CORE_TRIM share at each end: from a count of all of them in
    CORE_BINS bins per side of the box (deterministic, one pass per axis), widened to whole bins, so the span is
    never under the core's."""
    lo, hi = np.asarray(domain.lower, float), np.asarray(domain.upper, float)
    n, out_lo, out_hi = X.shape[0], np.empty(X.shape[1]), np.empty(X.shape[1])
    for j in range(X.shape[1]):
        idx = ((X[:, j] - lo[j]) * (CORE_BINS / (hi[j] - lo[j]))).astype(np.intp)
        cum = np.cumsum(np.bincount(np.clip(idx, 0, CORE_BINS - 1), minlength=CORE_BINS))
        first = int(np.searchsorted(cum, CORE_TRIM * n, side="right"))
        last = int(np.searchsorted(cum, (1.0 - CORE_TRIM) * n, side="left"))
        width = (hi[j] - lo[j]) / CORE_BINS
        out_lo[j], out_hi[j] = lo[j] + first * width, lo[j] + (min(last, CORE_BINS - 1) + 1) * width
    return out_lo, out_hi


def check_extents(x_lo: ArrayLike, x_hi: ArrayLike, z_range: tuple[float, float] | None, n: int, domain: Box,
                  rmap: ResponseMap, *, allow_noisy: bool = False,
                  core: tuple[ArrayLike, ArrayLike] | None = None) -> None:
    """:func:`check_map_is_possible` from the records' extents: per-axis least and greatest coordinate and the
    least and greatest response (a streaming pass finds them without keeping the records); ``core``: per-axis
    bounds of all but the outermost records (:func:`_core_extent`; a streaming pass has none: the extremes
    stand in)."""
    lo, hi = np.asarray(domain.lower, float), np.asarray(domain.upper, float)
    spans = (np.asarray(x_hi, float) - np.asarray(x_lo, float)) / (hi - lo)
    # every side of the records' extent below MIN_EXTENT_SHARE ** (1 / d) of the box's (their extent under 0.1% of the
    # box's area in 2-D): a transect along one axis, or records on a line, fill a real part of the box
    axes = " and ".join(f"{100 * s:.3g}% of its {'width' if j == 0 else 'height'}" for j, s in enumerate(spans))
    got = " ".join(f"{a:g} {b:g}" for a, b in zip(lo, hi))
    if n == 1:
        raise InvalidParameterError("records", "more than one record (one record is at one place: there is no map "
                                    "to draw, and a release of it would be privacy noise)", "1 record")
    if n > 1 and float(np.max(spans)) == 0.0:
        raise InvalidParameterError("records", f"records at more than one place (all {n} are at the same "
                                    "coordinates: there is no map to draw)", f"{n} records at one point")
    if float(np.max(spans)) < MIN_EXTENT_SHARE ** (1.0 / spans.size):
        raise InvalidParameterError(
            "box", f"a public box the records fill a real part of (they span {axes}: a map over this box would be "
            "empty almost everywhere); is it in the order XMIN XMAX YMIN YMAX (not GIS's minx miny maxx maxy; in "
            "Python Box((xmin, ymin), (xmax, ymax)))? Choose it for the region the records come from, from public "
            "knowledge, not from the records' own extent", got)
    core_spans = spans if core is None else (np.asarray(core[1], float) - np.asarray(core[0], float)) / (hi - lo)
    if float(np.max(core_spans)) < MIN_SIDE_SHARE and not allow_noisy:
        which = f"they span {axes}"
        if core is not None and float(np.max(spans)) >= MIN_SIDE_SHARE:
            which = (f"{100 * (1 - 2 * CORE_TRIM):g}% of them span " + " and ".join(
                f"{100 * c:.3g}% of its {'width' if j == 0 else 'height'}" for j, c in enumerate(core_spans)))
        raise InvalidParameterError(
            "box", f"a public box the records fill a real part of ({which}, under a tenth of every side: "
            "a map over this box would hold them in a cell or two and show privacy noise everywhere else, and the "
            "utility forecast, which assumes records spread over the box, would overstate it). Choose the box for "
            "the region the records describe, from public knowledge (a city's boundary for one city's records), "
            "not from the records' own extent; --allow-noisy (allow_noisy=True) releases over this box anyway",
            got)
    ends = rmap.apply(np.array([z_range[1], z_range[0]])) if z_range else np.zeros(2)   # the largest, smallest y
    for bound, side in ((-1.0, "at or below"), (1.0, "at or above")):
        if n and ends[0 if bound < 0 else 1] == bound:
            edge = rmap.to_response_units(bound)
            raise InvalidParameterError(
                "threshold", f"a value inside the range of the responses (every one of the {n} responses is "
                f"{side} {edge:g}, the threshold {'-' if bound < 0 else '+'} clip on the transformed scale, so the "
                f"map would show that clipping bound everywhere, not the data); or a larger clip",
                rmap.threshold)


def check_plan(plan: Any) -> None:
    """Refuse a plan of a registered mechanism whose privacy event or certificate is not what its own public
    settings give: the plan is rebuilt from them by the mechanism's plan code, as ``privgp verify`` rebuilds a
    certificate, and its event, public settings and certificate are compared as certificate.json would hold
    them, then every other field, those ``draw`` reads without the settings naming them (a tuned plan's
    candidates, say), field by field. A plan changed after planning -- ``plan.scaled(k)`` (a forecast's
    simulation plan: other n or noise, the original event), ``dataclasses.replace(plan, noise_std=...)``,
    ``object.__setattr__`` on a private field -- would otherwise be charged and certified with an event that
    is not the noise it draws. A plan of a class privgp does not register is
    charged as its ``event`` states."""
    from .interface import Recorded, check_publishable, for_plan, registry

    mechs = [m for m in registry().values() if m.plan_type is not None and isinstance(plan, m.plan_type)]
    if not mechs:
        return
    if not any(type(plan) is m.plan_type for m in mechs):   # a subclass: its plan code is not the mechanism's
        raise InvalidParameterError("plan", f"a plan as privgp.plan builds it (a {getattr(mechs[0].plan_type, '__name__', '')}, not a "
                                    "subclass, whose event privgp cannot rebuild; nothing was charged)",
                                    type(plan).__name__)
    mech = for_plan(plan)
    check_publishable(mech, plan)

    def parts(p: Any) -> dict:
        """What is charged and drawn, as certificate.json would hold it: the certificate, the event the ledger is
        charged (a field of its own), the public settings, n, and those of each candidate a selection draws from."""
        out = {"certificate": p.certificate.to_dict(), "event": p.event.to_dict(), "public_settings":
               p.public_settings(), "n": p.n}
        for k, cand in enumerate(getattr(p, "plans", ()) or ()):
            out[f"candidate {k + 1}"] = {"event": cand.event.to_dict(), "public_settings": cand.public_settings(),
                                         "L": getattr(cand, "L", None)}
        return as_written(out)

    recorded = parts(plan)
    again = mech.rebuild(Recorded({"mechanism": mech.name, "certificate": recorded["certificate"],
                                   "calibration": as_written(getattr(plan, "calibration", None)),
                                   "public_settings": recorded["public_settings"], "dataset": {"n": plan.n}}))
    d = first_difference(recorded, parts(again), "plan")
    where = d[0] if d is not None else _first_field_difference(plan, again, "plan")
    if where is not None:
        raise InvalidParameterError(
            "plan", "a plan as privgp.plan builds it, its privacy event that of its public settings (this one was "
            "changed after planning, e.g. by plan.scaled(), which makes a forecast's simulation plan, or "
            "dataclasses.replace; nothing was charged)", f"{where} differs from what its public settings give")
    releasable = getattr(plan, "check_releasable", None)   # a plan kept only to rebuild old certificates
    if releasable is not None:
        releasable()


#: plan fields that bound the machine's resources, not the release: a caller may set them as it likes
RESOURCE_FIELDS = frozenset({"memory_limit"})


def _first_field_difference(plan: Any, again: Any, path: str) -> str | None:
    """The dotted path of the first field where ``plan`` and its rebuild ``again`` differ (dataclasses field
    by field, arrays by shape, dtype and value, containers item by item, anything else by ``==``, types
    exactly), or None: every field ``draw`` reads, private or not, is the one the public settings give
    (:data:`RESOURCE_FIELDS` aside)."""
    if type(plan) is not type(again):
        return path
    if dataclasses.is_dataclass(plan):
        # an attribute that is not a field (set by object.__setattr__) can shadow a method draw calls
        names = {f.name for f in dataclasses.fields(plan)}
        cached = {k for klass in inspect.getmro(type(plan)) for k, v in vars(klass).items()
                  if isinstance(v, functools.cached_property)}
        extra = sorted(set(getattr(plan, "__dict__", {})) - names - cached)
        if extra:
            return f"{path}.{extra[0]}"
        for f in dataclasses.fields(plan):
            if f.name not in RESOURCE_FIELDS:
                d = _first_field_difference(getattr(plan, f.name), getattr(again, f.name), f"{path}.{f.name}")
                if d is not None:
                    return d
        return None
    if isinstance(plan, np.ndarray):
        same = plan.shape == again.shape and plan.dtype == again.dtype and np.array_equal(plan, again, equal_nan=True)
        return None if same else path
    if isinstance(plan, (list, tuple)):
        if len(plan) != len(again):
            return path
        for i, (a, b) in enumerate(zip(plan, again)):
            d = _first_field_difference(a, b, f"{path}[{i}]")
            if d is not None:
                return d
        return None
    if isinstance(plan, dict):
        if list(plan) != list(again):
            return path
        for k in plan:
            d = _first_field_difference(plan[k], again[k], f"{path}[{k!r}]")
            if d is not None:
                return d
        return None
    if isinstance(plan, float) and math.isnan(plan) and math.isnan(again):
        return None
    same = plan == again
    return None if isinstance(same, (bool, np.bool_)) and bool(same) else path


def release(plan: ReleasePlan, data: Any, ledger: Any, rng: np.random.Generator | None = None, *,
            fingerprint: str | None = None,
            budget_epsilon: float | None = None, budget_delta: float | None = None, label: str = "",
            mark_completed: bool = True, randomness: dict | None = None, allow_noisy: bool = False) -> ReleaseResult:
    """Check the private data against the plan, charge the ledger, draw; returns a ReleaseResult.

    ``data``: :func:`privgp.records` (or a pair (X, y), or :func:`check_records` of this plan): ``X`` (n x d
    inputs), ``response`` (n raw responses) and ``content_digest`` (what the ledger's keyed fingerprint is computed from, unless
    ``fingerprint`` is given). ``ledger``: a :class:`privgp.Budget` (its epsilon/delta are the
    dataset's budget when it is new to the ledger) or a :class:`privgp.Ledger`. ``rng``: None for
    fresh OS entropy (what a release should use), or a Generator that supplies all randomness
    (``randomness`` then says where it came from in the outputs). A refused charge raises
    BudgetExceededError and nothing is drawn. ``mark_completed=False`` leaves the ledger entry
    "charged" for a caller that still has outputs to write (then call
    ``ledger.complete(result.charge.entry_id)``, or let :func:`privgp.publish.write_release` do it).
    ``allow_noisy``: release over a box the records fill under a tenth of on every side (refused otherwise,
    :func:`check_map_is_possible`), as ``privgp release --allow-noisy``.
    """
    from ..ledger import Budget, Ledger

    inner = plan.plan if isinstance(plan, StatisticsRelease) else plan
    if not all(hasattr(inner, a) for a in ("event", "check", "draw")):   # None was an AttributeError (red team 25)
        raise InvalidParameterError("plan", "a release plan (privgp.plan(...): its event, check and draw; nothing "
                                    "was charged)", type(inner).__name__)
    if isinstance(plan, StatisticsRelease) and (type(plan) is not StatisticsRelease
                                                or isinstance(plan.plan, StatisticsRelease)):
        raise InvalidParameterError("plan", "a plan, or one StatisticsRelease of a plan (not nested, not a subclass; "
                                    "nothing was charged)", type(plan.plan).__name__)
    check_plan(plan.plan if isinstance(plan, StatisticsRelease) else plan)
    if rng is None:
        rng = np.random.default_rng()
        randomness = FRESH_ENTROPY if randomness is None else randomness
    rng = v.generator("rng", rng)
    if randomness is None:
        randomness = dict(CALLER_GENERATOR)
    if _issued(data, plan):
        X, y, key, data = data.X, data.y, _ISSUED[data][4], data.records
    else:
        data = as_records(data.records if isinstance(data, CheckedRecords) else data)
        X, y, key = _checked(plan, data, allow_noisy)
    if isinstance(ledger, Budget):
        budget_epsilon = ledger.epsilon if budget_epsilon is None else budget_epsilon
        budget_delta = ledger.delta if budget_delta is None else budget_delta
        label = label or ledger.label or (ledger.dataset_id or "")
        named = ledger
        ledger = Ledger(ledger.ledger_path, create_on_charge=True)   # a refused charge writes no file
        if named.dataset_id is not None and fingerprint is None:
            fingerprint = named.key(ledger, data)
    elif not isinstance(ledger, Ledger):
        raise InvalidParameterError("ledger", "a privgp.Budget (or a privgp.Ledger)", type(ledger).__name__)
    fp = fingerprint if fingerprint is not None else ledger.fingerprint_of(*key())
    cert = plan.certificate
    charge = ledger.charge(fp, plan.event, epsilon=float(cert.epsilon), delta=float(cert.delta),
                           budget_epsilon=budget_epsilon, budget_delta=budget_delta,
                           default_budget_delta=default_delta(plan.n), description=plan.describe(),
                           settings=to_jsonable(plan.public_settings()), label=label)
    released = plan.draw(X, y, rng)
    if mark_completed:
        ledger.complete(charge.entry_id)
    return _issue_result(ReleaseResult(plan=plan, released=released, charge=charge, fingerprint=charge.fingerprint,
                                      data=data, randomness=randomness, ledger=ledger))


#: the ReleaseResults :func:`release` returned that are still alive, by id: a weak reference and the identities of
#: their fields (:func:`issued_result`)
_ISSUED_RESULTS: dict[int, tuple[weakref.ref, tuple]] = {}


def _fields(result: ReleaseResult) -> tuple:
    return tuple(id(getattr(result, f.name)) for f in dataclasses.fields(result))


def _issue_result(result: ReleaseResult) -> ReleaseResult:
    """Record ``result`` as made by :func:`release` (or by :func:`privgp.publish.write_release` from such a result,
    its plan unwrapped), for :func:`issued_result`; returns it."""
    key = id(result)

    def forget(_ref: weakref.ref) -> None:
        _ISSUED_RESULTS.pop(key, None)

    _ISSUED_RESULTS[key] = (weakref.ref(result, forget), _fields(result))
    return result


def issued_result(result: Any) -> bool:
    """Whether ``result`` is, unchanged, what :func:`release` returned in this process: the same object with the same
    field objects (red team 20d: ``dataclasses.replace`` of its plan, fingerprint or charge certified a draw with
    another plan's epsilon; review 20e: ``object.__setattr__`` of a field). A copy is not."""
    got = _ISSUED_RESULTS.get(id(result))
    return got is not None and got[0]() is result and isinstance(result, ReleaseResult) and got[1] == _fields(result)


def check_site_statistics(sums: Any, counts: Any, size: int, n: int, *, response_bound: float = 1.0) -> np.ndarray:
    """Per-site (or per-cell) statistics reduced elsewhere (a database, a cluster), checked before the charge
    against what the sensitivity assumes: one finite (sum, count) per site, counts whole numbers >= 0 adding up
    to the planned n, and |sum| <= response_bound * count everywhere (responses clipped). Returns the counts, flat."""
    s, c = np.asarray(sums, dtype=float).reshape(-1), np.asarray(counts, dtype=float).reshape(-1)
    if s.size != size or c.size != size:
        raise InvalidParameterError("statistics", f"one sum and one count per site ({size} sites)", (s.size, c.size))
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(c))):
        raise InvalidParameterError("statistics", "finite sums and counts", "non-finite values")
    if np.any(c < 0) or np.any(c != np.round(c)) or int(c.sum()) != n:
        raise InvalidParameterError("counts", f"whole numbers >= 0 adding up to n = {n}",
                                    f"total {float(c.sum()):g}, min {float(c.min()):g}")
    over = np.abs(s) > response_bound * c
    if np.any(over):
        raise InvalidParameterError("sums", f"|sum| <= {response_bound:g} x count at every site (responses clipped "
                                    f"to |y| <= {response_bound:g})", f"{int(np.sum(over))} sites over")
    return c


def occupied_site_points(plan: Any, sums: Any, counts: Any) -> np.ndarray:
    """The coordinates of the occupied sites of a snapped plan's per-site statistics (for its feasibility check
    before the charge), after :func:`check_site_statistics` against the plan's lattice and its n records."""
    rule = plan.site_rule()
    if rule is None:
        raise InvalidParameterError("snap", "an integer >= 1 to release from per-site statistics", plan.snap)
    counts = check_site_statistics(sums, counts, rule.size, plan.n, response_bound=getattr(plan, "M_Y", 1.0))
    return rule.points(np.flatnonzero(counts > 0))


@dataclass(frozen=True, eq=False)
class StatisticsRelease:
    """A plan whose private records were already checked and reduced, in one pass, to the statistics its
    release depends on (``plan.site_rule()``: per-site sums and counts; or ``plan.reduction()``: the plan's
    own sums, e.g. the DP sparse GP's sufficient statistics), by ``privgp release`` from Parquet folders,
    DuckDB or a Dask cluster: :func:`release` checks what the statistics allow (``plan.check_statistics``:
    n, the sampler's memory), charges the plan's event and draws with ``plan.draw_from_statistics``; every
    other attribute is the plan's."""

    plan: Any
    statistics: tuple

    def __getattr__(self, name: str) -> Any:
        if name in ("plan", "statistics"):
            raise AttributeError(name)
        return getattr(self.plan, name)

    def check(self, X: Any, z: Any) -> tuple[Any, Any]:
        """The records were checked in the pass that reduced them; the statistics are checked here."""
        if hasattr(self.plan, "check_statistics"):
            self.plan.check_statistics(*self.statistics)
        return X, z

    def draw(self, X: Any, y: Any, rng: np.random.Generator) -> Any:
        return self.plan.draw_from_statistics(*self.statistics, rng)
