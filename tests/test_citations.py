"""Every pointer in the source resolves: cited notes exist in docs/notes/ with the cited section, no
citation of files outside the repository (research digests, DESIGN.md), and cited test files exist."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "tests").glob("*.py"))
NOTE = re.compile(r"(docs/notes/[\w.-]+\.md)(?:,? \(?sec\. ([\d.]+))?")


def _text(p: Path) -> str:
    return " ".join(p.read_text(encoding="utf-8").split())   # citations may wrap across lines


def test_cited_notes_and_sections_exist():
    missing = []
    for p in SOURCES:
        for note, sec in NOTE.findall(_text(p)):
            f = ROOT / note
            if not f.is_file():
                missing.append(f"{p.name}: {note}")
            elif sec and not re.search(rf"^#+ {re.escape(sec.rstrip('.'))}[ .]", f.read_text(encoding="utf-8"), re.M):
                missing.append(f"{p.name}: {note} sec. {sec}")
    assert not missing, missing


def test_no_citations_of_files_outside_the_repository():
    bad = [p.name for p in (ROOT / "src").rglob("*.py")
           if re.search(r"reference_repo\.md|DESIGN\.md|digest sec\.|digest of seed|seed-\d+ digest", _text(p))]
    assert not bad, bad


def test_cited_test_files_exist():
    missing = [f"{p.name}: {t}" for p in (ROOT / "src").rglob("*.py")
               for t in re.findall(r"tests/[\w/]+\.py", p.read_text(encoding="utf-8")) if not (ROOT / t).is_file()]
    assert not missing, missing
