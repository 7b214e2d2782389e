"""Sensitivity of the DP sparse GP's sufficient statistics (seed 001, sec. 3.1-3.2, App. A, App. D).

The mechanism releases A = sum_i y_i k_i and the sqrt(2)-scaled upper triangle of
B = sum_i k_i k_i^T, with k_i = (k(z_j, x_i))_j on the public inducing inputs Z. Its L2 sensitivity
under replace-one neighbours needs |y| <= R_y (enforced by clipping) and ||k_i|| <= R_k for every
possible input x (no bound on x itself is needed).

Kernel-norm bounds R_k (k = sigma_f^2 k_r(|x - x'|), k_r decreasing, 0 <= k_r <= 1):

* ``"trivial"`` (eq. 4): R_k = sqrt(|Z|) sigma_f^2, for any kernel with |k| <= sigma_f^2.
* ``"separation"`` (eq. 8): inducing points at least d_z apart; at most one lies within d_z/2 of x,
  so ||k||^2 / sigma_f^4 <= 1 + (|Z| - 1) k_r(d_z/2)^2. Any input dimension.
* ``"grid-1d"`` (eq. 7, corrected): 1-D inputs, inducing points at least d_z apart. Eq. 7 as
  printed (``"grid-1d-printed"``) bounds the points on each side of x by distances 0, d_z, 2 d_z, ...
  and so counts distance 0 twice. The correct statement: if the nearest point on one side is at
  distance a, the nearest on the other side is at >= d_z - a, and the j-th further point on a side
  is j d_z further. We take the supremum over a in [0, d_z/2] (reflection covers the rest, and a
  side without points only lowers the sum) of the largest sum of |Z| terms from the two sequences
  k_r(a + j d_z)^2 and k_r(d_z - a + j d_z)^2, on 4096 cells of a with the kernel evaluated at each
  cell's worst end (k_r decreases): a certified upper bound within about 1e-3 relative of the true
  supremum. NOTE: the tempting "x at an inducing point" value 1 + 2 sum_{j>=1} k_r(j d_z)^2 is
  *not* an upper bound in general (|Z| = 2, d_z = 0.5, EQ kernel l = 1: 1.7788 < 1.8788 at the
  midpoint); this module never uses it.
* ``"auto"``: the smallest of the bounds that apply (all are proven).

Sensitivity (eq. 6 / Lemma 5): with c = sigma_a^2 / sigma_b^2 (the *variance* ratio; Alg. 1's
c = sigma_a / sigma_b is the std ratio, here ``noise_ratio``),

    Delta^2 = R_y^4 / (2c) + 2 R_y^2 R_k^2 + 2 c R_k^4,

minimised at c* = R_y^2 / (2 R_k^2) (``noise_ratio="min-sensitivity"``), where Delta = 2 R_y R_k.
The paper uses sigma_a = sigma_b (``noise_ratio=1``).

Heteroscedastic statistics (App. D): A_h = sum w_i y_i k_i, B_h = sum w_i k_i k_i^T with weights
w_i = 1/sigma_i^2. App. D bounds sigma_i^2 from *above*; bounding the weights needs a *lower* bound
on sigma_i^2 (w <= w_max = 1/min sigma_i^2). See :func:`weighted_sensitivity`.
"""
from __future__ import annotations

import math

import numpy as np

from .. import validation as v
from ..errors import InvalidParameterError
from ..models.kernels import DistanceKernel, Kernel

KERNEL_BOUNDS = ("auto", "trivial", "separation", "grid-1d", "grid-1d-printed")
NOISE_RATIOS = ("min-sensitivity",)
#: cells of the offset a in [0, d_z/2] for the certified 1-D supremum
GRID_1D_CELLS = 4096


def min_separation(Z) -> float:
    """Smallest Euclidean distance between two inducing points (inf for a single point)."""
    Z = v.points("inducing_points", Z)
    if Z.shape[0] < 2:
        return math.inf
    diff = Z[:, None, :] - Z[None, :, :]
    d = np.sqrt(np.sum(diff * diff, axis=-1))
    d[np.diag_indices_from(d)] = np.inf
    return float(d.min())


def _profile_sq(kernel: DistanceKernel, dist) -> np.ndarray:
    k = np.clip(kernel.of_distance(np.asarray(dist, dtype=float)), 0.0, 1.0)
    return k * k


def sq_norm_bound_printed_eq7(kernel: DistanceKernel, n_inducing: int, spacing: float) -> float:
    """Eq. 7 as printed: sum_{j=0}^{floor(|Z|/2)} 2 k_r(j d_z)^2 + (ceil - floor) k_r(ceil(|Z|/2) d_z)^2
    (a valid but loose bound on ||k||^2 / sigma_f^4: distance 0 is counted twice)."""
    m = v.integer("n_inducing", n_inducing, minimum=1)
    lo, hi = m // 2, (m + 1) // 2
    j = np.arange(lo + 1)
    return float(2.0 * np.sum(_profile_sq(kernel, j * spacing)) + (hi - lo) * _profile_sq(kernel, hi * spacing))


def sq_norm_bound_1d(kernel: DistanceKernel, n_inducing: int, spacing: float, cells: int = GRID_1D_CELLS) -> float:
    """Certified sup_x ||k(x)||^2 / sigma_f^4 for |Z| 1-D inducing points at least ``spacing`` apart
    (corrected eq. 7; see the module docstring)."""
    m = v.integer("n_inducing", n_inducing, minimum=1)
    if m == 1 or not math.isfinite(spacing):
        return 1.0
    dz = v.nonnegative("spacing", spacing)
    if dz == 0.0:  # coincident inducing points: only the trivial bound holds
        return float(m)
    edges = np.linspace(0.0, 0.5 * dz, cells + 1)
    a_lo, a_hi = edges[:-1], edges[1:]
    j = np.arange(m) * dz
    right = _profile_sq(kernel, a_lo[:, None] + j[None, :])           # upper bounds, one side
    left = _profile_sq(kernel, (dz - a_hi)[:, None] + j[None, :])     # upper bounds, other side
    both = np.sort(np.concatenate([right, left], axis=1), axis=1)[:, ::-1]
    best = float(both[:, :m].sum(axis=1).max())
    return min(best * (1.0 + 1e-12), float(m))


def kernel_norm_bound(Z, kernel: Kernel, method: str = "auto", *, signal_variance: float = 1.0) -> float:
    """R_k >= sup_x ||(sigma_f^2 k_r(|z_j - x|))_j||_2 over every possible input x (eqs. 4, 7, 8)."""
    if method not in KERNEL_BOUNDS:
        raise InvalidParameterError("kernel_bound", f"one of {KERNEL_BOUNDS}", method)
    Z = v.points("inducing_points", Z)
    sf2 = v.positive("signal_variance", signal_variance)
    m = Z.shape[0]
    trivial = float(m)
    if method == "trivial":
        return sf2 * math.sqrt(trivial)
    if not (isinstance(kernel, DistanceKernel) and kernel.nonnegative):
        if method == "auto":
            return sf2 * math.sqrt(trivial)
        raise InvalidParameterError("kernel_bound", "'trivial' for a kernel that is not a decreasing function "
                                    "of distance", method)
    dz = min_separation(Z)
    sep = 1.0 if m == 1 else 1.0 + (m - 1) * float(_profile_sq(kernel, 0.5 * dz))
    if method == "separation":
        return sf2 * math.sqrt(min(sep, trivial))
    one_d = Z.shape[1] == 1
    if method in ("grid-1d", "grid-1d-printed") and not one_d:
        raise InvalidParameterError("kernel_bound", "'trivial', 'separation' or 'auto' for inputs of "
                                    "dimension > 1 (eq. 7 is 1-D)", method)
    if method == "grid-1d-printed":
        return sf2 * math.sqrt(sq_norm_bound_printed_eq7(kernel, m, dz) if m > 1 else 1.0)
    exact = sq_norm_bound_1d(kernel, m, dz) if one_d else math.inf
    if method == "grid-1d":
        return sf2 * math.sqrt(exact)
    return sf2 * math.sqrt(min(trivial, sep, exact))


#: sigma_a / sigma_b: farther from 1 than this, the larger of the two noise scales (sigma_b = sigma_a / ratio)
#: overflows the noise-aware posterior's float64 arithmetic; refused when planned, before any charge.
NOISE_RATIO_RANGE = (1e-12, 1e12)


def _ratio(noise_ratio) -> float:
    c = v.positive("noise_ratio", noise_ratio)
    lo, hi = NOISE_RATIO_RANGE
    if not lo <= c <= hi:
        raise InvalidParameterError("noise_ratio", f"between {lo:g} and {hi:g} (sigma_a / sigma_b; farther from 1 the "
                                    "posterior's arithmetic overflows)", noise_ratio)
    return c


def resolve_noise_ratio(noise_ratio, response_bound: float, kernel_bound: float) -> float:
    """sigma_a / sigma_b: a positive number, or ``"min-sensitivity"`` = R_y / (sqrt(2) R_k)."""
    if isinstance(noise_ratio, str):
        if noise_ratio not in NOISE_RATIOS:
            raise InvalidParameterError("noise_ratio", f"a positive number or one of {NOISE_RATIOS}", noise_ratio)
        return v.positive("response_bound", response_bound) / (math.sqrt(2.0) * v.positive("kernel_bound", kernel_bound))
    return _ratio(noise_ratio)


def statistics_sensitivity(response_bound: float, kernel_bound: float, noise_ratio: float = 1.0) -> float:
    """L2 sensitivity Delta of eq. 6 (Lemma 5) under replace-one neighbours, for noise std sigma_a on
    A and sigma_b = sigma_a / noise_ratio on the scaled upper triangle of B."""
    Ry = v.positive("response_bound", response_bound)
    Rk = v.positive("kernel_bound", kernel_bound)
    c = _ratio(noise_ratio) ** 2
    try:
        return math.sqrt(Ry**4 / (2.0 * c) + 2.0 * Ry * Ry * Rk * Rk + 2.0 * c * Rk**4)
    except OverflowError:   # R_y or R_k near 1e77 or above: a raw OverflowError before (red team: Python API)
        raise InvalidParameterError("response_bound / kernel_bound", "small enough that the sensitivity "
                                    "(R_y^4 and R_k^4 terms) is within the float range",
                                    f"R_y = {Ry:g}, R_k = {Rk:g}") from None


def weighted_sensitivity(response_bound: float, kernel_bound: float, noise_ratio: float, weight_max: float, *,
                         weight_min: float = 0.0, weighted_response_bound: float | None = None) -> float:
    """L2 sensitivity of (A_h, B_h) = (sum w_i y_i k_i, sum w_i k_i k_i^T) with 0 <= weight_min <= w_i
    <= weight_max, |y_i| <= R_y, |w_i y_i| <= R_A (default w_max R_y), ||k_i|| <= R_k.

    Derived here (App. D corrected; the proof of Lemma 5 with weights): with p = (w y)(w' y'),
    t = <k, k'> and c = noise_ratio^2,
    ||v - v'||^2 <= 2 R_A^2 R_k^2 + 2 c w_max^2 R_k^4 + g,  g = -2 c w w' t^2 - 2 p t,
    and g <= min(p^2 / (2 c w w'), 2 |p| R_k^2) <= min(R_A^4 / (2 c w_min^2), w_max^2 R_y^4 / (2c), 2 R_A^2 R_k^2)
    (p^2 / (w w') = w w' y^2 y'^2). At R_A = w_max R_y this is <= w_max * eq. 6 (App. D
    corrected, docs/notes/seed001_dpgp.md, sec. 1.9: substitute k~ = sqrt(w) k, y~ = sqrt(w) y in Lemma 5)."""
    Ry = v.positive("response_bound", response_bound)
    Rk = v.positive("kernel_bound", kernel_bound)
    c = v.positive("noise_ratio", noise_ratio) ** 2
    wmax = v.positive("weight_max", weight_max)
    wmin = v.nonnegative("weight_min", weight_min)
    if wmin > wmax:
        raise InvalidParameterError("weight_min", f"<= weight_max = {wmax:g}", wmin)
    RA = wmax * Ry if weighted_response_bound is None else v.positive("weighted_response_bound", weighted_response_bound)
    if RA > wmax * Ry * (1 + 1e-12):
        raise InvalidParameterError("weighted_response_bound", f"<= weight_max * response_bound = {wmax * Ry:g}", RA)
    try:
        cross = min(RA**4 / (2.0 * c * wmin * wmin) if wmin > 0 else math.inf,
                    wmax * wmax * Ry**4 / (2.0 * c), 2.0 * RA * RA * Rk * Rk)
        return math.sqrt(2.0 * RA * RA * Rk * Rk + 2.0 * c * wmax * wmax * Rk**4 + cross)
    except OverflowError:
        raise InvalidParameterError("response_bound / kernel_bound", "small enough that the sensitivity "
                                    "(fourth-power terms) is within the float range",
                                    f"R_y = {Ry:g}, R_A = {RA:g}, R_k = {Rk:g}") from None
