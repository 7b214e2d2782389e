"""Red team 26: the audits' scales, ratios and fits at extreme settings."""
from __future__ import annotations

import json

import numpy as np
import pytest

from privgp.audit.membership.densities import fit_latent_tanh_mixture
from privgp.audit.membership.game import MembershipGame
from privgp.cli.main import main
from privgp.errors import InvalidParameterError, NumericalError


@pytest.mark.parametrize("field, value", [("sigma", 1e300), ("r", 1e300), ("r", 1e-300), ("lengthscale", 1e200)])
def test_a_game_with_a_scale_that_squares_to_inf_is_refused_by_name(field, value):
    # sigma = 1e300 ran into "cov1 must be free of NaN and inf" (tightness) or an overflow warning and a failed
    # mixture fit (lira)
    with pytest.raises(InvalidParameterError, match=rf"^{field} must be between 1e-150 and 1e\+150"):
        MembershipGame(**{"r": 1.0, "sigma": 1.0, field: value})
    assert MembershipGame(r=1.0, sigma=float("inf")).covariance_only   # the covariance-only game stays


def test_the_paper_density_fit_that_cannot_start_says_so_and_names_the_way_out():
    x = np.random.default_rng(0).normal(0.0, 1e16, 2000)   # LiRA's statistics at sigma = 1e16
    with pytest.raises(NumericalError, match=r"no finite likelihood at any start .* --attack exact"):
        fit_latent_tanh_mixture(x, np.random.default_rng(1))


def test_lood_ratios_of_inf_over_an_inf_bound_are_not_nan(capsys):
    # at alpha = 1e10 both the LOOD Renyi divergence and the certified RDP are inf: the ratio printed "nan" and the
    # JSON held "nan"; it is undefined: n/a, null
    assert main(["audit", "lood", "--alpha", "1e10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["certified_rdp_at_alpha"] == "inf" and out["renyi_max_over_certified"] is None
    assert all(r["renyi_max_over_certified"] is None for r in out["most_exposed"])
    assert main(["audit", "lood", "--alpha", "1e10"]) == 0
    text = capsys.readouterr().out
    assert "nan" not in text and " n/a " in text
