"""Privacy events: what the privacy analysis of one mechanism needs, and nothing else.

An event is a small frozen, hashable dataclass, validated once when built, that round-trips through
JSON (:meth:`PrivacyEvent.to_dict` / :func:`event_from_dict`). It holds numbers and names only:
no kernel objects, no data. Mechanisms build events (they compute kernel facts such as kappa from
their kernels and public domains); the accountant (:mod:`privgp.accounting.accountant`) turns
events into guarantees; the ledger stores them.

Each event exposes

* its Renyi-DP curve ``rdp(alpha)`` (vectorised; +inf at orders outside ``1 < alpha < alpha_max``);
* ``approx_dp()``: an additional (epsilon_0, delta_0) part (for mechanisms whose guarantee is only an
  (epsilon, delta) statement, e.g. private selection), composed with the rest through privacy profiles
  when the event is only that part (the accountant's rule "profile"), by basic composition otherwise;
  (0, 0) for pure RDP events;
* ``gdp_mu()``: mu when the event is exactly mu-GDP (Gaussian mechanism), so that the accountant
  can use the exact (epsilon, delta) profile instead of an RDP conversion;
* ``lemmas()``, ``assumptions()``, ``notes()`` and ``details()`` for certificates.

Adding a mechanism is one subclass that defines its ``kind``, its ``neighbouring`` relation, its
fields, ``_params()`` (its numeric parameters) and the vectorised classmethod ``_rdp_arrays(alpha,
**params)``; composition, conversion, calibration, certificates and the ledger need no change.
``_rdp_arrays`` receives arrays that broadcast against alpha, so the same formula serves one event,
a composition of many events of one type (one numpy call per type) and a batch of settings
(:class:`EventBatch`, e.g. 10^5 settings of a hyperparameter grid in one call).

Registration cannot be forgotten: a subclass that names its own ``kind`` registers itself when the
class is defined (:meth:`PrivacyEvent.__init_subclass__`), so importing its module is enough
(:func:`register_event` is kept as a decorator that only checks this). :func:`event_from_dict` meeting a
kind it does not know first imports every module of :mod:`privgp.accounting` and of
:mod:`privgp.mechanisms`, then fails naming the kinds it knows. ``tests/accounting/test_event_contract.py``
round-trips one instance of every event class through JSON, a SQLite ledger and a certificate, and
fails for a class it has no instance of.

Stability contract (ledgers and certificates store events as JSON and are reloaded years later):

* The stored meaning of an event never changes. A ``kind`` names one mechanism analysed by one
  result under one neighbouring relation; its fields keep their names, units and meaning, and JSON
  written by any earlier privgp loads into an event with the same meaning. An accountant that bounds
  the same event more tightly (a better conversion or order search) changes no meaning; a fix of a
  curve that was not a valid bound is a bug fix, stated in the CHANGELOG.
* A new analysis is a new class with a new ``kind``: another theorem or constants, other fields or
  another neighbouring relation never become a flag or a reinterpretation of an existing class.
* The neighbouring relation is typed: every event class states it as the ClassVar ``neighbouring``
  (a :class:`Neighbouring`); it is implied by the kind and never written into the JSON (old ledgers
  load unchanged). Every event class of privgp is :attr:`Neighbouring.REPLACE_ONE` (seeds 000-004
  analyse replace-one neighbours of a public size n). A composition has the relation of its parts,
  and :meth:`ComposedEvent.of` refuses parts of different relations.
"""
from __future__ import annotations

import importlib
import json
import math
import pkgutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..errors import InvalidParameterError, MissingExtraError, NumericalError
from . import gaussian as _gauss

#: every registered event class by its ``kind`` (the "type" key of its JSON form)
EVENT_TYPES: dict[str, type[PrivacyEvent]] = {}


class Neighbouring(Enum):
    """The neighbouring relation an event's guarantee is stated for."""

    #: D and D' have the same size n and differ in one record (replaced)
    REPLACE_ONE = "replace-one"
    #: D' is D with one record added or removed
    ADD_REMOVE = "add/remove"


_E = TypeVar("_E", bound=type["PrivacyEvent"])


def _register(cls: type[PrivacyEvent]) -> None:
    kind = cls.__dict__.get("kind", "")
    if not kind:
        if cls.kind:
            raise TypeError(f"{cls.__name__} inherits the event kind {cls.kind!r} of a registered class: an event "
                            "class names its own kind (a new analysis is a new class; see the stability contract)")
        return   # a base class without a kind (e.g. GaussianCurve): never serialised itself
    if not isinstance(kind, str):
        raise TypeError(f"{cls.__name__}.kind must be a string, not {type(kind).__name__}")
    if not (cls.composite or isinstance(cls.__dict__.get("neighbouring"), Neighbouring)):
        raise TypeError(f"{cls.__name__} must state its neighbouring relation: neighbouring: "
                        "ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE (or ADD_REMOVE)")
    known = EVENT_TYPES.get(kind)
    if known is not None and known.__qualname__ != cls.__qualname__:
        raise TypeError(f"event kind {kind!r} is already registered by {known.__name__}")
    EVENT_TYPES[kind] = cls


def register_event(cls: _E) -> _E:
    """Class decorator kept for compatibility: an event class registers itself when it is defined
    (:meth:`PrivacyEvent.__init_subclass__`); this only checks that ``cls`` is registered under its kind."""
    kind = getattr(cls, "kind", "")
    if not kind or EVENT_TYPES.get(kind) is not cls:
        raise TypeError(f"{getattr(cls, '__name__', cls)!r} is not a PrivacyEvent subclass with its own 'kind'")
    return cls


def _import_event_modules() -> list[str]:
    """Import every module of privgp.accounting and privgp.mechanisms (each event class registers itself
    when its module is imported), then register any privgp subclass defined earlier but missing from
    EVENT_TYPES. Returns "module: error" for the modules that failed to import. (The only reference of
    this layer to a higher one: by name, on the failure path of :func:`event_from_dict`.)"""
    root = __name__.rsplit(".", 2)[0]  # "privgp"
    failed: list[str] = []
    for pkg_name in (f"{root}.accounting", f"{root}.mechanisms"):
        try:
            pkg = importlib.import_module(pkg_name)
        except Exception as exc:  # noqa: BLE001 - report, and look elsewhere
            failed.append(f"{pkg_name}: {type(exc).__name__}: {exc}")
            continue
        for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg_name}.",
                                          onerror=lambda name: failed.append(f"{name}: not importable")):
            try:
                importlib.import_module(info.name)
            except Exception as exc:  # noqa: BLE001 - an optional extra missing, a broken module: report
                failed.append(f"{info.name}: {type(exc).__name__}: {exc}")
    stack: list[type[PrivacyEvent]] = [PrivacyEvent]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            kind = sub.__dict__.get("kind", "")
            if kind and kind not in EVENT_TYPES and sub.__module__.startswith(f"{root}."):
                _register(sub)
            stack.append(sub)
    return failed


def _dp_event_module() -> Any:
    """``dp_accounting.dp_event``, or MissingExtraError naming the extra."""
    try:
        from dp_accounting import dp_event
    except ImportError as exc:
        raise MissingExtraError("to_dp_event()", "dp_accounting", "dp-accounting") from exc
    return dp_event


def json_number(x: Any) -> Any:
    """A JSON-ready number: +-inf as the strings "inf"/"-inf" (JSON has no infinity)."""
    if isinstance(x, (bool, np.bool_)) or x is None or isinstance(x, str):
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    x = float(x)
    if math.isfinite(x):
        return x
    if math.isnan(x):
        raise NumericalError("NaN cannot be recorded in an event")
    return "inf" if x > 0 else "-inf"


def _check_orders(alpha: ArrayLike) -> np.ndarray:
    alpha = np.asarray(alpha, dtype=float)
    if v.any_true(~(alpha > 1.0)):
        raise InvalidParameterError("alpha", "> 1 (Rényi order)", alpha if alpha.size <= 6 else "some orders <= 1")
    return alpha


def admissible_only(values: np.ndarray, alpha: np.ndarray, alpha_max: np.ndarray | float) -> np.ndarray:
    """``values`` at the admissible orders alpha < alpha_max, +inf at the others (never 0 or NaN there):
    the one home of the order mask."""
    inside = alpha < alpha_max
    # the values themselves where there are many, every order is admissible (as in the accountant's search) and they
    # have the shape of the result (see v.where_any)
    if (isinstance(values, np.ndarray) and values.size > v.SMALL and v.all_true(inside)
            and v.broadcast_shape(values.shape, inside.shape) == values.shape):
        return values
    return np.where(inside, values, np.inf)


@dataclass(frozen=True)
class PrivacyEvent:
    """What a release reveals about its data, in the terms the accountant needs (its Renyi curve, any
    (epsilon, delta) part, the lemmas behind them): the base class of all privacy events (see the
    module docstring)."""

    #: the "type" key of the JSON form; a subclass with its own kind registers itself (see the module docstring)
    kind: ClassVar[str] = ""
    #: the neighbouring relation the guarantee is stated for; every class with a kind states its own
    #: (a composition's is that of its parts, set per instance)
    neighbouring: ClassVar[Neighbouring]
    #: True only for compositions (their relation is that of their parts)
    composite: ClassVar[bool] = False
    #: the result that proves the event's curve (paper, theorem), for certificates
    proof: ClassVar[str] = ""
    #: False for event types whose parameters are not a fixed set of floats (then they override
    #: :meth:`rdp` and are evaluated one by one inside compositions)
    vectorised: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Register a subclass that names its own ``kind`` (see the module docstring)."""
        super().__init_subclass__(**kwargs)
        _register(cls)

    # -- the privacy analysis ------------------------------------------------------------------
    def _params(self) -> dict[str, float]:
        """Numeric parameters passed to :meth:`_rdp_arrays` (floats; +inf allowed)."""
        raise NotImplementedError

    # Subclasses define these two with their own named parameters, so the base declares them with
    # (*args: Any, **params: Any), which every such signature overrides compatibly.
    @classmethod
    def _rdp_arrays(cls, *args: Any, **params: Any) -> np.ndarray:
        """``_rdp_arrays(alpha, **params)``: the RDP curve, vectorised: ``alpha > 1`` is guaranteed by
        the caller, ``params`` broadcast
        against alpha; must return +inf where the order is not admissible, never NaN. Called under
        ``np.errstate(all="ignore")``."""
        raise NotImplementedError

    @classmethod
    def _alpha_max_arrays(cls, *args: Any, **params: Any) -> np.ndarray:
        """Upper end of the admissible orders (exclusive), vectorised; +inf by default."""
        shape = np.broadcast_shapes(*(np.shape(p) for p in params.values())) if params else ()
        return np.full(shape, np.inf)

    @classmethod
    def _masked_rdp_arrays(cls, alpha: np.ndarray, **params: Any) -> np.ndarray:
        """:meth:`_rdp_arrays` with +inf at the orders >= :meth:`_alpha_max_arrays` (under np.errstate)."""
        return cls._masked_rdp_curve(**params)(alpha)

    @classmethod
    def _rdp_curve(cls, *args: Any, **params: Any) -> Callable[[np.ndarray], np.ndarray]:
        """:meth:`_rdp_arrays` as a function of alpha alone. A class whose curve has pieces that depend on the
        parameters alone may compute them once here (the same values at every order, to the bit)."""
        return lambda alpha: cls._rdp_arrays(alpha, **params)

    @classmethod
    def _masked_rdp_curve(cls, order_bound: np.ndarray | None = None, /,
                          **params: Any) -> Callable[[np.ndarray], np.ndarray]:
        """:meth:`_masked_rdp_arrays` as a function of alpha alone, the order bound and :meth:`_rdp_curve` made once
        (for a search that evaluates many orders of the same settings; under np.errstate). ``order_bound``:
        :meth:`_alpha_max_arrays` of ``params`` where the caller has it already."""
        amax = cls._alpha_max_arrays(**params) if order_bound is None else order_bound
        curve = cls._rdp_curve(**params)
        return lambda alpha: admissible_only(np.asarray(curve(alpha), dtype=float), alpha, amax)

    def _param_arrays(self) -> dict[str, np.ndarray]:
        """:meth:`_params` as float arrays, the form :meth:`_rdp_arrays` and :meth:`_alpha_max_arrays` take."""
        return {k: np.asarray(p, float) for k, p in self._params().items()}

    def _search_curve(self) -> Callable[[np.ndarray], np.ndarray]:
        """The curve at the orders a search over alpha tries (all > 1; under the caller's np.errstate; a NaN is the
        search's to refuse): the parameters and order bound gathered once where the class keeps :meth:`rdp` (the same
        numbers), else its own :meth:`rdp`."""
        if type(self).rdp is not PrivacyEvent.rdp:
            return self.rdp
        return self._masked_rdp_curve(**self._param_arrays())

    @property
    def alpha_max(self) -> float:
        """Orders alpha >= alpha_max give +inf."""
        return float(self._alpha_max_arrays(**self._param_arrays()))

    @property
    def has_rdp(self) -> bool:
        """False for events whose guarantee is only :meth:`approx_dp` (their RDP part is 0)."""
        return True

    def rdp(self, alpha: ArrayLike) -> np.ndarray:
        """The Renyi-DP curve at the order(s) alpha > 1; +inf where not admissible."""
        alpha = _check_orders(alpha)
        with np.errstate(all="ignore"):
            out = self._masked_rdp_arrays(alpha, **self._param_arrays())
        if np.isnan(out).any():
            raise NumericalError(f"{type(self).__name__}.rdp: NaN from valid inputs")
        return out

    def approx_dp(self) -> tuple[float, float]:
        """(epsilon_0, delta_0) on top of the RDP curve: added by basic composition (an event that is only
        this part is composed through privacy profiles under the default rule, :mod:`privgp.accounting.accountant`,
        item 4)."""
        return (0.0, 0.0)

    def candidate_orders(self) -> np.ndarray:
        """Orders the accountant should try besides its search (e.g. the tabulated orders of a step
        curve, where the optimum sits); empty by default."""
        return np.empty(0)

    def gdp_mu(self) -> float | None:
        """mu when the event is exactly mu-GDP (then its exact (epsilon, delta) profile is known)."""
        return None

    def pure_epsilon(self) -> float | None:
        """epsilon when the event is (epsilon, 0)-DP (then no delta needs a larger epsilon), else None."""
        return None

    @property
    def covered(self) -> bool:
        """False when the event's numbers are not covered by a proven result (e.g. published constants)."""
        return True

    def lemmas(self) -> tuple[str, ...]:
        return (self.proof,) if self.proof else ()

    def assumptions(self) -> tuple[str, ...]:
        return ()

    def notes(self) -> tuple[str, ...]:
        return ()

    def details(self) -> dict[str, Any]:
        """Derived numbers worth printing in a certificate (e.g. V_n, Delta_n)."""
        return {}

    def describe(self) -> str:
        inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.init)
        return f"{self.kind}({inner})"

    # -- interoperability -------------------------------------------------------------------------
    def to_dp_event(self) -> Any:
        """The equivalent event of Google's ``dp_accounting`` (a ``dp_accounting.DpEvent``), so a release
        made with privgp can be composed with other mechanisms in that library's accountants.

        Equivalent means the same dominating pair of distributions, hence the same Renyi curve and
        privacy profile: an exactly mu-GDP event is ``GaussianDpEvent(noise_multiplier=1/mu)``, a zCDP
        one ``ZCDpEvent(rho)``, a pure epsilon-DP one binary randomized response, a composition
        ``ComposedDpEvent`` of ``SelfComposedDpEvent`` parts. An event with no equivalent there (a
        tabulated or mechanism-specific curve, an (epsilon, delta)-only guarantee) is
        ``UnsupportedDpEvent``, which dp_accounting's accountants refuse (``supports`` is False)
        rather than under-count. dp_accounting's relation must be the one privgp's event was computed
        for: privgp states sensitivities for its own neighbouring relation; randomized response needs
        ``NeighboringRelation.REPLACE_ONE`` there. Needs ``pip install 'privgp[dp-accounting]'``."""
        dpe = _dp_event_module()
        mu = self.gdp_mu()
        if mu is not None and self.approx_dp() == (0.0, 0.0):
            return dpe.NoOpDpEvent() if mu == 0 else dpe.GaussianDpEvent(noise_multiplier=1.0 / mu)
        return dpe.UnsupportedDpEvent()

    # -- serialisation ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with a "type" key; inverse: :func:`event_from_dict`."""
        out: dict[str, Any] = {"type": self.kind}
        for f in fields(self):
            if f.init:
                out[f.name] = json_number(getattr(self, f.name))
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, allow_nan=False)

    @classmethod
    def from_fields(cls, d: dict[str, Any]) -> PrivacyEvent:
        """Build from the fields of :meth:`to_dict` (without "type"); validation runs in __post_init__."""
        return cls(**d)

    # -- composition sugar --------------------------------------------------------------------------
    def times(self, count: int) -> ComposedEvent:
        """``count``-fold composition of this event."""
        return ComposedEvent.of([(self, count)])

    def __add__(self, other: PrivacyEvent) -> ComposedEvent:
        if not isinstance(other, PrivacyEvent):
            return NotImplemented
        return ComposedEvent.of([self, other])


def event_from_dict(d: dict[str, Any]) -> PrivacyEvent:
    """Inverse of :meth:`PrivacyEvent.to_dict`; an unknown type or bad field is an InvalidParameterError."""
    if not isinstance(d, dict) or "type" not in d:
        raise InvalidParameterError("event", "a dict with a 'type' key (from PrivacyEvent.to_dict)", d)
    kind = d["type"]
    if not isinstance(kind, str):
        raise InvalidParameterError("event type", "a string (the kind of a PrivacyEvent class)", kind)
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        failed = _import_event_modules()
        cls = EVENT_TYPES.get(kind)
        if cls is None:
            skipped = f"; modules that could not be imported: {'; '.join(failed)}" if failed else ""
            raise InvalidParameterError(
                "event type", f"one of the event kinds of privgp.accounting and privgp.mechanisms "
                f"{sorted(EVENT_TYPES)} (an event class registers itself when its module is imported: import "
                f"the module that defines it first{skipped})", kind)
    body = {k: val for k, val in d.items() if k != "type"}
    names = {f.name for f in fields(cls) if f.init}
    unknown = sorted(set(body) - names)
    if unknown:
        raise InvalidParameterError(f"{kind} event", f"only the fields {sorted(names)}", f"unknown {unknown}")
    try:
        return cls.from_fields(body)
    except TypeError as exc:
        raise InvalidParameterError(f"{kind} event", "complete fields", str(exc)) from None


def event_from_json(text: str) -> PrivacyEvent:
    """The privacy event stored as JSON text (a ledger entry's or a certificate's ``event``)."""
    try:
        d = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidParameterError("event", "valid JSON", str(exc)) from None
    return event_from_dict(d)


# ------------------------------------------------------------------------------------------------
# Gaussian-type events
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GaussianCurve(PrivacyEvent):
    """Base of the events that are exactly mu-GDP (a Gaussian privacy-loss distribution): RDP
    alpha mu^2 / 2 at every alpha > 1 (the Renyi divergence of N(mu, 1) from N(0, 1)) and the exact
    (epsilon, delta) profile of :mod:`privgp.accounting.gaussian`. Subclasses define ``mu`` (a field or
    a property; not declared here, so that a subclass field named ``mu`` has no inherited default)."""

    if TYPE_CHECKING:  # for the type checker only: at run time a subclass field named mu gets no default
        @property
        def mu(self) -> float: ...

    def _params(self):
        return {"mu": self.mu}

    @classmethod
    def _rdp_arrays(cls, alpha, mu):
        return 0.5 * alpha * mu * mu

    def gdp_mu(self) -> float:
        return self.mu


def gaussian_batch(sensitivity: ArrayLike, noise_std: ArrayLike) -> EventBatch:
    """Many Gaussian mechanisms as arrays (sensitivity and noise_std broadcast): an EventBatch of
    :class:`GaussianEvent` whose accountant call uses the exact GDP profile, vectorised."""
    sens = np.asarray(sensitivity, dtype=float)
    noise = np.asarray(noise_std, dtype=float)
    if v.any_true(~(sens >= 0)) or v.any_true(np.isinf(sens)):
        raise InvalidParameterError("sensitivity", "finite and >= 0", sens)
    if v.any_true(~(noise > 0)) or v.any_true(np.isinf(noise)):
        raise InvalidParameterError("noise_std", "finite and > 0", noise)
    shape = np.broadcast_shapes(sens.shape, noise.shape)
    mu = np.broadcast_to(sens / noise, shape)
    return EventBatch(GaussianEvent, tuple(shape), {"mu": mu},
                      {"sensitivity": np.broadcast_to(sens, shape), "noise_std": np.broadcast_to(noise, shape)})


@dataclass(frozen=True)
class GdpEvent(GaussianCurve):
    """The privacy event of a mechanism known to be mu-GDP (Dong, Roth & Su 2022): RDP alpha mu^2 / 2 for every alpha > 1 (their
    Cor. B.6 / the Gaussian Renyi divergence), exact profile :func:`privgp.accounting.gaussian.gdp_delta`."""

    mu: float
    kind: ClassVar[str] = "gdp"
    neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    proof: ClassVar[str] = "mu-GDP (Dong, Roth & Su 2022, Def. 2.6); exact profile Cor. 2.13"

    def __post_init__(self):
        object.__setattr__(self, "mu", v.nonnegative("mu", self.mu))


@dataclass(frozen=True)
class GaussianEvent(GaussianCurve):
    """The privacy event of adding Gaussian noise to a statistic: f(D) + N(0, noise_std^2 I) with L2 sensitivity ``sensitivity`` over
    replace-one neighbours (the relation of every privgp mechanism that builds it): mu-GDP with
    mu = sensitivity / noise_std; RDP alpha Delta^2 / (2 s^2) (Mironov 2017, Prop. 7)."""

    sensitivity: float
    noise_std: float
    kind: ClassVar[str] = "gaussian"
    neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    proof: ClassVar[str] = ("Gaussian mechanism: RDP alpha Delta^2/(2 s^2) (Mironov 2017, Prop. 7); exact "
                            "(epsilon, delta) profile (Balle & Wang 2018, Thm 8)")

    def __post_init__(self):
        object.__setattr__(self, "sensitivity", v.nonnegative("sensitivity", self.sensitivity))
        object.__setattr__(self, "noise_std", v.positive("noise_std", self.noise_std))
        if not math.isfinite(self.sensitivity / self.noise_std):   # mu = inf: the accountant refused "mu", unnamed here
            raise InvalidParameterError("noise_std", f"large enough that sensitivity / noise_std (mu) is finite, for "
                                        f"sensitivity {self.sensitivity:g}", self.noise_std)

    @property
    def mu(self) -> float:
        return self.sensitivity / self.noise_std

    def details(self) -> dict[str, Any]:
        return {"mu": self.mu}


@dataclass(frozen=True)
class ZcdpEvent(PrivacyEvent):
    """A rho-zCDP mechanism (Bun & Steinke 2016, Def. 1.1): RDP alpha rho at every alpha > 1."""

    rho: float
    kind: ClassVar[str] = "zcdp"
    neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    proof: ClassVar[str] = "rho-zCDP (Bun & Steinke 2016, Def. 1.1): D_alpha <= alpha rho for all alpha > 1"

    def __post_init__(self):
        object.__setattr__(self, "rho", v.nonnegative("rho", self.rho))

    def _params(self):
        return {"rho": self.rho}

    @classmethod
    def _rdp_arrays(cls, alpha, rho):
        return alpha * rho

    def to_dp_event(self) -> Any:
        """``dp_accounting.ZCDpEvent(rho)`` (see :meth:`PrivacyEvent.to_dp_event`)."""
        dpe = _dp_event_module()
        return dpe.NoOpDpEvent() if self.rho == 0 else dpe.ZCDpEvent(rho=self.rho)


def randomized_response_epsilon(epsilon0: ArrayLike, delta: ArrayLike) -> np.ndarray:
    """The exact epsilon(delta) of an epsilon0-DP mechanism, rounded up (vectorised): that of its dominating
    pair, binary randomized response with odds e^epsilon0 (Kairouz, Oh & Viswanath 2015, Thm 2.1), whose
    profile is delta(eps) = (e^epsilon0 - e^eps) / (1 + e^epsilon0) for 0 <= eps <= epsilon0, so

        epsilon(delta) = max(0, epsilon0 + log(1 - delta (1 + e^-epsilon0))).

    Returned never below that value (a bound on the rounding of exp, the product and log1p is added to the
    log, and the sum with epsilon0 is rounded up by one ulp) and never above epsilon0; 0 where
    delta >= delta(0), the total variation distance."""
    e0, d = (np.asarray(a, dtype=float) for a in (epsilon0, delta))
    u = np.finfo(float).eps
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = d * (1.0 + np.exp(-e0))
        log_v = np.log1p(-np.minimum(v, 1.0))
        err = 8.0 * u * (np.abs(log_v) + v / (1.0 - v))
        up = np.nextafter(e0 + (log_v + err), np.inf)
        out = np.where(v < 1.0, np.minimum(np.maximum(up, 0.0), e0), 0.0)
    if np.isnan(out).any():
        raise NumericalError("randomized_response_epsilon: NaN from valid inputs")
    return out


@dataclass(frozen=True)
class PureDpEvent(PrivacyEvent):
    """An epsilon-DP mechanism, with the exact worst-case Renyi curve of epsilon-DP: that of binary
    randomized response with odds e^epsilon,

        D_alpha = log((e^(alpha eps) + e^((1 - alpha) eps)) / (1 + e^eps)) / (alpha - 1)

    (Mironov 2017, Prop. 5, the RDP of randomized response). Every epsilon-DP mechanism is, on any pair
    of neighbouring datasets, a post-processing of this randomized response (Kairouz, Oh & Viswanath
    2015, Thm 2.1: its privacy region contains theirs), so by data processing its Renyi divergences
    are at most these; randomized response itself attains them, so no smaller curve is valid. It is
    below min(epsilon, alpha epsilon^2 / 2) (Bun & Steinke 2016, Prop. 3.3), the curve privgp used
    before 0.2: about 3% lower epsilon for moderate epsilon. tests/accounting/test_events.py pins it
    against the mpmath value of scripts/generate_event_reference.py."""

    epsilon: float
    kind: ClassVar[str] = "pure_dp"
    neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    proof: ClassVar[str] = ("epsilon-DP => RDP of randomized response, log((e^(a eps) + e^((1-a) eps))/(1 + e^eps))/(a-1) "
                            "(Mironov 2017, Prop. 5; domination: Kairouz, Oh & Viswanath 2015, Thm 2.1)")

    def __post_init__(self):
        object.__setattr__(self, "epsilon", v.nonnegative("epsilon", self.epsilon))

    def _params(self):
        return {"epsilon": self.epsilon}

    def pure_epsilon(self) -> float | None:
        return self.epsilon

    @classmethod
    def _rdp_arrays(cls, alpha, epsilon):
        # With d = (alpha - 1) eps the numerator is log(cosh d + tanh(eps/2) sinh d) (divide both sums by
        # 2 e^(eps/2) cosh(eps/2)): a log1p of positive terms, accurate for small eps and alpha near 1
        # where the two log-sum-exps cancel. For large d, taking alpha eps and eps out of the two sums leaves
        # eps + (log1p(e^(-eps - 2d)) - log1p(e^-eps)) / (alpha - 1): no overflow, and no cancellation of
        # alpha eps against eps (which lost 7e-7 relative at eps = 1e20, alpha - 1 = 1e-10).
        d = (alpha - 1.0) * epsilon
        dc = np.minimum(d, 20.0)
        small = np.log1p(2.0 * np.sinh(0.5 * dc) ** 2 + np.tanh(0.5 * epsilon) * np.sinh(dc)) / (alpha - 1.0)
        large = epsilon + (np.log1p(np.exp(-epsilon - 2.0 * d)) - np.log1p(np.exp(-epsilon))) / (alpha - 1.0)
        rr = np.where(d < 20.0, small, large)
        rr = np.where(epsilon == 0, 0.0, rr)  # eps = 0: identical distributions (and no inf - inf)
        # the exact curve is below both of these; the minimum only absorbs rounding
        return np.maximum(np.minimum(rr, np.minimum(epsilon, 0.5 * alpha * epsilon * epsilon)), 0.0)

    def epsilon_at(self, delta: ArrayLike) -> np.ndarray:
        """The exact epsilon(delta) of this event, rounded up: :func:`randomized_response_epsilon`."""
        return randomized_response_epsilon(self.epsilon, delta)

    def to_dp_event(self) -> Any:
        """Binary randomized response with odds e^epsilon, the dominating pair of every epsilon-DP
        mechanism: ``RandomizedResponseDpEvent(noise_parameter=2/(1+e^epsilon), num_buckets=2)`` (its
        outputs are P = (1 - p/2, p/2), Q = (p/2, 1 - p/2); dp_accounting accounts for it under
        ``NeighboringRelation.REPLACE_ONE``). Not ``LaplaceDpEvent``: the Laplace mechanism is one
        epsilon-DP mechanism, not the worst one, and would under-count."""
        dpe = _dp_event_module()
        if self.epsilon == 0:
            return dpe.NoOpDpEvent()
        if math.isinf(self.epsilon):
            return dpe.NonPrivateDpEvent()
        return dpe.RandomizedResponseDpEvent(noise_parameter=2.0 / (1.0 + math.exp(self.epsilon)), num_buckets=2)


@dataclass(frozen=True)
class ApproxOnlyEvent(PrivacyEvent):
    """Base of events whose whole guarantee is :meth:`approx_dp` (no Renyi curve: RDP part 0)."""

    def _params(self):
        return {}

    @classmethod
    def _rdp_arrays(cls, alpha):
        return np.zeros_like(alpha)

    @property
    def has_rdp(self) -> bool:
        return False


@dataclass(frozen=True)
class ApproxDpEvent(ApproxOnlyEvent):
    """The privacy event of a mechanism known only to be (epsilon, delta)-DP. It has no RDP curve; the
    accountant composes it with everything else exactly through privacy profiles (its rule "profile";
    Kairouz, Oh & Viswanath 2015, Thm 2.1; Dong, Roth & Su 2022, Thm 3.2), or by basic composition
    under the rule "basic" (epsilons and deltas add; Dwork & Roth 2014, Thm 3.16). ``source`` names the
    result that gives the guarantee."""

    epsilon: float
    delta: float
    source: str = ""
    kind: ClassVar[str] = "approx_dp"
    neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    proof: ClassVar[str] = "(epsilon, delta)-DP; basic composition (Dwork & Roth 2014, Thm 3.16)"

    def __post_init__(self):
        object.__setattr__(self, "epsilon", v.nonnegative("epsilon", self.epsilon))
        d = v.nonnegative("delta", self.delta)
        if not d < 1:
            raise InvalidParameterError("delta", "in [0, 1)", d)
        object.__setattr__(self, "delta", d)
        object.__setattr__(self, "source", str(self.source))

    def approx_dp(self) -> tuple[float, float]:
        return (self.epsilon, self.delta)

    def lemmas(self) -> tuple[str, ...]:
        return (self.source,) if self.source else (self.proof,)


# ------------------------------------------------------------------------------------------------
# Composition
# ------------------------------------------------------------------------------------------------

#: the largest count of a composed event (the accountant multiplies in float64; the merged count of nested
#: compositions is checked again)
MAX_COUNT = int(np.finfo(float).max)


def _merge(pairs: Iterable[tuple[PrivacyEvent, int]]) -> tuple[tuple[PrivacyEvent, int], ...]:
    """Flatten nested compositions and add the counts of equal events (order of first appearance)."""
    counts: dict[PrivacyEvent, int] = {}
    for ev, c in pairs:
        if isinstance(ev, ComposedEvent):
            for inner, ic in ev.events:
                counts[inner] = counts.get(inner, 0) + ic * c
        else:
            counts[ev] = counts.get(ev, 0) + c
    return tuple(counts.items())


@dataclass(frozen=True)
class ComposedEvent(PrivacyEvent):
    """Several releases of the same data as one event (adaptive composition, each event used ``count`` times): RDP curves add at every order
    (Mironov 2017, Prop. 1; seed 000, eq. (3)); parts known only as (epsilon, delta)-DP compose through
    privacy profiles or add (the accountant's composition rule);
    mu-GDP parts compose exactly when every part is GDP (mu = sqrt(sum c_i mu_i^2)).

    Build with :meth:`of` (flattens nested compositions and merges equal events). The RDP curve
    is evaluated with one vectorised call per event type, so a composition of 10^3 ledger entries
    costs a few numpy calls per order grid."""

    events: tuple[tuple[PrivacyEvent, int], ...]
    kind: ClassVar[str] = "composed"
    composite: ClassVar[bool] = True
    proof: ClassVar[str] = "adaptive composition: RDP adds (Mironov 2017, Prop. 1)"

    def __post_init__(self):
        pairs = []
        for item in self.events:
            try:
                ev, c = item
            except (TypeError, ValueError):
                raise InvalidParameterError("events", "pairs (event, count)", item) from None
            if not isinstance(ev, PrivacyEvent):
                raise InvalidParameterError("events", "PrivacyEvent instances", type(ev).__name__)
            pairs.append((ev, v.integer("count", c, minimum=1)))
        if not pairs:
            raise InvalidParameterError("events", "at least one event", [])
        merged = _merge(pairs)
        for _, count in merged:
            if count > MAX_COUNT:   # 10**400 raised a raw OverflowError in the accountant
                raise InvalidParameterError("count", f"an integer <= {MAX_COUNT:.4g} (the float range; counts of "
                                            "nested compositions multiply)",
                                            f"an integer of {count.bit_length()} bits")
        relations = {ev.neighbouring for ev, _ in merged}
        if len(relations) > 1:
            raise InvalidParameterError(
                "events", "parts stated for one neighbouring relation (a composition of guarantees under "
                "different relations is not a guarantee under either)",
                ", ".join(f"{ev.kind}: {ev.neighbouring.value}" for ev, _ in merged))
        object.__setattr__(self, "events", merged)
        # the parts' relation, per instance (not a field: never in the JSON, not compared)
        object.__setattr__(self, "neighbouring", relations.pop())

    @classmethod
    def of(cls, items: Iterable[PrivacyEvent | tuple[PrivacyEvent, int]]) -> ComposedEvent:
        pairs = [(it, 1) if isinstance(it, PrivacyEvent) else tuple(it) for it in items]
        return cls(tuple(pairs))  # type: ignore[arg-type]

    def _stacked(self) -> list:
        """Per event type: (class, events, counts (k,), params {name: (k,) array} or None), computed once
        (the composition is immutable) so that each evaluation of the curve is a few numpy calls."""
        cached = self.__dict__.get("_stacked_cache")
        if cached is not None:
            return cached
        groups: dict[type, tuple[list[PrivacyEvent], list[int]]] = {}
        for ev, c in self.events:
            evs, cs = groups.setdefault(type(ev), ([], []))
            evs.append(ev)
            cs.append(c)
        out = []
        for cls, (evs, cs) in groups.items():
            params = None
            if evs[0].has_rdp and getattr(cls, "vectorised", True):
                plist = [e._params() for e in evs]
                params = {name: np.asarray([p[name] for p in plist], dtype=float) for name in plist[0]}
            out.append((cls, evs, np.asarray(cs, dtype=float), params))
        object.__setattr__(self, "_stacked_cache", out)
        return out

    def rdp(self, alpha: ArrayLike) -> np.ndarray:
        alpha = _check_orders(alpha)
        total = np.zeros(alpha.shape)
        with np.errstate(all="ignore"):
            for cls, evs, cs, params in self._stacked():
                if not evs[0].has_rdp:
                    continue
                if params is None:  # curves without array parameters: one call each
                    for ev, c in zip(evs, cs):
                        vals = ev.rdp(alpha)
                        total = total + np.where(vals == 0.0, 0.0, c * vals)
                    continue
                k = len(evs)
                shaped = {name: a.reshape((k,) + (1,) * alpha.ndim) for name, a in params.items()}
                vals = cls._masked_rdp_arrays(alpha[None, ...], **shaped)
                vals = np.broadcast_to(vals, (k,) + alpha.shape)
                contrib = np.where(vals == 0.0, 0.0, cs.reshape((k,) + (1,) * alpha.ndim) * vals)
                total = total + contrib.sum(axis=0)
        if np.isnan(total).any():
            raise NumericalError("ComposedEvent.rdp: NaN from valid inputs")
        return total

    @property
    def alpha_max(self) -> float:
        out = math.inf
        with np.errstate(all="ignore"):
            for cls, evs, _, params in self._stacked():
                if not evs[0].has_rdp:
                    continue
                if params is None:
                    out = min([out] + [ev.alpha_max for ev in evs])
                else:
                    out = min(out, float(np.min(cls._alpha_max_arrays(**params))))
        return out

    @property
    def has_rdp(self) -> bool:
        return any(ev.has_rdp for ev, _ in self.events)

    def _params(self):  # pragma: no cover - rdp() is overridden
        raise NotImplementedError

    def approx_dp(self) -> tuple[float, float]:
        eps = sum(c * ev.approx_dp()[0] for ev, c in self.events)
        dl = sum(c * ev.approx_dp()[1] for ev, c in self.events)
        return (float(eps), float(dl))

    def pure_epsilon(self) -> float | None:
        """The sum of the parts' pure epsilons (basic composition of pure DP) when every part is pure."""
        total = 0.0
        for ev, c in self.events:
            e = ev.pure_epsilon()
            if e is None:
                return None
            total += c * e
        return total

    def gdp_mu(self) -> float | None:
        mus: list[float] = []
        for ev, _ in self.events:
            mu = ev.gdp_mu()
            if mu is None:
                return None
            mus.append(mu)
        return _gauss.compose_mu(mus, [c for _, c in self.events])

    @property
    def covered(self) -> bool:
        return all(ev.covered for ev, _ in self.events)

    def lemmas(self) -> tuple[str, ...]:
        out = [self.proof]
        for ev, _ in self.events:
            out.extend(x for x in ev.lemmas() if x not in out)
        return tuple(out)

    def assumptions(self) -> tuple[str, ...]:
        out: list[str] = []
        for ev, _ in self.events:
            out.extend(x for x in ev.assumptions() if x not in out)
        return tuple(out)

    def notes(self) -> tuple[str, ...]:
        out: list[str] = []
        for ev, _ in self.events:
            out.extend(x for x in ev.notes() if x not in out)
        return tuple(out)

    def candidate_orders(self) -> np.ndarray:
        parts = [ev.candidate_orders() for ev, _ in self.events]
        return np.unique(np.concatenate(parts)) if parts else np.empty(0)

    @property
    def count(self) -> int:
        """Total number of composed mechanism runs."""
        return int(sum(c for _, c in self.events))

    def describe(self) -> str:
        parts = [(f"{c} x " if c > 1 else "") + ev.describe() for ev, c in self.events]
        return " + ".join(parts)

    def to_dp_event(self) -> Any:
        """``ComposedDpEvent`` of each part's :meth:`~PrivacyEvent.to_dp_event`, as a
        ``SelfComposedDpEvent`` when it is used more than once (dp_accounting composes them the way
        privgp does: adaptively, in any order)."""
        dpe = _dp_event_module()
        parts = [ev.to_dp_event() if c == 1 else dpe.SelfComposedDpEvent(ev.to_dp_event(), c) for ev, c in self.events]
        return parts[0] if len(parts) == 1 else dpe.ComposedDpEvent(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "events": [{"count": c, "event": ev.to_dict()} for ev, c in self.events]}

    @classmethod
    def from_fields(cls, d: dict[str, Any]) -> ComposedEvent:
        try:
            items = [(event_from_dict(it["event"]), it["count"]) for it in d["events"]]
        except (KeyError, TypeError):
            raise InvalidParameterError("composed event", "a list of {count, event} items", d) from None
        return cls(tuple(items))


# ------------------------------------------------------------------------------------------------
# Batches of settings (struct of arrays) for vectorised accounting
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class EventBatch:
    """Many settings of one event type as arrays (struct of arrays): the vectorised path of the
    accountant (e.g. a 10^5-setting hyperparameter grid evaluated in one numpy call).

    ``params`` are the arrays passed to the event type's ``_rdp_arrays`` (broadcast to ``shape``);
    ``fields`` the raw defining fields (arrays of ``shape``), so that :meth:`item` rebuilds the
    scalar event of one setting. Build with an event class's ``batch`` constructor or
    :meth:`from_events`."""

    event_type: type[PrivacyEvent]
    shape: tuple[int, ...]
    params: dict[str, np.ndarray] = field(repr=False)
    fields: dict[str, np.ndarray] = field(repr=False)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    #: whether :meth:`rdp_of_rows` evaluates some settings alone (a curve of one setting per row)
    by_rows: ClassVar[bool] = True

    @classmethod
    def from_events(cls, events: Sequence[PrivacyEvent]) -> EventBatch:
        """Stack scalar events of one type (the slow, generic path)."""
        events = list(events)
        if not events:
            raise InvalidParameterError("events", "at least one event", [])
        t = type(events[0])
        if any(type(e) is not t for e in events) or t is ComposedEvent:
            raise InvalidParameterError("events", "events of one (non-composed) type", sorted({type(e).__name__ for e in events}))
        plist = [e._params() for e in events]
        params = {k: np.asarray([p[k] for p in plist], dtype=float) for k in plist[0]}
        flds = {f.name: np.asarray([getattr(e, f.name) for e in events], dtype=object)
                for f in fields(t) if f.init}
        return cls(t, (len(events),), params, flds)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def flat_params(self) -> dict[str, np.ndarray]:
        """Each parameter as a flat array of :attr:`size` entries (a view where it already has the batch's shape)."""
        out = {}
        for k, p in self.params.items():
            a = np.asarray(p, float)
            out[k] = (a if a.shape == self.shape else np.broadcast_to(a, self.shape)).reshape(-1)
        return out

    def alpha_max(self) -> np.ndarray:
        """Per-setting upper end of the admissible orders, shape ``shape``."""
        with np.errstate(all="ignore"):
            return v.read_only_broadcast(self.event_type._alpha_max_arrays(**self.flat_params()), (self.size,)).reshape(self.shape)

    def rdp_flat(self, alpha: np.ndarray) -> np.ndarray:
        """RDP at alpha of shape (size, G) (one row of orders per setting); +inf outside the range.
        alpha > 1 is the caller's guarantee; call under np.errstate(all="ignore")."""
        p = {k: a[:, None] for k, a in self.flat_params().items()}
        return self.event_type._masked_rdp_arrays(alpha, **p)

    def rdp_of_rows(self, index: np.ndarray | None = None,
                    alpha_max: np.ndarray | None = None) -> Callable[[np.ndarray], np.ndarray]:
        """:meth:`rdp_flat` of the settings ``index`` (integer array, flat order; None: all of them, in order) alone, so
        that the accountant's search can drop settings once they are found (where :attr:`by_rows`). ``alpha_max``:
        :meth:`alpha_max` flattened, where the caller has it already."""
        # a[index][:, None], not a[index, None]: the same values, gathered by numpy's fast path for one index array
        rows = (lambda a: a[:, None]) if index is None else (lambda a: a[index][:, None])
        p = {k: rows(a) for k, a in self.flat_params().items()}
        bound = None if alpha_max is None else rows(alpha_max)
        with np.errstate(all="ignore"):
            return self.event_type._masked_rdp_curve(bound, **p)

    def rdp(self, alpha: ArrayLike) -> np.ndarray:
        """RDP of every setting at the order(s) alpha (broadcast against ``shape``)."""
        alpha = _check_orders(alpha)
        p = {k: np.asarray(a, float) for k, a in self.params.items()}
        with np.errstate(all="ignore"):
            out = self.event_type._masked_rdp_arrays(alpha, **p)
        if np.isnan(out).any():
            raise NumericalError("EventBatch.rdp: NaN from valid inputs")
        return out

    def item(self, index: int | tuple[int, ...] = ()) -> PrivacyEvent:
        """The scalar event of one setting (``index`` into ``shape``; () when the batch has one)."""
        if index == () and self.size != 1:
            raise InvalidParameterError("index", f"an index into a batch of shape {self.shape}", index)
        kw = {}
        for k, a in self.fields.items():
            val = np.broadcast_to(np.asarray(a), self.shape)[index] if self.shape else np.asarray(a).reshape(())
            val = val.item() if hasattr(val, "item") else val
            kw[k] = val
        return self.event_type(**kw)
