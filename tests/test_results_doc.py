"""The results page (docs/results.md) and README cannot drift from the committed runs: every table and every
number quoted in prose equals its committed artefact. The rules and the checker: ``tests/results_doc_check.py``."""
from __future__ import annotations

import json

import pytest

from tests import results_doc_check as rdc
from tests.results_doc_check import PAGES, page_checks, prose_checks


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_number_quoted_in_prose_is_checked(page):
    errors = prose_checks(page)
    assert not errors, f"{len(errors)} prose numbers unchecked:\n" + "\n".join(errors)


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
    monkeypatch.setattr(rdc, "ROOT", tmp_path)
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


def test_the_prose_checker_catches_a_changed_number(tmp_path, monkeypatch):
    run = tmp_path / "docs" / "runs" / "demo"
    run.mkdir(parents=True)
    (run / "t.md").write_text("| family | N | nll |\n|---|---|---|\n| eq | 25 | 0.471 ± 0.022 |\n| eq | 50 | 0.533 ± 0.025 |\n")
    (run / "run.json").write_text(json.dumps({"command": "privgp experiment demo --out docs/runs/demo",
                                              "seconds": 651.8, "summary": {"rows": [{"N": 25, "ms": 0.0045}]}}))
    good = ("## Demo\n\nCommand: `privgp experiment demo --out docs/runs/demo` (652 s).\n\n"
            "At N = 25 it reaches 0.471 <!-- n: docs/runs/demo/t.md [family=eq,N=25].nll --> "
            "± 0.022 <!-- n: docs/runs/demo/t.md [family=eq,N=25].nll#1 -->, against 0.533 at N = 50 and "
            "4.5 ms <!-- n: docs/runs/demo/run.json summary.rows.[N=25].ms scale=1000 -->; the paper has "
            "0.61 and 8% <!-- quote: paper -->.\nSee Thm 4.2, §5.1 and Lemma\n4.3. Both: 0.47 and 0.53 "
            "<!-- in: docs/runs/demo/t.md -->.\n")
    monkeypatch.setattr(rdc, "ROOT", tmp_path)
    page = tmp_path / "page.md"
    page.write_text(good)
    assert prose_checks(page) == []
    for old, new, says in (("0.471 <!--", "0.472 <!--", "but docs/runs/demo/t.md"),        # an n: marker
                           ("± 0.022", "± 0.023", "but docs/runs/demo/t.md"),
                           ("4.5 ms", "4.6 ms", "but docs/runs/demo/run.json"),
                           ("0.533 at", "0.534 at", "matches no number"),                 # the section's runs
                           ("(652 s)", "(665 s)", "matches no number"),                   # a duration
                           ("8% <!-- quote: paper -->", "8%", "matches no number"),       # the quote removed
                           ("and 0.53 <!-- in", "and 0.54 <!-- in", "matches no number in docs/runs/demo/t.md")):
        page.write_text(good.replace(old, new))
        errors = prose_checks(page)
        assert any(says in e for e in errors), (old, new, errors)
    page.write_text(good.replace("[family=eq,N=25].nll#1", "[family=eq].nll#1"))
    assert any("selects 2 rows" in e for e in prose_checks(page))
    page.write_text(good + "Unmarked: 0.5 <!-- n: docs/runs/demo/missing.md x -->.\n")
    assert any("must name a committed file" in e for e in prose_checks(page))
    page.write_text(good + "Gone: 0.5 <!-- in: docs/runs/demo/missing.md -->.\n")
    assert any("must name committed files" in e for e in prose_checks(page))
