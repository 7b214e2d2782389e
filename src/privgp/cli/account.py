"""``privgp account``: the privacy calculator. Without ``--mechanism``: the certified (epsilon, delta) of
releasing L posterior paths for given settings (seed 000). With ``--mechanism NAME`` (any registered
mechanism of ``privgp release``): the certificate a release with these public settings would carry,
planned by the same code, before any data is read."""
from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING

from ..errors import InvalidParameterError
from .common import box_from_values, positive_float, print_json

if TYPE_CHECKING:
    from ..models.domain import Box

KERNELS = ("exponential", "matern32", "matern52", "squared_exponential", "constant", "diagonal")
SENSITIVITIES = ("generic", "exp1d", "rkhs", "constant", "diagonal", "auto")

EPILOG = """\
Exactly one of --delta and --epsilon: --delta D gives the certified epsilon at delta D; --epsilon E
gives the smallest certified delta at epsilon E. By default the order alpha is optimised; --alpha A
reports the single-draw RDP bound at order A (and the L-fold value converted at that order).
The domain is the unit box [0,1]^D unless --box XMIN XMAX [YMIN YMAX ...] gives another box.

With --mechanism NAME: the certificate `privgp release --mechanism NAME` would write for these public
settings (--n, --box, --epsilon as the target, --delta, and the mechanism's own options, e.g. --cells
for grid), computed by the same plan function, without data: e.g.
          privgp account --mechanism grid --n 5000 --box 0 1 0 1 --epsilon 1

constants: 'proven' (default) uses Lemmas B.1/B.7 as stated; 'published' divides Delta_n by sqrt(2)
as the paper's tables did. Published numbers are NOT covered by the lemmas and are marked so.
conversion: 'improved' (default; Canonne-Kamath-Steinke 2020, Prop. 12) or 'mironov' (Mironov 2017,
Prop. 3, the paper's eq. (3)); the improved rule is never worse.

example:  privgp account --n 10 --kernel exponential --lengthscale 1 --r 1 --sigma 5 --delta 0.05 \\
              --sensitivity exp1d
"""


def register(sub) -> None:
    p = sub.add_parser("account", help="the certified (epsilon, delta) of a release, from its public settings alone",
                       description="Privacy calculator: the certificate a release would carry, from its public "
                                   "settings alone. With --mechanism NAME, that of privgp release --mechanism NAME; "
                                   "without, GP posterior sample-path release (seed 000, Thm 3.1 / Prop. 2 with the "
                                   "V_n, Delta_n bounds of App. B).",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from ..mechanisms.interface import registry

    p.add_argument("--mechanism", choices=list(registry()), default=None,
                   help="a mechanism of privgp release: print the certificate its release would carry for these "
                        "public settings (default: the posterior-sample calculator)")
    p.add_argument("--n", type=int, required=True, help="dataset size (replace-one neighbours)")
    p.add_argument("--kernel", choices=KERNELS, default=None, help="kernel family (normalised, k(x,x) = 1); "
                   "required without --mechanism")
    p.add_argument("--lengthscale", type=positive_float, default=None,
                   help="kernel lengthscale (required except for the constant and diagonal kernels; with "
                        "--mechanism the release's default: one fifth of the box diameter)")
    p.add_argument("--dim", type=int, default=None, help="input dimension D of the unit box [0,1]^D (default 1)")
    p.add_argument("--box", nargs="+", type=float, default=None, metavar="V",
                   help="public domain XMIN XMAX [YMIN YMAX ...] (default: the unit box [0,1]^D)")
    p.add_argument("--lower", type=float, nargs="+", default=None, help=argparse.SUPPRESS)   # before --box
    p.add_argument("--upper", type=float, nargs="+", default=None, help=argparse.SUPPRESS)
    p.add_argument("--r", type=positive_float, default=None, help="effective ridge r (r^2 = noise/signal ratio); "
                   "required without --mechanism")
    p.add_argument("--sigma", type=positive_float, default=None, help="kernel scale sigma ('inf' allowed); required "
                   "without --mechanism")
    p.add_argument("--eta", type=positive_float, default=None, help="GP prior noise level eta (Prop. 2; default 0)")
    p.add_argument("--L", type=int, default=None, help="number of independently released paths (default 1)")
    p.add_argument("--delta", type=positive_float, help="delta in (0, 1): report epsilon (with --mechanism: the "
                   "certificate's delta, default as privgp release)")
    p.add_argument("--epsilon", type=positive_float, help="epsilon >= 0: report the smallest delta (with --mechanism: "
                   "the target epsilon the release is calibrated to)")
    p.add_argument("--M-Y", dest="M_Y", type=positive_float, default=1.0, help="response bound |y| <= M_Y (default 1)")
    p.add_argument("--sensitivity", choices=SENSITIVITIES, default=None,
                   help="Delta_n lemma: generic (B.1, default), exp1d (B.7), rkhs (B.8), constant (B.4), diagonal (B.5), "
                        "auto (B.7 for the 1-D exponential kernel, else B.1); with --mechanism the release's own "
                        "choices: auto (its default), generic or exp1d")
    p.add_argument("--rkhs-norm", dest="rkhs_norm", type=positive_float, default=None,
                   help="RKHS norm bound B of the response function (for --sensitivity rkhs)")
    p.add_argument("--constants", choices=("proven", "published"), default="proven")
    p.add_argument("--conversion", choices=("improved", "mironov"), default=None,
                   help="RDP -> (epsilon, delta) conversion (default: improved)")
    p.add_argument("--alpha", type=positive_float, default=None, help="report at this Renyi order instead of optimising")
    p.add_argument("--grid", type=int, default=None, metavar="N", help="with --mechanism: grid points along the "
                   "longest side of the box (default as privgp release)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_other_mechanism_options(p)
    p.set_defaults(func=_run)


def _add_other_mechanism_options(p) -> None:
    """The registered mechanisms' options that the calculator does not define itself (e.g. --cells)."""
    from ..mechanisms.interface import all_options

    own = {a.dest for a in p._actions}
    group = p.add_argument_group("--mechanism options (see privgp release --help)")
    for dest, (opt, _) in all_options().items():
        if dest not in own:
            opt.add_to(group)


def _domain(args) -> Box:
    from ..models.domain import Box

    if args.box is not None:
        if args.lower is not None or args.upper is not None:
            raise InvalidParameterError("--lower/--upper", "left out with --box", (args.lower, args.upper))
        box = box_from_values(args.box, None)
        if args.dim is not None and args.dim != box.dim:
            raise InvalidParameterError("--dim", f"equal to the box dimension {box.dim}", args.dim)
        return box
    if args.lower is None and args.upper is None:
        dim = 1 if args.dim is None else args.dim
        if dim < 1:
            raise InvalidParameterError("--dim", "an integer >= 1", dim)
        return Box.unit(dim)
    if args.lower is None or args.upper is None:
        raise InvalidParameterError("--lower/--upper", "both given (the corners of the domain box)",
                                    (args.lower, args.upper))
    box = Box(tuple(args.lower), tuple(args.upper))
    if args.dim is not None and args.dim != box.dim:
        raise InvalidParameterError("--dim", f"equal to the box dimension {box.dim}", args.dim)
    return box


def _run_mechanism(args) -> int:
    """The certificate of a planned release of a registered mechanism (public settings only)."""
    from ..mechanisms.interface import DEFAULT_GRID, Request, get
    from ..mechanisms.release import ResponseMap
    from .release import mechanism_options

    mech = get(args.mechanism)
    domain = _domain(args)
    if domain.dim not in DEFAULT_GRID:   # as privgp.plan and privgp release (--dim 3 was a KeyError: red team 25)
        why = "with --mechanism (privgp maps responses along a line or over a plane; more coordinates are not supported)"
        if args.box is None and args.lower is None:
            raise InvalidParameterError("--dim", f"1 or 2 {why}", domain.dim)
        raise InvalidParameterError("--box" if args.box is not None else "--lower/--upper",
                                    f"a box of 1 or 2 coordinates {why}", f"{domain.dim} coordinates")
    for flag in ("M_Y", "rkhs_norm", "alpha"):
        if getattr(args, flag) not in (None, 1.0 if flag == "M_Y" else None):
            raise InvalidParameterError("--" + flag.replace("_", "-"), "left out with --mechanism (the release's own "
                                        "analysis)", getattr(args, flag))
    if args.constants != "proven":
        raise InvalidParameterError("--constants", "proven with --mechanism (releases use the proven lemmas)",
                                    args.constants)
    options = mechanism_options(args)
    mech.check_options(options)
    # the calculator reads no records and draws nothing: a noisy grid's memory limit only gates its release (walk-
    # through 17: n = 3e8 was refused on an estimate of records it never holds, naming a --memory-limit option it
    # does not have); other mechanisms keep the default (their plans may choose a sampler by it)
    limit = {"memory_limit": math.inf} if getattr(mech, "reads_cell_statistics", False) else {}
    plan = mech.build(Request(n=args.n, domain=domain, response_map=ResponseMap(0.0, 1.0),
                              epsilon=args.epsilon, delta=args.delta, grid=args.grid, options=options, **limit))
    cert = plan.certificate
    if args.json:
        # the plan's label, settings and calibration beside the certificate: `privgp verify` rebuilds it from them
        print_json({**cert.to_dict(), "mechanism": mech.resolve(plan).name, "public_settings": plan.public_settings(),
                    "calibration": getattr(plan, "calibration", None)})
    else:
        print(f"privgp account --mechanism {args.mechanism}: a release of n = {args.n} records planned as "
              f"{mech.resolve(plan).name} (no data read)")
        print(cert.summary())
        for line in _reading_notes(cert, args.n, plan.event):
            print(line)
    if mech.not_publishable:   # planned and accounted, never released (stderr: --json's stdout stays one document)
        print(f"privgp: note: privgp release refuses --mechanism {mech.name}: {mech.not_publishable}", file=sys.stderr)
    return 0


def _reading_notes(cert, n: int, event) -> list[str]:
    """Lines after the text certificate (not in --json, which `privgp verify` rebuilds): a pure epsilon-DP event
    says so (the bound needs no delta); an n * delta above 0.01 is named as what it is (walk-through 16: the
    calculator printed (eps, 0.01) for n = 1000 without a word, where release reports give no word of strength)."""
    from ..accounting.events import PureDpEvent
    from ..formatting import format_upper
    from .release_report import MAX_N_DELTA

    out = []
    if isinstance(event, PureDpEvent):
        out.append(f"pure {format_upper(event.epsilon, 4)}-DP: the bound holds with delta = 0 too")
    nd = n * float(cert.delta)
    if not nd <= MAX_N_DELTA:
        out.append(f"warning: n * delta = {format_upper(nd, 3)} is above {MAX_N_DELTA:g}: the chance that the release "
                   f"reveals some record outright is not negligible (privgp's default delta is min(1e-6, 1/(10 n)) "
                   f"= {min(1e-6, 1 / (10 * n)):.3g} here)")
    return out


def _run(args) -> int:
    from ..mechanisms.posterior_sample import certify_posterior_sample

    for flag in ("epsilon", "eta"):   # -0 is 0 (printed "(-0, ...)-DP" and recorded -0.0: red team 25)
        if getattr(args, flag) is not None:
            setattr(args, flag, getattr(args, flag) + 0.0)
    if args.mechanism is not None:
        return _run_mechanism(args)
    for flag in ("kernel", "r", "sigma"):
        if getattr(args, flag) is None:
            raise InvalidParameterError("--" + flag, "given (or --mechanism NAME)", None)
    if (args.delta is None) == (args.epsilon is None):
        raise InvalidParameterError("--delta/--epsilon", "exactly one of them", (args.delta, args.epsilon))
    for flag, value in (("eta", 0.0), ("L", 1), ("sensitivity", "generic"), ("conversion", "improved")):
        if getattr(args, flag) is None:
            setattr(args, flag, value)
    if args.lengthscale is None and args.kernel not in ("constant", "diagonal"):
        raise InvalidParameterError("--lengthscale", f"given for the {args.kernel} kernel", None)
    if args.sensitivity == "auto":  # the release's rule (accounting.sensitivity.choose_lemma)
        from ..accounting.sensitivity import choose_lemma

        args.sensitivity = choose_lemma("auto", args.kernel, _domain(args).dim)
    if args.rkhs_norm is not None and args.sensitivity != "rkhs":
        raise InvalidParameterError("--rkhs-norm", "used with --sensitivity rkhs (the only lemma that reads it)",
                                    args.rkhs_norm)
    if args.rkhs_norm is None and args.sensitivity == "rkhs":   # the lemma's own error named rkhs_norm (red team 25)
        raise InvalidParameterError("--rkhs-norm", "given with --sensitivity rkhs (Lemma B.8 bounds the responses "
                                    "by an RKHS function of this norm)", None)
    cert = certify_posterior_sample(args.n, args.r, args.sigma, args.delta, kernel=args.kernel,
                   lengthscale=None if args.kernel in ("constant", "diagonal") else args.lengthscale,
                   domain=_domain(args), eta=args.eta, L=args.L, M_Y=args.M_Y, sensitivity=args.sensitivity,
                   rkhs_norm=args.rkhs_norm, constants=args.constants, conversion=args.conversion,
                   alpha=args.alpha, epsilon=args.epsilon)
    if args.json:
        print_json(cert.to_dict())
    else:
        print(cert.summary())
        for line in _reading_notes(cert, args.n, None):
            print(line)
    return 0
