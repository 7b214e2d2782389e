"""Entry point of the ``privgp`` command.

Each subcommand lives in its own module of this package exposing ``register(subparsers)``; the
module list is :data:`COMMANDS`. User errors (any :class:`~privgp.errors.PrivgpError`) print one
line and exit with status 2 (3 for a refused, over-budget release); bugs keep their traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__
from ..errors import BudgetExceededError, PrivgpError

COMMANDS: list[str] = ["experiment", "release", "verify", "optimize", "ledger", "account", "demo", "audit"]

EXIT_USER_ERROR = 2
EXIT_BUDGET = 3


class OneLineParser(argparse.ArgumentParser):
    """argparse with user errors on one line (``privgp: error: ...``, exit status 2), no usage block;
    ``privgp COMMAND --help`` shows the usage."""

    def error(self, message: str):
        where = self.prog.removeprefix("privgp").strip()
        self.exit(EXIT_USER_ERROR, f"privgp: error: {where + ': ' if where else ''}{message.strip().splitlines()[0]}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="privgp",
        description="Differentially private release of Gaussian-process posterior sample paths.")
    parser.add_argument("--version", action="version", version=f"privgp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__package__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
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
        print(f"privgp: error: {exc}", file=sys.stderr)
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
