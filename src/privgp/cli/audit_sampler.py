"""``privgp audit sampler``: what an iterative GP posterior sampler leaks, step by step (beyond the papers).

Registered by :mod:`privgp.cli.audit` as one of its subcommands.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from ..errors import InvalidParameterError
from ..formatting import format_lower, format_upper
from .common import nonnegative_int, positive_float, print_json
from .outputs import check_output_file

EPILOG = """\
Samplers of the seed-000 posterior GP(0, sigma^2 k) given n records (responses |y| <= M_Y, inputs on [0, 1]),
released at --release-points evenly spaced points:
  sto  sample-then-optimise: a prior path plus gradient descent (step h, from 0) on the representer weights;
       t = inf is an exact posterior draw;
  ula  preconditioned full-batch unadjusted Langevin on the function values (started at a prior draw).
Both iterates are Gaussian at every step, so everything below is exact for the pair it names.

For each step count t: an adversarial search over neighbouring datasets for the pair whose iterates
diverge most (order --alpha; default the order of the posterior certificate), then
  iterate, certified          the certified UPPER bound for the sto iterate (uniform over the domain;
                              inf while the sampler is too far from convergence for the argument);
  iterate, worst pair         the epsilon of that pair's exact RDP curve (a lower estimate of the worst case);
  iterate, lower bound        exact epsilon of one linear statistic: a proven LOWER bound on the sampler's epsilon;
  posterior, same pair        the exact posterior's epsilon for that pair;
next to the certified epsilon of one exact posterior draw (seed 000, Thm 3.1).

example:  privgp audit sampler --sampler sto --n 8 --r 1 --sigma 10 --png sto.png --json
"""

DEFAULT_STEPS = "0,1,3,10,30,100,300,1000,inf"


def register_sampler(asub) -> None:
    from .audit import memory_flag

    p = asub.add_parser("sampler", help="privacy of an iterative GP sampler's iterate vs the exact posterior",
                        description="Exact iterate laws of sample-then-optimise / ULA samplers for the GP posterior: "
                                    "the iterate's epsilon against the certified exact-posterior epsilon, by step count.",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sampler", choices=("sto", "ula"), default="sto", help="sampler (default sto)")
    p.add_argument("--n", type=int, default=8, help="dataset size (default 8)")
    p.add_argument("--r", type=positive_float, default=1.0, help="effective ridge r (default 1)")
    p.add_argument("--sigma", type=positive_float, default=10.0, help="kernel scale sigma (default 10)")
    p.add_argument("--kernel", default="exponential",
                   choices=("exponential", "matern32", "matern52", "squared_exponential"), help="kernel family")
    p.add_argument("--lengthscale", "--ell", dest="lengthscale", type=positive_float, default=0.3,
                   help="kernel lengthscale (default 0.3; --ell is the old spelling)")
    p.add_argument("--M-Y", dest="M_Y", type=positive_float, default=1.0, help="response bound (default 1)")
    p.add_argument("--delta", type=positive_float, default=1e-3, help="delta (default 1e-3)")
    p.add_argument("--steps", default=DEFAULT_STEPS, help=f"comma-separated step counts, 'inf' allowed (default {DEFAULT_STEPS})")
    p.add_argument("--step", type=positive_float, default=None,
                   help="step size h (default: 1/(n + r^2) for sto, 1/(1 + n/r^2) for ula; must not depend on the data)")
    p.add_argument("--init", choices=("prior", "zero"), default="prior", help="ULA start (default: a prior draw)")
    p.add_argument("--alpha", type=positive_float, default=None, help="Renyi order of the pair search")
    p.add_argument("--release-points", dest="m", type=int, default=5, help="release points on [0, 1] (default 5)")
    p.add_argument("--restarts", type=int, default=2, help="restarts of the pair search per step count (default 2)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the search's random restarts (default 0)")
    p.add_argument("--png", default="audit_sampler.png",
                   help="where to write the plot, a .png file (default audit_sampler.png); an existing file is "
                        "replaced only when it is a PNG picture")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    memory_flag(p)
    p.set_defaults(func=_run)


def _parse_steps(text: str) -> list[float]:
    out = []
    for part in text.split(","):
        part = part.strip()
        try:
            val = math.inf if part == "inf" else float(int(part))
        except ValueError:
            raise InvalidParameterError("--steps", "comma-separated integers >= 0 or 'inf'", text) from None
        if val < 0:
            raise InvalidParameterError("--steps", "comma-separated integers >= 0 or 'inf'", text)
        out.append(val)
    return sorted(set(out))


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _is_png(path) -> bool:
    """Whether the existing file ``path`` is a PNG picture (an earlier plot, which --png may replace)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(PNG_SIGNATURE)) == PNG_SIGNATURE
    except OSError:
        return False


def _run(args) -> int:
    from ..audit.samplers.langevin_gp import audit_sampler, check_sampler_memory
    from ..experiments.studies.sampler_audit import describe_factor, plot_sampler_audit
    from ..models.kernels import make_kernel
    from ..progress import Progress
    from ..validation import integer
    from .common import memory_limit

    steps = _parse_steps(args.steps)
    n = integer("--n", args.n, minimum=2)
    m = integer("--release-points", args.m, minimum=1)
    integer("--restarts", args.restarts, minimum=1)
    limit = memory_limit(args.memory_limit)
    check_sampler_memory(n, m, limit, names=("--n", "--release-points"))   # before anything is laid out or written
    if not 0 < args.delta < 1:
        raise InvalidParameterError("--delta", "in the open interval (0, 1)", args.delta)
    if args.alpha is not None and not args.alpha > 1:
        raise InvalidParameterError("--alpha", "> 1", args.alpha)
    if not math.isfinite(args.sigma):
        raise InvalidParameterError("--sigma", "finite (the samplers release the mean too)", args.sigma)
    kernel = make_kernel(args.kernel, args.lengthscale)
    png_path = check_output_file(   # before the work, by writing a probe file
        args.png, flag="--png", suffixes=(".png",), replace=_is_png,
        replace_hint="a new file or an existing PNG picture (it never replaces another kind of file)")
    t0 = time.perf_counter()
    with Progress(len(steps), "audit sampler: step counts", None) as bar:
        def progress(items):
            for item in items:
                bar.stage(f"t = {item:g}")
                yield item
                bar.update(1)

        audit = audit_sampler(args.sampler, kernel=kernel, n=n, r=args.r, sigma=args.sigma,
                              XT=np.linspace(0.0, 1.0, m)[:, None], M_Y=args.M_Y, delta=args.delta, steps=steps,
                              step=args.step, init=args.init, alpha=args.alpha, rng=np.random.default_rng(args.seed),
                              restarts=args.restarts, progress=progress, memory_limit=limit)
    try:
        png = plot_sampler_audit(audit, png_path)
    except OSError as exc:  # e.g. the disk filled up meanwhile
        raise InvalidParameterError("--png", "a file path in an existing writable folder",
                                    f"{args.png} ({exc.strerror or exc})") from None
    out = audit.to_dict()
    out.update(png=str(png), verdict=describe_factor(audit), seconds=round(time.perf_counter() - t0, 2))
    if args.json:
        print_json(out)
        return 0
    print(f"{args.sampler} sampler: n={n}, r={args.r:g}, sigma={args.sigma:g}, {args.kernel}(lengthscale={args.lengthscale:g}), "
          f"h={audit.step:.4g}, delta={args.delta:g}, search order alpha={audit.alpha:.4g}")
    print(f"  exact posterior, certified epsilon (seed 000): {format_upper(audit.epsilon_posterior_certified, 4)}")
    print(f"  {'t':>6} {'iterate cert.':>14} {'iterate pair':>13} {'iter. lower':>12} {'post. pair':>11}")
    for row in audit.rows:
        t = "inf" if math.isinf(row.steps) else f"{int(row.steps)}"
        # certified: an upper bound, rounded up; the pair values and the exact lower bound are what the search
        # found (lower bounds on the worst case), rounded down
        cert = "none" if args.sampler == "ula" else format_upper(row.epsilon_iterate_certified, 4)
        pair, low, post = (format_lower(x, 4, nan="nan") for x in (row.epsilon_iterate_pair,
                                                                   row.epsilon_iterate_lower, row.epsilon_posterior_pair))
        print(f"  {t:>6} {cert:>14} {pair:>13} {low:>12} {post:>11}")
    print(f"  {out['verdict']}")
    print(f"  wrote {png} ({out['seconds']:.1f} s)")
    return 0
