"""mkdocs hooks for the API reference: the CLI reference generated from privgp's argparse parser
(every command's ``--help``), and the architecture page taken from docs/architecture.md, so neither
is a copy that can drift."""
from __future__ import annotations

import argparse
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]


def cli_markdown() -> str:
    """Markdown of ``privgp --help`` and of every subcommand's help, from the parser itself."""
    from privgp.cli.main import build_parser

    parser = build_parser(full=True)
    parts = ["# Command line\n", "Generated from the parser of `privgp` (`privgp COMMAND --help` prints the same).\n",
             "```text\n" + parser.format_help() + "```\n"]
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in subs:
        for name, sub in action.choices.items():
            parts.append(f"## privgp {name}\n")
            parts.append("```text\n" + sub.format_help() + "```\n")
            nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
            for inner in nested:
                for iname, isub in inner.choices.items():
                    parts.append(f"### privgp {name} {iname}\n")
                    parts.append("```text\n" + isub.format_help() + "```\n")
    return "\n".join(parts)


def _generated(name: str, content: str, config) -> File:
    return File.generated(config, name, content=content)


def on_files(files, config):
    """Add cli.md (generated) and architecture.md (docs/architecture.md) to the site."""
    files.append(_generated("cli.md", cli_markdown(), config))
    files.append(_generated("architecture.md", (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"), config))
    return files
