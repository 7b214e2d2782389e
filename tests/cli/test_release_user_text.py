"""What a release writes of the data holder's text and numbers (red team 25, report.html and the outputs):

* picture format 4 draws a column name literally: a "$" was matplotlib's math text, and an invalid one crashed the
  drawing after the charge (nothing written, the budget spent); a 250-character name left no room for the map;
* the domain and the threshold are stated exactly in the picture, the report and the summary (6 significant digits
  read a UTM box [4312345, 4312678] as [4.31234e+06, 4.31268e+06] and the threshold 1234567 as 1.23457e+06), and the
  colour bar's ticks are told apart;
* the report's public settings are the settings (10 digits wrote 4 + 4 * 2^-25 as 4.000000119, below it), its
  forecast IoU is never rounded up to the refusal line, Parquet data are not "a CSV file";
* a released CSV's header quotes a name with a comma, and a name that starts like a spreadsheet formula is refused
  before the charge; ``--map`` on a grid too large for the page is refused before the charge.
"""
from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from privgp.cli import release_figure
from privgp.cli.main import main
from privgp.cli.release_figure import PictureContext, ResponseDisplay, _Figures, draw
from privgp.formatting import exact_number, format_short_of, short_number
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box

from .picture_cases import front


def _records(path: Path, response: str, x: str = "x", lo=(0.0, 0.0), hi=(1.0, 1.0), centre: float = 1.0) -> Path:
    rng = np.random.default_rng(0)
    n = 600
    X = rng.uniform(lo, hi, (n, 2))
    u = (X - np.asarray(lo)) / (np.asarray(hi) - np.asarray(lo))
    r = centre + np.sin(3 * u[:, 0]) + np.cos(2 * u[:, 1]) + rng.normal(0, 0.3, n)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([x, "y", response])
        w.writerows(zip(X[:, 0], X[:, 1], r))
    return path


def _release(tmp: Path, data: Path, response: str, *extra: str, x: str = "x", box=("0", "1", "0", "1"),
             threshold: str = "1") -> tuple[int, Path, Path]:
    out, ledger = tmp / "out", tmp / "ledger.sqlite"
    code = main(["release", "--data", str(data), "--x-col", x, "--y-col", "y", "--response-col", response,
                 "--box", *box, "--threshold", threshold, "--clip", "2", "--out", str(out), "--ledger", str(ledger),
                 "--allow-noisy", "--seed", "1", "--json", *extra])
    return code, out, ledger


def _entries(ledger: Path) -> int:
    if not ledger.exists():
        return 0
    with sqlite3.connect(ledger) as db:
        return db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]


def _figure(monkeypatch, field, ctx, fmt=release_figure.PICTURE_FORMAT):
    """draw(), keeping the figure it closes."""
    kept = []
    monkeypatch.setattr(_Figures, "close", staticmethod(kept.append))
    pic = draw(field, ctx, fmt)
    return pic, kept[0]


def test_number_texts():
    assert [exact_number(x) for x in (50.0, 500000.5, 4312345.0, 0.1, 1e-5, -3.0)] == \
        ["50", "500000.5", "4312345", "0.1", "1e-05", "-3"]
    for x in np.random.default_rng(1).uniform(-1e7, 1e7, 200):
        assert float(exact_number(x)) == x
    assert short_number(0.1 + 0.2) == "0.3" and short_number(1234566.0000001) == "1234566"
    assert format_short_of(0.499, 0.5) == "0.49" and format_short_of(0.501, 0.5) == "0.50"
    assert format_short_of(0.494, 0.5) == "0.49" and format_short_of(0.7, 0.5) == "0.70"


@pytest.mark.parametrize("name", ["cost_$_per_m2_$", "cost $\\foo{$ usd", "US$ 2020 / US$ 2019"])
def test_a_dollar_in_a_column_name_is_drawn_literally_and_nothing_is_charged_for_nothing(tmp_path, name, capsys,
                                                                                         monkeypatch):
    monkeypatch.setenv("PRIVGP_PICTURE_PROCESS", "0")
    code, out, ledger = _release(tmp_path, _records(tmp_path / "d.csv", name), name)
    assert code == 0, capsys.readouterr().err
    assert (out / "excursion.png").stat().st_size > 50_000 and _entries(ledger) == 1
    capsys.readouterr()
    assert main(["verify", str(out), "--strict"]) == 0
    # drawn literally: every text of the figure is plain text, not math
    box = Box((0.0, 0.0), (1.0, 1.0))
    ctx = PictureContext(domain=box, axis_labels=("x", "y"), response=ResponseDisplay(name),
                         response_map=ResponseMap(threshold=1.0, clip=2.0), epsilon=5.0, delta=1e-6)
    from matplotlib.text import Text

    _, fig = _figure(monkeypatch, front(box, sd=0.1), ctx)
    texts = [t for t in fig.findobj(Text) if "$" in t.get_text()]
    assert texts and not any(t.get_parse_math() for t in texts)


def test_a_very_long_column_name_leaves_the_map_its_room(monkeypatch):
    box = Box((0.0, 0.0), (1.0, 1.0))
    ctx = PictureContext(domain=box, axis_labels=("x", "y"), response=ResponseDisplay("R" * 250),
                         response_map=ResponseMap(threshold=1.0, clip=2.0), epsilon=5.0, delta=1e-6)
    shares = {}
    for fmt in (3, 4):
        _, fig = _figure(monkeypatch, front(box, sd=0.1), ctx, fmt)
        ax = fig.axes[0]
        shares[fmt] = ax.get_window_extent().height / fig.bbox.height
    assert shares[4] > 0.3 > shares[3], shares   # format 3: the name took the figure, the map a sliver or nothing


def test_a_utm_box_and_its_threshold_are_stated_exactly(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PRIVGP_PICTURE_PROCESS", "0")
    lo, hi = (500000.5, 4312345.0), (500999.5, 4312678.0)
    data = _records(tmp_path / "utm.csv", "price", x="easting", lo=lo, hi=hi, centre=1234567.0)
    code, out, _ = _release(tmp_path, data, "price", x="easting", box=("500000.5", "500999.5", "4312345", "4312678"),
                            threshold="1234567")
    assert code == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert summary["threshold"] == 1234567.0 if "threshold" in summary else True
    page = (out / "report.html").read_text()
    exact = "[500000.5, 500999.5] x [4312345, 4312678]"
    assert "price &gt; 1234567" in page and exact in page and "e+06" not in page
    assert main(["verify", str(out), "--strict"]) == 0
    # the picture: caption, title and legend exact; the colour bar's ticks told apart
    box = Box(lo, hi)
    ctx = PictureContext(domain=box, axis_labels=("easting", "y"), response=ResponseDisplay("price"),
                         response_map=ResponseMap(threshold=1234567.0, clip=2.0), epsilon=5.0, delta=1e-6)
    pic, fig = _figure(monkeypatch, front(box, sd=0.1), ctx)
    assert exact in pic.caption and "1234567" in pic.caption and "e+06" not in pic.caption
    ticks = [t.get_text() for t in fig.axes[0].child_axes[0].get_yticklabels()]
    assert len(set(ticks)) == len(ticks) > 2 and "1234567 (threshold)" in ticks, ticks
    legend = " ".join(t.get_text() for t in fig.legends[0].get_texts())
    assert "price = 1234567 (the threshold)" in legend, legend
    assert "1.23457e+06" not in legend + fig.axes[0].get_title()
    older = draw(front(box, sd=0.1), ctx, 3)   # format 3 as it was: 6 digits (verify redraws earlier releases so)
    assert "1.23457e+06" in older.caption and "[500000, 501000]" in older.caption


def test_report_settings_forecast_and_source_words(tmp_path, monkeypatch):
    from privgp.cli import release_report as rr
    from privgp.cli.release_publish import data_description

    rows = dict(rr._setting_values({"l1_sensitivity": 4 + 4 * 2.0 ** -25, "domain": {"lower": [500000.5, 1.0],
                                                                                     "upper": [500999.5, 2.0]}}))
    assert float(rows["l1_sensitivity"]) == 4 + 4 * 2.0 ** -25 and rows["domain"] == "[500000.5, 500999.5] x [1, 2]"
    f = {"expected_iou": 0.49901, "expected_iou_se": 0.02, "noisy_below_iou": 0.5, "words": "w", "per_family": {},
         "expected_rmse": 0.3}
    text = rr._forecast(type("R", (), {"forecast": f})())
    assert "Mostly noise" in text and "Expected IoU 0.49 " in text and "0.50 \u00b1" not in text

    class Data:
        n, source = 10, "lake/*.parquet"
    assert "Parquet" in data_description(Data()) and "a CSV file" not in data_description(Data())
    Data.source = "sales.csv"
    assert "a CSV file" in data_description(Data())
    assert "overflow-wrap: anywhere" in rr.PAGE.template.split("h1 {")[1].split("}")[0]


def test_a_csv_header_is_quoted_and_formula_names_are_refused_before_the_charge(tmp_path, capsys):
    code, out, _ = _release(tmp_path, _records(tmp_path / "d.csv", "price, in $k"), "price, in $k")
    assert code == 0, capsys.readouterr().err
    header = next(csv.reader(io.StringIO((out / "field.csv").read_text())))
    with open(out / "field.csv") as fh:
        rows = list(csv.reader(fh))
    assert all(len(r) == len(header) for r in rows), header
    for name in ('=HYPERLINK("http://evil.example/","x")', "+1", "@SUM(A1)", "-2"):
        sub = tmp_path / f"f{abs(hash(name))}"
        sub.mkdir()
        code, out, ledger = _release(sub, _records(sub / "d.csv", "price", x=name), "price", x=name)
        err = capsys.readouterr().err
        assert code == 2 and "spreadsheet" in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists() and _entries(ledger) == 0


def test_a_map_too_large_for_the_page_is_refused_before_the_charge(tmp_path, capsys):
    out, ledger = tmp_path / "out", tmp_path / "l.sqlite"
    assert main(["release", "--map", "--grid", "900", "--out", str(out), "--ledger", str(ledger)]) == 2
    err = capsys.readouterr().err
    assert "--map" in err and "250000" in err and not out.exists() and not ledger.exists()
