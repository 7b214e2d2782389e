"""``privgp optimize``: private Bayesian optimisation by Thompson sampling (certificate + ledger).

Order of work (nothing is charged or written until every check has passed): parse -> load the
objective and the public candidates -> plan (calibrate the per-round noise for the total budget,
certify) -> check the output folder -> charge the ledger for the whole planned run (atomic; refusal
= exit 3) -> run the rounds -> write outputs -> mark the ledger entry completed. An objective that
fails mid-run stops the run: the outputs of the rounds released so far are written, the charge
stands, and the command exits with status 2 and one line saying what happened.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import math
import os
import sys
import textwrap
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import __version__
from ..datasets.objectives import FUNCTIONS, get_function
from ..errors import DataError, InvalidParameterError, ObjectiveError
from ..formatting import format_upper
from ..jsonable import to_jsonable
from ..ledger import DEFAULT_BUDGET_EPSILON, Ledger, check_budget, ledger_path, remaining_epsilon
from ..mechanisms.posterior_release import DEFAULT_MEMORY_LIMIT
from ..models.domain import Box
from ..progress import Progress
from ..tasks.thompson_options import KNOBS, SCHEDULES
from .common import nonnegative_int, print_json
from .outputs import OPTIMIZE_FILES, AtomicOutput, check_output_dir, check_output_file, write_file_atomically
from .release_publish import sha256_file

if TYPE_CHECKING:
    from ..tasks.thompson import Candidates, ThompsonPlan, ThompsonResult
from .common import box_from_values as _box
from .common import dataset_id as _dataset_id
from .common import memory_limit as _memory_limit
from .common import number_list as _number_list
from .common import randomness as _randomness

DEFAULT_GRID = {1: 1001, 2: 64, 3: 16}
DEFAULT_ROUNDS = 50
DEFAULT_EPSILON = 10.0
DEFAULT_SIGMA = 0.5
DEFAULT_EARLY_FACTOR = 2.0
OUTPUT_FILES = OPTIMIZE_FILES   # one list: --overwrite recognises an earlier run by it (cli.outputs)

DESCRIPTION = textwrap.dedent(f"""\
    Thompson sampling whose every round is a certified posterior-sample release. Round t draws
    one exact path from the GP posterior of the t-1 private records collected so far, on PUBLIC
    candidates; the query is its argmax (post-processing, released); the objective's response
    at that query is the new private record, clipped to |y| <= M_Y. The whole run is
    (epsilon, delta)-DP for replace-one neighbours among the records collected (seed 000,
    Thm 3.1 / Prop. 2; rounds compose adaptively in Renyi DP). Round 1 draws from the prior: no
    record is used, it costs nothing. The per-round ridge r_t (or GP noise eta_t) is calibrated
    from public quantities so that all planned rounds together meet --epsilon at --delta.

    Objective (one of):
      --function NAME    a simulated test function on the unit box ({', '.join(sorted(FUNCTIONS))}),
                         scaled to max 1, observed with Gaussian noise (--noise); responses are
                         synthetic;
      --lookup CSV       a table of records: coordinate column(s) (--x-cols) and a response column
                         (--response-col). Its distinct coordinates are the candidates (they must be
                         PUBLIC, e.g. the doses of a trial design); each query at a candidate uses the
                         next unused row for it, in file order; a candidate without rows left stops
                         the run;
      --callable M:F     a Python function F(x) -> response in module M (importable, or a path to a
                         .py file), called with one candidate x (a 1-D numpy array). It runs your code.
                         A module name is looked up in the installed packages first, the current
                         folder last.
    An objective that raises or returns a non-finite value stops the run cleanly: the rounds
    released so far are written, the charge stands, exit status 2.

    Candidates (PUBLIC, never derived from private data): a regular grid over --box (--grid points
    per axis), or --candidates CSV (one point per row, numeric columns = coordinates). --function
    uses the unit box.

    Ledger: the run is charged ONCE, before round 1, for all planned rounds (one entry holding the
    composed event), against one dataset whose record count grows over the run: --dataset-id NAME
    (the same name as for `privgp release` shares the budget), default: the lookup table's
    content (as `privgp release` keys a table), the function and its --objective-seed, or for
    --callable the function that runs, whatever module or alias names it: the canonical path of
    the file that defines its code (absolute, symbolic links resolved), the sha256 of that file,
    its qualified name and first line. obj.py:f, ./obj.py:f, the absolute path, a module name
    importing the same file, a package that re-exports f and an alias (g = f) share one budget:
    one budget per function; an edited or copied file is a new record source (give --dataset-id
    NAME to keep one budget across versions). A callable without Python code of its own (a
    functools.partial, an object with __call__, a built-in) is keyed by the file of the module
    named and the name typed after ':'. A run that
    stops early keeps the whole charge, so the ledger never holds less than was released.
    Refusal: exit status 3.

    Recommendation: the released query of the second half of the run with the most other queries of
    that half within a quarter lengthscale (post-processing of released queries: free; the responses
    are never used to pick it).

    Outputs in --out: history.csv (per round: n, r, eta, the released query, the round's epsilon and
    the epsilon spent after it; no responses), queries.png, certificate.json (the released rounds;
    with the planned run's certificate when it stopped early), summary.json. The private responses
    are written only with --save-responses PATH.
    """)


def register(sub) -> None:
    p = sub.add_parser("optimize", help="private Bayesian optimisation: Thompson sampling with a certified budget",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    o = p.add_argument_group("objective (exactly one)")
    src = o.add_mutually_exclusive_group(required=True)
    src.add_argument("--function", choices=sorted(FUNCTIONS), help="simulated test function on the unit box")
    src.add_argument("--lookup", metavar="CSV", help="table of records: coordinates -> response")
    src.add_argument("--callable", metavar="MODULE:FUNC", help="Python function x -> response (one budget per "
                     "function, whatever module or alias names it: the content of the file that defines it and its "
                     "qualified name; an edited file is a new record source unless --dataset-id)")
    o.add_argument("--x-cols", metavar="A[,B]", help="--lookup: coordinate columns (default: x, or x1,x2)")
    o.add_argument("--response-col", metavar="NAME", help="--lookup: response column (default: response)")
    o.add_argument("--noise", type=float, default=0.1, metavar="S",
                   help="--function: std of the Gaussian observation noise (default 0.1)")
    o.add_argument("--objective-seed", type=nonnegative_int, metavar="S",
                   help="--function: seed of the simulated noise (default: fresh entropy)")
    d = p.add_argument_group("public candidates")
    d.add_argument("--box", nargs="+", type=_number_list, metavar="V",
                   help="public domain XMIN XMAX [YMIN YMAX [ZMIN ZMAX]] (with --callable, or to widen a lookup's)")
    d.add_argument("--grid", type=int, metavar="N",
                   help="grid points per axis over --box (default 1001 in 1-D, 64 in 2-D, 16 in 3-D)")
    d.add_argument("--candidates", metavar="CSV", help="finite public candidate set (numeric columns)")
    h = p.add_argument_group("public settings (never chosen from the private data)")
    h.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help=f"rounds T = records collected (default {DEFAULT_ROUNDS})")
    h.add_argument("--epsilon", type=float, default=DEFAULT_EPSILON,
                   help=f"total epsilon of the run (default {DEFAULT_EPSILON:g})")
    h.add_argument("--delta", type=float, help="total delta (default min(1e-6, 1/(10 T)), T rounds)")
    h.add_argument("--kernel", choices=["exponential", "matern32", "matern52", "squared_exponential"],
                   help="kernel (default: exponential in 1-D, matern52 otherwise)")
    h.add_argument("--lengthscale", type=float, help="lengthscale (default: one fifth of the box diameter)")
    h.add_argument("--sigma", type=float, default=DEFAULT_SIGMA, help=f"kernel scale sigma (default {DEFAULT_SIGMA:g})")
    h.add_argument("--M-Y", dest="M_Y", type=float, default=1.0, help="response clipping bound M_Y (default 1)")
    h.add_argument("--knob", choices=KNOBS, default="r", help="calibrated per-round knob: ridge r (default) or "
                   "GP noise eta (then --r is the fixed ridge)")
    h.add_argument("--r", type=float, help="fixed ridge r (with --knob eta)")
    h.add_argument("--eta", type=float, help="fixed GP noise eta (with --knob r; default 0)")
    h.add_argument("--schedule", choices=SCHEDULES, default="equal",
                   help="per-round noise: equal (same every round, default) or early (more noise early)")
    h.add_argument("--early-factor", type=float, default=None,
                   help="--schedule early: noise multiplier of the first data round (default 2, decaying to 1)")
    h.add_argument("--conversion", choices=["improved", "mironov"], default="improved")
    x = p.add_argument_group("output, randomness, ledger")
    x.add_argument("--out", default="privgp_optimize", metavar="DIR", help="output folder, new or empty (written "
                   "atomically)")
    x.add_argument("--overwrite", action="store_true", help="allow replacing earlier outputs in --out")
    x.add_argument("--save-responses", metavar="PATH", help="also write the PRIVATE responses to this CSV")
    x.add_argument("--seed", type=nonnegative_int, help="DEMO ONLY: fixed seed of the released paths (default: fresh "
                   "OS entropy)")
    x.add_argument("--memory-limit", type=float, default=DEFAULT_MEMORY_LIMIT / 2**30, metavar="GIB",
                   help="refuse (before anything is charged) a run whose sampler would need more memory "
                        f"(default {DEFAULT_MEMORY_LIMIT / 2**30:g} GiB)")
    x.add_argument("--ledger", metavar="PATH", help="ledger file (default: $PRIVGP_LEDGER, else "
                   "$XDG_DATA_HOME/privgp/ledger.sqlite, else ~/.local/share/privgp/ledger.sqlite)")
    x.add_argument("--dataset-id", metavar="NAME", help="name of the record source in the ledger (one budget across versions; a "
                   "source charged before without a name or under another one is refused)")
    x.add_argument("--budget-epsilon", type=float, metavar="EPSILON", help=f"total epsilon of a dataset new to the ledger "
                   f"(default {DEFAULT_BUDGET_EPSILON:g})")
    x.add_argument("--budget-delta", type=float, metavar="DELTA",   # the help said "default: --delta" (red team 25)
                   help="total delta of a dataset new to the ledger (default: min(1e-6, 1/(10 T)) for a run of T "
                        "rounds, whatever --delta is)")
    x.add_argument("--progress", choices=["bar", "lines", "off"], default=None,
                   help="progress on stderr (default: a bar on a terminal, nothing otherwise)")
    x.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


# -- objectives -------------------------------------------------------------------------------------------------------

class _Lookup:
    """Responses from a table: each query at a candidate takes its next unused row (file order)."""

    def __init__(self, X: np.ndarray, response: np.ndarray):
        self.rows: dict[bytes, list[float]] = {}
        for x, y in zip(X, response):
            self.rows.setdefault(_key(x), []).append(float(y))
        self.used: dict[bytes, int] = {}

    def __call__(self, x) -> float:
        k = _key(np.asarray(x, dtype=float))
        vals = self.rows.get(k)
        if vals is None:
            raise ObjectiveError(f"no record at {np.asarray(x).tolist()}")
        i = self.used.get(k, 0)
        if i >= len(vals):
            raise ObjectiveError(f"all {len(vals)} record(s) at {np.asarray(x).tolist()} are used")
        self.used[k] = i + 1
        return vals[i]


def _key(x: np.ndarray) -> bytes:
    return np.ascontiguousarray(np.asarray(x, dtype=float) + 0.0).tobytes()


def _load_callable(spec: str):
    """(function, ledger key) of --callable MODULE:FUNC: the key of the function that runs, whatever module or
    alias names it (:func:`function_key`), with the key earlier versions gave this spelling (:func:`callable_key`)
    as an alias, so that a ledger they wrote keeps its budget; a callable without Python code of its own keeps the
    spelling's key."""
    mod_name, sep, func = spec.rpartition(":")
    if not sep or not mod_name or not func.isidentifier():
        raise InvalidParameterError("--callable", "MODULE:FUNCTION (a module name or a .py path, and a function name)",
                                    spec)
    try:
        if mod_name.endswith(".py"):
            path = Path(mod_name).expanduser()
            if not path.is_file():
                raise InvalidParameterError("--callable", "an existing .py file before ':'", mod_name)
            path = path.resolve()
            spec_obj = importlib.util.spec_from_file_location(f"privgp_user_objective_{path.stem}", path)
            if spec_obj is None or spec_obj.loader is None:
                raise InvalidParameterError("--callable", "a .py file Python can import", mod_name)
            module = importlib.util.module_from_spec(spec_obj)
            spec_obj.loader.exec_module(module)
        else:
            # the current folder is searched LAST: a file there never shadows an installed module
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.append(os.getcwd())
            module = importlib.import_module(mod_name)
    except InvalidParameterError:
        raise
    except BaseException as exc:  # user code: any import failure is a user error (asyncio.CancelledError too)
        raise ObjectiveError(f"--callable {spec}: cannot import {mod_name!r} ({type(exc).__name__}: {exc})") from None
    fn = getattr(module, func, None)
    if not callable(fn):
        raise InvalidParameterError("--callable", f"the name of a function in {mod_name!r}", func)
    spelled = callable_key(module, mod_name, func)
    own = function_key(fn)
    if own is None:
        return fn, spelled
    key, aliases = own
    return fn, (key, None, (spelled, *(a for a in aliases if a != spelled)))


def callable_key(module, mod_name: str, func: str) -> str:
    """The ledger key earlier versions gave a --callable objective, from its spelling: the canonical path
    (absolute, symbolic links resolved) of the file of the module NAMED (MODULE), the sha256 of its content and
    the name typed after ':' (FUNC). Since one function could get several budgets that way (a package that
    re-exports it, an alias ``g = f``), a function with Python code is now keyed by :func:`function_key`, this key
    being its alias (kept unchanged, so that a ledger written before finds it); it stays the key of a callable
    without Python code of its own (a ``functools.partial``, an object with ``__call__``, a built-in). A module
    without a file (built in) is keyed by its name."""
    import hashlib

    file = getattr(module, "__file__", None)
    if not file or not Path(file).is_file():
        return f"optimize:callable:module:{mod_name}:{func}"
    path = Path(file).resolve()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return f"optimize:callable:file:{path}:sha256={digest}:{func}"


def function_key(fn) -> tuple[str, tuple[str, ...]] | None:
    """The ledger key of the function that runs (one budget per function, whatever module or alias names it), and
    the keys earlier versions gave its canonical spelling; None for a callable without Python code of its own
    (a ``functools.partial``, an object with ``__call__``, a built-in) or whose code is not in a file on disk.

    The key: the canonical path (absolute, symbolic links resolved) of the file that defines the code of
    ``inspect.unwrap(fn)``, the sha256 of that file, the function's qualified name and its first line. ``pkg:f``
    (``pkg/__init__.py`` importing f), ``pkg.mod:f``, ``pkg/mod.py:f`` and ``pkg.mod:g`` (``g = f``) are one
    data set; another function in the file (another qualified name) is another one, and an edited or copied file
    is a new record source (--dataset-id NAME keeps one budget across versions). Alias: the key of
    ``MODULE:NAME`` as :func:`callable_key` gave it, MODULE the defining file (for a function at module level)."""
    import hashlib
    import inspect
    import types

    try:   # user code: a __wrapped__ chain may be cyclic, or an attribute may raise
        target = inspect.unwrap(fn)
        code = getattr(target, "__code__", None)
        qualname = getattr(target, "__qualname__", None)
        name = getattr(target, "__name__", None)
    except Exception:
        return None
    if not isinstance(code, types.CodeType) or not isinstance(qualname, str) or not qualname:
        return None
    try:
        path = Path(code.co_filename).resolve()
        if not path.is_file():
            return None
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except (OSError, RuntimeError, ValueError):   # no such file (e.g. "<string>"), unreadable, a symbolic link loop
        return None
    key = f"optimize:callable:code:{path}:sha256={digest}:{qualname}:{code.co_firstlineno}"
    aliases = ((f"optimize:callable:file:{path}:sha256={digest}:{name}",)
               if name == qualname and name.isidentifier() else ())
    return key, aliases


def _read_points(path: str) -> np.ndarray:
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise DataError(f"candidates file not found: {p}")
    from ..datasets.tabular import check_csv_shape

    try:
        with p.open("r", encoding="utf-8-sig", newline="") as fh:
            check_csv_shape(fh, str(p))  # repeated column names, ragged rows
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read candidates file {p}: {exc}") from None
    try:
        df = pd.read_csv(p)
    except Exception as exc:
        raise DataError(f"cannot parse candidates file {p} as CSV: {str(exc).splitlines()[0] if str(exc) else exc}") from None
    try:
        P = df.to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise DataError(f"candidates file {p} must have numeric columns only (coordinates)") from None
    if P.size and not np.all(np.isfinite(P)):
        raise DataError(f"candidates file {p} has missing or non-finite values")
    return P


def _objective(args):
    """(objective callable, candidates, source description, ledger key, truth function or None); the key of a
    lookup table is (its content digest, its legacy digests: for a ledger written by an earlier privgp)."""
    from ..tasks.thompson import Candidates  # here: the GP and the samplers (`privgp --help` stays light)

    if args.function is not None:
        for flag in ("box", "candidates", "x_cols", "response_col"):
            if getattr(args, flag) is not None:
                raise InvalidParameterError("--" + flag.replace("_", "-"), "left out with --function (it uses the "
                                            "unit box)", getattr(args, flag))
        f = get_function(args.function)
        noise = _nonneg("--noise", args.noise)
        cand = Candidates.grid(f.box, _grid(args, f.dim), memory_limit=_memory_limit(args.memory_limit))
        rng = np.random.default_rng(args.objective_seed)
        seed_part = str(args.objective_seed) if args.objective_seed is not None else uuid.uuid4().hex
        key = f"optimize:function:{f.name}:noise={noise!r}:seed={seed_part}"
        return f.noisy(noise, rng), cand, f"simulated {f.name} + N(0, {noise:g}^2) noise", key, f
    if args.objective_seed is not None:
        raise InvalidParameterError("--objective-seed", "used only with --function", args.objective_seed)
    if args.grid is not None and (args.lookup is not None or args.candidates is not None):
        given = "--lookup" if args.lookup is not None else "--candidates"
        raise InvalidParameterError("--grid", f"left out with {given} (its points are the candidates; --grid sets "
                                    "a regular grid over --box)", args.grid)
    if args.lookup is not None:
        if args.candidates is not None:
            raise InvalidParameterError("--candidates", "left out with --lookup (the table's coordinates are the "
                                        "candidates)", args.candidates)
        cols = [c.strip() for c in args.x_cols.split(",")] if args.x_cols else None
        if cols is None:
            import pandas as pd

            try:
                header = list(pd.read_csv(args.lookup, nrows=0).columns)
            except Exception:
                header = []
            cols = ["x1", "x2"] if {"x1", "x2"} <= set(header) else ["x"]
        from ..datasets.tabular import load_table  # pandas: imported where used

        data = load_table(args.lookup, cols, args.response_col or "response")
        box = None if args.box is None else _box(args.box, data.dim)
        try:   # the table's points are the candidates: an error about them names --lookup (red team 25)
            cand = Candidates.finite(np.unique(data.X, axis=0), box)
        except InvalidParameterError as exc:
            raise InvalidParameterError("--lookup", f"a table whose points are {exc.requirement}", exc.value) from None
        # published in summary.json: the file's name, not where it lies on the data holder's machine
        return _Lookup(data.X, data.response), cand, f"lookup table {Path(args.lookup).name} ({data.n} records)", \
            (data.content_digest, data.legacy_digests, data.aliases), None
    for flag in ("x_cols", "response_col"):
        if getattr(args, flag) is not None:
            raise InvalidParameterError("--" + flag.replace("_", "-"), "used only with --lookup", getattr(args, flag))
    with contextlib.redirect_stdout(sys.stderr):   # what user code prints must not break --json (red team 25)
        user_fn, key = _load_callable(args.callable)

    def fn(x):
        with contextlib.redirect_stdout(sys.stderr):
            return user_fn(x)

    if args.candidates is not None:
        P = _read_points(args.candidates)
        box = None if args.box is None else _box(args.box, P.shape[1] if P.ndim == 2 else 1)
        cand = Candidates.finite(P, box)
    else:
        if args.box is None:
            raise InvalidParameterError("--box", "given with --callable (or give --candidates)", None)
        if len(args.box) % 2 or not 2 <= len(args.box) <= 6:
            raise InvalidParameterError("--box", "2, 4 or 6 numbers (XMIN XMAX [YMIN YMAX [ZMIN ZMAX]])", len(args.box))
        dim = len(args.box) // 2
        box = _box(args.box, dim)
        cand = Candidates.grid(box, _grid(args, dim), memory_limit=_memory_limit(args.memory_limit))
    module, sep, func = str(args.callable).rpartition(":")
    return fn, cand, f"callable {Path(module).name}{sep}{func}" if sep else f"callable {args.callable}", key, None


def _nonneg(name, x) -> float:
    if not (x >= 0 and math.isfinite(x)):
        raise InvalidParameterError(name, "finite and >= 0", x)
    return float(x)


def _grid(args, dim: int) -> int:
    g = DEFAULT_GRID[dim] if args.grid is None else args.grid
    if g < 2:
        raise InvalidParameterError("--grid", "an integer >= 2", g)
    return g


def _plan(args, cand: Candidates) -> ThompsonPlan:
    from ..tasks.thompson import plan_thompson  # here: the GP and the samplers (`privgp --help` stays light)

    kernel = args.kernel or ("exponential" if cand.dim == 1 else "matern52")
    ell = args.lengthscale if args.lengthscale is not None else cand.box.diameter / 5.0
    extra = {}
    if args.early_factor is not None and args.schedule != "early":
        raise InvalidParameterError("--early-factor", "given only with --schedule early (the equal schedule has no "
                                    "early factor)", args.early_factor)
    if args.knob == "eta":
        extra["r"] = args.r
        if args.eta is not None:
            raise InvalidParameterError("--eta", "left out with --knob eta (eta is calibrated)", args.eta)
    else:
        if args.r is not None:
            raise InvalidParameterError("--r", "left out with --knob r (r is calibrated)", args.r)
        extra["eta"] = args.eta
    return plan_thompson(cand, rounds=args.rounds, epsilon=args.epsilon, delta=args.delta, kernel=kernel,
                         lengthscale=ell, sigma=args.sigma, M_Y=args.M_Y, knob=args.knob,
                         schedule=args.schedule, conversion=args.conversion,
                         early_factor=DEFAULT_EARLY_FACTOR if args.early_factor is None else args.early_factor,
                         memory_limit=_memory_limit(args.memory_limit), **extra)


# -- outputs ----------------------------------------------------------------------------------------------------------

def _plot(out: Path, res: ThompsonResult, truth) -> None:
    rec = res.recommendation() if truth is not None and res.released else None
    regret = None if rec is None else float(truth.regret(rec[1][None, :])[0])
    (out / "queries.png").write_bytes(queries_png(res.plan, res.queries[:res.released], res.epsilon, regret))


#: how queries.png is drawn: 2 states epsilon rounded up (1, privgp before 2026-11-26: rounded to nearest, which
#: could show less than was released); verify draws an earlier format again to recognise an earlier privgp's picture
QUERIES_FORMAT = 2


def queries_png(plan: ThompsonPlan, queries: np.ndarray, epsilon: float, regret: float | None = None, *,
                fmt: int = QUERIES_FORMAT) -> bytes:
    """queries.png: the released queries of a run (public), its title stating the rounds and the epsilon released,
    and for a simulated objective the regret of the recommended point (``privgp verify`` draws it again; ``fmt``:
    an earlier :data:`QUERIES_FORMAT`, for that)."""
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = plan
    k = queries.shape[0]
    fig, ax = plt.subplots(figsize=(7.5, 4.2), constrained_layout=True)
    t = np.arange(1, k + 1)
    if p.candidates.dim == 1:
        ax.scatter(t, queries[:, 0], c=t, cmap="viridis", s=14)
        ax.set_ylabel("released query x_t")
        ax.set_ylim(p.candidates.box.lower[0], p.candidates.box.upper[0])
        ax.set_xlabel("round t")
    elif p.candidates.dim == 2:
        sc = ax.scatter(queries[:, 0], queries[:, 1], c=t, cmap="viridis", s=14)
        fig.colorbar(sc, ax=ax, label="round t")
        b = p.candidates.box
        ax.set_xlim(b.lower[0], b.upper[0])
        ax.set_ylim(b.lower[1], b.upper[1])
        ax.set_xlabel("x1")
        ax.set_ylabel("x2")
    else:
        for j in range(p.candidates.dim):
            ax.plot(t, queries[:, j], ".", label=f"x{j + 1}")
        ax.set_xlabel("round t")
        ax.set_ylabel("released query coordinates")
        ax.legend(fontsize=8)
    shown = format_upper(epsilon, 3) if fmt >= 2 else f"{epsilon:.3g}"
    title = f"Released queries of private Thompson sampling: {k} of {p.rounds} rounds, epsilon {shown}"
    if regret is not None:
        title += f"\n(simulation) regret of the recommended point {regret:.3g}"
    ax.set_title(title, fontsize=10)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    return buf.getvalue()


def _summary(res: ThompsonResult, out: Path, ledger, source: str, randomness: dict, truth) -> dict:
    p = res.plan
    c = res.charge
    s = {"out": out.name, "files": list(OUTPUT_FILES), "objective": source, **res.summary(),
         "candidates": p.candidates.describe(), "kernel": p.kernel, "lengthscale": p.lengthscale,
         "sigma": p.sigma, "M_Y": p.M_Y, "knob": p.knob, "schedule": p.schedule,
         "r": [float(p.r.min()), float(p.r.max())], "eta": [float(p.eta.min()), float(p.eta.max())],
         "target_epsilon": p.target_epsilon, "fingerprint": res.fingerprint, "ledger": str(ledger.path),
         "entry_id": c.entry_id, "charged_epsilon": p.epsilon, "budget_epsilon": c.budget_epsilon,
         "budget_delta": c.budget_delta, "spent_epsilon": c.spent_after.epsilon,
         "remaining_epsilon": remaining_epsilon(c.budget_epsilon, c.spent_after.epsilon), "randomness": randomness}
    for k in ("last_query", "recommendation"):
        if s.get(k) is not None:
            s[k] = [float(f"{x:.6g}") for x in s[k]]
    rec = res.recommendation() if truth is not None and res.released else None
    if rec is not None:
        reg = truth.regret(res.queries)
        s["simulation"] = {"regret_recommendation": float(truth.regret(rec[1][None, :])[0]),
                           "regret_last_query": float(reg[-1]), "best_query_regret": float(reg.min()),
                           "note": "known only because the objective is simulated"}
    return s


def _write(out: Path, res: ThompsonResult, summary: dict, randomness: dict, truth) -> None:
    """The public outputs into ``out`` (a temporary folder of :class:`AtomicOutput`)."""
    res.history().to_csv(out / "history.csv", index=False)
    _plot(out, res, truth)
    notes = ["Only the query points (and the certificate) are released; the responses are private.",
             "The candidates, kernel, lengthscale, sigma, M_Y, rounds and budget must be chosen "
             "independently of the private responses.",
             "The fingerprint is a keyed hash (secret key in the ledger file), not a hash of the data."]
    doc: dict[str, Any] = {"privgp_version": __version__, "status": res.status, "stop_reason": res.stop_reason,
           "released_rounds": res.released, "planned_rounds": res.plan.rounds,
           "certificate": None if res.certificate is None else res.certificate.to_dict(),
           "calibration": res.plan.calibration, "public_settings": res.plan.public_settings(),
           "ledger": {"entry_id": res.charge.entry_id, **res.charge.to_dict(),
                      "charged": "the whole planned run, before round 1"},
           "randomness": randomness, "notes": notes}
    if res.certificate is None:
        notes.append("Only the data-independent first round (a prior draw) was released: no privacy cost.")
    if res.status != "completed":
        doc["planned_certificate"] = res.plan.certificate.to_dict()
    public = {k: val for k, val in summary.items() if k not in ("ledger",)}  # no local paths
    (out / "summary.json").write_text(json.dumps(to_jsonable(public), indent=2) + "\n")
    doc["kind"] = "privgp optimize"
    doc["plan_arguments"] = plan_arguments(res.plan)
    doc["sha256"] = {f: sha256_file(out / f) for f in OUTPUT_FILES if f != "certificate.json"}
    (out / "certificate.json").write_text(json.dumps(to_jsonable(doc), indent=2) + "\n")


def plan_arguments(plan: ThompsonPlan) -> dict:
    """The exact arguments of :func:`~privgp.tasks.thompson.plan_thompson` that rebuild ``plan`` (public
    settings only; finite candidate sets with their points), for ``privgp verify``."""
    cand = plan.candidates
    out: dict[str, Any] = {
        "candidates": cand.to_dict(), "rounds": plan.rounds, "epsilon": plan.target_epsilon, "delta": plan.delta,
        "kernel": plan.kernel, "lengthscale": plan.lengthscale, "sigma": plan.sigma, "M_Y": plan.M_Y,
        "knob": plan.knob, "schedule": plan.schedule, "sensitivity": plan.sensitivity,
        "conversion": plan.conversion,
        "early_factor": float(plan.multipliers[0]) if plan.schedule == "early" else 2.0}
    if cand.axes is None:
        out["candidates"]["points"] = cand.points.tolist()
    if plan.target_epsilon is None:
        out["r"], out["eta"] = float(plan.r[0]), float(plan.eta[0])
    elif plan.knob == "r":
        out["eta"] = float(plan.eta[0])
    else:
        out["r"] = float(plan.r[0])
    return out


def verify(doc: dict):
    """``privgp verify`` of an optimize certificate.json: rebuild the plan from ``plan_arguments`` through
    :func:`~privgp.tasks.thompson.plan_thompson` (the per-round noise calibrated again), the released
    rounds' certificate through :func:`~privgp.tasks.thompson.released_certificate`, and compare them
    with everything recorded (:func:`~privgp.cli.release_publish.verify_against_plan`). Returns the
    rebuilt certificate of the released rounds (None when only the data-independent round was released)."""
    from types import SimpleNamespace

    from ..tasks.thompson import released_certificate
    from . import release_publish as publish

    plan = rebuilt_plan(doc)
    released = doc.get("released_rounds")
    if isinstance(released, bool) or not isinstance(released, int) or not 0 <= released <= plan.rounds:
        raise publish.CertificateMismatch("released_rounds", f"an integer in 0..{plan.rounds}, found {released!r}")
    publish.compare(doc.get("planned_rounds"), plan.rounds, "planned_rounds")
    event, cert = released_certificate(plan, released)
    labelled = {**doc, "mechanism": "optimize"}
    if "planned_certificate" in doc or cert is None:
        planned = {**labelled, "certificate": doc.get("planned_certificate")}
        if cert is None:
            if doc.get("certificate") is not None:
                raise publish.CertificateMismatch("certificate", "recorded, but the released rounds hold no record")
            if "planned_certificate" not in doc:
                raise publish.CertificateMismatch("planned_certificate", "missing (the run stopped early)")
        publish.verify_against_plan(planned, SimpleNamespace(
            mechanism="optimize", event=plan.event, certificate=plan.certificate, calibration=plan.calibration,
            public_settings=plan.public_settings))
        if cert is None:
            return None
    return publish.verify_against_plan(labelled, SimpleNamespace(
        mechanism="optimize", event=event, certificate=cert, calibration=plan.calibration,
        public_settings=plan.public_settings))


def rebuilt_plan(doc: dict):
    """The Thompson-sampling plan of an optimize certificate, rebuilt from its ``plan_arguments`` through
    :func:`~privgp.tasks.thompson.plan_thompson` and compared with them."""
    from ..tasks.thompson import Candidates, plan_thompson
    from . import release_publish as publish

    def a(key):
        return publish.setting(doc, key, "plan_arguments")

    c = a("candidates")
    if not isinstance(c, dict) or not isinstance(c.get("box"), dict):
        raise publish.CertificateMismatch("plan_arguments.candidates", "the candidates (kind, box, grid or points)")
    box = Box(tuple(c["box"]["lower"]), tuple(c["box"]["upper"]))
    cand = Candidates.grid(box, c["grid"]) if c.get("kind") == "grid" else Candidates.finite(c["points"], box)
    extra = {k: a(k) for k in ("r", "eta") if k in doc["plan_arguments"]}
    plan = plan_thompson(cand, rounds=a("rounds"), epsilon=a("epsilon"), delta=a("delta"), kernel=a("kernel"),
                         lengthscale=a("lengthscale"), sigma=a("sigma"), M_Y=a("M_Y"), knob=a("knob"),
                         schedule=a("schedule"), early_factor=a("early_factor"), sensitivity=a("sensitivity"),
                         conversion=a("conversion"), memory_limit=publish.VERIFY_MEMORY_LIMIT, **extra)
    publish.compare(doc["plan_arguments"], plan_arguments(plan), "plan_arguments")
    return plan


def _print_summary(s: dict, res: ThompsonResult) -> None:
    p = res.plan
    cert = res.certificate
    lemma = next((x.removeprefix("Delta_n: ") for x in p.certificate.lemmas if x.startswith("Delta_n:")), None)
    lines = [
        f"privgp optimize: {s['rounds_released']} of {s['rounds_planned']} rounds of Thompson sampling on "
        f"{s['candidates']} [{s['objective']}]",
        "  guarantee   " + (f"({format_upper(cert.epsilon, 4)}, {format_upper(cert.delta, 3)})-DP for replace-one among the "
                            f"{s['records_collected']} records collected; queries released"
                            if cert is not None else "nothing data-dependent released (prior round only)"),
        f"  settings    {p.kernel} kernel, lengthscale {p.lengthscale:.4g}, sigma={p.sigma:g}, M_Y={p.M_Y:g}, "
        f"r {s['r'][0]:.4g}" + (f"..{s['r'][1]:.4g}" if s['r'][1] > s['r'][0] else "")
        + f", eta {s['eta'][0]:.4g}" + (f"..{s['eta'][1]:.4g}" if s['eta'][1] > s['eta'][0] else "")
        + f" ({'calibrated ' + p.knob if p.calibration else 'given'}, schedule {p.schedule})"
        + (f"; {lemma}" if lemma else ""),
        f"  ledger      {s['ledger']}",
        f"              entry {s['entry_id']}; dataset {s['fingerprint'][:16]}: charged {format_upper(s['charged_epsilon'], 4)} "
        f"(whole run); spent {format_upper(s['spent_epsilon'], 4)} of {s['budget_epsilon']:g} (at delta "
        f"{format_upper(s['budget_delta'])})",
        f"  recommended {s['recommendation']} (densest released query of the second half of the run; "
        f"last query {s['last_query']})",
        f"  outputs     {s['out']}/: " + ", ".join(s["files"]),
    ]
    if "simulation" in s:
        sim = s["simulation"]
        lines.insert(-1, f"  simulation  regret of the recommendation {sim['regret_recommendation']:.4g}, of the last query "
                         f"{sim['regret_last_query']:.4g}, best query {sim['best_query_regret']:.4g} (the function is known)")
    lines.append("  randomness  " + ("SEEDED (demo): " + s["randomness"]["warning"] if "warning" in s["randomness"]
                                     else "fresh OS entropy"))
    print("\n".join(lines))


#: the header of a --save-responses file starts so, and names this column (see ThompsonResult.history)
RESPONSES_HEADER = "round,n,r,eta,candidate,"
RESPONSES_COLUMN = "response_private"


def _earlier_responses(path: Path) -> bool:
    """Whether ``path`` is a --save-responses file of an earlier run (its CSV header), which --overwrite replaces."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            header = fh.readline(4096).strip()
    except OSError:
        return False
    return header.startswith(RESPONSES_HEADER) and header.split(",")[-1] == RESPONSES_COLUMN


def _protected_files(args) -> list[tuple[str, Any]]:
    """The files a run reads or keeps: --out and --save-responses must not be (or hold) any of them."""
    callable_file = args.callable.rpartition(":")[0] if args.callable else ""
    return [("ledger", ledger_path(args.ledger)), ("lookup table", args.lookup), ("candidates file", args.candidates),
            ("objective's file", callable_file if callable_file.endswith(".py") else None)]


def _check_response_file(args) -> Path | None:
    """--save-responses PATH, checked before the charge (:func:`~.outputs.check_output_file`): not empty, not the
    ledger nor an input, not in --out, not a folder; an existing file only with --overwrite and only when it is
    an earlier --save-responses file (its header)."""
    if args.save_responses is None:
        return None
    return check_output_file(
        args.save_responses, flag="--save-responses", protect=_protected_files(args), outside=args.out,
        replace=(lambda p: bool(args.overwrite) and _earlier_responses(p)),
        replace_hint=("a new file, or with --overwrite an earlier --save-responses file (header "
                      f"{RESPONSES_HEADER}...,{RESPONSES_COLUMN}); it never replaces another file"))


STAGES = ("objective and candidates", "plan and certify", "check", "rounds", "write outputs")


def run(args) -> int:
    from ..tasks.thompson import optimize  # here: the GP and the samplers (`privgp --help` stays light)

    with Progress(len(STAGES), "optimize", "lines" if args.progress == "lines" else
                  (False if args.progress == "off" else None)) as progress:
        progress.stage(STAGES[0])
        objective, cand, source, key, truth = _objective(args)
        progress.update(1)
        progress.stage(STAGES[1])
        plan = _plan(args, cand)
        progress.update(1)
        progress.stage(STAGES[2])
        responses = _check_response_file(args)   # before --out: it names the flag at fault
        out = check_output_dir(args.out, args.overwrite, protect=(
            *_protected_files(args), ("--save-responses file", responses)))
        check_budget(args.budget_epsilon, args.budget_delta)  # a refused budget creates no ledger file
        ledger = Ledger(args.ledger, create_on_charge=True)   # a refused charge writes no file
        records_key = key if isinstance(key, tuple) else (key,)
        fingerprint = (ledger.named_fingerprint(_dataset_id(args.dataset_id), records=records_key)
                       if args.dataset_id is not None else ledger.fingerprint_of(*records_key))
        rng, randomness = _randomness(args.seed)
        progress.update(1)
        progress.stage(STAGES[3])
        with Progress(plan.rounds, "optimize: rounds", "lines" if args.progress == "lines" else
                      (False if args.progress == "off" else None)) as rounds:
            # charge the whole planned run (a refusal raises BudgetExceededError -> exit status 3), then run
            res = optimize(plan, objective, ledger, rng, fingerprint=fingerprint, budget_epsilon=args.budget_epsilon,
                           budget_delta=args.budget_delta, label=args.dataset_id or "", mark_completed=False,
                           on_round=lambda t: rounds.update(1))
        progress.update(1)
        progress.stage(STAGES[4])
        summary = _summary(res, Path(args.out), ledger, source, randomness, truth)
        with AtomicOutput(out, args.overwrite) as tmp:
            _write(tmp, res, summary, randomness, truth)
        if responses is not None:
            write_file_atomically(responses, lambda tmp: res.history(include_responses=True).to_csv(tmp, index=False))
        ledger.complete(res.charge.entry_id)
        progress.update(1)
    if args.json:
        print_json(summary)
    else:
        _print_summary(summary, res)
    if res.status != "completed":
        raise ObjectiveError(f"the run stopped at {res.failure}; {res.released} of {plan.rounds} rounds were "
                             f"released (epsilon {format_upper(res.epsilon, 4)}), the charge for the whole run "
                             f"({format_upper(plan.epsilon, 4)}) stands; outputs in {args.out}")
    return 0
