"""RDP curves and their composition: one accountant for every mechanism.

An :class:`RdpCurve` is a guarantee alpha -> eps(alpha), finite on 1 < alpha < alpha_max. Adaptive
composition adds curves (Mironov 2017, Prop. 1; seed 000, eq. (3)); L independent draws are L times
one curve. Conversion to (epsilon, delta) minimises over the admissible orders.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import validation as v
from .conversion import check_conversion, epsilon_from_rdp, log_delta_from_rdp
from .optimize import minimize_over_alpha


@dataclass(frozen=True)
class DPGuarantee:
    """An (epsilon, delta)-DP statement with the order and RDP value it was converted from."""

    epsilon: float
    delta: float
    alpha: float
    rdp: float
    conversion: str

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "alpha": self.alpha, "rdp": self.rdp,
                "conversion": self.conversion}


@dataclass(frozen=True)
class RdpCurve:
    """alpha -> RDP epsilon(alpha), vectorised; +inf at and beyond alpha_max."""

    fn: Callable[[np.ndarray], np.ndarray]
    alpha_max: float = np.inf
    label: str = "rdp"

    def __call__(self, alpha) -> np.ndarray:
        alpha = np.asarray(alpha, dtype=float)
        with np.errstate(invalid="ignore"):
            inside = (alpha > 1.0) & (alpha < self.alpha_max)
        safe = np.where(inside, alpha, np.minimum(1.5, 1.0 + 0.5 * (self.alpha_max - 1.0)))
        return np.where(inside, np.asarray(self.fn(safe), dtype=float), np.inf)

    def __add__(self, other: "RdpCurve") -> "RdpCurve":
        a, b = self, other
        return RdpCurve(lambda al: a(al) + b(al), min(a.alpha_max, b.alpha_max), f"{a.label} + {b.label}")

    def times(self, L: int) -> "RdpCurve":
        """L-fold composition (L independent releases of the same mechanism)."""
        L = v.integer("L", L, minimum=1)
        base = self
        return RdpCurve(lambda al: L * base(al), base.alpha_max, f"{L} x {base.label}")

    def epsilon(self, delta: float, conversion: str = "improved") -> DPGuarantee:
        """Smallest epsilon found over admissible alpha for the given delta."""
        delta = v.probability("delta", delta)
        check_conversion(conversion)
        alpha, _ = minimize_over_alpha(
            lambda al: epsilon_from_rdp(self(al), al, delta, conversion), np.array([self.alpha_max]))
        a = float(alpha[0])
        rdp = float(self(a))
        eps = float(epsilon_from_rdp(rdp, a, delta, conversion))  # recomputed at the reported alpha
        return DPGuarantee(eps, delta, a, rdp, conversion)

    def delta(self, epsilon: float, conversion: str = "improved") -> DPGuarantee:
        """Smallest delta found over admissible alpha for the given epsilon (capped at 1)."""
        epsilon = v.nonnegative("epsilon", epsilon)
        check_conversion(conversion)
        alpha, _ = minimize_over_alpha(
            lambda al: log_delta_from_rdp(self(al), al, epsilon, conversion), np.array([self.alpha_max]))
        a = float(alpha[0])
        rdp = float(self(a))
        d = float(np.exp(log_delta_from_rdp(rdp, a, epsilon, conversion)))
        return DPGuarantee(epsilon, d, a, rdp, conversion)


def compose(curves) -> RdpCurve:
    """Sum of RDP curves (adaptive composition)."""
    curves = list(curves)
    if not curves:
        raise v.InvalidParameterError("curves", "at least one RDP curve", curves)
    out = curves[0]
    for c in curves[1:]:
        out = out + c
    return out
