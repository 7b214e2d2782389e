"""``privgp account``: the privacy calculator (certified (epsilon, delta) of releasing L posterior paths)."""
from __future__ import annotations

import argparse

from ..mechanisms.posterior_sample import certify_posterior_sample
from ..domain import Box
from ..errors import InvalidParameterError
from .common import positive_float, print_json

KERNELS = ("exponential", "matern32", "matern52", "squared_exponential", "constant", "diagonal")
SENSITIVITIES = ("generic", "exp1d", "rkhs", "constant", "diagonal")

EPILOG = """\
Exactly one of --delta and --epsilon: --delta D gives the certified epsilon at delta D; --epsilon E
gives the smallest certified delta at epsilon E. By default the order alpha is optimised; --alpha A
reports the single-draw RDP bound at order A (and the L-fold value converted at that order).
The domain is the unit box [0,1]^D unless --lower/--upper give another box.

constants: 'proven' (default) uses Lemmas B.1/B.7 as stated; 'published' divides Delta_n by sqrt(2)
as the paper's tables did. Published numbers are NOT covered by the lemmas and are marked so.
conversion: 'improved' (default; Canonne-Kamath-Steinke 2020, Prop. 12) or 'mironov' (Mironov 2017,
Prop. 3, the paper's eq. (3)); the improved rule is never worse.

example:  privgp account --n 10 --kernel exponential --lengthscale 1 --r 1 --sigma 5 --delta 0.05 \\
              --sensitivity exp1d
"""


def register(sub) -> None:
    p = sub.add_parser("account", help="certified (epsilon, delta) of releasing L posterior sample paths",
                       description="Privacy calculator for GP posterior sample-path release (seed 000, "
                                   "Thm 3.1 / Prop. 2 with the V_n, Delta_n bounds of App. B).",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, required=True, help="dataset size (replace-one neighbours)")
    p.add_argument("--kernel", choices=KERNELS, required=True, help="kernel family (normalised, k(x,x) = 1)")
    p.add_argument("--lengthscale", type=positive_float, default=None,
                   help="kernel lengthscale (required except for the constant and diagonal kernels)")
    p.add_argument("--dim", type=int, default=None, help="input dimension D of the unit box [0,1]^D (default 1)")
    p.add_argument("--lower", type=float, nargs="+", default=None, help="lower corner of the public domain box")
    p.add_argument("--upper", type=float, nargs="+", default=None, help="upper corner of the public domain box")
    p.add_argument("--r", type=positive_float, required=True, help="effective ridge r (r^2 = noise/signal ratio)")
    p.add_argument("--sigma", type=positive_float, required=True, help="kernel scale sigma ('inf' allowed)")
    p.add_argument("--eta", type=positive_float, default=0.0, help="GP prior noise level eta (Prop. 2; default 0)")
    p.add_argument("--L", type=int, default=1, help="number of independently released paths (default 1)")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--delta", type=positive_float, help="delta in (0, 1): report epsilon")
    target.add_argument("--epsilon", type=positive_float, help="epsilon >= 0: report the smallest delta")
    p.add_argument("--M-Y", dest="M_Y", type=positive_float, default=1.0, help="response bound |y| <= M_Y (default 1)")
    p.add_argument("--sensitivity", choices=SENSITIVITIES, default="generic",
                   help="Delta_n lemma: generic (B.1), exp1d (B.7), rkhs (B.8), constant (B.4), diagonal (B.5)")
    p.add_argument("--rkhs-norm", dest="rkhs_norm", type=positive_float, default=None,
                   help="RKHS norm bound B of the response function (for --sensitivity rkhs)")
    p.add_argument("--constants", choices=("proven", "published"), default="proven")
    p.add_argument("--conversion", choices=("improved", "mironov"), default="improved")
    p.add_argument("--alpha", type=positive_float, default=None, help="report at this Renyi order instead of optimising")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run)


def _domain(args) -> Box:
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


def _run(args) -> int:
    if args.lengthscale is None and args.kernel not in ("constant", "diagonal"):
        raise InvalidParameterError("--lengthscale", f"given for the {args.kernel} kernel", None)
    cert = certify_posterior_sample(args.n, args.r, args.sigma, args.delta, kernel=args.kernel,
                   lengthscale=None if args.kernel in ("constant", "diagonal") else args.lengthscale,
                   domain=_domain(args), eta=args.eta, L=args.L, M_Y=args.M_Y, sensitivity=args.sensitivity,
                   rkhs_norm=args.rkhs_norm, constants=args.constants, conversion=args.conversion,
                   alpha=args.alpha, epsilon=args.epsilon)
    if args.json:
        print_json(cert.to_dict())
    else:
        print(cert.summary())
    return 0
