"""The checks behind tests/test_results_doc.py: docs/results.md and README cannot drift from the committed runs.

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

Scope: README and every section of docs/results.md. The seed 001-004 sections and the "Three mechanisms"
and "Private Thompson sampling" sections quote tables that ``scripts/results_tables.py`` regenerates from
the committed CSVs (``docs/runs/*/page_*.md``). A run whose run.json predates the ``command`` field must have its
``privgp experiment NAME`` command and its ``--out docs/runs/NAME`` on the page; a folder without a run.json
must be written by a command on the page or list its commands in a README.md.

Numbers in prose. In the same scope (less any README section named in ``PROSE_PENDING``: none today),
every number quoted in prose -- outside tables, code blocks, code spans, headings,
link targets and HTML -- that is a decimal (``0.471``), a percentage (``61%``), a power of ten
(``1e-10``, ``1.9·10⁷``) or a duration (``652 s``, ``3.5 ms``) is checked. Integers that are not durations
are settings or counts (N = 200, 64 tasks, 20 runs) and are not checked; numbers that label a paper item
(``Thm 4.2``, ``§5.1``, ``Lemmas 4.1, 4.3``, ``Python ≥ 3.11``) are not numbers. A marker right after a
number, or after a run of numbers on one line, says how it is checked (markers are HTML comments, so
they do not show when the page is rendered):

* ``<!-- n: docs/runs/X/file KEY -->`` (the strong form): the number just before it equals, at its
  shown precision, the artefact's value at KEY: a dotted JSON key (``summary.nll.3.nll``), a list element
  or a CSV / Markdown-table row chosen by its fields (``[family=eq,N=25].nll``), ``#k`` for the k-th number
  of a text cell (``[N=25].difference#1``); ``scale=1000`` when the page shows milliseconds of a value
  stored in seconds;
* ``<!-- in: FILE_OR_FOLDER ... -->``: every number on its line since the previous marker equals, at its
  shown precision, some number written in those files (``git:REV:path`` names a file of an earlier
  commit, e.g. rows a retraining replaced; ``scale=1000`` as above);
* ``<!-- quote: WHAT -->``: the numbers on its line since the previous marker are not results of our runs
  and are said to be what they are: the paper's numbers (``quote: paper``), settings, closed forms, the
  tolerances of tests, or ``quote: derived`` -- a difference, ratio or range computed from numbers that
  are checked beside it in the same sentence;
* no marker: the number must equal, at its shown precision, some number in the artefacts (JSON, CSV,
  Markdown, text) of the runs (``docs/runs/X``) that its ``###`` subsection names (its ``##`` section's
  when the subsection names none; runs named only inside markers do not count). This default is the weak
  form: a low-precision number can match by chance, so the numbers a sentence's claim rests on carry
  ``n:`` markers.

A number that none of these accepts fails the test: it gets an artefact and a marker, or it goes.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "docs" / "results.md", ROOT / "README.md"]
MARKER = re.compile(r"<!--\s*(artefacts|no-artefact):\s*(.*?)\s*-->")


def split_row(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables_with_markers(text: str):
    """(marker kind, marker argument, header, rows) for every table; marker None when the table has none."""
    lines = text.splitlines()
    out, i, pending = [], 0, None
    while i < len(lines):
        line = lines[i]
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


SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def shown_number(shown: str) -> tuple[float, float] | None:
    """(value, half-width of its last shown digit) of a number as printed: ``0.471``, ``−0.06``, ``+0.063``,
    ``6,000``, ``15.3%`` (a fraction: 0.153), ``1e-10``, ``2.0e4``, ``4.7×10^4``, ``1.9·10⁷``, ``10⁻⁵``; None if
    it is not one."""
    text = shown.strip().replace("−", "-").replace(",", "").replace(" ", "").translate(SUPERSCRIPT)
    pct = text.endswith("%")
    text = text.rstrip("%")
    text = re.sub(r"^([-+]?)10\^?(-?\d+)$", r"\g<1>1e\2", text)   # a bare power of ten: exact
    text = re.sub(r"[×·]10\^?", "e", text)
    try:
        x = float(text)
    except ValueError:
        return None
    mant = text.split("e")[0]
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    exp = int(text.split("e")[1]) if "e" in text else 0
    scale = 0.01 if pct else 1.0
    return x * scale, 0.5 * 10.0 ** (exp - decimals) * scale * (1 + 1e-9)


def matches_shown_precision(shown: str, value) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        parsed = shown_number(shown)
        return parsed is not None and abs(parsed[0] - float(value)) <= parsed[1]
    return shown == str(value)


def page_checks(page: Path):
    text = page.read_text()
    errors = []
    tables = tables_with_markers(text)
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
    # (a run named only in a prose marker is a source to check against; its command is on docs/results.md)
    runs = {ROOT / m.group(0) for m in re.finditer(r"docs/runs/[\w.\-]+", PROSE_MARKER.sub("", text))}
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


# ------------------------------------------------------------------------------------------------
# Numbers quoted in prose (see the module docstring, "Numbers in prose")
PROSE_MARKER = re.compile(r"<!--\s*(n|in|quote):\s*(.*?)\s*-->")
SUP = "⁰¹²³⁴⁵⁶⁷⁸⁹"
PROSE_NUMBER = re.compile(
    r"(?<![\w.^/\\-])(?:[-−+](?=\d))?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
    r"(?:\s?[×·]\s?10(?:\^[-−]?\d+|[⁻" + SUP + r"]+)|e[-−+]?\d+)?(?:\s?%|(?=(?P<unit>\s?(?:s|ms|min)\b)))?")
LABEL_WORD = (r"(?:§|\b(?:[Ss]ec|Section|Thm|Theorem|Lemma|Lemmas|Props?|Proposition|Claims?|App|Appendix|[Ee]qs?|"
              r"Figs?|Figures?|Tables?|Algs?|Algorithm|Corollary|Remark|Definition|Example|Assumption|Python|torch)\b\.?)")
LABEL_NUMBERS = r"\s*(?:≥\s*)?[A-Z]?\.?\d+(?:\.\d+)*(?:\s*(?:,|and|/|–|\+|or)\s*[A-Z]?\.?\d+(?:\.\d+)*)*"
LABEL = re.compile(LABEL_WORD + LABEL_NUMBERS)
# README sections the prose check does not cover yet (none now: Quickstart, Large data and Data at scale are
# marked); a section named here is skipped, for one regenerated in steps
PROSE_PENDING = re.compile(r"^## (?!)")   # matches no heading


def is_quoted_number(m: re.Match) -> bool:
    """The numbers the prose rule covers: decimals, percentages, powers of ten, and durations (``665 s``)."""
    return bool(re.search(r"[.%×·e" + SUP + r"]", m.group(0))) or m.group("unit") is not None


def numbers_of(text: str) -> list[float]:
    """Every number written in a text (a run's JSON, CSV or Markdown), as floats."""
    out = []
    for m in re.finditer(r"[-−]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text):
        try:
            out.append(float(m.group(0).replace("−", "-")))
        except ValueError:
            pass
    return out


_FILE_NUMBERS: dict = {}


def file_numbers(path: Path) -> list[float]:
    if path not in _FILE_NUMBERS:
        files = sorted(q for q in path.rglob("*") if q.suffix in (".json", ".csv", ".md", ".txt")) if path.is_dir() else [path]
        _FILE_NUMBERS[path] = [x for q in files for x in numbers_of(q.read_text(errors="replace"))]
    return _FILE_NUMBERS[path]


def named_numbers(name: str) -> list[float]:
    """The numbers of a file (or every file of a folder) named by an ``in:`` marker: a path in the tree, or
    ``git:REV:path`` for a file of an earlier commit (e.g. a run's rows before a retraining)."""
    if name.startswith("git:"):
        _, rev, path = name.split(":", 2)
        out = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True)
        return numbers_of(out.stdout)
    path = ROOT / name
    if not path.exists():
        raise FileNotFoundError(name)
    return file_numbers(path)


def in_any(shown: str, values) -> bool:
    """The shown number equals, at its shown precision, one of ``values`` (sign aside: prose says "lower by")."""
    x, tol = shown_number(shown)
    xs = ((x, tol), (100 * x, 100 * tol)) if shown.rstrip().endswith("%") else ((x, tol),)  # 61% as 0.61 or 61
    return any(abs(abs(v) - abs(y)) <= t for v in values for y, t in xs)


def records_of(path: Path):
    """A run artefact as data: JSON as stored; a CSV or a Markdown table as a list of row dicts."""
    if path.suffix == ".json":
        return json.loads(path.read_text())
    if path.suffix == ".csv":
        import csv

        with path.open() as f:
            return list(csv.DictReader(f))
    out = []
    for _, header, rows in tables_with_markers(path.read_text()):
        out += [dict(zip(header, row)) for row in rows]
    return out


def _same(a, b: str) -> bool:
    if str(a) == b:
        return True
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def artefact_value(path: Path, key: str):
    """The value at ``key`` in the artefact: dotted keys and list indices (``summary.nll.3.nll``), a list
    element chosen by its fields (``[family=eq,N=25,method=DP-SVGP]``), and ``#k`` for the k-th number of a
    text cell (``[family=eq].difference#1``: the SE of ``-0.063 ± 0.069``)."""
    rec = records_of(path)
    key, _, nth = key.partition("#")
    for part in re.findall(r"\[[^\]]*\]|[^.\[\]]+", key):
        if part.startswith("["):
            want = [kv.split("=", 1) for kv in part[1:-1].split(",")]
            hits = [r for r in rec if all(k in r and _same(r[k], v) for k, v in want)]
            if len(hits) != 1:
                raise KeyError(f"{part} selects {len(hits)} rows")
            rec = hits[0]
        else:
            rec = rec[int(part)] if isinstance(rec, list) else rec[part]
    if isinstance(rec, str):
        nums = re.findall(r"[-−+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", rec)
        return float(nums[int(nth or 0)].replace("−", "-"))
    return rec


def clean_prose(line: str, previous: str = "") -> str:
    """A prose line without code spans, link targets, HTML other than the prose markers, and item labels
    (also a label whose word ends the previous line)."""
    if re.search(LABEL_WORD + r"\s*$", previous):
        line = re.sub("^" + LABEL_NUMBERS, " ", line)
    line = re.sub(r"`[^`]*`", " ", line)
    line = re.sub(r"\]\([^)]*\)", "]", line)
    line = re.sub(r"<!--(?!\s*(?:n|in|quote):).*?-->", " ", line)
    line = re.sub(r"</?[A-Za-z][^>]*>", " ", line)
    return LABEL.sub(" ", line)


def runs_named(text: str) -> list[Path]:
    """The run folders a stretch of the page names (``docs/runs/X`` or, in a link or image, ``runs/X``),
    not counting those named only inside prose markers."""
    text = PROSE_MARKER.sub("", text)
    runs = {ROOT / m for m in re.findall(r"docs/runs/[\w.\-]+", text)}
    runs |= {ROOT / "docs" / m for m in re.findall(r"(?<![\w/])runs/[\w.\-]+", text)}
    return sorted(r for r in runs if r.is_dir())


def prose_checks(page: Path) -> list[str]:
    """Every quoted number in the prose of the checked sections of ``page``, checked (module docstring)."""
    text = page.read_text()
    errors = []
    lineno = 0
    parts = []   # (### part, whether its ## section is skipped, the runs its ## section names)
    for sec in re.split(r"(?m)^(?=## )", text):
        first = sec.splitlines()[0] if sec else ""
        skip = bool(PROSE_PENDING.match(first))
        parts += [(part, skip, runs_named(sec)) for part in re.split(r"(?m)^(?=### )", sec)]
    for part, skip, section_runs in parts:
        runs = runs_named(part) or section_runs   # the ### subsection's runs, else its section's
        fence, previous = False, ""
        for line in part.splitlines():
            lineno += 1
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            if skip or fence or line.lstrip().startswith(("|", "#")):
                continue
            pos, clean = 0, clean_prose(line, previous)
            previous = line
            for m in list(PROSE_MARKER.finditer(clean)) + [None]:
                seg = clean[pos:m.start() if m else len(clean)]
                pos = m.end() if m else len(clean)
                nums = [n.group(0) for n in PROSE_NUMBER.finditer(seg) if is_quoted_number(n)]
                kind, arg = (m.group(1), m.group(2).split()) if m else (None, [])
                where = f"{page.name}:{lineno}"
                if kind == "quote":
                    continue
                if kind == "n":   # the key may hold spaces (a column header): FILE KEY... [scale=K]
                    scale = float(arg.pop()[6:]) if arg and arg[-1].startswith("scale=") else 1.0
                    arg = arg[:1] + [" ".join(arg[1:])] if len(arg) > 1 else arg
                    if len(arg) != 2 or not (ROOT / arg[0]).is_file():
                        errors.append(f"{where}: <!-- n: {' '.join(arg)} --> must name a committed file and a key")
                        continue
                    if not nums or not re.search(re.escape(nums[-1]) + r"\s*(?:[A-Za-zµ×]{1,4})?\s*$", seg):
                        errors.append(f"{where}: <!-- n: {' '.join(arg)} --> must follow the number it checks")
                        continue
                    shown, nums = nums[-1], nums[:-1]
                    try:
                        val = artefact_value(ROOT / arg[0], arg[1])
                    except (KeyError, IndexError, ValueError) as e:
                        errors.append(f"{where}: {arg[1]} not in {arg[0]} ({e})")
                        continue
                    if isinstance(val, (int, float)) and not isinstance(val, bool):
                        val = val * scale
                    if not matches_shown_precision(shown.replace("+", ""), val):
                        errors.append(f"{where}: {shown} but {arg[0]} {arg[1]} is {val}")
                if kind == "in":   # FILES... [scale=K]
                    scale = float(arg.pop()[6:]) if arg and arg[-1].startswith("scale=") else 1.0
                    try:
                        values, named = [scale * x for a in arg for x in named_numbers(a)], " ".join(arg)
                    except (FileNotFoundError, subprocess.CalledProcessError) as e:
                        why = "git show failed (a shallow clone?)" if isinstance(e, subprocess.CalledProcessError) else e
                        errors.append(f"{where}: <!-- in: {' '.join(arg)} --> must name committed files ({why})")
                        continue
                    if not arg:
                        errors.append(f"{where}: <!-- in: --> must name committed files")
                        continue
                else:
                    values, named = [x for r in runs for x in file_numbers(r)], "the runs this (sub)section names"
                for shown in nums:
                    if not in_any(shown, values):
                        errors.append(f"{where}: {shown!r} matches no number in {named} "
                                      f"(…{seg.strip()[:80]}…)")
    return errors
