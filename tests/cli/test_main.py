"""The command line starts fast: building the parser (what `privgp --help` does) imports no heavy library,
and a LiRA audit imports none it does not use (checked in a fresh interpreter)."""
from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pandas", "matplotlib", "dask", "distributed", "scipy.spatial", "scipy.stats", "scipy.optimize",
         "sklearn", "torch")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_building_the_parser_imports_no_heavy_library():
    mods = _modules_after("import privgp.cli.main as m\nm.build_parser()")
    assert "privgp.cli.release" in mods and "privgp.cli.audit" in mods   # every command registered
    assert not {h for h in HEAVY if h in mods}


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
