"""Printing numbers that are bounds: rounded so that the printed value is never below the true one (a spent or
guaranteed epsilon), or never above it (what remains of a budget)."""
from __future__ import annotations

import math

from .errors import InvalidParameterError

__all__ = ["format_lower", "format_upper"]


def format_upper(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits, rounded UP (never below ``x``): how a bound is printed.

    +inf prints as "inf"; NaN is refused (a guarantee is never NaN)."""
    x = float(x)
    if math.isnan(x):
        raise InvalidParameterError("bound", "a number or +inf (a guarantee is never NaN)", x)
    if math.isinf(x) or x == 0:
        return f"{x:g}"
    text = f"{x:.{digits}g}"
    step = 10.0 ** (math.floor(math.log10(abs(x))) - digits + 1)  # one unit in the last shown place
    val = float(text)
    while val < x:  # rounded down: go up by units in the last place until the printed value is >= x
        val += step
        text = f"{val:.{digits}g}"
        val = float(text)
    return text


def format_lower(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits, rounded DOWN (never above ``x``): how what remains of a budget is
    printed. NaN is refused."""
    x = float(x)
    if math.isnan(x):
        raise InvalidParameterError("value", "a number (never NaN)", x)
    if math.isinf(x) or x == 0:
        return f"{x:g}"
    text = f"{x:.{digits}g}"
    step = 10.0 ** (math.floor(math.log10(abs(x))) - digits + 1)  # one unit in the last shown place
    val = float(text)
    while val > x:  # rounded up: go down by units in the last place until the printed value is <= x
        val -= step
        text = f"{val:.{digits}g}"
        val = float(text)
    return text
