"""The one accountant: events -> (epsilon, delta) guarantees.

* :func:`rdp`: an event's (or batch's) Renyi-DP curve at given orders;
* :func:`epsilon`: the certified epsilon at a delta; :func:`delta`: the certified delta at an epsilon.

How a guarantee is computed, in order of preference:

1. **Exact profile** (``exact=True``, default): when the event is exactly mu-GDP (a Gaussian
   mechanism or any composition of them) and has no (epsilon_0, delta_0) part, epsilon(delta) is the
   exact, tight value of the Gaussian privacy profile (:mod:`privgp.accounting.gaussian`). No RDP
   conversion is involved (method ``"exact-gdp"``); its delta(epsilon) is rounded up
   (:func:`~privgp.accounting.gaussian.gdp_delta_upper`). A single pure epsilon_0-DP event likewise gets
   the exact epsilon(delta) of randomized response, rounded up (method ``"pure"``).
2. **RDP conversion** otherwise: the RDP curve converted with ``conversion`` ("improved",
   Canonne-Kamath-Steinke 2020 Prop. 12, default; "mironov", Mironov 2017 Prop. 3 = seed 000
   eq. (3)) and minimised over the admissible orders 1 < alpha < alpha_max
   (:func:`privgp.accounting.order_search.minimize_over_alpha`). The search may be approximate, but the
   reported epsilon is always the conversion evaluated *at the reported alpha*, recomputed, so it is
   a valid bound whatever the search does (method ``"rdp"``). It is evaluated in double precision and,
   unlike item 1's values, not rounded outward: its last few ulps (~1e-15 relative) are rounding, and
   certificates record these values, which ``privgp verify`` compares exactly. The conversion is not
   tight for the events it is used for (those of item 1 take the exact profile), so in practice the
   value stays above the exact epsilon(delta); strictly, it is the conversion's value to rounding.
3. An (epsilon_0, delta_0) part (:meth:`PrivacyEvent.approx_dp`) is added by basic composition:
   epsilon(delta) = epsilon_RDP(delta - delta_0) + epsilon_0, +inf when delta <= delta_0.

4. **Profile composition** (``composition="profile"``, the default since privgp 0.2): the
   (epsilon_i, delta_i)-only parts are composed with the rest through privacy profiles instead of
   basic composition, as a privacy-loss-distribution accountant composes them, but exactly: each
   (epsilon_i, delta_i)-DP part is dominated by the four-point pair of f_{epsilon_i, delta_i}
   (Kairouz, Oh & Viswanath 2015, Thm 2.1; Dong, Roth & Su 2022, Prop. 2.5), the rest is f-DP with f
   given by its profile delta_R (Dong, Roth & Su 2022, Prop. 2.12: exact for mu-GDP, the RDP
   conversion otherwise), and the tensor product of the pairs dominates the adaptive composition
   (ibid., Thm 3.2), whose profile is

       delta(eps) = 1 - prod(1 - delta_i) + prod(1 - delta_i) sum_s w(s) delta_R(eps - s),

   s running over the sums of +-epsilon_i (randomized response's privacy losses, + with probability
   e^eps_i / (1 + e^eps_i)) and delta_R(x) = 1 - e^x + e^x delta_R(-x) for x < 0 (the hockey-stick
   identity, f symmetric). The reported value is the smaller of this and basic composition
   (method "profile" when it wins): up to several times smaller delta for many (epsilon, delta)
   parts. tests/accounting/test_interop.py checks it is never above basic composition and never
   below dp_accounting's PLD of the same composition (the tight value).

   **Pure parts as randomized response.** In a composition that also has a part which is not pure
   epsilon-DP, or two or more pure parts, the rule also tries each pure epsilon_i-DP part
   (:meth:`PrivacyEvent.pure_epsilon`, e.g. a Laplace-grid release) as an (epsilon_i, 0) part of the
   profile composition -- its dominating pair is randomized response, exactly (Kairouz, Oh & Viswanath
   2015, Thm 2.1) -- instead of adding its Renyi curve to the rest's, and reports the smaller value.
   Without this a Gaussian release certified (5, 1e-6) and a Laplace 5-DP release composed to 10.34 at
   delta = 1e-6 (the Renyi conversion of the sum of their curves), above the 10 that basic composition of
   the two certificates gives; with it, 9.9986; and 100 releases of 0.1-DP composed to 5.07 at delta =
   1e-6 where their exact composition is 4.77. A single pure part keeps its own value (its curve is
   randomized response's, so the conversion is already exact there). A composition whose pure parts would
   give the profile more than :data:`MAX_PURE_SUPPORT` points (about 9 distinct pure epsilons, or one used
   that many times) keeps the value without them (a few per cent at most there, and it bounds the ledger's
   cost); a pure part above :data:`PURE_EPSILON_MAX` keeps its Renyi curve.

**Composition rules are versioned.** ``composition="basic"`` (item 3 only) is the rule of every
certificate and ledger written before privgp 0.2 (:data:`LEGACY_COMPOSITION`: what a certificate or
ledger that states no rule was computed with); ``"profile"`` (:data:`DEFAULT_COMPOSITION`) is the
rule of new ones, recorded in them (``composition`` in certificate.json, the ``composition`` key of
the ledger's meta table). ``composition=None`` (the default of :func:`epsilon`, :func:`delta` and
:func:`~privgp.accounting.certify`) means the rule in force: :data:`DEFAULT_COMPOSITION`, or the rule
set by :func:`composition_rule` for a block of code -- ``privgp verify`` rebuilds a certificate,
calibrations included, inside ``with composition_rule(its stated rule)``, so old certificates
recompute to what they showed and a certificate whose numbers do not follow its stated rule fails.

Everything is vectorised over an :class:`~privgp.accounting.events.EventBatch` (one numpy call per
search round for all settings), and over delta / epsilon arrays that broadcast against it.
dp_accounting (Google) is the independent reference in the tests for the Gaussian profile and the
RDP conversions (tests/accounting/test_events.py).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidParameterError, NumericalError
from ..validation import all_true, any_true, broadcast_shape, read_only_broadcast, real_array
from .composed_batch import ComposedBatch
from .conversion import check_conversion, epsilon_raw, log_delta_raw
from .events import ComposedEvent, EventBatch, GaussianCurve, PrivacyEvent, PureDpEvent, randomized_response_epsilon
from .gaussian import compose_mu_rows, gdp_delta_upper, gdp_epsilon
from .order_search import minimize_over_alpha

METHODS = ("rdp", "exact-gdp", "pure", "profile")
COMPOSITIONS = ("basic", "profile")
#: the composition rule of new certificates and ledgers (module docstring, item 4)
DEFAULT_COMPOSITION = "profile"
#: the rule of a certificate or ledger that states none: everything privgp 0.1 wrote (item 3)
LEGACY_COMPOSITION = "basic"
_RULE_IN_FORCE: ContextVar[str] = ContextVar("privgp_composition_rule", default=DEFAULT_COMPOSITION)
#: the profile composition's largest support (sums of +-epsilon_i); beyond it, basic composition
MAX_PROFILE_SUPPORT = 20_000
#: the same for the split with pure parts as randomized response (a refinement that gains little with many
#: distinct pure parts, whose support doubles with each: capped lower, so a ledger's compose stays cheap)
MAX_PURE_SUPPORT = 512
#: pure parts above this epsilon keep their Renyi curve (their randomized-response shifts would leave the range
#: where the rest's profile is evaluated accurately; such a part alone already spends any budget)
PURE_EPSILON_MAX = 50.0


@dataclass(frozen=True)
class Guarantee:
    """An (epsilon, delta) statement and how it was obtained (arrays for a batch).

    ``alpha``/``rdp``: the order and the RDP value it was converted from (NaN for the exact
    profile); ``method``: "rdp", "exact-gdp", "pure" (no RDP part: basic composition only; or one pure
    epsilon_0-DP event: the exact epsilon(delta) of randomized response, Kairouz, Oh & Viswanath 2015,
    rounded up) or "profile" (item 4 of the module docstring)."""

    epsilon: Any
    delta: Any
    alpha: Any
    rdp: Any
    conversion: str
    method: str

    def to_dict(self) -> dict:
        def num(x):
            a = np.asarray(x, dtype=float)
            if a.ndim:
                return [num(t) for t in a]
            f = float(a)
            return f if math.isfinite(f) else (None if math.isnan(f) else ("inf" if f > 0 else "-inf"))
        return {"epsilon": num(self.epsilon), "delta": num(self.delta), "alpha": num(self.alpha),
                "rdp": num(self.rdp), "conversion": self.conversion, "method": self.method}


def _check_event(event: object) -> None:
    if not isinstance(event, (PrivacyEvent, EventBatch)):
        raise InvalidParameterError("event", "a PrivacyEvent or an EventBatch", type(event).__name__)


def rdp(event: PrivacyEvent | EventBatch, alpha: ArrayLike) -> np.ndarray:
    """The RDP curve of an event (or of every setting of a batch) at order(s) alpha > 1."""
    _check_event(event)
    return event.rdp(alpha)


def _probability_array(name: str, x: ArrayLike) -> np.ndarray:
    a = real_array(name, x)
    if any_true(~((a > 0) & (a < 1))):
        raise InvalidParameterError(name, "in the open interval (0, 1)", a)
    return a


def _orders(alpha: ArrayLike) -> np.ndarray:
    a = real_array("alpha", alpha)
    if any_true(~(a > 1.0)):
        raise InvalidParameterError("alpha", "> 1 (Rényi order)", a)
    return a


def epsilon(event: PrivacyEvent | EventBatch, delta: ArrayLike, *, conversion: str = "improved",
            alpha: ArrayLike | None = None, exact: bool = True, composition: str | None = None) -> Guarantee:
    """Certified epsilon of ``event`` at ``delta`` (see the module docstring for the method).

    ``alpha``: evaluate the RDP conversion at this order instead of optimising (no exact profile
    then). For an :class:`EventBatch` every output is an array of the batch's shape (broadcast with
    delta and alpha). ``composition``: how (epsilon, delta)-only parts compose with the rest,
    "basic" or "profile" (tighter; module docstring, item 4); None: the rule in force
    (:func:`composition_in_force`)."""
    _check_event(event)
    check_conversion(conversion)
    composition = resolve_composition(composition)
    if composition == "profile" and alpha is None and isinstance(event, PrivacyEvent):
        basic = epsilon(event, delta, conversion=conversion, exact=exact, composition="basic")
        return _profile_epsilon(event, basic, conversion, exact)
    d = _probability_array("delta", delta)
    if alpha is not None:
        alpha = _orders(alpha)
    eps0, d0 = (0.0, 0.0) if isinstance(event, EventBatch) else event.approx_dp()
    has_rdp = True if isinstance(event, EventBatch) else event.has_rdp

    if exact and alpha is None and (eps0, d0) == (0.0, 0.0):
        mu = event.gdp_mu() if isinstance(event, PrivacyEvent) else _batch_mu(event)
        if mu is not None:
            e = gdp_epsilon(mu, d)
            dd = np.broadcast_to(d, np.shape(e))
            return Guarantee(e if e.ndim else float(e), dd if dd.ndim else float(dd), math.nan, math.nan,
                             conversion, "exact-gdp")
        eps_rr = _randomized_response(event)
        if eps_rr is not None:  # one pure epsilon-DP event: the exact profile of randomized response
            e = randomized_response_epsilon(eps_rr, d)
            dd = np.broadcast_to(d, np.shape(e))
            return Guarantee(e if e.ndim else float(e), dd if dd.ndim else float(dd), math.nan, math.nan,
                             conversion, "pure")

    d_rdp = d - d0
    if not has_rdp:  # only an (epsilon_0, delta_0) part
        e = np.where(d >= d0, eps0, np.inf)
        return Guarantee(e if e.ndim else float(e), d if d.ndim else float(d), math.nan, 0.0, conversion, "pure")

    rdp_fn: Callable[[np.ndarray], np.ndarray]
    if isinstance(event, EventBatch):
        shape = broadcast_shape(event.shape, d.shape, () if alpha is None else alpha.shape)
        S = math.prod(shape)
        flat_batch = event if event.shape == shape else _broadcast_batch(event, shape)
        amax = flat_batch.alpha_max().reshape(-1)
        # one setting per row: the parameters gathered once, not at every order the search tries
        rdp_fn = flat_batch.rdp_of_rows(None, amax) if flat_batch.by_rows else flat_batch.rdp_flat
    else:
        shape = broadcast_shape(d.shape, () if alpha is None else alpha.shape)
        S = math.prod(shape)
        amax = np.full(S, event.alpha_max)
        rdp_fn = event._search_curve()   # the parameters gathered once, not at every order
    lid = -np.log(read_only_broadcast(np.where(d_rdp > 0, d_rdp, 0.5), shape).reshape(-1))
    valid = read_only_broadcast(d_rdp > 0, shape).reshape(-1)

    with np.errstate(all="ignore"):
        if alpha is None:
            lid2 = lid[:, None]

            def objective(al):
                return epsilon_raw(rdp_fn(al), al, lid2, conversion)

            def of_rows(index):   # the objective of some settings alone (the search drops those it has found)
                rdp_rows, lid_rows = flat_batch.rdp_of_rows(index, amax), lid[index][:, None]
                return lambda al: epsilon_raw(rdp_rows(al), al, lid_rows, conversion)

            rows = of_rows if isinstance(event, EventBatch) and flat_batch.by_rows else None

            if not any_true(amax > 1.0):
                raise NumericalError("no finite epsilon can be certified: the event's Rényi bound holds at no order "
                                     "alpha > 1 in float64 (alpha_max <= 1; for a posterior sample: r too small for n "
                                     "and the kernel, where epsilon would exceed 1e30)")
            a_best, v_best = minimize_over_alpha(objective, np.maximum(amax, np.nextafter(1.0, 2.0) * (1 + 1e-12)),
                                                 rows=rows)
            if isinstance(event, PrivacyEvent):
                a_best = _try_candidates(event, objective, a_best, v_best, S)
        else:
            a_best = np.broadcast_to(alpha, shape).reshape(-1).astype(float)
        r = rdp_fn(a_best[:, None])[:, 0] if isinstance(event, EventBatch) else np.asarray(rdp_fn(a_best), float)
        e = epsilon_raw(r, a_best, lid, conversion) + eps0
        e = np.where(valid, e, np.inf)
    if any_true(np.isnan(e)) or any_true(np.isnan(r)):
        raise NumericalError("accountant: NaN epsilon from valid inputs")
    out = (lambda a: np.asarray(a, float).reshape(shape)) if shape else (lambda a: float(np.asarray(a).reshape(())))
    pure = event.pure_epsilon() if isinstance(event, PrivacyEvent) and alpha is None else None
    if pure is not None and all_true(e > pure):
        # an (epsilon, 0)-DP event is (epsilon, delta)-DP at every delta: at small deltas the RDP conversion
        # lands above its own epsilon (e.g. 1 + 3e-10 for PureDpEvent(1) at delta = 1e-12), so report epsilon
        return Guarantee(out(np.full(S, pure)), out(np.broadcast_to(d, shape)), out(np.full(S, math.nan)),
                         out(np.zeros(S)), conversion, "pure")
    if pure is not None:
        e = np.minimum(e, pure)   # a mixed array of deltas: the smaller bound at each (method stays "rdp")
    return Guarantee(out(e), out(read_only_broadcast(d, shape)), out(a_best), out(r), conversion, "rdp")


def _batch_mu(batch: EventBatch) -> np.ndarray | None:
    """mu of every setting of a batch of exactly-GDP events (None for other event types); for a
    :class:`ComposedBatch` of them, that of each composition (mu-GDP composes exactly)."""
    if isinstance(batch, ComposedBatch):
        if not issubclass(batch.event_type, GaussianCurve):
            return None
        mus = np.broadcast_to(np.asarray(batch.components.params["mu"], dtype=float), batch.weights.shape)
        return compose_mu_rows(mus, batch.weights)
    if issubclass(batch.event_type, GaussianCurve):
        return np.broadcast_to(np.asarray(batch.params["mu"], dtype=float), batch.shape)
    return None


def _randomized_response(event: PrivacyEvent | EventBatch) -> float | np.ndarray | None:
    """epsilon_0 of a single :class:`PureDpEvent` (or of every setting of a batch of them), whose exact
    profile is that of randomized response; None for any other event (a composition of pure events included)."""
    if isinstance(event, EventBatch):
        if event.event_type is PureDpEvent and not isinstance(event, ComposedBatch):
            return np.broadcast_to(np.asarray(event.params["epsilon"], dtype=float), event.shape)
        return None
    if isinstance(event, ComposedEvent) and len(event.events) == 1 and event.events[0][1] == 1:
        event = event.events[0][0]
    return event.epsilon if isinstance(event, PureDpEvent) else None


def _try_candidates(event: PrivacyEvent, objective: Callable[[np.ndarray], np.ndarray], a_best: np.ndarray,
                    v_best: np.ndarray, S: int) -> np.ndarray:
    """Also evaluate the event's candidate orders (e.g. the steps of a tabulated curve) and keep the
    better order per setting; the value is recomputed at the returned order by the caller."""
    cand = np.asarray(event.candidate_orders(), dtype=float)
    cand = cand[(cand > 1.0) & (cand < event.alpha_max)]
    if cand.size == 0:
        return a_best
    vals = np.asarray(objective(np.broadcast_to(cand, (S, cand.size))), dtype=float)
    j = np.argmin(vals, axis=1)
    better = vals[np.arange(S), j] < v_best
    return np.where(better, cand[j], a_best)


def _broadcast_batch(batch: EventBatch, shape: tuple[int, ...]) -> EventBatch:
    """The batch broadcast to a larger shape (e.g. against an array of deltas)."""
    params = {k: np.broadcast_to(np.broadcast_to(np.asarray(p, float), batch.shape), shape)
              for k, p in batch.params.items()}
    flds = {k: np.broadcast_to(np.broadcast_to(np.asarray(a), batch.shape), shape) for k, a in batch.fields.items()}
    return EventBatch(batch.event_type, tuple(shape), params, flds, batch.extra)


def delta(event: PrivacyEvent | EventBatch, epsilon_value: ArrayLike, *, conversion: str = "improved",
          alpha: ArrayLike | None = None, exact: bool = True, composition: str | None = None) -> Guarantee:
    """Certified (smallest found) delta of ``event`` at ``epsilon_value`` (capped at 1).
    ``composition``: "basic" or "profile" (module docstring, item 4); None: the rule in force."""
    _check_event(event)
    check_conversion(conversion)
    composition = resolve_composition(composition)
    if composition == "profile" and alpha is None and isinstance(event, PrivacyEvent):
        best = delta(event, epsilon_value, conversion=conversion, exact=exact, composition="basic")
        eps = np.asarray(epsilon_value, dtype=float)
        for prof in _profile_compositions(event, conversion, exact):
            dl = np.vectorize(prof.delta, otypes=[float])(eps)
            # without a curve part the profile is the composition's exact value (rounded up by 1e-12): a value
            # below it is a Renyi conversion's rounding at large orders (~1e-9 relative), not a guarantee
            below_exact = np.asarray(best.delta) < dl * (1 - 2e-12) if prof.rest is None else False
            better = (dl < np.asarray(best.delta)) | below_exact
            if not any_true(better):
                continue
            low = np.where(better, dl, best.delta)
            nan = np.full(np.shape(low), math.nan)
            best = Guarantee(best.epsilon, low if low.ndim else float(low), nan if nan.ndim else math.nan,
                             nan if nan.ndim else math.nan, conversion, "profile")
        return best
    eps = real_array("epsilon", epsilon_value)
    if any_true(~(eps >= 0)):
        raise InvalidParameterError("epsilon", ">= 0", eps)
    if alpha is not None:
        alpha = _orders(alpha)
    if isinstance(event, EventBatch):
        raise InvalidParameterError("event", "a single event for delta() (use epsilon() for batches)", "an EventBatch")
    eps0, d0 = event.approx_dp()
    if exact and alpha is None and (eps0, d0) == (0.0, 0.0):
        mu = event.gdp_mu()
        if mu is not None:
            dl = gdp_delta_upper(mu, eps)  # rounded up: never below the exact delta, never 0 for a positive one
            return Guarantee(eps if eps.ndim else float(eps), dl if dl.ndim else float(dl), math.nan, math.nan,
                             conversion, "exact-gdp")
    e_rdp = eps - eps0
    if not event.has_rdp:
        dl = np.where(e_rdp >= 0, d0, 1.0)
        return Guarantee(eps if eps.ndim else float(eps), dl if dl.ndim else float(dl), math.nan, 0.0, conversion, "pure")
    shape = np.broadcast_shapes(eps.shape, () if alpha is None else alpha.shape)
    S = math.prod(shape)
    e_flat = np.broadcast_to(e_rdp, shape).reshape(-1)
    ok = e_flat >= 0
    e_safe = np.where(ok, e_flat, 0.0)
    with np.errstate(all="ignore"):
        if alpha is None:
            e2 = e_safe[:, None]
            a_best, _ = minimize_over_alpha(lambda al: log_delta_raw(event.rdp(al), al, e2, conversion),
                                            np.full(S, event.alpha_max))
        else:
            a_best = np.broadcast_to(alpha, shape).reshape(-1).astype(float)
        r = np.asarray(event.rdp(a_best), float)
        ld = log_delta_raw(r, a_best, e_safe, conversion)
        # exp underflows to 0 below ~1e-308 (log delta < -745): a positive delta is never reported as 0 (a claim of
        # pure DP) but as the smallest positive float, above it
        dl = np.minimum(np.maximum(np.exp(ld), np.nextafter(0.0, 1.0)) + d0, 1.0)
        dl = np.where(ok, dl, 1.0)
    if any_true(np.isnan(dl)):
        raise NumericalError("accountant: NaN delta from valid inputs")
    out = (lambda a: np.asarray(a, float).reshape(shape)) if shape else (lambda a: float(np.asarray(a).reshape(())))
    return Guarantee(out(np.broadcast_to(eps, shape)), out(dl), out(a_best), out(r), conversion, "rdp")


# -- composition of (epsilon, delta)-only parts through privacy profiles (module docstring, item 4) --

def check_composition(composition: object) -> str:
    """``composition`` if it names a rule of :data:`COMPOSITIONS`; else InvalidParameterError."""
    if not isinstance(composition, str) or composition not in COMPOSITIONS:
        raise InvalidParameterError("composition", f"one of {COMPOSITIONS}", composition)
    return composition


def composition_in_force() -> str:
    """The rule ``composition=None`` means here: :data:`DEFAULT_COMPOSITION` unless a
    :func:`composition_rule` block says otherwise."""
    return _RULE_IN_FORCE.get()


def resolve_composition(composition: str | None) -> str:
    """``composition`` checked, or the rule in force when it is None."""
    return composition_in_force() if composition is None else check_composition(composition)


@contextmanager
def composition_rule(rule: str) -> Iterator[str]:
    """Within the block, ``composition=None`` means ``rule`` (for this thread / task only): how
    ``privgp verify`` rebuilds a certificate -- its calibrations included -- with the rule the
    certificate states."""
    token = _RULE_IN_FORCE.set(check_composition(rule))
    try:
        yield rule
    finally:
        _RULE_IN_FORCE.reset(token)


def _split_approx(event: PrivacyEvent, *, pure_parts: bool = False
                  ) -> tuple[PrivacyEvent | None, list[tuple[float, float, int]]] | None:
    """(the parts with a Renyi curve, composed; the (epsilon_i, delta_i, count_i) of the parts known
    only as (epsilon, delta)-DP), or None when a part has both a curve and an (epsilon, delta) term
    (its guarantee is not a composition of the two, so only basic composition applies) or there is
    no (epsilon, delta) part. ``pure_parts``: pure epsilon-DP parts count as (epsilon, 0) parts too, when
    the composition has a part that is not pure or at least two pure ones (module docstring, item 4); None
    when there is none of them (the split would be the one without ``pure_parts``) or only one."""
    items = event.events if isinstance(event, ComposedEvent) else ((event, 1),)
    curves: list[tuple[PrivacyEvent, int]] = []
    approx: list[tuple[float, float, int]] = []
    pure: list[tuple[PrivacyEvent, int, float]] = []
    for ev, c in items:
        e0, d0 = ev.approx_dp()
        pe = ev.pure_epsilon() if pure_parts and (e0, d0) == (0.0, 0.0) and ev.has_rdp else None
        if pe is not None and pe <= PURE_EPSILON_MAX and c < MAX_PURE_SUPPORT:  # else: a curve, as before
            pure.append((ev, c, float(pe)))
        elif (e0, d0) == (0.0, 0.0):
            if ev.has_rdp:
                curves.append((ev, c))
        elif ev.has_rdp:
            return None
        else:
            approx.append((float(e0), float(d0), int(c)))
    if pure_parts:
        if not pure or not (curves or approx or sum(c for _, c, _ in pure) >= 2):
            return None  # one pure part alone keeps its epsilon exactly
        approx += [(pe, 0.0, int(c)) for _, c, pe in pure]
    if not approx:
        return None
    rest = None if not curves else (curves[0][0] if curves == [(curves[0][0], 1)] else ComposedEvent.of(curves))
    return rest, approx


def _plus_side_pmf(c: int, e: float) -> np.ndarray:
    """P(k of c randomized-response outputs (epsilon e) fall on the "+" side), k = 0..c: the binomial pmf with
    p = 1 / (1 + e^-e), as exp(log C(c, k) - c log(1 + e^-e) - (c - k) e) with the binomial coefficient an exact
    integer (relative error ~1e-13, below the profile's 1e-12 round-up); scipy.stats' pmf beyond c = 1000 (its
    import, 0.3-0.5 s, is then paid only by compositions that large)."""
    if c > 1000:
        from scipy.stats import binom

        return np.asarray(binom.pmf(np.arange(c + 1), c, 1.0 / (1.0 + math.exp(-e))), dtype=float)
    log_comb = np.array([math.log(math.comb(c, k)) for k in range(c + 1)])
    return np.exp(log_comb - c * math.log1p(math.exp(-e)) - (c - np.arange(c + 1)) * e)


class _ProfileComposition:
    """delta(eps) of the curve part composed with (epsilon_i, delta_i)-DP parts (module docstring, item 4)."""

    def __init__(self, rest: PrivacyEvent | None, approx: list[tuple[float, float, int]], *, conversion: str,
                 exact: bool, max_support: int = MAX_PROFILE_SUPPORT) -> None:
        self.rest, self.conversion, self.exact = rest, conversion, exact
        shifts, weights = np.zeros(1), np.ones(1)
        log_clean = 0.0
        for e, d, c in approx:
            log_clean += c * math.log1p(-d)
            k = np.arange(c + 1)
            w = _plus_side_pmf(c, e)  # k of the c outputs on the "+" side
            keep = w > 0
            shifts = (shifts[:, None] + ((2 * k[keep] - c) * e)[None, :]).reshape(-1)
            weights = (weights[:, None] * w[keep][None, :]).reshape(-1)
            if shifts.size > max_support:
                raise _TooLarge
        self.shifts, self.weights = shifts, weights
        self.clean = math.exp(log_clean)  # probability that no part takes its delta branch
        # 1 - clean, the probability that one does: rounded up, so that delta is never reported below it
        self.floor = min(1.0, -math.expm1(log_clean) * (1.0 + 1e-12))

    def _rest_delta(self, x: np.ndarray) -> np.ndarray:
        """The curve part's profile at x >= 0 (0 without a curve part)."""
        if self.rest is None:
            return np.zeros_like(x)
        return np.asarray(delta(self.rest, x, conversion=self.conversion, exact=self.exact, composition="basic").delta,
                          dtype=float)

    def delta(self, eps: float) -> float:
        if not eps >= 0:
            return 1.0
        x = eps - self.shifts
        pos = self._rest_delta(np.abs(x))
        with np.errstate(over="ignore"):
            ex = np.exp(np.minimum(x, 0.0))
        two_sided = np.where(x >= 0, pos, -np.expm1(np.minimum(x, 0.0)) + ex * pos)  # 1 - e^x without cancellation
        # rounded up by 1e-12 relative: float rounding of the sum never brings delta below the exact value
        rest = self.clean * float(np.dot(self.weights, np.clip(two_sided, 0.0, 1.0))) * (1.0 + 1e-12)
        total = self.floor + rest
        if rest > 0 and not total > self.floor:  # a part below the floor's last digit: still above it
            total = math.nextafter(self.floor, 2.0)
        return min(1.0, total)

    def epsilon(self, target: float, upper: float) -> float:
        """The smallest eps found with delta(eps) <= target (bisection; the feasible end is returned);
        +inf when none up to ``upper`` (or 1e4 when ``upper`` is infinite) or ``target`` is below the
        probability that a part takes its delta branch."""
        if target < self.floor:
            return math.inf
        if self.delta(0.0) <= target:
            return 0.0
        hi = upper if math.isfinite(upper) else 1e4
        if self.delta(hi) > target:
            return math.inf
        lo = 0.0
        for _ in range(200):
            if hi - lo <= 1e-12 * hi:
                break
            mid = 0.5 * (lo + hi)
            if self.delta(mid) <= target:
                hi = mid
            else:
                lo = mid
        return hi


class _TooLarge(Exception):
    """The profile composition's support would exceed its cap (MAX_PROFILE_SUPPORT, MAX_PURE_SUPPORT)."""


def _profile_compositions(event: PrivacyEvent, conversion: str, exact: bool) -> Iterator[_ProfileComposition]:
    """The profile compositions the rule tries: the (epsilon, delta)-only parts with the rest, and the same
    with pure parts as randomized response (module docstring, item 4); a split whose support is too large
    is skipped (basic composition stands for it)."""
    for pure_parts in (False, True):
        split = _split_approx(event, pure_parts=pure_parts)
        if split is None:
            continue
        try:
            yield _ProfileComposition(*split, conversion=conversion, exact=exact,
                                      max_support=MAX_PURE_SUPPORT if pure_parts else MAX_PROFILE_SUPPORT)
        except _TooLarge:
            continue


def _profile_epsilon(event: PrivacyEvent, basic: Guarantee, conversion: str, exact: bool) -> Guarantee:
    """The smallest of basic composition's epsilon and those of the profile compositions (the exact one, when a
    profile composition has no curve part)."""
    best = basic
    d = np.asarray(basic.delta, dtype=float)
    for prof in _profile_compositions(event, conversion, exact):
        e_best = np.asarray(best.epsilon, dtype=float)
        # without a curve part the profile is the composition's exact value: where the epsilon found so far does
        # not meet delta under it (a Renyi conversion's rounding at large orders, ~1e-9 relative in delta), the
        # profile's own epsilon is reported, searched up to twice that value
        tight = prof.rest is None
        upper = 2.0 * e_best + 1.0 if tight else e_best
        e = np.array([prof.epsilon(float(t), float(u))
                      for t, u in zip(d.reshape(-1), np.broadcast_to(upper, d.shape).reshape(-1))]).reshape(d.shape)
        infeasible: bool | np.ndarray = False
        if tight:
            infeasible = np.array([np.isfinite(eb) and prof.delta(float(eb)) > float(t)
                                   for eb, t in zip(np.broadcast_to(e_best, d.shape).reshape(-1), d.reshape(-1))]
                                  ).reshape(d.shape)
        better = (e < e_best) | (infeasible & np.isfinite(e))
        if not any_true(better):
            continue
        low = np.where(better, e, e_best)
        nan = np.full(d.shape, math.nan)
        best = Guarantee(low if low.ndim else float(low), basic.delta, nan if nan.ndim else math.nan,
                         nan if nan.ndim else math.nan, conversion, "profile")
    return best
