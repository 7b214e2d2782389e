"""Printing numbers that are bounds: rounded so that the printed value is never below the true one (a spent or
guaranteed epsilon), or never above it (what remains of a budget)."""
from __future__ import annotations

import math

from .errors import InvalidParameterError

__all__ = ["format_lower", "format_upper"]


def format_upper(x: float, digits: int = 3, *, nan: str | None = None) -> str:
    """``x`` with ``digits`` significant digits, rounded UP (never below ``x``): how a bound is printed.

    +inf prints as "inf"; NaN is refused (a guarantee is never NaN), or printed as ``nan`` where one is given
    (a quantity that may be undefined, e.g. a ratio to a zero bound)."""
    if nan is not None and math.isnan(float(x)):
        return nan
    return _directed(x, digits, up=True, name="bound", what="a number or +inf (a guarantee is never NaN)")


def format_lower(x: float, digits: int = 3, *, nan: str | None = None) -> str:
    """``x`` with ``digits`` significant digits, rounded DOWN (never above ``x``): how what remains of a budget,
    or a lower bound (an audit's measured leakage), is printed. NaN is refused, or printed as ``nan`` where one
    is given."""
    if nan is not None and math.isnan(float(x)):
        return nan
    return _directed(x, digits, up=False, name="value", what="a number (never NaN)")


def _directed(x: float, digits: int, *, up: bool, name: str, what: str) -> str:
    """``x`` to ``digits`` significant digits, moved by units in the last shown place until it is on the wanted
    side of ``x`` (at least ``x`` when ``up``, at most ``x`` otherwise)."""
    x = float(x)
    if math.isnan(x):
        raise InvalidParameterError(name, what, x)
    if math.isinf(x) or x == 0:
        return f"{x:g}"
    text = f"{x:.{digits}g}"
    step = 10.0 ** (math.floor(math.log10(abs(x))) - digits + 1)  # one unit in the last shown place
    val = float(text)
    while (val < x) if up else (val > x):
        val += step if up else -step
        text = f"{val:.{digits}g}"
        val = float(text)
    return text
