"""Red team 25, ``privgp account``: 3-D settings with --mechanism, counts above 2^53 and -0 as epsilon."""
from __future__ import annotations

import json
import math

import pytest

from privgp.accounting.posterior_sampling import PosteriorSampleEvent
from privgp.cli.main import main
from privgp.errors import InvalidParameterError

MAX_COUNT = 2**53   # the largest count float64 holds with every integer below it
MECHANISMS = ["posterior-sample", "sparse-gp", "functional", "discretised-gaussian", "grid", "laplace-grid", "auto"]
POSTERIOR = ["--n", "10", "--r", "1", "--sigma", "1", "--kernel", "exponential", "--lengthscale", "1"]


def _one_line_error(capsys, flag):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"privgp: error: {flag} must be") and "Traceback" not in err
    return err


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_mechanisms_refuse_three_coordinates_as_release_does(mechanism, capsys):
    # KeyError 3 from DEFAULT_GRID / DEFAULT_SNAP / ('laplace', 3)
    assert main(["account", "--mechanism", mechanism, "--n", "10", "--epsilon", "1", "--box", "0", "1", "0", "1",
                 "0", "1"]) == 2
    assert "1 or 2 coordinates" in _one_line_error(capsys, "--box")
    assert main(["account", "--mechanism", mechanism, "--n", "10", "--epsilon", "1", "--dim", "3", "--grid", "5"]) == 2
    assert "1 or 2" in _one_line_error(capsys, "--dim")


@pytest.mark.parametrize("flag", ["--n", "--L"])
def test_counts_above_two_to_the_53_are_refused(flag, capsys):
    # --n / --L 9007199254740993 were recorded (and L composed) as 9007199254740992: L rounded down
    args = ["account", *POSTERIOR, "--delta", "0.01", "--json"]   # the flag given last wins over --n 10
    assert main(args + [flag, str(MAX_COUNT + 1)]) == 2
    assert str(MAX_COUNT + 1) in _one_line_error(capsys, flag)
    assert main(args + [flag, str(MAX_COUNT)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["event"][flag[2:]] == MAX_COUNT


def test_event_keeps_counts_exact_or_refuses():
    with pytest.raises(InvalidParameterError, match="n must be at most 2"):
        PosteriorSampleEvent(n=2**53 + 1, r=1.0, sigma=1.0)
    with pytest.raises(InvalidParameterError, match="L must be at most 2"):
        PosteriorSampleEvent(n=10, r=1.0, sigma=1.0, L=2**53 + 1)
    with pytest.raises(InvalidParameterError, match="L must be at most 2"):
        PosteriorSampleEvent.batch([10, 20], 1.0, 1.0, L=[1, 2**53 + 1])
    assert PosteriorSampleEvent(n=2**53, r=1.0, sigma=1.0).n == 2**53


def test_minus_zero_epsilon_is_zero(capsys):
    # printed "(-0, ...)-DP" and recorded "epsilon": -0.0
    assert main(["account", *POSTERIOR, "--epsilon", "-0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["epsilon"] == 0 and math.copysign(1.0, doc["epsilon"]) == 1.0
    assert main(["account", *POSTERIOR, "--epsilon", "-0"]) == 0
    assert capsys.readouterr().out.startswith("(0, ")
