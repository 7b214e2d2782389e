"""``privgp experiment NAME [--quick] --out DIR``: reproduce a table or figure of the seed papers."""
from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from ..errors import InvalidParameterError
from ..experiments import EXPERIMENTS, QUICK_FIXED, run_experiment
from .common import _parsed, print_json
from .outputs import check_output_dir

#: the largest --seed: the experiments derive their torch seeds from it (seed * 1000 + k must fit torch's 64 bits;
#: --seed 10**23 ended seed002-train with a traceback)
MAX_SEED = 2**32 - 1


def experiment_seed(text: str) -> int:
    """argparse type of --seed: an integer from 0 to :data:`MAX_SEED`."""
    return _parsed(text, int, lambda x: 0 <= x <= MAX_SEED, f"an integer >= 0 and <= {MAX_SEED}")


def register(sub) -> None:
    p = sub.add_parser("experiment", help="reproduce a table or figure of the seed papers",
                       description="Run a registered experiment; writes PNG/CSV/Markdown and run.json to --out.")
    p.add_argument("name", metavar="NAME", help="one of: " + ", ".join(sorted(EXPERIMENTS)))
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (new or empty, or pass --overwrite)")
    p.add_argument("--overwrite", action="store_true",
                   help="allow writing into a non-empty --out (an earlier run's files that this run does not write "
                        "are kept beside its own: use a new folder to keep runs apart)")
    p.add_argument("--quick", action="store_true", help="a small version (about a minute or less)")
    p.add_argument("--seed", type=experiment_seed, default=0, help="base seed of the experiment (default 0)")
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
    """true/false (any case), int, float, a comma-separated tuple of those, or the string itself."""
    parts = [t.strip() for t in text.split(",")]
    out: list[bool | int | float | str] = []
    for t in parts:
        if t.lower() in ("true", "false"):
            out.append(t.lower() == "true")
            continue
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


def _check_option_names(name: str, opts: dict) -> None:
    """An option (--set KEY=...) the experiment does not take is refused before anything is created."""
    import inspect

    from ..experiments import get_experiment

    fn = get_experiment(name)
    try:
        params = dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # pragma: no cover - not introspectable: the experiment checks
        return
    sources = getattr(fn, "options_from", ())   # where an experiment's **options go (e.g. config_1d)
    excluded = {"quick", *getattr(fn, "options_excluded", ())}
    for src in (sources if isinstance(sources, tuple) else (sources,)):
        params = {**{k: p for k, p in inspect.signature(src).parameters.items() if k not in excluded}, **params}
    taken = {k for k, p in params.items() if p.kind in (inspect.Parameter.KEYWORD_ONLY,
                                                        inspect.Parameter.POSITIONAL_OR_KEYWORD)}
    for key, value in opts.items():   # the experiment's own defaults say which values are flags and integers
        default = params[key].default if key in params else None
        if isinstance(default, bool) and not isinstance(value, bool):   # an on/off switch: --set dpsvgp=2 was on
            raise InvalidParameterError(f"--set {key}", "true or false", value)
        if type(default) is int and not (isinstance(value, int) and not isinstance(value, bool)):
            raise InvalidParameterError(f"--set {key}", "an integer", value)
        if key in params and _is_count(params[key]) and key not in ZERO_ALLOWED and \
                isinstance(value, int) and not isinstance(value, bool) and value < 1:
            raise InvalidParameterError(f"--set {key}", ">= 1 (a count)", value)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()) and not sources:
        return
    for key in opts:
        if key not in taken or key in RESERVED:
            flag = "--constants" if key == "constants" else f"--set option {key!r}"
            raise InvalidParameterError(flag, f"an option of experiment {name!r} (its options: "
                                        f"{', '.join(sorted(taken - RESERVED)) or 'none'})", opts[key])


#: the most local worker processes --workers may ask for, per core (the sweeps are CPU-bound)
WORKERS_PER_CORE = 4
#: the experiment's arguments set by their own flags, never by --set
RESERVED = frozenset({"out_dir", "out", "quick", "executor", "seed", "progress"})
#: integer options for which 0 means something (no timing runs): every other integer option is a count
ZERO_ALLOWED = frozenset({"timing_repeats", "dpsvgp_timing_repeats", "seed"})


def _is_count(param) -> bool:
    """An integer option (annotated int or int | None, or an int default, not a bool)."""
    ann = str(param.annotation).replace(" ", "")
    return ann in ("int", "int|None", "Optional[int]") or (type(param.default) is int and ann in ("", "inspect._empty",
                                                                                                  "<class'inspect._empty'>"))


def _remove_created(out: Path) -> None:
    """A failed run leaves no empty --out it created. Anything it wrote is kept, whatever the error: a run that
    fails after hours (a NaN loss, a worker lost) keeps its checkpoints, and a bad option is refused before the
    folder is made (``_check_option_names``) or before anything is written into it."""
    if out.is_symlink() or not out.is_dir():
        return
    with contextlib.suppress(OSError):
        out.rmdir()   # only when empty


def _as_set_option(exc: InvalidParameterError, opts: dict) -> InvalidParameterError:
    """An experiment's error about a value the user set with --set KEY=VALUE (the library names ``M_xi`` for
    ``--set M_xi_values=abc``): the same error naming the option as typed."""
    keys = [k for k in opts if k == exc.name or k.startswith(exc.name + "_")]
    if len(keys) == 1:
        return InvalidParameterError(_flag(keys[0]), exc.requirement, exc.value)
    if not keys and len(opts) == 1 and exc.name not in _OWN_FLAGS:
        # the one option given, checked under another name (--set eps_min=-1 failed as "epsilon", --set sigmas=-1
        # as "noise_std"): the user's option and value, and the library's name for it
        (key, value), = opts.items()
        return InvalidParameterError(_flag(key), f"{exc.requirement} (checked as {exc.name})", value)
    return exc


#: what an experiment's error names when it is about a value given by the command's own flags, not by --set
_OWN_FLAGS = frozenset({"seed", "workers", "scheduler", "executor", "progress", "out_dir", "out", "experiment"})


def _flag(key: str) -> str:
    """The flag that set experiment option ``key``."""
    return "--constants" if key == "constants" else f"--set {key}"


def _run(args) -> int:
    if args.name not in EXPERIMENTS:
        raise InvalidParameterError("experiment", f"one of {sorted(EXPERIMENTS)}", args.name)
    most = WORKERS_PER_CORE * (os.cpu_count() or 1)
    if args.workers is not None and not 1 <= args.workers <= most:
        # the local pool forks all its workers at its first task: --workers 100000 started 100000 processes
        raise InvalidParameterError("--workers", f"an integer from 1 to {most} ({WORKERS_PER_CORE} per core of this "
                                    "machine: each worker is a process, all started at once)", args.workers)
    if args.workers is not None and args.scheduler is not None:   # the cluster's workers run it: --workers was ignored
        raise InvalidParameterError("--workers", "left out with --scheduler (the Dask cluster's own workers run the "
                                    "experiment; --workers sets the local processes)", args.workers)
    opts = parse_options(args.options)
    if args.constants is not None:
        opts["constants"] = args.constants
    _check_option_names(args.name, opts)
    fixed = sorted(set(opts) & set(QUICK_FIXED.get(args.name, ()))) if args.quick else []
    if fixed:
        raise InvalidParameterError(f"--set {fixed[0]}", f"left out with --quick (the small version of {args.name} "
                                    f"sets {', '.join(QUICK_FIXED[args.name])} itself), or given without --quick",
                                    opts[fixed[0]])
    out = check_output_dir(args.out, args.overwrite, replace=False)   # it writes into --out, deleting nothing
    existed = out.exists()
    t0 = time.perf_counter()
    try:
        summary = run_experiment(args.name, args.out, quick=args.quick, scheduler=args.scheduler,
                                 workers=args.workers, seed=args.seed,
                                 progress="lines" if args.progress else None, **opts)
    except InvalidParameterError as exc:
        if not existed:
            _remove_created(out)
        raise _as_set_option(exc, opts) from None
    except (TypeError, ValueError, KeyError, IndexError, FileNotFoundError) as exc:
        if not existed:
            _remove_created(out)
        if not opts:
            raise
        # a value given with --set that the experiment could not use (the only input these errors can come from
        # in a run that validated its other arguments): one line, not a traceback
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        one = next(iter(opts)) if len(opts) == 1 else None   # the option that failed, when only one was given
        raise InvalidParameterError(_flag(one) if one else "--set",
                                    f"{'a value' if one else 'values'} experiment {args.name!r} can use (it failed "
                                    f"on {'it' if one else 'them'}: {type(exc).__name__}: {first})",
                                    opts[one] if one else ", ".join(f"{k}={v}" for k, v in opts.items())) from None
    except BaseException:
        if not existed:
            _remove_created(out)
        raise
    summary = dict(summary or {})
    summary.setdefault("seconds", round(time.perf_counter() - t0, 2))
    summary.setdefault("out", str(args.out))
    if args.json:
        print_json(summary)
    else:
        print(f"experiment {args.name}: wrote results to {args.out} in {float(summary['seconds']):.2f} s")
        for k, v in summary.items():
            if k not in ("seconds", "out"):
                print(f"  {k}: {json.dumps(v, default=str) if isinstance(v, (dict, list)) else v}")
    return 0
