"""Walk-through 21 #3: a map forecast to be mostly noise on average, but not on one kind of synthetic field, is
refused with each kind's expected IoU, so that the data holder sees which one the average hides."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from privgp.cli.main import main

SMOOTH = ["--x-col", "easting_km", "--y-col", "northing_km", "--response-col", "pm", "--box", "0", "10", "0", "5",
          "--threshold", "43", "--clip", "10", "--mechanism", "sparse-gp", "--epsilon", "5"]


def _smooth_csv(path, n=3000):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 10, n), rng.uniform(0, 5, n)
    pm = 40 + 8 * np.exp(-((x - 4) ** 2 + (y - 2.5) ** 2) / 4) + rng.normal(0, 2, n)
    pd.DataFrame({"easting_km": x, "northing_km": y, "pm": pm}).to_csv(path, index=False)


def test_a_refusal_names_each_kind_of_field_where_one_would_pass(tmp_path, capsys):
    _smooth_csv(tmp_path / "d.csv")
    args = ["release", "--data", str(tmp_path / "d.csv"), *SMOOTH, "--ledger", str(tmp_path / "l.sqlite")]
    assert main([*args, "--dry-run", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    per = {k: v["iou"] for k, v in d["forecast"]["per_family"].items()}
    assert d["forecast"]["mostly_noise"] and max(per.values()) >= 0.5 > min(per.values())
    passing = [k for k, x in per.items() if x >= 0.5]
    assert "by kind of synthetic field: bump " in d["a_real_run_would"]
    assert f"says your field is like the {' and '.join(passing)} field" in d["a_real_run_would"]
    assert "public knowledge, not these records" in d["a_real_run_would"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "by kind of synthetic field" in err and "rough 0.0" in err
    assert "What would help: --mechanism auto" in err   # walk-through 22: auto first
    assert not (tmp_path / "out").exists() and not (tmp_path / "l.sqlite").exists()


def test_no_spread_is_named_where_every_kind_is_mostly_noise(tmp_path, capsys):
    args = ["release", "--epsilon", "1", "--ledger", str(tmp_path / "l.sqlite"), "--dry-run", "--json"]
    assert main(args) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["forecast"]["mostly_noise"] and max(v["iou"] for v in d["forecast"]["per_family"].values()) < 0.5
    assert "by kind" not in d["a_real_run_would"]


def test_a_map_released_anyway_says_which_label_follows_the_average(tmp_path, capsys):
    """Red team 22b F6: under --allow-noisy nothing is refused; the warning says the MOSTLY NOISE label follows the
    average."""
    _smooth_csv(tmp_path / "d.csv")
    assert main(["release", "--data", str(tmp_path / "d.csv"), *SMOOTH, "--allow-noisy", "--seed", "1", "--ledger",
                 str(tmp_path / "l.sqlite"), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    (warning,) = [line for line in out.splitlines() if line.startswith("warning: MOSTLY NOISE")]
    assert "by kind of synthetic field" in warning and "the MOSTLY NOISE label follows their average" in warning
    assert "refusal" not in warning


def test_python_users_get_the_same_breakdown():
    """Walk-through 22 #10: README's Python gate (`assert not fc.noisy, fc.words() + fc.kinds_note()`) shows what
    the command's refusal shows."""
    import privgp
    from privgp.tasks.forecast import forecast

    plan = privgp.plan("sparse-gp", 3000, privgp.Box((0.0, 0.0), (10.0, 5.0)),
                       privgp.ResponseMap(threshold=43.0, clip=10.0, transform="identity"), epsilon=5.0)
    fc = forecast(plan)
    per = {k: v["iou"] for k, v in fc.per_family.items()}
    assert fc.noisy and max(per.values()) >= 0.5
    note = fc.kinds_note()
    assert note.startswith("; by kind of synthetic field: bump ") and "the refusal follows their average" in note
    assert "MOSTLY NOISE label" in fc.kinds_note(refused=False)
