"""Non-private reference predictors for the seed-002 experiments.

* :func:`gp_oracle`: the exact GP predictive with the true hyperparameters (float64), the best NLL
  any predictor can reach on GP tasks (paper §5.1, "oracle"). It uses the batched exact posterior of
  :func:`privgp.models.gp.posterior.batched_mean_var` with the normalised kernel and ridge r = s_n / s_v.
* :func:`noise_floor_nll`: for the sawtooth the Bayes posterior is intractable; the paper's "oracle"
  is the expected NLL of the observation noise alone, 0.5 log(2 pi s_n^2) + 0.5, a lower bound.
* :func:`prior_predictive`: the predictive that ignores the context (mean 0, variance s_v^2 + s_n^2 on
  GP tasks): the naive baseline a trained model must beat.
"""
from __future__ import annotations

import math

import numpy as np

from ..models.gp.posterior import batched_mean_var
from ..models.kernels import Matern32, SquaredExponential
from .tasks import SIGNAL_STD

KERNELS = {"eq": SquaredExponential, "matern32": Matern32}


def gp_oracle(family: str, xc: np.ndarray, yc: np.ndarray, xt: np.ndarray, lengthscale: float,
              noise_std: float, signal_std: float = SIGNAL_STD) -> tuple[np.ndarray, np.ndarray]:
    """Exact predictive mean and std (of y, i.e. including the observation noise) at xt, for a batch
    of B tasks with equal N: xc, yc (B, N), xt (B, T); all tasks share (lengthscale, noise_std)."""
    kernel = KERNELS[family](lengthscale=lengthscale)
    xc = np.asarray(xc, dtype=float)
    xt = np.asarray(xt, dtype=float)
    mean, kvar = batched_mean_var(kernel, xc[..., None], np.asarray(yc, dtype=float), xt[..., None],
                                  r=noise_std / signal_std)
    return mean, np.sqrt(signal_std**2 * kvar + noise_std**2)


def noise_floor_nll(noise_std: float) -> float:
    """E[-log N(y | f, s_n^2)] = 0.5 log(2 pi s_n^2) + 0.5 (the sawtooth "oracle" lower bound)."""
    return 0.5 * math.log(2 * math.pi * noise_std**2) + 0.5


def prior_predictive(shape, signal_std: float = SIGNAL_STD, noise_std: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Mean 0 and std sqrt(s_v^2 + s_n^2) everywhere: the context-free predictive of a GP task."""
    return np.zeros(shape), np.full(shape, math.sqrt(signal_std**2 + noise_std**2))
