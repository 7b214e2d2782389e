"""Printing numbers that are bounds: rounded so that the printed value is never below the true one (a spent or
guaranteed epsilon), or never above it (what remains of a budget)."""
from __future__ import annotations

import math

from .errors import InvalidParameterError

__all__ = ["exact_number", "format_lower", "format_short_of", "format_upper", "short_number"]


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


def exact_number(x: float) -> str:
    """``x`` in the fewest significant digits that read back as exactly ``x`` ("500000.5", "1234567", "50", "0.1"):
    how a public setting a data holder typed is stated (``{:g}`` keeps 6 digits: 4312345 read as 4.31234e+06)."""
    x = float(x)
    if not math.isfinite(x):
        return f"{x:g}"
    text = repr(x)   # the shortest text that reads back as x
    return text[:-2] if text.endswith(".0") else text


def short_number(x: float, rel: float = 1e-9) -> str:
    """``x`` in the fewest significant digits (up to 17) within ``rel`` (relative) of it: a computed round value
    such as an axis tick (0.30000000000000004 as "0.3") without dropping the digits that tell ticks apart."""
    x = float(x)
    if not math.isfinite(x) or x == 0:
        return f"{x:g}"
    for digits in range(1, 18):
        rounded = float(f"{x:.{digits}g}")
        if abs(rounded - x) <= rel * abs(x):
            return exact_number(rounded)
    return exact_number(x)   # pragma: no cover - 17 significant digits always read back


def format_short_of(x: float, line: float, decimals: int = 2) -> str:
    """``x`` to ``decimals`` decimals, rounded down where rounding to nearest would reach a ``line`` it is below
    (a forecast's IoU of 0.497 against the refusal line 0.5 is "0.49", not "0.50")."""
    text = f"{x:.{decimals}f}"
    if x < line and float(text) >= line:
        text = f"{math.floor(x * 10 ** decimals) / 10 ** decimals:.{decimals}f}"
    return text
