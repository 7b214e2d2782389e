"""RDP -> (epsilon, delta) conversions (pure maths, broadcasting).

* ``mironov``: Mironov (2017), Prop. 3 — the rule of seed 000, eq. (3):
      eps = rdp + log(1/delta) / (alpha - 1).
* ``improved`` (default): Canonne, Kamath & Steinke (2020), Prop. 12, equivalently Balle et al.
  (2020), Thm 21:
      eps = rdp + log((alpha-1)/alpha) - (log delta + log alpha) / (alpha - 1),
  never larger than Mironov's, since log((alpha-1)/alpha) < 0 and log(alpha)/(alpha-1) > 0.
  A negative value means (0, delta)-DP; it is reported as 0.

The inverse maps give delta for a target epsilon at one order; optimisation over alpha lives in
:mod:`privgp.accounting.optimize`.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidParameterError

CONVERSIONS = ("improved", "mironov")


def check_conversion(conversion: str) -> str:
    if conversion not in CONVERSIONS:
        raise InvalidParameterError("conversion", f"one of {CONVERSIONS}", conversion)
    return conversion


def epsilon_from_rdp(rdp, alpha, delta, conversion: str = "improved"):
    """epsilon such that an (alpha, rdp)-RDP mechanism is (epsilon, delta)-DP."""
    check_conversion(conversion)
    rdp, alpha, delta = (np.asarray(a, dtype=float) for a in (rdp, alpha, delta))
    am1 = alpha - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        log_inv_delta = -np.log(delta)
        if conversion == "mironov":
            eps = rdp + log_inv_delta / am1
        else:
            eps = rdp + np.log(am1 / alpha) + (log_inv_delta - np.log(alpha)) / am1
            eps = np.maximum(eps, 0.0)
        eps = np.where(np.isposinf(rdp), np.inf, eps)
    return eps


def log_delta_from_rdp(rdp, alpha, epsilon, conversion: str = "improved"):
    """log delta such that an (alpha, rdp)-RDP mechanism is (epsilon, delta)-DP (capped at log 1 = 0)."""
    check_conversion(conversion)
    rdp, alpha, epsilon = (np.asarray(a, dtype=float) for a in (rdp, alpha, epsilon))
    am1 = alpha - 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = am1 * (rdp - epsilon)
        if conversion == "improved":
            out = out + am1 * np.log(am1 / alpha) - np.log(alpha)
        out = np.where(np.isposinf(rdp), 0.0, out)
    return np.minimum(out, 0.0)
