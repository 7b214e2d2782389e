"""Non-private reference predictors for the seed-002 experiments.

* :func:`gp_oracle`: the exact GP predictive with the true hyperparameters (float64), the best NLL
  any predictor can reach on GP tasks (paper §5.1, "oracle"). It uses the batched exact posterior of
  :func:`privgp.models.gp.posterior.batched_mean_var` with the normalised kernel and ridge r = s_n / s_v.
* :func:`noise_floor_nll`: for the sawtooth the Bayes posterior is intractable; the paper's "oracle"
  is the expected NLL of the observation noise alone, 0.5 log(2 pi s_n^2) + 0.5, a lower bound.
* :func:`prior_predictive`: the predictive that ignores the context (mean 0, variance s_v^2 + s_n^2 on
  GP tasks): the naive baseline a trained model must beat.
* :func:`signal_channel_predictive`: the paper's "lower bound model" (App. G, Fig. S1): the exact
  predictive of y at the targets given the context inputs and the DPSetConv signal channel released
  *without clipping* (r_s = Phi y + s_s g_s, a linear Gaussian observation of a GP task), i.e. what an
  ideal model could make of that noisy channel for a given clipping threshold C and split t.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import solve_triangular

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


def signal_channel_predictive(family: str, xc: np.ndarray, yc: np.ndarray, xt: np.ndarray, lengthscale: float,
                              noise_std: float, *, grid: np.ndarray, encoder_lengthscale: float,
                              sigma_signal, noise: np.ndarray, jitter: float = 1e-6, signal_std: float = SIGNAL_STD,
                              noise_factor: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact predictive mean and std of y at xt (one task) given xc and the unclipped signal channel
    r = Phi y_c + sigma_signal * noise on the grid, Phi_gi = psi((g - x_i) / lam), psi the encoder's RBF
    (seed 002, App. G "lower bound model"; the paper's Fig. S1, black).

    ``noise`` is the unit-amplitude GP draw on the grid (L_P z with L_P L_P^T = P = Psi_gg + jitter I, as
    :meth:`privgp.nn.model.DPSetConv.sample_noise` draws it; ``noise_factor`` may pass L_P), so r's
    noise covariance is sigma_signal^2 P. The density channel is taken as noiseless (the inputs xc
    known). y_c ~ N(0, Sigma_c), Sigma_c = s_v^2 K_cc + s_n^2 I = L_c L_c^T; its posterior given r has
    precision Sigma_c^-1 + Phi^T P^-1 Phi / sigma^2, i.e. covariance L_c M^-1 L_c^T with
    M = I + H / sigma^2, H = (V L_c)^T (V L_c), V = L_P^-1 Phi (well conditioned for every sigma > 0);
    then y_t | y_c is the GP's: with Q = K_tc L_c^-T, mean = Q M^-1 (V L_c)^T u / sigma^2 (u = L_P^-1 r)
    and var = s_v^2 + s_n^2 - diag(Q (I - M^-1) Q^T). sigma -> 0 gives the oracle (when Phi has full
    column rank), sigma -> inf the prior predictive. ``sigma_signal`` may be a sequence: the same noise
    draw at several scales, computed from one eigendecomposition of H; then the means and stds are
    stacked, shape (len(sigma_signal), T).

    For a fixed C and t this is the best NLL any predictor of that channel can reach on GP tasks; it is
    not a bound for a model that sees the clipped channel (clipping is not a post-processing of r).
    All in float64.
    """
    kernel = KERNELS[family](lengthscale=lengthscale)
    xc = np.asarray(xc, dtype=float)
    xt = np.asarray(xt, dtype=float)
    g = np.asarray(grid, dtype=float)
    sig = np.atleast_1d(np.asarray(sigma_signal, dtype=float))
    if noise_factor is None:
        noise_factor = np.linalg.cholesky(np.exp(-0.5 * ((g[:, None] - g[None, :]) / encoder_lengthscale) ** 2)
                                          + jitter * np.eye(len(g)))
    phi = np.exp(-0.5 * ((g[:, None] - xc[None, :]) / encoder_lengthscale) ** 2)          # (G, N)
    V = solve_triangular(noise_factor, phi, lower=True)                                    # (G, N)
    z = solve_triangular(noise_factor, np.asarray(noise, dtype=float), lower=True)         # L_P^-1 noise
    Lc = np.linalg.cholesky(signal_std**2 * kernel(xc[:, None], xc[:, None]) + noise_std**2 * np.eye(len(xc)))
    VL = V @ Lc
    h, U = np.linalg.eigh(VL.T @ VL)
    h = np.maximum(h, 0.0)
    Q = solve_triangular(Lc, signal_std**2 * kernel(xc[:, None], xt[:, None]), lower=True).T   # (T, N)
    QU = Q @ U
    a = U.T @ (VL.T @ (V @ np.asarray(yc, dtype=float)))                                  # U^T (VL)^T V y
    b = U.T @ (VL.T @ z)
    prior_var = signal_std**2 + noise_std**2 - np.einsum("tn,tn->t", Q, Q)
    means, stds = [], []
    for s in sig:
        w = 1.0 / (s * s + h)                     # M^-1 / sigma^2 in U's basis: 1 / (sigma^2 + h)
        means.append(QU @ (w * (a + s * b)))
        stds.append(np.sqrt(prior_var + np.einsum("tn,n,tn->t", QU, s * s * w, QU)))
    if np.ndim(sigma_signal) == 0:
        return means[0], stds[0]
    return np.stack(means), np.stack(stds)
