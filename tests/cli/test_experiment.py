"""The `privgp experiment` command: option parsing and clear errors for unknown options."""
import pytest

from privgp.cli.experiment import parse_options
from privgp.cli.main import main
from privgp.errors import InvalidParameterError


def test_parse_options_types():
    opts = parse_options(["n_pairs=200", "eps0=2.5", "M_xi_values=0.1,0.5", "name=abc"])
    assert opts == {"n_pairs": 200, "eps0": 2.5, "M_xi_values": (0.1, 0.5), "name": "abc"}
    assert isinstance(opts["n_pairs"], int)


@pytest.mark.parametrize("item", ["n_pairs", "=3", "two words=1"])
def test_parse_options_rejects_malformed(item):
    with pytest.raises(InvalidParameterError, match="KEY=VALUE"):
        parse_options([item])


def test_unknown_option_is_a_user_error(tmp_path, capsys):
    code = main(["experiment", "fig1", "--quick", "--out", str(tmp_path / "o"), "--set", "bogus=1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "option 'bogus'" in err and "fig1" in err and "Traceback" not in err


def test_unknown_experiment_is_a_user_error(tmp_path, capsys):
    code = main(["experiment", "nope", "--out", str(tmp_path / "o")])
    assert code == 2 and "experiment must be one of" in capsys.readouterr().err


def test_option_reaches_the_experiment(tmp_path):
    code = main(["experiment", "table1", "--quick", "--out", str(tmp_path / "t"), "--set", "n_pairs=12",
                 "--set", "M_xi_values=0.5"])
    assert code == 0
    import json

    run = json.loads((tmp_path / "t" / "run.json").read_text())
    assert run["config"]["n_pairs"] == 12 and run["config"]["columns"]["M_xi"] == [0.5]


def test_flags_read_true_and_false():
    assert parse_options(["shared_target=false", "dpsvgp=TRUE"]) == {"shared_target": False, "dpsvgp": True}


@pytest.mark.parametrize("args,needle", [
    # a researcher's --set that ran another configuration (exit 0) or crashed with a traceback (2026-11-26)
    (["table2", "--set", "shared_target=maybe"], "--set shared_target must be true or false"),
    (["table4", "--set", "n_pairs=1e3"], "--set n_pairs must be an integer"),
    (["table2", "--set", "n_mc=abc"], "--set n_mc must be an integer"),
    (["seed003-reconstruction", "--set", "runs=@@"], "--set runs must be a value experiment 'seed003-reconstruction' can use"),
    (["seed002-nll", "--set", "eps_values=2,4"], "--set eps_values must be left out with --quick"),
    (["seed004-thm2", "--set", "epochs=5"], "--set epochs must be left out with --quick"),
    (["seed004-fig1", "--set", "divergences=maybe"], "--set divergences must be true or false"),
    (["seed004-fig1", "--set", "epochs=2.5"], "--set epochs must be an integer"),
    # red-team round 10
    (["mechanisms", "--set", "epsilons=0.5,1,2"], "--set epsilons must be left out with --quick"),
    (["thompson", "--set", "rounds=0"], "--set rounds must be >= 1"),
    (["utility", "--set", "reps=0"], "--set reps must be >= 1 (a count)"),   # a count: refused before anything runs
    # an unknown key of the seed-000 studies listed no valid keys (they pass **options on to config_1d/config_2d)
    (["table1", "--set", "bogus=1"], "its options: L, M_xi_values, clip"),
    (["table3", "--set", "n=5"], "its options: L, M_xi, clip"),        # table3's columns are its n values
    (["table4", "--set", "bogus=1"], "lattice, n, n_mc"),
    (["fig8", "--set", "bogus=1"], "its options: L, clip"),
    # a researcher's walk-through (round 13): garbage results, a KeyError, an empty argmax
    (["seed003-toy", "--set", "n_grid=1"], "--set n_grid must be an integer >= 11"),
    (["seed001-fig3", "--set", "repeats=0"], "--set repeats must be >= 1 (a count)"),
    (["seed004-fig1", "--set", "epochs=-5"], "--set epochs must be >= 1 (a count)"),
    (["seed001-fig3", "--set", "epsilons=-1"], "--set epsilons must be finite and > 0"),
])
def test_a_bad_set_value_is_one_line_and_runs_nothing(tmp_path, capsys, args, needle):
    out = tmp_path / "o"
    code = main(["experiment", *args, "--quick", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "Traceback" not in err and err.count("\n") == 1, err
    assert not out.exists()
