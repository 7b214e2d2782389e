"""Standard Bayesian-optimisation test functions on the unit box, scaled for bounded responses.

Each function is written on the unit box [0, 1]^d (the standard domain mapped affinely) and scaled
for *maximisation* with a common rule:

    f(u) = (m - raw(u)) / (m - raw_min)

where raw_min is the raw function's global minimum and m its median under the uniform distribution
on the box. So max f = 1 (at the standard optimiser), a median point scores 0, and the simple
regret 1 - f(x) is measured in units of "the gap between a typical point and the optimum". Values
far below the median fall below -1 (Branin's ridge); responses are clipped to |y| <= M_Y by the
caller (the privacy analysis assumes bounded responses), the function itself is not.

* ``forrester`` (d = 1): (6x - 2)^2 sin(12x - 4) on [0, 1] (Forrester, Sobester & Keane 2008);
* ``branin`` (d = 2): the Branin-Hoo function on [-5, 10] x [0, 15] (three global minimisers);
* ``hartmann3`` (d = 3): the Hartmann 3-D function on [0, 1]^3 (Dixon & Szego 1978).

The constants (global minima, medians) come from ``scripts/generate_objective_reference.py`` (an
independent transcription; tests/data/objective_reference.json), rounded to 10 digits here.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import validation as v
from ..errors import InvalidParameterError
from ..models.domain import Box


def _forrester(u: np.ndarray) -> np.ndarray:
    x = u[:, 0]
    return (6.0 * x - 2.0) ** 2 * np.sin(12.0 * x - 4.0)


_B_B, _B_C, _B_T = 5.1 / (4.0 * math.pi ** 2), 5.0 / math.pi, 1.0 / (8.0 * math.pi)


def _branin(u: np.ndarray) -> np.ndarray:
    x1 = -5.0 + 15.0 * u[:, 0]
    x2 = 15.0 * u[:, 1]
    return (x2 - _B_B * x1 ** 2 + _B_C * x1 - 6.0) ** 2 + 10.0 * (1.0 - _B_T) * np.cos(x1) + 10.0


_H3_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_H3_A = np.array([[3.0, 10.0, 30.0], [0.1, 10.0, 35.0], [3.0, 10.0, 30.0], [0.1, 10.0, 35.0]])
_H3_P = 1e-4 * np.array([[3689.0, 1170.0, 2673.0], [4699.0, 4387.0, 7470.0], [1091.0, 8732.0, 5547.0],
                         [381.0, 5743.0, 8828.0]])


def _hartmann3(u: np.ndarray) -> np.ndarray:
    d = (((u[:, None, :] - _H3_P[None]) ** 2) * _H3_A[None]).sum(axis=-1)
    return -(np.exp(-d) * _H3_ALPHA).sum(axis=-1)


@dataclass(frozen=True)
class BenchmarkFunction:
    """A test function on the unit box, scaled so that its maximum is 1 and its median 0."""

    name: str
    dim: int
    raw: Callable[[np.ndarray], np.ndarray]
    raw_min: float
    raw_median: float
    argmax: tuple[tuple[float, ...], ...]   # the global maximisers of f (unit box), 6 digits
    description: str

    @property
    def box(self) -> Box:
        return Box.unit(self.dim)

    def __call__(self, X) -> np.ndarray:
        """Scaled values f at the rows of X (points of the unit box; (m, d) or, for d = 1, (m,))."""
        X = self.box.check_contains("x", X)
        return (self.raw_median - self.raw(X)) / (self.raw_median - self.raw_min)

    def regret(self, X) -> np.ndarray:
        """Simple regret 1 - f(x) >= 0 (relative to the function's global maximum 1)."""
        return 1.0 - self(X)

    def noisy(self, noise_std: float, rng: np.random.Generator) -> Callable[[np.ndarray], float]:
        """An objective x -> f(x) + noise_std * N(0, 1) drawing its noise from ``rng`` (the records
        of a simulated experiment; the caller clips them)."""
        noise_std = v.nonnegative("noise_std", noise_std)
        rng = v.generator("rng", rng)

        def objective(x) -> float:
            return float(self(np.atleast_2d(np.asarray(x, dtype=float)))[0] + noise_std * rng.standard_normal())

        return objective


FUNCTIONS: dict[str, BenchmarkFunction] = {f.name: f for f in (
    BenchmarkFunction("forrester", 1, _forrester, -6.020740056, -0.005321174571, ((0.757249,),),
                      "Forrester et al. (2008) on [0, 1]"),
    BenchmarkFunction("branin", 2, _branin, 0.3978873577, 35.07112967,
                      ((0.123894, 0.818333), (0.542773, 0.151667), (0.961652, 0.165)),
                      "Branin-Hoo on [-5, 10] x [0, 15], mapped to [0, 1]^2"),
    BenchmarkFunction("hartmann3", 3, _hartmann3, -3.862779787, -0.5524081063,
                      ((0.114589, 0.555649, 0.852547),), "Hartmann 3-D on [0, 1]^3"),
)}


def get_function(name: str) -> BenchmarkFunction:
    if name not in FUNCTIONS:
        raise InvalidParameterError("objective", f"one of {sorted(FUNCTIONS)}", name)
    return FUNCTIONS[name]


__all__ = ["FUNCTIONS", "BenchmarkFunction", "get_function"]
