"""Coarse-to-fine grid search over theta = (lengthscale, r, sigma), optionally privacy-constrained.

Seed 000, sec. 5, eqs. (6)-(7) and App. D: minimise the average task loss over a coarse grid,
then refine around the best candidates (the paper: two rounds around the top 3). The private
search (eq. 7) only considers settings whose certified eps_L(theta) is strictly below eps0; the
constraint is applied before the loss is evaluated, so infeasible settings cost nothing.

The loss and epsilon are plain callables on candidate arrays (C, 3), so the search knows nothing
about GPs: the excursion study supplies a loss that reuses one eigendecomposition per
(dataset, lengthscale) across r and vectorises over sigma, and an epsilon from
:func:`privgp.mechanisms.posterior_sample.epsilon_posterior_sampling` (vectorised over the candidates). Both are
memoised by setting (:class:`CachedLoss`, :class:`EpsilonCache`), so the unconstrained and the
private search share every evaluation.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import validation as v
from ..errors import InvalidParameterError
from ..formatting import format_lower, format_upper

COLUMNS = ("lengthscale", "r", "sigma")

#: Refinement rounds: multiplicative factors for (lengthscale, r, sigma) around each anchor.
DEFAULT_REFINEMENT: tuple = (
    ((0.7, 1.0, 1.4), (0.6, 0.8, 1.0, 1.25, 1.6), (0.6, 0.8, 1.0, 1.25, 1.6)),
    ((0.85, 1.0, 1.18), (0.8, 0.9, 1.0, 1.1, 1.25), (0.8, 0.9, 1.0, 1.1, 1.25)),
)


def _key(theta) -> tuple[float, float, float]:
    ell, r, sigma = (float(f"{float(a):.10g}") for a in theta)
    return ell, r, sigma


def _positive_tuple(name, values) -> tuple[float, ...]:
    arr = v.finite_array(name, values, ndim=1)
    if np.any(arr <= 0):
        raise InvalidParameterError(name, "all > 0", arr)
    return tuple(sorted({float(f"{a:.10g}") for a in arr}))


@dataclass(frozen=True)
class SearchSpace:
    """The coarse grid (full product) and the refinement rounds."""

    lengthscales: tuple[float, ...]
    rs: tuple[float, ...]
    sigmas: tuple[float, ...]
    refinement: tuple = DEFAULT_REFINEMENT
    top_k: int = 3

    def __post_init__(self):
        for name in ("lengthscales", "rs", "sigmas"):
            object.__setattr__(self, name, _positive_tuple(name, getattr(self, name)))
        object.__setattr__(self, "top_k", v.integer("top_k", self.top_k, minimum=1))
        rounds = tuple(tuple(_positive_tuple(f"refinement[{i}][{j}]", f) for j, f in enumerate(rnd))
                       for i, rnd in enumerate(self.refinement))
        for i, rnd in enumerate(rounds):
            if len(rnd) != 3:
                raise InvalidParameterError(f"refinement[{i}]", "three factor lists (lengthscale, r, sigma)", rnd)
        object.__setattr__(self, "refinement", rounds)

    def coarse(self) -> np.ndarray:
        return np.array(list(itertools.product(self.lengthscales, self.rs, self.sigmas)), dtype=float)

    def around(self, anchor, factors) -> np.ndarray:
        fl, fr, fs = factors
        return np.array([(anchor[0] * a, anchor[1] * b, anchor[2] * c)
                         for a, b, c in itertools.product(fl, fr, fs)], dtype=float)

    def to_dict(self) -> dict:
        return {"lengthscales": list(self.lengthscales), "rs": list(self.rs), "sigmas": list(self.sigmas),
                "refinement": [[list(f) for f in rnd] for rnd in self.refinement], "top_k": self.top_k}


class CachedLoss:
    """Memoised loss: ``fn(candidates (C, 3)) -> (C,)``, evaluated only on unseen settings."""

    name = "loss"
    requirement = "free of NaN"

    def __init__(self, fn: Callable[..., np.ndarray]):
        self.fn = fn
        self.values: dict[tuple, float] = {}

    def _evaluate(self, settings: np.ndarray) -> np.ndarray:
        return self.fn(settings)

    def __call__(self, candidates) -> np.ndarray:
        cand = np.asarray(candidates, dtype=float).reshape(-1, 3)
        keys = [_key(c) for c in cand]
        todo = list(dict.fromkeys(k for k in keys if k not in self.values))
        if todo:
            vals = np.asarray(self._evaluate(np.array(todo, dtype=float)), dtype=float).reshape(-1)
            if vals.shape[0] != len(todo):
                raise InvalidParameterError(self.name, f"one value per candidate ({len(todo)})", vals.shape)
            if np.any(np.isnan(vals)):
                raise InvalidParameterError(self.name, self.requirement, vals)
            self.values.update(zip(todo, vals.tolist()))
        return np.array([self.values[k] for k in keys])


class EpsilonCache(CachedLoss):
    """Memoised certified epsilon: ``fn(lengthscale, r, sigma arrays) -> epsilon array``."""

    name = "epsilon"
    requirement = "free of NaN (an upper bound, +inf if none)"

    def _evaluate(self, settings: np.ndarray) -> np.ndarray:
        return self.fn(settings[:, 0], settings[:, 1], settings[:, 2])


@dataclass(frozen=True)
class SearchResult:
    """Outcome of one search. ``best`` is None (and ``feasible`` False) when no setting qualifies."""

    best: dict | None
    table: pd.DataFrame
    feasible: bool
    message: str
    eps0: float | None = None
    rounds: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def best_setting(self) -> dict:
        """``best``; an error (the search's message) when no setting qualifies."""
        if self.best is None:
            raise InvalidParameterError("search result", "a feasible setting", self.message)
        return self.best

    @property
    def theta(self) -> tuple[float, float, float]:
        best = self.best_setting
        return (best["lengthscale"], best["r"], best["sigma"])


def _ranked(table: pd.DataFrame, constrained: bool) -> pd.DataFrame:
    t = table[table["feasible"]] if constrained else table
    return t.sort_values(["loss", "lengthscale", "r", "sigma"], kind="mergesort")


class _Search:
    """State of one search; :func:`grid_searches` advances several in lockstep."""

    def __init__(self, space: SearchSpace, epsilon=None, eps0=None):
        self.constrained = epsilon is not None or eps0 is not None
        if self.constrained:
            if epsilon is None:
                raise InvalidParameterError("epsilon", "a callable when eps0 is given", None)
            if eps0 is None:
                raise InvalidParameterError("eps0", "a target epsilon > 0 when epsilon is given", None)
            eps0 = v.positive("eps0", eps0)
        self.space, self.epsilon, self.eps0 = space, epsilon, eps0
        self.rows: dict[tuple, dict] = {}
        self.pending: list[tuple] = []
        self.done = 0
        self.stopped = False

    def propose(self, rnd: int) -> np.ndarray:
        """New candidates of round ``rnd`` (0 = coarse); only feasible ones need a loss."""
        if rnd == 0:
            cands = self.space.coarse()
        else:
            anchors = _ranked(self.table(), self.constrained).head(self.space.top_k)
            if anchors.empty:
                self.stopped = True
                return np.zeros((0, 3))
            factors = self.space.refinement[rnd - 1]
            cands = np.concatenate([self.space.around(a, factors) for a in anchors[list(COLUMNS)].to_numpy()])
        new = [k for k in dict.fromkeys(_key(c) for c in cands) if k not in self.rows]
        arr = np.array(new, dtype=float).reshape(-1, 3)
        eps = self.epsilon(arr) if self.constrained else np.full(len(new), np.nan)
        feas = eps < self.eps0 if self.constrained else np.ones(len(new), dtype=bool)
        self.pending = [(k, float(e), bool(f), rnd) for k, e, f in zip(new, eps, feas)]
        return arr[feas]

    def record(self, loss) -> None:
        """Store the pending candidates with their losses (from the shared cache)."""
        feas = [k for k, _, f, _ in self.pending if f]
        vals = dict(zip(feas, loss(np.array(feas, dtype=float)).tolist())) if feas else {}
        for k, e, f, rnd in self.pending:
            self.rows[k] = {"lengthscale": k[0], "r": k[1], "sigma": k[2], "loss": float(vals.get(k, np.nan)),
                            "epsilon": e, "feasible": f, "round": rnd}
            self.done = max(self.done, rnd)
        self.pending = []

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(list(self.rows.values()),
                            columns=["lengthscale", "r", "sigma", "loss", "epsilon", "feasible", "round"])

    def result(self) -> SearchResult:
        table = self.table()
        ranked = _ranked(table, self.constrained)
        if ranked.empty:
            finite = table["epsilon"][np.isfinite(table["epsilon"])]
            smallest = format_upper(finite.min(), 4) if len(finite) else "inf"
            msg = (f"no feasible setting: none of the {len(table)} candidates has certified epsilon < "
                   f"{format_lower(self.eps0, 6)} (smallest epsilon on the grid: {smallest})")
            return SearchResult(best=None, table=table, feasible=False, message=msg, eps0=self.eps0,
                                rounds=self.done)
        best = ranked.iloc[0].to_dict()
        best = {k: (float(val) if k in ("lengthscale", "r", "sigma", "loss", "epsilon") else val)
                for k, val in best.items()}
        msg = f"best of {len(table)} candidates" + (
            f" with epsilon < {format_upper(self.eps0, 6)} ({int(table['feasible'].sum())} feasible)" if self.constrained else "")
        return SearchResult(best=best, table=table, feasible=True, message=msg, eps0=self.eps0, rounds=self.done)


def grid_searches(loss: CachedLoss, searches: list[dict]) -> list[SearchResult]:
    """Several searches (dicts of :func:`grid_search` keyword arguments: space, epsilon, eps0) run
    in lockstep: each round's new feasible candidates of all searches are evaluated in ONE call
    of ``loss``, so a lengthscale shared between them is decomposed once. Each search's result
    is the same as running it alone."""
    states = [_Search(**s) for s in searches]
    rounds = max(len(s.space.refinement) for s in states)
    for rnd in range(rounds + 1):
        active = [s for s in states if not s.stopped and rnd <= len(s.space.refinement)]
        if not active:
            break
        batch = [s.propose(rnd) for s in active]
        todo = np.concatenate(batch) if batch else np.zeros((0, 3))
        if len(todo):
            loss(todo)
        for s in active:
            s.record(loss)
    return [s.result() for s in states]


def grid_search(loss: Callable[[np.ndarray], np.ndarray], space: SearchSpace, *,
                epsilon: Callable[[np.ndarray], np.ndarray] | None = None,
                eps0: float | None = None) -> SearchResult:
    """Minimise ``loss`` over the coarse grid of ``space`` plus its refinement rounds (eq. 6).

    With ``epsilon`` and ``eps0`` this is the private search of eq. (7): only settings with
    epsilon(theta) < eps0 are evaluated, ranked and refined around. If no coarse or refined
    setting is feasible the result says "no feasible setting" (``feasible=False``) instead of
    raising, with the smallest epsilon seen in the message.
    """
    cached = loss if isinstance(loss, CachedLoss) else CachedLoss(loss)
    return grid_searches(cached, [{"space": space, "epsilon": epsilon, "eps0": eps0}])[0]
