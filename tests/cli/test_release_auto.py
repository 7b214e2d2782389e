"""`privgp release` with the default `--mechanism auto`, the noisy grids and eq. (37): the forecast before
the charge (refusal, exit 2, nothing charged; --allow-noisy), the certificate, verify, the picture's
unreliable areas and the report's words."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from privgp.cli.release_report import strength_words
from tests.cli.test_release import raw_cli as cli
from tests.cli.test_release import write_csv
from tests.cli_scratch import run_quiet


def test_release_of_the_embedded_data_is_refused_at_epsilon_2_nothing_charged(tmp_path):
    r = cli(tmp_path, "release", "--epsilon", "2", "--out", "out")
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("privgp: error")]
    assert len(lines) == 1 and "mostly noise" in lines[0] and "--allow-noisy" in lines[0] and "--epsilon" in lines[0]
    assert "expected IoU" in lines[0] and r.stdout == ""
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "ledger.sqlite").exists()     # the ledger was never opened


def test_readme_release_at_the_defaults_publishes_a_forecast_map_and_verifies(tmp_path):
    """README's main command, ``privgp release --out release_out``: epsilon 5, auto chooses the Laplace grid
    (its noise std 1.13 against the Gaussian grid's 1.96 at delta 1e-6) and the forecast passes."""
    r = cli(tmp_path, "release", "--out", "out", "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["mechanism"] == "laplace-grid" and s["chosen_by"] == "auto" and s["pure_epsilon"]
    assert s["forecast"]["expected_iou"] >= 0.5
    assert s["delta"] == 1e-6 and s["epsilon"] <= 5
    doc = json.loads((tmp_path / "out" / "certificate.json").read_text())
    assert doc["mechanism"] == "laplace-grid"
    assert doc["public_settings"]["hyperparameters"].startswith("auto")
    assert doc["forecast"]["expected_iou"] == s["forecast"]["expected_iou"]
    assert "non-private map" in doc["forecast"]["words"]
    v = cli(tmp_path, "verify", "out/certificate.json")
    assert v.returncode == 0, v.stdout + v.stderr
    html = (tmp_path / "out" / "report.html").read_text()
    assert "How good is this map?" in html and "privgp (--mechanism auto)" in html
    assert "This release is pure 5-DP: with \u03b5 = 5 the bound holds with no exception at all" in html
    assert "strong protection" not in html
    header = (tmp_path / "out" / "field.csv").read_text().splitlines()[0]
    assert "field_model_units" in header and "field_response_units" in header and "reliable" in header


def test_allow_noisy_releases_and_says_so(tmp_path):
    r = cli(tmp_path, "release", "--epsilon", "2", "--out", "out", "--allow-noisy", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "out" / "certificate.json").read_text())
    assert doc["forecast"]["expected_iou"] < 0.5 and doc["forecast"]["mostly_noise"] is True
    assert "Mostly noise" in (tmp_path / "out" / "report.html").read_text()
    s = json.loads(r.stdout)
    assert s["warning"].startswith("MOSTLY NOISE by its forecast") and "--allow-noisy" in s["warning"]
    # the terminal says so too, before the charge and in the summary
    t = cli(tmp_path, "release", "--epsilon", "2", "--out", "text", "--allow-noisy")
    assert t.returncode == 0, t.stderr
    lines = t.stdout.splitlines()
    assert lines[1].startswith("warning: MOSTLY NOISE by its forecast (expected IoU 0.")
    assert any(ln.startswith("  WARNING     MOSTLY NOISE") for ln in lines)


def test_a_map_released_as_mostly_noise_says_so_in_its_title(tmp_path):
    from types import SimpleNamespace

    from privgp.cli.release_figure import _title
    from privgp.cli.release_publish import picture_context
    from privgp.mechanisms.registered.laplace_grid import plan_laplace_grid
    from privgp.mechanisms.release import ResponseMap
    from privgp.models.domain import Box
    from privgp.tasks.forecast import forecast

    plan = plan_laplace_grid(50, Box((0.0, 0.0), (1.0, 1.0)), ResponseMap(0.0, 1.0), epsilon=0.1, cells=8)
    data = SimpleNamespace(source="a.csv", coordinates=("x", "y"), response_name="z")
    fc = forecast(plan, reps=2)
    assert fc.noisy
    ctx, plain = picture_context(plan, data, fc), picture_context(plan, data)

    class Field:
        def what(self):
            return "a map"

    assert _title(Field(), ctx).endswith("released anyway") and "NOISE" not in _title(Field(), plain)
    # never "0.50 < 0.5": an IoU just below the threshold is not rounded up to it
    import dataclasses

    assert "expected IoU 0.49 < 0.5" in dataclasses.replace(fc, iou=0.497).noisy_note()
    assert dataclasses.replace(fc, iou=0.503).iou_text() == "0.50" and dataclasses.replace(fc, iou=0.29).iou_text() == "0.29"
    # nor "overlap it by 50%" in the words of a forecast that calls it mostly noise
    assert "overlap it by 49% " in dataclasses.replace(fc, iou=0.499).words()
    assert "overlap it by 50% " in dataclasses.replace(fc, iou=0.501).words()
    assert "overlap it by 29% " in dataclasses.replace(fc, iou=0.291).words()


@pytest.mark.parametrize("mechanism, extra", [("grid", ["--cells", "4"])])
def test_grid_type_mechanisms_release_and_verify(tmp_path, mechanism, extra):
    import numpy as np

    rng = np.random.default_rng(0)
    n = 3000
    x, y = rng.uniform(0, 10, n), rng.uniform(0, 5, n)
    write_csv(tmp_path / "d.csv", {"x": x, "y": y, "response": np.sin(x / 3) + 0.1 * rng.normal(size=n)})
    r = cli(tmp_path, "release", "--mechanism", mechanism, *extra, "--data", "d.csv", "--x-col", "x", "--y-col", "y",
            "--box", "0", "10", "0", "5", "--threshold", "0", "--clip", "1", "--epsilon", "2", "--grid", "41",
            "--out", "out", "--allow-noisy")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "excursion.png").stat().st_size > 1000
    v = cli(tmp_path, "verify", "out/certificate.json")
    assert v.returncode == 0, v.stdout + v.stderr
    good = (tmp_path / "out" / "certificate.json").read_text()
    event_tampers = [("event rho / 4", lambda d: d["certificate"]["event"].__setitem__(   # discrete: zCDP
                          "rho", d["certificate"]["event"]["rho"] / 4))]
    tampers = [*event_tampers,
               ("settings noise_std", lambda d: d["public_settings"].__setitem__("noise_std", 9.0)),
               ("n", lambda d: d["dataset"].__setitem__("n", 40)),
               ("delta", lambda d: d["public_settings"].__setitem__("delta", 1e-3)),
               ("epsilon", lambda d: d["certificate"].__setitem__("epsilon", 0.5))]
    for what, change in tampers:
        doc = json.loads(good)
        change(doc)
        (tmp_path / "out" / "certificate.json").write_text(json.dumps(doc))
        assert run_quiet("verify", tmp_path / "out" / "certificate.json")[0] == 1, what   # in process: quicker


def test_options_of_other_mechanisms_are_refused(tmp_path):
    r = cli(tmp_path, "release", "--cells", "4", "--epsilon", "10", "--out", "out")
    assert r.returncode == 2 and "--cells" in r.stderr and not (tmp_path / "out").exists()
    r = cli(tmp_path, "release", "--sigma", "0.2", "--epsilon", "10", "--out", "out")
    assert r.returncode == 2 and "--sigma" in r.stderr


def test_words_of_strength_follow_the_stated_scale_and_n_delta():
    assert "strong" in strength_words(0.5, 1e-7, 1000)
    assert "moderate" in strength_words(3.0, 1e-7, 1000)
    assert "weak" in strength_words(8.0, 1e-7, 1000)
    text = strength_words(0.5, 0.0107, 62)       # the case: n delta = 0.66
    assert "strong" not in text.split("(")[0] and "No word of strength" in text
    for words in (strength_words(1.0, 1e-6, 211), strength_words(1.0, 1e-3, 211)):
        assert "privgp's scale" in words


def test_report_never_calls_a_large_n_delta_strong(tmp_path):
    r = cli(tmp_path, "release", "--mechanism", "grid", "--epsilon", "1", "--delta", "0.01", "--out", "out",
            "--allow-noisy")
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "out" / "report.html").read_text()
    assert "strong protection" not in html and "No word of strength applies" in html
    assert "This release is pure" not in html                            # the Gaussian grid needs its delta


def test_picture_marks_unreliable_areas_and_the_summary_says_pure_dp(tmp_path):
    r = cli(tmp_path, "release", "--epsilon", "10", "--out", "out")
    assert r.returncode == 0, r.stderr
    assert "pure 10-DP (it holds with delta = 0 too)" in r.stdout       # auto chose the Laplace grid
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Hatching over faded colours" in html and "The line is dashed where it runs through the hatching" in html
    assert Path(tmp_path / "out" / "excursion.png").exists()


def test_account_never_prints_epsilon_zero_as_perfect_privacy(tmp_path):
    r = cli(tmp_path, "account", "--n", "10", "--kernel", "exponential", "--lengthscale", "1", "--r", "1000",
            "--sigma", "1000", "--L", "1", "--delta", "0.5", "--sensitivity", "exp1d")
    assert r.returncode == 0, r.stderr
    head = r.stdout.splitlines()[0]
    assert head.startswith("(0, 0.5)-DP") and "NOT perfect privacy" in head


@pytest.mark.parametrize("extra", [["--mechanism", "grid", "--cells", "100000"],
                                   ["--mechanism", "grid", "--grid", "200000"]])
def test_a_grid_release_too_large_for_memory_is_refused_before_the_charge(tmp_path, extra):
    r = cli(tmp_path, "release", *extra, "--epsilon", "10", "--out", "out", "--allow-noisy")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "memory" in r.stderr and "--memory-limit" in r.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "ledger.sqlite").exists()
