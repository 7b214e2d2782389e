"""``privgp verify certificate.json``: check a published release's certificate.

Recomputes the guarantee from the recorded privacy event through the accountant, re-derives what
the mechanism's event took from its public settings (posterior-sample: kappa and the kernel facts
from the kernel, lengthscale and domain), checks that the public settings shown in the file (and in
report.html) are the certified ones, and says whether everything matches. Exit status: 0 verified,
1 NOT verified (the file disagrees with its own recomputation), 2 not a certificate file.
"""
from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path

from ..accounting import PrivacyCertificate
from ..errors import DataError, InvalidParameterError, NumericalError
from .common import print_json
from .release_figure import format_upper

DESCRIPTION = textwrap.dedent("""\
    Verify the certificate.json of a `privgp release`: the (epsilon, delta) it states is recomputed
    from the privacy event it records and from its public settings, with the installed privgp.
    Needs no data and no ledger. Exit status 0: verified; 1: NOT verified; 2: not a readable
    certificate file.
    """)

EXIT_NOT_VERIFIED = 1


def register(sub) -> None:
    p = sub.add_parser("verify", help="check a release's certificate.json by recomputing its guarantee",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("certificate", metavar="CERTIFICATE_JSON", help="the certificate.json of a release")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _load(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"certificate file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read certificate file {path}: {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidParameterError("certificate", "a JSON file written by privgp release", f"invalid JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("certificate"), dict) or "mechanism" not in doc:
        raise InvalidParameterError("certificate", "the certificate.json of a privgp release (with 'mechanism' and "
                                    "'certificate')", "a JSON file without them")
    return doc


def verify_document(doc: dict) -> PrivacyCertificate:
    """The recomputed certificate of a release's certificate.json (a dict); raises NumericalError when
    the file disagrees with its recomputation, InvalidParameterError when it is not a certificate."""
    from .release import mechanism_module

    mod = mechanism_module(str(doc["mechanism"]))
    return mod.verify(doc)


def run(args) -> int:
    path = Path(args.certificate)
    doc = _load(path)
    recorded = PrivacyCertificate.from_dict(doc["certificate"])
    try:
        again = verify_document(doc)
        ok, reason = True, ""
    except NumericalError as exc:
        again, ok, reason = None, False, str(exc)
    if args.json:
        print_json({"file": path.name, "mechanism": doc["mechanism"], "verified": ok, "reason": reason or None,
                    "epsilon": recorded.epsilon, "delta": recorded.delta,
                    "recomputed_epsilon": None if again is None else again.epsilon,
                    "recomputed_delta": None if again is None else again.delta})
    elif ok:
        print(f"{path.name}: VERIFIED ({doc['mechanism']}): recomputed ({again.epsilon:.10g}, {again.delta:.10g})-DP "
              f"equals the recorded guarantee, i.e. epsilon <= {format_upper(again.epsilon, 4)} at delta "
              f"{format_upper(again.delta)}\n")
        print(again.summary())
    else:
        print(f"{path.name}: NOT VERIFIED ({doc['mechanism']}): {reason}")
    return 0 if ok else EXIT_NOT_VERIFIED
