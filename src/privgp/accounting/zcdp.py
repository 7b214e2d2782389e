"""zCDP <-> (epsilon, delta) by Bun & Steinke (2016), Prop. 1.3 (seed 001, eq. (19)).

A rho-zCDP mechanism is (rho + 2 sqrt(rho log(1/delta)), delta)-DP for every delta in (0, 1).
Seed 001 runs COINPRESS (a zCDP mechanism) inside a mechanism that must be (epsilon, delta)-DP,
so it needs the inverse: the largest rho with rho + 2 sqrt(rho log(1/delta)) <= epsilon,

    rho = (sqrt(epsilon + log(1/delta)) - sqrt(log(1/delta)))^2          (eq. 19)
        = epsilon^2 / (sqrt(epsilon + log(1/delta)) + sqrt(log(1/delta)))^2,

evaluated in the second form (no cancellation when epsilon << log(1/delta)) and re-checked so that
the returned rho never converts to more than epsilon. The accountant's RDP conversion of a
:class:`~privgp.accounting.events.ZcdpEvent` is tighter than this rule; eq. (19) is what the paper
uses and what its Lemma 3 / eq. (20) analysis assumes, so :mod:`privgp.mechanisms.private_selection`
uses it.
"""
from __future__ import annotations

import math

from .. import validation as v


def zcdp_epsilon(rho: float, delta: float) -> float:
    """epsilon = rho + 2 sqrt(rho log(1/delta)): a rho-zCDP mechanism is (epsilon, delta)-DP
    (Bun & Steinke 2016, Prop. 1.3)."""
    rho = v.nonnegative("rho", rho)
    delta = v.probability("delta", delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """Largest rho (to rounding, on the feasible side) with zcdp_epsilon(rho, delta) <= epsilon
    (seed 001, eq. (19))."""
    eps = v.positive("epsilon", epsilon)
    delta = v.probability("delta", delta)
    L = math.log(1.0 / delta)
    rho = (eps / (math.sqrt(eps + L) + math.sqrt(L))) ** 2   # eps^2 overflowed at eps = 1e300 (red team 18d)
    while zcdp_epsilon(rho, delta) > eps:  # at most a few ulps: land on the feasible side
        rho = math.nextafter(rho, 0.0)
    return rho
