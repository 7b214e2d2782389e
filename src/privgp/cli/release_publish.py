"""The publication outputs of ``privgp release``, shared by every mechanism: the picture and the report,
and the check of ``privgp verify``.

A mechanism (:class:`privgp.mechanisms.interface.Mechanism`) provides ``picture`` (the file name),
``fields(released, plan)`` (its released function(s) on the grid, model units), ``report_text(plan, ctx)``
(its words for the report) and ``rebuild(recorded)`` (its plan rebuilt from a certificate's PUBLIC
settings through its own plan function, which :func:`verify_mechanism` compares with the certificate).

This module turns them, with the public facts of the data set (n, column names, the embedded
data's documented coordinate system and units), into the PNG and the HTML. It reads no private
value except n and writes nothing (the command writes into its atomic output folder).
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from typing import Any

from .. import __version__
from ..accounting import COMPOSITIONS, LEGACY_COMPOSITION, PrivacyCertificate, composition_rule
from ..datasets import baltimore
from ..errors import CertificateMismatch
from ..jsonable import as_written, first_difference
from ..mechanisms.interface import VERIFY_MEMORY_LIMIT, Mechanism, Recorded
from .release_figure import Picture, PictureContext, ResponseDisplay, draw_picture  # noqa: F401 (re-exported)
from .release_map import interactive_map
from .release_report import LedgerTotals, ReportInput, render

REPORT = "report.html"
EMBEDDED = "embedded:baltimore"


def response_display(data) -> ResponseDisplay:
    """The response's name and units: documented for the embedded data, the column name otherwise."""
    if data.source == EMBEDDED:
        return ResponseDisplay(baltimore.RESPONSE_LABEL, baltimore.RESPONSE_UNIT, baltimore.RESPONSE_FORMAT)
    return ResponseDisplay(data.response_name)


def axis_labels(data) -> tuple[str, ...]:
    """The CSV's coordinate column names, or the embedded data's documented coordinate system; records projected
    from a CRS: x_m, y_m, metres of the local projection (:func:`privgp.geo.picture_labels`)."""
    names = baltimore.COORDINATE_LABELS if data.source == EMBEDDED else tuple(data.coordinates)
    projection = getattr(data, "projection", None)
    if projection is None:
        return names
    from ..geo import picture_labels

    return picture_labels(names, projection)


#: what a certificate says about user data (its kind, never its path): one CSV file, or anything else
CSV_WORDS, OTHER_SOURCE_WORDS = "user CSV file", "user data (Parquet, CSV files or a database)"


def source_words(data) -> str:
    """What the certificate says about user data: its kind, never its path (``data.source`` is a path or a
    query in a release, the certificate's words when verify rebuilds the report)."""
    from ..datasets.sources import ReducedData  # known through a pass: Parquet, DuckDB or Dask

    source = str(getattr(data, "source", ""))
    if source in (CSV_WORDS, OTHER_SOURCE_WORDS):
        return source
    return OTHER_SOURCE_WORDS if isinstance(data, ReducedData) or not source.lower().endswith(".csv") else CSV_WORDS


def data_description(data) -> str:
    """The data set in words: public facts only (n, what the records are; never a file path). Reports of format 4
    and earlier called every user source "a CSV file" (red team 25: Parquet and DuckDB too)."""
    if data.source == EMBEDDED:
        return (f"{data.n} house sales in Baltimore, Maryland, in 1978 (Dubin 1992), whose locations and prices "
                "are treated as private")
    if source_words(data) == CSV_WORDS:
        return f"{data.n} private records of a CSV file supplied by the data holder"
    return f"{data.n} private records of Parquet files, CSV files or a database supplied by the data holder"


def picture_context(plan, data, forecast=None) -> PictureContext:
    """The public facts the picture states; ``forecast``: the release's utility forecast, whose warning (a map
    released although it says mostly noise) the picture then carries."""
    cert = plan.certificate
    projection = getattr(data, "projection", None)
    if projection is None:
        unit = ""
    else:
        from ..geo import coordinate_unit

        unit = coordinate_unit(projection)
    return PictureContext(domain=plan.domain, axis_labels=axis_labels(data), response=response_display(data),
                          response_map=plan.response_map, epsilon=float(cert.epsilon), delta=float(cert.delta),
                          note="" if forecast is None else forecast.noisy_note(short=True), domain_unit=unit)


def picture_request(mech: Mechanism, released, plan, data, forecast=None) -> tuple[Any, PictureContext]:
    """What the picture is drawn from: the mechanism's released field(s) on the grid (None when its release
    holds no map, e.g. a private selection that accepted nothing) and the public picture context."""
    return mech.fields(released, plan), picture_context(plan, data, forecast)


def picture(mech: Mechanism, released, plan, data, forecast=None) -> Picture:
    """The release's picture, drawn in this process."""
    return draw_picture(*picture_request(mech, released, plan, data, forecast))


def report(mech: Mechanism, plan, data, pic: Picture, charge, fingerprint: str, randomness: dict, files, forecast=None,
           *, map_field: Any = None) -> str:
    """report.html's text for this release (public facts only). ``map_field``: the release's
    :class:`~privgp.mechanisms.interface.ReleasedField` to draw as the opt-in interactive map (None: no map;
    a field that is not 2-D gets none either)."""
    ctx = picture_context(plan, data)
    led = LedgerTotals(budget_epsilon=float(charge.budget_epsilon), budget_delta=float(charge.budget_delta),
                       spent_epsilon=float(charge.spent_after.epsilon), releases=int(charge.spent_after.entries),
                       fingerprint=fingerprint)
    return render(ReportInput(
        mechanism=mech.name, text=mech.report_text(plan, ctx), certificate=plan.certificate,
        public_settings=plan.public_settings(), n=data.n, data_description=data_description(data),
        coordinates=ctx.axis_labels, response=ctx.response, threshold_text=ctx.threshold_text(), domain=plan.domain,
        picture=pic, ledger=led, randomness=randomness, files=tuple(files), version=__version__,
        forecast=None if forecast is None else forecast.to_dict(), interactive_map=interactive_map(map_field, ctx)))


# -- privgp verify: re-derive, never re-read ----------------------------------------------------------------------

#: the fields of the recorded PrivacyCertificate that must equal the rebuilt one (the words -- lemmas,
#: warnings, assumptions -- and privgp_version are the installed privgp's, printed from the rebuilt one)
CERTIFICATE_FIELDS = ("mechanism", "solved_for", "epsilon", "delta", "alpha", "rdp", "conversion", "method",
                      "alpha_optimised", "covered", "details", "public")


def _short(x: Any) -> str:
    text = json.dumps(x) if not isinstance(x, str) else repr(x)
    return text if len(text) <= 120 else text[:117] + "..."


def compare(recorded: Any, rebuilt: Any, path: str) -> None:
    """Raise :class:`CertificateMismatch` at the first difference of two JSON values (see :func:`first_difference`)."""
    d = first_difference(recorded, as_written(rebuilt), path)
    if d is not None:
        where, a, b = d
        raise CertificateMismatch(where, f"recorded {_short(a)}, but the public settings rebuild {_short(b)}")


def sha256_file(path) -> str:
    """The hex sha256 of a file's bytes (what certificate.json records of each released file)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def setting(doc: dict, key: str, section: str = "public_settings") -> Any:
    """A recorded public setting (:meth:`privgp.mechanisms.interface.Recorded.setting`)."""
    return Recorded(doc).setting(key, section)


def _calibration(recorded: Any, rebuilt: Any) -> Any:
    """``recorded`` with its ``epsilon_at_value`` replaced by the rebuilt one when the two agree to 1e-9
    relative (the calibrator's batch evaluation may differ in the last digits between versions)."""
    rebuilt = as_written(rebuilt)
    if not (isinstance(recorded, dict) and isinstance(rebuilt, dict)):
        return recorded
    a, b = recorded.get("epsilon_at_value"), rebuilt.get("epsilon_at_value")
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and \
            not isinstance(b, bool) and math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-9 * max(abs(a), abs(b)):
        return {**recorded, "epsilon_at_value": b}
    return recorded


def verify_against_plan(doc: dict, plan, *, mechanism: str | None = None) -> PrivacyCertificate:
    """The check every mechanism's ``verify(doc)`` ends with: ``doc`` (a certificate.json, as a dict)
    against ``plan``, the plan REBUILT from the certificate's public settings by the mechanism's own
    plan function (the code that built the release; n from ``dataset.n``, never from the event).

    Contract (a caller rebuilds ``plan`` from ``doc``'s public settings only -- never from the recorded
    event -- then calls this; it raises, never returns a partial answer):

    * ``doc["mechanism"]`` equals ``plan.mechanism`` (or ``mechanism``, the CLI name, where the plan's own
      label differs; a certificate relabelled as another mechanism fails);
    * the recorded event ``doc["certificate"]["event"]`` equals ``plan.event`` field by field (sensitivity,
      noise std, M_Y, n, r, sigma, eta, L, kappa, lemma, constants, ...);
    * ``doc["public_settings"]`` equals ``plan.public_settings()`` key by key (a missing or extra key fails);
      ``dataset.n`` equals ``plan.n`` where the plan has one; ``calibration`` equals
      ``getattr(plan, "calibration", None)`` (what ``privgp release`` records; its ``epsilon_at_value``, the
      calibrator's own bookkeeping, to 1e-9 relative: the certificate's epsilon is compared exactly);
    * the recorded certificate's numbers (:data:`CERTIFICATE_FIELDS`: epsilon, delta, alpha, RDP value,
      conversion, method, covered, details, public) equal ``plan.certificate``'s, recomputed through the
      accountant at the recorded Renyi order alpha where the installed optimiser lands on another order
      (any order is a valid bound; the epsilon must be the value at the recorded one);
    * the certificate's composition rule (``certificate.composition``; absent: "basic", the rule of
      privgp 0.1) is the rebuilt one's: the caller rebuilds inside :func:`stated_rule` (see there);
    * epsilon is at most ``public_settings.target_epsilon`` where one is recorded.

    Values are compared as certificate.json holds them (:func:`as_written`), exactly. Returns the rebuilt
    certificate (print ITS words: lemmas, warnings, ``covered``). Raises :class:`CertificateMismatch` (a
    NumericalError; ``.field`` names the first field that disagrees). ``plan`` needs ``mechanism``, ``event``,
    ``certificate`` and ``public_settings()``; ``n`` and ``calibration`` are checked when present.
    """
    name = getattr(plan, "mechanism", None) if mechanism is None else mechanism
    if doc.get("mechanism") != name:
        raise CertificateMismatch("mechanism", f"labelled {_short(doc.get('mechanism'))}, but the settings rebuild "
                                  f"a {name!r} release")
    cert_doc = doc.get("certificate")
    if not isinstance(cert_doc, dict):
        raise CertificateMismatch("certificate", "missing")
    compare(cert_doc.get("event"), plan.event.to_dict(), "certificate.event")
    if "public_settings" not in doc:
        raise CertificateMismatch("public_settings", "missing: the release cannot be rebuilt from its public settings")
    compare(doc["public_settings"], plan.public_settings(), "public_settings")
    if hasattr(plan, "n") and isinstance(doc.get("dataset"), dict):
        compare(doc["dataset"].get("n"), int(plan.n), "dataset.n")
    compare(_calibration(doc.get("calibration"), getattr(plan, "calibration", None)),
            getattr(plan, "calibration", None), "calibration")
    for key in CERTIFICATE_FIELDS:
        if key not in cert_doc:
            raise CertificateMismatch(f"certificate.{key}", "missing")
    again = _at_recorded_order(cert_doc, plan.certificate)
    rebuilt = as_written(again.to_dict())
    for key in CERTIFICATE_FIELDS:
        compare(cert_doc[key], rebuilt[key], f"certificate.{key}")
    compare(cert_doc.get("composition", LEGACY_COMPOSITION), rebuilt["composition"], "certificate.composition")
    target = doc["public_settings"].get("target_epsilon") if isinstance(doc["public_settings"], dict) else None
    if isinstance(target, (int, float)) and not isinstance(target, bool) and not again.epsilon <= target:
        raise CertificateMismatch("certificate.epsilon", f"{again.epsilon!r} exceeds the target epsilon {target!r}")
    return again


def _at_recorded_order(cert_doc: dict, cert: PrivacyCertificate) -> PrivacyCertificate:
    """``cert`` (rebuilt) re-evaluated at the certificate's recorded Renyi order when the installed
    optimiser lands on another one: any order gives a valid bound, and the reported epsilon must be the
    value at the reported order, recomputed through the accountant (:mod:`privgp.accounting.accountant`,
    item 2). So a certificate of an older privgp whose optimiser stopped at another alpha (or, for a pure
    event, that used an order at all) still verifies, and one whose epsilon is not the value at its alpha
    does not."""
    alpha = cert_doc.get("alpha")
    # "pure": a pure event's exact randomized-response epsilon (since 2026-11-26), which earlier privgp certified
    # through the Renyi conversion at an order: re-evaluated there too, like any older order
    if (cert.method not in ("rdp", "pure") or cert_doc.get("method") != "rdp" or isinstance(alpha, bool)
            or not isinstance(alpha, (int, float)) or alpha == as_written(cert.alpha) or not alpha > 1):
        return cert
    again = replace(cert, alpha=float(alpha), alpha_optimised=False).recompute()
    again = replace(again, alpha_optimised=cert.alpha_optimised)
    # the installed curve may round differently from the one that wrote the certificate (the randomized-response
    # curve was rewritten on 2026-11-26): the recorded values stand when within 4 ulps of the recomputed ones
    rec_eps, rec_rdp = cert_doc.get("epsilon"), cert_doc.get("rdp")
    if (isinstance(rec_eps, float) and isinstance(rec_rdp, float)
            and all(math.isfinite(x) and math.isfinite(y) and abs(x - y) <= 4 * math.ulp(y)
                    for x, y in ((rec_eps, again.epsilon), (rec_rdp, again.rdp)))):
        again = replace(again, epsilon=rec_eps, rdp=rec_rdp)
    return again


#: how far (relative) a recorded "optimised" order may lie from the order the installed search finds and still be
#: called the optimiser's. A certificate's search (:mod:`privgp.accounting.order_search`, zoom rounds) evaluates the
#: same orders on every CPU up to the last bits of ``tanh``/``exp``, and the best of its final round's points (1.8e-5
#: apart in its coordinate t) is another one only when two of them tie to rounding (about 1e-5 of certificates); so
#: the optimiser's order moves a few ulps between CPUs. An order this close passes: a channel of about 13 bits,
#: like the tolerances of the other rebuilt values (CHANGELOG, red team 25)
ORDER_TOLERANCE = 1e-12
#: the start of the note of a certificate whose "optimised" order is not the installed optimiser's
ORDER_NOTE = "certificate.alpha: "


def recorded_order_note(cert: PrivacyCertificate) -> str | None:
    """A note when ``cert`` (rebuilt at its recorded order, :func:`_at_recorded_order`) says its Renyi order was
    optimised but the installed optimiser finds another one (beyond :data:`ORDER_TOLERANCE`): an earlier privgp's
    search, or an order chosen by hand and labelled "optimised" -- a free number in a field privgp computes, i.e. a
    channel. The bound stays valid (any order gives one, and its epsilon is the value at the recorded order); the
    note makes ``--strict`` fail and the printed order say "recorded". None otherwise."""
    if cert.method != "rdp" or not cert.alpha_optimised:
        return None
    best = cert.recompute()   # alpha optimised again
    if best.method != "rdp" or best.alpha == cert.alpha:
        return None
    if abs(cert.alpha - best.alpha) <= ORDER_TOLERANCE * best.alpha:
        return None   # the same optimum, as another CPU's rounding finds it
    return (f"{ORDER_NOTE}the certificate calls its Renyi order {cert.alpha!r} optimised, but the installed privgp's search "
            f"finds {best.alpha!r} (epsilon {best.epsilon!r} there): an earlier privgp's search or an order chosen by hand. Its "
            f"epsilon is the value at the recorded order, which is a valid bound (any order gives one)")


def composition_of(cert_doc: Any, where: str) -> str:
    """The composition rule a recorded certificate states ("basic" when it states none: privgp 0.1's
    rule); CertificateMismatch naming ``where`` when it names no rule of this privgp."""
    rule = cert_doc.get("composition", LEGACY_COMPOSITION) if isinstance(cert_doc, dict) else LEGACY_COMPOSITION
    if not isinstance(rule, str) or rule not in COMPOSITIONS:
        raise CertificateMismatch(where, f"{_short(rule)} is not a composition rule of this privgp "
                                  f"({', '.join(COMPOSITIONS)})")
    return rule


def stated_rule(*cert_docs: tuple[Any, str]):
    """``with stated_rule((cert_doc, field), ...):`` rebuild a certificate with the accountant's
    composition rule its recorded certificate(s) state (:mod:`privgp.accounting.accountant`, item 4),
    calibrations included: an old certificate recomputes to what it showed, and one whose numbers do
    not follow its stated rule fails. Recorded certificates that state different rules fail."""
    rules = {(composition_of(c, where), where) for c, where in cert_docs if c is not None}
    names = {r for r, _ in rules}
    if len(names) > 1:
        raise CertificateMismatch(sorted(w for _, w in rules)[-1], f"the certificates state different composition "
                                  f"rules ({', '.join(sorted(names))})")
    return composition_rule(names.pop() if names else LEGACY_COMPOSITION)


def verify_mechanism(doc: dict, mech: Mechanism) -> PrivacyCertificate:
    """``privgp verify`` of a release certificate of ``mech``: its plan rebuilt from the public settings
    (:meth:`~privgp.mechanisms.interface.Mechanism.rebuild`) against everything recorded."""
    return verify_against_plan(doc, mech.rebuild(Recorded(doc)), mechanism=mech.name)


__all__ = ["CertificateMismatch", "VERIFY_MEMORY_LIMIT", "verify_mechanism", "verify_against_plan", "setting",
           "stated_rule", "composition_of"]
