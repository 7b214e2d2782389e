"""RDP -> (epsilon, delta) conversions (pure maths, broadcasting).

* ``mironov``: Mironov (2017), Prop. 3 — the rule of seed 000, eq. (3):
      eps = rdp + log(1/delta) / (alpha - 1).
* ``improved`` (default): Canonne, Kamath & Steinke (2020), Prop. 12, equivalently Balle et al.
  (2020), Thm 21:
      eps = rdp + log((alpha-1)/alpha) - (log delta + log alpha) / (alpha - 1),
  never larger than Mironov's, since log((alpha-1)/alpha) < 0 and log(alpha)/(alpha-1) > 0.
  A negative value means (0, delta)-DP; it is reported as 0.

The inverse maps give delta for a target epsilon at one order; optimisation over alpha lives in
:mod:`privgp.accounting.order_search`.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidParameterError
from ..validation import any_true, where_any

CONVERSIONS = ("improved", "mironov")


def check_conversion(conversion: str) -> str:
    if conversion not in CONVERSIONS:
        raise InvalidParameterError("conversion", f"one of {CONVERSIONS}", conversion)
    return conversion


def epsilon_raw(rdp: np.ndarray, alpha: np.ndarray, log_inv_delta: np.ndarray | float, conversion: str) -> np.ndarray:
    """epsilon_from_rdp on float arrays with log(1/delta) precomputed and no checks (under errstate)."""
    am1 = alpha - 1.0
    if conversion == "mironov":
        eps = rdp + log_inv_delta / am1
    else:
        eps = rdp + np.log(am1 / alpha) + (log_inv_delta - np.log(alpha)) / am1
        eps = np.maximum(eps, 0.0)
    return where_any(rdp == np.inf, np.inf, eps)


def _check_rdp_and_order(rdp: np.ndarray, alpha: np.ndarray) -> None:
    """An RDP value is >= 0 or +inf, never NaN; an order is finite and > 1 (red team 18d: NaN in, NaN out as a
    guarantee)."""
    if any_true(~(alpha > 1.0)) or any_true(np.isinf(alpha)):
        raise InvalidParameterError("alpha", "finite and > 1 (Rényi order)", alpha)
    if any_true(~(rdp >= 0.0)):
        raise InvalidParameterError("rdp", ">= 0 or +inf (a Rényi divergence bound)", rdp)


def epsilon_from_rdp(rdp: ArrayLike, alpha: ArrayLike, delta: ArrayLike, conversion: str = "improved") -> np.ndarray:
    """epsilon such that an (alpha, rdp)-RDP mechanism is (epsilon, delta)-DP."""
    check_conversion(conversion)
    rdp, alpha, delta = (np.asarray(a, dtype=float) for a in (rdp, alpha, delta))
    _check_rdp_and_order(rdp, alpha)
    if any_true(~((delta > 0) & (delta < 1))):
        raise InvalidParameterError("delta", "in the open interval (0, 1)", delta)
    with np.errstate(all="ignore"):
        return epsilon_raw(rdp, alpha, -np.log(delta), conversion)


def log_delta_raw(rdp: np.ndarray, alpha: np.ndarray, epsilon: np.ndarray | float, conversion: str) -> np.ndarray:
    """log_delta_from_rdp on float arrays without checks (under errstate); capped at log 1 = 0."""
    am1 = alpha - 1.0
    out = am1 * (rdp - epsilon)
    if conversion == "improved":
        # (alpha - 1) log(1 - 1/alpha) - log alpha: log1p keeps it to a few ulp (log of the rounded ratio
        # (alpha - 1) / alpha, times alpha - 1, erred by alpha ulp: a delta 1e-3 below the bound at alpha ~ 1e13)
        out = out + am1 * np.log1p(-1.0 / alpha) - np.log(alpha)
    out = np.where(np.isposinf(rdp), 0.0, out)
    return np.minimum(out, 0.0)


def log_delta_from_rdp(rdp: ArrayLike, alpha: ArrayLike, epsilon: ArrayLike, conversion: str = "improved") -> np.ndarray:
    """log delta such that an (alpha, rdp)-RDP mechanism is (epsilon, delta)-DP (capped at log 1 = 0)."""
    check_conversion(conversion)
    rdp, alpha, epsilon = (np.asarray(a, dtype=float) for a in (rdp, alpha, epsilon))
    _check_rdp_and_order(rdp, alpha)
    if any_true(~(epsilon >= 0)):
        raise InvalidParameterError("epsilon", ">= 0", epsilon)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return log_delta_raw(rdp, alpha, epsilon, conversion)
