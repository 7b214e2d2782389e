"""The API reference site (issue 27): ``mkdocs build --strict`` (warnings are errors) builds without
network from mkdocs.yml: getting started, the CLI reference generated from the argparse parser, the
architecture page and the API pages from the docstrings."""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")

ROOT = Path(__file__).resolve().parents[1]
if not (ROOT / "mkdocs.yml").is_file():  # the sdist carries the tests, not the site's sources (docs/)
    pytest.skip("mkdocs.yml and docs/ are in the repository only", allow_module_level=True)


def test_the_site_builds_strictly_with_every_command(tmp_path):
    site = tmp_path / "site"
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert time.perf_counter() - t0 < 30
    for page in ("index.html", "cli/index.html", "architecture/index.html", "api/accounting/index.html",
                 "api/privgp/index.html", "api/ledger/index.html", "api/domain/index.html"):
        assert (site / page).is_file(), page
    from privgp.cli.main import build_parser

    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    parser = build_parser(full=True)
    commands = [name for a in parser._actions if isinstance(a, argparse._SubParsersAction) for name in a.choices]
    assert len(commands) >= 5
    for name in commands:
        assert f'id="privgp-{name}"' in cli, name
    assert "to_dp_event" in (site / "api" / "accounting" / "index.html").read_text(encoding="utf-8")
    heading = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines()[0].lstrip("# ").strip()
    assert heading.split()[0] in (site / "architecture" / "index.html").read_text(encoding="utf-8")
