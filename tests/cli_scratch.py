"""What the tests of the commands' file safety share: running a command in process, a file's digest (None when it
does not exist) and a scratch environment (HOME, a default ledger and the working folder inside tmp_path)."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from privgp.cli.main import main


def run(capsys, *args):
    """``privgp ARGS`` in process: (exit status, stdout, stderr)."""
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


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
