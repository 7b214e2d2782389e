"""``privgp ledger show``: the privacy-budget ledger's datasets, totals and releases."""
from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from ..errors import InvalidParameterError
from ..formatting import exact_number, format_lower, format_upper
from ..ledger import Ledger, dataset_name_key, default_path
from ..validation import escaped
from .common import print_json

DESCRIPTION = textwrap.dedent("""\
    Show the privacy-budget ledger used by `privgp release`: per dataset (keyed fingerprint) its
    budget, the epsilon spent so far and what remains, then every release (entry) with its own
    certified (epsilon, delta) and status ('charged': budget taken, outputs possibly not written,
    e.g. after a crash; 'completed': `privgp release` wrote its outputs -- a Python privgp.release() marks
    its entry completed when the draw is made, unless called with mark_completed=False). Both count against
    the budget.

    Composition: each release's privacy event is stored; a dataset's spent epsilon is the
    accountant's guarantee for the composition of its events at the budget's delta (Renyi-DP curves
    add, minimised over the order exactly; the exact Gaussian-DP profile for purely Gaussian
    mechanisms). Releases known only as (epsilon, delta)-DP compose by the ledger file's own rule,
    shown first: 'profile' (exact, through privacy profiles, pure releases composed with others as
    randomized response; files created by privgp after 0.1.0) or 'basic' (epsilons and deltas add;
    files of privgp 0.1.0, which keep showing what they showed).
    """)


def register(sub) -> None:
    p = sub.add_parser("ledger", help="inspect the privacy-budget ledger", description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    lsub = p.add_subparsers(dest="ledger_command", metavar="ACTION")
    lsub.required = True
    s = lsub.add_parser("show", help="list datasets, totals and entries", description=DESCRIPTION,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--ledger", metavar="PATH", help=f"ledger file (default: $PRIVGP_LEDGER or {default_path(env=False)})")
    s.add_argument("--dataset", metavar="FINGERPRINT", help="only this dataset (a fingerprint or its prefix, or its label, e.g. the --dataset-id)")
    s.add_argument("--json", action="store_true", help="print as JSON")
    s.set_defaults(func=show)


def show(args) -> int:
    path = Path(args.ledger).expanduser() if args.ledger else default_path()
    if not path.exists():  # showing must not create a ledger
        if args.json:
            print_json({"ledger": str(path), "exists": False, "datasets": [], "entries": []})
        else:
            print(f"no ledger at {path} (nothing has been released with it yet)")
        return 0
    led = Ledger(path, readonly=True)  # reads an in-memory copy: never writes to the file (read-only files work)
    datasets = led.datasets()
    entries = led.entries()
    if args.dataset:
        key = dataset_name_key(args.dataset)   # folded as --dataset-id folds names (red team 25)
        wanted = [d for d in datasets if d.fingerprint.startswith(args.dataset) or dataset_name_key(d.label) == key]
        if not wanted:   # a typo must not read as "nothing spent"
            raise InvalidParameterError("--dataset", f"a fingerprint (or its prefix) or the label of one of the "
                                        f"{len(datasets)} dataset(s) in {led.path}", args.dataset)
        datasets = wanted
        keep = {d.fingerprint for d in datasets}
        entries = [e for e in entries if e.fingerprint in keep]
    if args.json:
        print_json({"ledger": str(led.path), "exists": True, "conversion": led.conversion,
                    "composition": led.composition,
                    "datasets": [d.to_dict() for d in datasets], "entries": [e.to_dict() for e in entries]})
        return 0
    print(f"ledger {led.path}: {len(datasets)} dataset(s), {len(entries)} release(s); composition rule "
          f"{led.composition!r}")
    if datasets:
        print(f"\n  {'dataset':<16}  {'budget eps':>10}  {'budget delta':>12}  {'spent eps':>10}  "
              f"{'remaining':>10}  {'releases':>8}  label")
        for d in datasets:
            # the budget as given; spent and each entry rounded up, what remains down (red team 25: entries were
            # printed rounded to nearest, below their certified values)
            print(f"  {d.fingerprint[:16]:<16}  {exact_number(d.budget_epsilon):>10}  {exact_number(d.budget_delta):>12}  "
                  f"{format_upper(d.spent.epsilon, 4):>10}  {format_lower(d.remaining_epsilon, 4):>10}  "
                  f"{d.spent.entries:>8}  {escaped(d.label)}")
    if entries:
        print(f"\n  {'entry':<32}  {'dataset':<16}  {'created (UTC)':<25}  {'status':<9}  {'epsilon':>8}  "
              f"{'delta':>9}  description")
        for e in entries:
            print(f"  {escaped(e.id):<32}  {e.fingerprint[:16]:<16}  {escaped(e.created):<25}  {escaped(e.status):<9}  "
                  f"{format_upper(e.epsilon, 4):>8}  {format_upper(e.delta):>9}  {escaped(e.description)}")
    return 0
