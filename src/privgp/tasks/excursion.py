"""Excursion-set estimation from a GP posterior (seed 000, sec. 5 and App. D).

Given a threshold t, the true excursion set is Omega_t(f*) = {x : f*(x) >= t} and the posterior
Pi_D = GP(mu_D, sigma^2 k_D) assigns to x the excursion probability

    p_D(x) = P_{f ~ Pi_D}[f(x) >= t] = Phi((mu_D(x) - t) / (sigma sqrt(k_D(x, x))))     (sec. 5)

The hyperparameter-search loss is the integrated binary cross-entropy
L_BCE = int l_BCE(s*(x), p_D(x)) dx, approximated on a mesh by the trapezoid rule (tensor
trapezoid in 2-D; App. D). Utility is intersection-over-union (IoU) of an estimate with
Omega_t(f*), also integrated with the mesh weights. Two estimates:

* deterministic (non-private benchmark): {x : p_D(x) >= C};
* randomised L-path release: {x : (1/L) sum_l 1{f^(l)(x) >= t} >= c}, a post-processing of L
  posterior paths, so it inherits their (eps_L, delta) guarantee.

The cut-offs C and c are chosen on a separate validation set by maximising the mean IoU
(:func:`choose_cutoff`). Functions here are pure numpy (no files, no plotting) and broadcast over
leading axes; the mesh is always the last axis.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri

from .. import validation as v
from ..errors import InvalidParameterError
from ..models.domain import trapezoid_weights  # noqa: F401  (re-exported: tasks use it for integrals)

#: Default probability clip of the BCE (as in the published scripts; the paper does not state one):
#: each point contributes at most -log(1e-6) ~ 13.8.
BCE_CLIP = 1e-6


def excursion_probability(mean, kD_var, sigma, t: float = 0.0) -> np.ndarray:
    """p_D(x) = Phi((mu_D(x) - t) / (sigma sqrt(k_D(x, x)))) (seed 000, sec. 5).

    ``sigma`` broadcasts against ``mean``. Where k_D(x, x) = 0 (no posterior uncertainty) the
    probability is the step 1{mu_D(x) >= t}.
    """
    mean = np.asarray(mean, dtype=float)
    sd = np.sqrt(np.maximum(np.asarray(kD_var, dtype=float), 0.0)) * np.asarray(sigma, dtype=float)
    diff = mean - t
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, diff / np.where(sd > 0, sd, 1.0), np.where(diff >= 0, np.inf, -np.inf))
    return ndtr(z)


def standardized_margin(labels, mean, kD_var, t: float = 0.0) -> np.ndarray:
    """u(x) = (2 s*(x) - 1) (mu_D(x) - t) / sqrt(k_D(x, x)): the BCE of scale sigma at x is
    -log Phi(u(x) / sigma). Zero variance gives +-inf (a sure, right or wrong, prediction)."""
    sign = np.where(np.asarray(labels, dtype=bool), 1.0, -1.0)
    diff = sign * (np.asarray(mean, dtype=float) - t)
    sd = np.sqrt(np.maximum(np.asarray(kD_var, dtype=float), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, diff / np.where(sd > 0, sd, 1.0), np.where(diff >= 0, np.inf, -np.inf))


def bce_from_margin(margin, sigma, weights, *, clip: float = BCE_CLIP) -> np.ndarray:
    """Integrated BCE sum_x w(x) l_BCE(s*(x), p_D(x)) from the standardized margin.

    ``margin`` (..., m) from :func:`standardized_margin`; ``sigma`` broadcasts against
    ``margin[..., 0]``. The probability given to the true label is clipped to [clip, 1 - clip]
    (clip = 0: no clipping).
    """
    clip = float(clip)
    if not 0.0 <= clip < 0.5:
        raise InvalidParameterError("clip", "in [0, 0.5)", clip)
    sigma = np.asarray(sigma, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.asarray(margin) / sigma[..., None]
    if clip == 0:
        loss = -log_ndtr(z)
    else:
        lo, hi = -math.log1p(-clip), -math.log(clip)
        z_sure, z_wrong = _clipped_beyond(clip)
        # the same values as clip(-log_ndtr(z), lo, hi), with log_ndtr evaluated only where the clip
        # does not decide (NaN margins fall there and stay NaN)
        sure, wrong = z >= z_sure, z <= z_wrong
        loss = np.where(sure, lo, hi)
        open_ = ~(sure | wrong)
        loss[open_] = np.clip(-log_ndtr(z[open_]), lo, hi)
    return loss @ np.asarray(weights, dtype=float)


@functools.lru_cache(maxsize=8)
def _clipped_beyond(clip: float) -> tuple[float, float]:
    """z_sure, z_wrong with -log Phi(z) <= -log(1 - clip) for all z >= z_sure and -log Phi(z) >= -log(clip)
    for all z <= z_wrong (-log Phi decreases), each 0.01 inside the exact crossing, checked."""
    z_sure, z_wrong = float(ndtri(1.0 - clip)) + 0.01, float(ndtri(clip)) - 0.01
    if not (-log_ndtr(z_sure) <= -math.log1p(-clip) and -log_ndtr(z_wrong) >= -math.log(clip)):
        raise AssertionError(f"BCE clip thresholds for clip={clip} are not where they should be")  # pragma: no cover
    return z_sure, z_wrong


def integrated_bce(labels, mean, kD_var, sigma, weights, *, t: float = 0.0, clip: float = BCE_CLIP) -> np.ndarray:
    """L_BCE(Pi_D, f*) = int l_BCE(s*(x), p_D(x)) dx on a mesh (App. D), trapezoid weights ``weights``."""
    return bce_from_margin(standardized_margin(labels, mean, kD_var, t), sigma, weights, clip=clip)


def iou(truth, estimate, weights) -> np.ndarray:
    """IoU = |A ∩ B| / |A ∪ B| along the last (mesh) axis with the mesh weights.

    Convention: two empty sets have IoU 1 (the estimate is exact)."""
    truth = np.asarray(truth, dtype=bool)
    estimate = np.asarray(estimate, dtype=bool)
    w = np.asarray(weights, dtype=float)
    inter = (truth & estimate) @ w
    union = (truth | estimate) @ w
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 1.0)


def deterministic_estimate(prob, C: float) -> np.ndarray:
    """The non-private estimate {x : p_D(x) >= C}."""
    return np.asarray(prob) >= float(C)


def vote_fraction(paths, t: float = 0.0, axis: int = -2) -> np.ndarray:
    """(1/L) sum_l 1{f^(l)(x) >= t}, the L paths along ``axis`` (default: the axis before the mesh)."""
    return np.mean(np.asarray(paths) >= t, axis=axis)


def vote_release(paths, c: float, t: float = 0.0, axis: int = -2) -> np.ndarray:
    """The randomised L-path release {x : vote fraction >= c} (seed 000, sec. 5)."""
    return vote_fraction(paths, t, axis) >= float(c)


def vote_cutoffs(L: int) -> np.ndarray:
    """The distinct vote-fraction cut-offs of L paths: k / L, k = 1..L (others give the same sets)."""
    L = v.integer("L", L, minimum=1)
    return np.arange(1, L + 1) / L


def default_probability_cutoffs(size: int = 99) -> np.ndarray:
    """The grid of C values searched on the validation set: (1..size) / (size + 1)."""
    size = v.integer("size", size, minimum=1)
    return np.arange(1, size + 1) / (size + 1)


def iou_curve(scores, truth, weights, cutoffs) -> np.ndarray:
    """Mean IoU over the datasets (leading axes) of {score >= c} for each cut-off c: shape (len(cutoffs),)."""
    scores = np.asarray(scores, dtype=float)
    truth = np.asarray(truth, dtype=bool)
    cutoffs = v.finite_array("cutoffs", cutoffs, ndim=1)
    s2 = scores.reshape(-1, scores.shape[-1])
    t2 = np.broadcast_to(truth, scores.shape).reshape(-1, scores.shape[-1])
    return np.array([np.mean(iou(t2, s2 >= c, weights)) for c in cutoffs])


def choose_cutoff(scores, truth, weights, cutoffs) -> tuple[float, np.ndarray]:
    """The cut-off maximising the mean validation IoU (smallest on ties) and the whole curve.

    ``scores``: p_D on the validation datasets (for C) or vote fractions (for c), shape (..., m);
    ``truth``: the true excursion indicators, broadcastable to ``scores``."""
    curve = iou_curve(scores, truth, weights, cutoffs)
    return float(np.asarray(cutoffs)[int(np.argmax(curve))]), curve


def effective_dimension(eigenvalues, r) -> np.ndarray:
    """d_eff = tr K (K + r^2 I)^{-1} = sum_j lam_j / (lam_j + r^2) from the eigenvalues of K (App. D)."""
    lam = np.maximum(np.asarray(eigenvalues, dtype=float), 0.0)
    r = np.asarray(r, dtype=float)
    return np.sum(lam / (lam + (r * r)[..., None]), axis=-1)


def smooth_paths(paths, shape, sigma_px: float, truncate: float = 3.0) -> np.ndarray:
    """A fixed Gaussian filter (in grid pixels, 'nearest' boundary) applied to each path on a grid.

    Data-independent post-processing of released paths (App. D.1), so it keeps their guarantee.
    ``paths`` (..., m) with m = prod(shape); returns the same shape. sigma_px = 0 is the identity."""
    from scipy.ndimage import gaussian_filter

    sigma_px = v.nonnegative("sigma_px", sigma_px)
    paths = np.asarray(paths, dtype=float)
    if sigma_px == 0:
        return paths
    lead = paths.shape[:-1]
    grid = paths.reshape((-1,) + tuple(shape))
    out = gaussian_filter(grid, sigma=(0,) + (sigma_px,) * len(shape), mode="nearest", truncate=truncate)
    return out.reshape(lead + (-1,))
