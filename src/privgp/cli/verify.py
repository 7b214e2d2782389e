"""``privgp verify certificate.json``: check a published certificate by re-deriving it, never by re-reading it.

Kinds of file (every certificate privgp writes): the certificate.json of ``privgp release`` (any
``--mechanism``), the certificate.json of ``privgp optimize``, and the certificate printed by
``privgp account --json`` (the calculator). For each, the privacy event is REBUILT from the file's
public settings through the same code that built it (the mechanism's plan function: n from
``dataset.n``, domain, response map, kernel, lengthscale, r, sigma, eta, L, delta, lemma, conversion,
noise, inducing inputs, ...) and compared field by field with the recorded event, settings and
numbers (:func:`privgp.cli.release_publish.verify_against_plan`); the first field that disagrees is
named. The numbers are recomputed with the accountant's composition rule the certificate states
(``composition``; absent: "basic", privgp 0.1's rule), so older certificates show what they showed.
Then the released files beside the certificate (or in ``--files DIR``) are hashed and
compared with the recorded sha256 (which must cover every released file the certificate lists); a
missing file is reported. The hashed files are then read and checked against the settings the
certificate states (:mod:`privgp.cli.verify_files`: response map, grid, a noisy grid's released map
as the public post-processing of its released statistics, an optimize run's rounds, the report's
epsilon), so a certificate rebuilt from edited settings does not verify against the real files. A JSON
object with a repeated key is not a certificate (exit 2).

Exit status: 0 verified (also when NOT COVERED by the lemmas -- published constants --, a file is
missing, or there are notes: all are printed, and ``covered`` / ``files`` / ``notes`` are in --json;
``--strict`` makes them exit 1);
1 NOT verified (the file disagrees with its rebuild, a released file was swapped, or it fails the
JSON Schema); 2 not a readable certificate (not JSON, not an object, nested too deep, unknown kind).
The ledger fields (entry id, dataset fingerprint, budget) are the data holder's statement and cannot
be checked by a third party: the ledger is private.
"""
from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from types import SimpleNamespace

from ..accounting import PrivacyCertificate
from ..errors import DataError, InvalidParameterError, NumericalError, PrivgpError
from ..formatting import format_short_of
from ..validation import escaped
from . import release_publish as publish
from . import verify_files
from .common import print_json
from .release_figure import format_upper

DESCRIPTION = textwrap.dedent("""\
    Verify a certificate written by privgp: the certificate.json of `privgp release` or `privgp
    optimize`, or the output of `privgp account --json`. The privacy event is REBUILT from the
    certificate's public settings (n, domain, response map, kernel, lengthscale, r, sigma, eta, L,
    delta, sensitivity lemma, constants, conversion, noise, ...) by the installed privgp's own plan
    code, and compared with the recorded event, settings, mechanism label and (epsilon, delta); the
    first field that disagrees is named. The sha256 of each released file beside the certificate
    (or in --files DIR) is compared with the recorded one, and the files are read and checked
    against the stated settings: every data file the mechanism writes is hashed and holds what it
    writes from the released arrays (a noisy grid's map and sd recomputed from its released
    statistics; L paths on the grid), an optimize run's rounds are the rebuilt plan's, the report
    states the certificate's epsilon, a sparse GP's prediction is recomputed from its released
    statistics. A sample path cannot be tied to epsilon (only their number, grid and shape are
    checked). A functional or discretised-gaussian release is NOT VERIFIED (its float noise leaks).
    Needs no data and no ledger.

    Not verifiable by a third party: the ledger fields (entry id, dataset fingerprint, budget and
    spent epsilon) are the data holder's statement; the ledger is private. Nor can verify know
    whether the settings were really chosen without looking at the data, or whether n is the true
    number of records: the certificate states them, verify checks what follows from them. It checks
    that the certificate, its settings and the released files agree; it cannot tell whether the data
    holder wrote all of them honestly.

    Exit status 0: verified (a certificate NOT COVERED by the lemmas -- published constants --, a
    released file missing, or a note -- a file checked only in part, an earlier privgp's format, a
    stopped optimize run, no forecast recorded, certificate words (assumptions, lemmas, warnings,
    notes) other than this privgp's -- is still 0, and says so; --strict makes each of
    them exit 1, and a certificate that records no sha256); 1: NOT verified; 2: not a readable
    certificate file (not JSON, a key repeated in one object, nested too deep, not a privgp
    certificate).
    """)

EXIT_NOT_VERIFIED = 1
LEDGER_NOTE = ("the ledger fields (entry id, dataset fingerprint, budget, spent epsilon, releases) are the data "
               "holder's statement, not verifiable by a third party (the ledger is private); so are how the randomness "
               "was drawn and the words that describe the records (their source, coordinate and response names), which "
               "the report repeats")
SCHEMA = "certificate.schema.json"
CERTIFICATE = "certificate.json"


def register(sub) -> None:
    p = sub.add_parser("verify", help="check a certificate by rebuilding it from its public settings",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("certificate", metavar="CERTIFICATE_JSON", help="a certificate.json (release, optimize; or the "
                   "output folder holding it) or the output of `privgp account --json`")
    p.add_argument("--files", metavar="DIR", help="folder holding the released files (default: the certificate's "
                   "folder)")
    p.add_argument("--strict", action="store_true", help="also fail (exit 1) when the guarantee is NOT COVERED by "
                   "the lemmas, a recorded file is missing, no sha256 is recorded, or there is any note (a file "
                   "checked only in part, an earlier privgp's format, a stopped optimize run, no forecast)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _load(path: Path) -> dict:
    return _load_text(path)[0]


def _shown_path(path) -> str:
    """A path as an error prints it: escaped (:func:`~privgp.validation.escaped`), at most 200 characters."""
    text = escaped(str(path))
    return text if len(text) <= 200 else text[:197] + "..."


def _load_text(path: Path) -> tuple[dict, str]:
    """The certificate file's document and its text (line ends as in the file)."""
    try:
        if path.exists() and not path.is_file():   # a folder, a FIFO (reading would block), a device
            raise DataError(f"not a regular file: {_shown_path(path)}")
        with open(path, encoding="utf-8", newline="") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise DataError(f"certificate file not found: {_shown_path(path)}") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)[:200]
        raise DataError(f"cannot read certificate file {_shown_path(path)}: {why}") from None
    try:
        doc = json.loads(text, object_pairs_hook=_without_duplicates)
    except json.JSONDecodeError as exc:
        raise InvalidParameterError("certificate", "a JSON file written by privgp", f"invalid JSON ({exc})") from None
    except _DuplicateKey as exc:
        raise InvalidParameterError("certificate", "a JSON file written by privgp (each key once per object)",
                                    f"the key {str(exc)[:80]!r} twice in one object") from None
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit for str -> int
        raise InvalidParameterError("certificate", "a JSON file written by privgp", f"unreadable JSON ({str(exc)[:120]})") from None
    except RecursionError:
        raise InvalidParameterError("certificate", "a JSON file written by privgp", "JSON nested too deeply") from None
    if not isinstance(doc, dict):
        raise InvalidParameterError("certificate", "a JSON object written by privgp", f"a JSON {type(doc).__name__}")
    bad = _unencodable(doc)
    if bad is not None:
        raise InvalidParameterError("certificate", "a JSON file written by privgp (text that UTF-8 can hold)",
                                    f"a lone surrogate escape in {bad[:80]!r}")
    if kind_of(doc) is None:
        raise InvalidParameterError("certificate", "a certificate written by privgp (release, optimize or account "
                                    "--json)", "a JSON object without 'mechanism' and 'certificate', "
                                    "'planned_rounds' or 'event'")
    return doc, text


def _unencodable(value: object) -> str | None:
    """The first string (key or value) of a JSON document that UTF-8 cannot encode (a lone surrogate escape such
    as \\ud800, which no privgp certificate holds), or None."""
    stack = [value]
    while stack:
        v = stack.pop()
        items = list(v.items()) if isinstance(v, dict) else [(None, x) for x in v] if isinstance(v, list) else []
        if isinstance(v, str):
            items = [(v, None)]
        for k, x in items:
            for s in (k, x):
                if isinstance(s, str):
                    try:
                        s.encode("utf-8")
                    except UnicodeEncodeError:
                        return s.encode("utf-8", "backslashreplace").decode("ascii")
            if isinstance(x, (dict, list)):
                stack.append(x)
    return None


class _DuplicateKey(ValueError):
    """A JSON object holding one key twice (readers disagree on which value counts)."""


def _without_duplicates(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def kind_of(doc: dict) -> str | None:
    """'release', 'optimize', 'account' (a bare PrivacyCertificate) or None."""
    if "planned_rounds" in doc and "released_rounds" in doc:
        return "optimize"
    if "mechanism" in doc and isinstance(doc.get("certificate"), dict):
        return "release"
    if "event" in doc and "solved_for" in doc:
        return "account"
    return None


def schema() -> dict:
    """The published JSON Schema of certificate.json (package data ``privgp/schemas``)."""
    from importlib.resources import files

    return json.loads((files("privgp") / "schemas" / SCHEMA).read_text(encoding="utf-8"))


#: the schema's branch ($defs) of each kind of certificate file
SCHEMA_BRANCH = {"release": "release", "optimize": "optimize", "account": "privacy_certificate"}


def check_schema(doc: dict) -> str:
    """'valid', or 'not checked (...)' without jsonschema; raises CertificateMismatch when invalid. The file
    is checked against the whole schema (one of its kinds), and an invalid one is explained by the branch of
    its own kind (not by whichever branch the validator finds closest)."""
    try:
        import jsonschema
    except ImportError:
        return "not checked (jsonschema is not installed)"
    whole = schema()
    if jsonschema.Draft202012Validator(whole).is_valid(doc):
        return "valid"
    branch = SCHEMA_BRANCH.get(kind_of(doc) or "")
    own = whole if branch is None else {**whole, "oneOf": [{"$ref": f"#/$defs/{branch}"}]}
    err = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(own).iter_errors(doc))
    if err is not None:
        while err.context:  # oneOf (release, optimize, account): the deepest reason of the closest branch
            err = jsonschema.exceptions.best_match(err.context)
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        raise publish.CertificateMismatch(where, f"does not match the certificate schema ({err.message[:200]})")
    return "valid"


def verify_document(doc: dict) -> tuple[PrivacyCertificate | None, list[str]]:
    """The rebuilt certificate of a certificate file (a dict), None for an optimize run that released nothing
    data-dependent, and the notes of the rebuild (a 1-D auto release by an earlier privgp's rule). Raises
    CertificateMismatch (a NumericalError) on any disagreement and other privgp errors when the public settings do
    not rebuild a release."""
    from ..accounting.calibrate import grids_watched, numpy_grids

    kind = kind_of(doc)
    with grids_watched() as grids:
        try:
            with _stated_rule(doc, kind):  # recomputed with the composition rule the certificate states
                again, notes = _rebuild(doc, kind)
                return again, notes + _order_notes(again)
        except publish.CertificateMismatch as exc:
            first = exc
    if not grids.differed:   # numpy's grids are these on this CPU: the rebuild below would be this one again
        raise first
    try:   # a value calibrated by privgp before 2026-11-27 on a CPU whose numpy rounds its own way (AVX-512)
        with _stated_rule(doc, kind), numpy_grids():
            again, notes = _rebuild(doc, kind)
            notes += _order_notes(again)
    except publish.CertificateMismatch:
        raise first from None
    return again, notes + [EARLIER_GRIDS_NOTE]


def _order_notes(again: PrivacyCertificate | None) -> list[str]:
    note = None if again is None else publish.recorded_order_note(again)
    return [] if note is None else [note]


#: the note of a certificate rebuilt only with the calibrator's grids of privgp before 2026-11-27
EARLIER_GRIDS_NOTE = ("calibrated as privgp before 2026-11-27 calibrated (numpy's geomspace, whose last bits depend "
                      "on the CPU): rebuilt exactly here; on a CPU of another kind it may not be")


def _stated_rule(doc: dict, kind: str | None):
    recorded = [(doc, "composition")] if kind == "account" else \
        [(doc.get(k), f"{k}.composition") for k in ("certificate", "planned_certificate")]
    return publish.stated_rule(*recorded)


def _rebuild(doc: dict, kind: str | None) -> tuple[PrivacyCertificate | None, list[str]]:
    if kind == "optimize":
        from .optimize import verify as verify_optimize

        return verify_optimize(doc), []
    if kind == "account":
        cert = verify_account(doc)
        mech = _registered(doc.get("mechanism")) if "public_settings" in doc else None
        # red team 21a L2: a planned guarantee of a mechanism privgp release refuses is no release's; --strict fails
        return cert, ([f"never released: privgp release refuses --mechanism {mech.name}: {mech.not_publishable}"]
                      if mech is not None and mech.not_publishable else [])
    from ..mechanisms.interface import Recorded

    mech = _registered(doc.get("mechanism"))
    plan = mech.rebuild(Recorded(doc))
    cert = publish.verify_against_plan(doc, plan, mechanism=mech.name)
    if hasattr(plan, "check_verifiable"):   # a noisy grid drawn with float noise does not hold its epsilon
        plan.check_verifiable()
    notes = []
    from ..mechanisms.interface import float_noise_leak

    if (leak := float_noise_leak(plan)) is not None:   # red team 20f: measured; --strict fails
        notes.append(f"float noise: {leak}")
    if mech.name in ("grid", "laplace-grid"):   # settings said to be auto's choice must be auto's choice
        from ..mechanisms.registered.auto import check_auto_choice

        note = check_auto_choice(Recorded(doc), plan)
        notes += [] if note is None else [note]
    return cert, notes


def _registered(name: object):
    """The registered mechanism a certificate names (not ``auto``: a release records the chosen one)."""
    from ..mechanisms.interface import registry

    mechs = registry()
    if not isinstance(name, str) or name not in mechs or name == "auto":
        raise publish.CertificateMismatch("mechanism", f"{name!r} is not a mechanism of this privgp "
                                          f"({', '.join(n for n in mechs if n != 'auto')})")
    return mechs[name]


def verify_account(doc: dict) -> PrivacyCertificate:
    """A certificate printed by ``privgp account --json``. With ``--mechanism NAME`` it carries the planned
    release's label, public settings and calibration: the plan is rebuilt by that mechanism as for a release
    (:func:`~privgp.cli.release_publish.verify_mechanism`). Otherwise (the calculator) its inputs are the
    event's own fields (n, r, sigma, eta, L, M_Y, lemma, RKHS norm, constants) with the kernel, lengthscale
    and domain of ``public``; the kernel facts (kappa, dim, ...) are re-derived from those and the whole
    certificate rebuilt by :func:`~privgp.mechanisms.posterior_sample.certify_posterior_sample`."""
    if "public_settings" in doc:  # `account --mechanism NAME --json`: a planned release
        settings = doc["public_settings"]
        if not isinstance(settings, dict):
            raise publish.CertificateMismatch("public_settings", "an object: the planned release's settings")
        from ..mechanisms.interface import Recorded

        planned = {"mechanism": doc["mechanism"], "public_settings": settings, "dataset": {"n": settings.get("n")},
                   "calibration": doc.get("calibration"),
                   "certificate": {k: v for k, v in doc.items() if k not in ("public_settings", "calibration")}}
        mech = _registered(doc["mechanism"])
        plan = mech.rebuild(Recorded(planned))
        # the output's "mechanism" is the release's label (checked: it rebuilds this plan), printed over the
        # certificate's own description of the mechanism, which is words
        planned["certificate"]["mechanism"] = plan.certificate.to_dict()["mechanism"]
        return publish.verify_against_plan(planned, plan, mechanism=mech.name)
    from ..accounting.events import event_from_dict
    from ..accounting.posterior_sampling import PosteriorSampleEvent
    from ..mechanisms.posterior_sample import certify_posterior_sample
    from ..models.domain import Box

    ev = event_from_dict(doc["event"])
    if not isinstance(ev, PosteriorSampleEvent):
        raise publish.CertificateMismatch("event.type", f"a posterior_sample event (what `privgp account` "
                                          f"certifies), found {ev.kind!r}")
    wrapped = {"mechanism": "account", "certificate": doc, "public_settings": doc.get("public")}
    pub = publish.setting(wrapped, "domain")
    if not isinstance(pub, dict):
        raise publish.CertificateMismatch("public.domain", "a box {lower, upper}")
    by_delta = doc.get("solved_for") == "epsilon"
    cert = certify_posterior_sample(
        ev.n, ev.r, ev.sigma, doc["delta"] if by_delta else None, epsilon=None if by_delta else doc["epsilon"],
        kernel=publish.setting(wrapped, "kernel"), lengthscale=publish.setting(wrapped, "lengthscale"),
        domain=Box(tuple(pub["lower"]), tuple(pub["upper"])), eta=ev.eta, L=ev.L, M_Y=ev.M_Y,
        sensitivity=ev.sensitivity, rkhs_norm=ev.rkhs_norm, constants=ev.constants, conversion=doc["conversion"],
        alpha=None if doc.get("alpha_optimised") else doc.get("alpha"))
    plan = SimpleNamespace(mechanism="account", event=cert.event, certificate=cert,
                           public_settings=lambda: cert.public)
    return publish.verify_against_plan(wrapped, plan)


def check_files(doc: dict, folder: Path) -> dict[str, str]:
    """{file: 'ok' | 'missing' | 'sha256 differs'} for each file whose sha256 the certificate records (a list
    :func:`~privgp.cli.verify_files.check_sha256_list` has checked: plain names, hex digests)."""
    recorded = doc.get("sha256")
    out: dict[str, str] = {}
    if not isinstance(recorded, dict):
        return out
    for name, digest in recorded.items():
        f = folder / name
        if not f.is_file():
            out[name] = "missing"
        else:
            out[name] = "ok" if publish.sha256_file(f) == digest else "sha256 differs"
    return out


def run(args) -> int:
    path = Path(args.certificate)
    try:
        if path.is_dir() and (path / "certificate.json").is_file():   # an output folder: its certificate
            path = path / "certificate.json"
        files_folder = args.files is None or (args.files != "" and Path(args.files).is_dir())   # "": not ".", say so
    except OSError as exc:   # e.g. a name too long for the file system
        raise DataError(f"cannot read {_shown_path(exc.filename or path)}: {exc.strerror}") from None
    if not files_folder:
        raise InvalidParameterError("--files", "an existing folder holding the released files", args.files)
    doc, text = _load_text(path)
    kind = kind_of(doc)
    label = doc.get("mechanism") if kind == "release" else ("optimize" if kind == "optimize" else "account")
    recorded = doc.get("certificate") if kind != "account" else doc
    again, reason, field, schema_state, files, notes = None, "", None, "not checked", {}, []
    counts: dict | None = None
    words: list[str] = []
    try:
        schema_state = check_schema(doc)
        verify_files.check_fields(doc, kind)
        again, rebuild_notes = verify_document(doc)
        verify_files.check_ledger_spent(doc, kind)   # against the event, now known to be the rebuilt one
        with _stated_rule(doc, kind):   # the certificate's words against the rebuilt ones (a note where they differ)
            words, word_notes = verify_files.statement_notes(doc, kind, again)
        verify_files.check_sha256_list(doc, kind)
        folder = Path(args.files) if args.files else path.parent
        files = check_files(doc, folder)
        bad = [f for f, state in files.items() if state == "sha256 differs"]
        if bad:
            raise publish.CertificateMismatch(f"sha256.{bad[0]}", "the file beside the certificate differs from the "
                                              "released one (swapped or modified)")
        with _stated_rule(doc, kind):
            notes = verify_files.check_contents(doc, kind, folder, files, path) + rebuild_notes + word_notes
        text_note = verify_files.json_text_note(path.name, text, doc)   # red team 17, H4: its text is privgp's
        notes += [] if text_note is None else [text_note]
        counts = verify_files.released_counts_total(doc, kind, folder, files)
    except publish.CertificateMismatch as exc:
        reason, field = str(exc), exc.field
    except NumericalError as exc:
        reason = str(exc)
    except RecursionError:
        raise InvalidParameterError("certificate", "a certificate written by privgp", "JSON nested too deeply") from None
    except OSError as exc:   # a released file the certificate names cannot be opened
        reason = f"a file the certificate names cannot be read ({exc.strerror or type(exc).__name__})"
    except (PrivgpError, TypeError, ValueError, KeyError, AttributeError, IndexError, ArithmeticError) as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]   # one line, whatever the error's text
        reason = f"the public settings do not rebuild a release ({type(exc).__name__}: {first})"
    ok = not reason
    words = words if ok else []
    nothing = ok and again is None  # optimize: only the data-independent prior round was released
    covered = None if again is None else bool(again.covered)
    missing = [f for f, state in files.items() if state == "missing"]
    strict_why = [why for why, failed in (
        ("NOT COVERED by the lemmas (published constants)", covered is False),
        (f"released file(s) missing: {', '.join(missing)}", bool(missing)),
        ("no released file hashed (sha256 absent or empty): the files cannot be checked",
         kind != "account" and not doc.get("sha256")),
        ("; ".join(notes), bool(notes)))
        if failed]
    strict_fail = ok and args.strict and bool(strict_why)
    if args.json:
        def echoed(x):   # what the certificate states, echoed only as a number or words (a nested value crashed
            return x if isinstance(x, (str, int, float)) else None   # the JSON writer: red team 24)

        eps = None if not isinstance(recorded, dict) else echoed(recorded.get("epsilon"))
        dlt = None if not isinstance(recorded, dict) else echoed(recorded.get("delta"))
        print_json({"file": path.name, "kind": kind, "mechanism": echoed(label), "verified": ok, "covered": covered,
                    "reason": reason or None, "field": field, "epsilon": eps, "delta": dlt,
                    "recomputed_epsilon": None if again is None else again.epsilon,
                    "recomputed_delta": None if again is None else again.delta,
                    "files": files if "sha256" in doc else None, "files_missing": missing,
                    "schema": schema_state, "ledger": LEDGER_NOTE, "strict_failed": strict_fail, "notes": notes,
                    "words_differ": words, "mostly_noise": _mostly_noise(doc, notes), "counts": counts})
    else:   # text read from the certificate or the folder is printed escaped: it cannot move the cursor or hide a line
        shown = escaped(str(label))
        if not ok:
            print(f"{escaped(path.name)}: NOT VERIFIED ({shown}): {escaped(reason)}")
        elif strict_fail:
            print(f"{escaped(path.name)}: NOT VERIFIED under --strict ({shown}): {escaped('; '.join(strict_why))}")
        else:
            _print_verified(path, doc, shown, again, nothing, files, [escaped(m) for m in missing],
                            escaped(schema_state), words, [escaped(n) for n in notes], counts,
                            Path(args.files) if args.files else path.parent)
    return EXIT_NOT_VERIFIED if (not ok or strict_fail) else 0


def _mostly_noise(doc: dict, notes: tuple[str, ...] | list[str] = ()) -> bool:
    """The certificate's forecast (a public annotation) says the map was released as mostly noise, or, with no
    forecast recorded or another one than privgp release makes, privgp's of its public settings says so (a note)."""
    fc = doc.get("forecast")   # or privgp's standard forecast, where the recorded one is not it (a note names it)
    return (isinstance(fc, dict) and fc.get("mostly_noise") is True) or any(
        n.startswith("forecast:") and "(MOSTLY NOISE)" in n for n in notes)


def _print_verified(path: Path, doc: dict, label, again, nothing: bool, files: dict, missing: list, schema_state,
                    words: list[str], notes: list[str], counts: dict | None, folder: Path) -> None:
    if nothing:
        print(f"{escaped(path.name)}: VERIFIED ({label}): only the data-independent first round was released (no privacy "
              "cost); the planned run's certificate rebuilds from its public settings")
    else:
        head = "VERIFIED" if again.covered else "VERIFIED, but NOT COVERED by the lemmas (published constants)"
        if notes:
            head += ", but some files or words CHECKED ONLY IN PART (notes below)"
        print(f"{escaped(path.name)}: {head} ({label}): rebuilt from its public settings, ({format_upper(again.epsilon, 10)}, "
              f"{format_upper(again.delta, 10)})-DP equals the recorded guarantee, i.e. epsilon <= {format_upper(again.epsilon, 4)} "
              f"at delta {format_upper(again.delta)}"
              + ("" if again.covered else "; this number is NOT a proven guarantee"))
    if "sha256" not in doc:
        print("  files:  no sha256 recorded (a certificate of an older privgp or of `account`): outputs not checked")
    elif not doc["sha256"]:
        print("  files:  none hashed (a certificate written alone): the released files were NOT checked")
    else:
        ok = [f for f, s in files.items() if s == "ok"]
        own = [verify_files._shown(f) for f in ok if f not in verify_files.PRIVGP_FILES]   # hashed, not read
        print(f"  files:  {len(ok)} released file(s) match their sha256" + (f" in {escaped(str(folder))}" if folder != path.parent else "")
              + (f" ({len(ok) - len(own)} of privgp's, read and checked; hashed only, not read: {', '.join(own)})"
                 if own else "")
              + (f"; MISSING (not checked): {', '.join(missing)}" if missing else ""))
        for note in notes:
            print(f"          {note}")
    if not doc.get("sha256"):
        for note in notes:   # the certificate's own words (no file read)
            print(f"  note:   {note}")
    if _mostly_noise(doc, notes):
        from ..tasks.forecast import NOISY_IOU

        fc = doc.get("forecast")
        iou = fc.get("expected_iou") if isinstance(fc, dict) else None
        recorded_noisy = isinstance(fc, dict) and fc.get("mostly_noise") is True
        print("  forecast: MOSTLY NOISE -- " + ("the release's own forecast said so" if recorded_noisy else
                                                "privgp's forecast of its settings says so")
              + (f" (expected IoU {format_short_of(float(iou), NOISY_IOU)})"   # 0.4988 is "0.49", not "0.50"
                 if recorded_noisy and isinstance(iou, (int, float)) else "")
              + " and it was released anyway: do not read its boundaries as findings")
    print(f"  schema: {schema_state}")
    if counts is not None:
        print(f"  n:      {counts['stated_n']} records stated; the released noisy counts sum to "
              f"{counts['released_counts_total']:.6g}, their noise's sd of that total {counts['noise_sd_of_total']:.3g} "
              "(n is the data holder's statement: the counts test it only up to their noise)")
    if words:
        print(f"  words:  the certificate's {', '.join(words)} differ from what this privgp states for it (printed "
              "below; an older privgp words them differently, or the file was edited): read them here, not in the file")
    print(f"  ledger: {LEDGER_NOTE}\n")
    if not nothing:   # an "optimised" order that is not the optimiser's is printed as recorded (red team 25)
        not_optimisers = any(n.startswith(publish.ORDER_NOTE) for n in notes)
        print(again.summary(order="recorded, not the installed optimiser's: see the note above" if not_optimisers
                            else None))
