"""What ``privgp verify`` checks of a release's picture, forecast and report.html (the data files are
:mod:`privgp.cli.verify_files`'s).

* the forecast, a seeded public simulation, is run again under the rebuilt plan with its recorded seed, families,
  noise and number of releases, and must be the recorded one;
* the picture is drawn again from the released map under the certificate (its title states the guarantee and the
  forecast's warning) and must be the hashed PNG, byte for byte or pixel for pixel; one drawn by another
  matplotlib (its PNG's Software chunk says which) is checked in part;
* report.html is read as a browser reads it (html.parser): it states the certificate's epsilon and delta once each
  and embeds the hashed picture; in the layout the installed privgp writes (``privgp-report-format``) it is redone
  word for word from the certificate, the released map and the picture's caption and alt text, and must be the
  same bytes; another layout is checked in part.

The words that describe the records (their source, coordinate and response names), how the randomness was drawn
and the ledger fields are the data holder's statement: the picture and the report are redone from them as stated.
"""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from ..errors import PrivgpError
from ..jsonable import to_jsonable
from . import release_publish as publish
from .verify_files import _mismatch, _same_json, _same_number


class _ReportFacts:
    """What verify reads in report.html with an HTML parser (comments, quoting and case as a browser reads them):
    every ``data-epsilon`` / ``data-delta`` attribute value, the release figure's ``src`` and the page's
    ``privgp-report-format``."""

    def __init__(self, text: str) -> None:
        from html.parser import HTMLParser

        self.values: dict[str, list[str]] = {"data-epsilon": [], "data-delta": []}
        self.figures: list[str] = []
        self.formats: list[str] = []
        facts = self

        class Parser(HTMLParser):
            def handle_starttag(self, tag, attrs):
                d = dict(attrs)
                for name, value in attrs:
                    if name in facts.values:
                        facts.values[name].append(value or "")
                if tag == "img" and d.get("id") == "release-figure":
                    facts.figures.append(d.get("src") or "")
                if tag == "meta" and d.get("name") == "privgp-report-format":
                    facts.formats.append(d.get("content") or "")

        Parser(convert_charrefs=True).feed(text)


def public_data(doc: dict) -> Any:
    """The public facts of the records a certificate states (n, source words, coordinate and response names): what
    the picture and the report are made of (the data holder's statement: no file can show them)."""
    from types import SimpleNamespace

    dataset = doc.get("dataset")
    dataset = dataset if isinstance(dataset, dict) else {}
    return SimpleNamespace(n=dataset.get("n"), source=dataset.get("source"), coordinates=dataset.get("coordinates"),
                           response_name=dataset.get("response"))


def check_forecast(doc: dict, plan: Any) -> Any:
    """The recorded utility forecast (a public, seeded simulation) run again under the rebuilt plan with its recorded
    seed, families, noise and number of simulated releases: it must be the same (a map forecast as mostly noise
    cannot be relabelled a good one). Returns the forecast (None when none is recorded, as the Python API may)."""
    from ..tasks.forecast import forecast

    recorded = doc.get("forecast")
    if recorded is None:
        return None
    try:
        families = tuple(recorded["families"])
        reps = int(recorded["simulated_releases"]) // len(families)
        again = forecast(plan, reps=reps, families=families, noise=float(recorded["response_noise_std"]),
                         seed=int(recorded["seed"]))
    except (TypeError, ValueError, KeyError, IndexError, ArithmeticError, PrivgpError) as exc:
        raise publish.CertificateMismatch("forecast", f"not a forecast privgp can run again ({type(exc).__name__}: "
                                          f"{str(exc)[:80]})") from None
    if not _same_json(recorded, json.loads(json.dumps(to_jsonable(again.to_dict())))):
        raise publish.CertificateMismatch("forecast", "not the forecast of these public settings (run again with its "
                                          "recorded seed, it gives another one)")
    return again


def check_picture(doc: dict, folder: Path, files: dict[str, str], rebuilt: tuple[Any, Any, Any],
                   fc: Any) -> tuple[Any, list[str]]:
    """The picture drawn again from the released map under the certificate (its title with the guarantee and the
    forecast's warning) must be the hashed picture, byte for byte; drawn by another matplotlib (the PNG says which)
    it is checked in part. Returns the picture drawn (its caption and alt text are the report's) and the notes. The
    pixels are compared when the bytes differ (another zlib compresses the same image otherwise)."""
    from . import release_publish as rp

    mech, plan, field = rebuilt
    drawn = rp.draw_picture(field, rp.picture_context(plan, public_data(doc), fc))
    if files.get(mech.picture) != "ok":
        return drawn, []
    png = (folder / mech.picture).read_bytes()
    if drawn.png == png or _same_pixels(drawn.png, png):   # the pixels: zlib builds compress the same image differently
        return drawn, []
    import matplotlib

    if f"Matplotlib version{matplotlib.__version__}," in _png_software(png):
        raise _mismatch(mech.picture, "not the picture privgp draws of the released map under the certificate (its "
                        "title states the guarantee)")
    return drawn, [f"{mech.picture}: checked in part (a PNG of the right kind): drawn by another matplotlib than "
                   f"{matplotlib.__version__}, it was not redrawn byte for byte"]


def _same_pixels(a: bytes, b: bytes) -> bool:
    """Two PNGs of the same size, mode and pixels (Pillow, which matplotlib writes PNGs with)."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(a)) as ia, Image.open(io.BytesIO(b)) as ib:
            return ia.size == ib.size and ia.mode == ib.mode and ia.tobytes() == ib.tobytes()
    except (OSError, ValueError, Image.DecompressionBombError):
        return False


def _png_software(png: bytes) -> str:
    """The PNG's ``Software`` text chunk ('' if none): matplotlib writes its version there."""
    import struct

    pos = 8
    while pos + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if kind == b"tEXt":
            key, _, value = png[pos + 8:pos + 8 + length].partition(b"\0")
            if key == b"Software":
                return value.decode("latin-1")
        if kind == b"IDAT":
            break
        pos += 12 + length
    return ""


def check_report(doc: dict, folder: Path, files: dict[str, str], rebuilt: tuple[Any, Any, Any] | None,
                  drawn: Any = None) -> list[str]:
    """report.html states the certificate's epsilon and delta once each (as parsed HTML) and embeds the hashed
    picture; a release's report in the layout the installed privgp writes is then redone word for word from the
    certificate, its released map and its picture (caption and alt text drawn again) and must be the same page.
    Returns a note when the page could be checked only in part (another layout, an older certificate)."""
    import base64

    from .release_report import REPORT_FORMAT

    text = (folder / "report.html").read_text(encoding="utf-8", errors="replace")
    cert = doc.get("certificate")
    cert = cert if isinstance(cert, dict) else {}
    facts = _ReportFacts(text)
    for attr in ("epsilon", "delta"):
        found = facts.values[f"data-{attr}"]
        if len(found) != 1:
            raise _mismatch(f"report.html.data-{attr}", f"{len(found)} statements of the report's {attr} where "
                            "privgp's report makes one")
        _same_number(found[0], cert.get(attr), f"report.html.data-{attr}")
    if rebuilt is None:
        return ["report.html: checked in part (its stated epsilon and delta): the released files it describes could "
                "not all be read"]
    mech, plan, field = rebuilt
    if files.get(mech.picture) != "ok":
        return [f"report.html: checked in part (its stated epsilon and delta): {mech.picture} is missing"]
    png = (folder / mech.picture).read_bytes()
    if facts.figures != ["data:image/png;base64," + base64.b64encode(png).decode("ascii")]:
        raise _mismatch("report.html", f"its figure is not {mech.picture} (the picture the certificate hashes)")
    ledger = doc.get("ledger")
    if facts.formats != [str(REPORT_FORMAT)] or not isinstance(ledger, dict) or "releases_after" not in ledger:
        return ["report.html: checked in part (its stated epsilon and delta, its figure): written in another layout, "
                "by an earlier privgp, or edited; its words were not redone"]
    if _report_again(doc, mech, plan, field, png, text, drawn).encode("utf-8") != (folder / "report.html").read_bytes():
        raise _mismatch("report.html", "not the report privgp writes for this certificate and its released map (its "
                        "words, numbers or settings were changed)")
    return []


def _report_again(doc: dict, mech: Any, plan: Any, field: Any, png: bytes, text: str, drawn: Any = None) -> str:
    """report.html as the installed privgp writes it for this certificate, its released map and its picture (with
    and without the opt-in map when the page holds one)."""
    import struct
    from types import SimpleNamespace

    from ..ledger import Spent
    from . import release_publish as rp
    from .release_figure import Picture

    ledger, data = doc["ledger"], public_data(doc)
    forecast = doc.get("forecast")
    fc = None if forecast is None else SimpleNamespace(to_dict=lambda: forecast)
    try:
        if drawn is None:   # caption and alt (the title is not in them)
            drawn = rp.draw_picture(field, rp.picture_context(plan, data))
        w, h = struct.unpack(">II", png[16:24])
        pic = Picture(png=png, caption=drawn.caption, alt=drawn.alt, width=w, height=h)
        spent = Spent(float(ledger.get("spent_epsilon_after")), 0.0, None, int(ledger["releases_after"]))
        charge = SimpleNamespace(budget_epsilon=ledger.get("budget_epsilon"), budget_delta=ledger.get("budget_delta"),
                                 spent_after=spent)
        again = ""
        for map_field in ((None, field) if '<section id="map">' in text else (None,)):   # --map: the page holds a map
            again = rp.report(mech, plan, data, pic, charge, str(ledger.get("fingerprint")), doc.get("randomness") or {},
                              list(doc.get("outputs") or []), fc, map_field=map_field)
            if again == text:
                break
        return again
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, ArithmeticError, struct.error) as exc:
        # fields a report cannot be made of
        raise _mismatch("report.html", f"cannot be redone from the certificate ({type(exc).__name__}: "
                        f"{str(exc)[:80]})") from None
