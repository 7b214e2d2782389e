"""Private selection from private candidates (Liu & Talwar 2019), as used by seed 001 (sec. 4.2).

The random-stopping algorithm repeatedly runs a base mechanism Q (one randomly chosen candidate,
trained and scored), keeps the best score, stops after each run with probability gamma and in any
case after T runs. Liu & Talwar (2019), Thm 3.4, with the base mechanism (epsilon, delta)-DP and
T = (1/gamma) log(1/delta_2), give the whole search the guarantee of seed 001's eq. (20):

    epsilon_tot = 3 epsilon + 3 sqrt(2 delta),     delta_tot = sqrt(2 delta) T + delta_2.

Integer T (seed 001, Alg. 2 writes a real T). The theorem holds for every T of the form
(1/gamma) log(1/delta_2), so for an integer number of runs T we apply it with
delta_2 = exp(-gamma T): then (1/gamma) log(1/delta_2) = T exactly, nothing is rounded, and
:class:`SelectionEvent` charges delta_tot = sqrt(2 delta) T + exp(-gamma T).

Budget split (seed 001, App. C): delta_2 = sqrt(2 delta)/gamma minimises delta_tot; then
delta_tot = t (1 - log t) with t = sqrt(2 delta)/gamma, solved for t_0 numerically.
:func:`liu_talwar_budget` follows it, then rounds T up to an integer and recomputes delta so that
the event's (epsilon_tot, delta_tot) never exceeds the target (re-checked).

Seed 001, Lemma 3: when the training and validation sets are disjoint, training on one and scoring
on the other, each (epsilon, delta)-DP, is one (epsilon, delta)-DP base mechanism on their union
(post-processing + parallel composition). That is the base mechanism here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..errors import InfeasibleTargetError, InvalidParameterError
from ..formatting import format_upper
from .events import ApproxOnlyEvent, Neighbouring


def _base_delta(delta: float) -> float:
    d = v.nonnegative("delta", delta)
    if not d < 1:
        raise InvalidParameterError("delta", "in [0, 1)", d)
    return d


@dataclass(frozen=True)
class SelectionEvent(ApproxOnlyEvent):
    """The privacy event of choosing the best of repeated runs privately (e.g. a hyperparameter): the
    base mechanism, (``epsilon``, ``delta``)-DP, is run until a coin with stopping probability
    ``gamma`` says stop (at most ``max_draws`` runs), and only the best run is published -- Liu &
    Talwar's random stopping (their Alg. 2).

    Guarantee (Liu & Talwar 2019, Thm 3.4; seed 001, Lemma 3 and eq. (20)), with
    delta_2 = exp(-gamma T), T = max_draws:
    (3 epsilon + 3 sqrt(2 delta), sqrt(2 delta) T + exp(-gamma T))-DP. It is an (epsilon, delta)
    statement only (no Renyi curve): the accountant composes it through privacy profiles (or by basic
    composition under the rule "basic"; :mod:`privgp.accounting.accountant`, item 4)."""

    epsilon: float
    delta: float
    gamma: float
    max_draws: int
    kind: ClassVar[str] = "selection"
    neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    proof: ClassVar[str] = ("private selection by random stopping: Liu & Talwar 2019, Thm 3.4; seed 001, "
                            "Lemma 3 (disjoint training/validation sets) and eq. (20)")

    def __post_init__(self):
        object.__setattr__(self, "epsilon", v.nonnegative("epsilon", self.epsilon))
        object.__setattr__(self, "delta", _base_delta(self.delta))
        g = v.positive("gamma", self.gamma)
        if not g <= 1:
            raise InvalidParameterError("gamma", "in (0, 1] (stopping probability)", g)
        object.__setattr__(self, "gamma", g)
        object.__setattr__(self, "max_draws", v.integer("max_draws", self.max_draws, minimum=1))

    @property
    def delta2(self) -> float:
        """exp(-gamma T): the probability-of-truncation term of Thm 3.4."""
        return math.exp(-self.gamma * self.max_draws)

    def approx_dp(self) -> tuple[float, float]:
        s = math.sqrt(2.0 * self.delta)
        return (3.0 * self.epsilon + 3.0 * s, min(1.0, s * self.max_draws + self.delta2))

    def assumptions(self) -> tuple[str, ...]:
        return ("training and validation sets disjoint and fixed independently of the data (Lemma 3)",
                "each run of the base mechanism (train on one part, score on the other) is "
                f"({format_upper(self.epsilon, 6)}, {format_upper(self.delta, 3)})-DP with fresh randomness",
                "replace-one neighbours; the differing record stays in its part")

    def details(self) -> dict[str, Any]:
        e, d = self.approx_dp()
        return {"epsilon_total": e, "delta_total": d, "delta2": self.delta2}


def delta_total_of_t(t: ArrayLike) -> np.ndarray:
    """t (1 - log t): delta_tot as a function of t = sqrt(2 delta)/gamma (seed 001, eq. (35))."""
    t = np.asarray(t, dtype=float)
    return t * (1.0 - np.log(t))


@dataclass(frozen=True)
class SelectionBudget:
    """Per-run budget of a selection meeting (epsilon_total, delta_total): the base (epsilon, delta),
    the integer number of runs and the resulting event (its guarantee is re-checked <= the target)."""

    epsilon_total: float
    delta_total: float
    gamma: float
    t0: float
    event: SelectionEvent

    @property
    def epsilon(self) -> float:
        return self.event.epsilon

    @property
    def delta(self) -> float:
        return self.event.delta

    @property
    def max_draws(self) -> int:
        return self.event.max_draws

    def to_dict(self) -> dict:
        e, d = self.event.approx_dp()
        return {"epsilon_total": self.epsilon_total, "delta_total": self.delta_total, "gamma": self.gamma,
                "t0": self.t0, "epsilon": self.epsilon, "delta": self.delta, "max_draws": self.max_draws,
                "delta2": self.event.delta2, "certified_epsilon": e, "certified_delta": d}


def liu_talwar_budget(epsilon_total: float, delta_total: float, gamma: float) -> SelectionBudget:
    """Split a target (epsilon_tot, delta_tot) for selection with stopping probability gamma
    (seed 001, Alg. 2 first lines and App. C), with an integer number of runs:

    t_0 solves t (1 - log t) = delta_tot on (0, 1); T = ceil(log(1/t_0) / gamma);
    sqrt(2 delta) = (delta_tot - exp(-gamma T)) / T; epsilon = epsilon_tot/3 - sqrt(2 delta).
    (With the real T = log(1/t_0)/gamma these are the paper's delta = gamma^2 t_0^2 / 2 and
    delta_2 = t_0; the rounded T only lowers delta_2 and delta.) An InfeasibleTargetError when
    epsilon would be <= 0."""
    eps_tot = v.positive("epsilon_total", epsilon_total)
    d_tot = v.probability("delta_total", delta_total)
    gamma = v.positive("gamma", gamma)
    if not gamma <= 1:
        raise InvalidParameterError("gamma", "in (0, 1] (stopping probability)", gamma)
    # t (1 - log t) increases from 0 to 1 on (0, 1]
    from scipy.optimize import brentq  # here: scipy.optimize is a slow import (`privgp --help`)

    t0 = brentq(lambda t: float(delta_total_of_t(t)) - d_tot, 1e-300, 1.0, xtol=1e-300, rtol=1e-15, maxiter=500)
    T = max(1, math.ceil(math.log(1.0 / t0) / gamma))
    s = (d_tot - math.exp(-gamma * T)) / T
    if not s > 0:
        raise InfeasibleTargetError(f"no per-run delta for delta_total={d_tot:g}, gamma={gamma:g}")
    delta = 0.5 * s * s
    eps = eps_tot / 3.0 - math.sqrt(2.0 * delta)
    if not eps > 0:
        raise InfeasibleTargetError(f"epsilon_total={eps_tot:g} leaves no per-run epsilon "
                                    f"(3 sqrt(2 delta) = {3 * math.sqrt(2 * delta):.3g})")
    event = SelectionEvent(eps, delta, gamma, T)
    for _ in range(64):  # land on the feasible side of both targets despite rounding
        e, d = event.approx_dp()
        if e <= eps_tot and d <= d_tot:
            break
        event = SelectionEvent(event.epsilon * (1 - 1e-14) if e > eps_tot else event.epsilon,
                               event.delta * (1 - 1e-12) if d > d_tot else event.delta, gamma, T)
    e, d = event.approx_dp()
    if not (e <= eps_tot and d <= d_tot):  # pragma: no cover - rounding never needs 64 steps
        raise InfeasibleTargetError("selection budget could not be placed below the target")
    return SelectionBudget(eps_tot, d_tot, gamma, float(t0), event)
