"""Options do what their --help says (an audit of every command's help against its code, 2026-11-26): bad
values exit 2 with one line naming the flag; options that cannot apply are refused, never ignored."""
from __future__ import annotations

import math

import pytest

from privgp.cli.main import main


def _one_line_error(capsys, argv) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:  # argparse's own errors exit through SystemExit(2)
        code = main(argv)
        raise SystemExit(code)
    assert exc.value.code == 2, argv
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


SPARSE = ["account", "--mechanism", "sparse-gp", "--n", "100", "--epsilon", "1"]


@pytest.mark.parametrize("argv,flag,requirement", [
    (["experiment", "fig1", "--quick", "--seed", "-1"], "--seed", "integer >= 0"),
    (["audit", "sampler", "--seed", "-1"], "--seed", "integer >= 0"),
    (["audit", "lira", "--seed", "-1"], "--seed", "integer >= 0"),
    (["optimize", "--function", "forrester", "--rounds", "3", "--objective-seed", "-1", "--out", "x"], "--objective-seed",
     "integer >= 0"),
    ([*SPARSE, "--noise-ratio", "abc"], "--noise-ratio", "positive number or 'min-sensitivity'"),
    ([*SPARSE, "--noise-ratio", "-1"], "--noise-ratio", "positive number or 'min-sensitivity'"),
])
def test_bad_values_name_the_flag_and_the_requirement(argv, flag, requirement, capsys):
    err = _one_line_error(capsys, argv)
    assert flag in err and requirement in err, err


def test_cluster_options_need_data_and_are_not_offered_where_records_are_read_here(tmp_path, capsys):
    err = _one_line_error(capsys, ["release", "--dask", "local", "--out", str(tmp_path / "o")])
    assert "--dask" in err and "--data" in err, err
    assert not (tmp_path / "o").exists()
    err = _one_line_error(capsys, ["audit", "lood", "--dask", "local"])
    assert "unrecognized arguments" in err, err


def test_the_calculator_accepts_the_releases_auto_lemma(capsys):
    """--sensitivity auto (what --mechanism posterior-sample defaults to) in the calculator: B.7 for the 1-D
    exponential kernel, B.1 otherwise, as a release chooses."""
    import json

    def lemma(*extra):
        capsys.readouterr()
        assert main(["account", "--n", "10", "--r", "1", "--sigma", "1", "--delta", "1e-5", "--json", *extra]) == 0
        return json.loads(capsys.readouterr().out)["event"]["sensitivity"]

    assert lemma("--kernel", "exponential", "--lengthscale", "1", "--sensitivity", "auto") == "exp1d"
    assert lemma("--kernel", "matern32", "--lengthscale", "1", "--sensitivity", "auto") == "generic"
    assert lemma("--kernel", "exponential", "--lengthscale", "1", "--dim", "2", "--sensitivity", "auto") == "generic"


@pytest.mark.parametrize("argv,flag", [
    (["audit", "lira", "--r", "0.1", "--sigma", "0.5", "--n-shadow", "1"], "--n-shadow"),
    (["account", "--n", "10", "--kernel", "exponential", "--lengthscale", "1", "--r", "1", "--sigma", "1",
      "--delta", "1e-5", "--M-Y", "-1"], "--M-Y"),
    (["audit", "lira", "--r", "0.1", "--sigma", "0.5", "--fpr", "0.1", "2"], "--fpr"),      # fpr_targets
    (["audit", "lira", "--r", "0.1", "--sigma", "0.5", "--ell", "-1"], "--ell"),            # lengthscale
    (["audit", "lood", "--epsilon", "-1"], "--epsilon"),                                    # target_epsilon
])
def test_a_library_parameter_set_by_its_flag_is_named_by_the_flag(argv, flag, capsys):
    """The library names its parameter (n_shadow, M_Y, fpr_targets); the command line names the flag the user
    typed."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"privgp: error: {flag} must be"), err


def test_verify_files_must_be_a_folder(tmp_path, capsys):
    cert = tmp_path / "certificate.json"
    cert.write_text("{}")
    for where in (tmp_path / "nowhere", cert):
        assert main(["verify", str(cert), "--files", str(where)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("privgp: error: --files must be an existing folder") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("box", [["0", "1e200", "0", "1e200"], ["0", "1", "0", "1e-200"]])
def test_a_box_beyond_double_precision_is_refused_before_the_charge(tmp_path, capsys, box):
    """A box whose squared distances overflow or underflow gave a NaN forecast, a charge and then a traceback."""
    led = tmp_path / "l.sqlite"
    assert main(["release", "--ledger", str(led), "--out", str(tmp_path / "o"), "--box", *box]) == 2
    err = capsys.readouterr().err
    assert err.startswith("privgp: error: --box must be") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists() and not led.exists()


@pytest.mark.parametrize("mech", ["grid", "laplace-grid"])
def test_a_bandwidth_that_would_release_a_map_of_zeros_is_refused(tmp_path, capsys, mech):
    assert main(["release", "--ledger", str(tmp_path / "l.sqlite"), "--out", str(tmp_path / "o"), "--mechanism", mech,
                 "--bandwidth", "0.1", "--allow-noisy"]) == 2
    assert capsys.readouterr().err.startswith("privgp: error: --bandwidth must be >= 0.25")
    assert not (tmp_path / "o").exists()


def test_a_forecast_that_is_not_finite_refuses_before_the_charge(tmp_path, capsys, monkeypatch):
    """The forecast's IoU, agreement or RMSE not finite (public settings beyond double precision): exit 2 before
    the charge, not a charge followed by a traceback while writing the report."""
    import dataclasses

    import privgp.cli.release as cli_release

    real = cli_release.forecast
    monkeypatch.setattr(cli_release, "forecast", lambda *a, **k: dataclasses.replace(real(*a, **k), agreement=math.nan))
    led = tmp_path / "l.sqlite"
    assert main(["release", "--ledger", str(led), "--out", str(tmp_path / "o"), "--json"]) == 2
    err = capsys.readouterr().err
    assert "forecast of these public settings is not finite" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists() and not led.exists()


def test_negative_numbers_in_scientific_notation_are_values(tmp_path, capsys):
    """argparse took -1e3 for an option ("--box: expected at least one argument"); --box had no workaround."""
    data = tmp_path / "d.csv"
    data.write_text("x,y,v\n" + "\n".join(f"{-900 + 7 * i},{-90 + (i % 9)},{i % 5}" for i in range(60)) + "\n")
    assert main(["release", "--ledger", str(tmp_path / "l.sqlite"), "--out", str(tmp_path / "o"), "--data", str(data),
                 "--x-col", "x", "--y-col", "y", "--response", "v", "--box", "-1e3", "0", "-1e2", "0",
                 "--threshold", "-1e-3", "--clip", "5", "--allow-noisy", "--json"]) == 0
    assert (tmp_path / "o" / "certificate.json").exists()


@pytest.mark.parametrize("argv,flag", [
    (["release", "--query", "SELECT 1"], "--query"),                       # DuckDB options without --data
    (["release", "--table", "t"], "--table"),
    (["account", "--n", "10", "--r", "1", "--sigma", "1", "--delta", "1e-5", "--kernel", "exponential",
      "--lengthscale", "1", "--rkhs-norm", "1"], "--rkhs-norm"),              # read by --sensitivity rkhs only
])
def test_options_that_cannot_apply_are_refused_not_ignored(tmp_path, capsys, argv, flag):
    extra = ["--ledger", str(tmp_path / "l.sqlite"), "--out", str(tmp_path / "o")] if argv[0] == "release" else []
    assert main([*argv, *extra]) == 2
    assert capsys.readouterr().err.startswith(f"privgp: error: {flag} must be")
    assert not (tmp_path / "o").exists() and not (tmp_path / "l.sqlite").exists()


def test_map_needs_2d_data(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("x,v\n" + "\n".join(f"{i / 50},{i % 3}" for i in range(50)) + "\n")
    assert main(["release", "--ledger", str(tmp_path / "l.sqlite"), "--out", str(tmp_path / "o"), "--data", str(data),
                 "--response", "v", "--box", "0", "1", "--threshold", "1", "--clip", "3", "--map"]) == 2
    assert capsys.readouterr().err.startswith("privgp: error: --map must be used with 2-D data")
    assert not (tmp_path / "o").exists()
