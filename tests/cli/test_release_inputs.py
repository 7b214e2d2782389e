"""Issue 25, "Bad input accepted silently", "Nothing charged that cannot be released" (sparse-gp and
optimize parts), "Budget keys that cannot be sidestepped" and the torch.load part of "Sound bounds only".

Each refusal: exit status 2, one line, no traceback, the ledger's bytes unchanged, nothing in --out.
"""
from __future__ import annotations

import math
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from privgp.datasets import baltimore
from privgp.errors import InvalidParameterError
from privgp.ledger import Ledger
from privgp.mechanisms.release import MAX_RESPONSE, MIN_LOG_RESPONSE, ResponseMap
from tests.cli_scratch import digest, run, run_quiet

OK = ["--allow-noisy", "--seed", "1", "--json"]


def assert_refused(code, err, needle, ledger: Path, before, out_dir: Path | None = None):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("privgp: error:"), err
    assert "Traceback" not in err and needle in err, err
    assert digest(ledger) == before
    if out_dir is not None:
        assert not out_dir.exists()
        assert [p.name for p in out_dir.parent.iterdir() if p.name.startswith(".privgp-tmp-")] == []


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PRIVGP_LEDGER", str(tmp_path / "default.sqlite"))
    monkeypatch.chdir(tmp_path)
    return tmp_path, tmp_path / "ledger.sqlite"


@pytest.fixture(scope="module")
def _one_release_ledger(tmp_path_factory) -> Path:
    """A ledger file with one release in it, made once for the module (a release costs about a second)."""
    tmp = tmp_path_factory.mktemp("seeded")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(tmp / "home"))
        mp.setenv("PRIVGP_LEDGER", str(tmp / "default.sqlite"))
        mp.chdir(tmp)
        code, err = run_quiet("release", "--mechanism", "posterior-sample", "--grid", "31", *OK, "--ledger",
                              tmp / "ledger.sqlite", "--out", tmp / "first")
        assert code == 0, err
    return tmp / "ledger.sqlite"


@pytest.fixture
def seeded_ledger(_one_release_ledger):
    """seeded_ledger(ledger): a copy of the module's one-release ledger at ``ledger``; returns its digest."""
    def copy(ledger: Path) -> str:
        shutil.copyfile(_one_release_ledger, ledger)
        return digest(ledger)
    return copy


# -- CSV ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,needle", [
    ("x,y,x\n0.1,0.2,0.3\n0.2,0.3,0.4\n", "repeated column name: 'x'"),
    ("x,y,v\n0.1,0.2,0.3\n0.2,0.3,0.4,0.9\n0.5,0.5,0.1\n", "line 3 has 4 field(s), the header has 3"),
    ("x,y,v\n0.1,0.2,0.3\n0.2,0.3\n0.5,0.5,0.1\n", "line 3 has 2 field(s), the header has 3"),
])
def test_repeated_columns_and_ragged_rows_are_refused(env, seeded_ledger, capsys, text, needle):
    tmp, ledger = env
    before = seeded_ledger(ledger)
    data = tmp / "d.csv"
    data.write_text(text)
    out = tmp / "rel"
    code, _, err = run(capsys, "release", "--mechanism", "posterior-sample", *OK, "--data", data, "--x-col", "x",
                       "--y-col", "y", "--response-col", "v", "--box", 0, 1, 0, 1, "--threshold", 0, "--clip", 1,
                       "--ledger", ledger, "--out", out)
    assert_refused(code, err, needle, ledger, before, out)


# -- --grid 0, sparse-gp scales ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,needle", [
    (["--mechanism", "posterior-sample", "--grid", "0"], "--grid: expected an integer >= 2"),
    (["--mechanism", "sparse-gp", "--grid", "1"], "--grid: expected an integer >= 2"),
    (["--mechanism", "sparse-gp", "--noise-std", "1e-300"], "--noise-std must be between"),
    (["--mechanism", "sparse-gp", "--noise-ratio", "1e-300"], "--noise-ratio must be between"),
    (["--mechanism", "sparse-gp", "--noise-ratio", "1e-150"], "--noise-ratio must be between"),
])
def test_degenerate_grid_and_scales_are_refused_before_the_charge(env, seeded_ledger, capsys, args, needle):
    tmp, ledger = env
    before = seeded_ledger(ledger)
    out = tmp / "rel"
    code, _, err = run(capsys, "release", *args, *OK, "--ledger", ledger, "--out", out)
    assert_refused(code, err, needle, ledger, before, out)
    assert "ZeroDivisionError" not in err


def test_sparse_gp_at_the_ends_of_the_allowed_scales_releases(env, capsys):
    tmp, ledger = env
    for i, args in enumerate((["--noise-std", "1e-150"], ["--noise-ratio", "1e-2"], ["--noise-ratio", "1e2"])):
        code, _, err = run(capsys, "release", "--mechanism", "sparse-gp", *args, *OK, "--budget-epsilon", 1000,
                           "--ledger", ledger, "--out", tmp / f"r{i}")
        assert code == 0, (args, err)
        assert np.all(np.isfinite(np.load(tmp / f"r{i}" / "prediction.npz")["mean"]))
    # noise beyond the exact sampler's 2^56 lattice steps: refused before the charge, naming the ratio
    before = ledger.read_bytes()
    for ratio in ("1e-12", "1e12"):
        code, _, err = run(capsys, "release", "--mechanism", "sparse-gp", "--noise-ratio", ratio, *OK,
                           "--budget-epsilon", 1000, "--ledger", ledger, "--out", tmp / "r_far")
        assert code == 2 and "--noise-ratio must be such that the noise is at most 2^56 lattice" in err, err
        assert ledger.read_bytes() == before and not (tmp / "r_far").exists()


# -- optimize ---------------------------------------------------------------------------------------------------------

def test_optimize_save_responses_is_probed_by_writing(env, seeded_ledger, capsys):
    tmp, ledger = env
    before = seeded_ledger(ledger)
    (tmp / "a-file").write_text("x")
    for target in ("/proc/privgp-responses.csv", tmp / "a-file" / "r.csv", tmp / "no-such-dir" / "r.csv", tmp):
        out = tmp / "opt"
        code, _, err = run(capsys, "optimize", "--function", "forrester", "--rounds", 5, "--ledger", ledger,
                           "--out", out, "--save-responses", target)
        assert_refused(code, err, "--save-responses", ledger, before, out)


def test_optimize_rounds_are_bounded_before_the_charge(env, seeded_ledger, capsys):
    tmp, ledger = env
    before = seeded_ledger(ledger)
    out = tmp / "opt"
    code, _, err = run(capsys, "optimize", "--function", "forrester", "--rounds", 2_000_000, "--ledger", ledger,
                       "--out", out)
    assert_refused(code, err, "rounds must be at most", ledger, before, out)
    code, _, err = run(capsys, "optimize", "--function", "forrester", "--rounds", 1500, "--memory-limit", 0.5,
                       "--ledger", ledger, "--out", out)
    assert_refused(code, err, "rounds must be fewer", ledger, before, out)


OBJECTIVES = """\
import numpy as np


def f(x):
    return float(np.sin(3 * x[0]))


CALLS = [0]


def interrupt(x):   # at the third query: round 1 is asked before the charge (a failure there costs nothing)
    CALLS[0] += 1
    if CALLS[0] == 3:
        raise KeyboardInterrupt
    return 0.0


def leave(x):
    import sys
    CALLS[0] += 1
    if CALLS[0] == 3:
        sys.exit(0)
    return 0.0


def cancelled(x):   # a BaseException of asyncio's, as an objective wrapping async code raises (red team 17e)
    import asyncio
    CALLS[0] += 1
    if CALLS[0] == 3:
        raise asyncio.CancelledError("the query was cancelled")
    return 0.0
"""


@pytest.mark.parametrize("func,needle", [("interrupt", "interrupted (KeyboardInterrupt)"),
                                         ("leave", "called sys.exit(0)"),
                                         ("cancelled", "raised CancelledError")])
def test_an_objective_that_interrupts_or_exits_ends_with_a_message_and_the_charge(env, capsys, func, needle):
    tmp, ledger = env
    (tmp / "obj.py").write_text(OBJECTIVES)
    code, _, err = run(capsys, "optimize", "--callable", f"obj.py:{func}", "--box", 0, 1, "--grid", 50,
                       "--rounds", 10, "--epsilon", 1, "--seed", 1, "--ledger", ledger, "--out", tmp / "o", "--json")
    assert code == 2 and needle in err and "the charge for the whole run" in err, err
    (entry,) = Ledger(ledger).entries()
    assert 0.99 < entry.epsilon <= 1.0   # the whole planned run is charged
    assert (tmp / "o" / "certificate.json").is_file()


def test_callable_budget_key_is_the_canonical_file(env, capsys, monkeypatch):
    tmp, ledger = env
    (tmp / "obj.py").write_text(OBJECTIVES)
    base = ["--box", 0, 1, "--grid", 50, "--rounds", 10, "--epsilon", 6, "--budget-epsilon", 8, "--seed", 1,
            "--ledger", ledger, "--json"]
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp))])
    code, _, err = run(capsys, "optimize", "--callable", "obj.py:f", *base, "--out", tmp / "o1")
    assert code == 0, err
    before = digest(ledger)
    for i, spec in enumerate(("./obj.py:f", f"{tmp / 'obj.py'}:f", "obj:f")):
        code, _, err = run(capsys, "optimize", "--callable", spec, *base, "--out", tmp / f"o{i + 2}")
        assert code == 3 and "refused" in err, (spec, err)   # the same budget: two runs of 6 compose to 8.68 > 8
        assert digest(ledger) == before
    assert len(Ledger(ledger).datasets()) == 1
    # the current folder is searched last: it is never put first on sys.path
    assert sys.path[0] != str(tmp) and str(tmp) in sys.path


def test_callable_key_changes_with_the_content(env, capsys):
    from privgp.cli.optimize import _load_callable

    tmp, _ = env
    (tmp / "obj.py").write_text(OBJECTIVES)
    k1 = _load_callable("obj.py:f")[1]
    assert _load_callable(f"{tmp}/./obj.py:f")[1] == k1
    (tmp / "link.py").symlink_to(tmp / "obj.py")
    assert _load_callable("link.py:f")[1] == k1
    (tmp / "obj.py").write_text(OBJECTIVES + "\n# edited\n")
    assert _load_callable("obj.py:f")[1] != k1


# -- audit sampler --png ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["/proc/privgp-audit.png", "dir", "missing/a.png", "file/a.png"])
def test_audit_sampler_png_to_an_unwritable_place_is_one_line(env, capsys, where):
    tmp, _ = env
    (tmp / "dir").mkdir()
    (tmp / "file").write_text("x")
    target = where if where.startswith("/") else str(tmp / where)
    code, out, err = run(capsys, "audit", "sampler", "--sampler", "sto", "--n", 8, "--r", 1, "--sigma", 10,
                         "--png", target, "--json")
    assert code == 2 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("privgp: error: --png"), err
    assert [p.name for p in tmp.iterdir() if p.name.startswith(".privgp-tmp-")] == []


# -- torch.load: weights only ------------------------------------------------------------------------------------------

class Boom:
    """Unpickling this would run code (os.system); weights-only loading must refuse it."""

    def __reduce__(self):
        return (os.system, ("touch privgp-pwned",))


def test_a_checkpoint_with_a_pickled_object_is_refused(env):
    torch = pytest.importorskip("torch")
    from privgp.errors import DataError
    from privgp.nn.pretrained import load, load_checkpoint, training_record

    tmp, _ = env
    evil = tmp / "evil.pt"
    torch.save({"config": {}, "state_dict": {}, "training": Boom()}, evil)
    for fn in (load, training_record, load_checkpoint):
        with pytest.raises(DataError, match="weights only"):
            fn(evil)
    assert not (tmp / "privgp-pwned").exists()
    # the shipped checkpoint still loads, and one written by export_trained's format round-trips
    model = load()
    good = tmp / "good.pt"
    torch.save({"config": model.cfg.to_dict() if hasattr(model, "cfg") else {}, "state_dict": model.state_dict(),
                "training": {"torch": str(torch.__version__)}}, good)
    assert set(load_checkpoint(good)) == {"config", "state_dict", "training"}
    assert isinstance(training_record(), dict) and training_record()


# -- likely mistakes that would release a useless map (usability walk-through, 2026-11-26) -------------------------

def _sensors(path: Path, n: int = 400) -> Path:
    """Records in a London-like lon/lat box: lon [-0.25, 0.05], lat [51.40, 51.60], a response around 25-45."""
    rng = np.random.default_rng(3)
    lon, lat = rng.uniform(-0.25, 0.05, n), rng.uniform(51.40, 51.60, n)
    z = 25 + 20 * np.exp(-((lon + 0.1) ** 2 + (lat - 51.5) ** 2) / 0.002) + rng.normal(0, 3, n)
    path.write_text("lon,lat,no2\n" + "".join(f"{a},{b},{c}\n" for a, b, c in zip(lon, lat, z)))
    return path


@pytest.mark.parametrize("box,threshold,needle", [
    # the GIS order minx miny maxx maxy read as XMIN XMAX YMIN YMAX: a box 50 degrees wide around the records
    (("-0.25", "51.40", "0.05", "51.60"), "40", "not GIS's minx miny maxx maxy"),
    (("-0.25", "0.05", "51.40", "51.60"), "400", "every one of the 400 responses is at or below 380"),
    (("-0.25", "0.05", "51.40", "51.60"), "-400", "every one of the 400 responses is at or above -380"),
])
def test_a_box_far_larger_than_the_records_or_a_threshold_outside_them_is_refused(env, seeded_ledger, capsys, box, threshold, needle):
    tmp, ledger = env
    before = seeded_ledger(ledger)
    data = _sensors(tmp / "s.csv")
    out = tmp / "rel"
    code, _, err = run(capsys, "release", "--data", data, "--x-col", "lon", "--y-col", "lat", "--response-col", "no2",
                       "--box", *box, "--threshold", threshold, "--clip", "20", *OK, "--ledger", ledger, "--out", out)
    assert_refused(code, err, needle, ledger, before, out)
    # the same records with the box in privgp's order and a threshold inside their range are released
    code, _, err = run(capsys, "release", "--data", data, "--x-col", "lon", "--y-col", "lat", "--response-col", "no2",
                       "--box", "-0.25", "0.05", "51.40", "51.60", "--threshold", "40", "--clip", "20", *OK,
                       "--ledger", ledger, "--out", out)
    assert code == 0, err


def test_a_sqlite_file_is_named_as_such(env, capsys):
    import sqlite3

    tmp, ledger = env
    db = tmp / "s.db"
    con = sqlite3.connect(db)
    con.execute("create table r (x real, y real, z real)")
    con.executemany("insert into r values (?, ?, ?)", [(i / 10, i / 20, float(i)) for i in range(10)])
    con.commit()
    con.close()
    out = tmp / "rel"
    code, _, err = run(capsys, "release", "--data", db, "--table", "r", "--x-col", "x", "--y-col", "y",
                       "--response-col", "z", "--box", "0", "1", "0", "1", "--threshold", "1", "--clip", "1", *OK,
                       "--ledger", ledger, "--out", out)
    assert_refused(code, err, "is a SQLite database; privgp reads DuckDB databases, Parquet and CSV files", ledger,
                   None, out)


@pytest.mark.parametrize("mechanism", ["auto", "grid", "sparse-gp", "posterior-sample"])
@pytest.mark.parametrize("epsilon", ["0", "-1", "inf"])
def test_every_bad_epsilon_gets_the_same_requirement(env, capsys, mechanism, epsilon):
    tmp, ledger = env
    code, _, err = run(capsys, "release", "--mechanism", mechanism, "--epsilon", epsilon, *OK, "--ledger", ledger,
                       "--out", tmp / "rel")
    assert_refused(code, err, "--epsilon must be finite and > 0", ledger, None, tmp / "rel")


def test_a_semicolon_file_and_a_forgotten_y_col_are_named(env, capsys):
    tmp, ledger = env
    (tmp / "semi.csv").write_text("lon;lat;no2\n0,1;0,2;3,5\n0,3;0,4;2,5\n")
    code, _, err = run(capsys, "release", "--data", tmp / "semi.csv", "--x-col", "lon", "--y-col", "lat",
                       "--response-col", "no2", "--box", "0", "1", "0", "1", "--threshold", "1", "--clip", "1", *OK,
                       "--ledger", ledger, "--out", tmp / "rel")
    assert_refused(code, err, "its header looks separated by ';'", ledger, None, tmp / "rel")
    data = _sensors(tmp / "s.csv")
    code, _, err = run(capsys, "release", "--data", data, "--x-col", "lon", "--response-col", "no2",
                       "--box", "-0.25", "0.05", "51.40", "51.60", "--threshold", "40", "--clip", "20", *OK,
                       "--ledger", ledger, "--out", tmp / "rel")
    assert_refused(code, err, "for 2-D data give --y-col too", ledger, None, tmp / "rel")


@pytest.mark.parametrize("mechanism", ["auto", "posterior-sample"])
@pytest.mark.parametrize("box,threshold,needle", [
    (("-0.25", "51.40", "0.05", "51.60"), "40", "not GIS's minx miny maxx maxy"),
    (("-0.25", "0.05", "51.40", "51.60"), "400", "every one of the 400 responses is at or below 380"),
])
def test_the_same_refusals_for_records_streamed_from_parquet(env, seeded_ledger, capsys, mechanism, box, threshold, needle):
    """Parquet (and DuckDB, folders, globs) are read in one streaming pass that keeps no records: the checks run on
    the pass's extents, before the charge (a fresh-clone walk-through found them skipped there)."""
    import pandas as pd

    tmp, ledger = env
    before = seeded_ledger(ledger)
    pd.read_csv(_sensors(tmp / "s.csv")).to_parquet(tmp / "s.parquet")
    out = tmp / "rel"
    code, _, err = run(capsys, "release", "--data", tmp / "s.parquet", "--x-col", "lon", "--y-col", "lat",
                       "--response-col", "no2", "--box", *box, "--threshold", threshold, "--clip", "20",
                       "--mechanism", mechanism, *OK, "--ledger", ledger, "--out", out)
    assert_refused(code, err, needle, ledger, before, out)


def test_degrees_without_crs_get_a_note_and_with_crs_none(env, capsys):
    """lon/lat columns over a box inside [-180, 180] x [-90, 90] without --crs: released (planar units are a valid
    choice), with a one-line note on stderr saying what --crs would do; with --crs, no note."""
    tmp, ledger = env
    data = _sensors(tmp / "s.csv")
    common = ["release", "--data", data, "--x-col", "lon", "--y-col", "lat", "--response-col", "no2",
              "--box", "-0.25", "0.05", "51.40", "51.60", "--threshold", "40", "--clip", "20", *OK,
              "--ledger", ledger, "--budget-epsilon", "20"]
    code, _, err = run(capsys, *common, "--out", tmp / "a")
    assert code == 0 and err.count("privgp: note: the coordinate columns are named like longitude and latitude") == 1, err
    # walk-through 20: the dry run, where settings are checked before any budget is spent, says it too
    code, _, err = run(capsys, *common, "--dry-run")
    assert code == 0 and err.count("privgp: note: the coordinate columns are named like longitude and latitude") == 1, err
    code, _, err = run(capsys, *common, "--crs", "EPSG:4326", "--out", tmp / "b")
    assert code == 0 and "named like longitude" not in err, err
    # walk-through 15: latitude as x and longitude as y, the box swapped too: with --crs the map went to
    # Antarctica (refused now, nothing charged); without it, a note
    swapped = ["release", "--data", data, "--x-col", "lat", "--y-col", "lon", "--response-col", "no2",
               "--box", "51.40", "51.60", "-0.25", "0.05", "--threshold", "40", "--clip", "20", *OK,
               "--ledger", ledger, "--budget-epsilon", "20"]   # the same records: the same data set and budget
    before = Ledger(ledger).entries()
    code, _, err = run(capsys, *swapped, "--crs", "EPSG:4326", "--out", tmp / "c")
    assert code == 2 and "--x-col/--y-col must be the longitude (east) column" in err and err.count("\n") == 1
    assert not (tmp / "c").exists() and len(Ledger(ledger).entries()) == len(before)
    code, _, err = run(capsys, *swapped, "--out", tmp / "d")
    assert code == 0 and "the x (east) column is named like latitude" in err, err
    # walk-through 20: a box in GIS order with --crs is refused showing the degrees typed, not only their metres
    gis = ["release", "--data", data, "--x-col", "lon", "--y-col", "lat", "--response-col", "no2", "--box", "-0.25",
           "51.4", "0.05", "51.6", "--threshold", "40", "--clip", "20", *OK, "--ledger", ledger, "--crs", "EPSG:4326"]
    before = Ledger(ledger).entries()
    code, _, err = run(capsys, *gis, "--out", tmp / "e")
    assert code == 2 and "not GIS's minx miny maxx maxy" in err and "got '-0.25 51.4 0.05 51.6 in EPSG:4326" in err, err
    assert err.count("\n") == 1 and not (tmp / "e").exists() and len(Ledger(ledger).entries()) == len(before)
    assert len(Ledger(ledger).datasets()) == 1   # swapped axes are the same records (one budget, 3 releases)


def test_a_transect_along_one_axis_is_released(env, capsys):
    """Records on a line across the box fill a real part of it (red-team round 10: refused when the check multiplied
    the sides' shares)."""
    tmp, ledger = env
    rng = np.random.default_rng(5)
    x = rng.uniform(0.0, 10.0, 300)
    (tmp / "t.csv").write_text("x,y,v\n" + "".join(f"{a},2.5,{np.sin(a)}\n" for a in x))
    code, _, err = run(capsys, "release", "--data", tmp / "t.csv", "--x-col", "x", "--y-col", "y", "--response-col",
                       "v", "--box", "0", "10", "0", "5", "--threshold", "0", "--clip", "1", *OK, "--ledger", ledger,
                       "--out", tmp / "rel")
    assert code == 0, err


def test_a_box_the_records_fill_under_a_tenth_of_is_refused_unless_noisy_maps_are_allowed(env, capsys):
    """Walk-through 11: one city's records (8% x 4% of the box) in a national box were released with a forecast of
    IoU 0.79 and a true IoU of 0: the records sat in one cell, noise filled the rest, and the forecast (records
    spread over the box) could not tell. Every side under a tenth is refused before the charge, unless
    --allow-noisy; records all at one place and a single record are named as such."""
    tmp, ledger = env
    data = _sensors(tmp / "s.csv")
    args = ["release", "--data", data, "--x-col", "lon", "--y-col", "lat", "--response-col", "no2",
            "--threshold", "40", "--clip", "20", "--seed", "1", "--json", "--ledger", ledger]
    out = tmp / "rel"
    code, _, err = run(capsys, *args, "--box", "-2", "2", "50", "53", "--out", out)
    assert_refused(code, err, "under a tenth of every side", ledger, None, out)
    assert "7.49% of its width and 6.65% of its height" in err, err
    code, _, err = run(capsys, *args, "--box", "-2", "2", "50", "53", "--allow-noisy", "--out", out)
    assert code == 0, err
    (tmp / "one.csv").write_text("lon,lat,no2\n" + "-0.1,51.5,30\n" * 5)
    code, _, err = run(capsys, *args[:2], tmp / "one.csv", *args[3:], "--box", "-0.25", "0.05", "51.40", "51.60",
                       "--out", tmp / "one")
    assert code == 2 and "all 5 are at the same coordinates" in err, err
    (tmp / "single.csv").write_text("lon,lat,no2\n-0.1,51.5,30\n")
    code, _, err = run(capsys, *args[:2], tmp / "single.csv", *args[3:], "--box", "-0.25", "0.05", "51.40", "51.60",
                       "--out", tmp / "one")
    # walk-through 15: one record was first blamed on the box's order (GIS); it is named as the cause
    assert code == 2 and err.startswith("privgp: error: records must be more than one record") and "GIS" not in err


def test_a_dry_run_prints_the_forecast_and_charges_and_writes_nothing(env, capsys):
    """Walk-through 11: comparing epsilons meant releasing. --dry-run checks and forecasts, then stops; a refusal
    by the forecast under auto does not suggest auto, and names --dry-run."""
    tmp, ledger = env
    out = tmp / "rel"
    code, stdout, err = run(capsys, "release", "--epsilon", "5", "--dry-run", "--ledger", ledger, "--out", out)
    assert code == 0 and "forecast: expected IoU" in stdout and "dry run: nothing was charged" in stdout
    assert "a real run would be released" in stdout and not ledger.exists() and not out.exists()
    # a map the forecast refuses: the dry run says so (exit 0), as it says what the budget would do
    code, stdout, err = run(capsys, "release", "--epsilon", "2", "--dry-run", "--ledger", ledger, "--out", out)
    assert code == 0 and "a real run would be refused: the forecast says mostly noise" in stdout, stdout
    for _ in range(2):
        assert run(capsys, "release", "--ledger", ledger, "--out", tmp / "r", "--overwrite")[0] == 0
    before = digest(ledger)
    code, stdout, err = run(capsys, "release", "--dry-run", "--ledger", ledger, "--out", out)
    assert code == 0 and "a real run would be refused by the budget (exit status 3)" in stdout, stdout
    assert digest(ledger) == before
    code, stdout, err = run(capsys, "release", "--epsilon", "5", "--dry-run", "--json", "--ledger", ledger)
    import json

    doc = json.loads(stdout)
    assert code == 0 and doc["dry_run"] is True and doc["forecast"]["expected_iou"] > 0.5
    assert doc["a_real_run_would"].startswith("be refused by the budget")
    code, _, err = run(capsys, "release", "--epsilon", "2", "--ledger", ledger, "--out", out)
    assert_refused(code, err, "--dry-run prints the forecast of other settings", ledger, before, out)
    assert "--mechanism auto" not in err, err
    code, _, err = run(capsys, "release", "--mechanism", "laplace-grid", "--cells", "40", "--epsilon", "2",
                       "--ledger", ledger, "--out", out)
    assert_refused(code, err, "What would help: --mechanism auto (settings tuned", ledger, before, out)


def test_rows_that_repeat_exactly_get_a_note_and_distinct_rows_none(env, capsys):
    """Walk-through 15: 1000 rows resampled from 210 sales (up to 14 copies of one) were released as 1000 people
    with no word; the data holder is told how many rows repeat and the most copies of one (stderr only)."""
    tmp, ledger = env
    data = _sensors(tmp / "s.csv", n=300)
    rows = data.read_text().splitlines()
    (tmp / "dup.csv").write_text("\n".join(rows + rows[1:51] + [rows[1]] * 3) + "\n")
    common = ["release", "--x-col", "lon", "--y-col", "lat", "--response-col", "no2", "--box", "-0.25", "0.05",
              "51.40", "51.60", "--threshold", "40", "--clip", "20", *OK, "--ledger", ledger, "--dry-run"]
    code, _, err = run(capsys, *common, "--data", tmp / "dup.csv")
    assert code == 0 and ("privgp: note: 53 of the 353 records repeat another record exactly" in err
                          and "up to 5 copies of one" in err), err
    code, _, err = run(capsys, *common, "--data", data)
    assert code == 0 and "repeat another record" not in err, err


# -- the clipping range in response units (red team 17) ---------------------------------------------------------------
# ``--clip 1000`` with ``--transform log`` (a clip taken for a price range) passed every check, was charged, and then
# the picture failed (exp overflowed: a traceback, exit 1, nothing written), in each of two tries: the whole budget
# spent on nothing. The range g^-1(g(T) -+ B) now lies within +-MAX_RESPONSE (log: above MIN_LOG_RESPONSE).

BALTIMORE: list[str] = []   # the embedded data, as README's main command
COLUMNS = ["--x-col", "x", "--y-col", "y", "--response-col", "price", "--box", "850", "1000", "500", "590"]


def _scaled_baltimore(path, factor: float):
    text = baltimore.csv_path().read_text(encoding="utf-8").splitlines()
    head = text[0].split(",")
    price = head.index("price")
    rows = [",".join(repr(float(c) * factor) if i == price else c for i, c in enumerate(line.split(",")))
            for line in text[1:]]
    path.write_text("\n".join([text[0], *rows]) + "\n")
    return path


@pytest.mark.parametrize("args,needle", [
    (BALTIMORE + ["--clip", "1000"], "--clip must be small enough that the clipping range threshold * exp(-+clip)"),
    (BALTIMORE + ["--clip", "706", "--dry-run"], "--clip must be small enough"),   # a dry run says so too
    (["scaled:1", "--transform", "identity", "--threshold", "50", "--clip", "1e308"],
     "--clip must be small enough that the clipping range threshold -+ clip lies within [-1e+300, 1e+300]"),
    (["scaled:1e-290", "--transform", "log", "--threshold", "5e-290", "--clip", "1"],
     "--threshold must be one for which the clipping range"),
])
def test_a_clipping_range_beyond_the_response_units_is_refused_before_the_charge(env, seeded_ledger, capsys,
                                                                                 args, needle):
    tmp, ledger = env
    before = seeded_ledger(ledger)
    if args[0].startswith("scaled:"):
        args = ["--data", _scaled_baltimore(tmp / "d.csv", float(args[0][7:])), *COLUMNS, *args[1:]]
    out = tmp / "rel"
    code, _, err = run(capsys, "release", *args, *OK, "--ledger", ledger, "--out", out)
    assert_refused(code, err, needle, ledger, before, out)


def test_the_ends_of_the_range_release_and_draw(env, capsys):
    """Just inside the limits, both the 2-D log map and a 1-D identity map are released and drawn."""
    tmp, ledger = env
    code, _, err = run(capsys, "release", *BALTIMORE, "--clip", "640", *OK, "--ledger", ledger, "--out", tmp / "a")
    assert code == 0, err
    assert (tmp / "a" / "excursion.png").stat().st_size > 0
    data = _scaled_baltimore(tmp / "d.csv", 1.0)
    code, _, err = run(capsys, "release", "--data", data, "--x-col", "x", "--response-col", "price", "--box", "850",
                       "1000", "--transform", "identity", "--threshold", "50", "--clip", "1e300", *OK,
                       "--budget-epsilon", 100, "--ledger", ledger, "--out", tmp / "b")
    assert code == 0, err
    assert (tmp / "b" / "excursion.png").stat().st_size > 0


@pytest.mark.parametrize("threshold,clip,transform,name", [
    (50.0, 1000.0, "log", "clip"), (50.0, 706.0, "log", "clip"), (5e-288, 1.0, "log", "threshold"),
    (1e300, 1.0, "log", "threshold"), (50.0, 1e308, "identity", "clip"), (-2e300, 1.0, "identity", "threshold"),
])
def test_the_response_map_names_the_setting_at_fault(threshold, clip, transform, name):
    with pytest.raises(InvalidParameterError) as info:
        ResponseMap(threshold, clip, transform)
    assert info.value.name == name


@pytest.mark.parametrize("threshold,clip,transform", [
    (50.0, 640.0, "log"), (50.0, 1.0, "log"), (1e-279, 1.0, "log"), (50.0, 1e300 - 50.0, "identity"),
    (0.0, 1.0, "identity"),
])
def test_a_range_inside_the_limits_is_kept_and_finite(threshold, clip, transform):
    rm = ResponseMap(threshold, clip, transform)
    lo, hi = rm.to_response_units([-1.0, 1.0])
    assert math.isfinite(lo) and math.isfinite(hi) and hi - lo > 0
    assert (MIN_LOG_RESPONSE if transform == "log" else -MAX_RESPONSE) <= lo <= hi <= MAX_RESPONSE
    assert np.all(np.isfinite(rm.to_response_units(np.linspace(-1.0, 1.0, 9))))


def test_a_clip_wider_than_values_spread_on_the_log_scale_gets_a_note(env, capsys):
    """Walk-through 20: ``--clip 20`` with ``--transform log`` (meant in prices, read in log units: a factor 5e8 either
    side of the threshold) passed the forecast, which assumes values fill the clip range, and released noise. A note
    from the public settings says so, in a dry run and a real run; a clip of a factor 1000 or less gets none."""
    tmp, ledger = env
    note = "privgp: note: --clip 20 is in log units (--transform log)"
    code, _, err = run(capsys, "release", "--clip", "20", "--dry-run", "--ledger", ledger)
    assert code == 0 and err.count(note) == 1, err
    code, _, err = run(capsys, "release", "--clip", "20", *OK, "--ledger", ledger, "--out", tmp / "wide")
    assert code == 0 and err.count(note) == 1, err
    # in text, on stdout beside the forecast, before the charge (review 20c)
    code, out, err = run(capsys, "release", "--clip", "20", "--allow-noisy", "--seed", "1", "--ledger", ledger,
                         "--out", tmp / "wide_text")
    lines = out.splitlines()
    assert code == 0 and "log units" not in err and lines[0].startswith("forecast before the charge"), (out, err)
    assert any(line.startswith("note: --clip 20 is in log units") for line in lines[1:3]), out
    code, _, err = run(capsys, "release", "--clip", "6.9", "--dry-run", "--ledger", ledger)
    assert code == 0 and "log units" not in err, err
