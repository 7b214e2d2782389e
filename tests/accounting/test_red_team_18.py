"""Red team 18d: the accountant's numbers at extreme settings (/work/notes/redteam18d.md).

* F3: the exact Gaussian-DP path took delta(epsilon) as 0 where the two terms of Balle & Wang's profile cancel
  below the evaluation's resolution (mu below about 1e-12): `privgp account --mechanism discretised-gaussian
  --epsilon 1e-13 --delta 1e-300` certified (3.6e-14, 1e-300) where the exact delta is 3.6e-31.
The references are the profile in mpmath at 80 digits, computed here.
"""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.accounting.gaussian import _log_gdp_delta_parts, gaussian_noise_std, gdp_delta_upper, gdp_epsilon, gdp_mu


def exact_log_delta(mu: float, eps: float) -> mp.mpf:
    """log delta(eps) of mu-GDP (Balle & Wang 2018, Thm 8) in mpmath at 80 digits."""
    with mp.workdps(80):
        m, e = mp.mpf(mu), mp.mpf(eps)
        d = mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2)
        return mp.log(d) if d > 0 else mp.mpf("-inf")


log_mu = st.floats(-17.0, 1.0)
ratio = st.floats(0.0, 40.0)    # epsilon / mu: delta from about 1/2 down to 1e-300


@settings(max_examples=150)
@given(log_mu, ratio)
def test_the_bound_on_log_delta_is_above_the_exact_value_for_tiny_mu(lm, k):
    mu = 10.0 ** lm
    eps = k * mu
    out, err = _log_gdp_delta_parts(np.array([mu]), np.array([eps]))
    assert float(out[0] + err[0]) >= exact_log_delta(mu, eps)
    assert float(gdp_delta_upper(mu, eps)) >= mp.exp(exact_log_delta(mu, eps))


@settings(max_examples=60)
@given(log_mu, st.floats(-300.0, -1.0))
def test_gdp_epsilon_is_feasible_for_tiny_mu(lm, log10_delta):
    mu, delta = 10.0 ** lm, 10.0 ** log10_delta
    eps = float(gdp_epsilon(mu, delta))
    assert exact_log_delta(mu, eps) <= mp.log(delta)


@settings(max_examples=60)
@given(st.floats(-14.0, 0.0), st.floats(-300.0, -1.0))
def test_gdp_mu_is_feasible_for_a_tiny_epsilon(log10_eps, log10_delta):
    eps, delta = 10.0 ** log10_eps, 10.0 ** log10_delta
    mu = float(gdp_mu(eps, delta))
    assert mu > 0.0 and exact_log_delta(mu, eps) <= mp.log(delta)


def test_gdp_mu_finds_a_positive_mu_below_its_bisections_reach(capsys):
    """Red team 18g: after the fix above, gdp_mu returned exactly 0 where the largest feasible mu is below 2^-200
    (its bisection from [0, 1]): the noise was inf, `privgp account --mechanism grid --epsilon 1e-100 --delta
    1e-300` ended in a traceback and the others in three lines naming noise_std."""
    from privgp.cli.main import main

    for eps, delta in ((0.0, 1e-100), (0.0, 1e-300), (1e-100, 1e-300)):
        mu = float(gdp_mu(eps, delta))
        assert mu > 0.0
        with mp.workdps(60):
            assert mp.erf(mp.mpf(mu) / (2 * mp.sqrt(2))) <= mp.mpf(delta) if eps == 0 else True
        assert eps == 0 or exact_log_delta(mu, eps) <= mp.log(mp.mpf(delta))
    assert float(gdp_mu(1.0, 1e-6)) == 0.23670438066342392   # the bisection's answer where it reaches: unchanged
    for mech in ("grid", "discretised-gaussian", "sparse-gp", "functional"):
        code = main(["account", "--mechanism", mech, "--n", "211", "--epsilon", "1e-100", "--delta", "1e-300"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and err[0].startswith("privgp: error:"), (mech, err)


def test_the_red_teams_settings():
    # F3's account: sensitivity sqrt(30) (the discretised-gaussian plan at n = 1000), epsilon 1e-13, delta 1e-300
    s = float(gaussian_noise_std(math.sqrt(30.0), 1e-13, 1e-300))
    assert exact_log_delta(math.sqrt(30.0) / s, 1e-13) <= mp.log(mp.mpf("1e-300"))
    # mu = 1e-16 at delta = 1e-17: epsilon 0 was returned, where delta(0) = erf(mu / (2 sqrt 2)) = 4e-17
    eps = float(gdp_epsilon(1e-16, 1e-17))
    assert eps > 0 and exact_log_delta(1e-16, eps) <= mp.log(mp.mpf("1e-17"))
    # noise for (0, 1e-20): delta(0) = erf(mu / (2 sqrt 2)) at most 1e-20
    mu = 1.0 / float(gaussian_noise_std(1.0, 0.0, 1e-20))
    with mp.workdps(60):
        assert mp.erf(mp.mpf(mu) / (2 * mp.sqrt(2))) <= mp.mpf("1e-20")


@settings(max_examples=100)
@given(st.floats(3.0, 14.0), st.floats(1e-12, 1.0), st.floats(0.0, 1.0))
def test_the_improved_conversion_to_delta_keeps_its_digits_at_large_orders(log10_alpha, eps, share):
    """F1: (alpha - 1) log((alpha - 1) / alpha) erred by alpha ulp (at alpha ~ 1e13 the printed delta of `privgp
    account --epsilon 1e-12` was 1e-3 below the bound it certifies); log delta now agrees with mpmath to 1e-13."""
    from privgp.accounting.conversion import log_delta_from_rdp

    alpha = 10.0 ** log10_alpha
    rdp = eps * share            # below epsilon: a delta below 1
    got = float(log_delta_from_rdp(rdp, alpha, eps))
    with mp.workdps(60):
        a, r, e = mp.mpf(alpha), mp.mpf(rdp), mp.mpf(eps)
        exact = min((a - 1) * (r - e) + (a - 1) * mp.log(1 - 1 / a) - mp.log(a), 0)
    assert abs(got - float(exact)) <= 1e-13 * max(1.0, abs(float(exact)))


def test_the_exported_helpers_refuse_what_is_no_guarantee():
    """F4: compose_mu with counts (1, -1) gave mu 0 (perfect privacy), NaN counts or RDP values gave NaN, an infinite
    order passed `alpha > 1`; zcdp_rho_for(1e300) named rho, a value the caller never gave."""
    import pytest

    import privgp.accounting as A
    from privgp.errors import InvalidParameterError

    for counts in ([1, -1], [1, float("nan")], [1, 0.5], [1, float("inf")]):
        with pytest.raises(InvalidParameterError, match="^counts"):
            A.compose_mu([1.0, 1.0], counts)
    assert A.compose_mu([1.0, 2.0], [2, 0]) == pytest.approx(math.sqrt(2.0))
    for rdp in (float("nan"), -1.0):
        with pytest.raises(InvalidParameterError, match="^rdp"):
            A.epsilon_from_rdp(rdp, 2.0, 1e-6)
        with pytest.raises(InvalidParameterError, match="^rdp"):
            A.log_delta_from_rdp(rdp, 2.0, 1.0)
    with pytest.raises(InvalidParameterError, match="^alpha"):
        A.epsilon_from_rdp(0.1, float("inf"), 1e-6)
    with pytest.raises(InvalidParameterError, match="^alpha"):
        A.log_delta_from_rdp(0.1, float("inf"), 1.0)
    assert float(A.epsilon_from_rdp(float("inf"), 2.0, 1e-6)) == math.inf   # an infinite bound stays one
    rho = A.zcdp_rho_for(1e300, 1e-6)
    assert math.isfinite(rho) and A.zcdp_epsilon(rho, 1e-6) <= 1e300
