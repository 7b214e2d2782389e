"""Minimisation over the Rényi order alpha, vectorised over many settings at once.

Any order gives a valid bound, so the search may be approximate; what must hold is that the
reported value is the objective evaluated *at the reported alpha* (it is: the minimiser returns
the objective value it computed at the alpha it returns, never an interpolation).

Search coordinate. Orders are written alpha = 1 + (alpha_max - 1) sigmoid(t). For t -> -inf this
is log-uniform in alpha - 1 (alpha - 1 ~ (alpha_max - 1) e^t), for t -> +inf it is log-uniform in
the distance alpha_max - alpha, so one coordinate resolves both ends of the admissible range
1 < alpha < alpha_max, whatever its width. The range of t reaches down to alpha - 1 = ALPHA_M1_MIN
(or further when alpha_max is close to 1) and up to a relative distance e^-T_HI from alpha_max.
When alpha_max = inf, alpha = 1 + e^t on a wide log range. The search evaluates a grid of t, then
refines inside the two cells around the best grid point (all settings in lock-step): golden-section
steps for large batches (one order per setting per call), zoom rounds of many orders per call for a
few settings (where the per-call overhead dominates). For a unimodal objective the minimiser stays
bracketed, so the result is the exact minimum up to the final bracket width (at most 1e-5 of two
grid cells, i.e. below 1e-4 in t).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from ..errors import NumericalError

ALPHA_M1_MIN = 1e-10           # smallest alpha - 1 searched (unless alpha_max - 1 is smaller still)
T_LO_MIN = 20.0                # at least sigmoid(-20) = 2e-9 of the range at the lower end
T_HI = 30.0                    # up to alpha_max - alpha = e^-30 (alpha_max - 1)
LOG_AM1_RANGE = (-23.0, 23.0)  # alpha - 1 in [1e-10, 1e10] when alpha_max = inf
GRID = 17
GOLDEN_ITERATIONS = 24
_GOLD = (np.sqrt(5.0) - 1.0) / 2.0
ZOOM_MAX_SETTINGS = 64     # at most this many settings: zoom rounds (few calls), else golden section
ZOOM_POINTS = 41
ZOOM_ROUNDS = 4            # final bracket (2/42)^4 = 5e-6 of two grid cells (golden: 0.618^24 = 1e-5)


def _alphas(t: np.ndarray, alpha_max: np.ndarray, all_finite: bool = False) -> np.ndarray:
    """Map search coordinates t to orders (see the module docstring)."""
    # sigmoid(t), no overflow; below t = -20 as e^t / (1 + e^t) (the tanh form cancels there and is exactly 0
    # below about -37, so orders closer to 1 than 1e-16 (alpha_max - 1) were out of reach)
    with np.errstate(over="ignore"):
        e = np.exp(np.minimum(t, -20.0))
    beta = np.where(t < -20.0, e / (1.0 + e), 0.5 * (1.0 + np.tanh(0.5 * t)))
    if all_finite:
        return 1.0 + beta * (alpha_max - 1.0)
    finite = np.isfinite(alpha_max)
    with np.errstate(over="ignore", invalid="ignore"):
        a_fin = 1.0 + beta * np.where(finite, alpha_max - 1.0, 1.0)
        a_inf = 1.0 + np.exp(np.minimum(t, 700.0))
    return np.where(finite, a_fin, a_inf)


def search_range(alpha_max: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-setting range [lo, hi] of the search coordinate t."""
    finite = np.isfinite(alpha_max)
    with np.errstate(divide="ignore", invalid="ignore"):
        width = np.where(finite, alpha_max - 1.0, 1.0)
        lo_fin = -np.maximum(T_LO_MIN, np.log(width / ALPHA_M1_MIN))
    lo = np.where(finite, lo_fin, LOG_AM1_RANGE[0])
    hi = np.where(finite, T_HI, LOG_AM1_RANGE[1])
    return lo, hi


def minimize_over_alpha(objective: Callable[[np.ndarray], np.ndarray], alpha_max: ArrayLike,
                        *, grid: int = GRID, iterations: int = GOLDEN_ITERATIONS) -> tuple[np.ndarray, np.ndarray]:
    """Minimise ``objective(alpha)`` over 1 < alpha < alpha_max, elementwise over settings.

    ``objective`` receives alpha of shape (S, G) (S settings, G candidate orders per setting) and
    returns values of the same shape (+inf where inadmissible). alpha_max has shape (S,) (inf
    allowed). Returns (alpha_best, value_best), each of shape (S,); value_best is the objective at
    alpha_best as computed during the search (the best of every order evaluated).

    Search: a grid of ``grid`` points in the coordinate t over the whole range, then inside the two
    grid cells around the best grid point either golden-section search (more than
    ZOOM_MAX_SETTINGS settings: ``iterations`` steps, each one objective call for all settings at
    once; the bracket shrinks by 0.618 per step) or ZOOM_ROUNDS zoom rounds of ZOOM_POINTS orders. For a unimodal
    objective this converges to the exact minimiser; for any objective the result is the best order
    evaluated, so the bound is valid whatever the shape.
    """
    alpha_max = np.atleast_1d(np.asarray(alpha_max, dtype=float))
    if np.any(~(alpha_max > 1.0)):
        raise NumericalError("alpha_max must exceed 1 for every setting")
    S = alpha_max.shape[0]
    finite = np.isfinite(alpha_max)
    all_finite = bool(finite.all())
    lo, hi = search_range(alpha_max)
    upper = np.nextafter(alpha_max, 1.0)[:, None]
    lower = np.nextafter(1.0, 2.0)
    amax_col = alpha_max[:, None]

    def alphas(t):
        return np.minimum(np.maximum(_alphas(t, amax_col, all_finite), lower), upper)

    def evaluate(t):
        a = alphas(t)
        vals = np.asarray(objective(a), dtype=float)
        if np.isnan(vals).any():
            raise NumericalError("objective returned NaN during the search over alpha")
        return a, vals

    rows = np.arange(S)
    steps = np.linspace(0.0, 1.0, grid)
    t = lo[:, None] + (hi - lo)[:, None] * steps[None, :]
    alpha, vals = evaluate(t)
    idx = np.argmin(vals, axis=1)
    best_v = vals[rows, idx]
    best_a = alpha[rows, idx]
    width = (hi - lo) / (grid - 1)
    centre = t[rows, idx]
    a = np.maximum(centre - width, lo)[:, None]
    b = np.minimum(centre + width, hi)[:, None]
    if S <= ZOOM_MAX_SETTINGS:
        best_a, best_v = _zoom(evaluate, a, b, best_a, best_v)
    else:
        best_a, best_v = _golden(evaluate, a, b, best_a, best_v, iterations)
    # Settings where every candidate was +inf keep alpha = a valid order in range with value inf.
    none = ~np.isfinite(best_v)
    if np.any(none):
        best_a = np.where(none, np.where(finite, 1.0 + 0.5 * (alpha_max - 1.0), 2.0), best_a)
    return best_a, best_v


def _keep_better(al: np.ndarray, f: np.ndarray, best_a: np.ndarray, best_v: np.ndarray,
                 j: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The best (order, value) per setting among the old best and the new candidates (S, G);
    ``j``: the per-setting argmin of f when the caller has it."""
    if f.shape[1] == 1:                        # one candidate per setting (golden steps): no argmin
        better = f[:, 0] < best_v
        return np.where(better, al[:, 0], best_a), np.where(better, f[:, 0], best_v)
    if j is None:
        j = np.argmin(f, axis=1)
    rows = np.arange(f.shape[0])
    better = f[rows, j] < best_v
    return np.where(better, al[rows, j], best_a), np.where(better, f[rows, j], best_v)


def _golden(evaluate, a, b, best_a, best_v, iterations):
    """Golden-section search in [a, b] (one order per setting per objective call: cheap per setting,
    used for large batches)."""
    c = b - _GOLD * (b - a)
    d = a + _GOLD * (b - a)
    (ac, fc), (ad, fd) = evaluate(c), evaluate(d)
    for al, f in ((ac, fc), (ad, fd)):
        best_a, best_v = _keep_better(al, f, best_a, best_v)
    for _ in range(iterations):
        left = fc < fd                       # the minimum lies in [a, d]
        b = np.where(left, d, b)
        a = np.where(left, a, c)
        new_t = np.where(left, b - _GOLD * (b - a), a + _GOLD * (b - a))
        an, fn = evaluate(new_t)
        c, d = np.where(left, new_t, d), np.where(left, c, new_t)
        fc, fd = np.where(left, fn, fd), np.where(left, fc, fn)
        best_a, best_v = _keep_better(an, fn, best_a, best_v)
    return best_a, best_v


def _zoom(evaluate, a, b, best_a, best_v):
    """Zoom rounds in [a, b]: ZOOM_POINTS evenly spaced interior points per round, the bracket
    shrinks to the two cells around the best (by 2 / (ZOOM_POINTS + 1)). Few objective calls with
    many orders each: for a few settings the per-call overhead dominates, so this is the fast path
    there; ZOOM_ROUNDS rounds shrink the bracket at least as much as the golden-section steps."""
    frac = np.arange(1, ZOOM_POINTS + 1) / (ZOOM_POINTS + 1)
    for _ in range(ZOOM_ROUNDS):
        t = a + (b - a) * frac[None, :]
        al, f = evaluate(t)
        j = np.argmin(f, axis=1)
        best_a, best_v = _keep_better(al, f, best_a, best_v, j)
        step = (b - a) / (ZOOM_POINTS + 1)
        a, b = a + step * j[:, None], a + step * (j[:, None] + 2)
    return best_a, best_v


def smallest_integer(ok: Callable[[int], bool], start: int = 2, limit: int = 10 ** 18) -> int | None:
    """The smallest integer n >= ``start`` with ``ok(n)``, for a monotone ``ok`` (false up to some n, true from
    there on): doubling, then bisection, so O(log n) calls. None when ``ok`` is still false past ``limit``."""
    if ok(start):
        return start
    lo, hi = start, start
    while not ok(hi):
        lo, hi = hi, 2 * hi
        if hi > limit:
            return None
    while hi - lo > 1:   # ok(hi) and not ok(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi
