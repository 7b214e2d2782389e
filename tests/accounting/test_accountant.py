"""Laws of the accountant (property tests) and its refusal of bad input.

Monotonicity (epsilon decreases in r, sigma, eta and increases in L), additive composition, the
improved conversion never worse than Mironov's, the optimiser against a dense grid, calibration on
the feasible side (and minimal), and clear errors (never a silent 0) for inputs outside the proofs.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from privgp.accounting import (
    CalibrationResult,
    ComposedEvent,
    TabulatedRdpEvent,
    epsilon_from_rdp,
    log_delta_from_rdp,
    psi_alpha,
    rdp_mean_term,
    rdp_posterior_sample,
)
from privgp.accounting import epsilon as account_epsilon
from privgp.errors import AssumptionError, InfeasibleTargetError, InvalidParameterError
from privgp.mechanisms.posterior_sample import bounds_for, calibrate_eta, calibrate_L, calibrate_r, epsilon_posterior_sampling, posterior_sample_event
from privgp.models.domain import Box
from privgp.models.kernels import Exponential, Matern32

# The optimiser over alpha is approximate (any alpha is valid): its relative error on the minimum is
# below 2e-6 in the dense-grid and mpmath checks, so laws between two optimised epsilons allow that.
OPT_TOL = 2e-6

log_uniform = lambda lo, hi: st.floats(math.log(lo), math.log(hi)).map(math.exp)  # noqa: E731


@st.composite
def settings_st(draw, *, finite_sigma=False):
    kernel = draw(st.sampled_from(["exponential", "matern32", "matern52", "squared_exponential"]))
    dim = draw(st.sampled_from([1, 2]))
    sens = draw(st.sampled_from(["generic", "rkhs"] + (["exp1d"] if kernel == "exponential" and dim == 1 else [])))
    sigma = draw(log_uniform(1e-2, 1e2)) if finite_sigma or draw(st.booleans()) else math.inf
    return dict(n=draw(st.integers(1, 5000)), r=draw(log_uniform(1e-2, 1e3)), sigma=sigma,
                delta=draw(log_uniform(1e-10, 0.5)), eta=draw(st.sampled_from([0.0, 0.3, 2.0])),
                L=draw(st.integers(1, 200)),
                kw=dict(kernel=kernel, lengthscale=draw(log_uniform(0.05, 5.0)), domain=Box.unit(dim),
                        sensitivity=sens, rkhs_norm=2.0 if sens == "rkhs" else None,
                        M_Y=draw(log_uniform(0.1, 10.0)), conversion=draw(st.sampled_from(["improved", "mironov"]))))


def eps(s, **over):
    p = {**s, **over}
    return float(epsilon_posterior_sampling(p["n"], p["r"], p["sigma"], p["delta"], eta=p["eta"], L=p["L"],
                                            **p["kw"]).epsilon)


def single_rdp(s, alpha, **over):
    p = {**s, **over}
    b = bounds_for(p["n"], p["r"], **{k: v for k, v in p["kw"].items() if k != "conversion"})
    return float(rdp_posterior_sample(alpha, b.V, b.Delta, p["r"], p["sigma"], p["eta"]))


def _le(a, b, tol=OPT_TOL):
    return a <= b * (1 + tol) + 1e-12


@given(settings_st(), st.floats(1.01, 5.0))
def test_epsilon_decreases_in_r(s, factor):
    assume(s["r"] * factor <= 1e3)
    assert _le(eps(s, r=s["r"] * factor), eps(s))


@given(settings_st(finite_sigma=True), st.floats(1.01, 10.0))
def test_epsilon_decreases_in_sigma_and_the_bound_pointwise(s, factor):
    """Thm 3.1 (eta = 0), and Prop. 2 with eta proportional to sigma. (With eta held fixed, a larger
    sigma means relatively less added noise, tau~ grows, and epsilon may grow: not a law.)"""
    for scaled in (False, True):
        t = dict(s, eta=0.0) if not scaled else s
        over = dict(sigma=s["sigma"] * factor, eta=t["eta"] * factor)
        assert _le(eps(t, **over), eps(t))
        amax = float(epsilon_posterior_sampling(t["n"], t["r"], t["sigma"], 0.5, eta=t["eta"], **t["kw"]).alpha_max)
        for a in 1 + (amax - 1) * np.array([0.01, 0.3, 0.7, 0.99]):
            assert single_rdp(t, a, **over) <= single_rdp(t, a)  # exact, at every order
    assert _le(eps(s, sigma=math.inf, eta=0.0), eps(s, eta=0.0))


@given(settings_st(finite_sigma=True), log_uniform(1e-3, 1e2))
def test_epsilon_decreases_in_eta(s, eta):
    s = {**s, "eta": 0.0}
    assert _le(eps(s, eta=eta), eps(s))
    assert _le(eps(s, eta=2 * eta), eps(s, eta=eta))


@given(settings_st(), st.integers(1, 50))
def test_epsilon_increases_in_L_and_composition_is_additive(s, extra):
    assert _le(eps(s), eps(s, L=s["L"] + extra))
    kw = {k: v for k, v in s["kw"].items() if k != "conversion"}
    one = posterior_sample_event(s["n"], s["r"], s["sigma"], eta=s["eta"], L=1, **kw)
    many = posterior_sample_event(s["n"], s["r"], s["sigma"], eta=s["eta"], L=s["L"], **kw)
    alphas = 1 + (one.alpha_max - 1) * np.array([0.05, 0.5, 0.95])
    assert np.allclose(many.rdp(alphas), s["L"] * one.rdp(alphas), rtol=1e-14)
    assert np.allclose(ComposedEvent.of([one] * 3).rdp(alphas), 3 * one.rdp(alphas), rtol=1e-14)
    assert np.allclose(one.times(3).rdp(alphas), 3 * one.rdp(alphas), rtol=1e-14)
    assert np.allclose((one + many).rdp(alphas), (s["L"] + 1) * one.rdp(alphas), rtol=1e-14)
    res = epsilon_posterior_sampling(s["n"], s["r"], s["sigma"], s["delta"], eta=s["eta"], L=s["L"], **s["kw"])
    assert float(res.rdp) == pytest.approx(s["L"] * single_rdp(s, float(res.alpha)), rel=1e-13)


def test_composition_of_different_releases_adds_rdp_curves():
    a = posterior_sample_event(10, 1.0, 5.0, sensitivity="exp1d")
    b = posterior_sample_event(50, 2.0, 1.0, kernel="matern32", lengthscale=0.3, domain=Box.unit(2))
    both = a + b
    assert both.alpha_max == min(a.alpha_max, b.alpha_max)
    al = np.linspace(1.01, both.alpha_max - 1e-6, 7)
    assert np.allclose(both.rdp(al), a.rdp(al) + b.rdp(al), rtol=1e-14)
    assert np.isinf(both.rdp(both.alpha_max + 0.1))
    g = account_epsilon(both, 1e-3)
    assert g.epsilon == pytest.approx(float(epsilon_from_rdp(both.rdp(g.alpha), g.alpha, 1e-3)), rel=1e-14)
    assert g.epsilon >= max(account_epsilon(a, 1e-3).epsilon, account_epsilon(b, 1e-3).epsilon) * (1 - OPT_TOL)


@given(settings_st())
def test_improved_conversion_never_worse_than_mironov(s):
    kw = {k: v for k, v in s["kw"].items() if k != "conversion"}
    mir = epsilon_posterior_sampling(s["n"], s["r"], s["sigma"], s["delta"], eta=s["eta"], L=s["L"],
                                     conversion="mironov", **kw)
    imp = epsilon_posterior_sampling(s["n"], s["r"], s["sigma"], s["delta"], eta=s["eta"], L=s["L"],
                                     conversion="improved", **kw)
    assert float(imp.epsilon) <= float(mir.epsilon)
    alphas = 1 + (float(mir.alpha_max) - 1) * np.geomspace(1e-6, 0.999, 50)
    rdp = s["L"] * np.array([single_rdp(s, a) for a in alphas[:5]])
    assert np.all(epsilon_from_rdp(rdp, alphas[:5], s["delta"], "improved")
                  <= epsilon_from_rdp(rdp, alphas[:5], s["delta"], "mironov"))


@settings(max_examples=40)
@given(settings_st())
def test_optimiser_matches_dense_grid_and_reports_value_at_its_alpha(s):
    res = epsilon_posterior_sampling(s["n"], s["r"], s["sigma"], s["delta"], eta=s["eta"], L=s["L"], **s["kw"])
    a, amax = float(res.alpha), float(res.alpha_max)
    assert 1 < a < amax
    # exactly the value at the reported order
    b = bounds_for(s["n"], s["r"], **{k: v for k, v in s["kw"].items() if k != "conversion"})
    again = epsilon_from_rdp(s["L"] * rdp_posterior_sample(a, b.V, b.Delta, s["r"], s["sigma"], s["eta"]), a,
                             s["delta"], s["kw"]["conversion"])
    assert float(res.epsilon) == float(again)
    # and no worse than a dense grid over the whole admissible range (both ends resolved)
    t = np.linspace(-45.0, 35.0, 20001)
    grid = 1 + (amax - 1) / (1 + np.exp(-t))
    grid = grid[(grid > 1) & (grid < amax)]
    vals = epsilon_from_rdp(s["L"] * rdp_posterior_sample(grid, b.V, b.Delta, s["r"], s["sigma"], s["eta"]), grid,
                            s["delta"], s["kw"]["conversion"])
    assert _le(float(res.epsilon), float(vals.min()))


def test_vectorised_equals_scalar_calls():
    rng = np.random.default_rng(7)
    n = rng.integers(1, 500, 20)
    r = np.exp(rng.uniform(-3, 3, 20))
    sig = np.where(rng.random(20) < 0.2, np.inf, np.exp(rng.uniform(-2, 2, 20)))
    eta = np.where(rng.random(20) < 0.5, 0.0, rng.uniform(0, 2, 20))
    L = rng.integers(1, 30, 20)
    ell = np.exp(rng.uniform(-2, 1, 20))
    vec = epsilon_posterior_sampling(n, r, sig, 1e-4, eta=eta, L=L, lengthscale=ell, kernel="matern52")
    for i in range(20):
        one = epsilon_posterior_sampling(int(n[i]), r[i], sig[i], 1e-4, eta=eta[i], L=int(L[i]), lengthscale=ell[i],
                                         kernel="matern52")
        assert float(one.epsilon) == float(vec.epsilon[i]) and float(one.alpha) == float(vec.alpha[i])
    grid = epsilon_posterior_sampling(100, np.geomspace(0.1, 10, 4)[:, None], np.array([0.5, 1.0, np.inf]), 1e-3)
    assert grid.epsilon.shape == (4, 3) and grid.kappa.shape == (4, 3)


# ----------------------------------------------------------------------------- calibration
@settings(max_examples=25)
@given(settings_st(), log_uniform(0.1, 50.0))
def test_calibrate_r_meets_target_and_is_minimal(s, target):
    kw = dict(s["kw"])
    try:
        c = calibrate_r(target, s["delta"], n=s["n"], sigma=s["sigma"], eta=s["eta"], L=s["L"], **kw)
    except InfeasibleTargetError:
        assert eps(s, r=1e4) > target
        return
    assert isinstance(c, CalibrationResult) and c.checked and c.parameter == "r"
    assert eps(s, r=c.value) <= target and c.epsilon <= target
    if c.value > 1e-3 * 1.0001:
        assert eps(s, r=c.value * (1 - 1e-4)) > target


@settings(max_examples=25)
@given(settings_st(finite_sigma=True), log_uniform(0.1, 50.0))
def test_calibrate_eta_meets_target_and_is_minimal(s, target):
    try:
        c = calibrate_eta(target, s["delta"], n=s["n"], r=s["r"], sigma=s["sigma"], L=s["L"], **s["kw"])
    except InfeasibleTargetError:
        assert eps(s, eta=1e4) > target
        return
    assert c.checked and eps(s, eta=c.value) <= target
    if c.value > 0:
        assert eps(s, eta=c.value * (1 - 1e-4)) > target
    else:
        assert eps(s, eta=0.0) <= target


@settings(max_examples=25)
@given(settings_st(), log_uniform(0.1, 50.0))
def test_calibrate_L_meets_target_and_is_maximal(s, target):
    try:
        c = calibrate_L(target, s["delta"], n=s["n"], r=s["r"], sigma=s["sigma"], eta=s["eta"], L_max=10**5,
                        **s["kw"])
    except InfeasibleTargetError:
        assert eps(s, L=1) > target
        return
    assert c.checked and isinstance(c.value, int) and eps(s, L=c.value) <= target
    assert c.value == 10**5 or eps(s, L=c.value + 1) > target


def test_calibration_infeasible_targets_say_why():
    with pytest.raises(InfeasibleTargetError, match="covariance term alone"):
        calibrate_r(0.01, 1e-6, n=10, sigma=1e3, L=10**6, r_bounds=(1e-3, 1.0))
    with pytest.raises(InfeasibleTargetError, match="sigma = inf"):
        calibrate_eta(1.0, 0.05, n=10, r=0.1, sigma=math.inf)
    with pytest.raises(InfeasibleTargetError, match="L = 1"):
        calibrate_L(1.0, 0.05, n=10, r=0.1, sigma=1.0)
    with pytest.raises(InvalidParameterError, match="target_epsilon"):
        calibrate_r(0.0, 0.05, n=10, sigma=1.0)
    with pytest.raises(InvalidParameterError, match="r_bounds"):
        calibrate_r(1.0, 0.05, n=10, sigma=1.0, r_bounds=(2.0, 1.0))


def test_calibration_examples():
    c = calibrate_r(10.0, 0.05, n=10, sigma=5.0, sensitivity="exp1d", conversion="mironov")
    assert c.to_dict()["value"] == c.value and c.epsilon <= 10.0
    assert float(epsilon_posterior_sampling(10, c.value * 0.999, 5.0, 0.05, sensitivity="exp1d",
                                            conversion="mironov").epsilon) > 10.0
    assert calibrate_eta(1e6, 0.05, n=10, r=1.0, sigma=1.0).value == 0.0
    assert calibrate_L(1e9, 0.05, n=10, r=100.0, sigma=10.0, L_max=1000).value == 1000


# ----------------------------------------------------------------------------- bad input
GOOD = dict(n=10, r=1.0, sigma=1.0, delta=0.05)


@pytest.mark.parametrize("over,name", [
    (dict(delta=0.0), "delta"), (dict(delta=1.0), "delta"), (dict(delta=-0.1), "delta"),
    (dict(delta=float("nan")), "delta"), (dict(r=0.0), "r"), (dict(r=-1.0), "r"), (dict(r=math.inf), "r"),
    (dict(sigma=0.0), "sigma"), (dict(sigma=-2.0), "sigma"), (dict(n=0), "n"), (dict(n=2.5), "n"),
    (dict(n=math.inf), "n"),
])
def test_bad_hyperparameters_raise_naming_the_parameter(over, name):
    p = {**GOOD, **over}
    with pytest.raises(InvalidParameterError) as exc:
        epsilon_posterior_sampling(p["n"], p["r"], p["sigma"], p["delta"])
    assert exc.value.name == name


@pytest.mark.parametrize("kw,name", [
    (dict(M_Y=0.0), "M_Y"), (dict(M_Y=-1.0), "M_Y"), (dict(M_Y=math.inf), "M_Y"), (dict(eta=-1.0), "eta"),
    (dict(L=0), "L"), (dict(L=1.5), "L"), (dict(lengthscale=0.0), "lengthscale"), (dict(alpha=1.0), "alpha"),
    (dict(alpha=0.5), "alpha"), (dict(conversion="balle"), "conversion"), (dict(constants="tight"), "constants"),
    (dict(sensitivity="rkhs"), "rkhs_norm"), (dict(sensitivity="rkhs", rkhs_norm=-1.0), "rkhs_norm"),
    (dict(sensitivity="magic"), "sensitivity"), (dict(kernel="cosine"), "kernel"),
    (dict(kernel=Exponential(0.5), lengthscale=1.0), "lengthscale"),
    (dict(sensitivity="constant", kernel="constant", constants="published"), "constants"),
])
def test_bad_options_raise_naming_the_parameter(kw, name):
    with pytest.raises(InvalidParameterError) as exc:
        epsilon_posterior_sampling(10, 1.0, 1.0, 0.05, **kw)
    assert exc.value.name == name


@pytest.mark.parametrize("kw", [
    dict(sensitivity="exp1d", kernel="matern32", lengthscale=1.0),
    dict(sensitivity="exp1d", kernel="exponential", lengthscale=1.0, domain=Box.unit(2)),
    dict(sensitivity="exp1d", kernel=Matern32(0.5)),
    dict(sensitivity="constant", kernel="exponential"),
    dict(sensitivity="diagonal", kernel="squared_exponential"),
])
def test_lemma_outside_its_assumptions_is_refused(kw):
    with pytest.raises(AssumptionError):
        epsilon_posterior_sampling(10, 1.0, 1.0, 0.05, **kw)


def test_primitives_refuse_bad_orders_and_never_return_a_silent_zero():
    with pytest.raises(InvalidParameterError, match="alpha"):
        psi_alpha(1.0, 0.5)
    with pytest.raises(InvalidParameterError, match="alpha"):
        rdp_posterior_sample(0.9, 1.0, 1.0, 1.0, 1.0)
    with pytest.raises(InvalidParameterError, match="alpha"):
        rdp_mean_term(1.0, 1.0, 1.0, 1.0, 1.0)
    with pytest.raises(InvalidParameterError, match="tau"):
        psi_alpha(2.0, -0.1)
    with pytest.raises(InvalidParameterError, match="delta"):
        epsilon_from_rdp(1.0, 2.0, 1.0)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        log_delta_from_rdp(1.0, 2.0, -1.0)
    # beyond the admissible range the bound is +inf, never 0 or NaN
    V, r = 0.9, 1.0
    amax = 1 + r * r / V
    assert np.isinf(rdp_posterior_sample(amax, V, 1.0, r, 1.0)) and np.isinf(psi_alpha(amax + 1.0, V / r**2))
    assert np.isinf(rdp_mean_term(amax + 0.5, V, 1.0, r, 1.0))
    res = epsilon_posterior_sampling(10, 1.0, 1.0, 0.05, alpha=50.0)
    assert np.isinf(res.epsilon)
    # a huge ridge gives a tiny but strictly positive epsilon under Mironov's rule
    tiny = epsilon_posterior_sampling(10, 1e3, 1e3, 0.5, conversion="mironov")
    assert 0 < float(tiny.epsilon) < 1e-3
    tab = TabulatedRdpEvent((2.0, 3.0), (0.2, 0.3))
    assert np.isinf(tab.rdp(3.5)) and tab.rdp(2.5) == 0.3 and tab.rdp(1.5) == 0.2
    with pytest.raises(InvalidParameterError, match="alpha"):
        tab.rdp(1.0)
