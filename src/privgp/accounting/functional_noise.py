"""The functional mechanism (Hall, Rinaldo & Wasserman 2013) and DPSetConv (seed 002): pure maths.

The functional mechanism releases M(D) = f_D + c g, with g ~ GP(0, k) a sample path and
{f_D} in the RKHS H of the *same* kernel k with RKHS sensitivity
Delta = sup_{D ~ D'} ||f_D - f_D'||_H (seed 002, Def. 3.3, eqs. 8-9). Three ways to choose the
multiplier c for a target (epsilon, delta), compared in seed 002, Figure 4 (App. A.6):

* :func:`hall_multiplier` - Hall et al. (2013), Thm 3.3 (seed 002, Thm 3.3):
  c = (Delta / epsilon) sqrt(2 log(2 / delta)), proved only for epsilon <= 1 (refused above);
* :func:`rdp_multiplier` - Jiang, Sun & Yu (2023), Cor. 2 + Prop. 3 (seed 002, eqs. 38-40):
  epsilon = alpha Delta^2 / (2 sigma^2) - log(delta) / (alpha - 1) at the best order
  alpha* = sqrt(-2 sigma^2 log(delta) / Delta^2) + 1 gives the quadratic
  -epsilon sigma^2 + 2 a sigma + Delta^2 / 2 = 0, a = sqrt(-Delta^2 log(delta) / 2), whose positive
  root is sigma = (2a + sqrt(4a^2 + 2 epsilon Delta^2)) / (2 epsilon) (closed form);
* :func:`gdp_multiplier` - seed 002, Thm 4.1 (via Lemma A.3): c = Delta / mu is mu-GDP, with
  mu = mu(epsilon, delta) the exact root of eq. (5) (:func:`privgp.accounting.gaussian.gdp_mu`);
  valid for every epsilon.

DPSetConv (seed 002, Sec. 4.2, Alg. 3): the SetConv density r_d = sum_n psi((x - x_n)/lambda) and
signal r_s = sum_n clip(y_n, C) psi((x - x_n)/lambda) channels lie in the RKHS of k = psi (the RBF
with the same lengthscale, 0 <= k <= C_k = 1). Their RKHS sensitivities under replace-one
neighbours are Delta_d^2 = 2 C_k and Delta_s^2 = 4 C^2 C_k (eqs. 20-30, each tight for the RBF:
density at x1, x2 far apart, signal at x1 = x2, y1 = -y2 = C); releasing both with independent GP
noises sigma_d g_d, sigma_s g_s is mu-GDP with mu^2 = Delta_s^2 / sigma_s^2 + Delta_d^2 / sigma_d^2
(Thm 4.2). The budget split 0 < t < 1 of eq. (12) gives sigma_s^2 = 4 C^2 / (t mu^2) and
sigma_d^2 = 2 / ((1 - t) mu^2) (C_k = 1).

Events (:class:`FunctionalEvent`, :class:`DPSetConvEvent`) are exactly GDP, so the accountant uses
the exact Gaussian profile, and they compose with every other event through their RDP curve
alpha mu^2 / 2.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..errors import InvalidParameterError
from .events import GaussianCurve, GaussianEvent, Neighbouring
from .gaussian import gdp_mu

#: Hall et al.'s Thm 3.3 is proved only for epsilon <= 1.
HALL_MAX_EPSILON = 1.0


def _sensitivity(sensitivity: ArrayLike) -> np.ndarray:
    s = np.asarray(sensitivity, dtype=float)
    if np.any(~(s > 0)) or np.any(np.isinf(s)):
        raise InvalidParameterError("sensitivity", "finite and > 0 (the RKHS sensitivity Delta)", s)
    return s


def _epsilon(epsilon: ArrayLike) -> np.ndarray:
    e = np.asarray(epsilon, dtype=float)
    if np.any(~(e > 0)) or np.any(np.isinf(e)):
        raise InvalidParameterError("epsilon", "finite and > 0", e)
    return e


def _delta(delta: ArrayLike) -> np.ndarray:
    d = np.asarray(delta, dtype=float)
    if np.any(~((d > 0) & (d < 1))):
        raise InvalidParameterError("delta", "in the open interval (0, 1)", d)
    return d


def _out(x: ArrayLike) -> float | np.ndarray:
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def hall_multiplier(sensitivity: ArrayLike, epsilon: ArrayLike, delta: ArrayLike) -> float | np.ndarray:
    """c = (Delta / epsilon) sqrt(2 log(2 / delta)) (Hall et al. 2013, Thm 3.3 = seed 002, Thm 3.3).

    Proved only for 0 < epsilon <= 1: larger epsilon is refused (InvalidParameterError), never
    silently extrapolated. Vectorised over its arguments."""
    s, e, d = _sensitivity(sensitivity), _epsilon(epsilon), _delta(delta)
    if np.any(e > HALL_MAX_EPSILON):
        raise InvalidParameterError("epsilon", f"<= {HALL_MAX_EPSILON:g} for Hall et al.'s Thm 3.3 "
                                    "(the bound is proved only for epsilon <= 1)", e)
    return _out(s / e * np.sqrt(2.0 * np.log(2.0 / d)))


def rdp_optimal_order(sensitivity: ArrayLike, sigma: ArrayLike, delta: ArrayLike) -> float | np.ndarray:
    """alpha* = sqrt(-2 sigma^2 log(delta) / Delta^2) + 1, the order minimising eq. (38) (eq. 39)."""
    s, d = _sensitivity(sensitivity), _delta(delta)
    sig = np.asarray(sigma, dtype=float)
    if np.any(~(sig > 0)) or np.any(np.isinf(sig)):
        raise InvalidParameterError("sigma", "finite and > 0", sig)
    return _out(np.sqrt(-2.0 * sig * sig * np.log(d) / (s * s)) + 1.0)


def rdp_multiplier(sensitivity: ArrayLike, epsilon: ArrayLike, delta: ArrayLike) -> float | np.ndarray:
    """Smallest c meeting (epsilon, delta) through the RDP bound of Jiang et al. (2023) at its best
    order: the positive root of eq. (40), c = (2a + sqrt(4a^2 + 2 epsilon Delta^2)) / (2 epsilon),
    a = sqrt(-Delta^2 log(delta) / 2). Choosing alpha* also minimises c (seed 002, App. A.6)."""
    s, e, d = _sensitivity(sensitivity), _epsilon(epsilon), _delta(delta)
    a = np.sqrt(-s * s * np.log(d) / 2.0)
    return _out((2.0 * a + np.sqrt(4.0 * a * a + 2.0 * e * s * s)) / (2.0 * e))


def gdp_multiplier(sensitivity: ArrayLike, epsilon: ArrayLike, delta: ArrayLike) -> float | np.ndarray:
    """c = Delta / mu(epsilon, delta): the functional mechanism is mu-GDP (seed 002, Thm 4.1) and so
    (epsilon, delta(epsilon))-DP with delta(epsilon) of eq. (5), for every epsilon > 0."""
    s = _sensitivity(sensitivity)
    e, d = _epsilon(epsilon), _delta(delta)
    return _out(s / gdp_mu(e, d))


MULTIPLIERS = {"hall": hall_multiplier, "rdp": rdp_multiplier, "gdp": gdp_multiplier}


# ------------------------------------------------------------------------------------------------
# DPSetConv (seed 002, Sec. 4.2)
# ------------------------------------------------------------------------------------------------

def check_clip(clip: float) -> float:
    """The clipping threshold C of DPSetConv: finite and > 0."""
    return v.positive("clip", clip)


def check_split(t: float) -> float:
    """The budget split t of eq. (12): in the open interval (0, 1)."""
    return v.open_interval("t", t, 0.0, 1.0)


def check_kernel_bound(kernel_bound: float) -> float:
    """C_k = sup k of the noise kernel (Thm 4.2 assumes 0 <= k <= C_k); 1 for normalised kernels."""
    return v.positive("kernel_bound", kernel_bound)


def setconv_sensitivities(clip: float, kernel_bound: float = 1.0) -> tuple[float, float]:
    """How far one record can move the SetConv density and signal channels (RKHS sensitivities, responses
    clipped to |y| <= C): (Delta_d, Delta_s) = (sqrt(2 C_k), 2 C sqrt(C_k)) (seed 002, eqs. 26 and 30;
    tight for the RBF)."""
    C, Ck = check_clip(clip), check_kernel_bound(kernel_bound)
    return math.sqrt(2.0 * Ck), 2.0 * C * math.sqrt(Ck)


def dpsetconv_noise_scales(mu: float, clip: float, t: float) -> tuple[float, float]:
    """The noise scales (sigma_s, sigma_d) of DPSetConv's signal and density channels for mu-GDP, the
    share t of the budget going to the signal: sigma_s^2 = 4 C^2 / (t mu^2), sigma_d^2 = 2 / ((1 - t) mu^2)
    (seed 002, eq. (12)).

    They satisfy 4 C^2 / sigma_s^2 + 2 / sigma_d^2 = mu^2 exactly (Thm 4.2 with C_k = 1)."""
    mu = v.positive("mu", mu)
    C, t = check_clip(clip), check_split(t)
    return 2.0 * C / (mu * math.sqrt(t)), math.sqrt(2.0) / (mu * math.sqrt(1.0 - t))


def dpsetconv_mu(clip: float, sigma_signal: float, sigma_density: float, kernel_bound: float = 1.0) -> float:
    """mu of DPSetConv (Thm 4.2): sqrt(4 C^2 C_k / sigma_s^2 + 2 C_k / sigma_d^2)."""
    d_d, d_s = setconv_sensitivities(clip, kernel_bound)
    s_s = v.positive("sigma_signal", sigma_signal)
    s_d = v.positive("sigma_density", sigma_density)
    return math.sqrt((d_s / s_s) ** 2 + (d_d / s_d) ** 2)


# ------------------------------------------------------------------------------------------------
# Events
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FunctionalEvent(GaussianEvent):
    """The functional mechanism f_D + c g, g ~ GP(0, k), with RKHS sensitivity ``sensitivity``
    (Delta, in the RKHS of the same k) and multiplier ``noise_std`` (c): mu-GDP with mu = Delta / c
    for every epsilon (seed 002, Thm 4.1 via Lemma A.3; the guarantee holds for every finite set of
    evaluations, hence for the path on the cylinder sigma-field, App. A.1)."""

    kind: ClassVar[str] = "functional"
    neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    proof: ClassVar[str] = ("functional mechanism f_D + c g with RKHS sensitivity Delta: mu-GDP with "
                            "mu = Delta / c (seed 002, Thm 4.1 / Lemma A.3; Hall et al. 2013, Lemma A.2)")

    @property
    def multiplier(self) -> float:
        return self.noise_std

    def assumptions(self) -> tuple[str, ...]:
        return ("the noise g is a GP sample path with the same kernel k whose RKHS norm defines Delta",
                "replace-one neighbours", "every setting (kernel, grid, multiplier) independent of the private data")


@dataclass(frozen=True)
class DPSetConvEvent(GaussianCurve):
    """One DPSetConv release (seed 002, Alg. 3): density and signal channels with independent GP
    noises sigma_d g_d, sigma_s g_s of the encoder's kernel (0 <= k <= C_k), responses clipped to
    [-C, C]. mu-GDP with mu^2 = 4 C^2 C_k / sigma_s^2 + 2 C_k / sigma_d^2 (Thm 4.2); RDP
    alpha mu^2 / 2."""

    clip: float
    sigma_signal: float
    sigma_density: float
    kernel_bound: float = 1.0
    kind: ClassVar[str] = "dpsetconv"
    neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    proof: ClassVar[str] = ("DPSetConv: mu^2 = 4 C^2 C_k / sigma_s^2 + 2 C_k / sigma_d^2 (seed 002, Thm 4.2; "
                            "sensitivities eqs. 20-30; Thm 4.1 per channel, GDP composition)")

    def __post_init__(self):
        object.__setattr__(self, "clip", check_clip(self.clip))
        object.__setattr__(self, "sigma_signal", v.positive("sigma_signal", self.sigma_signal))
        object.__setattr__(self, "sigma_density", v.positive("sigma_density", self.sigma_density))
        object.__setattr__(self, "kernel_bound", check_kernel_bound(self.kernel_bound))

    @property
    def mu(self) -> float:
        return dpsetconv_mu(self.clip, self.sigma_signal, self.sigma_density, self.kernel_bound)

    def assumptions(self) -> tuple[str, ...]:
        return ("noise kernel = the SetConv RBF psi (same lengthscale), 0 <= k <= C_k",
                "responses clipped to [-C, C] before the SetConv", "the grid is public (not computed from the data)",
                "replace-one neighbours (context size N public)")

    def details(self) -> dict[str, Any]:
        d_d, d_s = setconv_sensitivities(self.clip, self.kernel_bound)
        return {"mu": self.mu, "Delta_density": d_d, "Delta_signal": d_s}
