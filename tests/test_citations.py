"""Every pointer in the code resolves: cited notes exist in docs/notes/ with the cited section, no
citation of files outside the repository (the project's research digests, its design file), and
cited test files exist. Checked over src/, tests/, scripts/ and benchmarks/."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for d in ("src", "tests", "scripts", "benchmarks") for p in (ROOT / d).rglob("*.py"))
NOTE = re.compile(r"(docs/notes/[\w.-]+\.md)(?:,? \(?sec\. ([\d.]+))?")
# research digests and design files that live outside the repository, however they are cited
OUTSIDE = re.compile(r"reference_repo(?:\.md|_section)|DESIGN\.md|shared/research|digest,? sec\.|digest of seed|seed-\d+ digest"
                     r"|digest(?:'s)? (?:T\d|test \d|item \d)|\bthe digest's\b|\bthe digest writes\b"
                     r"|_digest_(?:values|table|case)|digest_pinned")


def _text(p: Path) -> str:
    return " ".join(p.read_text(encoding="utf-8").split())   # citations may wrap across lines


def _name(p: Path) -> str:
    return str(p.relative_to(ROOT))


def test_cited_notes_and_sections_exist():
    missing = []
    for p in SOURCES:
        for note, sec in NOTE.findall(_text(p)):
            f = ROOT / note
            if not f.is_file():
                missing.append(f"{_name(p)}: {note}")
            elif sec and not re.search(rf"^#+ {re.escape(sec.rstrip('.'))}[ .]", f.read_text(encoding="utf-8"), re.M):
                missing.append(f"{_name(p)}: {note} sec. {sec}")
    assert not missing, missing


def test_no_citations_of_files_outside_the_repository():
    here = Path(__file__).resolve()
    bad = [f"{_name(p)}: {m.group(0)}" for p in SOURCES if p.resolve() != here for m in OUTSIDE.finditer(_text(p))]
    assert not bad, bad


def test_cited_test_files_exist():
    missing = [f"{_name(p)}: {t}" for p in SOURCES
               for t in re.findall(r"tests/[\w/]+\.py", p.read_text(encoding="utf-8")) if not (ROOT / t).is_file()]
    assert not missing, missing
