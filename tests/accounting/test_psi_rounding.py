"""psi_alpha (seed 000, Lemma A.3) against mpmath at 60 digits, where its closed form cancels (red team 21, F2).

The closed form subtracts two logarithms; at small tau or small alpha - 1 they agree in most of their bits
(at tau = 1.1e-12, alpha - 1 = 0.0143 the direct evaluation was 3.2e-4 relative low: an RDP bound below the
true one). ``_psi_raw`` evaluates such points as sums of non-negative terms; these tests pin its relative error
against an independent high-precision evaluation of the lemma's formula, and check that where little cancels
the direct form is kept bit for bit (earlier certificates keep their numbers)."""
from __future__ import annotations

import mpmath
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from privgp.accounting.rdp import psi_alpha


def psi_mpmath(alpha: float, tau: float) -> float:
    """Lemma A.3's max of the two branches, at 60 digits from the float inputs as given."""
    with mpmath.workdps(60):
        a, t = mpmath.mpf(alpha), mpmath.mpf(tau)
        first = mpmath.log(1 + t) / 2 - mpmath.log((1 + a * t) / (1 + t)) / (2 * (a - 1))
        second = -mpmath.log(1 + t) / 2 - mpmath.log(1 - t * (a - 1)) / (2 * (a - 1))
        return float(max(first, second))


def direct(alpha: float, tau: float) -> float:
    """The closed form evaluated as written (what privgp computed before the fix)."""
    am1, x = alpha - 1.0, tau * (alpha - 1.0)
    half = 0.5 * np.log1p(tau)
    return float(max(half - np.log1p(x / (1.0 + tau)) / (2 * am1), -half - np.log1p(-x) / (2 * am1)))


def test_the_red_team_point_is_accurate_where_the_direct_form_was_3e_4_low():
    alpha, tau = 1.0143, 1.1e-12
    exact = psi_mpmath(alpha, tau)
    assert abs(direct(alpha, tau) - exact) / exact > 1e-5          # the cancellation the fix is for
    assert abs(float(psi_alpha(alpha, tau)) - exact) / exact < 1e-13


@settings(max_examples=400, deadline=None)
@given(log_tau=st.floats(-16.0, 3.0), log_am1=st.floats(-6.0, 2.0))
def test_psi_alpha_is_within_1e_13_of_mpmath(log_tau, log_am1):
    tau, alpha = 10.0 ** log_tau, 1.0 + 10.0 ** log_am1
    if tau * (alpha - 1.0) >= 0.999:      # +inf there, and near it the lemma's value grows without bound
        return
    exact = psi_mpmath(alpha, tau)
    assert abs(float(psi_alpha(alpha, tau)) - exact) <= 1e-13 * exact


@settings(max_examples=200, deadline=None)
@given(log_tau=st.floats(-2.0, 3.0), log_am1=st.floats(-1.0, 2.0))
def test_where_little_cancels_the_direct_form_is_kept_bit_for_bit(log_tau, log_am1):
    tau, alpha = 10.0 ** log_tau, 1.0 + 10.0 ** log_am1
    if tau * (alpha - 1.0) >= 0.999:
        return
    am1, x = alpha - 1.0, tau * (alpha - 1.0)
    half = 0.5 * np.log1p(tau)
    terms = half + abs(np.log1p(x / (1 + tau))) / (2 * am1) + abs(np.log1p(-x)) / (2 * am1)
    if 256.0 * direct(alpha, tau) >= terms:
        assert float(psi_alpha(alpha, tau)) == direct(alpha, tau)


def test_psi_alpha_is_exactly_zero_at_tau_zero_and_inf_past_the_pole():
    assert float(psi_alpha(1.5, 0.0)) == 0.0
    assert float(psi_alpha(1.5, 2.0)) == np.inf and float(psi_alpha(3.0, np.inf)) == np.inf


def test_the_cancelling_branch_fills_arrays_of_any_memory_order():
    """The branch writes into the array of the direct form where it can (a C-ordered array, issue 30) and into a copy
    otherwise: the same values for Fortran-ordered and strided inputs as for C-ordered ones, cancelling points
    included, and 0-d inputs."""
    rng = np.random.default_rng(3)
    alpha = 1.0 + np.exp(rng.uniform(-12, 1, (40, 30)))
    tau = np.exp(rng.uniform(-30, -2, (40, 30)))
    expected = psi_alpha(alpha, tau)
    assert np.any(expected < 1e-6)                                                   # some points cancel
    for a, t in ((np.asfortranarray(alpha), np.asfortranarray(tau)), (alpha.T.copy().T, tau.T.copy().T),
                 (np.repeat(alpha, 2, axis=1)[:, ::2], np.repeat(tau, 2, axis=1)[:, ::2])):
        assert np.array_equal(psi_alpha(a, t), expected)
    assert float(psi_alpha(alpha[3, 4], tau[3, 4])) == expected[3, 4]
