"""Red team 25, the membership game and its audits: -0 as M_xi, and a sigma whose square overflows in the exact
attack, are handled (no traceback)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from privgp.audit.membership.attacks import ExactAttack
from privgp.audit.membership.game import MembershipGame, sample_datasets
from privgp.cli.main import main
from privgp.errors import InvalidParameterError


def test_minus_zero_noise_level_is_zero():
    # -0.0 passed the nonnegative check and rng.uniform(-(-0.0), -0.0) refused: "high - low < 0"
    game = MembershipGame(M_xi=-0.0, x0=-0.0)
    assert game.M_xi == 0 and math.copysign(1.0, game.M_xi) == 1.0
    assert math.copysign(1.0, game.x0) == 1.0 and game.describe()["M_xi"] == 0.0
    X, y = sample_datasets(game, True, 3, np.random.default_rng(0))
    assert X.shape == y.shape == (3, game.n)


@pytest.mark.parametrize("command", [
    ["audit", "lira", "--r", "1", "--sigma", "1", "--n-shadow", "100", "--n-eval", "20"],
    ["audit", "tightness", "--r", "1", "--sigma", "1", "--restarts", "1", "--test-points", "0", "--lood-datasets", "1"],
])
def test_minus_zero_noise_level_on_the_command_line(command, capsys):
    assert main(command + ["--M-xi", "-0", "--json"]) == 0
    assert '"M_xi": -0.0' not in capsys.readouterr().out


def test_exact_attack_refuses_a_sigma_whose_square_overflows(capsys):
    # privgp audit lira --attack exact --r 1 --sigma 1e300: OverflowError from game.sigma**2
    # (since red team 26 the game itself refuses a sigma outside validation.SCALE_RANGE)
    with pytest.raises(InvalidParameterError, match=r"sigma must be between 1e-150 and 1e\+150"):
        MembershipGame(r=1.0, sigma=1e300)
    assert main(["audit", "lira", "--attack", "exact", "--r", "1", "--sigma", "1e300", "--n-shadow", "100",
                 "--n-eval", "20"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("privgp: error: --sigma must be") and "1e+300" in err
    # a sigma whose square is in range still works
    coef = ExactAttack.coefficients(MembershipGame(r=1.0, sigma=1e150), np.array([0.1]), np.array([0.5]))
    assert np.all(np.isfinite(coef))
