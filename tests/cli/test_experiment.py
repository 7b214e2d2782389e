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
