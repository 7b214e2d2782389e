"""One place for input validation.

Each checker returns the cleaned value or raises :class:`~privgp.errors.InvalidParameterError`
naming the parameter, the requirement and the value found.
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, SupportsInt, cast

import numpy as np

from .errors import InvalidParameterError

#: up to this many values, :func:`any_true` and :func:`all_true` count the true ones (``np.count_nonzero``, about 0.5 µs
#: against 1.4 µs for ``ndarray.any`` on 41 values); above, numpy's any/all, which stop at the first decisive value
SMALL = 1024


def any_true(mask: Any) -> bool:
    """``bool(np.any(mask))`` without numpy's dispatch for a single value: ``np.any`` of a 0-d array costs about 9 µs
    on a slow core and this about 0.5 µs (issue 30: the accountant's one-setting path makes some 25 such checks per
    epsilon; small masks are counted, see ``SMALL``). The same answer for every input, NaN counting as true and an
    empty mask as false."""
    a = np.asarray(mask)
    if a.size == 1:
        return bool(a)
    return bool(np.count_nonzero(a)) if a.size <= SMALL else bool(a.any())


def all_true(mask: Any) -> bool:
    """``bool(np.all(mask))`` without numpy's dispatch for a single value (see :func:`any_true`); an empty mask is
    true."""
    a = np.asarray(mask)
    if a.size == 1:
        return bool(a)
    return bool(np.count_nonzero(a) == a.size) if a.size <= SMALL else bool(a.all())


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """``np.broadcast_shapes(*shapes)``, directly where all the shapes are one (about 0.3 µs instead of numpy's 6 µs,
    which makes an array per shape; the accountant's one-setting path asks this several times per epsilon, issue 30)."""
    first = tuple(shapes[0]) if shapes else ()
    if all(tuple(s) == first for s in shapes[1:]):
        return first
    return np.broadcast_shapes(*shapes)


def where_any(cond: np.ndarray, value: float, out: np.ndarray) -> np.ndarray:
    """``np.where(cond, value, out)`` for an ``out`` that already has the shape of the result (``cond`` broadcasts to
    it): ``out`` itself where ``cond`` is false everywhere. For many values, testing a mask costs about a third of the
    selection, and the accountant's masks of inadmissible orders are false almost everywhere in its search (issue
    30); for few (up to ``SMALL``), the selection is made directly. The same values either way."""
    if isinstance(out, np.ndarray) and out.size > SMALL and not any_true(cond):
        return out
    return np.where(cond, value, out)


def read_only_broadcast(a: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``np.broadcast_to(a, shape)``: a read-only view of ``a`` (as an array) with that shape. Where ``a`` already has
    it, the view is made directly (about 0.7 µs instead of numpy's 3.7 µs: the accountant's one-setting path
    makes some twenty such views per epsilon, issue 30)."""
    arr = np.asarray(a)
    if arr.shape == shape:
        view = arr.view()
        view.flags.writeable = False
        return view
    return np.broadcast_to(arr, shape)


def _digits(n: int) -> int:
    """The number of decimal digits of ``n`` (an int of more than 4300 digits cannot be made a str: Python's
    limit on int-to-str conversion raised a raw ValueError)."""
    n = abs(n)
    if n.bit_length() <= 14_000:
        return len(str(n))
    return int(n.bit_length() * math.log10(2)) + 1   # at most one digit over (for so large an int, immaterial)


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(name, "a real number (not a boolean)", value)
    if isinstance(value, (str, bytes, np.str_, np.bytes_)):
        raise InvalidParameterError(name, "a real number (not a string)", value)
    if not isinstance(value, (Real, np.floating, np.integer)):
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise InvalidParameterError(name, "a real number", value) from None
        if arr.ndim != 0:
            raise InvalidParameterError(name, "a scalar real number", value)
        value = float(arr)
    try:
        value = float(value)
    except OverflowError:   # an int beyond the float range (10**400 raised OverflowError: red team 25)
        raise InvalidParameterError(name, "a real number within the float range (|x| < 1.8e308)",
                                    f"an integer of {_digits(int(value))} digits") from None
    if math.isnan(value):
        raise InvalidParameterError(name, "a number (not NaN)", value)
    return value


def real_array(name: str, x: Any) -> np.ndarray:
    """``x`` (a number or an array of them, any shape) as a float array, NaN and inf kept for the caller to judge;
    booleans, strings, complex numbers and what is not numbers (an int beyond the float range included) are an
    InvalidParameterError naming ``name``, never a raw TypeError, OverflowError or a silent cast
    (``privgp.delta(event, True)`` was the delta at epsilon 1). A float array passes through untouched, so the
    accountant's vectorised path pays nothing."""
    if isinstance(x, np.ndarray) and x.dtype == np.float64:
        return x   # (float32 and other widths are converted below: a bound must not be computed in single precision)
    if isinstance(x, float):
        return np.asarray(x)
    raw = x if isinstance(x, np.ndarray) else None
    if raw is None:
        try:
            raw = np.asarray(x)
        except (TypeError, ValueError, OverflowError):   # ragged lists
            raise InvalidParameterError(name, "a real number or an array of real numbers", x) from None
    kind = raw.dtype.kind
    if kind in "fiu":
        return raw.astype(float, copy=False)
    what = {"b": "real numbers (not booleans)", "c": "real numbers (not complex)", "U": "real numbers (not strings)",
            "S": "real numbers (not strings)"}.get(kind)
    if what is None and kind == "O":   # Python objects: e.g. an int beyond the float range, None, Fractions
        if all(isinstance(e, (Real, np.floating, np.integer)) and not isinstance(e, (bool, np.bool_))
               for e in raw.reshape(-1)):
            try:
                return raw.astype(float)
            except OverflowError:
                raise InvalidParameterError(name, "real numbers within the float range (|x| < 1.8e308)",
                                            "an integer beyond it") from None
    raise InvalidParameterError(name, what or "a real number or an array of real numbers", x)


def real(name: str, value: Any) -> float:
    """A real number as a float (inf allowed, NaN not): booleans, strings and complex numbers are refused."""
    if is_complex(value):
        raise InvalidParameterError(name, "a real number (not complex)", value)
    return _as_float(name, value)


def positive(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """A finite (or, with ``allow_inf``, possibly infinite) number > 0."""
    v = _as_float(name, value)
    if v <= 0 or (math.isinf(v) and not allow_inf):
        req = "> 0 (inf allowed)" if allow_inf else "finite and > 0"
        raise InvalidParameterError(name, req, value)
    return v


#: A scale (a standard deviation, a ratio of two) is squared and inverted by the mechanisms: beyond these
#: bounds its square or its inverse square underflows to 0 or overflows to inf in float64.
SCALE_RANGE = (1e-150, 1e150)


def scale(name: str, value: Any) -> float:
    """A number in [1e-150, 1e150] (:data:`SCALE_RANGE`): its square and inverse square are finite and > 0."""
    v = positive(name, value)
    lo, hi = SCALE_RANGE
    if not lo <= v <= hi:
        raise InvalidParameterError(name, f"between {lo:g} and {hi:g} (its square and inverse square must be finite "
                                    "and > 0 in float64)", value)
    return v


def nonnegative(name: str, value: Any, *, allow_inf: bool = False) -> float:
    v = _as_float(name, value)
    if v < 0 or (math.isinf(v) and not allow_inf):
        req = ">= 0 (inf allowed)" if allow_inf else "finite and >= 0"
        raise InvalidParameterError(name, req, value)
    return v


def open_interval(name: str, value: Any, lo: float, hi: float) -> float:
    v = _as_float(name, value)
    if not (lo < v < hi):
        raise InvalidParameterError(name, f"in the open interval ({lo:g}, {hi:g})", value)
    return v


def greater_than(name: str, value: Any, bound: float, *, allow_inf: bool = False) -> float:
    v = _as_float(name, value)
    if not v > bound or (math.isinf(v) and not allow_inf):
        raise InvalidParameterError(name, f"> {bound:g}" + ("" if allow_inf else " and finite"), value)
    return v


def integer(name: str, value: Any, *, minimum: int | None = None) -> int:
    if isinstance(value, bool):
        raise InvalidParameterError(name, "an integer", value)
    if isinstance(value, (Integral, np.integer)):
        v = int(value)
    elif isinstance(value, (Real, np.floating)) and float(value).is_integer():
        v = int(cast(SupportsInt, value))   # float, Fraction, Decimal, numpy floats: all have __int__; numbers.Real does not declare it
    else:
        raise InvalidParameterError(name, "an integer", value)
    if minimum is not None and v < minimum:
        raise InvalidParameterError(name, f"an integer >= {minimum}", value)
    return v


def switch(name: str, value: Any) -> bool:
    """An on/off setting as a bool: True or False (numpy's too), or the integers 1 and 0 (``dpsvgp=0``); anything
    else is refused, not read by its truth (``dpsvgp=2`` or "no" was taken as on)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (Integral, np.integer)) and int(value) in (0, 1):
        return bool(value)
    raise InvalidParameterError(name, "true or false", value)


def is_complex(value: Any) -> bool:
    """Whether ``value`` holds complex numbers (float conversion would drop their imaginary parts with only a
    warning); False for what numpy cannot read as one array (the conversion refuses that itself)."""
    try:
        return bool(np.iscomplexobj(value))
    except (TypeError, ValueError):
        return False


def finite_array(name: str, value: Any, *, ndim: int | tuple[int, ...] | None = None,
                 allow_empty: bool = False) -> np.ndarray:
    """A float array with no NaN or inf entries (optionally of a given number of dimensions)."""
    if is_complex(value):   # converting would drop the imaginary part with only a warning (red team 25)
        raise InvalidParameterError(name, "an array of real numbers (not complex)", value)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameterError(name, "an array of real numbers", value) from None
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if arr.ndim not in allowed:
            raise InvalidParameterError(name, f"an array with ndim in {allowed}", f"ndim {arr.ndim}")
    if arr.size == 0 and not allow_empty:
        raise InvalidParameterError(name, "non-empty", f"an empty array of shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.sum(~np.isfinite(arr)))
        raise InvalidParameterError(name, "free of NaN and inf", f"{bad} non-finite entries")
    return arr


def points(name: str, value: Any, *, dim: int | None = None, allow_empty: bool = False) -> np.ndarray:
    """Input locations as a float array of shape (m, d); a 1-D array means d = 1."""
    arr = finite_array(name, value, ndim=(1, 2), allow_empty=allow_empty)
    if arr.ndim == 1:
        arr = arr[:, None]
    if dim is not None and arr.shape[1] != dim:
        raise InvalidParameterError(name, f"points of dimension {dim}", f"dimension {arr.shape[1]}")
    return arr


def batched_points(name: str, value: Any, *, dim: int | None = None) -> np.ndarray:
    """Input locations of a batch of datasets, shape (B, n, d); (B, n) means d = 1."""
    arr = finite_array(name, value, ndim=(2, 3))
    if arr.ndim == 2:
        arr = arr[..., None]
    if dim is not None and arr.shape[-1] != dim:
        raise InvalidParameterError(name, f"points of dimension {dim}", f"dimension {arr.shape[-1]}")
    return arr


def responses(name: str, value: Any, n: int) -> np.ndarray:
    arr = finite_array(name, value, ndim=1)
    if arr.shape[0] != n:
        raise InvalidParameterError(name, f"a vector of length {n} (one response per input)", f"length {arr.shape[0]}")
    return arr


def probability(name: str, value: Any) -> float:
    return open_interval(name, value, 0.0, 1.0)


#: characters that can rewrite or hide what a terminal shows: C0 and C1 controls (newline and tab included), DEL,
#: the bidirectional embeddings, overrides, isolates and marks, and the line and paragraph separators
_UNSAFE = frozenset([*map(chr, range(0x20)), *map(chr, range(0x7F, 0xA0)), "\u061c", "\u200e", "\u200f",
                     *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A)), "\u2028", "\u2029",
                     # invisible (default-ignorable) characters: "report.html" + U+200B read as report.html (red team 17b)
                     "\u00ad", "\u034f", "\u115f", "\u1160", "\u17b4", "\u17b5", *map(chr, range(0x180B, 0x1810)),
                     "\u200b", "\u200c", "\u200d", *map(chr, range(0x2060, 0x2065)), "\u3164", "\ufeff", "\uffa0"])


def unsafe_characters(text: str) -> bool:
    """Whether ``text`` holds a character that can move the cursor, hide text or reorder a line on a terminal."""
    return not _UNSAFE.isdisjoint(text)


def escaped(text: str) -> str:
    """``text`` with each character of :func:`unsafe_characters` written as its Python escape (``\\x1b``, ``\\n``,
    ``\\u202e``): how a command prints text it read from a file someone else wrote."""
    return text if _UNSAFE.isdisjoint(text) else "".join(ascii(c)[1:-1] if c in _UNSAFE else c for c in text)


def plain_text(name: str, value: Any) -> str:
    """A string without control, invisible or bidirectional-formatting characters (:func:`unsafe_characters`): names that a
    certificate records and ``privgp verify`` prints, where such characters could hide or fake its verdict."""
    if not isinstance(value, str) or unsafe_characters(value):
        raise InvalidParameterError(name, "text without control characters (newlines and tabs included) or "
                                    "bidirectional-formatting characters", value)
    return value


#: the first characters that make a spreadsheet read a cell as a formula (a released CSV's header holds the column
#: names: "=HYPERLINK(...)" became a live link; OWASP's CSV-injection list, tab and CR being control characters)
FORMULA_STARTS = ("=", "+", "-", "@")


def starts_like_formula(text: str) -> bool:
    """Whether a spreadsheet would read ``text`` in a CSV cell as a formula (:data:`FORMULA_STARTS`)."""
    return text.lstrip().startswith(FORMULA_STARTS)


def column_name(name: str, value: Any) -> str:
    """A column name a certificate records, ``privgp verify`` prints and a released CSV's header holds: plain text
    (:func:`plain_text`) not starting like a spreadsheet formula (:func:`starts_like_formula`)."""
    plain_text(name, value)
    if starts_like_formula(value):
        raise InvalidParameterError(name, "a name that does not start with = + - or @ (a spreadsheet opening the "
                                    "released CSV would run it as a formula): rename the column", value)
    return value


def column_names(coordinates: Any, response_name: Any) -> None:
    """The column names of a private table (:func:`column_name`); refused when the data are loaded, before anything is
    charged."""
    for c in coordinates:
        column_name("coordinate column name", c)
    column_name("response column name", response_name)


def generator(name: str, rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise InvalidParameterError(name, "a numpy.random.Generator", type(rng).__name__)
    return rng


def immutable_copy(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` over an immutable ``bytes`` buffer: numpy refuses to make it, any view of it or its
    ``.base`` writeable again (a copy that owns its memory can be made writeable through ``.base``). For private
    records that were checked or fingerprinted: what was checked is what is drawn and charged."""
    a = np.asarray(a)
    return np.frombuffer(a.tobytes(), dtype=a.dtype).reshape(a.shape)


def check_memory(name: str, need: float, memory_limit: float, advice: str, *, param: str = "memory",
                 value: Any = None, raisable: bool = True) -> None:
    """Refuse (before any charge or allocation) work whose arrays would need more than ``memory_limit`` bytes:
    InvalidParameterError naming ``param`` (the setting that drives the estimate; its ``value`` shown beside the
    estimate), one home for every memory refusal of the package."""
    if not need <= memory_limit:
        estimate = f"an estimated {need / 2**30:.3g} GiB"
        raise InvalidParameterError(param, f"at most the limit of {memory_limit / 2**30:.3g} GiB for the {name}; "
                                    + advice + (", or raise the limit (memory_limit / --memory-limit)" if raisable
                                                else ""),
                                    estimate if value is None else f"{value} ({estimate})")
