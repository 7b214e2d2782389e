"""Private Thompson sampling: every round is a certified release of one exact posterior path.

Seed 000 (sec. 1) motivates the privacy of posterior sampling with Thompson sampling: a round draws
one path from the GP posterior of the records collected so far and queries its maximiser. Here the
records are private (a patient's response to a dose, a sensor's reading) and each round's path is
an exact draw released under seed 000's guarantee; the query (its argmax) is post-processing.

The loop (:func:`run_thompson`), for rounds t = 1..T over public candidates C (a grid over a public
box, or a finite public set):

1. draw one exact path f_t ~ GP(mu_{D_t}, sigma^2 k_{D_t}) (+ GP(0, eta_t^2 k) noise, Prop. 2) on C,
   where D_t = ((x_1, y_1), ..., (x_{t-1}, y_{t-1})) has n_t = t - 1 records (round 1: the prior);
2. release x_t = argmax_{c in C} f_t(c);
3. observe the private record y_t = clip(objective(x_t), -M_Y, M_Y).

Accounting (:func:`plan_thompson`). Round t >= 2 is a :class:`~privgp.accounting.PosteriorSampleEvent`
with n = t - 1 (seed 000, Thm 3.1 / Prop. 2, App. B; ridge r_t, GP noise eta_t), and the rounds compose
adaptively: RDP curves add (Mironov 2017, Prop. 1; seed 000, eq. (3) and the remark after it on
adaptive releases). Why this covers the run: the private input is the source of responses (the
response that round s would observe, for each s); neighbouring sources differ in the response of
one round. Given the released history x_1..x_{t-1}, the record sets of round t under two
neighbouring sources have the same inputs and the same size t - 1 and are equal (the differing
round has not been collected yet) or differ in one record -- replace-one neighbours of size t - 1,
covered by the round's event. Round 1 draws from the prior: it uses no record, costs nothing, and
is left out of the composition (n = 0 is not an event). The last record y_T enters no release.

Calibration: one scalar s is calibrated with :func:`privgp.accounting.calibrate` so that the
composition of all planned rounds meets the total (epsilon, delta); round t uses r_t = s m_t
(``knob="r"``) or eta_t = s m_t (``knob="eta"``, r fixed) with public multipliers m_t from the
schedule: ``"equal"`` (m_t = 1: the same noise every round; per-round costs are then equal up to the
n-dependence of the bound, see :attr:`ThompsonPlan.round_epsilon`), ``"early"`` (more noise early:
m_t decays geometrically from ``early_factor`` at the first data round to 1 at the last), or an
explicit sequence. Every value is fixed before the run, from public quantities only.
"""
from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..accounting import accountant
from ..accounting.calibrate import calibrate
from ..accounting.certificate import PrivacyCertificate, certify
from ..accounting.composed_batch import ComposedBatch
from ..accounting.events import ComposedEvent
from ..accounting.sensitivity import choose_lemma
from ..errors import InfeasibleTargetError, InvalidParameterError, NumericalError
from ..jsonable import as_written
from ..mechanisms.posterior_release import DEFAULT_MEMORY_LIMIT
from ..mechanisms.posterior_sample import posterior_sample_batch, posterior_sample_event
from ..mechanisms.release import default_delta
from ..models.domain import Box, mesh_points
from ..models.gp.posterior import ExactPosterior
from ..models.kernels import Kernel, make_kernel
from ..models.sampling import exact_paths, plan_sampler, sample_joint
from .thompson_options import KNOBS, MAX_ROUNDS, PLAN_BYTES_PER_ROUND2, SCHEDULES

if TYPE_CHECKING:
    import pandas as pd

    from ..ledger import Ledger

MECHANISM = ("Thompson sampling: round t releases one exact GP posterior path on the public candidates of the "
             "t-1 records collected so far (seed 000, eq. (1), (5); Thm 3.1 / Prop. 2) and queries its argmax; "
             "rounds compose adaptively (RDP, Mironov 2017, Prop. 1; seed 000, eq. (3))")


#: peak bytes per grid point and axis while a grid's points are built (the mesh and the stacked points)
GRID_BYTES_PER_COORDINATE = 16


def grid_bytes(sizes: Sequence[int]) -> int:
    """Estimated peak bytes of building the points of a regular grid with ``sizes`` points per axis."""
    return GRID_BYTES_PER_COORDINATE * math.prod(int(s) for s in sizes) * len(sizes)


def check_grid_memory(sizes: Sequence[int], memory_limit: float) -> None:
    """Refuse (InvalidParameterError naming ``grid`` and the estimate) a grid too large for ``memory_limit``."""
    m = math.prod(int(s) for s in sizes)
    v.check_memory(f"{' x '.join(map(str, sizes))} = {m:.3g} candidate points", grid_bytes(sizes), memory_limit,
                   "use fewer grid points per axis", param="grid",
                   value=f"{sizes[0] if len(set(sizes)) == 1 else sizes} per axis")


# -- the public domain --------------------------------------------------------------------------------------------

#: the points of each grid of candidates, built on first use (:attr:`Candidates.points`)
_MESHES: weakref.WeakKeyDictionary[Any, np.ndarray] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, eq=False)
class Candidates:
    """The public points a round may query: a regular grid over a box, or a finite set of points.

    ``box`` is the public domain used for the kernel facts (kappa = inf k over the box, Prop. 3); it
    contains every candidate. A finite set without a box uses its bounding box (a public function of
    public points; any box containing the candidates gives a valid, possibly looser, kappa). A grid's points
    are built on first use (:attr:`points`), after a plan has checked what its sampler needs (a grid of 400^3
    points took 3 GB before a plan could refuse it)."""

    given: np.ndarray | None                   # (m, d) a finite set's points; None for a grid
    box: Box
    axes: tuple[np.ndarray, ...] | None = None  # regular grid: points = mesh of axes in 'ij' order

    def __post_init__(self):
        # immutable: a plan's sensitivity holds for these points (in its box); no edit after planning
        if (self.given is None) == (self.axes is None):
            raise InvalidParameterError("candidates", "either points or the axes of a grid", "both or neither")
        if self.given is not None:
            object.__setattr__(self, "given", v.immutable_copy(self.given))
        if self.axes is not None:
            object.__setattr__(self, "axes", tuple(v.immutable_copy(a) for a in self.axes))

    @property
    def points(self) -> np.ndarray:
        """The (m, d) candidate points (a grid's are built once, on first use)."""
        if self.given is not None:
            return self.given
        built = _MESHES.get(self)
        if built is None:   # kept aside, not as an attribute: a plan's candidates keep the attributes planned
            built = _MESHES[self] = v.immutable_copy(mesh_points(self.axes or ()))
        return built

    def head(self, k: int) -> np.ndarray:
        """The first ``k`` candidate points (of a grid: without building the others)."""
        if self.axes is None or self in _MESHES:
            return self.points[:k]
        idx = np.unravel_index(np.arange(min(k, self.m)), tuple(a.shape[0] for a in self.axes))
        return np.column_stack([a[i] for a, i in zip(self.axes, idx)])

    @classmethod
    def grid(cls, box: Box, size: int | Sequence[int], *, memory_limit: float = DEFAULT_MEMORY_LIMIT) -> Candidates:
        """A regular grid over ``box`` with ``size`` points per axis (int or one per axis), corners included;
        refused (before anything is allocated) when its points would need more than ``memory_limit`` bytes."""
        if not isinstance(box, Box):
            raise InvalidParameterError("box", "a privgp.models.domain.Box", type(box).__name__)
        given = tuple(size) if isinstance(size, (Sequence, np.ndarray)) else (size,) * box.dim
        if len(given) != box.dim:
            raise InvalidParameterError("grid", f"{box.dim} sizes (one per axis)", given)
        sizes = tuple(v.integer("grid size", s, minimum=2) for s in given)
        check_grid_memory(sizes, v.positive("memory_limit", memory_limit))
        return cls(None, box, box.grid_axes(sizes))

    @classmethod
    def finite(cls, points: ArrayLike, box: Box | None = None) -> Candidates:
        """A finite set of public points ((m, d), or (m,) in 1-D); duplicates are dropped (first kept)."""
        P = v.finite_array("candidates", points, ndim=(1, 2), allow_empty=True)
        if P.ndim == 1:
            P = P[:, None]
        if P.shape[0] == 0:
            raise InvalidParameterError("candidates", "at least one point (the public domain is empty)", "no points")
        _, first = np.unique(P, axis=0, return_index=True)
        P = P[np.sort(first)]
        if P.shape[0] < 2:
            raise InvalidParameterError("candidates", "at least 2 distinct points (one point leaves nothing to "
                                        "optimise)", P.shape[0])
        if box is None:
            lo, hi = P.min(axis=0), P.max(axis=0)
            pad = np.where(hi > lo, 0.0, 0.5 * max(float(np.max(hi - lo)), 1.0))  # a flat side: widen it
            box = Box(tuple(lo - pad), tuple(hi + pad))
        elif not isinstance(box, Box):
            raise InvalidParameterError("box", "a privgp.models.domain.Box", type(box).__name__)
        box.check_contains("candidates", P)
        return cls(P, box, None)

    @property
    def m(self) -> int:
        return math.prod(a.shape[0] for a in self.axes) if self.axes is not None else int(self.points.shape[0])

    @property
    def dim(self) -> int:
        return len(self.axes) if self.axes is not None else int(self.points.shape[1])

    def describe(self) -> str:
        if self.axes is not None:
            return f"grid {' x '.join(str(a.shape[0]) for a in self.axes)} over {self.box.describe()}"
        return f"{self.m} public points in {self.box.describe()}"

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"kind": "grid" if self.axes is not None else "finite", "m": self.m,
                               "dim": self.dim, "box": self.box.to_dict()}
        if self.axes is not None:
            out["grid"] = [int(a.shape[0]) for a in self.axes]
        return out


# -- the plan: every public quantity, the events and the certificate ---------------------------------------------

def schedule_multipliers(schedule: str | ArrayLike, data_rounds: int, early_factor: float = 2.0) -> np.ndarray:
    """Public per-round multipliers m_2..m_T of the calibrated noise scale (see the module docstring)."""
    K = v.integer("data rounds", data_rounds, minimum=1)
    if isinstance(schedule, str):
        if schedule == "equal":
            return np.ones(K)
        if schedule == "early":
            f = v.greater_than("early_factor", early_factor, 1.0) if early_factor != 1.0 else 1.0
            return f ** (np.arange(K - 1, -1, -1) / max(K - 1, 1))
        raise InvalidParameterError("schedule", f"one of {SCHEDULES} or a sequence of {K} positive multipliers",
                                    schedule)
    m = v.finite_array("schedule", schedule, ndim=1)
    if m.shape[0] != K or np.any(m <= 0):
        raise InvalidParameterError("schedule", f"{K} positive multipliers (one per round with data)",
                                    f"{m.shape[0]} values, min {m.min():g}")
    return m.astype(float)


@dataclass(frozen=True, eq=False)
class ThompsonPlan:
    """Every public setting of a Thompson-sampling run, fixed before any record is collected, with
    the run's privacy event and certificate (for all ``rounds`` planned rounds).

    Per data round j = 0..T-2 (round t = j + 2, n_t = t - 1 records): ``r[j]``, ``eta[j]``, the
    round's own certified epsilon ``round_epsilon[j]`` at ``delta`` and ``cumulative_epsilon[j]``,
    the certified epsilon of rounds 2..t composed (what has been spent after round t)."""

    candidates: Candidates
    kernel: str
    lengthscale: float | None
    sigma: float
    M_Y: float
    rounds: int
    delta: float
    knob: str
    schedule: str
    multipliers: np.ndarray
    r: np.ndarray
    eta: np.ndarray
    sensitivity: str
    conversion: str
    target_epsilon: float | None
    event: ComposedEvent
    certificate: PrivacyCertificate
    round_epsilon: np.ndarray
    cumulative_epsilon: np.ndarray
    calibration: dict | None = None
    sampler: str = ""
    sampler_bytes: int = 0

    @property
    def epsilon(self) -> float:
        return float(self.certificate.epsilon)

    @property
    def n(self) -> np.ndarray:
        """Records used by each data round: 1..T-1."""
        return np.arange(1, self.rounds)

    @property
    def recommendation_radius(self) -> float:
        """A quarter of the kernel lengthscale (0 without one): the radius of :meth:`ThompsonResult.recommendation`."""
        return 0.25 * self.lengthscale if self.lengthscale is not None else 0.0

    def kernel_object(self) -> Kernel:
        return make_kernel(self.kernel, self.lengthscale)

    def public_settings(self) -> dict:
        return {"candidates": self.candidates.to_dict(), "kernel": self.kernel, "lengthscale": self.lengthscale,
                "sigma": self.sigma, "M_Y": self.M_Y, "rounds": self.rounds, "delta": self.delta,
                "knob": self.knob, "schedule": self.schedule,
                "r": _range(self.r), "eta": _range(self.eta), "sensitivity": self.sensitivity,
                "conversion": self.conversion, "target_epsilon": self.target_epsilon, "sampler": self.sampler,
                "hyperparameters": "calibrated " + self.knob if self.calibration else "given"}

    def describe(self) -> str:
        """One public line (for the ledger)."""
        return (f"Thompson sampling: {self.rounds} rounds on {self.candidates.describe()}, {self.kernel} kernel"
                + (f" (lengthscale {self.lengthscale:.4g})" if self.lengthscale is not None else "")
                + f", sigma={self.sigma:.4g}, r {_range(self.r)}, eta {_range(self.eta)}, schedule {self.schedule}")


def _range(a: np.ndarray) -> str:
    lo, hi = float(np.min(a)), float(np.max(a))
    return f"{lo:.4g}" if math.isclose(lo, hi, rel_tol=1e-12) else f"{lo:.4g}..{hi:.4g}"


def _assumptions(plan_like: dict) -> tuple[str, ...]:
    T, M_Y, box = plan_like["rounds"], plan_like["M_Y"], plan_like["box"]
    return (
        f"records: the run collects one record (x_t, y_t) per round t = 1..{T}; the query x_t is the argmax over "
        "the public candidates of the path released in round t, so the query points are themselves released "
        "(post-processing); the private part of a record is its response y_t",
        f"responses are clipped to |y_t| <= M_Y = {M_Y:g} before they are used",
        "neighbouring relation: replace-one among the records collected -- two response sources that differ only "
        "in the response of one round s (any value in [-M_Y, M_Y]); the candidates, the objective's other "
        "rounds and every public setting are the same",
        "adaptivity: given the released history x_1..x_{t-1}, the record sets of round t under neighbouring "
        "sources have the same t-1 inputs and are equal (t <= s) or differ in one record (t > s), so round t is "
        "covered by its posterior-sample event with n = t-1; the rounds compose adaptively (RDP adds, Mironov "
        "2017, Prop. 1; seed 000, eq. (3) and its remark on adaptive releases)",
        "round 1 draws from the prior (no record): it is data-independent, costs nothing and is not part of "
        "the composed event; the last record y_T enters no release",
        "the number of rounds and the per-round r_t, eta_t are fixed before the run from public quantities; a run "
        "that stops early releases a prefix of the planned rounds (the stopping round is covered only if the "
        "failure does not depend on private responses)",
        f"kappa is computed over the public box {box.describe()}, which contains every candidate",
    )


def _certificate(event: ComposedEvent, delta: float, conversion: str, candidates: Candidates, kernel: str,
                 lengthscale: float | None, sigma: float, T: int, r: np.ndarray, eta: np.ndarray, schedule: str,
                 M_Y: float) -> PrivacyCertificate:
    """The certificate of a planned run (all T rounds) from its public settings."""
    return certify(event, delta, conversion=conversion, mechanism=MECHANISM,
                   public={"candidates": candidates.describe(), "kernel": kernel, "lengthscale": lengthscale,
                           "sigma": sigma, "rounds": T, "data rounds": f"{T - 1} (n = 1..{T - 1})",
                           "r": _range(r), "eta": _range(eta), "schedule": schedule, "M_Y": M_Y},
                   extra_assumptions=_assumptions({"rounds": T, "M_Y": M_Y, "box": candidates.box}))


def _rebuilt(plan: ThompsonPlan) -> tuple[ComposedEvent, PrivacyCertificate]:
    """The event and certificate of ``plan`` computed again from its fields (what :func:`optimize` charges)."""
    opts = dict(kernel=plan.kernel, lengthscale=plan.lengthscale, domain=plan.candidates.box, M_Y=plan.M_Y,
                sensitivity=plan.sensitivity)
    event = _events(plan.n, plan.r, plan.eta, plan.sigma, opts)
    return event, _certificate(event, plan.delta, plan.conversion, plan.candidates, plan.kernel, plan.lengthscale,
                               plan.sigma, plan.rounds, plan.r, plan.eta, plan.schedule, plan.M_Y)


def _events(n: np.ndarray, r: np.ndarray, eta: np.ndarray, sigma: float, opts: dict[str, Any]) -> ComposedEvent:
    return ComposedEvent.of([posterior_sample_event(int(k), float(rk), sigma, eta=float(ek), **opts)
                             for k, rk, ek in zip(n, r, eta)])


def _batch(n, r, eta, sigma, opts):
    return posterior_sample_batch(n, r, sigma, eta=eta, **opts)


def sampler_for(candidates: Candidates, kernel: Kernel, rounds: int) -> tuple[str, int]:
    """Which exact sampler the largest round will use and how much memory it needs: (sampler, estimated
    peak bytes) of the largest round (``rounds`` - 1 distinct queries), from public
    settings only: the exact sampler :func:`_draw` uses and :func:`privgp.models.sampling.plan_sampler`'s estimate."""
    c = candidates
    k = max(1, min(rounds - 1, c.m))
    if c.axes is not None:
        sp = plan_sampler(kernel, c.head(k), c.axes, L=1)
        return sp.method, int(sp.bytes)
    if c.dim == 1 and kernel.name == "exponential":
        sp = plan_sampler(kernel, c.points[:k], (np.sort(c.points[:, 0]),), L=1, method="exp1d")
        return sp.method, int(sp.bytes)
    m = c.m  # sample_joint on the candidates: the m x m covariance, its factor, cross-covariances
    return "dense", int(8 * (3 * m * m + 3 * k * m + 2 * k * k))


def plan_thompson(candidates: Candidates, *, rounds: int, epsilon: float | None = None, delta: float | None = None,
                  kernel: str = "exponential", lengthscale: float | None = None, sigma: float = 1.0,
                  M_Y: float = 1.0, knob: str = "r", r: float | None = None, eta: float | None = None,
                  schedule: str | ArrayLike = "equal", early_factor: float = 2.0, sensitivity: str = "auto",
                  conversion: str = "improved", r_bounds: tuple[float, float] = (1e-2, 1e4), eta_max: float = 1e4,
                  memory_limit: float = DEFAULT_MEMORY_LIMIT) -> ThompsonPlan:
    """Plan a private Thompson-sampling run (its public settings and certificate) before any data is seen.

    With ``epsilon`` (the total budget of the run at ``delta``; default delta = min(1e-6, 1/(10 T)), T records,
    as :func:`privgp.mechanisms.release.default_delta`): the scale of the ``knob`` is calibrated with
    :func:`privgp.accounting.calibrate` so that the composition of the T - 1 data rounds meets the
    budget (``knob="r"``: r_t = s m_t, eta fixed (default 0); ``knob="eta"``: eta_t = s m_t, r fixed and
    required). Without ``epsilon``: r (and eta, default 0) are used as given in every round and the
    certificate states what the run costs (e.g. a non-private baseline with the model's own r).
    InfeasibleTargetError when no value in range meets the budget. Only public inputs enter.
    """
    if not isinstance(candidates, Candidates):
        raise InvalidParameterError("candidates", "a privgp.tasks.thompson.Candidates", type(candidates).__name__)
    T = v.integer("rounds", rounds, minimum=2)
    if T > MAX_ROUNDS:
        raise InvalidParameterError("rounds", f"at most {MAX_ROUNDS} (planning composes every prefix of the rounds and "
                                    "each round conditions on all earlier records; split a longer campaign into runs)",
                                    T)
    sigma = v.positive("sigma", sigma)
    M_Y = v.positive("M_Y", M_Y)
    if knob not in KNOBS:
        raise InvalidParameterError("knob", f"one of {KNOBS}", knob)
    delta = default_delta(T) if delta is None else v.probability("delta", delta)
    kern = make_kernel(kernel, lengthscale if kernel not in ("constant", "diagonal") else None)
    ell = getattr(kern, "lengthscale", None)
    sens = choose_lemma(sensitivity, kern.name, candidates.dim)
    memory_limit = v.positive("memory_limit", memory_limit)
    plan_bytes = PLAN_BYTES_PER_ROUND2 * float(T - 1) ** 2
    if plan_bytes > memory_limit:
        raise InvalidParameterError(
            "rounds", f"fewer: planning {T} rounds needs an estimated {plan_bytes / 2**30:.3g} GiB, over the limit of "
            f"{memory_limit / 2**30:.3g} GiB (memory_limit / --memory-limit)", T)
    sampler, sampler_bytes = sampler_for(candidates, kern, T)
    if sampler_bytes > memory_limit:
        raise InvalidParameterError(
            "memory", f"at most the limit of {memory_limit / 2**30:.3g} GiB for the {sampler} sampler on "
            f"{candidates.describe()} ({T} rounds); use a coarser grid, fewer candidates, a regular grid "
            "(circulant sampler) or raise the limit (memory_limit / --memory-limit)",
            f"an estimated {sampler_bytes / 2**30:.3g} GiB")
    opts: dict[str, Any] = dict(kernel=kern.name, lengthscale=ell, domain=candidates.box, M_Y=M_Y, sensitivity=sens)
    K = T - 1
    n = np.arange(1, T)
    calibration = None
    if epsilon is None:
        if r is None:
            raise InvalidParameterError("r", "given when no total epsilon is given", None)
        mult = np.ones(K)
        r_arr = np.full(K, v.positive("r", r))
        eta_arr = np.full(K, 0.0 if eta is None else v.nonnegative("eta", eta))
        schedule_name = "fixed"
        event = _events(n, r_arr, eta_arr, sigma, opts)
    else:
        target = v.positive("epsilon", epsilon)
        mult = schedule_multipliers(schedule, K, early_factor)
        schedule_name = schedule if isinstance(schedule, str) else "custom"
        if knob == "r":
            eta0 = 0.0 if eta is None else v.nonnegative("eta", eta)
            if r is not None:
                raise InvalidParameterError("r", "left out when r is calibrated (knob='r'); use knob='eta' to fix r",
                                            r)
            lo, hi = _bounds("r_bounds", r_bounds)

            def setting(s):
                return s * mult, np.full(np.shape(s * mult), eta0)
            bounds = (lo, hi)
        else:
            if r is None:
                raise InvalidParameterError("r", "given when eta is calibrated (knob='eta')", None)
            if eta is not None:
                raise InvalidParameterError("eta", "left out when eta is calibrated (knob='eta')", eta)
            r0 = v.positive("r", r)

            def setting(s):
                return np.full(np.shape(s * mult), r0), s * mult
            bounds = (0.0, v.positive("eta_max", eta_max))

        def make_event(s):
            rr, ee = setting(float(s))
            return _events(n, rr, ee, sigma, opts)

        def make_batch(values):
            s = np.asarray(values, dtype=float)[:, None]
            rr, ee = setting(s)
            return ComposedBatch.of(_batch(n[None, :], rr, ee, sigma, opts))

        def hint(grid, eps):
            return (f": a total budget of ({target:g}, {delta:g}) cannot cover {K} round(s) with data "
                    f"({T} rounds, sigma = {sigma:g}, M_Y = {M_Y:g}); allow a larger epsilon, fewer rounds or a "
                    f"wider range for {knob}")

        try:
            cal = calibrate(make_event, f"{knob} scale", bounds, target, delta, direction="smallest",
                            make_batch=make_batch, conversion=conversion, infeasible_hint=hint)
        except InfeasibleTargetError as exc:
            raise InfeasibleTargetError(f"epsilon: {exc}") from None
        r_arr, eta_arr = (np.asarray(a, dtype=float) for a in setting(float(cal.value)))
        calibrated = cal.event  # the ComposedEvent at the calibrated value, re-checked by calibrate
        assert isinstance(calibrated, ComposedEvent)  # make_event builds one
        event = calibrated
        calibration = {"parameter": f"{knob} scale", "value": float(cal.value), "target_epsilon": target,
                       "target_delta": delta, "epsilon_at_value": cal.epsilon, "rechecked": bool(cal.checked),
                       "rule": f"smallest {knob} scale meeting the total budget for all {K} rounds with data, "
                               "from public quantities only"}
    cert = _certificate(event, delta, conversion, candidates, kern.name, ell, sigma, T, r_arr, eta_arr,
                        schedule_name, M_Y)
    if not (math.isfinite(cert.epsilon) and cert.covered):
        raise InfeasibleTargetError(f"no finite certified epsilon for this run (r {_range(r_arr)}, eta "
                                    f"{_range(eta_arr)}, {K} rounds with data); increase r")
    if epsilon is not None and not cert.epsilon <= epsilon:
        raise NumericalError(f"calibrated run certifies epsilon {cert.epsilon} > budget {epsilon}")
    per_round = _batch(n, r_arr, eta_arr, sigma, opts)
    round_eps = np.asarray(accountant.epsilon(per_round, delta, conversion=conversion).epsilon, dtype=float)
    cumulative = np.asarray(accountant.epsilon(ComposedBatch.of(per_round, np.tril(np.ones((K, K)))), delta,
                                               conversion=conversion).epsilon, dtype=float)
    frozen = v.immutable_copy
    plan = ThompsonPlan(candidates=replace(candidates), kernel=kern.name, lengthscale=ell, sigma=sigma, M_Y=M_Y, rounds=T,
                        delta=delta, knob=knob, schedule=schedule_name, multipliers=frozen(mult), r=frozen(r_arr),
                        eta=frozen(eta_arr), sensitivity=sens, conversion=conversion,
                        target_epsilon=None if epsilon is None else float(epsilon), event=event, certificate=cert,
                        round_epsilon=frozen(round_eps.reshape(K)), cumulative_epsilon=frozen(cumulative.reshape(K)),
                        calibration=calibration, sampler=sampler, sampler_bytes=sampler_bytes)
    _ISSUED_PLANS[plan] = _plan_parts(plan)
    return plan


#: the plans plan_thompson made, with what they were made of: :func:`optimize` charges a plan's stored event, so it
#: runs only a plan that is one of these, unchanged (not a dataclasses.replace copy, no field set again)
_ISSUED_PLANS: weakref.WeakKeyDictionary[ThompsonPlan, tuple] = weakref.WeakKeyDictionary()


def _plan_parts(plan: ThompsonPlan) -> tuple[tuple, tuple, tuple]:
    """The plan's and its candidates' field values, and the names of every attribute either holds."""
    c = plan.candidates
    return (tuple(getattr(plan, f.name) for f in fields(plan)) + tuple(getattr(c, f.name) for f in fields(c)),
            tuple(vars(plan)), tuple(vars(c)))


def _check_issued(plan: ThompsonPlan) -> None:
    parts, now = _ISSUED_PLANS.get(plan), _plan_parts(plan)
    same = (parts is not None and len(parts[0]) == len(now[0]) and all(a is b for a, b in zip(parts[0], now[0]))
            and parts[1:] == now[1:])
    if not same:
        raise InvalidParameterError("plan", "a plan made by plan_thompson and unchanged since (its stored event is "
                                    "what is charged: a copy by dataclasses.replace or a field set again would run "
                                    "other settings than were charged); plan the run again", "a changed plan")


def _bounds(name: str, bounds: tuple[float, float]) -> tuple[float, float]:
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise InvalidParameterError(name, "a pair (lower, upper)", bounds) from None
    if not (0 < lo < hi < math.inf):
        raise InvalidParameterError(name, "0 < lower < upper < inf", bounds)
    return lo, hi


def released_certificate(plan: ThompsonPlan, released_rounds: int) -> tuple[ComposedEvent | None, PrivacyCertificate | None]:
    """The event and certificate of the first ``released_rounds`` rounds of a plan (None when only the
    data-independent round 1, or nothing, was released). The full plan gives the plan's own."""
    k = v.integer("released_rounds", released_rounds, minimum=0) - 1   # data rounds released
    if k <= 0:
        return None, None
    if k >= plan.rounds - 1:
        return plan.event, plan.certificate
    opts = dict(kernel=plan.kernel, lengthscale=plan.lengthscale, domain=plan.candidates.box, M_Y=plan.M_Y,
                sensitivity=plan.sensitivity)
    event = _events(plan.n[:k], plan.r[:k], plan.eta[:k], plan.sigma, opts)
    public = dict(plan.certificate.public)
    public["released rounds"] = f"{k + 1} of {plan.rounds} planned (stopped early)"
    cert = certify(event, plan.delta, conversion=plan.conversion, mechanism=plan.certificate.mechanism,
                   public=public, extra_assumptions=_assumptions({"rounds": plan.rounds, "M_Y": plan.M_Y,
                                                                  "box": plan.candidates.box}))
    return event, cert


# -- the loop ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class ThompsonResult:
    """What a run produced. ``queries``/``indices`` (one per released round) are public; ``responses``
    are the private records (clipped), one per round whose objective call succeeded.

    ``released``: rounds whose path was drawn and argmax released; ``status`` "completed" or
    "stopped" (with ``stop_reason``); ``event``/``certificate``: the guarantee of what was released
    (None when only the prior round was); ``plan.event``/``plan.certificate``: the planned run (what a
    ledger is charged); ``charge``: the ledger charge (set by :func:`optimize`)."""

    plan: ThompsonPlan
    indices: np.ndarray
    queries: np.ndarray
    responses: np.ndarray
    status: str
    stop_reason: str | None
    event: ComposedEvent | None
    certificate: PrivacyCertificate | None
    charge: Any = None
    fingerprint: str | None = None
    #: why the objective gave no response, in its own words (a stopped run): PRIVATE -- an objective's message
    #: may hold private values (a response, a row) -- so it is never written; ``stop_reason`` is the public words
    failure: str | None = None

    @property
    def released(self) -> int:
        return int(self.indices.shape[0])

    @property
    def epsilon(self) -> float:
        """Certified epsilon of what was released (0 when only the prior round was)."""
        return 0.0 if self.certificate is None else float(self.certificate.epsilon)

    def history(self, *, include_responses: bool = False) -> pd.DataFrame:
        """One row per released round: round, n (records used), r, eta, the candidate index and the
        query coordinates (public), the round's own epsilon and the epsilon spent after it; with
        ``include_responses`` also the private clipped response (never publish that column)."""
        k = self.released
        p = self.plan
        rows: dict[str, Any] = {"round": np.arange(1, k + 1), "n": np.arange(k)}
        rows["r"] = np.concatenate([[np.nan], p.r])[:k]
        rows["eta"] = np.concatenate([[np.nan], p.eta])[:k]
        rows["candidate"] = self.indices
        for j in range(p.candidates.dim):
            rows[f"x{j + 1}"] = self.queries[:, j]
        rows["round_epsilon"] = np.concatenate([[0.0], p.round_epsilon])[:k]
        rows["spent_epsilon"] = np.concatenate([[0.0], p.cumulative_epsilon])[:k]
        if include_responses:
            resp = np.full(k, np.nan)
            resp[: self.responses.shape[0]] = self.responses
            rows["response_private"] = resp
        import pandas as pd  # here: pandas is a slow import (`privgp --help`)

        return pd.DataFrame(rows)

    def recommendation(self, radius: float | None = None) -> tuple[int, np.ndarray] | None:
        """The run's recommended candidate (index, point): the densest released query of the second half
        of the released rounds (:func:`recommend_from_queries`, ``radius`` default: lengthscale / 4);
        post-processing of public queries, so it costs nothing. None when nothing was released."""
        if self.released == 0:
            return None
        if radius is None:
            radius = self.plan.recommendation_radius
        i = int(recommend_from_queries(self.indices, self.plan.candidates.points, radius)[-1])
        return i, self.plan.candidates.points[i].copy()

    def summary(self) -> dict:
        """Public facts of the run (no responses)."""
        rec = self.recommendation()
        return {"status": self.status, "stop_reason": self.stop_reason, "rounds_planned": self.plan.rounds,
                "rounds_released": self.released, "records_collected": int(self.responses.shape[0]),
                "epsilon_released": self.epsilon, "epsilon_planned": self.plan.epsilon, "delta": self.plan.delta,
                "last_query": self.queries[-1].tolist() if self.released else None,
                "recommendation": None if rec is None else rec[1].tolist()}


def recommend_from_queries(indices: ArrayLike, points: ArrayLike, radius: float = 0.0) -> np.ndarray:
    """For every t = 1..k, a recommended candidate index from the released queries of rounds
    floor(t/2)+1..t only: the query with the most queries of that window within ``radius`` of it
    (itself included; ties: the earliest); ``radius = 0`` is the most frequent query.

    Post-processing of released queries (no privacy cost). Thompson sampling queries the maximiser of
    a posterior draw, so late queries are draws from the posterior law of the maximiser; this picks the
    densest point of that empirical law (early, prior-like rounds are left out). On fine grids the
    exact mode is mostly ties, hence the radius (:meth:`ThompsonResult.recommendation` uses a quarter
    of the kernel lengthscale, a public choice)."""
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    P = np.asarray(points, dtype=float)
    P = P[:, None] if P.ndim == 1 else P
    radius = v.nonnegative("radius", radius)
    out = np.empty(idx.shape[0], dtype=np.int64)
    for t in range(1, idx.shape[0] + 1):
        W = idx[t // 2: t]
        X = P[W]
        d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=-1)
        out[t - 1] = W[int(np.argmax((d2 <= radius * radius).sum(axis=1)))]
    return out


def _draw(plan: ThompsonPlan, kernel: Kernel, X: np.ndarray, y: np.ndarray, j: int,
          rng: np.random.Generator) -> np.ndarray:
    """One exact path on the candidates (flattened), round with data index j (-1: the prior round)."""
    c = plan.candidates
    r = float(plan.r[max(j, 0)])
    eta = float(plan.eta[max(j, 0)]) if j >= 0 else 0.0
    if c.axes is not None:
        return exact_paths(kernel, X, y, c.axes, r=r, sigma=plan.sigma, rng=rng, eta=eta).reshape(-1)
    if c.dim == 1 and kernel.name == "exponential":  # O(n + m) Markov sampler at arbitrary 1-D points
        return exact_paths(kernel, X, y, (c.points[:, 0],), r=r, sigma=plan.sigma, rng=rng, eta=eta).reshape(-1)
    post = ExactPosterior(kernel, X, y, r, plan.sigma) if X.shape[0] else \
        ExactPosterior.prior(kernel, c.dim, r, plan.sigma)
    return sample_joint(post, c.points, 1, rng, eta=eta)[0]


def _response(objective: Callable[[np.ndarray], Any], x: np.ndarray) -> tuple[float | None, str | None]:
    try:
        val = objective(x.copy())
    except SystemExit as exc:  # user code calling sys.exit(): stop the run cleanly, never end silently
        return None, f"the objective called sys.exit({exc.code!r})"
    except KeyboardInterrupt:  # interrupted inside the objective: the rounds released so far are kept
        return None, "the objective was interrupted (KeyboardInterrupt)"
    except BaseException as exc:  # the objective is user code: any failure stops the run cleanly (a BaseException
        #                             too, e.g. asyncio.CancelledError or GeneratorExit: red team 17e)
        return None, f"the objective raised {type(exc).__name__}: {exc}"
    if isinstance(val, (bool, np.bool_, str, bytes)):   # True read as 1.0, "0.5" as 0.5 (red team 25)
        return None, f"the objective returned {type(val).__name__}, not a number"
    try:   # any failure of the conversion too (10**400 raised OverflowError after the charge: red team 25)
        arr = np.asarray(val, dtype=float)
    except Exception as exc:
        return None, f"the objective returned {type(val).__name__}, not a number ({type(exc).__name__})"
    if arr.size != 1:
        return None, f"the objective returned {arr.size} values, not one number"
    y = float(arr.reshape(()))
    if not math.isfinite(y):
        return None, f"the objective returned a non-finite value ({y})"
    return y, None


def public_stop_reason(round_: int) -> str:
    """The published reason of a run stopped in ``round_``: the same words whatever the objective said (its own
    message, kept in :attr:`ThompsonResult.failure` for the data holder, may hold private values)."""
    return (f"round {round_}: the objective gave no response (its own message is not published: it may hold "
            "private values)")


def run_thompson(plan: ThompsonPlan, objective: Callable[[np.ndarray], float], rng: np.random.Generator, *,
                 on_round: Callable[[int], None] | None = None,
                 first: tuple[int, float] | None = None) -> ThompsonResult:
    """Run private Thompson sampling: in each planned round, query ``objective`` at the candidate chosen
    by a private posterior sample of the records so far (see the module docstring); ``objective(x)``
    gets one candidate (d,) and returns its response (a private record). An objective that raises or returns a non-finite value
    stops the run cleanly: the result holds the rounds released so far and says why it stopped.
    ``rng`` supplies all sampling randomness (``np.random.default_rng()``: fresh OS entropy).
    ``on_round(t)`` is called after each round (e.g. a progress bar)."""
    if not isinstance(plan, ThompsonPlan):
        raise InvalidParameterError("plan", "a ThompsonPlan (from plan_thompson)", type(plan).__name__)
    if not callable(objective):
        raise InvalidParameterError("objective", "a callable x -> response", type(objective).__name__)
    rng = v.generator("rng", rng)
    kernel = plan.kernel_object()
    C = plan.candidates.points
    T, d = plan.rounds, plan.candidates.dim
    idx = np.empty(T, dtype=np.int64)
    X = np.empty((T, d))
    y = np.empty(T)
    status, reason, failure, released = "completed", None, None, 0
    for t in range(T):  # round t + 1 uses the t records collected so far
        val: float | None
        if t == 0 and first is not None:   # round 1 drawn and answered already (:func:`optimize`, before its charge)
            i, val, failure = int(first[0]), float(first[1]), None
        else:
            i = int(np.argmax(_draw(plan, kernel, X[:t], y[:t], t - 1, rng)))
        idx[t], X[t] = i, C[i]
        released = t + 1
        if t > 0 or first is None:
            val, failure = _response(objective, C[i])
        if val is None:  # exactly when a failure is given
            status, reason = "stopped", public_stop_reason(t + 1)
            break
        y[t] = min(max(val, -plan.M_Y), plan.M_Y)
        if on_round is not None:
            on_round(t + 1)
    collected = released if status == "completed" else released - 1
    event, cert = released_certificate(plan, released)
    return ThompsonResult(plan=plan, indices=idx[:released].copy(), queries=X[:released].copy(),
                          responses=y[:collected].copy(), status=status, stop_reason=reason, event=event,
                          certificate=cert, failure=None if failure is None else f"round {released}: {failure}")


def optimize(plan: ThompsonPlan, objective: Callable[[np.ndarray], float], ledger: Ledger, rng: np.random.Generator,
             *, fingerprint: str, budget_epsilon: float | None = None, budget_delta: float | None = None,
             label: str = "", mark_completed: bool = True,
             on_round: Callable[[int], None] | None = None) -> ThompsonResult:
    """Charge the ledger for the whole planned run (one entry: the composed event of every planned
    round), then run it. A run the budget refuses raises BudgetExceededError before the objective is asked
    anything; round 1 (drawn from the prior, no record) is asked before the charge, and an objective that cannot
    answer it is a user error (InvalidParameterError), nothing charged. A run
    that stops early keeps the full charge (an upper bound on what was released): the ledger never
    holds less than was released, even if the objective fails mid-run. ``fingerprint`` keys the
    record source in the ledger (one dataset whose record count grows over the run). ``plan`` must be one that
    :func:`plan_thompson` made, unchanged (its stored event is what is charged)."""
    rng = v.generator("rng", rng)
    if not isinstance(plan, ThompsonPlan):
        raise InvalidParameterError("plan", "a ThompsonPlan (from plan_thompson)", type(plan).__name__)
    if not callable(objective):
        raise InvalidParameterError("objective", "a callable x -> response", type(objective).__name__)
    _check_issued(plan)
    event, cert = _rebuilt(plan)    # what is charged and certified: computed again from the plan's fields
    if as_written(event.to_dict()) != as_written(plan.event.to_dict()) or \
            as_written(cert.to_dict()) != as_written(plan.certificate.to_dict()):
        raise InvalidParameterError("plan", "a plan made by plan_thompson and unchanged since (its event or "
                                    "certificate no longer follows from its settings); plan the run again",
                                    "a changed plan")
    # the run reads a copy of its own: the objective and on_round (user code) cannot set a field of it mid-run
    plan = replace(plan, candidates=replace(plan.candidates), event=event, certificate=cert)
    from ..jsonable import to_jsonable

    charge_args = dict(epsilon=plan.epsilon, delta=plan.delta, budget_epsilon=budget_epsilon, budget_delta=budget_delta,
                       default_budget_delta=default_delta(max(plan.rounds, 2)), description=plan.describe(),
                       settings=to_jsonable(plan.public_settings()), label=label)
    ledger.charge(fingerprint, plan.event, **charge_args, dry_run=True)   # a run the budget refuses asks nothing
    # round 1 is drawn from the prior (no record) and releases nothing private: asked before the charge, an objective
    # that cannot answer at all (a wrong box, a broken lookup) is a user error that costs nothing
    C, d = plan.candidates.points, plan.candidates.dim
    i0 = int(np.argmax(_draw(plan, plan.kernel_object(), np.empty((0, d)), np.empty(0), -1, rng)))
    val0, failure0 = _response(objective, C[i0])
    if val0 is None:
        raise InvalidParameterError("objective", "an objective that answers the first query (drawn from the prior, "
                                    "with no record; nothing was charged or written)", failure0)
    charge = ledger.charge(fingerprint, plan.event, **charge_args)
    result = run_thompson(plan, objective, rng, on_round=on_round, first=(i0, val0))
    if mark_completed:
        ledger.complete(charge.entry_id)
    return ThompsonResult(**{**{f: getattr(result, f) for f in result.__dataclass_fields__},
                             "charge": charge, "fingerprint": charge.fingerprint})


__all__ = ["KNOBS", "MECHANISM", "SCHEDULES", "Candidates", "ThompsonPlan", "ThompsonResult", "optimize",
           "plan_thompson", "recommend_from_queries", "released_certificate", "run_thompson", "sampler_for",
           "schedule_multipliers"]
