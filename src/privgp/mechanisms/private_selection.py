"""Private hyperparameter selection (seed 001, sec. 4, Alg. 2, App. B-C), for the DP sparse GP and for
the lengthscale of a seed-000 posterior-sample release.

The algorithm (Liu & Talwar 2019, random stopping; :mod:`privgp.accounting.selection`): split the
records once, independently of their values, into a training part D_1 and a disjoint validation part
D_2. Repeat: pick a candidate i uniformly, run the (epsilon, delta)-DP mechanism M_i on D_1 with
fresh noise, score the released model on D_2 with an (epsilon, delta)-DP mean (COINPRESS at
rho_CP of eq. 19), keep the best accepted score; stop with probability gamma after each run, and
after T runs at the latest. Lemma 3 makes each run one (epsilon, delta)-DP mechanism on D_1 u D_2;
Liu & Talwar's Thm 3.4 makes the whole search (epsilon_tot, delta_tot)-DP (eq. 20): one
:class:`~privgp.accounting.selection.SelectionEvent`.

Alg. 2's issues, resolved (docs/notes/seed001_dpgp.md, sec. 1.7):
(a) the acceptance test is on the *mean* (the COINPRESS estimate must lie in the candidate's clip
    interval [C - R, C + R] of eqs. 32-33: "values outside the interval are ignored"), and the
    score compared across candidates is |D_2| times that mean;
(b) T is an integer (:func:`~privgp.accounting.selection.liu_talwar_budget`);
(c) the chosen candidate is returned with its model (its index is drawn independently of the data);
(d) when no run is accepted the result says so (``index`` is None, no model): a sentinel, not an error
    (the event is still charged: the search ran);
(e) Alg. 1's ratio sigma_a/sigma_b is a setting of the search (``noise_ratio``).
Overlapping training and validation sets are impossible by construction: :class:`TrainValidationSplit`
partitions the row indices of one dataset.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import validation as v
from ..accounting.selection import SelectionBudget, SelectionEvent, liu_talwar_budget
from ..accounting.zcdp import zcdp_rho_for
from ..errors import InvalidParameterError
from .coinpress import coinpress_mean, paper_schedule
from .discrete_noise import DISCRETE_GAUSSIAN
from .sparse_gp import (
    calibrate_noise,
    check_float_inducing,
    check_noise,
    release_from_statistics,
    sparse_gp_spec,
    sufficient_statistics,
)
from .sparse_gp_lattice import lattice_inputs, lattice_noise, lattice_release

COINPRESS_STEPS = 12
COINPRESS_LAST_FRACTION = 0.75


# ------------------------------------------------------------------------------------------------
# The split
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class TrainValidationSplit:
    """A partition of the row indices 0..n-1 into training and validation rows (disjoint, covering).
    Build it with :meth:`random` (a permutation from an rng, independent of the data values) or
    :meth:`from_validation_rows` (fixed public rows, e.g. a pre-agreed hold-out)."""

    n: int
    train: np.ndarray
    validation: np.ndarray

    @classmethod
    def random(cls, n: int, validation_fraction: float, rng: np.random.Generator) -> TrainValidationSplit:
        n = v.integer("n", n, minimum=2)
        f = v.open_interval("validation_fraction", validation_fraction, 0.0, 1.0)
        k = int(round(f * n))
        if not 1 <= k <= n - 1:
            raise InvalidParameterError("validation_fraction", f"leaving both parts non-empty for n = {n}", f)
        perm = v.generator("rng", rng).permutation(n)
        return cls(n, np.sort(perm[k:]), np.sort(perm[:k]))

    @classmethod
    def from_validation_rows(cls, n: int, rows) -> TrainValidationSplit:
        n = v.integer("n", n, minimum=2)
        r = np.asarray(rows)
        if r.ndim != 1 or r.size == 0 or not np.issubdtype(r.dtype, np.integer):
            raise InvalidParameterError("validation rows", "a non-empty 1-D array of row indices", rows)
        if np.any((r < 0) | (r >= n)):
            raise InvalidParameterError("validation rows", f"indices in [0, {n})", r)
        if np.unique(r).size != r.size:
            raise InvalidParameterError("validation rows", "distinct indices (no row in the validation set twice)", r)
        mask = np.zeros(n, dtype=bool)
        mask[r] = True
        if mask.all():
            raise InvalidParameterError("validation rows", "leaving at least one training row", r.size)
        return cls(n, np.flatnonzero(~mask), np.flatnonzero(mask))

    def to_dict(self) -> dict:
        return {"n": self.n, "train": int(self.train.size), "validation": int(self.validation.size)}


# ------------------------------------------------------------------------------------------------
# Random stopping (generic)
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class SelectionResult:
    """Outcome of one private selection. ``index`` is None (and ``model`` None) when no run was
    accepted. ``event`` (a :class:`SelectionEvent`) is what the whole search costs, whatever its
    outcome; the chosen model's own per-run event is covered by it and must not be charged again."""

    index: int | None
    candidate: Any
    model: Any
    score: float
    draws: int
    accepted: int
    budget: SelectionBudget
    split: TrainValidationSplit | None = None
    trace: tuple = field(default=(), repr=False)    # (candidate index, score, accepted) per run

    @property
    def selected(self) -> bool:
        return self.index is not None

    @property
    def event(self) -> SelectionEvent:
        return self.budget.event

    @classmethod
    def published(cls, index: int, candidate: Any, model: Any, budget: SelectionBudget) -> SelectionResult:
        """The selection as its published files state it: the chosen candidate and its released model, to write
        those files again (``privgp verify``). The score and the numbers of runs are not published: nan and -1."""
        return cls(index=index, candidate=candidate, model=model, score=math.nan, draws=-1, accepted=-1, budget=budget)


def random_stopping(run: Callable[[int, np.random.Generator], tuple[Any, float, bool]], n_candidates: int,
                    budget: SelectionBudget, rng: np.random.Generator, *, keep_trace: bool = False):
    """Liu & Talwar's random stopping: ``run(i, rng) -> (model, score, accepted)`` is one run of the
    (epsilon, delta)-DP base mechanism for candidate i. Returns (index, model, score, draws, accepted,
    trace); index None when nothing was accepted."""
    K = v.integer("n_candidates", n_candidates, minimum=1)
    best_i, best_model, best_score = None, None, -math.inf
    trace = []
    n_acc = 0
    t = 0
    for t in range(1, budget.max_draws + 1):  # noqa: B007 (the number of draws is returned)
        i = int(rng.integers(K))
        model, score, ok = run(i, rng)
        if keep_trace:
            trace.append((i, float(score), bool(ok)))
        if ok:
            n_acc += 1
            if score > best_score:
                best_i, best_model, best_score = i, model, float(score)
        if rng.random() < budget.gamma:
            break
    return best_i, best_model, best_score, t, n_acc, tuple(trace)


def loglik_clip_interval(noise_std: float, response_bound: float) -> tuple[float, float]:
    """(C, R) of eqs. 32-33: C - R = L_min (mean off by 2 R_y) and C + R = L_max (perfect mean)."""
    s = v.positive("noise_std", noise_std)
    Ry = v.positive("response_bound", response_bound)
    R = Ry * Ry / (s * s)
    return -0.5 * math.log(2.0 * math.pi) - math.log(s) - R, R


def private_mean_score(values, centre: float, radius: float, rho: float, rng, *, scale: float = 1.0) -> tuple[float, bool]:
    """|V| x COINPRESS mean of the values clipped to [C - R, C + R] (rho-zCDP), and whether the
    estimate lies in the interval (Alg. 2's acceptance test, on the mean)."""
    x = np.clip(np.asarray(values, dtype=float), centre - radius, centre + radius)
    est = coinpress_mean(x, centre, radius, paper_schedule(rho, COINPRESS_STEPS, COINPRESS_LAST_FRACTION), rng,
                         scale=scale).estimate
    ok = centre - radius <= est <= centre + radius
    return x.shape[0] * est, bool(ok)


# ------------------------------------------------------------------------------------------------
# Sparse-GP hyperparameters (Alg. 2)
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GpCandidate:
    """One hyperparameter setting: lengthscale and observation noise std sigma."""

    lengthscale: float
    noise_std: float

    def __post_init__(self):
        object.__setattr__(self, "lengthscale", v.positive("lengthscale", self.lengthscale))
        object.__setattr__(self, "noise_std", v.positive("noise_std", self.noise_std))


def _candidates(candidates) -> tuple[GpCandidate, ...]:
    out = []
    for c in candidates:
        if isinstance(c, GpCandidate):
            out.append(c)
        else:
            try:
                ell, s = c
            except (TypeError, ValueError):
                raise InvalidParameterError("candidates", "(lengthscale, noise_std) pairs or GpCandidate", c) from None
            out.append(GpCandidate(ell, s))
    if not out:
        raise InvalidParameterError("candidates", "at least one candidate", [])
    return tuple(out)


def select_sparse_gp(X, y, candidates: Sequence, *, inducing_points, response_bound: float, epsilon_total: float,
                     delta_total: float, gamma: float = 0.01, split: TrainValidationSplit | float = 0.5,
                     rng: np.random.Generator | None = None, kernel: str = "squared_exponential",
                     keep_trace: bool = False, noise: str = DISCRETE_GAUSSIAN, **spec_options) -> SelectionResult:
    """Alg. 2 (DP-GP-HYPERPARAMETER-LEARNING): (epsilon_total, delta_total)-DP choice of (lengthscale,
    sigma) among ``candidates`` and the DP sparse GP fitted with it. ``split``: a
    :class:`TrainValidationSplit` or the validation fraction of a random one (paper: 0.5).
    ``spec_options`` go to :func:`~privgp.mechanisms.sparse_gp.sparse_gp_spec` (noise_ratio,
    kernel_bound, rho, correction, signal_variance). All checks and calibrations run before any
    private value is touched. ``noise``: each run's statistics get exact discrete noise on lattices (the default; red
    team 21b: the float noise of the model's statistics leaked) or the paper's float noise ("float": reproductions)."""
    rng = np.random.default_rng() if rng is None else v.generator("rng", rng)
    cands = _candidates(candidates)
    budget = liu_talwar_budget(epsilon_total, delta_total, gamma)
    X = v.points("X", X)
    y = v.responses("y", y, X.shape[0])
    if not isinstance(split, TrainValidationSplit):
        split = TrainValidationSplit.random(X.shape[0], split, rng)
    elif split.n != X.shape[0]:
        raise InvalidParameterError("split", f"a split of the {X.shape[0]} rows of X", split.n)
    rho_cp = zcdp_rho_for(budget.epsilon, budget.delta)
    specs = {ell: sparse_gp_spec(inducing_points, response_bound=response_bound, kernel=kernel, lengthscale=ell,
                                 **spec_options) for ell in dict.fromkeys(c.lengthscale for c in cands)}
    exact = check_noise(noise) == DISCRETE_GAUSSIAN
    if exact:
        lattices = {ell: lattice_noise(s, epsilon=budget.epsilon, delta=budget.delta) for ell, s in specs.items()}
    else:
        for s in specs.values():
            check_float_inducing(s)   # the paper's float noise: one inducing point leaks (red team 20f)
        noises = {ell: calibrate_noise(s.sensitivity(), budget.epsilon, budget.delta, s.noise_ratio)
                  for ell, s in specs.items()}
    intervals = [loglik_clip_interval(c.noise_std, response_bound) for c in cands]
    # private data from here on
    X1, y1 = X[split.train], y[split.train]
    X2 = X[split.validation]
    y2 = np.clip(y[split.validation], -response_bound, response_bound)
    if exact:
        integer_stats = {ell: lattice_inputs(X1, y1, s, lattices[ell]) for ell, s in specs.items()}
    else:
        float_stats = {ell: sufficient_statistics(X1, y1, s) for ell, s in specs.items()}

    def run(i, g):
        c = cands[i]
        if exact:
            rel = lattice_release(integer_stats[c.lengthscale], specs[c.lengthscale], lattices[c.lengthscale], g,
                                  epsilon=budget.epsilon, delta=budget.delta, noise_std=c.noise_std)
        else:
            rel = release_from_statistics(float_stats[c.lengthscale], specs[c.lengthscale], noises[c.lengthscale],
                                          specs[c.lengthscale].sensitivity(), g, noise_std=c.noise_std)
        vals = rel.posterior.log_likelihood_points(X2, y2, c.noise_std ** 2)
        C, R = intervals[i]
        score, ok = private_mean_score(vals, C, R, rho_cp, g)
        return rel, score, ok

    i, model, score, draws, n_acc, trace = random_stopping(run, len(cands), budget, rng, keep_trace=keep_trace)
    return SelectionResult(i, None if i is None else cands[i], model, score, draws, n_acc, budget, split, trace)


# ------------------------------------------------------------------------------------------------
# Seed 000: the lengthscale of a posterior-sample release
# ------------------------------------------------------------------------------------------------

def _path_at(released, X) -> np.ndarray:
    """The released grid path at the points X (linear interpolation: post-processing of the path)."""
    from scipy.interpolate import RegularGridInterpolator

    path = released.paths[0]
    if len(released.axes) == 1:
        return np.interp(X[:, 0], released.axes[0], path)
    # the points lie in the box the grid spans; snapped to a lattice computed apart from the grid axes (e.g. in a
    # projected CRS, whose box corners are not round) they can lie outside it by rounding: clipped onto it
    lo, hi = np.array([a[0] for a in released.axes]), np.array([a[-1] for a in released.axes])
    return RegularGridInterpolator(released.axes, path, method="linear")(np.clip(X, lo, hi))


@dataclass(frozen=True, eq=False)
class LengthscaleSelectionPlan:
    """A release plan (the protocol of :mod:`privgp.mechanisms.release`) for a seed-000 posterior
    sample path whose lengthscale is chosen privately by Alg. 2 on a held-out split: ``release(plan,
    data, ledger, rng)`` checks the data, charges the ledger one :class:`SelectionEvent` and returns
    the :class:`SelectionResult` (the chosen path in ``model``, or none accepted).

    ``plans[i]``: the posterior-sample plan of candidate i for the n_train training rows, calibrated
    (smallest r) to the per-run (epsilon, delta) of the budget. The split is drawn in :meth:`draw`
    from the release's rng, independently of the data values."""

    n: int
    domain: Any
    response_map: Any
    lengthscales: tuple[float, ...]
    validation_fraction: float
    budget: SelectionBudget
    plans: tuple
    certificate: Any
    mechanism: str = "posterior-sample, private lengthscale selection"

    @property
    def event(self) -> SelectionEvent:
        return self.budget.event

    def unpublishable(self) -> str | None:
        """Why its release would not hold the certificate as computed: a candidate's (red team 21c: unsnapped
        posterior samplers leak through their float addition), or None."""
        return next((why for p in self.plans if (why := p.unpublishable()) is not None), None)

    def check_verifiable(self) -> None:
        """``privgp verify``: a selection whose candidates' sampler leaks: NOT VERIFIED."""
        for p in self.plans:
            p.check_verifiable()

    @property
    def n_train(self) -> int:
        return self.plans[0].n

    @property
    def grid(self) -> Any:
        """The public grid every candidate's path is released on (one grid for all)."""
        return self.plans[0].grid

    def check(self, X, z):
        """Every check that can fail, before any charge: each candidate's checks (domain, responses,
        sampler feasibility and memory) run on all n rows, which bounds those of any training subset
        (a subset occupies no more inputs). Returns the inputs as the samplers use them (snapped when
        the candidates snap: a public per-record map, the same for every candidate) and y in [-1, 1]."""
        from dataclasses import replace

        from .posterior_release import check_data

        out = [check_data(replace(p, n=self.n), X, z) for p in self.plans]
        return out[0]

    def draw(self, X, y, rng: np.random.Generator, *, keep_trace: bool = False) -> SelectionResult:
        from .posterior_release import draw_paths

        rng = v.generator("rng", rng)
        split = TrainValidationSplit.random(self.n, self.validation_fraction, rng)
        return _select_paths(self, X, y, split, rng, keep_trace, draw_paths)

    def describe(self) -> str:
        return (f"posterior sample, lengthscale chosen privately among {list(self.lengthscales)} (Alg. 2, gamma "
                f"{self.budget.gamma:g}, at most {self.budget.max_draws} runs): n={self.n}, domain {self.domain.describe()}")

    def public_settings(self) -> dict:
        p0 = self.plans[0]
        return {"n": self.n, "n_train": self.n_train, "domain": self.domain.to_dict(),
                "response_map": self.response_map.to_dict(), "lengthscales": list(self.lengthscales),
                "validation_fraction": self.validation_fraction, "selection": self.budget.to_dict(),
                "kernel": p0.kernel, "sigma": p0.sigma, "grid": list(p0.grid), "sensitivity": p0.sensitivity,
                "constants": p0.constants, "conversion": p0.conversion, "snap": p0.snap,
                "r_per_candidate": [p.r for p in self.plans],
                "score": "COINPRESS mean of -(y - f(x))^2 clipped to [-4, 0] on the validation rows"}


def plan_lengthscale_selection(n: int, domain, response_map, lengthscales: Sequence[float], *, epsilon_total: float,
                               delta_total: float | None = None, gamma: float = 0.01, validation_fraction: float = 0.5,
                               **plan_options) -> LengthscaleSelectionPlan:
    """Fix the public settings of a privately tuned posterior-sample release (see
    :class:`LengthscaleSelectionPlan`); ``delta_total`` defaults to ``default_delta(n)`` = min(1e-6, 1/(10 n)). ``plan_options`` go to
    :func:`~privgp.mechanisms.posterior_release.plan_posterior_sample` (kernel, sigma, grid, snap, ...)."""
    from ..accounting import certify
    from .posterior_release import plan_posterior_sample
    from .release import default_delta

    n = v.integer("n", n, minimum=4)
    ells = tuple(v.positive("lengthscale", ell) for ell in lengthscales)
    if not ells:
        raise InvalidParameterError("lengthscales", "at least one candidate", [])
    f = v.open_interval("validation_fraction", validation_fraction, 0.0, 1.0)
    n_val = int(round(f * n))
    if not 1 <= n_val <= n - 2:
        raise InvalidParameterError("validation_fraction", f"leaving both parts non-empty for n = {n}", f)
    delta_total = default_delta(n) if delta_total is None else delta_total
    budget = liu_talwar_budget(epsilon_total, delta_total, gamma)
    plans = tuple(plan_posterior_sample(n - n_val, domain, response_map, lengthscale=ell, target_epsilon=budget.epsilon,
                                        delta=budget.delta, L=1, **plan_options) for ell in ells)
    cert = certify(budget.event, delta=budget.delta_total, mechanism="posterior sample with a privately selected "
                   "lengthscale (seed 000 + seed 001, Alg. 2)", public={"lengthscales": list(ells)})
    return LengthscaleSelectionPlan(n, domain, response_map, ells, f, budget, plans, cert)


def _select_paths(plan: LengthscaleSelectionPlan, X, y, split, rng, keep_trace, draw_paths) -> SelectionResult:
    rho_cp = zcdp_rho_for(plan.budget.epsilon, plan.budget.delta)
    X1, y1 = X[split.train], y[split.train]
    X2, y2 = X[split.validation], y[split.validation]

    def run(i, g):
        released = draw_paths(plan.plans[i], X1, y1, g)
        vals = -(y2 - _path_at(released, X2)) ** 2
        score, ok = private_mean_score(vals, -2.0, 2.0, rho_cp, g)
        return (plan.plans[i], released), score, ok

    ells = plan.lengthscales
    i, model, score, draws, n_acc, trace = random_stopping(run, len(ells), plan.budget, rng, keep_trace=keep_trace)
    return SelectionResult(i, None if i is None else ells[i], model, score, draws, n_acc, plan.budget, split, trace)


def select_posterior_sample_lengthscale(X, z, lengthscales: Sequence[float], *, domain, response_map,
                                        epsilon_total: float, delta_total: float | None = None, gamma: float = 0.01,
                                        validation_fraction: float = 0.5, rng: np.random.Generator | None = None,
                                        keep_trace: bool = False, **plan_options) -> SelectionResult:
    """Choose the lengthscale of a seed-000 posterior-sample release privately, without a ledger (for
    experiments; a release to publish goes through ``release(plan_lengthscale_selection(...), data,
    ledger, rng)``). Each run releases one exact posterior path of the training rows on the public
    grid, calibrated (smallest r) to the per-run (epsilon, delta) of the selection budget, and scores
    it on the validation rows by COINPRESS of the per-point squared errors -(y_j - f(x_j))^2 clipped
    to [-4, 0] (y in [-1, 1]; f interpolated on the grid: post-processing of the path). The chosen
    path is the release: (epsilon_total, delta_total)-DP for all n records."""
    rng = np.random.default_rng() if rng is None else v.generator("rng", rng)
    X = v.points("coordinates", X)
    plan = plan_lengthscale_selection(X.shape[0], domain, response_map, lengthscales, epsilon_total=epsilon_total,
                                      delta_total=delta_total, gamma=gamma, validation_fraction=validation_fraction,
                                      **plan_options)
    X, y = plan.check(X, z)
    return plan.draw(X, y, rng, keep_trace=keep_trace)
