"""``privgp audit lood``: per-record leave-one-out distinguishability (seed 003) of a planned
posterior-sample release on the data holder's own data. Nothing is released, charged or written."""
from __future__ import annotations

import argparse
import math
import time

from ..formatting import format_lower, format_upper
from .common import grid_points, positive_float, print_json

EPILOG = """\
Takes the data, task and hyperparameter flags of `privgp release --mechanism posterior-sample`
(without --data: the embedded Baltimore house sales) and plans the same release, then computes for every record i
the LOOD of the released paths between the data without record i and the data (seed 003,
Def. 2.1): KL and Renyi of order alpha (default: the order of the certified epsilon), both
directions, for all L paths. With eta = 0 these are the divergences of the whole path (the law
at the record's own location is a sufficient statistic). For the --top most exposed records it
also searches replacements of the record (replace-one neighbours, what the certificate covers)
and reports the largest divergence found, which must stay below the certified RDP.

LOOD is add/remove-one distinguishability; the certificate is for replace-one neighbours, so a
LOOD above the certified RDP does not contradict the certificate.

THIS IS AN INTERNAL AUDIT: the per-record values are statistics of the private data and are not
covered by the release's guarantee. Do not publish them.
"""


LOOD_HELP = "per-record LOOD of a planned release (internal audit, not for publication)"


def register_lood(asub) -> None:
    from .release import add_data_arguments, add_mechanism_options

    p = asub.add_parser("lood", help=LOOD_HELP,
                        description="Per-record leave-one-out distinguishability of a planned posterior-sample "
                                    "release on your own data (seed 003), next to the certified worst case.",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(p, cluster=False)   # every record is read here: no --dask/--scheduler
    add_mechanism_options(p, ["posterior-sample"])   # the only mechanism audited
    g = p.add_argument_group("grid")
    g.add_argument("--grid", type=grid_points, metavar="N",
                   help="grid points along the longest side of the box (default: 201 in 1-D, 121 in 2-D); "
                        "with snapping it sets the lattice the inputs move to")
    a = p.add_argument_group("audit")
    a.add_argument("--alpha", type=positive_float, default=None,
                   help="Renyi order (> 1; default: the order at which the certified epsilon is attained)")
    a.add_argument("--top", type=int, default=10, help="most exposed records listed and searched (default 10)")
    a.add_argument("--candidates", type=int, default=None, metavar="M",
                   help="replacement locations per axis of the public box (default 201 in 1-D, 31 in 2-D)")
    a.add_argument("--json", action="store_true", help="print one JSON object")
    from .audit import memory_flag

    memory_flag(a)
    p.set_defaults(func=_run)


#: audit_release_lood's parameters set by a flag of another name
def _fmt(x) -> str:
    """A value the audit found (a lower bound on the worst case; None: +inf) as printed: rounded down."""
    return "inf" if x is None or (isinstance(x, float) and math.isinf(x)) else format_lower(x, 4, nan="nan")


def _ratio(x) -> str:
    """A found value over the certified one, rounded down; "n/a" where undefined (inf over inf, a bound of 0)."""
    return "n/a" if x is None else format_lower(x, 3, nan="nan")


def _cert(x) -> str:
    """A certified bound as printed: rounded up."""
    return format_upper(x, 4, nan="nan")


def _run(args) -> int:
    from ..audit.lood.release import NOTICE, audit_release_lood  # here: scipy.linalg (`privgp --help`)
    from ..errors import InvalidParameterError
    from ..mechanisms.interface import Request, get
    from .common import memory_limit
    from .release import load_data, mechanism_options

    if args.top < 1:
        raise InvalidParameterError("--top", "an integer >= 1 (the most exposed records listed and searched)",
                                    args.top)
    if args.candidates is not None and args.candidates < 2:
        raise InvalidParameterError("--candidates", "an integer >= 2 (replacement locations per axis)",
                                    args.candidates)
    limit = memory_limit(args.memory_limit)
    t0 = time.perf_counter()
    mech = get("posterior-sample")
    data, domain, rmap = load_data(args)
    plan = mech.build(Request(n=data.n, domain=domain, response_map=rmap, epsilon=args.epsilon, delta=args.delta,
                              grid=args.grid, options=mechanism_options(args)))
    res = audit_release_lood(plan, data.X, data.response, alpha=args.alpha, top=args.top,
                             candidates_per_axis=args.candidates, memory_limit=limit)   # errors: main._as_flag
    out = res.to_dict(top=args.top)
    out["settings"] = plan.public_settings()
    out["seconds"] = round(time.perf_counter() - t0, 3)
    if args.json:
        print_json(out)
        return 0
    print(NOTICE)
    print(f"privgp audit lood: {res.n} records, {plan.describe()}")
    print(f"  certificate        ({_cert(res.epsilon_certified)}, {format_upper(res.delta)})-DP, replace-one; certified "
          f"RDP at alpha = {res.alpha:.4g} ({res.alpha_source}): {_cert(res.certified_rdp)}")
    print(f"  LOOD over records  KL median {_fmt(out['kl_median'])}, max {_fmt(out['kl_max'])}; Renyi (alpha "
          f"{res.alpha:.4g}, larger direction) max {_fmt(out['renyi_max'])}"
          + ("" if out["renyi_max_over_certified"] is None else
             f" = {_ratio(out['renyi_max_over_certified'])} x certified"))
    print(f"  most exposed       {'record':>6} {'KL':>10} {'Renyi':>10} {'/cert':>8} {'replace-one':>12} {'/cert':>8}")
    for r in out["most_exposed"]:
        ren = max(r["renyi"], r["renyi_reverse"])
        print(f"                     {r['record']:>6} {_fmt(r['kl']):>10} {_fmt(ren):>10} "
              f"{_ratio(r['renyi_max_over_certified']):>8} {_fmt(r['replace_one_found']):>12} "
              f"{_ratio(r['replace_one_over_certified']):>8}")
    verdict = "<= certified (as it must be)" if out["replace_one_le_certified"] else \
        "ABOVE the certified RDP: the certificate is contradicted; please report this"
    print(f"  replace-one found  max {_fmt(out['replace_one_max_found'])} {verdict}")
    for note in res.notes:
        print(f"  note: {note}")
    print(f"  time               {out['seconds']:.2f} s")
    return 0
