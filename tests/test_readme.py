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
