"""``privgp experiment seed004-fig1 --quick`` and ``privgp audit sampler``: outputs and user errors."""
from __future__ import annotations

import json

import pandas as pd

from privgp.cli.main import main


def test_seed004_fig1_quick(tmp_path):
    out = tmp_path / "s4"
    assert main(["experiment", "seed004-fig1", "--quick", "--out", str(out), "--workers", "1", "--set", "epochs=24"]) == 0
    run = json.loads((out / "run.json").read_text())
    s = run["summary"]
    df = pd.read_csv(out / "figure1.csv")
    assert len(df) == 26 and (out / "fig1_indicator.png").exists() and (out / "fig1_epsilon.png").exists()
    # the leak rises and falls back towards the posterior's level; the iterate's exact epsilon dwarfs the pair's
    assert 10 <= s["K_peak"] <= 20 and s["F_peak"] > 1e5 * s["F_inf"]
    assert s["D2_ratio_peak_to_posterior"] > 1e5
    assert s["eps_exact_at_peak"] > s["posterior"]["eps_exact_pair"]
    fin = df[df["K"] < 1e9]
    assert (fin["eps_test_lower"] <= fin[["eps_exact_D1D2", "eps_exact_D2D1"]].max(axis=1) + 1e-9).all()
    assert (fin["P_tail_D2"] <= fin["chernoff_bound"] + 1e-12).all()
    inv = pd.read_csv(out / "invariants.csv")
    c2 = inv[inv["table"].str.startswith("c^2")]
    assert c2["F_peak/c^2"].nunique() == 1 or (c2["F_peak/c^2"].max() / c2["F_peak/c^2"].min() - 1) < 1e-9
    steps = inv[inv["table"] == "step size"]
    assert list(steps["K_peak"]) == [15, 30] and abs(steps["F_peak"].iloc[0] / steps["F_peak"].iloc[1] - 1) < 1e-6


def test_audit_sampler_cli_json_and_png(tmp_path, capsys):
    png = tmp_path / "sto.png"
    code = main(["audit", "sampler", "--n", "4", "--steps", "0,5,inf", "--restarts", "1", "--release-points", "3",
                 "--png", str(png), "--json"])
    assert code == 0 and png.exists()
    out = json.loads(capsys.readouterr().out)
    assert out["sampler"] == "sto" and len(out["rows"]) == 3
    assert out["rows"][-1]["epsilon_iterate_certified"] == out["epsilon_posterior_certified"]
    assert "verdict" in out


def test_audit_sampler_user_errors(tmp_path, capsys):
    assert main(["audit", "sampler", "--steps", "1,x", "--png", str(tmp_path / "a.png")]) == 2
    err = capsys.readouterr().err
    assert "--steps" in err and "Traceback" not in err
    assert main(["audit", "sampler", "--sampler", "ula", "--step", "100", "--n", "3", "--steps", "1",
                 "--png", str(tmp_path / "b.png")]) == 2
    assert "step" in capsys.readouterr().err
    assert not (tmp_path / "b.png").exists()


def test_ula_states_no_certified_iterate_bound_as_inf_not_nan(tmp_path, capsys):
    # walk-through 16: the ULA rows' certified iterate epsilon was NaN ("nan" in the JSON); no bound is proven, so
    # the only upper bound is the vacuous one, +inf, and the table says "none"
    args = ["audit", "sampler", "--sampler", "ula", "--n", "3", "--steps", "0,2", "--restarts", "1",
            "--png", str(tmp_path / "u.png")]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [row["epsilon_iterate_certified"] for row in out["rows"]] == ["inf", "inf"]
    assert main(args) == 0
    rows = [ln.split() for ln in capsys.readouterr().out.splitlines() if ln.split()[:1] in (["0"], ["2"])]
    assert [r[1] for r in rows] == ["none", "none"]
