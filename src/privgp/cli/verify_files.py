"""What ``privgp verify`` checks INSIDE the released files, beyond their sha256.

The sha256 list sits in the same editable file as the certificate, so hashes alone only say that the files
beside it are the ones it names. A certificate rebuilt consistently from edited settings (a smaller
target epsilon, another threshold or grid) would then verify against the untouched files of the real
release. These checks tie the hashed files to the settings the certificate states:

* the certificate's own fields (red team 16, G6): only those privgp writes, each of privgp's type and size -- the
  ``dataset`` block's fingerprint the ledger's 64 hex digits, its projection exactly what privgp records for its input
  CRS, versions and ledger ids in their forms, words bounded --, and words that are not what the installed privgp
  writes for the rebuilt certificate (its lemmas, assumptions, warnings; the notes, randomness and source words) a
  note each (``--strict`` fails: an earlier privgp's wording is checked in part too);
* sha256 itself: a mapping of plain file names to 64-hex digests covering every released file the
  certificate lists in ``outputs`` (checked in code, with or without jsonschema; empty for a certificate
  written alone by the Python API, and then nothing is read: verify says the files were NOT checked);
* which files: a certificate that hashes any file must hash every data file and the picture its kind (and a
  release's mechanism) always writes, and no file of privgp's that another kind or mechanism writes (an
  optimize certificate over a release's field.npz, a grid certificate with a paths.npz); an ``account``
  certificate (the calculator) hashes nothing and may not sit beside released files;
* a release's .npz (field.npz, paths.npz, prediction.npz): its response map and grid axes are the
  certificate's, its coordinates are named as the certificate's ``dataset.coordinates`` (never as the file says),
  it is byte for byte ``numpy.savez`` of its arrays (anything outside them -- trailing bytes, zip extra fields,
  comments, gaps, member dates other than numpy's 1980-01-01 -- fails; a clean zip written otherwise is checked in
  part), and it holds exactly the arrays the
  mechanism writes (no key missing or added) from its
  released arrays under the certificate's plan (:meth:`~privgp.mechanisms.interface.Mechanism.released_from_arrays`):
  a noisy grid's or eq. (37)'s map and sd are RECOMPUTED from the released statistics (the sd follows from
  the noise scale, hence from epsilon: a certificate claiming another epsilon over these statistics does not
  match -- statistics drawn by other code with less noise, post-processed by privgp's public code and
  certified at a smaller epsilon, cannot be told apart: verify checks agreement, not how the noise was
  drawn; a release with exactly no noise cannot be told apart either); paths number
  L and lie on the grid; a sparse GP's mean and sd are recomputed from its released m and S (a covariance) on
  its public inducing inputs;
  the .npz is refused unread when its array headers say it holds more than the plan's arrays;
* every other data file (field.csv, paths.csv, prediction.csv, inducing.csv) is what the mechanism's writer
  makes of those arrays (header and numbers), and the GIS files what privgp's GIS writers make of the map;
  files equal to privgp's only to 1e-9 (or, GIS files, only as GIS software reads them) are "checked in part":
  another platform's rounding, or low digits and unread bytes that could carry something else;
* the picture, the forecast and report.html: :mod:`privgp.cli.verify_report`;
* ``privgp optimize``: history.csv has one row per released round with the rebuilt plan's r, eta, round and
  spent epsilon, and queries that are the candidates its rows name, written character for character as privgp
  optimize writes them (other spellings of the same numbers are checked in part: red team 17, H5); summary.json
  holds exactly privgp's fields, each what the plan, the queries, the certificate and (simulated objectives) the
  named function give; queries.png is the plot privgp draws of those queries;
* the JSON files (certificate.json, summary.json, selection.json): their text exactly what privgp writes of the
  parsed document (``json.dumps(value, indent=2)`` and a newline); other white space, escapes or number spellings
  are checked in part (red team 17, H4); the certificate's ledger numbers hold together as the ledger computes them
  (red team 17, H7), the spent epsilon at least the release's own (red team 17b); a file named like privgp's
  (another case, invisible characters, letters of other scripts drawn alike) is privgp's, hashed and read as such
  (red team 17b);
* ``--mechanism posterior-sample-tuned``: selection.json states the certificate's candidates, training split
  and selection budget, at most its number of runs, and the r of the released candidate, whose paths are
  then checked as posterior-sample's.

What the files cannot show: a posterior sample path, the functional mechanism's function and an earlier privgp's
sparse GP's m and S are random or follow from private statistics that are not released, so nothing in them ties them
to the certificate's epsilon, r or n (only their number, shape, grid and response map are checked); the noisy grids'
and eq. (37)'s maps, and a sparse GP's m and S since 2026-11-29 (from its released lattice statistics a and B), are
tied to epsilon through their released statistics.

Only files whose sha256 matched are read (a missing file is reported as missing, not checked). A data
holder who rewrites every file consistently can still publish anything: verify checks what follows from
the certificate, not how the files were made.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import re
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np

from .. import validation
from ..errors import PrivgpError
from . import release_publish as publish

HEX64 = re.compile(r"[0-9a-f]{64}")
#: the longest file name (in bytes) the usual file systems allow
MAX_NAME_BYTES = 255
#: relative tolerance of recomputed released arrays (the same code and inputs: equal up to BLAS rounding)
RTOL = 1e-9


#: the fields privgp writes in each kind of certificate file (another field could only mislead a reader)
FIELDS = {
    "release": frozenset({"privgp_version", "mechanism", "certificate", "calibration", "public_settings", "dataset",
                          "ledger", "randomness", "outputs", "forecast", "notes", "sha256"}),
    "optimize": frozenset({"privgp_version", "status", "stop_reason", "released_rounds", "planned_rounds",
                           "certificate", "calibration", "public_settings", "ledger", "randomness", "notes",
                           "planned_certificate", "kind", "plan_arguments", "sha256", "outputs"}),
}
#: the fields of a certificate object (a release's ``certificate``, the output of ``account --json``)
CERTIFICATE_FIELDS = frozenset({"privgp_version", "mechanism", "event", "epsilon", "delta", "alpha", "alpha_optimised",
                                "rdp", "method", "solved_for", "conversion", "composition", "covered", "public",
                                "details", "lemmas", "assumptions", "warnings"})


#: the longest name of the records (source words, response, coordinates) a certificate may state
MAX_WORDS = 1000


def check_plain_text(obj: Any, where: str = "") -> None:
    """No key or text anywhere in the certificate holds a control, invisible or bidirectional-formatting character
    (:func:`privgp.validation.unsafe_characters`): privgp writes none, and printed by verify they could hide its
    warnings or fake its verdict on a terminal (red team 24)."""
    if isinstance(obj, str):
        if validation.unsafe_characters(obj):
            raise publish.CertificateMismatch(where or "certificate", "text without control, invisible or "
                                              "bidirectional-formatting characters (privgp writes none; printed, they "
                                              "could hide or fake what verify says)")
    elif isinstance(obj, dict):
        for key, val in obj.items():
            path = f"{where}.{validation.escaped(str(key))}" if where else validation.escaped(str(key))
            if isinstance(key, str) and validation.unsafe_characters(key):
                raise publish.CertificateMismatch(path, "a field name without control, invisible or "
                                                  "bidirectional-formatting characters (privgp writes none)")
            check_plain_text(val, path)
    elif isinstance(obj, list):
        for i, val in enumerate(obj):
            check_plain_text(val, f"{where}.{i}")


def check_fields(doc: dict, kind: str | None) -> None:
    """No field privgp does not write, at the top level or in a certificate object; a release's ``dataset.dim``
    is its domain's; no text that could rewrite the terminal (:func:`check_plain_text`)."""
    check_plain_text(doc)
    allowed = FIELDS.get(kind or "", CERTIFICATE_FIELDS | {"public_settings", "calibration"})   # account: a certificate
    parts = [(doc, "", allowed)] + [(doc[k], f"{k}.", CERTIFICATE_FIELDS) for k in ("certificate", "planned_certificate")
                                    if kind != "account" and isinstance(doc.get(k), dict)]
    for obj, where, fields in parts:
        extra = sorted(str(k) for k in obj if k not in fields)
        if extra:
            raise publish.CertificateMismatch(f"{where}{extra[0]}", "not a field privgp writes in this certificate "
                                              "(an added field could only mislead a reader)")
    for obj, where, _ in parts:
        if "privgp_version" in obj or where == "":
            _check_version(obj.get("privgp_version"), f"{where}privgp_version")
    if kind in ("release", "optimize"):
        _check_statements(doc)
    if kind == "optimize":
        if doc.get("status") not in ("completed", "stopped"):
            raise publish.CertificateMismatch("status", "'completed' or 'stopped' (what privgp optimize writes)")
        if "kind" in doc and doc["kind"] != "privgp optimize":
            raise publish.CertificateMismatch("kind", "'privgp optimize' (what privgp optimize writes)")
        reason = doc.get("stop_reason")
        if not (reason is None or isinstance(reason, str) and len(reason) <= MAX_WORDS):
            raise publish.CertificateMismatch("stop_reason", f"text of at most {MAX_WORDS} characters, or null")
        if doc["status"] == "completed" and (doc.get("stop_reason") is not None
                                             or doc.get("released_rounds") != doc.get("planned_rounds")):
            raise publish.CertificateMismatch("status", "'stopped' for a run that released fewer rounds than planned "
                                              "or states a stop reason ('completed' only when every round was "
                                              "released; red team 24)")
    if kind == "release":
        check_dataset(doc)
        dataset, settings = doc.get("dataset"), doc.get("public_settings")
        words = [dataset.get("source"), dataset.get("response"), *(dataset.get("coordinates") or [])] \
            if isinstance(dataset, dict) and isinstance(dataset.get("coordinates") or [], list) else []
        if any(isinstance(w, str) and len(w) > MAX_WORDS for w in words):
            raise publish.CertificateMismatch("dataset", f"a name longer than {MAX_WORDS} characters (the records' "
                                              "words are drawn into the picture and the report)")
        stated = _stated_dim(settings)
        if isinstance(dataset, dict) and "dim" in dataset and stated is not None and dataset["dim"] != stated:
            raise publish.CertificateMismatch("dataset.dim", f"{publish._short(dataset['dim'])} where the public "
                                              f"settings state {publish._short(stated)}")


#: a version privgp states (``privgp.__version__``: PEP 440, a local part such as a commit at most)
VERSION = re.compile(r"[0-9]{1,4}(\.[0-9]{1,4}){0,3}((a|b|rc)[0-9]{1,4})?(\.post[0-9]{1,4})?(\.dev[0-9]{1,4})?"
                     r"(\+[0-9a-z]{1,16}(\.[0-9a-z]{1,16}){0,2})?")


def _check_version(version: Any, field: str) -> None:
    if not (isinstance(version, str) and VERSION.fullmatch(version)):
        raise publish.CertificateMismatch(field, f"a privgp version such as '0.1.0', found {publish._short(version)}")


#: the fields privgp writes in a release's ``dataset`` block (``projection`` only for records projected from a CRS)
DATASET_FIELDS = ("fingerprint", "n", "dim", "coordinates", "response", "source")
#: the fields of a recorded projection (:meth:`privgp.geo.LocalProjection.to_dict`)
PROJECTION_FIELDS = ("input_crs", "metric_crs", "rule", "public")
#: the metric CRS privgp records for records in a geographic CRS (:meth:`privgp.geo.LocalProjection.for_box`)
AEQD = re.compile(r"\+proj=aeqd \+lat_0=(\S+) \+lon_0=(\S+) \+x_0=0 \+y_0=0 \+datum=WGS84 \+units=m \+no_defs")


def _stated_dim(settings: Any) -> Any:
    """The dimension a release's public settings state: their ``dim``, else their domain's (a tuned release
    records no ``dim``: red team 24, its dataset.dim was unchecked); None where they state neither."""
    if not isinstance(settings, dict):
        return None
    if "dim" in settings:
        return settings["dim"]
    domain = settings.get("domain")
    lower = domain.get("lower") if isinstance(domain, dict) else None
    return len(lower) if isinstance(lower, list) else None


def check_dataset(doc: dict) -> None:
    """A release's ``dataset`` block holds exactly the fields privgp writes, each of the type and size privgp writes
    (red team 16, G6: an added field, free text in the projection or a fingerprint of any length carried every
    private record past --strict): the fingerprint is the ledger's (64 hex digits, the ledger block's), n and dim
    integers, the records' words (coordinates, response, source) of bounded length, and the projection exactly what
    :class:`privgp.geo.LocalProjection` records for its input CRS (:func:`_check_projection`)."""
    dataset = doc.get("dataset")
    if not isinstance(dataset, dict):
        raise publish.CertificateMismatch("dataset", "an object (what privgp writes of the records)")
    allowed = (*DATASET_FIELDS, "projection")
    odd = sorted(str(k) for k in dataset if k not in allowed) or [k for k in DATASET_FIELDS if k not in dataset]
    if odd:
        raise publish.CertificateMismatch(f"dataset.{odd[0]}", "not a field privgp writes in the dataset block"
                                          if odd[0] not in DATASET_FIELDS else "missing (privgp writes it)")
    fp, ledger = dataset["fingerprint"], doc.get("ledger")
    if not (isinstance(fp, str) and HEX64.fullmatch(fp)):
        raise publish.CertificateMismatch("dataset.fingerprint", "the ledger's keyed fingerprint (64 lowercase hex "
                                          f"digits), found {publish._short(fp)}")
    if isinstance(ledger, dict) and "fingerprint" in ledger and ledger["fingerprint"] != fp:
        raise publish.CertificateMismatch("dataset.fingerprint", "not the ledger block's fingerprint")
    for key in ("n", "dim"):
        if isinstance(dataset[key], bool) or not isinstance(dataset[key], int) or dataset[key] < 1:
            raise publish.CertificateMismatch(f"dataset.{key}", f"a positive integer, found {publish._short(dataset[key])}")
    coords = dataset["coordinates"]
    if not (isinstance(coords, list) and all(isinstance(c, str) for c in coords)):
        raise publish.CertificateMismatch("dataset.coordinates", "the records' coordinate names")
    for key in ("response", "source"):
        if not isinstance(dataset[key], str):
            raise publish.CertificateMismatch(f"dataset.{key}", f"words, found {publish._short(dataset[key])}")
    for key, name in [*((f"coordinates.{i}", c) for i, c in enumerate(coords)), ("response", dataset["response"])]:
        if validation.starts_like_formula(name):   # privgp refuses such a column before the charge
            raise publish.CertificateMismatch(f"dataset.{key}", "a column name privgp releases (one that starts "
                                              "like a spreadsheet formula is refused before the charge)")
    if "projection" in dataset and dataset["projection"] is not None:
        _check_projection(dataset["projection"])


def _check_projection(projection: Any) -> None:
    """``dataset.projection`` is exactly :meth:`privgp.geo.LocalProjection.to_dict` of the projection
    :meth:`~privgp.geo.LocalProjection.for_box` makes from its input CRS: its four fields, the metric CRS the input
    CRS gives (itself when projected; for a geographic CRS the azimuthal equidistant projection centred on the
    public box, whose centre is the only number it holds), and privgp's words for the rule. The input CRS is the
    data holder's words (bounded, read by pyproj)."""
    where = "dataset.projection"
    if not isinstance(projection, dict):
        raise publish.CertificateMismatch(where, "an object (what privgp records of the projection), or absent")
    odd = sorted(str(k) for k in projection if k not in PROJECTION_FIELDS) or \
        [k for k in PROJECTION_FIELDS if k not in projection]
    if odd:
        raise publish.CertificateMismatch(f"{where}.{odd[0]}", "not a field privgp writes in the projection"
                                          if odd[0] not in PROJECTION_FIELDS else "missing (privgp writes it)")
    crs, metric = projection["input_crs"], projection["metric_crs"]
    if not (isinstance(crs, str) and 0 < len(crs) <= MAX_WORDS and isinstance(metric, str)):
        raise publish.CertificateMismatch(f"{where}.input_crs", f"a CRS of at most {MAX_WORDS} characters")
    try:
        import pyproj

        from ..geo import LocalProjection
        from ..models.domain import Box

        geographic = pyproj.CRS.from_user_input(crs).is_geographic
        if geographic:
            m = AEQD.fullmatch(metric)
            try:
                lat0, lon0 = (float(m.group(1)), float(m.group(2))) if m else (math.nan, math.nan)
            except ValueError:
                lat0 = lon0 = math.nan
            if not (math.isfinite(lat0) and math.isfinite(lon0)):
                raise publish.CertificateMismatch(f"{where}.metric_crs", "the azimuthal equidistant projection "
                                                  "privgp centres on the public box")
            if not (-180.0 <= lon0 <= 180.0 and -90.0 <= lat0 <= 90.0):
                raise publish.CertificateMismatch(f"{where}.metric_crs", "centred outside longitudes [-180, 180] "
                                                  "and latitudes [-90, 90]")
            # for_box's own words, centred on the recorded centre (the public box's: the only number recorded)
            template = LocalProjection.for_box(crs, Box((-1.0, -1.0), (1.0, 1.0)))
            again = LocalProjection(crs, template.target.replace("+lat_0=0.0 +lon_0=0.0",
                                                                 f"+lat_0={lat0!r} +lon_0={lon0!r}", 1))
        else:
            again = LocalProjection.for_box(crs, Box((0.0, 0.0), (1.0, 1.0)))
    except ImportError as exc:
        raise publish.CertificateMismatch(where, f"cannot be checked without privgp's GIS extra ({exc}; pip install "
                                          "'privgp[gis]')") from None
    except publish.CertificateMismatch:
        raise
    except Exception as exc:   # a CRS pyproj cannot read: not one privgp projected from
        raise publish.CertificateMismatch(f"{where}.input_crs", f"not a CRS privgp can use ({type(exc).__name__}: "
                                          f"{str(exc)[:80]})") from None
    want = again.to_dict()
    for key in PROJECTION_FIELDS:
        if projection[key] != want[key]:
            raise publish.CertificateMismatch(f"{where}.{key}", f"{publish._short(projection[key])} where privgp "
                                              f"records {publish._short(want[key])} for this input CRS")


#: the ledger block's numbers (the data holder's statement, but numbers: not a channel for anything else)
LEDGER_NUMBERS = ("budget_epsilon", "budget_delta", "spent_epsilon_before", "spent_epsilon_after", "remaining_epsilon",
                  "releases_after")
#: the ledger block's fields (:meth:`privgp.ledger.Charge.to_dict` with the entry id; optimize adds ``charged``)
LEDGER_FIELDS = frozenset({"entry_id", "fingerprint", "charged", *LEDGER_NUMBERS})
#: a ledger entry id (uuid4().hex)
HEX32 = re.compile(r"[0-9a-f]{32}")
#: what privgp optimize's ledger block says of its charge
OPTIMIZE_CHARGED = "the whole planned run, before round 1"


def _check_statements(doc: dict) -> None:
    """The data holder's statements a certificate repeats -- how the randomness was drawn, its notes, the ledger
    block -- are bounded words and numbers, not room for anything else (red-team round 9, F5)."""
    randomness, notes, ledger = doc.get("randomness"), doc.get("notes"), doc.get("ledger")
    if not (isinstance(randomness, dict) and len(json.dumps(randomness)) <= MAX_WORDS):
        raise publish.CertificateMismatch("randomness", f"an object of at most {MAX_WORDS} characters")
    if not (isinstance(notes, list) and len(notes) <= 10 and all(isinstance(n, str) and len(n) <= MAX_WORDS
                                                                   for n in notes)):
        raise publish.CertificateMismatch("notes", f"at most 10 notes of at most {MAX_WORDS} characters each")
    if isinstance(ledger, dict):
        extra = sorted(str(k) for k in ledger if k not in LEDGER_FIELDS)
        if extra:
            raise publish.CertificateMismatch(f"ledger.{extra[0]}", "not a field privgp writes in the ledger block")
        for key, form in (("entry_id", HEX32), ("fingerprint", HEX64)):
            if key in ledger and not (isinstance(ledger[key], str) and form.fullmatch(ledger[key])):
                raise publish.CertificateMismatch(f"ledger.{key}", f"the ledger's {key} ({form.pattern}), found "
                                                  f"{publish._short(ledger[key])}")
        if "charged" in ledger and ledger["charged"] != OPTIMIZE_CHARGED:
            raise publish.CertificateMismatch("ledger.charged", f"{OPTIMIZE_CHARGED!r} (what privgp optimize writes)")
        releases = ledger.get("releases_after")
        if "releases_after" in ledger and (isinstance(releases, bool) or not isinstance(releases, int)):
            raise publish.CertificateMismatch("ledger.releases_after", f"an integer, found {publish._short(releases)}")
        for key in LEDGER_NUMBERS:
            val = ledger.get(key)
            if key in ledger and not (val is None or isinstance(val, (int, float)) and not isinstance(val, bool)):
                raise publish.CertificateMismatch(f"ledger.{key}", f"a number, found {publish._short(val)}")
        if len(json.dumps(ledger)) > 4 * MAX_WORDS:
            raise publish.CertificateMismatch("ledger", f"a ledger block of at most {4 * MAX_WORDS} characters")
        _check_ledger_numbers(ledger)


def _check_ledger_numbers(ledger: dict) -> None:
    """The ledger block's numbers hold together as privgp computes them (red team 17, H7: a remaining epsilon of
    123456.789 of a budget of 10 passed): finite and not negative, a positive budget, delta below 1, the spent
    epsilon not falling, at least one release after the charge, and the remaining epsilon exactly
    :func:`privgp.ledger.remaining_epsilon` of the budget and the spent epsilon (or, written by privgp before
    2026-11-26, exactly what was left, not rounded down). Against the release's event: :func:`check_ledger_spent`."""
    from ..ledger import remaining_epsilon

    num = {k: float(v) for k in LEDGER_NUMBERS if isinstance(v := ledger.get(k), (int, float))}

    def bad(key: str, why: str) -> publish.CertificateMismatch:
        return publish.CertificateMismatch(f"ledger.{key}", f"{publish._short(ledger.get(key))}: {why} (what privgp's "
                                           "ledger records)")

    for key, v in num.items():
        if not (math.isfinite(v) and v >= 0):
            raise bad(key, "not a finite number >= 0")
    if num.get("budget_epsilon", 1.0) <= 0:
        raise bad("budget_epsilon", "not a budget > 0")
    if "budget_delta" in num and not 0 < num["budget_delta"] < 1:   # red team 20a H2: 0 skipped check_ledger_spent
        raise bad("budget_delta", "not a delta in the open interval (0, 1)")
    if "budget_delta" not in num and any(k in ledger for k in ("spent_epsilon_before", "spent_epsilon_after",
                                                                "remaining_epsilon")):   # review 20c B1: null, absent
        raise bad("budget_delta", "a number in (0, 1) where a spent epsilon is stated (the delta it is spent at)")
    if "releases_after" in num and num["releases_after"] < 1:
        raise bad("releases_after", "fewer than the one release the certificate states")
    before, after, budget = num.get("spent_epsilon_before"), num.get("spent_epsilon_after"), num.get("budget_epsilon")
    if before is not None and after is not None and after < before:
        raise bad("spent_epsilon_after", f"less than the epsilon spent before the release ({before!r})")
    if "remaining_epsilon" in num:
        if budget is None or after is None:
            raise bad("remaining_epsilon", "stated without the budget and the spent epsilon it follows from")
        got = num["remaining_epsilon"]
        if got not in (remaining_epsilon(budget, after), max(budget - after, 0.0)):
            raise bad("remaining_epsilon", f"not what is left of a budget of {budget!r} after {after!r} "
                      f"({remaining_epsilon(budget, after)!r}, rounded down)")


def check_ledger_spent(doc: dict, kind: str | None) -> None:
    """A release's or optimize run's ledger block states a spent epsilon after the charge of at least the least any
    privgp ledger composes the certificate's event to at the budget's delta (:func:`_own_epsilon`; red team 17b:
    "0.25 of 10 spent" after a release of epsilon 5 passed). Run once the event is known to be the rebuilt one."""
    ledger = doc.get("ledger")
    if kind not in ("release", "optimize") or not isinstance(ledger, dict):
        return
    after, delta = ledger.get("spent_epsilon_after"), ledger.get("budget_delta")
    if not (isinstance(after, (int, float)) and isinstance(delta, (int, float))):
        return
    own = _own_epsilon(doc.get("certificate"), float(delta))
    if own is not None and after < own * (1 - 1e-9):
        raise publish.CertificateMismatch("ledger.spent_epsilon_after", f"{publish._short(after)}: less than this "
                                          f"release's own epsilon at the budget's delta ({own!r}, the least any privgp "
                                          "ledger composes its event to)")


def _own_epsilon(certificate: Any, delta: float | None) -> float | None:
    """The least epsilon any privgp ledger composes the certificate's event to at ``delta`` (alone; the improved
    conversion and the profile rule, the most favourable privgp has had): a spent epsilon that includes this
    release is at least that. None where the event or delta cannot be read (checked elsewhere)."""
    if not (isinstance(certificate, dict) and isinstance(certificate.get("event"), dict) and delta is not None
            and 0 < delta < 1):
        return None
    from .. import accounting
    from ..accounting.events import event_from_dict

    try:
        event = event_from_dict(certificate["event"])
        return float(accounting.epsilon(event, delta, conversion="improved", composition="profile").epsilon)
    except (PrivgpError, TypeError, ValueError, KeyError, ArithmeticError):
        return None


def check_sha256_list(doc: dict, kind: str | None) -> None:
    """The recorded ``sha256`` is a mapping {plain file name: lowercase hex digest} that covers every released
    file of ``outputs``; absent only for a certificate of an older privgp (reported, not checked)."""
    if kind == "account":
        if "sha256" in doc:
            raise publish.CertificateMismatch("sha256", "an account certificate (the calculator) has no released files")
        return
    if "sha256" not in doc:
        return
    rec = doc["sha256"]
    if not isinstance(rec, dict):
        raise publish.CertificateMismatch("sha256", f"a mapping of released file names to sha256 digests, "
                                          f"found {publish._short(rec)}")
    for name, digest in rec.items():
        if (not isinstance(name, str) or not name or Path(name).name != name or name in (".", "..") or "\x00" in name
                or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES):
            shown = name if isinstance(name, str) and len(name) <= 120 else publish._short(name)
            raise publish.CertificateMismatch(f"sha256.{shown}", "a plain file name of at most "
                                              f"{MAX_NAME_BYTES} bytes (files sit beside the certificate)")
        # Report.html is not report.html on Linux, but a reader takes it for privgp's (red team 24)
        twin = privgp_twin(name)
        if twin is not None and twin != name:
            raise publish.CertificateMismatch(f"sha256.{_shown(name)}", f"not {twin!r} spelled otherwise: a file named like "
                                              "privgp's would be read as privgp's, though verify reads it as another's")
        if not isinstance(digest, str) or not HEX64.fullmatch(digest):
            raise publish.CertificateMismatch(f"sha256.{name}", "a sha256 digest (64 lowercase hex digits)")
    outputs = doc.get("outputs")
    if outputs is not None:
        if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
            raise publish.CertificateMismatch("outputs", "a list of file names")
        unhashed = [o for o in outputs if o != CERTIFICATE and o not in rec]
        if unhashed:
            raise publish.CertificateMismatch(f"sha256.{unhashed[0]}", "missing: every released file the certificate "
                                              "lists in outputs has its sha256 recorded")
        if len(set(outputs)) != len(outputs) or len(outputs) > len(rec) + 1:
            raise publish.CertificateMismatch("outputs", "each released file once, as privgp writes it (a repeated "
                                              "or extra entry could only carry something else; red team 24)")


#: the files privgp's commands write beside a certificate (data, picture, report, GIS); a certificate may hash only
#: those of its own kind and mechanism (a data holder's other files are hashed only)
RELEASE_DATA = ("field.npz", "field.csv", "paths.npz", "paths.csv", "prediction.npz", "prediction.csv", "inducing.csv",
                "selection.json")
OPTIMIZE_DATA = ("history.csv", "summary.json", "queries.png")
PRIVGP_FILES = frozenset(RELEASE_DATA + OPTIMIZE_DATA + ("excursion.png", "prediction.png", "report.html", "field.tif",
                                                         "excursion.geojson"))
#: letters of other scripts drawn like the Latin letters of privgp's file names (Cyrillic, Greek; Unicode's
#: confusables for a-z), for :func:`privgp_twin`: "r\u0435port.html" (a Cyrillic e) read as report.html (red team 17b)
_LOOK_ALIKES = str.maketrans({
    "\u0430": "a", "\u0435": "e", "\u043e": "o", "\u0440": "p", "\u0441": "c", "\u0443": "y", "\u0445": "x",
    "\u0456": "i", "\u0458": "j", "\u0455": "s", "\u04bb": "h", "\u0501": "d", "\u051b": "q", "\u051d": "w",
    "\u04cf": "l", "\u0261": "g", "\u03bf": "o", "\u03b1": "a", "\u03bd": "v", "\u03b9": "i", "\u03ba": "k",
    "\u03c1": "p", "\u03c4": "t", "\u03c5": "u", "\u0131": "i", "\u0251": "a", "\u01c0": "l", "\u2024": ".",
    "\uff0e": ".", "\u3002": "."})


def _skeleton(name: str) -> str:
    """A file name as a reader sees it: compatibility forms and letter case folded, invisible characters dropped and
    letters of other scripts drawn like Latin ones read as those."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    visible = "".join(c for c in folded if unicodedata.category(c) != "Cf" and not validation.unsafe_characters(c))
    return visible.translate(_LOOK_ALIKES)


CERTIFICATE = "certificate.json"
#: the entries of a release's folder the certificate does not cover that verify names one by one (then a count)
MAX_UNCOVERED_SHOWN = 20
#: privgp's file names, keyed by :func:`_skeleton` (case-folded NFKC, invisible characters dropped, look-alikes read)
_PRIVGP_FOLDED = {_skeleton(n): n for n in PRIVGP_FILES}
_CERT_FOLDED = _skeleton(CERTIFICATE)


def _shown(name: str) -> str:
    """A file name as verify prints it: every character that is not printable ASCII escaped (a look-alike of a privgp
    name must not read as that name in the verdict), and quoted when it starts or ends with a space (red team 19e:
    "field.npz " read as privgp's field.npz)."""
    if name != name.strip(" "):
        return repr(name) if name.isascii() and name.isprintable() else ascii(name)
    return name if name.isascii() and name.isprintable() else ascii(name)[1:-1]


def privgp_twin(name: str) -> str | None:
    """The privgp file name that ``name`` reads as (itself, another letter case, a look-alike), else None."""
    return _PRIVGP_FOLDED.get(_skeleton(name))


#: GDAL's sidecar files, which GIS software reads with a GeoTIFF field.tif and applies to it, are named after it in
#: any letter case: field.tif.aux.xml, .ovr, .msk, .aux, field.aux, world files field.tfw / field.wld, RPC metadata
#: field_rpc.txt, ... so any entry whose name starts (in any case) with the GeoTIFF's stem and "." or "_" and that is
#: not one of privgp's files the certificate covers is refused (red team 24: field.tif.OVR and .MSK passed)
GDAL_SIDECAR_SEPARATORS = (".", "_")
#: the most bytes a released .npz may hold beyond its plan's arrays before it is read (a decompression bomb)
NPZ_SLACK_BYTES = 64 * 2**20


#: the released GIS files whose sidecars GIS software reads (GDAL: .aux.xml, .ovr, .msk, world files; QGIS: .qml
#: styles applied when the layer loads, .qmd metadata, .sld; red team 19c: excursion.qml made the excursion layer
#: transparent and verify passed it)
GIS_SUFFIXES = (".tif", ".geojson")


#: names GDAL reads beside any GeoTIFF, whatever it is called (red team 19e: a METADATA.DIM beside field.tif showed
#: "EPSILON=0.001" as the map's metadata; summary.txt likewise; HDRld.txt and RPCld.txt from GDAL's sources), in any case
GDAL_FIXED_SIDECARS = ("metadata.dim", "summary.txt", "hdrld.txt", "rpcld.txt")


def gdal_sidecars(folder: Path, ok: set[str]) -> list[str]:
    """The entries of ``folder`` that GIS software may read as sidecars of a hashed GeoTIFF or GeoJSON
    (:data:`GIS_SUFFIXES`, :data:`GDAL_SIDECAR_SEPARATORS`), other than privgp's own files that the certificate covers
    (``ok``: their sha256 matched)."""
    stems = tuple(n.lower()[:-len(suffix)] + sep for n in ok for suffix in GIS_SUFFIXES if n.lower().endswith(suffix)
                  for sep in GDAL_SIDECAR_SEPARATORS)
    if not stems:
        return []
    own = {n for n in ok if n in PRIVGP_FILES}
    fixed = GDAL_FIXED_SIDECARS if any(n.lower().endswith(".tif") for n in ok) else ()
    return sorted(e.name for e in folder.iterdir() if (e.name.lower().startswith(stems) or e.name.lower() in fixed)
                  and e.name not in own)


def check_contents(doc: dict, kind: str | None, folder: Path, files: dict[str, str],
                   certificate: Path | None = None) -> list[str]:
    """Raise :class:`~privgp.cli.release_publish.CertificateMismatch` when a released file (one whose sha256
    matched) disagrees with the settings the certificate states, a file its kind always writes is not hashed, or
    it hashes another kind's or mechanism's file (module docstring). Returns notes on files checked only in part
    (``--strict`` fails on them). ``certificate``: the verified certificate's path (None: ``folder``/certificate.json)."""
    ok = {name for name, state in files.items() if state == "ok"}
    certificate = folder / CERTIFICATE if certificate is None else certificate
    verified = certificate.read_bytes() if certificate.is_file() else None

    def is_certificate(e: Path) -> bool:
        """The verified certificate, or a byte-for-byte copy of it (``--files DIR`` holding its copy)."""
        with contextlib.suppress(OSError):
            if e.samefile(certificate):
                return True
            # sizes first: red team 20d read every uncovered file whole (1 GB beside a release: 1.1 GB of memory)
            return (verified is not None and e.is_file() and not e.is_symlink() and e.stat().st_size == len(verified)
                    and e.read_bytes() == verified)
        return False

    notes: list[str] = []
    if kind in ("release", "optimize"):
        # red team 20a M2: Certificate.json, CERTIFICATE.JSON or a Cyrillic look-alike stating another epsilon beside
        # it; review 20c B2: a certificate.json beside the verified real.json. With --files DIR elsewhere: a note
        second = sorted(e.name for e in folder.iterdir() if _skeleton(e.name) == _CERT_FOLDED and not is_certificate(e))
        if second and certificate.parent.resolve() == folder.resolve():
            raise publish.CertificateMismatch(_shown(second[0]), "reads as certificate.json beside it: a second "
                                              "certificate a reader may open instead of the one verified")
        if certificate.parent.resolve() != folder.resolve():   # --files DIR elsewhere: the certificate's own folder
            own = sorted(e.name for e in certificate.parent.iterdir() if _skeleton(e.name) == _CERT_FOLDED
                         and not is_certificate(e))   # red team 20d M1: a forged certificate.json beside real.json
            notes += [f"{_shown(name)} (in {_shown(str(certificate.parent))}, beside the verified certificate): another "
                      "certificate, which a reader may open instead; not checked" for name in own]   # review 20e F1
        notes += [f"{_shown(name)}: a certificate beside the files other than the one verified: not checked"
                  for name in second]
        # privgp's names, and names read as privgp's (Report.html, look-alikes: red team 17b), unhashed beside it
        beside = sorted(e.name for e in folder.iterdir() if e.name not in files and e.name != CERTIFICATE
                        and privgp_twin(e.name) is not None and e.is_file())
        if beside:
            raise publish.CertificateMismatch(_shown(beside[0]), "lies beside the certificate, which does "
                                              "not hash it: a file "
                                              "of privgp's the certificate does not cover cannot be checked (write a "
                                              "release with privgp.publish.write_release, which hashes every file)")
    sidecars = gdal_sidecars(folder, ok)
    if sidecars:
        raise publish.CertificateMismatch(validation.escaped(sidecars[0]), "lies beside the GeoTIFF or GeoJSON: GIS "
                                          "software may apply it to the map (scales, nodata, masks, overviews, "
                                          "georeferencing, styles, metadata; GDAL and QGIS find these names in any "
                                          "letter case) though no certificate covers it; GDAL and QGIS write such a "
                                          "file when they compute a map's statistics: remove it and verify again")
    if kind == "account":   # privgp's names and names read as privgp's (red team 19e: Report.html, FIELD.TIF)
        beside = sorted(e.name for e in folder.iterdir() if e.name != CERTIFICATE
                        and privgp_twin(e.name) is not None and e.is_file())
        if beside:
            raise publish.CertificateMismatch(beside[0], "lies beside an account certificate, which certifies a "
                                              "planned release and no released file: it is not this certificate's")
        return []
    if kind == "release":
        gis: list[tuple[Any, Any, Any]] = []
        rebuilt = _check_release(doc, folder, files, notes, gis)
        from .verify_report import check_forecast, check_picture, check_report

        drawn = None
        # the forecast needs the public settings only: checked whatever files could be read (red team 17b: a mostly
        # noise release, its data files removed, passed with its forecast edited to "IoU 0.83")
        fc, note = check_forecast(doc, rebuilt[1] if rebuilt is not None else _rebuilt_plan(doc))
        notes += note
        if rebuilt is not None:
            for writer, plan, released in gis:   # they state the forecast's mostly-noise flag
                _check_gis(doc, folder, files, writer, plan, released, notes, fc)
            drawn, more = check_picture(doc, folder, files, rebuilt, fc)
            notes += more
        else:
            mech_picture = _registered_picture(doc)
            notes += [f"{name}: hashed only, not drawn again: the released map it shows could not be read"
                      for name in (mech_picture, "field.tif", "excursion.geojson") if name in ok]
        if "report.html" in ok:
            notes += check_report(doc, folder, files, rebuilt, drawn)
    if kind == "optimize":
        notes += _check_optimize(doc, folder, files) + stopped_run_notes(doc)
    if kind in ("release", "optimize"):   # red team 20a M1: the raw records beside a verified release, unmentioned
        uncovered = [e for e in sorted(folder.iterdir(), key=lambda e: e.name) if e.name not in files
                     and not is_certificate(e) and _skeleton(e.name) != _CERT_FOLDED]
        notes += [f"{_shown(e.name)}{'/' if e.is_dir() else ''}: in the folder but not covered by the certificate, so "
                  "not checked: privgp writes no such file (publish it only if you mean to)"
                  for e in uncovered[:MAX_UNCOVERED_SHOWN]]
        if len(uncovered) > MAX_UNCOVERED_SHOWN:   # red team 20b: 10^5 entries made a 13.6 MB verdict line
            notes.append(f"and {len(uncovered) - MAX_UNCOVERED_SHOWN} more entries in the folder not covered by the "
                         "certificate")
    if kind in ("release", "optimize"):   # red team 19c: a page renamed report.htm, raw records listed in outputs
        outputs = doc.get("outputs") or []
        notes += [f"{_shown(name)}: hashed only, not read: not a file privgp writes, so nothing it says is checked"
                  + (" (outputs lists it, so the report names it among the released files)" if name in outputs else "")
                  for name in sorted(ok - PRIVGP_FILES)]
    return notes


def stopped_run_notes(doc: dict) -> list[str]:
    """An optimize run that stopped early: its certificate covers the released rounds only if the stop did not
    depend on private responses, which verify cannot know (a stop caused by a response -- e.g. "abort when a
    value exceeds a limit" -- is a release no finite epsilon covers); and a stop reason in words other than
    privgp's fixed ones (an older privgp published the objective's own message, which may hold private values)."""
    if doc.get("status") != "stopped":
        return []
    from ..tasks.thompson import public_stop_reason

    k = doc.get("released_rounds")
    notes = [f"the run stopped early (round {k}): its certificate covers the released rounds only if the stop did not "
             "depend on the private responses, which verify cannot check (the data holder's statement); the planned "
             "certificate covers the planned run, not a data-dependent stop"]
    if not (isinstance(k, int) and doc.get("stop_reason") == public_stop_reason(k)):
        notes.append("stop_reason: not privgp's fixed words (an earlier privgp published the objective's own "
                     "message, which may hold private values)")
    return notes


def _mismatch(field: str, reason: str) -> publish.CertificateMismatch:
    from ..mechanisms.interface import file_mismatch

    return file_mismatch(field, reason)


def _require(files: dict[str, str], names, what: str) -> None:
    """Every name must be hashed (listed in sha256): the files ``what`` always writes."""
    for name in names:
        if name not in files:
            raise publish.CertificateMismatch(f"sha256.{name}", f"missing: {what} always writes {name}, and a "
                                              "certificate that hashes some released files must hash it too")


def _foreign(files: dict[str, str], allowed, what: str) -> None:
    """No hashed file of privgp's is one that ``what`` does not write (another mechanism's or kind's)."""
    for name in files:
        if name in PRIVGP_FILES and name not in allowed:
            raise publish.CertificateMismatch(f"sha256.{name}", f"{what} does not write {name}: a certificate covers "
                                              "only its own release's files")


def released_counts_total(doc: dict, kind: str | None, folder: Path, files: dict[str, str]) -> dict | None:
    """A noisy grid's released counts against the n its certificate states (red team 19e: verify refuses an n over 20
    standard deviations of the counts' total away, and at a small epsilon that is a wide band, so the numbers are
    shown for a reader to judge): {"stated_n", "released_counts_total", "noise_sd_of_total"}, or None for a
    release that releases no counts (or whose field.npz was not hashed and read)."""
    if kind != "release" or files.get("field.npz") != "ok":
        return None
    plan = _rebuilt_plan(doc)
    if "counts" not in getattr(plan, "statistics_names", ()) or not hasattr(plan, "_released_noise_std"):
        return None
    with np.load(folder / "field.npz", allow_pickle=False) as z:
        if "released_counts" not in z.files:
            return None
        counts = np.asarray(z["released_counts"], dtype=float)
    return {"stated_n": int(plan.n), "released_counts_total": float(counts.sum()),
            "noise_sd_of_total": float(plan._released_noise_std() * np.sqrt(counts.size))}


def _rebuilt_plan(doc: dict) -> Any:
    """The release's plan rebuilt from its certificate's public settings alone (no file read)."""
    from ..mechanisms.interface import Recorded, registry

    return registry()[doc["mechanism"]].rebuild(Recorded(doc))


def _registered_picture(doc: dict) -> str:
    """The picture's file name of the release's mechanism."""
    from ..mechanisms.interface import registry

    return str(registry()[doc["mechanism"]].picture)


def _check_release(doc: dict, folder: Path, files: dict[str, str], notes: list[str] | None = None,
                   gis: list[tuple[Any, Any, Any]] | None = None) -> tuple[Any, Any, Any] | None:
    """(mechanism, rebuilt plan, released map or None) once the files are checked; None where they could not all
    be read (nothing hashed, a file missing). The GIS files are checked after the forecast (:func:`_check_gis`):
    ``gis`` receives (writer, plan, released) for them; without it they are checked here, without a forecast."""
    """A release's hashed files: the mechanism's data files and picture are all hashed and no other mechanism's
    is; its .npz holds exactly the arrays the mechanism writes from the released arrays under the certificate's
    plan (a noisy grid's map and sd recomputed from its released statistics: the sd follows from the noise
    scale, hence from epsilon; paths number L), and every other data file is what the mechanism's writer makes
    of them (CSV headers and values)."""
    from ..mechanisms.interface import Recorded, registry

    if not files:
        return None   # nothing hashed (a certificate written alone): verify says the files were not checked
    mech = registry()[doc["mechanism"]]
    what = f"a {mech.name} release"
    _foreign(files, (*mech.data_files, mech.picture, "report.html", "field.tif", "excursion.geojson"), what)
    _require(files, [mech.picture], what)
    if files[mech.picture] == "ok":
        _png(mech.picture, (folder / mech.picture).read_bytes())
    plan = mech.rebuild(Recorded(doc))
    writer, full = mech, plan
    if mech.name == "posterior-sample-tuned":
        _require(files, ["selection.json"], what)
        if files["selection.json"] != "ok":
            present = sorted(n for n in mech.data_files if n != "selection.json" and files.get(n) == "ok")
            if present:
                raise _mismatch(present[0], "cannot be checked: selection.json, which says what was released, is "
                                "missing")
            return None
        sel = _check_selection(doc, folder / "selection.json", notes)
        if not sel.get("selected"):
            _foreign(files, ("selection.json", mech.picture, "report.html"), "a tuned release that selected nothing")
            return mech, plan, None
        chosen = list(plan.lengthscales).index(sel["lengthscale"])   # checked by _check_selection
        plan = plan.plans[chosen]
        writer = registry()["posterior-sample"]   # the chosen candidate's path, written as posterior-sample does
    if writer.npz is None:
        return None
    _require(files, [writer.npz], what)
    if files[writer.npz] != "ok":   # missing: reported by verify (and refused by --strict) if nothing depends on it
        present = sorted(n for n in writer.data_files if n != writer.npz and files.get(n) == "ok")
        if present:
            raise _mismatch(present[0], f"cannot be checked: {writer.npz}, which it is written from, is missing")
        return None
    arrays = _load_npz(folder / writer.npz, writer.npz, plan)
    _check_npz(doc, arrays, writer.npz)
    released = writer.released_from_arrays(arrays, plan)
    expected = _expected_files(doc, writer, released, plan, arrays)
    _require(files, [f.name for f in expected], what)
    for f in expected:
        if files[f.name] == "ok":
            note = _same_file(f, folder / f.name, arrays if f.name == writer.npz else None, writer.name)
            if note is not None and notes is not None:
                notes.append(note if note.startswith(f"{f.name}: ") else f"{f.name}: {note}")
    stated = (writer, plan, released)   # what the GIS files are written from, under the certificate's guarantee
    if mech.name == "posterior-sample-tuned":   # the whole selection's (red team 18b: not the chosen run's)
        from ..mechanisms.private_selection import SelectionResult

        stated = (mech, full, SelectionResult.published(chosen, sel["lengthscale"], (plan, released), full.budget))
    if gis is None:
        _check_gis(doc, folder, files, *stated, [] if notes is None else notes, None)
    else:
        gis.append(stated)
    return mech, full, writer.fields(released, plan)


def _expected_files(doc: dict, writer: Any, released: Any, plan: Any, arrays: dict[str, np.ndarray]) -> list[Any]:
    """The data files privgp writes from the released arrays (:func:`privgp.publish.data_files`): named by the
    certificate's ``dataset.coordinates`` (never by the file under test), or, under a recorded projection from a CRS,
    x_m, y_m with the certificate's input coordinates beside them in the CSVs. An .npz that names its coordinates
    otherwise fails."""
    from ..publish import data_files

    dataset = doc.get("dataset")
    dataset = dataset if isinstance(dataset, dict) else {}
    projection, dim = dataset.get("projection"), plan.domain.dim
    names = dataset.get("coordinates")
    if not (isinstance(names, list) and len(names) == dim and all(isinstance(c, str) and c for c in names)):
        raise publish.CertificateMismatch("dataset.coordinates", f"{dim} coordinate names (the records' columns)")
    if projection is None:
        files = writer.files(released, plan, list(names))
        _same_coordinates(arrays, files, writer.npz, False)
        return files
    try:
        files = data_files(writer, released, plan, names, projection)
    except ImportError as exc:
        raise _mismatch(writer.npz, f"cannot be checked without privgp's GIS extra ({exc}; pip install "
                        "'privgp[gis]')") from None
    except Exception as exc:   # a projection privgp cannot use: not one it wrote
        raise publish.CertificateMismatch("dataset.projection", f"not a projection privgp can use "
                                          f"({type(exc).__name__}: {str(exc)[:80]})") from None
    written = _file_names(files, writer.npz)
    if written != names and all(f"axis_{c}" in arrays for c in names) and \
            not any(f"axis_{c}" in arrays for c in written):
        raise _mismatch(writer.npz, f"its axes are named {', '.join(names)} but hold the projected metres: files "
                        "of an earlier privgp, whose --crs outputs used the input's coordinate names for them; this "
                        "privgp writes x_m, y_m with the input coordinates beside them (verify them with the privgp "
                        "that wrote them, or release again)")
    _same_coordinates(arrays, files, writer.npz, True)
    return files


def _same_coordinates(arrays: dict[str, np.ndarray], files: list[Any], npz: str | None, projected: bool) -> None:
    """The .npz names its coordinates as privgp does from the CERTIFICATE (``dataset.coordinates``, or x_m, y_m under
    a projection): its ``axis_<name>`` keys, in order, and its ``coordinates`` array where privgp writes one. Names
    in a released file are never taken from the file itself (red team 15, F4: axis names holding every private
    record passed --strict); the CSV headers are then compared with the headers built from these names."""
    want = _file_names(files, npz)
    got = [k[len("axis_"):] for k in arrays if k.startswith("axis_")]
    expected = next((f for f in files if f.name == npz), None)
    coords = None if expected is None else expected.arrays.get("coordinates")
    names_ok = got == want
    coords_ok = coords is None or ("coordinates" in arrays and arrays["coordinates"].dtype.kind == "U"
                                   and arrays["coordinates"].ndim == 1
                                   and [str(c) for c in arrays["coordinates"]] == [str(c) for c in np.asarray(coords)])
    if not (names_ok and coords_ok):
        shown = (", ".join(repr(c) if len(c) <= 40 else repr(c[:37]) + "..." for c in got) if not names_ok
                 else "differently in its coordinates array")
        raise _mismatch(str(npz), f"names its coordinates {shown} where privgp names them {', '.join(want)} (from the "
                        f"certificate's dataset.coordinates{', projected to metres' if projected else ''}): names "
                        "that are not the certificate's could carry anything")


def _file_names(files: list[Any], npz: str | None) -> list[str]:
    """The coordinate names of the .npz privgp writes (its ``axis_<name>`` keys)."""
    for f in files:
        if f.name == npz:
            return [k[len("axis_"):] for k in f.arrays if k.startswith("axis_")]
    return []


def _check_gis(doc: dict, folder: Path, files: dict[str, str], writer: Any, plan: Any, released: Any,
               notes: list[str], forecast: Any = None) -> None:
    """field.tif and excursion.geojson: hashed exactly when the certificate records a projection from a CRS (a
    2-D map), and each what privgp's GIS writers make of the released map (regenerated and compared: the
    GeoTIFF's bands, their descriptions and units, georeferencing and tags, the GeoJSON's polygons and stated
    epsilon, delta, threshold; in GIS format 2 also the reliability marks and ``forecast``'s mostly-noise flag
    and note). A file in an earlier privgp's GIS format (:data:`privgp.publish.GIS_FORMATS`, told apart by its
    content) is checked in part, with a note: it lacks what the installed privgp states."""
    from types import SimpleNamespace

    from ..mechanisms.release import ReleaseResult
    from ..publish import GEOJSON, GEOTIFF, GIS_FORMAT, GIS_FORMATS, write_geojson, write_geotiff

    dataset = doc.get("dataset")
    projection = dataset.get("projection") if isinstance(dataset, dict) else None
    wanted = projection is not None and plan.domain.dim == 2 and writer.fields(released, plan) is not None
    if not wanted:
        for name in (GEOTIFF, GEOJSON):
            if name in files:
                raise publish.CertificateMismatch(f"sha256.{name}", "written only for a 2-D map projected from a CRS, "
                                                  "which this certificate does not record")
        return
    _require(files, (GEOTIFF, GEOJSON), "a release projected from a CRS")
    result = ReleaseResult(plan=plan, released=released, charge=None, fingerprint="",
                           data=SimpleNamespace(projection=projection, response_name=doc["dataset"].get("response")))
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name, write, same in ((GEOJSON, write_geojson, _same_geojson), (GEOTIFF, write_geotiff, _same_geotiff)):
            if files[name] != "ok":
                continue
            got = (folder / name).read_bytes()
            for fmt in (GIS_FORMAT, *sorted(set(GIS_FORMATS) - {GIS_FORMAT}, reverse=True)):
                try:
                    again = write(result, Path(tmp) / f"{fmt}{name}", mechanism=writer.name, forecast=forecast,
                                  gis_format=fmt)
                except ImportError as exc:
                    raise _mismatch(name, f"cannot be checked without privgp's GIS extra ({exc}; pip install "
                                    "'privgp[gis]')") from None
                except Exception as exc:   # a projection the writers cannot use: not what privgp wrote
                    raise _mismatch(name, f"cannot be regenerated from the certificate's projection "
                                    f"({type(exc).__name__}: {str(exc)[:80]})") from None
                older = "" if fmt == GIS_FORMAT else (
                    f"{name}: checked in part: in privgp's earlier GIS format {fmt}, not the installed {GIS_FORMAT} "
                    "(it does not mark where the map is unreliable nor say whether it is mostly noise; rebuilt in "
                    f"format {fmt}, the same)")
                if got == again.read_bytes():
                    notes += [older] if older else []
                    break
                if same(folder / name, again):
                    notes += ([older] if older else []) + [
                        f"{name}: checked in part (what privgp writes, read as GIS software reads it, but not byte "
                        "for byte: another GDAL or platform, or bytes that carry something else)"]
                    break
            else:
                raise _mismatch(name, "not what privgp writes from the released map under the certificate's "
                                "settings (its map, georeferencing, bands and their units, reliability marks or "
                                "stated epsilon, delta, threshold, mostly-noise flag)")


def _same_json(a: Any, b: Any) -> bool:
    """Equal JSON values, numbers to 1e-9 relative (coordinates printed by another platform)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return type(a) is type(b) and a == b


def _same_geojson(path: Path, again: Path) -> bool:
    return _same_json(_read_json(path, path.name), json.loads(again.read_text(encoding="utf-8")))


def _same_geotiff(path: Path, again: Path) -> bool:
    import rasterio

    try:
        with rasterio.open(path) as a, rasterio.open(again) as b:
            if (a.count, a.width, a.height, a.dtypes, a.descriptions, a.tags(), a.crs, a.transform) != \
                    (b.count, b.width, b.height, b.dtypes, b.descriptions, b.tags(), b.crs, b.transform):
                return False
            if any((a.tags(i), a.units[i - 1]) != (b.tags(i), b.units[i - 1]) for i in range(1, a.count + 1)):
                return False   # the bands' own tags (their units)
            if (a.scales, a.offsets, a.nodatavals, a.colorinterp, a.mask_flag_enums, a.gcps[0]) != \
                    (b.scales, b.offsets, b.nodatavals, b.colorinterp, b.mask_flag_enums, b.gcps[0]):
                return False   # what GIS software applies to the pixels before showing them
            if any(a.overviews(i) != b.overviews(i) for i in range(1, a.count + 1)) or \
                    set(a.tag_namespaces()) != set(b.tag_namespaces()) or \
                    any(a.tags(ns=ns) != b.tags(ns=ns) for ns in a.tag_namespaces()):
                return False   # overviews (another map at lower zoom) and tags in other metadata domains
            return bool(np.array_equal(a.read(), b.read(), equal_nan=True))
    except rasterio.errors.RasterioError:
        return False


def _png(name: str, data: bytes) -> None:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 24:
        raise _mismatch(name, "not a PNG image")


def _load_npz(path: Path, name: str, plan: Any) -> dict[str, np.ndarray]:
    """The arrays of a released .npz, after its array headers say it holds no more than the plan's arrays (plus
    :data:`NPZ_SLACK_BYTES`): a small file that inflates to gigabytes is refused before it is read."""
    import zipfile

    grid = getattr(plan, "grid", (1,))
    paths = int(np.prod(getattr(grid, "sizes", grid))) * max(1, int(getattr(plan, "L", 1)))
    spec = getattr(plan, "spec", None)   # a sparse GP also writes k x k matrices (S, and B since 2026-11-29)
    k = int(getattr(spec, "n_inducing", 0) or 0)
    limit = 64 * 8 * paths + 4 * 8 * (k * k + k) + NPZ_SLACK_BYTES   # red team 21b M1: B was not counted
    try:
        total = 0
        with zipfile.ZipFile(path) as zf:
            if zf.comment or any(info.comment for info in zf.infolist()):
                raise _mismatch(name, "an archive with comments (numpy writes none; they could hold anything)")
            names = [info.filename for info in zf.infolist()]
            if len(set(names)) != len(names):
                raise _mismatch(name, "an archive holding one array name twice (readers disagree on which counts)")
            for info in zf.infolist():
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                        np.lib.format.read_array_header_2_0
                    shape, _, dtype = read(fh)
                total += int(np.prod(shape, dtype=float)) * max(1, dtype.itemsize)
                if total > limit:
                    raise _mismatch(name, f"its arrays hold more than {limit} bytes, more than the release's own")
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except publish.CertificateMismatch:
        raise
    except Exception as exc:  # any unreadable archive (BadZipFile, a pickled member, a truncated array): not ours
        raise _mismatch(name, f"not a readable .npz ({type(exc).__name__}: {str(exc)[:80]})") from None


def _check_npz(doc: dict, arrays: dict[str, np.ndarray], name: str) -> None:
    """The response map and grid axes of a released .npz are the certificate's (named field by field)."""
    from ..mechanisms.interface import Recorded

    recorded = Recorded(doc)
    rm = recorded.response_map()
    for key, want in (("threshold", rm.threshold), ("clip", rm.clip)):
        if key in arrays and not (arrays[key].shape == () and arrays[key].dtype.kind in "fi"
                                  and float(arrays[key]) == float(want)):
            raise _mismatch(f"{name}.{key}", f"{arrays[key]!r} where the certificate states {want!r}")
    if "transform" in arrays and str(arrays["transform"]) != rm.transform:
        raise _mismatch(f"{name}.transform", f"{str(arrays['transform'])!r} where the certificate states {rm.transform!r}")
    recorded.grid_points()  # the recorded per-axis grid, checked
    domain, grid = recorded.domain(), tuple(int(m) for m in recorded.setting("grid"))
    axes = [k for k in arrays if k.startswith("axis_")]
    if len(axes) != domain.dim or len(grid) != domain.dim:
        raise _mismatch(name, f"{len(axes)} grid axes for a {domain.dim}-D domain")
    for j, key in enumerate(axes):
        line = np.linspace(domain.lower[j], domain.upper[j], grid[j])
        got = arrays[key]
        if got.shape != line.shape or got.dtype.kind not in "fi" or not np.allclose(got, line, rtol=RTOL, atol=0.0):
            raise _mismatch(f"{name}.{key}", f"a grid axis of {got.size} points where the certificate states "
                            f"{grid[j]} over [{domain.lower[j]:g}, {domain.upper[j]:g}]")


#: the note of a data file whose numbers equal privgp's only to 1e-9
TOLERANCE_NOTE = ("checked in part (its numbers equal what privgp writes to 1e-9 relative, not exactly: another "
                  "platform's rounding, or low digits that carry something else)")


def _same_file(expected: Any, path: Path, arrays: dict[str, np.ndarray] | None, mechanism: str) -> str | None:
    """A hashed data file holds what the mechanism's writer makes of the released arrays: a .npz exactly its
    arrays (no key missing or added; numbers to :data:`RTOL`) and nothing else (:func:`_npz_bytes`), a CSV its
    header and numbers (written to 10 significant digits); raises otherwise. None when equal exactly (the .npz
    byte for byte what numpy writes of its arrays, which equal privgp's bit for bit; the CSV character for
    character), else the note of a file checked only in part. JSON files have their own check."""
    from ..mechanisms.interface import CsvFile, NpzFile

    why = f"not what {mechanism} writes from the released arrays under the certificate's settings"
    if isinstance(expected, NpzFile):
        got = arrays if arrays is not None else _load_npz(path, expected.name, None)
        want = {k: np.asarray(v) for k, v in expected.arrays.items()}
        extra, lacking = sorted(set(got) - set(want)), sorted(set(want) - set(got))
        if extra or lacking:
            key = (extra or lacking)[0]
            raise _mismatch(f"{expected.name}.{key}", ("an array the mechanism does not write" if extra else
                                                       "missing from the released file"))
        exact = True
        for key, w in want.items():
            g = got[key]
            if w.dtype.kind in "fc":
                same = g.shape == w.shape and g.dtype.kind in "fi" and np.allclose(g, w, rtol=RTOL, atol=1e-12)
                exact = exact and same and g.dtype == w.dtype and np.array_equal(g, w, equal_nan=True)
            else:
                same = g.shape == w.shape and g.dtype.kind == w.dtype.kind and np.array_equal(g, w)
            if not same:
                raise _mismatch(f"{expected.name}.{key}", why + (" (the released sd follows from the noise scale, "
                                                                 "hence from epsilon)" if key == "sd" else ""))
        note = _npz_bytes(path, expected.name, got, list(want))
        return note if note is not None else None if exact else TOLERANCE_NOTE
    elif isinstance(expected, CsvFile):
        from ..publish import csv_text

        try:   # the bytes: reading as text would turn "\r\n" and "\r" into "\n" (a channel, red team 19)
            raw = path.read_bytes()
            text = raw.decode("utf-8")
        except (OSError, ValueError) as exc:
            raise _mismatch(expected.name, f"not a readable CSV ({type(exc).__name__})") from None
        if raw == csv_text(expected).encode("utf-8"):   # privgp's writer, byte for byte: nothing left to parse
            return None
        try:
            head, _, body = text.partition("\n")
            lines = body.splitlines()
            if any(not ln.strip() for ln in lines):
                raise ValueError("a blank line")
            values = np.loadtxt(io.StringIO(body), delimiter=",", ndmin=2, comments=None) if lines else np.zeros((0, 0))
        except (OSError, ValueError) as exc:
            raise _mismatch(expected.name, f"not a readable CSV ({type(exc).__name__})") from None
        want_cols = np.asarray(expected.columns, dtype=float)
        if head.strip() != ",".join(expected.header):
            raise _mismatch(expected.name, f"header {head.strip()[:80]!r} where the mechanism writes "
                            f"{','.join(expected.header)[:80]!r}")
        if values.shape != want_cols.shape or not np.allclose(values, want_cols, rtol=1e-9, atol=1e-12):
            raise _mismatch(expected.name, why)
        return TOLERANCE_NOTE   # the same numbers to 1e-9, not the same text
    return None


#: the date every member of privgp's .npz has: numpy.savez (numpy >= 1.26, Python >= 3.11, what privgp requires) writes
#: each member through ``ZipFile.open(name, "w")``, whose ZipInfo is dated 1980-01-01 00:00:00 (only numpy's fallback
#: for Python < 3.6 staged members in dated temporary files); the DOS time and date fields of that date
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
ZIP_EPOCH_DOS = (0, (1 << 5) | 1)


def _savez_bytes(arrays: dict[str, np.ndarray], order: list[str]) -> bytes:
    """The bytes privgp's writer (``numpy.savez``, :func:`privgp.publish._write_file`) makes of ``arrays`` in
    ``order`` (every member dated :data:`ZIP_EPOCH`: no field of them is taken from the file under test)."""
    buf = io.BytesIO()
    members: dict[str, Any] = {k: arrays[k] for k in order}
    np.savez(buf, **members)
    return buf.getvalue()


def _npz_bytes(path: Path, name: str, arrays: dict[str, np.ndarray], order: list[str]) -> str | None:
    """A released .npz holds nothing but its arrays (red team 15, F5: bytes after the zip's end record, zip extra
    fields, comments or gaps between members carried the whole private CSV past --strict). None when the file is
    byte for byte what privgp's writer makes of its arrays in privgp's order (:func:`_savez_bytes`; the arrays
    themselves are compared with privgp's by the caller). Otherwise its zip structure is walked
    (:func:`_zip_walk`): anything outside the members' headers and arrays fails, and so does a member dated other
    than :data:`ZIP_EPOCH` (red team 16, G4: the dates of 11 members carried 41 bytes past --strict; no numpy that
    privgp runs with dates them otherwise); a clean file written otherwise (another numpy's or Python's headers, another
    order) is checked in part (a note)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _mismatch(name, f"not a readable .npz ({type(exc).__name__})") from None
    if _savez_bytes(arrays, order) == data:
        return None
    _zip_walk(data, name, arrays)
    return (f"{name}: checked in part (its arrays are privgp's, in a zip holding nothing else, but its bytes are not "
            "what this numpy writes of them: another numpy's or Python's zip and .npy headers, or header fields that "
            "carry something else)")


def _zip_walk(data: bytes, name: str, arrays: dict[str, np.ndarray]) -> None:
    """Every byte of a .npz accounted for, as ``numpy.savez`` lays it out (raises naming what is not): members one
    after the other from byte 0, each a local header (stored, no data descriptor, no extra field but zip64's sizes)
    and the .npy of its array (its header numpy's words padded with spaces; its data exactly the array's bytes, with
    their CRC), then the central directory (the same members, nothing but zip64's extra field, no comment), an
    optional zip64 end record and locator, and the end record without a comment, ending the file."""
    import struct
    import zlib

    def bad(what: str) -> publish.CertificateMismatch:
        return _mismatch(name, f"{what}: numpy writes nothing of the kind, and bytes outside the arrays could carry "
                         "anything (privgp writes exactly numpy.savez of the released arrays)")

    def zip64_extra(extra: bytes, allowed: set[int]) -> None:
        at = 0
        while at < len(extra):
            if at + 4 > len(extra):
                raise bad("a truncated zip extra field")
            tag, size = struct.unpack_from("<HH", extra, at)
            body = extra[at + 4:at + 4 + size]
            if tag != 0x0001 or size % 8 or len(body) != size or \
                    any(v not in allowed for v in struct.unpack(f"<{size // 8}Q", body)):
                raise bad("a zip extra field other than zip64's sizes")
            at += 4 + size

    pos, members = 0, []
    while data[pos:pos + 4] == b"PK\x03\x04":
        if pos + 30 > len(data):
            raise bad("a truncated member header")
        (needed, flags, method, mtime, mdate, crc, csize, usize, nlen, elen) = \
            struct.unpack_from("<HHHHHIIIHH", data, pos + 4)
        fname = data[pos + 30:pos + 30 + nlen].decode("utf-8", "replace")
        extra = data[pos + 30 + nlen:pos + 30 + nlen + elen]
        key = fname[:-len(".npy")] if fname.endswith(".npy") else None
        if key not in arrays or flags != _utf8_flag(fname) or method != 0 or needed not in ZIP_VERSIONS:
            raise bad(f"member {fname[:40]!r} is not a stored .npy of a released array (flags {flags:#x}, "
                      f"method {method}, version {needed})")
        if (mtime, mdate) != ZIP_EPOCH_DOS:
            raise bad(f"member {fname[:40]!r} dated other than 1980-01-01 00:00:00 (numpy.savez dates every member "
                      "so; red team 16, G4)")
        start = pos + 30 + nlen + elen
        npy = _npy_size(data, start, np.asarray(arrays[key]), bad)
        zip64_extra(extra, {npy})
        if {csize, usize} - {npy, 0xFFFFFFFF} or zlib.crc32(data[start:start + npy]) != crc:
            raise bad(f"member {fname[:40]!r} states sizes or a CRC that are not its array's")
        members.append((pos, fname, crc, npy))
        pos = start + npy
    cd = pos
    for offset, fname, crc, npy in members:
        if data[pos:pos + 4] != b"PK\x01\x02" or pos + 46 > len(data):
            raise bad("bytes between the members and the central directory")
        (made, needed, flags, method, mtime, mdate, ccrc, csize, usize, nlen, elen, clen, disk, iattr, eattr, coff) = \
            struct.unpack_from("<HHHHHHIIIHHHHHII", data, pos + 4)
        cname = data[pos + 46:pos + 46 + nlen].decode("utf-8", "replace")
        if (cname, ccrc, flags, method, clen, disk, iattr) != (fname, crc, _utf8_flag(fname), 0, 0, 0, 0) or \
                (mtime, mdate) != ZIP_EPOCH_DOS or made >> 8 not in (0, 3) or made & 0xFF not in ZIP_VERSIONS or \
                needed not in ZIP_VERSIONS or eattr not in (0, 0o600 << 16) or \
                {csize, usize} - {npy, 0xFFFFFFFF} or coff not in (offset, 0xFFFFFFFF):
            raise bad(f"a central directory entry of {cname[:40]!r} that is not numpy's for its member (a comment, "
                      "a date, flags or attributes of one's choice)")
        zip64_extra(data[pos + 46 + nlen:pos + 46 + nlen + elen], {npy, offset})
        pos += 46 + nlen + elen + clen
    cd_size, end = pos - cd, pos
    if data[pos:pos + 4] == b"PK\x06\x06":   # zip64 end record and locator
        if data[pos + 4:pos + 12] != struct.pack("<Q", 44) or \
                struct.unpack_from("<QQQQ", data, pos + 24) != (len(members), len(members), cd_size, cd) or \
                data[pos + 56:pos + 60] != b"PK\x06\x07" or struct.unpack_from("<IQI", data, pos + 60) != (0, end, 1):
            raise bad("a zip64 end record that is not numpy's")
        pos += 56 + 20
    if data[pos:pos + 4] != b"PK\x05\x06" or pos + 22 != len(data):
        raise bad("bytes after the members or after the zip's end record")
    disk, cd_disk, here, total, size, offset, clen = struct.unpack_from("<HHHHIIH", data, pos + 4)
    if (disk, cd_disk, clen) != (0, 0, 0) or here not in (len(members), 0xFFFF) or total != here or \
            size not in (cd_size, 0xFFFFFFFF) or offset not in (cd, 0xFFFFFFFF):
        raise bad("a zip end record that is not numpy's (a comment, or other counts)")


#: the zip versions ("made by", "needed") Python's zipfile writes: 2.0, and 4.5 for zip64 (numpy forces zip64)
ZIP_VERSIONS = (20, 45)


def _utf8_flag(name: str) -> int:
    """The general-purpose flags Python's zipfile gives a member of this name: 0x800 (UTF-8) exactly when the
    name is not ASCII (a flag of one's choice would be a bit per member)."""
    return 0 if name.isascii() else 0x800


def _npy_size(data: bytes, start: int, array: np.ndarray, bad: Any) -> int:
    """The length of the .npy at ``start``: numpy's magic, its header (numpy's words for ``array``, padded with
    spaces to a 16- or 64-byte boundary, ending in a newline), then exactly the array's bytes."""
    import struct

    if data[start:start + 6] != b"\x93NUMPY" or start + 10 > len(data):
        raise bad("a member that is not a .npy")
    major = data[start + 6]
    if major == 1:
        hlen, skip = struct.unpack_from("<H", data, start + 8)[0], 10
    elif major in (2, 3):
        hlen, skip = struct.unpack_from("<I", data, start + 8)[0], 12
    else:
        raise bad("a .npy of an unknown version")
    header = data[start + skip:start + skip + hlen]
    words = np.lib.format.header_data_from_array_1_0(array)
    text = "{" + "".join(f"'{k}': {v!r}, " for k, v in sorted(words.items())) + "}"
    enc = "utf8" if major == 3 else "latin1"
    pad = header[len(text):]
    if header[:len(text)] != text.encode(enc) or pad[-1:] != b"\n" or pad[:-1].strip(b" ") or \
            (skip + hlen) % 16:
        raise bad("a .npy header other than numpy's words for its array")
    return skip + hlen + array.nbytes


def _check_selection(doc: dict, path: Path, notes: list[str] | None = None) -> dict:
    """The tuned release's selection.json states the certificate's candidates, training split and the private
    selection's budget (runs at most, per-run epsilon and delta), and the r of the candidate it released; its text
    is privgp's of its document (:func:`json_text_note`, a note otherwise)."""
    sel = _read_json(path, "selection.json", notes)
    settings: dict = doc.get("public_settings") or {}
    budget: dict = settings["selection"] if isinstance(settings.get("selection"), dict) else {}
    if not isinstance(sel, dict):
        raise _mismatch("selection.json", "not a JSON object")
    for key, want in (("candidates", settings.get("lengthscales")), ("n_train", settings.get("n_train")),
                      ("max_runs", budget.get("max_draws"))):
        if sel.get(key) != want:
            raise _mismatch(f"selection.json.{key}", f"{publish._short(sel.get(key))} where the certificate states "
                            f"{publish._short(want)}")
    _same_number(sel.get("per_run_epsilon"), budget.get("epsilon"), "selection.json.per_run_epsilon")
    _same_number(sel.get("per_run_delta"), budget.get("delta"), "selection.json.per_run_delta")
    for key in ("runs", "accepted_runs"):   # written by privgp before 2026-11-26
        if key in sel:
            raise _mismatch(f"selection.json.{key}", "published, but the certificate's guarantee (Liu & Talwar 2019, "
                            "Thm 3.4) covers the selected candidate only, not the number of (accepted) runs")
    keys = {"candidates", "selected", "lengthscale", "max_runs", "per_run_epsilon", "per_run_delta", "n_train",
            "n_validation"} | ({"r"} if sel.get("selected") is True else set())
    if set(sel) != keys or not isinstance(sel.get("selected"), bool):
        extra = sorted(set(sel) ^ keys) or ["selected"]
        raise _mismatch(f"selection.json.{extra[0]}", "not the fields privgp writes in selection.json")
    dataset = doc.get("dataset")
    n, n_train = (dataset.get("n") if isinstance(dataset, dict) else None), settings.get("n_train")
    if not (isinstance(n, int) and isinstance(n_train, int) and sel.get("n_validation") == n - n_train):
        raise _mismatch("selection.json.n_validation", "not n minus the training records the certificate states")
    chosen = sel.get("lengthscale")
    if not sel.get("selected"):
        if chosen is not None:   # privgp writes null: nothing was selected (red team 18: any text passed here)
            raise _mismatch("selection.json.lengthscale", f"{publish._short(chosen)} where nothing was selected "
                            "(privgp writes null)")
        return sel
    cands, rs = settings.get("lengthscales") or [], settings.get("r_per_candidate") or []
    # a candidate itself, a number of the same type (True or 1 for the candidate 1.0 would be a bit of another kind)
    match = [i for i, c in enumerate(cands) if type(c) is type(chosen) and c == chosen]
    if not match or len(rs) != len(cands):
        raise _mismatch("selection.json.lengthscale", f"{publish._short(chosen)} is not a candidate of the "
                        "certificate")
    _same_number(sel.get("r"), rs[match[0]], "selection.json.r")
    return sel


def _check_optimize(doc: dict, folder: Path, files: dict[str, str]) -> list[str]:
    """An optimize run's hashed files: only those ``privgp optimize`` writes, history.csv and summary.json among
    them; history.csv holds one row per released round whose r, eta, round epsilon, spent epsilon and query
    (a candidate of the plan) are the rebuilt plan's; summary.json states the certificate's rounds, epsilon and
    delta; queries.png is the plot privgp optimize draws of those queries (its title states the epsilon released
    and, for a simulated objective, the regret summary.json states). Returns notes (parts checked only in part)."""
    if not files:
        return []
    what = "privgp optimize"
    _foreign(files, OPTIMIZE_DATA, what)
    _require(files, OPTIMIZE_DATA, what)
    released = doc.get("released_rounds")
    plan, queries, summary = None, None, None
    notes: list[str] = []
    if files["history.csv"] == "ok":
        from .optimize import rebuilt_plan

        plan = rebuilt_plan(doc)
        indices, queries = _check_history(folder / "history.csv", plan, released, notes)
    if files["summary.json"] == "ok":
        summary = _read_json(folder / "summary.json", "summary.json", notes)
        if not isinstance(summary, dict):
            raise _mismatch("summary.json", "not a JSON object")
        if type(summary.get("rounds_released")) is not int or summary.get("rounds_released") != released:
            raise _mismatch("summary.json.rounds_released", f"{summary.get('rounds_released')!r} where the "
                            f"certificate states {released!r}")
        cert = doc.get("certificate")
        planned = doc.get("planned_certificate") if isinstance(doc.get("planned_certificate"), dict) else cert
        if isinstance(cert, dict):
            _same_number(summary.get("epsilon_released"), cert.get("epsilon"), "summary.json.epsilon_released")
            _same_number(summary.get("delta"), cert.get("delta"), "summary.json.delta")
        if isinstance(planned, dict):
            _same_number(summary.get("epsilon_planned"), planned.get("epsilon"), "summary.json.epsilon_planned")
        if plan is not None and queries is not None:
            notes += _check_summary(doc, summary, plan, indices, queries)
    if files["queries.png"] != "ok":
        return notes
    png = (folder / "queries.png").read_bytes()
    _png("queries.png", png)
    if plan is None or queries is None or summary is None:
        return notes + ["queries.png: checked in part (a PNG): history.csv or summary.json, which it is drawn from, "
                        "is missing"]
    from .optimize import queries_png as drawn_queries
    from .verify_report import kept_drawing, same_picture

    def queries_png(plan: Any, queries: Any, epsilon: float, regret: float | None, *, fmt: int | None = None) -> bytes:
        """The plot, kept in this process by everything it reads (:func:`kept_drawing`)."""
        options = {} if fmt is None else {"fmt": fmt}
        return kept_drawing(lambda: drawn_queries(plan, queries, epsilon, regret, **options), "optimize queries",
                            plan, queries, epsilon, regret, fmt)

    cert = doc.get("certificate")
    sim = summary.get("simulation")
    try:
        regret = float(sim["regret_recommendation"]) if isinstance(sim, dict) else None
        epsilon = float(cert["epsilon"]) if isinstance(cert, dict) else 0.0
    except (KeyError, TypeError, ValueError, ArithmeticError):
        raise _mismatch("summary.json.simulation", "not the simulation summary privgp optimize writes") from None
    what = "the plot privgp optimize draws of the released queries (its title states the epsilon)"
    try:
        return notes + same_picture("queries.png", png, queries_png(plan, queries, epsilon, regret), what)
    except publish.CertificateMismatch:
        if queries_png(plan, queries, epsilon, regret, fmt=1) != queries_png(plan, queries, epsilon, regret):
            try:   # an earlier privgp's picture (its title rounds epsilon to nearest)
                older = same_picture("queries.png", png, queries_png(plan, queries, epsilon, regret, fmt=1), what)
            except publish.CertificateMismatch:
                pass
            else:
                return notes + older + ["queries.png: checked in part: drawn by an earlier privgp, whose title rounds "
                                        f"epsilon to nearest ({epsilon:.3g}; the certified epsilon is {epsilon!r})"]
        raise


#: the longest file or folder name summary.json states (a name on common file systems)
NAME_MAX = 255
#: privgp optimize's words for its objective (cli.optimize._objective): a simulated function with its noise, a lookup
#: table's file name and size, a callable's file and function
OBJECTIVE_WORDS = (re.compile(r"simulated [a-z0-9_]{1,40} \+ N\(0, [0-9.e+-]{1,24}\^2\) noise"),
                   re.compile(r"lookup table [^/\\]{1,255} \([0-9]{1,12} records\)"),
                   re.compile(r"callable [^/\\]{1,255}"))   # NAME_MAX characters of names
#: the fields of optimize's summary.json ("simulation" only for a simulated objective with released rounds)
SUMMARY_FIELDS = frozenset({"out", "files", "objective", "status", "stop_reason", "rounds_planned", "rounds_released",
                            "records_collected", "epsilon_released", "epsilon_planned", "delta", "last_query",
                            "recommendation", "candidates", "kernel", "lengthscale", "sigma", "M_Y", "knob",
                            "schedule", "r", "eta", "target_epsilon", "fingerprint", "entry_id", "charged_epsilon",
                            "budget_epsilon", "budget_delta", "spent_epsilon", "remaining_epsilon", "randomness",
                            "simulation"})


def _check_summary(doc: dict, s: dict, plan: Any, indices: np.ndarray, queries: np.ndarray) -> list[str]:
    """summary.json holds exactly privgp optimize's fields, each what the rebuilt plan, the released queries, the
    certificate's ledger block and (for a simulated objective) the named function give: no room for other data
    or other claims. Its words (output folder, objective, randomness) are the data holder's statement: regrets are
    recomputed from the simulated function the objective names, which does not show that the records were
    simulated (the certificate does not record what the objective was)."""
    from ..datasets.objectives import FUNCTIONS, get_function
    from ..tasks.thompson import recommend_from_queries
    from .optimize import OUTPUT_FILES

    def number(key: str, want: Any) -> None:
        got = s.get(key)
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise _mismatch(f"summary.json.{key}", f"{publish._short(got)} where privgp writes a number")
        _same_number(got, want, f"summary.json.{key}")

    def same(key: str, want: Any) -> None:
        if not _same_json(s.get(key), want):
            raise _mismatch(f"summary.json.{key}", f"{publish._short(s.get(key))} where the certificate gives "
                            f"{publish._short(want)}")

    objective = s.get("objective")
    name = objective.split()[1] if isinstance(objective, str) and objective.startswith("simulated ") else None
    truth = get_function(name) if name in FUNCTIONS else None
    k = int(queries.shape[0])
    keys = SUMMARY_FIELDS - ({"simulation"} if truth is None or k == 0 else set())
    if set(s) != keys:
        extra = sorted(set(s) ^ keys)
        raise _mismatch(f"summary.json.{extra[0]}", "not the fields privgp optimize writes in summary.json")
    notes = []
    for key in ("out", "objective"):   # words: the data holder's statement, of a bounded length
        if not isinstance(s.get(key), str) or len(s[key]) > MAX_WORDS:
            raise _mismatch(f"summary.json.{key}", f"text of at most {MAX_WORDS} characters")
    if not (0 < len(s["out"]) <= NAME_MAX and "/" not in s["out"] and "\\" not in s["out"]):
        notes.append("summary.json.out: not a folder name (privgp optimize writes the output folder's name; an earlier "
                     "privgp wrote its local path)")
    if not any(form.fullmatch(s["objective"]) for form in OBJECTIVE_WORDS) or \
            (s["objective"].startswith("simulated ") and truth is None):
        notes.append("summary.json.objective: not privgp optimize's words for its objective (a simulated function, a "
                     "lookup table or a callable, named by file name; an earlier privgp wrote local paths)")
    same("status", doc.get("status"))
    same("stop_reason", doc.get("stop_reason"))
    number("epsilon_released", s.get("epsilon_released"))   # a number, not a string that reads as one
    number("epsilon_planned", s.get("epsilon_planned"))
    number("delta", s.get("delta"))
    completed = s.get("status") == "completed"
    reason = s.get("stop_reason")
    if not (completed and reason is None and k == plan.rounds) and not (
            s.get("status") == "stopped" and isinstance(reason, str) and reason.startswith(f"round {k}: ")):
        raise _mismatch("summary.json.status", f"{publish._short(s.get('status'))} / {publish._short(reason)} "
                        f"for {k} of {plan.rounds} rounds released")
    same("records_collected", k if completed else k - 1)
    same("rounds_planned", plan.rounds)
    same("files", list(OUTPUT_FILES))
    same("candidates", plan.candidates.describe())
    for key in ("kernel", "knob", "schedule"):
        same(key, getattr(plan, key))
    for key in ("lengthscale", "sigma", "M_Y", "target_epsilon"):
        want = getattr(plan, key)
        same(key, want) if want is None else number(key, want)
    same("r", [float(plan.r.min()), float(plan.r.max())])
    same("eta", [float(plan.eta.min()), float(plan.eta.max())])
    number("charged_epsilon", plan.epsilon)
    rec = None if k == 0 else plan.candidates.points[int(recommend_from_queries(
        indices, plan.candidates.points, plan.recommendation_radius)[-1])]
    same("last_query", None if k == 0 else [float(f"{x:.6g}") for x in queries[-1]])
    same("recommendation", None if rec is None else [float(f"{x:.6g}") for x in rec])
    ledger = doc.get("ledger")
    ledger = ledger if isinstance(ledger, dict) else {}
    for key, led in (("fingerprint", "fingerprint"), ("entry_id", "entry_id"), ("budget_epsilon", "budget_epsilon"),
                     ("budget_delta", "budget_delta"), ("spent_epsilon", "spent_epsilon_after"),
                     ("remaining_epsilon", "remaining_epsilon")):
        same(key, ledger.get(led))
    same("randomness", doc.get("randomness"))
    if truth is not None and rec is not None:
        regrets = truth.regret(queries)
        sim = s["simulation"]
        want = {"regret_recommendation": float(truth.regret(rec[None, :])[0]), "regret_last_query": float(regrets[-1]),
                "best_query_regret": float(regrets.min()), "note": "known only because the objective is simulated"}
        if not isinstance(sim, dict) or set(sim) != set(want):
            raise _mismatch("summary.json.simulation", "not the simulation summary privgp optimize writes")
        for key, w in want.items():
            if key == "note":
                same("simulation", {**sim, "note": w})
            else:
                got = sim[key]
                if isinstance(got, bool) or not isinstance(got, (int, float)):
                    raise _mismatch(f"summary.json.simulation.{key}", f"{publish._short(got)}: not a number")
                _same_number(got, w, f"summary.json.simulation.{key}")
    return notes


def _check_history(path: Path, plan: Any, released: Any, notes: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """history.csv against the rebuilt plan; returns the released queries' candidate indices and points. A file
    whose numbers are the plan's but whose text is not what privgp optimize writes of them (character for
    character: another spelling of a number, white space, line ends) is checked in part (a note in ``notes``; red
    team 17, H5: digits below a double's precision carried private records)."""
    dim = plan.candidates.points.shape[1]
    header = ["round", "n", "r", "eta", "candidate", *(f"x{j + 1}" for j in range(dim)), "round_epsilon",
              "spent_epsilon"]
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            text = fh.read()
            reader = csv.DictReader(io.StringIO(text, newline=""))
            rows = list(reader)
            if reader.fieldnames != header or any(None in row for row in rows):
                raise _mismatch("history.csv", f"columns {reader.fieldnames} where privgp optimize writes {header}")
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise _mismatch("history.csv", f"not a readable CSV ({type(exc).__name__}: {str(exc)[:80]})") from None
    if len(rows) != released:
        raise _mismatch("history.csv", f"{len(rows)} released rounds where the certificate states {released!r}")
    k = len(rows)
    want = {"round": np.arange(1, k + 1), "n": np.arange(k), "r": np.concatenate([[np.nan], plan.r])[:k],
            "eta": np.concatenate([[np.nan], plan.eta])[:k],
            "round_epsilon": np.concatenate([[0.0], plan.round_epsilon])[:k],
            "spent_epsilon": np.concatenate([[0.0], plan.cumulative_epsilon])[:k]}
    try:
        got = {c: np.array([float(row[c]) if row[c] != "" else np.nan for row in rows])
               for c in (*want, "candidate", *(f"x{j + 1}" for j in range(dim)))}
    except (KeyError, TypeError, ValueError) as exc:
        raise _mismatch("history.csv", f"not the columns privgp optimize writes ({type(exc).__name__}: "
                        f"{str(exc)[:60]})") from None
    for col, w in want.items():
        if not np.allclose(got[col], w, rtol=1e-9, atol=1e-12, equal_nan=True):
            raise _mismatch(f"history.csv.{col}", "not the rebuilt plan's (its rounds follow from the certificate's "
                            "settings)")
    idx = got["candidate"]
    m = plan.candidates.points.shape[0]
    if not (np.all(idx == np.round(idx)) and np.all((idx >= 0) & (idx < m))):
        raise _mismatch("history.csv.candidate", f"not indices of the plan's {m} candidates")
    X = np.column_stack([got[f"x{j + 1}"] for j in range(dim)]) if k else np.zeros((0, dim))
    queries = plan.candidates.points[idx.astype(int)]
    if not np.allclose(X, queries, rtol=1e-9, atol=1e-12):
        raise _mismatch("history.csv.x1", "a query that is not the candidate its row names")
    if notes is not None and text != history_text(plan, idx.astype(int), queries):
        notes.append(f"history.csv: {TOLERANCE_NOTE} (not the text privgp optimize writes of these rounds)")
    return idx.astype(int), queries


def history_text(plan: Any, indices: np.ndarray, queries: np.ndarray) -> str:
    """The text of history.csv that privgp optimize writes for these released rounds (its own writer,
    :meth:`privgp.tasks.thompson.ThompsonResult.history`, to CSV as optimize writes it)."""
    from types import SimpleNamespace

    from ..tasks.thompson import ThompsonResult

    run = SimpleNamespace(released=len(indices), plan=plan, indices=np.asarray(indices), queries=queries)
    return str(ThompsonResult.history(run).to_csv(index=False))   # type: ignore[arg-type]


def _read_json(path: Path, name: str, notes: list[str] | None = None) -> Any:
    """A released JSON file; one that repeats a key in an object is refused (readers disagree on which counts).
    With ``notes``, a file whose text is not what privgp writes of its document adds a note
    (:func:`json_text_note`)."""
    from .verify import _without_duplicates

    try:
        with open(path, encoding="utf-8", newline="") as fh:
            text = fh.read()
        value = json.loads(text, object_pairs_hook=_without_duplicates)
    except (OSError, ValueError, RecursionError) as exc:  # also a repeated key; JSONDecodeError is a ValueError
        raise _mismatch(name, f"not a readable JSON file ({type(exc).__name__})") from None
    note = json_text_note(name, text, value)
    if note is not None and notes is not None:
        notes.append(note)
    return value


def json_text(value: Any) -> str:
    """The text privgp writes of a JSON document (certificate.json, summary.json, selection.json; ``account --json``
    prints the same): ``json.dumps(value, indent=2)`` and one newline, what every privgp has written."""
    return json.dumps(value, indent=2) + "\n"


def json_text_note(name: str, text: str, value: Any) -> str | None:
    """None when ``text`` is exactly what privgp writes of ``value`` (its parsed document), else the note of a file
    checked in part (``--strict`` fails): white space, escapes or number spellings that privgp does not write are
    room for other data (red team 17, H4: 24 KB of records after the closing brace)."""
    try:
        if text == json_text(value):
            return None
    except (ValueError, TypeError, RecursionError):
        pass
    return (f"{name}: checked in part (its values are checked, but its text is not what privgp writes of them: "
            "other white space, escapes or number spellings, which could carry other data)")


def _same_number(got: Any, want: Any, field: str) -> None:
    try:
        a, b = float(got), float(want)
    except (TypeError, ValueError):
        raise _mismatch(field, f"{publish._short(got)} where the certificate states {publish._short(want)}") from None
    if not (math.isfinite(a) and math.isfinite(b) and math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)):
        raise _mismatch(field, f"{got!r} where the certificate states {want!r}")


#: a certificate's words: printed by verify from the rebuilt certificate; words other than the rebuilt ones are a note
WORDS = ("lemmas", "assumptions", "warnings")


def differing_words(recorded: Any, rebuilt: Any) -> list[str]:
    """The word fields (lemmas, assumptions, warnings) in which a recorded certificate differs from the rebuilt
    one (an older privgp words them differently, or the file was edited), so that a reader of certificate.json
    knows which words to take from verify's output instead."""
    if not isinstance(recorded, dict) or rebuilt is None:
        return []
    again = rebuilt.to_dict()
    return [k for k in WORDS if list(recorded.get(k) or []) != list(again.get(k) or [])]


def _bounded_words(recorded: Any, rebuilt: Any, where: str) -> None:
    """A recorded certificate's word lists are lists of words no longer than the rebuilt ones allow: at most twice
    as many entries (and 10 more), each of at most :data:`MAX_WORDS` characters (red team 16, G6: an assumption of
    30 kB carried private records past --strict)."""
    if not isinstance(recorded, dict):
        return
    again = {} if rebuilt is None else rebuilt.to_dict()
    for key in WORDS:
        words, want = recorded.get(key, []), again.get(key) or []
        limit = 2 * len(want) + 10
        if not (isinstance(words, list) and len(words) <= limit and
                all(isinstance(w, str) and len(w) <= MAX_WORDS for w in words)):
            raise publish.CertificateMismatch(f"{where}{key}", f"at most {limit} statements of at most {MAX_WORDS} "
                                              "characters each (privgp's words for this certificate)")


def statement_notes(doc: dict, kind: str | None, rebuilt: Any) -> tuple[list[str], list[str]]:
    """(word fields that differ, notes) for a certificate's words against what the installed privgp writes for it:
    the certificate's lemmas, assumptions and warnings against the rebuilt certificate's (an optimize run's planned
    certificate against the rebuilt plan's), the notes and the randomness block against privgp's fixed words, a
    release's dataset.source against privgp's words for its records. Words too long for privgp's raise
    :class:`~privgp.cli.release_publish.CertificateMismatch`; other words are a note each (``--strict`` fails on
    them: red team 16, G6 -- free text, or words that mislead a reader, such as assumptions removed; an earlier
    privgp's wording is checked in part too)."""
    recorded = doc if kind == "account" else doc.get("certificate")
    _bounded_words(recorded, rebuilt, "" if kind == "account" else "certificate.")
    words = differing_words(recorded, rebuilt)
    notes = [f"certificate words: the {', '.join(words)} differ from what this privgp states for this certificate "
             "(an earlier privgp's wording, or words edited after the release; verify prints this privgp's)"] \
        if words else []
    if kind == "optimize" and isinstance(doc.get("planned_certificate"), dict):
        from .optimize import rebuilt_plan

        planned = rebuilt_plan(doc).certificate
        _bounded_words(doc["planned_certificate"], planned, "planned_certificate.")
        other = differing_words(doc["planned_certificate"], planned)
        if other:
            words = sorted(set(words) | set(other), key=WORDS.index)
            notes.append(f"certificate words: the planned certificate's {', '.join(other)} differ from what this "
                         "privgp states for the planned run")
    if kind in ("release", "optimize"):
        notes += _fixed_words_notes(doc, kind)
    return words, notes


#: the notes privgp writes in a certificate of each kind (an optimize run that released only its first round adds
#: the last)
RELEASE_NOTES = (
    "The guarantee assumes the domain, threshold, clipping bound and all hyperparameters were chosen "
    "independently of the private data; choosing them on the data needs its own privacy accounting.",
    "Neighbouring datasets: replace one record (n is public).",
    "The number of clipped responses is a statistic of the private data and is not reported.",
    "The fingerprint is a keyed hash (secret key in the ledger file), not a hash of the data.")
OPTIMIZE_NOTES = (
    "Only the query points (and the certificate) are released; the responses are private.",
    "The candidates, kernel, lengthscale, sigma, M_Y, rounds and budget must be chosen independently of the private "
    "responses.",
    "The fingerprint is a keyed hash (secret key in the ledger file), not a hash of the data.")
OPTIMIZE_PRIOR_ONLY = "Only the data-independent first round (a prior draw) was released: no privacy cost."
#: privgp's words for the records' source (``embedded:<name>`` for its shipped data)
SOURCE_WORDS = ("user CSV file", "user data (Parquet, CSV files or a database)", "embedded:baltimore")


def _fixed_words_notes(doc: dict, kind: str) -> list[str]:
    """Notes on the words privgp writes as fixed text (notes, randomness, a release's dataset.source) where the
    certificate holds others: the data holder's words, bounded (:func:`check_fields`), but not privgp's."""
    from ..mechanisms.release import CALLER_GENERATOR, FRESH_ENTROPY
    from .common import randomness

    out = []
    if kind == "release":
        want = list(RELEASE_NOTES)
    else:
        want = list(OPTIMIZE_NOTES) + ([OPTIMIZE_PRIOR_ONLY] if doc.get("certificate") is None else [])
    if doc.get("notes") != want:
        out.append("notes: not the words privgp writes in this certificate (the data holder's words)")
    if doc.get("randomness") not in (dict(FRESH_ENTROPY), randomness(0)[1], dict(CALLER_GENERATOR)):
        out.append("randomness: not the words privgp writes of how the randomness was drawn (the data holder's "
                   "words)")
    dataset = doc.get("dataset")
    if kind == "release" and isinstance(dataset, dict) and dataset.get("source") not in SOURCE_WORDS:
        out.append("dataset.source: not privgp's words for the records' source (the data holder's words)")
    return out
