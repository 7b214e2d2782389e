"""Entry point of the ``privgp`` command.

Each subcommand lives in its own module of this package exposing ``register(subparsers)``; the
commands and their line in ``privgp --help`` are :data:`COMMANDS`. A command's module is imported,
and its full parser built, only when that command is invoked (``privgp --help`` imports none of them:
see :class:`LazyCommands`). User errors (any :class:`~privgp.errors.PrivgpError`) print one
line and exit with status 2 (3 for a refused, over-budget release); bugs keep their traceback.
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Callable
from typing import cast

from .. import __version__
from ..errors import BudgetExceededError, InvalidParameterError, PrivgpError

# name -> the command's line in `privgp --help` (the help= its module's register() gives; tests/cli/test_main.py
# checks they agree)
COMMANDS: dict[str, str] = {
    "experiment": "reproduce a table or figure of the seed papers",
    "release": "release a private map from private data (certificate + ledger)",
    "verify": "check a certificate by rebuilding it from its public settings",
    "optimize": "private Bayesian optimisation: Thompson sampling with a certified budget",
    "ledger": "inspect the privacy-budget ledger",
    "account": "the certified (epsilon, delta) of a release, from its public settings alone",
    "demo": "draw and plot exact GP posterior paths on a tiny synthetic dataset",
    "audit": "LiRA, tightness, per-record LOOD and approximate-sampler audits",
}

EXIT_USER_ERROR = 2
EXIT_BUDGET = 3


#: what argparse takes for a negative number rather than an option: also -1e3, -2.5E-4 and -.5 (argparse's own
#: pattern misses the exponent, so ``--box -1e3 1e3 ...`` failed with "expected at least one argument")
NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


class OneLineParser(argparse.ArgumentParser):
    """argparse with user errors on one line (``privgp: error: ...``, exit status 2), no usage block;
    ``privgp COMMAND --help`` shows the usage. Negative numbers in scientific notation are values."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER

    def error(self, message: str):
        where = self.prog.removeprefix("privgp").strip()
        self.exit(EXIT_USER_ERROR, f"privgp: error: {where + ': ' if where else ''}{message.strip().splitlines()[0]}\n")


class LazyCommands(argparse._SubParsersAction):
    """The COMMAND argument of ``privgp``: every command is listed (its name and help line, for ``privgp
    --help`` and the "invalid choice" error) by a placeholder parser; the command that argparse
    dispatches to is first replaced by its full parser, built by its module's ``register`` (so
    ``privgp release ...`` imports the release module and every mechanism, ``privgp --help`` neither)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._placeholders: dict[str, Callable[[LazyCommands], None] | None] = {}

    def add_placeholder(self, name: str, line: str, loader: Callable[[LazyCommands], None] | None = None) -> None:
        """List command ``name`` with help line ``line``; its full parser is built when it is parsed
        (:meth:`load`) by ``loader(self)``, by default the ``register`` of module ``privgp.cli.<name>``
        (a subcommand's own subcommands, e.g. ``privgp audit lood``, pass their register function)."""
        self.add_parser(name, help=line)
        self._placeholders[name] = loader

    def load(self, name: str) -> argparse.ArgumentParser:
        """The full parser of command ``name`` (built now, in the placeholder's place, if not yet)."""
        if name in self._placeholders:
            loader = self._placeholders.pop(name)
            parsers = self._name_parser_map   # also self.choices: changed in place, order kept
            order = list(parsers)
            del parsers[name]
            self._choices_actions = [a for a in self._choices_actions if a.dest != name]
            if loader is None:
                importlib.import_module(f"{__package__}.{name}").register(self)
            else:
                loader(self)
            ordered = {n: parsers[n] for n in order}
            parsers.clear()
            parsers.update(ordered)
            self._choices_actions.sort(key=lambda a: order.index(a.dest))
        return self._name_parser_map[name]

    def load_all(self) -> None:
        """Build every command's full parser, and those of their lazy subcommands (the CLI reference)."""
        for name in list(self._name_parser_map):
            for action in self.load(name)._actions:
                if isinstance(action, LazyCommands):
                    action.load_all()

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if values and values[0] in self._placeholders:
            self.load(values[0])
        super().__call__(parser, namespace, values, option_string)


def build_parser(*, full: bool = False) -> argparse.ArgumentParser:
    """The parser of ``privgp``: every command of :data:`COMMANDS` is registered, its module imported only
    when the command is parsed; ``full=True`` builds every command's parser now (the CLI reference)."""
    parser = OneLineParser(
        prog="privgp",
        description="Differentially private maps, excursion sets and Gaussian-process posterior draws from "
                    "private point data, with a certified (epsilon, delta).")
    parser.add_argument("--version", action="version", version=f"privgp {__version__}")
    sub = cast(LazyCommands, parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser,
                                                   action=LazyCommands))
    sub.required = True
    for name, line in COMMANDS.items():
        sub.add_placeholder(name, line)
    if full:
        sub.load_all()
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``privgp`` command. Without ``argv`` (the console script, ``python -m privgp.cli.main``) the process is
    privgp's own: a command first defers numpy's sub-packages that none uses (:mod:`privgp.cli.startup`)."""
    args_list = sys.argv[1:] if argv is None else list(argv)
    console = argv is None
    if args_list[:1] == ["release"]:   # its picture is drawn by a second process, started first thing
        from . import picture_process

        picture_process.start_early(args_list)
        try:
            return _main(args_list, console)
        finally:
            picture_process.discard()
    return _main(args_list, console)


#: library parameters whose flag is not their name with dashes (``_as_flag``)
FLAG_ALIASES = {"fpr_targets": ("--fpr",), "lengthscale": ("--ell", "--lengthscales"), "noise_std": ("--noise-bound",),
                "target_epsilon": ("--epsilon",), "inducing_points": ("--inducing",),
                "candidates_per_axis": ("--candidates",)}


def _as_flag(exc: Exception, argv: list[str]) -> Exception:
    """An InvalidParameterError that names a library parameter (``n_shadow``, ``M_Y``, ``fpr_targets``) the
    user set by its flag (``--n-shadow``, ``--M-Y``, ``--fpr``): the same error, naming the flag as typed. (A
    parameter the user did not type keeps its name: mapping it to a flag of the same name named ``--candidates``
    for a ``--lookup`` table's points; red team 25.)"""
    if not isinstance(exc, InvalidParameterError) or exc.name.startswith("-"):
        return exc
    flags = {"--" + exc.name.replace("_", "-").lower(), *FLAG_ALIASES.get(exc.name, ())}
    typed = [tok.split("=", 1)[0] for tok in argv if tok.split("=", 1)[0].lower() in flags]
    return InvalidParameterError(typed[0], exc.requirement, exc.value) if typed else exc


def _main(argv: list[str], console: bool = False) -> int:
    if console and argv[:1] and argv[0] in COMMANDS:
        from .startup import defer_unused_numpy_modules

        defer_unused_numpy_modules()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help/--version (0) or a one-line usage error (2): a status, not an exception
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USER_ERROR
    try:
        code = args.func(args)
    except BudgetExceededError as exc:
        print(f"privgp: refused: {exc}", file=sys.stderr)
        return EXIT_BUDGET
    except PrivgpError as exc:
        print(f"privgp: error: {_as_flag(exc, argv)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:  # pragma: no cover
        print("privgp: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
