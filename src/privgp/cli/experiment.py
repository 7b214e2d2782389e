"""``privgp experiment NAME [--quick] --out DIR``: reproduce a table or figure of the seed papers."""
from __future__ import annotations

import json
import time

from ..errors import InvalidParameterError
from ..experiments import EXPERIMENTS, run_experiment
from .common import nonnegative_int, print_json
from .outputs import check_output_dir


def register(sub) -> None:
    p = sub.add_parser("experiment", help="reproduce a table or figure of the seed papers",
                       description="Run a registered experiment; writes PNG/CSV/Markdown and run.json to --out.")
    p.add_argument("name", metavar="NAME", help="one of: " + ", ".join(sorted(EXPERIMENTS)))
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (new or empty, or pass --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="allow writing into a non-empty --out")
    p.add_argument("--quick", action="store_true", help="a small version (about a minute or less)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="base seed of the experiment (default 0)")
    p.add_argument("--scheduler", default=None, metavar="ADDR", help="Dask scheduler address (default: local processes)")
    p.add_argument("--workers", type=int, default=None, help="local worker processes (default: all cores)")
    p.add_argument("--constants", choices=["proven", "published"], default=None,
                   help="Delta_n constants where the experiment supports both (default: the experiment's own)")
    p.add_argument("--set", dest="options", action="append", default=[], metavar="KEY=VALUE",
                   help="an experiment option, e.g. --set n_pairs=200 --set M_xi_values=0.1,0.5 "
                        "(repeatable; see the experiment's docstring and run.json for its options)")
    p.add_argument("--progress", action="store_true",
                   help="plain progress lines on stderr (for logs); a terminal shows a bar anyway")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_run)


def _value(text: str):
    """int, float, a comma-separated tuple of those, or the string itself."""
    parts = [t.strip() for t in text.split(",")]
    out: list[int | float | str] = []
    for t in parts:
        for conv in (int, float):
            try:
                out.append(conv(t))
                break
            except ValueError:
                continue
        else:
            out.append(t)
    return tuple(out) if len(parts) > 1 else out[0]


def parse_options(items: list[str]) -> dict:
    opts = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise InvalidParameterError("--set", "of the form KEY=VALUE", item)
        opts[key.strip()] = _value(value)
    return opts


def _run(args) -> int:
    if args.name not in EXPERIMENTS:
        raise InvalidParameterError("experiment", f"one of {sorted(EXPERIMENTS)}", args.name)
    if args.workers is not None and args.workers < 1:
        raise InvalidParameterError("--workers", "an integer >= 1", args.workers)
    check_output_dir(args.out, args.overwrite)
    opts = parse_options(args.options)
    if args.constants is not None:
        opts["constants"] = args.constants
    t0 = time.perf_counter()
    summary = run_experiment(args.name, args.out, quick=args.quick, scheduler=args.scheduler,
                             workers=args.workers, seed=args.seed,
                             progress="lines" if args.progress else None, **opts)
    summary = dict(summary or {})
    summary.setdefault("seconds", round(time.perf_counter() - t0, 2))
    summary.setdefault("out", str(args.out))
    if args.json:
        print_json(summary)
    else:
        print(f"experiment {args.name}: wrote results to {args.out} in {summary['seconds']} s")
        for k, v in summary.items():
            if k not in ("seconds", "out"):
                print(f"  {k}: {json.dumps(v, default=str) if isinstance(v, (dict, list)) else v}")
    return 0
