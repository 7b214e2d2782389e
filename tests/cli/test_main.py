"""The command line starts fast: `privgp --help` imports no command's module (nor numpy, the mechanisms or
the accountant), a command imports only its own module, no command's parser imports a heavy library, and a
LiRA audit imports none it does not use (checked in a fresh interpreter); the lazy registration changes
nothing a user sees."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from privgp.cli.main import COMMANDS, build_parser, main

HEAVY = ("pandas", "matplotlib", "dask", "distributed", "scipy.spatial", "scipy.stats", "scipy.optimize",
         "sklearn", "torch")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


# what `privgp --help` must not import: the commands' modules and, through them, numpy, every mechanism
# (privgp.mechanisms.registered), the accountant and the ledger
LAZY = (*(f"privgp.cli.{name}" for name in COMMANDS), "privgp.cli.common", "numpy", "privgp.mechanisms",
        "privgp.mechanisms.registered", "privgp.accounting", "privgp.ledger")


def _commands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_building_every_commands_parser_imports_no_heavy_library():
    mods = _modules_after("import privgp.cli.main as m\nm.build_parser(full=True)")
    assert {f"privgp.cli.{name}" for name in COMMANDS} <= mods   # every command's full parser built
    assert "privgp.mechanisms.registered.grid" in mods          # release's options: every mechanism's
    assert not {h for h in HEAVY if h in mods}


def test_help_imports_no_command_module():
    mods = _modules_after("import privgp.cli.main as m\nassert m.main(['--help']) == 0")
    assert "privgp.cli.main" in mods and not {m for m in LAZY if m in mods}


@pytest.mark.parametrize("argv", [["ledger", "--help"], ["account", "--n", "x"]])
def test_a_command_imports_no_other_commands_module(argv):
    mods = _modules_after(f"import privgp.cli.main as m\nassert m.main({argv!r}) in (0, 2)")
    assert f"privgp.cli.{argv[0]}" in mods
    assert not {f"privgp.cli.{name}" for name in COMMANDS if name != argv[0]} & mods
    assert ("privgp.mechanisms.registered" in mods) == (argv[0] == "account")  # account --mechanism NAME: any mechanism


def test_every_command_is_listed_with_its_modules_help_line():
    """The lazy parser lists every command of COMMANDS, in order, with the help line its module gives."""
    lazy, full = _commands(build_parser()), _commands(build_parser(full=True))
    assert list(lazy.choices) == list(full.choices) == list(COMMANDS)
    assert [(a.dest, a.help) for a in lazy._get_subactions()] == [(a.dest, a.help) for a in full._get_subactions()]
    assert [(a.dest, a.help) for a in full._get_subactions()] == list(COMMANDS.items())
    for name in COMMANDS:   # the placeholders are replaced by the full parsers
        assert full.choices[name].format_help() != lazy.choices[name].format_help()


def test_release_help_lists_every_mechanism_and_option(capsys):
    from privgp.mechanisms.interface import all_options, mechanism_names

    assert main(["release", "--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in mechanism_names())
    assert all(option.flag in out for option, _ in all_options().values())


def test_help_exits_cleanly_and_lists_every_command():
    res = subprocess.run([sys.executable, "-m", "privgp.cli.main", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0
    for cmd in ("release", "ledger", "account", "audit", "experiment", "demo"):
        assert cmd in res.stdout


def test_a_lira_audit_imports_only_what_it_uses():
    code = ("import privgp.cli.main as m\n"
            "m.main(['audit', 'lira', '--r', '1', '--sigma', '5', '--n-shadow', '200', '--n-eval', '50', '--json'])")
    mods = _modules_after(code)
    assert "scipy.optimize" in mods                     # the paper attack's fits (it imports scipy.spatial itself)
    assert not {h for h in HEAVY if h in mods} - {"scipy.optimize", "scipy.spatial"}
    # `audit lood`'s parser (the release command's options, the ledger, every mechanism) is built only for it
    assert not {"privgp.cli.release", "privgp.ledger", "privgp.mechanisms.registered"} & mods


def test_the_full_parser_builds_the_lazy_audit_subcommands():
    """`privgp audit lood` is a placeholder until parsed; the full parser (the CLI reference) has its options."""
    def audit_lood(parser):
        audit = _commands(parser).choices["audit"]
        return _commands(audit).choices["lood"].format_help()

    lazy = build_parser()
    _commands(lazy).load("audit")
    assert "--candidates" not in audit_lood(lazy) and "--candidates" in audit_lood(build_parser(full=True))


def test_verifying_a_picture_draws_it_without_pyplot():
    """verify redraws the picture on the Agg canvas by name and keys its drawings by matplotlib's rcParams; reading
    ``rcParams["backend"]`` by key would resolve the caller's backend, importing pyplot and switching to the first
    interactive backend that loads. Checked on the README's committed release, in a fresh interpreter."""
    cert = Path(__file__).resolve().parents[2] / "docs" / "runs" / "release-default" / "certificate.json"
    mods = _modules_after(f"import privgp.cli.main as m\nassert m.main(['verify', {str(cert)!r}, '--json']) == 0")
    assert "matplotlib.figure" in mods and "matplotlib.backends.backend_agg" in mods   # the picture was redrawn
    assert "matplotlib.pyplot" not in mods
