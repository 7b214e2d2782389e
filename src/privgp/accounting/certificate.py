"""Privacy certificates: an immutable, JSON-serialisable record of one certified release.

A :class:`PrivacyCertificate` holds the release's privacy *event* (JSON), the guarantee computed
from it by the accountant (epsilon, delta, the order alpha and RDP value it was converted from, the
conversion rule and method, and the composition rule it was computed with), the lemmas used with their derived numbers (``details``, e.g. V_n and
Delta_n), the assumptions in words, and the public settings of the mechanism that are not part of
the event (kernel, lengthscale, domain, ...). ``covered`` is False when the number is not covered by
a proven result (published constants), and ``warnings`` says why.

:func:`certify` is the only way to build one; :meth:`PrivacyCertificate.recompute` rebuilds it from
the recorded event through the same accountant, with the certificate's own composition rule (so a reader can check a published certificate with
``PrivacyCertificate.from_json(text).recompute() == cert``). Infinite values are written as the
string "inf" (JSON has no infinity).

``composition`` names the accountant's rule for (epsilon, delta)-only parts
(:mod:`privgp.accounting.accountant`, item 4): "profile" for certificates of privgp 0.2 on, and
"basic" for a certificate that states none (privgp 0.1 wrote none and used basic composition), so an
old certificate recomputes to the numbers it shows.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .. import validation as v
from .._version import __version__
from ..errors import InvalidParameterError
from ..formatting import format_lower, format_upper
from . import accountant
from .accountant import LEGACY_COMPOSITION, check_composition, resolve_composition
from .conversion import check_conversion
from .events import PrivacyEvent, event_from_dict, json_number

_CONVERSION_NAMES = {"improved": "Canonne-Kamath-Steinke 2020, Prop. 12", "mironov": "Mironov 2017, Prop. 3"}


def _jsonify(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonify(val) for k, val in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonify(val) for val in x]
    if isinstance(x, float) and math.isnan(x):
        return None
    return json_number(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else x


def _detail(x: Any) -> Any:
    """A details value from JSON: numbers (with "inf"/null) back to floats, other strings kept."""
    if x is None or x in ("inf", "-inf") or (isinstance(x, (int, float)) and not isinstance(x, bool)):
        return _float(x)
    return x


def _float(x: Any) -> float:
    return math.nan if x is None else float(x)


@dataclass(frozen=True, eq=True)
class PrivacyCertificate:
    """Everything needed to state, check and reproduce one (epsilon, delta) guarantee."""

    event: PrivacyEvent
    mechanism: str
    solved_for: str            # "epsilon" (given delta) or "delta" (given epsilon)
    epsilon: float
    delta: float
    alpha: float               # the order converted from (NaN for the exact GDP profile / pure DP)
    rdp: float                 # the RDP value at alpha (NaN when not converted from RDP)
    conversion: str
    method: str                # "rdp", "exact-gdp", "pure" or "profile"
    alpha_optimised: bool
    covered: bool
    lemmas: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    details: dict = field(default_factory=dict, hash=False)
    public: dict = field(default_factory=dict, hash=False)
    privgp_version: str = __version__
    composition: str = LEGACY_COMPOSITION  # the accountant's composition rule (module docstring)

    __hash__ = None  # type: ignore[assignment]  # holds dicts: compare, do not hash

    def to_dict(self) -> dict:
        """A JSON-ready dict (infinite numbers as the string "inf", NaN as null)."""
        return {
            "mechanism": self.mechanism, "event": self.event.to_dict(), "solved_for": self.solved_for,
            "epsilon": _jsonify(self.epsilon), "delta": _jsonify(self.delta), "alpha": _jsonify(self.alpha),
            "rdp": _jsonify(self.rdp), "conversion": self.conversion, "method": self.method,
            "composition": self.composition, "alpha_optimised": self.alpha_optimised, "covered": self.covered, "lemmas": list(self.lemmas),
            "warnings": list(self.warnings), "assumptions": list(self.assumptions),
            "details": _jsonify(self.details), "public": _jsonify(self.public),
            "privgp_version": self.privgp_version,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict) -> PrivacyCertificate:
        """Inverse of :meth:`to_dict`."""
        try:
            details = {k: _detail(x) for k, x in dict(d.get("details", {})).items()}
            return cls(event=event_from_dict(d["event"]), mechanism=str(d["mechanism"]),
                       solved_for=str(d["solved_for"]), epsilon=_float(d["epsilon"]), delta=_float(d["delta"]),
                       alpha=_float(d["alpha"]), rdp=_float(d["rdp"]), conversion=str(d["conversion"]),
                       method=str(d["method"]), alpha_optimised=bool(d["alpha_optimised"]),
                       covered=bool(d["covered"]), lemmas=tuple(str(s) for s in d.get("lemmas", ())),
                       warnings=tuple(str(s) for s in d.get("warnings", ())),
                       assumptions=tuple(str(s) for s in d.get("assumptions", ())), details=details,
                       public=dict(d.get("public", {})), privgp_version=str(d.get("privgp_version", "")),
                       composition=check_composition(d.get("composition", LEGACY_COMPOSITION)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidParameterError("certificate", "a dict written by PrivacyCertificate.to_dict",
                                        f"missing or malformed field ({exc})") from None

    @classmethod
    def from_json(cls, text: str) -> PrivacyCertificate:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise InvalidParameterError("certificate", "valid JSON", str(exc)) from None

    def recompute(self) -> PrivacyCertificate:
        """A fresh certificate from the recorded event through the same accountant and composition rule
        (same alpha when it was given, not optimised)."""
        return certify(self.event, delta=self.delta if self.solved_for == "epsilon" else None,
                       epsilon=self.epsilon if self.solved_for == "delta" else None,
                       conversion=self.conversion, alpha=None if self.alpha_optimised else self.alpha,
                       exact=self.method != "rdp", composition=self.composition,
                       mechanism=self.mechanism, public=self.public, extra_assumptions=self._extra_assumptions())

    def _extra_assumptions(self) -> tuple[str, ...]:
        own = set(self.event.assumptions())
        return tuple(a for a in self.assumptions if a not in own)

    def summary(self, order: str | None = None) -> str:
        """A readable multi-line summary (for the CLI). ``order``: how the Renyi order came about, in words, where
        the caller knows better than ``alpha_optimised`` (``privgp verify`` of an order that is not the optimiser's);
        default "optimised" or "given"."""
        head = f"({format_upper(self.epsilon, 6)}, {format_upper(self.delta, 6)})-DP: {self.mechanism}"
        if self.epsilon == 0 and self.delta > 0:
            head += (f"   [epsilon = 0 is NOT perfect privacy: the whole guarantee is in delta = "
                     f"{format_upper(self.delta)}, the probability that the release may reveal a record outright]")
        if not self.covered:
            head += "   [NOT COVERED by the lemmas: published constants]"
        lines = [head, f"  event:       {self.event.describe()}"]
        for k, val in self.public.items():
            lines.append(f"  {k + ':':<12} {val}")
        for k, val in self.details.items():
            lines.append(f"  {k + ':':<12} {_detail_text(k, val)}" if isinstance(val, float) else f"  {k + ':':<12} {val}")
        if self.method == "rdp":
            lines.append(f"  order:       alpha = {self.alpha:.6g} ({order or ('optimised' if self.alpha_optimised else 'given')}); "
                         f"RDP {format_upper(self.rdp, 6)}")
            lines.append(f"  conversion:  {self.conversion} ({_CONVERSION_NAMES[self.conversion]})")
        elif self.method == "exact-gdp":
            lines.append("  conversion:  exact Gaussian-DP privacy profile (no RDP conversion)")
        elif self.method == "profile":
            lines.append("  composition: the (epsilon, delta) parts composed through privacy profiles (exact f-DP "
                         "composition: Kairouz-Oh-Viswanath 2015, Thm 2.1; Dong-Roth-Su 2022, Thm 3.2)")
        lines.append("  proofs:")
        lines.extend(f"    - {x}" for x in self.lemmas)
        for w in self.warnings:
            lines.append(f"  WARNING: {w}")
        if self.assumptions:
            lines.append("  assumptions:")
            lines.extend(f"    - {a}" for a in self.assumptions)
        else:
            lines.append("  assumptions: none")
        return "\n".join(lines)


#: the details that are bounds of a certificate (printed rounded up: GDP mu, (epsilon, delta) totals, the
#: sensitivity and variance bounds, tau~ = 1 / (alpha_max - 1)) and the one whose larger value would claim more
#: (the largest valid Renyi order, printed rounded down); the other details are printed to nearest
_DETAILS_UP = frozenset({"mu", "epsilon_total", "delta_total", "delta2", "V_n", "tau", "Delta_n", "Delta_density",
                         "Delta_signal"})
_DETAILS_DOWN = frozenset({"alpha_max"})


def _detail_text(key: str, val: float) -> str:
    """One float of a certificate's details as :meth:`PrivacyCertificate.summary` prints it."""
    if key in _DETAILS_UP:
        return format_upper(val, 6, nan="nan")
    if key in _DETAILS_DOWN:
        return format_lower(val, 6, nan="nan")
    return f"{val:.6g}"


def certify(event: PrivacyEvent, delta: float | None = None, *, epsilon: float | None = None,
            conversion: str = "improved", alpha: float | None = None,
            exact: bool = True, mechanism: str | None = None, public: dict | None = None,
            extra_assumptions: tuple[str, ...] = (), composition: str | None = None) -> PrivacyCertificate:
    """Certify a release described by ``event`` through the accountant.

    Exactly one of ``delta`` (report epsilon) and ``epsilon`` (report the smallest delta found).
    ``alpha`` evaluates the RDP conversion at that order instead of optimising; ``exact`` allows the
    exact GDP profile where the event has one. ``mechanism``/``public``/``extra_assumptions`` are the
    mechanism's own words and public settings, recorded as given. ``composition``: the accountant's
    rule for (epsilon, delta)-only parts, recorded in the certificate (None: the rule in force,
    :func:`privgp.accounting.accountant.composition_in_force`; "profile" unless inside
    :func:`~privgp.accounting.accountant.composition_rule`).
    """
    if not isinstance(event, PrivacyEvent):
        raise InvalidParameterError("event", "a PrivacyEvent", type(event).__name__)
    check_conversion(conversion)
    composition = resolve_composition(composition)
    if (delta is None) == (epsilon is None):
        raise InvalidParameterError("delta/epsilon", "exactly one of delta and epsilon", (delta, epsilon))
    if alpha is not None:
        alpha = v.greater_than("alpha", alpha, 1.0)
    if delta is not None:
        delta = v.probability("delta", delta)
        g = accountant.epsilon(event, delta, conversion=conversion, alpha=alpha, exact=exact, composition=composition)
        solved = "epsilon"
    else:
        epsilon = v.nonnegative("epsilon", epsilon)
        g = accountant.delta(event, epsilon, conversion=conversion, alpha=alpha, exact=exact, composition=composition)
        solved = "delta"
    eps, dlt = float(g.epsilon), float(g.delta)
    warnings = list(event.notes())
    if not math.isfinite(eps):
        amax = event.alpha_max
        warnings.append("epsilon is +inf: no finite guarantee at this setting" +
                        (" (alpha is outside the admissible range 1 < alpha < alpha_max)"
                         if alpha is not None and alpha >= amax else ""))
    if solved == "delta" and dlt >= 1.0:
        warnings.append("delta = 1: no guarantee at this epsilon")
    if not event.covered and not any("NOT covered" in w for w in warnings):
        warnings.append("not covered by the lemmas")
    details = dict(event.details())
    return PrivacyCertificate(
        event=event, mechanism=mechanism or event.describe(), solved_for=solved, epsilon=eps, delta=dlt,
        alpha=float(g.alpha), rdp=float(g.rdp), conversion=conversion, method=g.method,
        alpha_optimised=alpha is None, covered=bool(event.covered), lemmas=tuple(event.lemmas()),
        warnings=tuple(warnings), assumptions=tuple(event.assumptions()) + tuple(extra_assumptions),
        details=details, public=dict(public or {}), composition=composition)
