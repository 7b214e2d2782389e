"""Exact privacy profiles of functional-mechanism releases on a grid, for neighbouring datasets.

A DPSetConv release (or any release f_D(grid) + c g(grid)) is Gaussian with mean f_D(grid) and a
covariance S = c^2 K~ that does not depend on the data (K~ the covariance the noise sampler actually
draws from, :func:`privgp.models.sampling.prior_covariance`: the kernel matrix plus the sampler's jitter).
For neighbouring D, D' the two laws differ only in the mean, so their privacy-loss distribution is
exactly that of a Gaussian mechanism with mu_exact = ||S^{-1/2} (f_D - f_D')|| (Balle & Wang 2018;
:func:`privgp.accounting.divergences.gaussian_shift_mu`) and their tight profile is
delta(epsilon) = gdp_delta(mu_exact, epsilon). The certified curve is gdp_delta(mu_bound, epsilon)
with mu_bound from Thm 4.2 (DPSetConv). mu_exact <= mu_bound must hold for every pair (Hall et al.
2013, Prop. 8: the grid quadratic form never exceeds the RKHS norm; the jitter only lowers it);
tight configurations bring it close.

Tight configurations of DPSetConv (seed 002, App. A.4): density channel alone, x1, x2 on grid points
far apart (mu_d^2 = (2 - 2 k(x1, x2)) / sigma_d^2); signal channel alone, x1 = x2 on a grid point,
y1 = C, y2 = -C (mu_s^2 = 4 C^2 / sigma_s^2). One pair cannot reach both at once: for replaced
points at kernel value kk = k(x1, x2) in [0, 1] the joint value is
(2 - 2 kk) / sigma_d^2 + (y1^2 + y2^2 - 2 y1 y2 kk) / sigma_s^2, at most
(2 - 2 kk) / sigma_d^2 + 2 C^2 (1 + kk) / sigma_s^2, linear in kk, so the supremum over all pairs
is max(2 / sigma_d^2 + 2 C^2 / sigma_s^2, 4 C^2 / sigma_s^2) = mu^2 max(1 - t/2, t) under eq. (12):
Thm 4.2 is tight per channel but not jointly (``joint_supremum_mu``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...accounting.divergences import gaussian_shift_mu
from ...accounting.functional_noise import setconv_sensitivities
from ...accounting.gaussian import gdp_delta
from ...mechanisms.dpsetconv import DPSetConvPlan, setconv_channels, tight_neighbours
from ...models.sampling.prior import prior_covariance


@dataclass(frozen=True)
class PairProfile:
    """mu of the exact profile of one neighbouring pair next to the certified mu."""

    name: str
    mu_exact: float
    mu_density: float
    mu_signal: float
    mu_bound: float
    mu_density_bound: float
    mu_signal_bound: float

    @property
    def ratio(self) -> float:
        return self.mu_exact / self.mu_bound

    def delta_exact(self, epsilon) -> np.ndarray:
        return gdp_delta(self.mu_exact, epsilon)

    def delta_bound(self, epsilon) -> np.ndarray:
        return gdp_delta(self.mu_bound, epsilon)

    def to_dict(self) -> dict:
        return {"pair": self.name, "mu_exact": self.mu_exact, "mu_density": self.mu_density,
                "mu_signal": self.mu_signal, "mu_bound": self.mu_bound, "ratio": self.ratio,
                "mu_density_bound": self.mu_density_bound, "mu_signal_bound": self.mu_signal_bound}


def dpsetconv_pair_profile(plan: DPSetConvPlan, D1, D2, name: str = "pair", noise_cov: np.ndarray | None = None) -> PairProfile:
    """Exact mu of the DPSetConv release (both channels) for the context sets D1 = (x1, y1),
    D2 = (x2, y2) under ``plan``; ``noise_cov`` (the sampler's covariance on the grid, scale 1) is
    computed when not given (O(m^2) memory: small grids)."""
    K = prior_covariance(plan.kernel, plan.grid.axes()) if noise_cov is None else noise_cov
    P = plan.grid.points()
    d1, s1 = setconv_channels(D1[0], D1[1], P, plan.lengthscale, plan.clip)
    d2, s2 = setconv_channels(D2[0], D2[1], P, plan.lengthscale, plan.clip)
    mu_d = gaussian_shift_mu(d1, d2, plan.sigma_density ** 2 * K)
    mu_s = gaussian_shift_mu(s1, s2, plan.sigma_signal ** 2 * K)
    b_d, b_s = setconv_sensitivities(plan.clip)
    return PairProfile(name=name, mu_exact=math.hypot(mu_d, mu_s), mu_density=mu_d, mu_signal=mu_s, mu_bound=plan.mu,
                       mu_density_bound=b_d / plan.sigma_density, mu_signal_bound=b_s / plan.sigma_signal)


def joint_supremum_mu(plan: DPSetConvPlan) -> float:
    """sup over replace-one pairs of the exact mu of the joint release, for a grid containing the
    replaced points (module docstring): sqrt(max(2/s_d^2 + 2C^2/s_s^2, 4C^2/s_s^2))."""
    C, s_s, s_d = plan.clip, plan.sigma_signal, plan.sigma_density
    return math.sqrt(max(2 / s_d**2 + 2 * C * C / s_s**2, 4 * C * C / s_s**2))


def dpsetconv_tightness(plan: DPSetConvPlan, *, context=None) -> list[PairProfile]:
    """Exact profiles at the tight configurations: "density" (x1, x2 far apart, y = 0), "signal"
    (x1 = x2, y = +-C), and "joint" (x1, x2 far apart, y = +-C). ``context`` = (x, y): a common core
    added to both sets (the profile does not depend on it: the channels are sums)."""
    K = prior_covariance(plan.kernel, plan.grid.axes())
    out = []
    for name in ("density", "signal", "joint"):
        if name == "joint":
            (a, _), (b, _) = tight_neighbours("density", plan.clip, plan.grid)
            p1, p2 = (a, np.array([plan.clip])), (b, np.array([-plan.clip]))
        else:
            p1, p2 = tight_neighbours(name, plan.clip, plan.grid)
        if context is not None:
            xc = np.asarray(context[0], float).reshape(-1, plan.grid.dim)
            yc = np.asarray(context[1], float)
            p1 = (np.vstack([xc, p1[0]]), np.concatenate([yc, p1[1]]))
            p2 = (np.vstack([xc, p2[0]]), np.concatenate([yc, p2[1]]))
        out.append(dpsetconv_pair_profile(plan, p1, p2, name=name, noise_cov=K))
    return out


@dataclass(frozen=True)
class MeanSensitivitySearch:
    """Largest exact ||mu_D - mu_D'||_{H_k} found over replace-one pairs next to the certified bound."""

    kernel: str
    lengthscale: float
    n: int
    r: float
    found: float
    bound: float
    lemma: str
    evaluations: int
    worst: dict

    @property
    def ratio(self) -> float:
        return self.found / self.bound

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "lengthscale": self.lengthscale, "n": self.n, "r": self.r, "found": self.found,
                "bound": self.bound, "ratio": self.ratio, "lemma": self.lemma, "evaluations": self.evaluations,
                "found_le_bound": bool(self.found <= self.bound * (1 + 1e-9))}


def posterior_mean_search(kernel: str, lengthscale: float, n: int, r: float, *, rng: np.random.Generator,
                          starts: int = 4, maxiter: int = 1500, M_Y: float = 1.0, sensitivity: str = "auto") -> MeanSensitivitySearch:
    """Adversarial search (Nelder-Mead from random starts) over every input in [0, 1] and response in
    [-M_Y, M_Y] of a replace-one pair of size n for the largest exact RKHS distance of the posterior
    means (:func:`privgp.mechanisms.functional.posterior_mean_rkhs_distance`), beside the bound of
    :func:`privgp.mechanisms.functional.posterior_mean_sensitivity` on the unit interval. A lower
    estimate of the true supremum."""
    from scipy.optimize import minimize

    from ...mechanisms.functional import posterior_mean_rkhs_distance, posterior_mean_sensitivity
    from ...models.domain import Box
    from ...models.kernels import make_kernel

    k = make_kernel(kernel, lengthscale)
    sens = posterior_mean_sensitivity(n, r, kernel=kernel, lengthscale=lengthscale, domain=Box.unit(1), M_Y=M_Y,
                                      sensitivity=sensitivity)
    count = [0]

    def unpack(p):
        p = np.clip(p, -1.0, 1.0)
        core_x = (p[: n - 1, None] + 1) / 2
        core_y = M_Y * p[n - 1: 2 * n - 2]
        x1, x2 = (p[2 * n - 2] + 1) / 2, (p[2 * n - 1] + 1) / 2
        return (np.vstack([core_x, [[x1]]]), np.r_[core_y, M_Y * p[2 * n]],
                np.vstack([core_x, [[x2]]]), np.r_[core_y, M_Y * p[2 * n + 1]])

    def neg(p):
        count[0] += 1
        return -posterior_mean_rkhs_distance(k, r, *unpack(p))

    best, best_p = -1.0, None
    for _ in range(starts):
        res = minimize(neg, rng.uniform(-1, 1, 2 * n + 2), method="Nelder-Mead",
                       options=dict(maxiter=maxiter, xatol=1e-9, fatol=1e-12))
        if -res.fun > best:
            best, best_p = -res.fun, res.x
    X1, y1, X2, y2 = unpack(best_p)
    return MeanSensitivitySearch(kernel=k.name, lengthscale=float(lengthscale), n=int(n), r=float(r), found=float(best),
                                 bound=float(sens.value), lemma=sens.lemma, evaluations=count[0],
                                 worst={"X1": X1.ravel().tolist(), "y1": y1.tolist(), "X2": X2.ravel().tolist(),
                                        "y2": y2.tolist()})
