"""Posterior-sampling privacy of 1-D Bayesian linear regression on the domain of seed 004, eq. (5).

One draw from p(theta | D) (Lemma 4.1; prior N(0, 1/alpha), noise precision beta) for datasets D of
n records with x_l <= x_i <= x_h and |y_i/x_i - c| <= n^gamma1 (replace-one neighbours):

* Lemma 4.2 (:func:`lemma42_epsilon1`, event :class:`LinearRegressionPosteriorEvent`): for
  n > 1 + 10 nu x_h^2/x_l^2 (CORRECTED condition, see below) the draw is (nu, eps_1)-RDP with

    eps_1 = x_h^2 / (2 (n-1) x_l^2) + (nu-1)/2 * nu x_h^2 / ((n-1) x_l^2 - nu x_h^2)
          + 2 nu beta x_h^4 / ((9/10) n^(1-2 gamma1) x_l^2)
          + 2 nu beta (x_h^2 beta)(x_h^2 alpha + x_h^4 beta) / ((9/10)(x_l^2 beta)^2) * (c + n^gamma1) / n^(2-gamma1)
          + nu/2 (x_h^2 alpha + x_h^4 beta)^2 / ((9/10) x_l^6 beta) * (c + n^gamma1)^2 / n^3.

  The orders allowed by the condition on n give the event's alpha_max = (n-1) x_l^2 / (10 x_h^2).

  Correction (docs/results.md, "Corrections to the paper"): the paper states the lemma for
  n > max{1 + 10 (x_h^2/x_l^2)(nu/beta), 1 + nu x_h^2/x_l^2}. Its proof needs Claim D.24,
  (1/10)(alpha + (z + x_n^2) beta) > nu beta (x^_n^2 - x_n^2) (the precision difference of the two
  posteriors carries the factor beta; the printed claim drops it), and z >= (n-1) x_l^2 gives that
  for n > 1 + 10 nu x_h^2/x_l^2, with no 1/beta. The printed condition is false for beta > 1: with
  n = 1000, alpha = 1, beta = 4, x_h = 1, x_l = 0.5, gamma1 = 0.3, c = 10 the exact divergence at
  order 99 is 281.9 against the formula's 256.8. Under the corrected condition the rest of the proof
  (Claims D.25-D.28) goes through unchanged (it also implies n > 1 + nu x_h^2/x_l^2 of Claim D.27).
  :func:`lemma42_alpha_max` with ``printed=True`` gives the paper's range, for demonstrations only.
* Lemma 4.3: (eps_1 + log(1/delta)/(nu - 1), delta)-DP (Mironov's conversion; the accountant's
  default "improved" conversion is never larger).
* Claim D.29 (:func:`claim_d29_conditions`): the per-term budgets eps/2, eps/16, eps/16, eps/8, eps/8,
  eps/8 at nu = 1 + 2 log(1/delta)/eps; the last condition is checked in its derived form
  n^3 >= (4 nu/eps)(...)(c + n^gamma1)^2 (eq. (58)); the printed exponent 2/3 is a typo
  (docs/notes/seed004_sgld.md, sec. 6.4, item 5). :func:`claim_d30_sample_size` gives Claim D.30 for
  c = n^gamma2 with the corrected exponents 1/(2 - gamma1 - gamma2) and 1/(3 - 2 gamma2).

Errata handled here (docs/notes/seed004_sgld.md, sec. 6.4): the exact divergence of eq. (14) is the Gil et al. (2013) form
of :func:`privgp.accounting.divergences.renyi_gaussian_1d` (the printed one has ln(sigma/sigma^) and
(nu-1)/2); Lemma 4.2's formula is used as printed, on the corrected range of orders, and checked against
the exact divergence by property tests (tests/audit/samplers/test_sgld_bounds.py, tests/accounting/test_linear_regression.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..errors import InvalidParameterError
from .conversion import epsilon_from_rdp
from .events import Neighbouring, PrivacyEvent, admissible_only
from .order_search import smallest_integer

NINE_TENTHS = 0.9


def _terms(nu, n, alpha, beta, x_h, x_l, c, gamma1):
    """The five terms of eps_1 (Lemma 4.2), broadcasting; nan-free for admissible nu."""
    r2 = x_h * x_h / (x_l * x_l)
    a_term = x_h ** 2 * alpha + x_h ** 4 * beta
    cw = c + n ** gamma1
    t1 = r2 / (2.0 * (n - 1.0))
    t2 = 0.5 * (nu - 1.0) * nu * x_h ** 2 / ((n - 1.0) * x_l ** 2 - nu * x_h ** 2)
    t3 = 2.0 * nu * beta * x_h ** 4 / (NINE_TENTHS * n ** (1.0 - 2.0 * gamma1) * x_l ** 2)
    t4 = 2.0 * nu * beta * (x_h ** 2 * beta) * a_term / (NINE_TENTHS * (x_l ** 2 * beta) ** 2) * cw / n ** (2.0 - gamma1)
    t5 = 0.5 * nu * a_term ** 2 / (NINE_TENTHS * x_l ** 6 * beta) * cw * cw / n ** 3
    return t1, t2, t3, t4, t5


def lemma42_alpha_max(n: ArrayLike, beta: ArrayLike, x_h: ArrayLike, x_l: ArrayLike, *,
                      printed: bool = False) -> np.ndarray:
    """Largest order (exclusive) allowed by Lemma 4.2's corrected condition n > 1 + 10 nu x_h^2/x_l^2,
    i.e. (n-1) x_l^2 / (10 x_h^2); ``beta`` does not enter (see the module docstring).

    ``printed=True``: the paper's condition n > max{1 + 10 (x_h^2/x_l^2)(nu/beta), 1 + nu x_h^2/x_l^2},
    which is NOT sufficient for beta > 1 (kept to demonstrate the counterexample; never certify with it)."""
    n, beta, x_h, x_l = (np.asarray(a, dtype=float) for a in (n, beta, x_h, x_l))
    q = (n - 1.0) * x_l ** 2 / x_h ** 2
    if printed:
        return np.minimum(q * beta / 10.0, q)
    return np.broadcast_to(q / 10.0, np.broadcast_shapes(q.shape, beta.shape)).copy()


def lemma42_epsilon1(nu: ArrayLike, n: ArrayLike, alpha: ArrayLike, beta: ArrayLike, x_h: ArrayLike,
                     x_l: ArrayLike, c: ArrayLike, gamma1: ArrayLike) -> np.ndarray:
    """eps_1 of Lemma 4.2 (broadcasting); +inf where the order violates the lemma's (corrected) condition on n,
    n > 1 + 10 nu x_h^2/x_l^2."""
    nu = np.asarray(nu, dtype=float)
    if np.any(~(nu > 1.0)):
        raise InvalidParameterError("nu", "> 1 (Rényi order)", nu)
    n = np.asarray(n, dtype=float)
    with np.errstate(all="ignore"):
        total = sum(_terms(nu, n, alpha, beta, x_h, x_l, c, gamma1))
        amax = np.where(n > 1, lemma42_alpha_max(n, beta, x_h, x_l), 1.0)
    return admissible_only(total, nu, amax)


def lemma43_epsilon(nu: ArrayLike, delta: ArrayLike, n: ArrayLike, alpha: ArrayLike, beta: ArrayLike,
                    x_h: ArrayLike, x_l: ArrayLike, c: ArrayLike, gamma1: ArrayLike) -> np.ndarray:
    """Lemma 4.3: eps_1 + log(1/delta)/(nu - 1) (the paper's conversion, Lemma 3.1 / Mironov Prop. 3)."""
    d = np.asarray(delta, dtype=float)
    if np.any(~((d > 0) & (d < 1))):
        raise InvalidParameterError("delta", "in the open interval (0, 1)", d)
    nu = np.asarray(nu, dtype=float)
    return epsilon_from_rdp(lemma42_epsilon1(nu, n, alpha, beta, x_h, x_l, c, gamma1), nu, d, conversion="mironov")


def _check_domain_params(n, alpha, beta, x_h, x_l, c, gamma1):
    n = v.integer("n", n, minimum=2)
    alpha, beta = v.positive("alpha", alpha), v.positive("beta", beta)
    x_h, x_l = v.positive("x_h", x_h), v.positive("x_l", x_l)
    if not x_l <= x_h:
        raise InvalidParameterError("x_l", f"<= x_h = {x_h:g}", x_l)
    c = v.positive("c", c)
    gamma1 = v.open_interval("gamma1", gamma1, 0.0, 0.5)
    return n, alpha, beta, x_h, x_l, c, gamma1


@dataclass(frozen=True)
class LinearRegressionPosteriorEvent(PrivacyEvent):
    """One draw from the posterior of 1-D Bayesian linear regression (seed 004, eq. (4)) on the domain of
    eq. (5) with n records: (nu, eps_1(nu))-RDP by Lemma 4.2 for 1 < nu < alpha_max, where alpha_max
    comes from the lemma's corrected condition n > 1 + 10 nu x_h^2/x_l^2 (the printed nu/beta is not
    sufficient for beta > 1; docs/results.md, "Corrections to the paper").
    Assumptions: replace-one neighbours (a record replaced by (0, 0) emulates removal), x_h^2 beta > 3
    and gamma1 < 1/2 as in the paper; the printed eq. (14) is corrected (this curve is checked against
    the exact divergence in the tests)."""

    n: int
    alpha: float
    beta: float
    x_h: float
    x_l: float
    c: float
    gamma1: float
    kind: ClassVar[str] = "blr_posterior"
    neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    proof: ClassVar[str] = "seed 004 (SGLD privacy), Lemma 4.2 (posterior RDP of 1-D Bayesian linear regression on eq. (5))"

    def __post_init__(self):
        vals = _check_domain_params(self.n, self.alpha, self.beta, self.x_h, self.x_l, self.c, self.gamma1)
        for name, val in zip(("n", "alpha", "beta", "x_h", "x_l", "c", "gamma1"), vals):
            object.__setattr__(self, name, val)
        if not lemma42_alpha_max(self.n, self.beta, self.x_h, self.x_l) > 1.0:
            raise InvalidParameterError("n", "large enough that Lemma 4.2 admits some order nu > 1 "
                                        f"(n > 1 + 10 x_h^2/x_l^2 = {1 + 10 * self.x_h ** 2 / self.x_l ** 2:.6g})",
                                        self.n)

    def _params(self):
        # the paper's prior precision "alpha" is passed as prior_precision: alpha is the accountant's order
        return {"n": float(self.n), "prior_precision": self.alpha, "beta": self.beta, "x_h": self.x_h,
                "x_l": self.x_l, "c": self.c, "gamma1": self.gamma1}

    @classmethod
    def _rdp_arrays(cls, alpha, n, prior_precision, beta, x_h, x_l, c, gamma1):
        return lemma42_epsilon1(alpha, n, prior_precision, beta, x_h, x_l, c, gamma1)

    @classmethod
    def _alpha_max_arrays(cls, n, prior_precision, beta, x_h, x_l, c, gamma1):
        return lemma42_alpha_max(n, beta, x_h, x_l)

    def assumptions(self) -> tuple[str, ...]:
        return ("replace-one neighbours on the domain of seed 004, eq. (5): x_l <= x_i <= x_h, "
                "|y_i/x_i - c| <= n^gamma1", "one draw from the exact posterior (Lemma 4.1)")

    def details(self) -> dict[str, Any]:
        return {"alpha_max": self.alpha_max}


# ------------------------------------------------------------------------------------------------
# Sample-size conditions (Claims D.29 / D.30)
# ------------------------------------------------------------------------------------------------

def claim_d29_order(epsilon: float, delta: float) -> float:
    """nu = 1 + 2 log(1/delta) / eps (eq. (53): the conversion term takes half the budget)."""
    eps = v.positive("epsilon", epsilon)
    d = v.probability("delta", delta)
    return 1.0 + 2.0 * math.log(1.0 / d) / eps


def claim_d29_conditions(n: int, epsilon: float, delta: float, *, alpha: float, beta: float, x_h: float,
                         x_l: float, c: float, gamma1: float) -> dict[str, bool]:
    """Each condition of Claim D.29 (and Lemma 4.2's, corrected: n > 1 + 10 nu x_h^2/x_l^2, no 1/beta) at n,
    as a dict name -> satisfied.

    eq. (54): term 1 <= eps/16; (55): term 2 <= eps/16; (56): term 3 <= eps/8; (57): term 4 <= eps/8;
    (58): term 5 <= eps/8 (checked as the derived inequality, not the printed exponent)."""
    n, alpha, beta, x_h, x_l, c, gamma1 = _check_domain_params(n, alpha, beta, x_h, x_l, c, gamma1)
    eps = v.positive("epsilon", epsilon)
    nu = claim_d29_order(eps, delta)
    r2 = x_h ** 2 / x_l ** 2
    a_term = x_h ** 2 * alpha + x_h ** 4 * beta
    cw = c + n ** gamma1
    return {
        "lemma42_a": n > 1 + 10 * r2 * nu,
        "lemma42_b": n > 1 + nu * r2,
        "eq54": n >= 1 + r2 * 8.0 / eps,
        "eq55": n >= 1 + nu * r2 * (1 + 8.0 * (nu - 1) / eps),
        "eq56": n ** (1 - 2 * gamma1) >= 16 * nu * beta * x_h ** 4 / (NINE_TENTHS * eps * x_l ** 2),
        "eq57": n ** (2 - gamma1) >= 16 * nu * beta / eps * (x_h ** 2 * beta) * a_term / (NINE_TENTHS * (x_l ** 2 * beta) ** 2) * cw,
        "eq58": n ** 3 >= 4 * nu / eps * a_term ** 2 / (NINE_TENTHS * x_l ** 6 * beta) * cw ** 2,
    }


def claim_d30_sample_size(epsilon: float, delta: float, *, alpha: float, beta: float, x_h: float, x_l: float,
                          gamma1: float, gamma2: float) -> float:
    """The explicit n of Claim D.30 (c = n^gamma2, gamma1 < gamma2 < 3/2) with the corrected exponents
    1/(2 - gamma1 - gamma2) (4th term) and 1/(3 - 2 gamma2) (5th term; the square of eq. (58)), and Lemma
    4.2's corrected condition n > 1 + 10 nu x_h^2/x_l^2 (first term, and the lower bound on n in the factor
    1 + 1/n^(gamma2 - gamma1) of the 4th and 5th terms)."""
    eps = v.positive("epsilon", epsilon)
    nu = claim_d29_order(eps, delta)
    alpha, beta = v.positive("alpha", alpha), v.positive("beta", beta)
    x_h, x_l = v.positive("x_h", x_h), v.positive("x_l", x_l)
    gamma1 = v.open_interval("gamma1", gamma1, 0.0, 0.5)
    gamma2 = v.open_interval("gamma2", gamma2, gamma1, 1.5)
    r2 = x_h ** 2 / x_l ** 2
    a_term = x_h ** 2 * alpha + x_h ** 4 * beta
    corr = 1.0 + 1.0 / (1.0 + 10.0 * r2 * nu) ** (gamma2 - gamma1)
    t4 = (16 * nu * beta / eps * (x_h ** 2 * beta) * a_term / (NINE_TENTHS * (x_l ** 2 * beta) ** 2) * corr)
    t5 = (4 * nu / eps * a_term ** 2 / (NINE_TENTHS * x_l ** 6 * beta) * corr ** 2)
    terms = [1 + 10 * r2 * nu, 1 + nu * r2, 1 + r2 * 8.0 / eps, 1 + nu * r2 * (1 + 8.0 * (nu - 1) / eps),
             (16 * nu * beta * x_h ** 4 / (NINE_TENTHS * eps * x_l ** 2)) ** (1.0 / (1.0 - 2.0 * gamma1)),
             t4 ** (1.0 / (2.0 - gamma1 - gamma2)) if gamma1 + gamma2 < 2 else math.inf,
             t5 ** (1.0 / (3.0 - 2.0 * gamma2))]
    return float(max(terms))


def lemma43_min_n(epsilon: float, delta: float, *, alpha: float, beta: float, x_h: float, x_l: float, c: float,
                  gamma1: float, nu: float | None = None,
                  n_max: int = 10 ** 15) -> int:
    """Smallest n for which Lemma 4.3 at order ``nu`` (default 1 + 2 log(1/delta)/eps, Claim D.29's)
    gives (eps, delta) for the domain with centre c; eps_1 decreases in n, so a bisection on n is exact."""
    eps = v.positive("epsilon", epsilon)
    d = v.probability("delta", delta)
    nu = claim_d29_order(eps, d) if nu is None else v.greater_than("nu", nu, 1.0)

    def ok(m):
        return float(lemma43_epsilon(nu, d, float(m), alpha, beta, x_h, x_l, c, gamma1)) <= eps

    n = smallest_integer(ok, 2, n_max)
    if n is None:
        raise InvalidParameterError("epsilon", f"achievable with n <= {n_max} by Lemma 4.3", eps)
    return n
