"""What ``privgp verify`` checks of a release's picture, forecast and report.html (the data files are
:mod:`privgp.cli.verify_files`'s).

* the forecast, a seeded public simulation, is compared with the one ``privgp release`` makes for the rebuilt plan;
  one made with other settings must be what those settings give, and is noted (``--strict`` fails), as is none;
* the picture is drawn again from the released map under the certificate (its title states the guarantee and the
  forecast's warning) and must be the hashed PNG chunk by chunk (valid, nothing after IEND, the same chunks and
  text, the same image data or pixels); one holding only what matplotlib writes, drawn by another matplotlib (its
  Software chunk says which), is checked in part;
* report.html is read as a browser reads it (html.parser): it states the certificate's epsilon and delta once each
  and embeds the hashed picture; in the layout the installed privgp writes (``privgp-report-format``) it is redone
  word for word from the certificate, the released map and the picture's caption and alt text, and must be the
  same bytes; another layout is checked in part.

The words that describe the records (their source, coordinate and response names), how the randomness was drawn
and the ledger fields are the data holder's statement: the picture and the report are redone from them as stated.
"""
from __future__ import annotations

import hashlib
import json
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import PrivgpError
from ..jsonable import to_jsonable
from . import release_publish as publish
from .verify_files import _mismatch, _same_json, _same_number

#: the most pixels a released picture may have (privgp's are well below a megapixel)
MAX_PIXELS = 50_000_000


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
    """The public facts of the records a certificate states (n, source words, coordinate and response names, the
    projection from a CRS): what the picture and the report are made of (the data holder's statement: no file can
    show them)."""
    from types import SimpleNamespace

    dataset = doc.get("dataset")
    dataset = dataset if isinstance(dataset, dict) else {}
    return SimpleNamespace(n=dataset.get("n"), source=dataset.get("source"), coordinates=dataset.get("coordinates"),
                           response_name=dataset.get("response"), projection=dataset.get("projection"))


def check_forecast(doc: dict, plan: Any) -> tuple[Any, list[str]]:
    """The recorded utility forecast against the one ``privgp release`` makes for the rebuilt plan (a seeded public
    simulation: its families, noise, seed and number of releases are privgp's). Equal: returned, no note. Made with
    other settings (a Python caller's choice) but what those settings give: returned, with a note naming the standard
    forecast (``--strict`` fails; a forger could pick settings that look better). No forecast: None, with a note.
    Anything else fails. The picture's title carries the returned forecast's warning."""
    from ..mechanisms.interface import for_plan
    from ..tasks.forecast import MAX_VERIFIED_FAMILIES, MAX_VERIFIED_REPS, forecast

    standard = forecast(plan, reps=for_plan(plan).forecast_reps)
    said = (f"the forecast privgp release makes says expected IoU {standard.iou_text()}"
            + (" (MOSTLY NOISE)" if standard.noisy else ""))
    recorded = doc.get("forecast")
    if recorded is None:
        return None, [f"forecast: none recorded, so the release does not say how good its map is; {said}"]
    if _same_json(recorded, _as_json(standard.to_dict())):
        return standard, _inexact(recorded, standard)
    try:
        families = tuple(recorded["families"])
        if len(families) > MAX_VERIFIED_FAMILIES:
            raise ValueError(f"{len(families)} families")
        reps = int(recorded["simulated_releases"]) // len(families)
        if reps > MAX_VERIFIED_REPS:   # red team 19c: 1e308 releases kept verify busy; unchecked, it may say anything
            raise ValueError(f"more than {MAX_VERIFIED_REPS} simulated releases a family, which verify does not run")
        again = forecast(plan, reps=reps, families=families, noise=float(recorded["response_noise_std"]),
                         seed=int(recorded["seed"]))
    except (TypeError, ValueError, KeyError, IndexError, ArithmeticError, PrivgpError) as exc:
        raise publish.CertificateMismatch("forecast", f"not a forecast privgp can run again ({type(exc).__name__}: "
                                          f"{str(exc)[:80]})") from None
    if not _same_json(recorded, _as_json(again.to_dict())):
        if plan.domain.dim == 1:   # privgp before 2026-11-26 compared 1-D maps with its 2-D table's non-private map
            older = forecast(plan, reps=reps, families=families, noise=float(recorded["response_noise_std"]),
                             seed=int(recorded["seed"]), reference_table_dim=2)
            if _same_json(recorded, _as_json(older.to_dict())):
                return older, ["forecast: made as privgp before 2026-11-26 made 1-D forecasts (the non-private map of "
                               f"its 2-D table); {said}"] + _inexact(recorded, older)
        raise publish.CertificateMismatch("forecast", "not the forecast of these public settings (run again with its "
                                          "recorded seed, it gives another one)")
    return again, [f"forecast: made with other settings than privgp release's (seed, families, noise or releases); "
                   f"{said}"] + _inexact(recorded, again)


def _inexact(recorded: Any, again: Any) -> list[str]:
    """No note when the recorded forecast is exactly the recomputed one (every number and its type), else the note
    of a forecast equal only to 1e-9 relative: another platform's rounding, or low digits that carry something else
    (red team 17, H7)."""
    if json.dumps(recorded) == json.dumps(_as_json(again.to_dict())):
        return []
    return ["forecast: checked in part (its numbers equal the recomputed forecast's to 1e-9 relative, not exactly: "
            "another platform's rounding, or low digits that carry something else)"]


def _as_json(value: Any) -> Any:
    """``value`` as certificate.json holds it (non-finite numbers as the strings to_jsonable writes)."""
    return json.loads(json.dumps(to_jsonable(value)))


def _as_numbers(value: Any) -> Any:
    """A certificate's JSON value with the strings to_jsonable writes for non-finite numbers read back as floats."""
    if isinstance(value, dict):
        return {k: _as_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_numbers(v) for v in value]
    return float(value) if isinstance(value, str) and value in ("inf", "-inf", "nan") else value


def check_picture(doc: dict, folder: Path, files: dict[str, str], rebuilt: tuple[Any, Any, Any],
                  fc: Any) -> tuple[Any, list[str]]:
    """The picture drawn again from the released map under the certificate (its title with the guarantee and the
    forecast's warning) must be the hashed picture (:func:`same_picture`). Returns the picture drawn (its caption and
    alt text are the report's) and the notes."""
    from . import release_publish as rp
    from .release_figure import PICTURE_FORMAT, PICTURE_FORMATS

    mech, plan, field = rebuilt
    ctx = rp.picture_context(plan, public_data(doc), fc)
    drawn = redrawn(field, ctx, PICTURE_FORMAT)
    if files.get(mech.picture) != "ok":
        return drawn, []
    png = (folder / mech.picture).read_bytes()
    what = ("the picture privgp draws of the released map under the certificate (its title states the guarantee; "
            "nothing else may be in the file)")
    try:
        return drawn, same_picture(mech.picture, png, drawn.png, what)
    except publish.CertificateMismatch:
        for fmt in sorted(set(PICTURE_FORMATS) - {PICTURE_FORMAT}, reverse=True):   # an earlier privgp's picture
            older = redrawn(field, ctx, fmt)
            if field is not None and older.png != drawn.png and _png_chunks(png) is not None:
                try:
                    notes = same_picture(mech.picture, png, older.png, what)
                except publish.CertificateMismatch:
                    continue
                return older, notes + [f"{mech.picture}: checked in part: drawn in privgp's earlier picture format "
                                       f"{fmt}, not the installed {PICTURE_FORMAT} (redrawn in format {fmt}, the same)"]
        raise


#: the pictures verify drew in this process, by the digest of everything the drawing reads (see :func:`kept_drawing`)
_REDRAWN: OrderedDict[bytes, Any] = OrderedDict()
#: how many it keeps (a picture is its PNG, about 0.1-0.3 MB, and two strings)
REDRAWN_KEEP = 16
_REDRAWN_LOCK = threading.Lock()


def redrawn(field: Any, ctx: Any, fmt: int) -> Any:
    """``draw_picture(field, ctx, fmt)``, kept in this process (:func:`kept_drawing`). A caller that verifies the same
    release again in one process (a test suite, a service; the suite's verify tests redrew the same pictures 85
    times, 0.4 s each) gets the bytes drawn the first time; the comparison with the file is still byte for byte."""
    from .release_figure import draw_picture

    return kept_drawing(lambda: draw_picture(field, ctx, fmt), "release picture", field, ctx, fmt)


def kept_drawing(draw: Callable[[], Any], *reads: Any) -> Any:
    """``draw()``, kept in this process by the SHA-256 digest of everything the drawing reads: ``reads`` (pickled: what
    is drawn, its format) and matplotlib's version and rcParams. Where the reads cannot be pickled, it is drawn every
    time. Used for the release picture (:func:`redrawn`) and an optimize run's queries.png."""
    import matplotlib

    try:
        digest = hashlib.sha256(pickle.dumps(reads, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:   # noqa: BLE001 - whatever cannot be pickled is drawn every time, as before
        return draw()
    digest.update(repr((matplotlib.__version__, _drawing_params(matplotlib.rcParams))).encode())
    key = digest.digest()
    with _REDRAWN_LOCK:   # verifies in several threads (a service) share the kept pictures
        kept = _REDRAWN.get(key)
        if kept is not None:
            _REDRAWN.move_to_end(key)
            return kept
    picture = draw()
    with _REDRAWN_LOCK:
        _REDRAWN[key] = picture
        while len(_REDRAWN) > REDRAWN_KEEP:
            _REDRAWN.popitem(last=False)
    return picture


def _drawing_params(rc) -> list:
    """matplotlib's rcParams as they are stored, sorted, except the backend, which the pictures do not use (they draw on
    the Agg canvas by name). Read by key, ``rcParams["backend"]`` resolves an unresolved backend: it imports pyplot and
    switches the caller's process to the first interactive backend that loads, a side effect of verifying a map that
    this read does not have (the time of a whole verify did not change measurably)."""
    return sorted((key, value) for key, value in dict.items(rc) if key != "backend")


def same_picture(name: str, png: bytes, drawn: bytes, what: str) -> list[str]:
    """A hashed PNG against the one privgp draws again: byte for byte the same (no note); else the same chunks
    (valid, nothing after IEND), every chunk but the image data byte for byte, the image data exactly (decompressed)
    or the same pixels (another encoder's row filters or zlib, another chunk layout): checked in part (a note).
    Otherwise NOT VERIFIED (``what`` says what it should be), except a PNG holding only what matplotlib
    writes and naming another matplotlib version: checked in part (a note)."""
    import matplotlib

    if png == drawn:   # byte for byte what privgp draws: nothing else can be in the file
        return []
    got, want = _png_chunks(png), _png_chunks(drawn)
    if got is not None and want is not None and all(got[k] == want[k] for k in ("order", "other", "tEXt")) and \
            (got["image"] == want["image"] or _same_pixels(png, drawn)):
        # the same picture, other bytes: how the image data is compressed and cut into chunks (empty ones
        # included) is free, so it could carry other data (red team 17, H3)
        return [f"{name}: checked in part (the same pixels as privgp draws, but not its bytes: the image data "
                "compressed or cut into chunks otherwise, which could carry other data)"]
    software = "" if got is None else dict(got["tEXt"]).get(b"Software", b"").decode("latin-1")
    own = software.startswith("Matplotlib version") and software.endswith(", https://matplotlib.org/")
    if got is None or not own or f"Matplotlib version{matplotlib.__version__}," in software or \
            set(got["order"]) - {"IHDR", "tEXt", "pHYs", "IDAT", "IEND"} or {k for k, _ in got["tEXt"]} != {b"Software"}:
        raise _mismatch(name, f"not {what}")
    return [f"{name}: checked in part (a matplotlib PNG): drawn by {software.split(',')[0]}, not the installed "
            f"{matplotlib.__version__}, it was not redrawn byte for byte"]


def _same_pixels(a: bytes, b: bytes) -> bool:
    """Two PNGs of the same size, mode and pixels (Pillow, which matplotlib writes PNGs with)."""
    import io

    from PIL import Image

    try:
        with Image.open(io.BytesIO(a)) as ia, Image.open(io.BytesIO(b)) as ib:
            return ia.size == ib.size and ia.mode == ib.mode and ia.tobytes() == ib.tobytes()
    except (OSError, ValueError, Image.DecompressionBombError):
        return False


def _png_chunks(png: bytes) -> dict[str, Any] | None:
    """A PNG's content as verify compares it: the order of its chunk types (consecutive IDATs as one), every chunk
    but IDAT byte for byte (text chunks as (key, value)), the decompressed image data; None for a file that is not
    one well-formed PNG (a bad CRC, an unknown critical chunk, bytes after IEND, a broken stream)."""
    import struct
    import zlib

    if png[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    order: list[str] = []
    other: list[tuple[str, bytes]] = []
    text: list[tuple[bytes, bytes]] = []
    idat = bytearray()
    pos = 8
    while True:
        if pos + 12 > len(png):
            return None
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if pos + 12 + length > len(png):
            return None
        body = png[pos + 8:pos + 8 + length]
        if len(body) != length or struct.unpack(">I", png[pos + 8 + length:pos + 12 + length])[0] != \
                zlib.crc32(kind + body):
            return None
        name = kind.decode("latin-1")
        if name == "IDAT":
            idat += body
            if not order or order[-1] != "IDAT":
                order.append(name)
        else:
            order.append(name)
            if name == "tEXt":
                key, _, value = body.partition(b"\0")
                text.append((key, value))
            else:
                other.append((name, body))
        pos += 12 + length
        if name == "IEND":
            break
    if pos != len(png) or any(n not in {"IHDR", "PLTE", "IDAT", "IEND"} and n[0].isupper() for n in order) or \
            not order or order[0] != "IHDR" or len(other[0][1]) != 13:
        return None
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", other[0][1])
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(colour)
    if channels is None or interlace != 0 or not 0 < width * height <= MAX_PIXELS:
        return None
    row = (width * channels * depth + 7) // 8 + 1
    stream = zlib.decompressobj()
    try:   # exactly the image: no more (a bomb, or data hidden after it), no stream after the first
        image = stream.decompress(bytes(idat), height * row + 1)
    except zlib.error:
        return None
    if len(image) != height * row or not stream.eof or stream.unused_data or stream.unconsumed_tail or \
            max(image[::row]) > 4:   # each row starts with its filter type, 0..4
        return None
    return {"order": order, "other": other, "tEXt": text, "image": image}


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
    fc = None if forecast is None else SimpleNamespace(to_dict=lambda: _as_numbers(forecast))
    try:
        if drawn is None:   # caption and alt (the title is not in them)
            drawn = rp.draw_picture(field, rp.picture_context(plan, data))
        w, h = struct.unpack(">II", png[16:24])
        pic = Picture(png=png, caption=drawn.caption, alt=drawn.alt, width=w, height=h)
        spent = Spent(float(ledger.get("spent_epsilon_after")), 0.0, None, int(ledger["releases_after"]))
        charge = SimpleNamespace(budget_epsilon=ledger.get("budget_epsilon"), budget_delta=ledger.get("budget_delta"),
                                 spent_after=spent)
        again = ""
        # source words other than privgp's (the data holder's statement, noted elsewhere): the page says either kind
        sources = [data] if data.source == rp.EMBEDDED or data.source in (rp.CSV_WORDS, rp.OTHER_SOURCE_WORDS) else \
            [SimpleNamespace(**{**vars(data), "source": words}) for words in (rp.CSV_WORDS, rp.OTHER_SOURCE_WORDS)]
        for map_field in ((None, field) if '<section id="map">' in text else (None,)):   # --map: the page holds a map
            for said in sources:
                again = rp.report(mech, plan, said, pic, charge, str(ledger.get("fingerprint")),
                                  doc.get("randomness") or {}, list(doc.get("outputs") or []), fc, map_field=map_field)
                if again == text:
                    return again
        return again
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, ArithmeticError, struct.error) as exc:
        # fields a report cannot be made of
        raise _mismatch("report.html", f"cannot be redone from the certificate ({type(exc).__name__}: "
                        f"{str(exc)[:80]})") from None
