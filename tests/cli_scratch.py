"""What the tests of the commands' file safety share: running a command in process, a file's digest (None when it
does not exist), a scratch environment (HOME, a default ledger and the working folder inside tmp_path) and
`privgp verify --json` of a folder whose certificate is re-hashed first (a forger's edit)."""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
from pathlib import Path

import pytest

from privgp.cli.main import main


def run(capsys, *args):
    """``privgp ARGS`` in process: (exit status, stdout, stderr)."""
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def run_quiet(*args) -> tuple[int, str]:
    """``privgp ARGS`` in process with stdout and stderr captured, for module-scoped fixtures (which have no capsys):
    (exit status, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, err.getvalue()


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


@pytest.fixture(name="env")
def scratch_env(tmp_path, monkeypatch):
    """The ``env`` fixture of a test module that imports it: tmp_path, with HOME, the default ledger and the
    working folder inside it."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PRIVGP_LEDGER", str(tmp_path / "default-ledger.sqlite"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def rehash_and_verify(folder: Path, capsys, *extra: str) -> tuple[int, dict]:
    """``privgp verify --json`` of ``folder`` after its certificate's sha256 of every released file is set to the
    files' own (what a forger does after editing them), written as privgp writes it: (exit status, the JSON
    report)."""
    doc = json.loads((folder / "certificate.json").read_text())
    for k in doc["sha256"]:
        doc["sha256"][k] = hashlib.sha256((folder / k).read_bytes()).hexdigest()
    (folder / "certificate.json").write_text(json.dumps(doc, indent=2) + "\n")   # privgp's text (red team 17, H4)
    capsys.readouterr()
    code = main(["verify", str(folder / "certificate.json"), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)
