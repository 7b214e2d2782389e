"""The README's Python examples run as shown (a changed API fails here, not for a new user)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_has_python_examples():
    assert len(python_blocks()) >= 3


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_example_runs(index, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes files (a release, a ledger) writes them here
    code = python_blocks()[index]
    if "torch" in code:
        pytest.importorskip("torch")
    exec(compile(code, f"README.md python block {index}", "exec"), {"__name__": "readme_example"})
    printed = capsys.readouterr().out
    # every "# value..." comment after a print states a prefix of what is printed
    for line in code.splitlines():
        m = re.match(r"\s*print\(.*\)\s*#\s*([0-9][0-9.]*)\.\.\.", line)
        if m:
            assert m.group(1)[:-1] in printed, (m.group(1), printed)


def test_every_ledger_entry_and_dataset_key_quoted_is_in_a_committed_run():
    """README quotes runs' ledger entry ids (32 hex digits) and dataset keys (16): each must be in the run artefacts
    (docs/runs, benchmarks/logs), so that a re-run of a script (new random ids) cannot leave a stale one in the prose (the
    Quickstart's second release and dataset key were once left from the run before)."""
    text = README.read_text(encoding="utf-8")
    quoted = set(re.findall(r"entry ([0-9a-f]{32})\b", text)) | set(re.findall(r"dataset `?([0-9a-f]{16})\b", text))
    quoted |= set(re.findall(r"fingerprint \(`([0-9a-f]{16})`", text))
    assert len(quoted) >= 6, quoted
    folders = (README.parent / "docs" / "runs", README.parent / "benchmarks" / "logs")
    committed = "\n".join(p.read_text(encoding="utf-8", errors="replace") for f in folders for p in f.rglob("*")
                          if p.is_file() and p.suffix in {".txt", ".json", ".md", ".html", ""})
    missing = sorted(q for q in quoted if q not in committed)
    assert not missing, f"README quotes ids no committed run holds (re-run its script or fix the prose): {missing}"
