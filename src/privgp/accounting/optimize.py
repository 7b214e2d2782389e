"""Minimisation over the Rényi order alpha, vectorised over many settings at once.

Any order gives a valid bound, so the search may be approximate; what must hold is that the
reported value is the objective evaluated *at the reported alpha* (it is: the minimiser returns
the objective value it computed at the alpha it returns, never an interpolation).

Orders are parametrised by beta in (0, 1): alpha = 1 + beta (alpha_max - 1) when alpha_max is
finite, and alpha = 1 + exp(u) on a wide log range otherwise. The search evaluates a grid of
logit(beta) and zooms around the best point for a few rounds (all settings in lock-step).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import NumericalError

LOGIT_RANGE = 20.0          # beta in [2e-9, 1 - 2e-9]
LOG_AM1_RANGE = (-12.0, 12.0)  # alpha - 1 in [6e-6, 1.6e5] when alpha_max = inf
GRID = 33
ROUNDS = 4


def _alphas(t: np.ndarray, alpha_max: np.ndarray) -> np.ndarray:
    """Map search coordinates t (logit beta, or log(alpha-1) when alpha_max = inf) to orders."""
    finite = np.isfinite(alpha_max)
    with np.errstate(over="ignore", invalid="ignore"):
        beta = 1.0 / (1.0 + np.exp(-t))
        a_fin = 1.0 + beta * np.where(finite, alpha_max - 1.0, 1.0)
        a_inf = 1.0 + np.exp(t)
    return np.where(finite, a_fin, a_inf)


def minimize_over_alpha(objective: Callable[[np.ndarray], np.ndarray], alpha_max,
                        *, grid: int = GRID, rounds: int = ROUNDS) -> tuple[np.ndarray, np.ndarray]:
    """Minimise ``objective(alpha)`` over 1 < alpha < alpha_max, elementwise over settings.

    ``objective`` receives alpha of shape (S, G) (S settings, G candidate orders per setting) and
    returns values of the same shape (+inf where inadmissible). alpha_max has shape (S,) (inf
    allowed). Returns (alpha_best, value_best), each of shape (S,).
    """
    alpha_max = np.atleast_1d(np.asarray(alpha_max, dtype=float))
    if np.any(~(alpha_max > 1.0)):
        raise NumericalError("alpha_max must exceed 1 for every setting")
    S = alpha_max.shape[0]
    finite = np.isfinite(alpha_max)
    lo = np.where(finite, -LOGIT_RANGE, LOG_AM1_RANGE[0])
    hi = np.where(finite, LOGIT_RANGE, LOG_AM1_RANGE[1])
    steps = np.linspace(0.0, 1.0, grid)
    best_a = np.full(S, np.nan)
    best_v = np.full(S, np.inf)
    for _ in range(rounds):
        t = lo[:, None] + (hi - lo)[:, None] * steps[None, :]
        alpha = _alphas(t, alpha_max[:, None])
        alpha = np.where(alpha < alpha_max[:, None], alpha, np.nextafter(alpha_max[:, None], 1.0))
        alpha = np.maximum(alpha, np.nextafter(1.0, 2.0))
        vals = np.asarray(objective(alpha), dtype=float)
        if np.any(np.isnan(vals)):
            raise NumericalError("objective returned NaN during the search over alpha")
        idx = np.argmin(vals, axis=1)
        rows = np.arange(S)
        v = vals[rows, idx]
        better = v < best_v
        best_v = np.where(better, v, best_v)
        best_a = np.where(better, alpha[rows, idx], best_a)
        width = (hi - lo) / (grid - 1)
        centre = t[rows, idx]
        lo, hi = centre - width, centre + width
    # Settings where every candidate was +inf keep alpha = a valid order in range with value inf.
    none = ~np.isfinite(best_v)
    if np.any(none):
        best_a = np.where(none, np.where(finite, 1.0 + 0.5 * (alpha_max - 1.0), 2.0), best_a)
    return best_a, best_v
