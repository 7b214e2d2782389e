"""Synthetic 1-D regression data of seed 001's experiments (sec. 6).

* :func:`sinc_data` (sec. 6.1, 6.3): f(x) = sin(2x) / (2x) observed with Gaussian noise on [-4, 4].
  The paper does not say how x is placed; we draw x uniformly at random.
* :func:`gp_draw_data` (sec. 6.2): a target drawn from a GP with the EQ kernel (lengthscale 1,
  unit signal variance) jointly at the training and test inputs (exact, Cholesky with a tiny
  jitter), observed with Gaussian noise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validation as v
from ..models.kernels import SquaredExponential

INTERVAL = (-4.0, 4.0)


def sinc(x) -> np.ndarray:
    """sin(2x) / (2x), = 1 at 0."""
    return np.sinc(2.0 * np.asarray(x, dtype=float) / np.pi)


@dataclass(frozen=True, eq=False)
class RegressionData:
    """Inputs x (n,), noisy responses y (n,), the noise-free target f(x) (n,) and the noise std."""

    x: np.ndarray
    y: np.ndarray
    f: np.ndarray
    noise_std: float


def sinc_data(n: int, noise_std: float, rng: np.random.Generator, interval=INTERVAL) -> RegressionData:
    n = v.integer("n", n, minimum=1)
    s = v.nonnegative("noise_std", noise_std)
    rng = v.generator("rng", rng)
    x = rng.uniform(interval[0], interval[1], n)
    f = sinc(x)
    return RegressionData(x, f + s * rng.standard_normal(n), f, s)


def gp_draw_data(n: int, noise_std, rng: np.random.Generator, *, lengthscale: float = 1.0, interval=INTERVAL,
                 jitter: float = 1e-8) -> list[RegressionData]:
    """One GP draw f at n uniform inputs, observed at each noise std in ``noise_std`` (a list: the same
    function and inputs for every noise level, independent noise)."""
    n = v.integer("n", n, minimum=1)
    sds = [v.nonnegative("noise_std", s) for s in np.atleast_1d(noise_std)]
    rng = v.generator("rng", rng)
    x = rng.uniform(interval[0], interval[1], n)
    K = SquaredExponential(v.positive("lengthscale", lengthscale))(x, x)
    L = np.linalg.cholesky(K + jitter * np.eye(n))
    f = L @ rng.standard_normal(n)
    return [RegressionData(x, f + s * rng.standard_normal(n), f, s) for s in sds]
