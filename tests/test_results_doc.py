"""The results page (docs/results.md) and README cannot drift from the committed runs.

Every Markdown table in those files is preceded by a marker comment naming where its numbers come from:

* ``<!-- artefacts: docs/runs/A/x.md docs/runs/B/y.md -->``: Markdown tables written by the runs; every
  cell of the quoted table (row = its first cell, column = its header) must equal the cell with the same
  row and column in one of them (a row or column left out is fine; a number changed is not); with
  ``key=col1,col2`` a row is identified by the cells of those columns instead of the first one;
* ``<!-- artefacts: docs/runs/A/run.json -->``: a two-column table ``| `dotted.key` | value |`` whose
  values must equal the run record's to the precision shown;
* ``<!-- no-artefact: reason -->``: a table that quotes no run (commands, parameters).

Each experiment run directory referenced must hold a run.json whose command appears verbatim on the page
(a release folder, recognised by its certificate.json, records itself), and every image on the page must
exist.

Scope: README and every section of docs/results.md except ``## Three mechanisms ...`` and ``## Private
Thompson sampling`` (``OTHER_SECTIONS``), which were written before this check; their tables are checked
when they carry a marker and skipped otherwise (they quote CSV aggregates with their own formatting). The
seed 001-004 sections quote tables that ``scripts/results_tables.py`` regenerates from the committed CSVs
(``docs/runs/*/page_*.md``). A run whose run.json predates the ``command`` field must have its
``privgp experiment NAME`` command and its ``--out docs/runs/NAME`` on the page; a folder without a run.json
must be written by a command on the page or list its commands in a README.md.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "docs" / "results.md", ROOT / "README.md"]
MARKER = re.compile(r"<!--\s*(artefacts|no-artefact):\s*(.*?)\s*-->")


def split_row(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


OTHER_SECTIONS = re.compile(r"^## (Three mechanisms|Private Thompson sampling)")


def tables_with_markers(text: str, *, skip_unmarked_other_seeds: bool = False):
    """(marker kind, marker argument, header, rows) for every table; marker None when the table has none."""
    lines = text.splitlines()
    out, i, pending, other = [], 0, None, False
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            other = bool(OTHER_SECTIONS.match(line))
        m = MARKER.search(line)
        if m:
            pending = (m.group(1), m.group(2))
            i += 1
            continue
        if line.lstrip().startswith("|") and i + 1 < len(lines) and re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[i + 1]):
            header = split_row(line)
            rows, i = [], i + 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(split_row(lines[i]))
                i += 1
            if not (skip_unmarked_other_seeds and other and pending is None):
                out.append((pending, header, rows))
            pending = None
            continue
        if line.strip():
            pending = None   # a marker applies only to the table right after it (blank lines allowed)
        i += 1
    return out


def row_key(header: list[str], row: list[str], key: tuple[str, ...] | None):
    if key is None:
        return row[0]
    cols = dict(zip(header, row))
    return tuple(cols.get(k) for k in key)


def checked_text(text: str) -> str:
    """The page without the sections of other seeds (see the module docstring)."""
    keep, other = [], False
    for line in text.splitlines():
        if line.startswith("## "):
            other = bool(OTHER_SECTIONS.match(line))
        if not other:
            keep.append(line)
    return "\n".join(keep)


def md_lookup(paths: list[Path], key: tuple[str, ...] | None = None) -> dict:
    cells: dict = {}
    for p in paths:
        for _, header, rows in tables_with_markers(p.read_text()):
            for row in rows:
                k = row_key(header, row, key)
                for h, c in zip(header, row):
                    if key is None and h == header[0]:
                        continue
                    cells.setdefault((k, h), set()).add(c)
    return cells


def json_value(rec, key: str):
    for part in key.split("."):
        rec = rec[int(part)] if isinstance(rec, list) else rec[part]
    return rec


def matches_shown_precision(shown: str, value) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = shown.replace("×10^", "e").replace("%", "")
        try:
            x = float(text)
        except ValueError:
            return False
        scale = 0.01 if shown.endswith("%") else 1.0
        mant = text.split("e")[0]
        decimals = len(mant.split(".")[1]) if "." in mant else 0
        exp = int(text.split("e")[1]) if "e" in text else 0
        tol = 0.5 * 10.0 ** (exp - decimals) * scale * (1 + 1e-9)
        return abs(x * scale - float(value)) <= tol
    return shown == str(value)


def page_checks(page: Path):
    text = page.read_text()
    errors = []
    tables = tables_with_markers(text, skip_unmarked_other_seeds=True)
    for marker, header, rows in tables:
        where = f"{page.name}: table with header {header[:3]}"
        if marker is None:
            errors.append(f"{where}: no <!-- artefacts: ... --> or <!-- no-artefact: ... --> marker")
            continue
        kind, arg = marker
        if kind == "no-artefact":
            continue
        words = arg.split()
        key = next((tuple(w[4:].split(",")) for w in words if w.startswith("key=")), None)
        paths = [ROOT / p for p in words if not p.startswith("key=")]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            errors.append(f"{where}: missing artefacts {missing}")
            continue
        if all(p.suffix == ".json" for p in paths):
            rec = json.loads(paths[0].read_text())
            for row in rows:
                key = row[0].strip("`")
                try:
                    val = json_value(rec, key)
                except (KeyError, IndexError, ValueError):
                    errors.append(f"{where}: {key} not in {paths[0]}")
                    continue
                if not matches_shown_precision(row[1], val):
                    errors.append(f"{where}: {key} = {row[1]} but the run says {val}")
            continue
        cells = md_lookup(paths, key)
        for row in rows:
            k = row_key(header, row, key)
            for h, c in zip(header, row):
                if key is None and h == header[0] or key is not None and h in key:
                    continue
                found = cells.get((k, h))
                if found is None:
                    errors.append(f"{where}: no cell ({k!r}, {h!r}) in {arg}")
                elif c not in found:
                    errors.append(f"{where}: ({k!r}, {h!r}) = {c!r}, the runs say {sorted(found)}")
                elif len(found) > 1:
                    errors.append(f"{where}: ({k!r}, {h!r}) is ambiguous across {arg}: {sorted(found)}")
    # commands of every run referenced by a checked section appear on the page; images exist
    runs = {ROOT / m.group(0) for m in re.finditer(r"docs/runs/[\w.\-]+", checked_text(text))}
    for run in sorted(runs):
        rec_path = run / "run.json"
        rel = run.relative_to(ROOT).as_posix()
        if (run / "certificate.json").is_file() and not rec_path.exists():
            continue  # a release's folder (certificate.json says how it was made), not an experiment run
        if not rec_path.is_file():
            # a folder written by a command shown on the page (`--out DIR`, `--png DIR/x`, `> DIR/x`), or one
            # whose README.md lists the commands that wrote its files
            if re.search(r"(--out|--png|>)\s*" + re.escape(rel) + r"(/|\b)", text) or (run / "README.md").is_file():
                continue
            errors.append(f"{page.name}: {rel} has no run.json and no command on the page writes it")
            continue
        rec = json.loads(rec_path.read_text())
        cmd = rec.get("command")
        if cmd:
            if cmd not in text:
                errors.append(f"{page.name}: the command of {rel} ({cmd!r}) is not on the page")
            continue
        # run records written before run.json stored the command: the page must show the experiment's
        # command and where it wrote (`--out docs/runs/NAME`, or a `cp` of its files into the folder)
        exp = rec.get("experiment")
        wrote = re.search(r"--out\s+" + re.escape(rel) + r"\b", text) or re.search(
            r"^\s*cp\b[^\n]*" + re.escape(rel) + r"\b", text, re.M)
        if not exp or f"privgp experiment {exp}" not in text or not wrote:
            errors.append(f"{page.name}: {rel}: its run.json has no command, and the page does not show "
                          f"`privgp experiment {exp}` writing it (--out {rel})")
    for m in re.finditer(r"!\[[^\]]*\]\(([^)]+)\)", text):
        if not (page.parent / m.group(1)).is_file():
            errors.append(f"{page.name}: image {m.group(1)} does not exist")
    return tables, errors


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_quoted_table_equals_its_committed_run(page):
    tables, errors = page_checks(page)
    assert not errors, "\n".join(errors)


def test_the_results_page_quotes_runs_at_all():
    tables, _ = page_checks(PAGES[0])
    quoted = [t for t in tables if t[0] and t[0][0] == "artefacts"]
    assert len(quoted) >= 10


def test_the_checker_catches_a_changed_number(tmp_path, monkeypatch):
    run = tmp_path / "docs" / "runs" / "demo"
    run.mkdir(parents=True)
    (run / "t.md").write_text("| | a | b |\n|---|---|---|\n| eps | 1.5 | 2.0e4 |\n")
    (run / "run.json").write_text(json.dumps({"command": "privgp experiment demo --out docs/runs/demo",
                                              "summary": {"x": 0.123456}}))
    good = ("Command: `privgp experiment demo --out docs/runs/demo`\n\n<!-- artefacts: docs/runs/demo/t.md -->\n"
            "| | a |\n|---|---|\n| eps | 1.5 |\n\n<!-- artefacts: docs/runs/demo/run.json -->\n"
            "| quantity | value |\n|---|---|\n| `summary.x` | 0.1235 |\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    page = tmp_path / "page.md"
    page.write_text(good)
    assert page_checks(page)[1] == []
    page.write_text(good.replace("| eps | 1.5 |", "| eps | 1.6 |"))
    assert any("the runs say" in e for e in page_checks(page)[1])
    page.write_text(good.replace("0.1235", "0.1240"))
    assert any("the run says" in e for e in page_checks(page)[1])
    page.write_text(good.replace("<!-- artefacts: docs/runs/demo/t.md -->\n", ""))
    assert any("no <!--" in e for e in page_checks(page)[1])
    (run / "k.md").write_text("| attack | r | auc |\n|---|---|---|\n| paper | 1 | 0.5 |\n| paper | 2 | 0.7 |\n")
    keyed = good + "\n<!-- artefacts: docs/runs/demo/k.md key=attack,r -->\n| attack | r | auc |\n|---|---|---|\n| paper | 2 | 0.7 |\n"
    page.write_text(keyed)
    assert page_checks(page)[1] == []
    page.write_text(keyed.replace("| paper | 2 | 0.7 |\n", "| paper | 2 | 0.5 |\n"))
    assert any("the runs say" in e for e in page_checks(page)[1])
