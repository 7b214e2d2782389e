"""The publication outputs of ``privgp release``, shared by every mechanism: the picture and the report.

A mechanism module (``release_<name>.py``) provides, besides its options, plan and data files:

* ``PICTURE``: the picture's file name (e.g. ``excursion.png``);
* ``fields(released, plan) -> ReleasedField``: its released function(s) on the grid, model units;
* ``report_text(plan, ctx) -> MechanismReport``: its words for the report;
* ``verify(doc) -> PrivacyCertificate``: the check ``privgp verify`` runs on its certificate.json
  (at least :func:`verify_recompute`).

This module turns them, with the public facts of the data set (n, column names, the embedded
data's documented coordinate system and units), into the PNG and the HTML. It reads no private
value except n and writes nothing (the command writes into its atomic output folder).
"""
from __future__ import annotations

from .. import __version__
from ..accounting import PrivacyCertificate
from ..datasets import baltimore
from ..errors import NumericalError
from . import release_figure
from .release_figure import Picture, PictureContext, ResponseDisplay
from .release_report import LedgerTotals, ReportInput, render

REPORT = "report.html"
EMBEDDED = "embedded:baltimore"


def response_display(data) -> ResponseDisplay:
    """The response's name and units: documented for the embedded data, the column name otherwise."""
    if data.source == EMBEDDED:
        return ResponseDisplay(baltimore.RESPONSE_LABEL, baltimore.RESPONSE_UNIT, baltimore.RESPONSE_FORMAT)
    return ResponseDisplay(data.response_name)


def axis_labels(data) -> tuple[str, ...]:
    """The CSV's coordinate column names, or the embedded data's documented coordinate system."""
    return baltimore.COORDINATE_LABELS if data.source == EMBEDDED else tuple(data.coordinates)


def data_description(data) -> str:
    """The data set in words: public facts only (n, what the records are; never a file path)."""
    if data.source == EMBEDDED:
        return (f"{data.n} house sales in Baltimore, Maryland, in 1978 (Dubin 1992), whose locations and prices "
                "are treated as private")
    return f"{data.n} private records of a CSV file supplied by the data holder"


def picture_context(plan, data) -> PictureContext:
    cert = plan.certificate
    return PictureContext(domain=plan.domain, axis_labels=axis_labels(data), response=response_display(data),
                          response_map=plan.response_map, epsilon=float(cert.epsilon), delta=float(cert.delta))


def picture(mod, released, plan, data) -> Picture:
    """The release's picture (PNG bytes, caption, alt text) from the mechanism's fields; a mechanism whose
    release holds no map (``fields`` returns None, e.g. a private selection that accepted nothing) gets a
    picture that says so."""
    field = mod.fields(released, plan)
    ctx = picture_context(plan, data)
    if field is None:
        return release_figure.placeholder("No map was released (see the report).", ctx)
    return release_figure.draw(field, ctx)


def report(mod, plan, data, pic: Picture, charge, fingerprint: str, randomness: dict, files) -> str:
    """report.html's text for this release (public facts only)."""
    ctx = picture_context(plan, data)
    led = LedgerTotals(budget_epsilon=float(charge.budget_epsilon), budget_delta=float(charge.budget_delta),
                       spent_epsilon=float(charge.spent_after.epsilon), releases=int(charge.spent_after.entries),
                       fingerprint=fingerprint)
    return render(ReportInput(
        mechanism=mod.NAME, text=mod.report_text(plan, ctx), certificate=plan.certificate,
        public_settings=plan.public_settings(), n=data.n, data_description=data_description(data),
        coordinates=ctx.axis_labels, response=ctx.response, threshold_text=ctx.threshold_text(), domain=plan.domain,
        picture=pic, ledger=led, randomness=randomness, files=tuple(files), version=__version__))


def verify_recompute(doc: dict) -> PrivacyCertificate:
    """The least a mechanism's ``verify`` must do: rebuild the certificate from its recorded event
    through the accountant and compare (epsilon, delta). A mechanism whose event holds numbers
    derived from public settings (kernel facts, sensitivities) should also re-derive those, as
    posterior-sample does. Raises NumericalError on disagreement."""
    cert = PrivacyCertificate.from_dict(doc["certificate"])
    again = cert.recompute()
    if (again.epsilon, again.delta) != (cert.epsilon, cert.delta):
        raise NumericalError(f"certificate: recomputed ({again.epsilon}, {again.delta}) differs from the recorded "
                             f"({cert.epsilon}, {cert.delta})")
    return again
