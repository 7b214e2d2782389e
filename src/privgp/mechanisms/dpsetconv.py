"""DPSetConv: the differentially private SetConv encoder of the DPConvCNP (seed 002, Sec. 4.2, Alg. 3).

Given a context set D = (x_n, y_n), n = 1..N, a *public* grid, an RBF psi of lengthscale lambda,
a clipping threshold C, a budget split t in (0, 1) and a target (epsilon, delta), one release is

1. y~_n = clip(y_n, -C, C)                                                    (Alg. 3, line 1)
2. mu = mu(epsilon, delta), the exact root of eq. (5); sigma_s = 2C / (mu sqrt(t)),
   sigma_d = sqrt(2) / (mu sqrt(1 - t))                                          (eq. 12)
3. g_d, g_s: two independent exact draws of GP(0, k) on the grid, k = psi (the *same* RBF, same
   lambda, k(x, x) = 1 = C_k)                                                   (Alg. 3, lines 2-3)
4. r_d = sum_n psi((grid - x_n) / lambda) + sigma_d g_d,
   r_s = sum_n y~_n psi((grid - x_n) / lambda) + sigma_s g_s                     (Alg. 3, lines 5-6)

It is mu-GDP w.r.t. replace-one neighbouring context sets (Thm 4.2: Delta_d^2 = 2, Delta_s^2 = 4 C^2),
hence (epsilon, delta)-DP; the ConvCNP decoder is post-processing (Cor. 4.3). The release
returns only the noisy channels and public quantities, with its :class:`DPSetConvEvent`; every
call is a fresh release whose event composes (k calls on the same data: mu sqrt(k)).

Public inputs, checked before anything private is touched: the grid (:class:`PublicGrid`, never
an array computed from the data), lambda, C, t, epsilon, delta. N is public under replace-one
neighbours. The noise is drawn by :func:`privgp.models.sampling.prior_paths` (Kronecker-factored exact
sampler of seed 002, App. B, float64, jitter only upwards).

For the torch model (part 2) this module is the reference: :func:`setconv_channels` gives the
noise-free channels (not a private output), :func:`plan_dpsetconv` the noise scales and event.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from .. import validation as v
from ..accounting.calibrate import feasible_side
from ..accounting.functional_noise import DPSetConvEvent, check_clip, check_split, dpsetconv_noise_scales
from ..accounting.gaussian import gdp_mu
from ..errors import InvalidParameterError, NumericalError
from ..models.domain import PublicGrid
from ..models.kernels import SquaredExponential

MECHANISM = "DPSetConv (seed 002, Alg. 3; mu-GDP by Thm 4.2)"


def _check_grid(grid) -> PublicGrid:
    if not isinstance(grid, PublicGrid):
        raise InvalidParameterError("grid", "a privgp.models.domain.PublicGrid built from public numbers (an array of "
                                    "points is refused: a grid computed from the private data would leak it)",
                                    type(grid).__name__)
    return grid


@dataclass(frozen=True)
class DPSetConvPlan:
    """Every public setting of one DPSetConv release, fixed before the data are seen."""

    grid: PublicGrid
    lengthscale: float
    clip: float
    t: float
    epsilon: float
    delta: float
    mu: float
    sigma_signal: float
    sigma_density: float
    event: DPSetConvEvent = field(repr=False)

    @property
    def kernel(self) -> SquaredExponential:
        """psi, which is also the covariance of the noise (same lengthscale)."""
        return SquaredExponential(self.lengthscale)

    def public_settings(self) -> dict:
        return {"mechanism": MECHANISM, "grid": self.grid.to_dict(), "lengthscale": self.lengthscale,
                "clip": self.clip, "t": self.t, "epsilon": self.epsilon, "delta": self.delta, "mu": self.mu,
                "sigma_signal": self.sigma_signal, "sigma_density": self.sigma_density,
                "event": self.event.to_dict()}


def plan_dpsetconv(grid: PublicGrid, *, lengthscale: float, clip: float, t: float, epsilon: float,
                   delta: float) -> DPSetConvPlan:
    """Validate the public settings and compute mu, the noise scales of eq. (12) and the event.

    The certified epsilon of the event at ``delta`` is recomputed by the accountant and never exceeds
    the target (mu is lowered in steps of 2^-40 where rounding would otherwise put it above:
    :func:`~privgp.accounting.feasible_side`)."""
    grid = _check_grid(grid)
    lengthscale = v.positive("lengthscale", lengthscale)
    clip, t = check_clip(clip), check_split(t)
    epsilon = v.positive("epsilon", epsilon)
    delta = v.probability("delta", delta)
    mu = float(gdp_mu(epsilon, delta))
    if not mu > 0:
        raise NumericalError(f"mu(epsilon={epsilon:g}, delta={delta:g}) is not positive")
    # the event recomputes mu from the noise scales and the accountant rounds epsilon up: mu is lowered in steps
    # of 2^-40 until the certified epsilon is <= the target (the one calibrator's last step; never above it)
    _, ev, _ = feasible_side(lambda m: DPSetConvEvent(clip, *dpsetconv_noise_scales(m, clip, t)), mu, epsilon,
                             delta, parameter="mu", direction="largest")
    event = cast(DPSetConvEvent, ev)
    s_s, s_d = event.sigma_signal, event.sigma_density
    mu = event.mu
    return DPSetConvPlan(grid=grid, lengthscale=lengthscale, clip=clip, t=t, epsilon=epsilon, delta=delta, mu=mu,
                         sigma_signal=s_s, sigma_density=s_d, event=event)


def setconv_weights(x, points, lengthscale: float) -> np.ndarray:
    """psi((point - x_n) / lambda) = exp(-||point - x_n||^2 / (2 lambda^2)), shape (m, N)."""
    x = v.points("x", x)
    points = v.points("points", points, dim=x.shape[1])
    return SquaredExponential(v.positive("lengthscale", lengthscale))(points, x)


def setconv_channels(x, y, points, lengthscale: float, clip: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The noise-free SetConv channels (eq. 10) at ``points``: density sum_n psi, signal
    sum_n y~_n psi with y~ = clip(y, -C, C) (no clipping when ``clip`` is None). NOT a private
    output: the reference for tests and for the torch model's mirror."""
    W = setconv_weights(x, points, lengthscale)
    y = v.responses("y", y, W.shape[1])
    if clip is not None:
        c = check_clip(clip)
        y = np.clip(y, -c, c)
    return W.sum(axis=1), W @ y


@dataclass(frozen=True)
class DPSetConvRelease:
    """The released, noisy channels on the public grid (shape ``plan.grid.shape``) and the event."""

    plan: DPSetConvPlan
    density: np.ndarray
    signal: np.ndarray
    n: int

    @property
    def event(self) -> DPSetConvEvent:
        return self.plan.event

    def channels(self) -> np.ndarray:
        """[signal, density] stacked, shape (2, *grid shape) (the order of the ConvCNP input)."""
        return np.stack([self.signal, self.density])


def dpsetconv_release(plan: DPSetConvPlan, x, y, rng: np.random.Generator) -> DPSetConvRelease:
    """One DPSetConv release of the context set (x, y) under ``plan`` (see the module docstring).

    Validation (all before any noise is drawn): x finite with the grid's dimension, y finite with
    one value per input, a generator, and the tripwire :meth:`PublicGrid.check_not_fitted_to`. The
    responses are clipped to [-C, C] here (step 1), so y need not be bounded."""
    if not isinstance(plan, DPSetConvPlan):
        raise InvalidParameterError("plan", "a DPSetConvPlan (from plan_dpsetconv)", type(plan).__name__)
    rng = v.generator("rng", rng)
    x = v.points("x", x, dim=plan.grid.dim)
    y = v.responses("y", y, x.shape[0])
    plan.grid.check_not_fitted_to("context inputs", x)
    from ..models.sampling import prior_paths  # noqa: PLC0415  (sampling sits below mechanisms)

    density, signal = setconv_channels(x, y, plan.grid.points(), plan.lengthscale, plan.clip)
    g = prior_paths(plan.kernel, plan.grid.axes(), rng=rng, L=2)            # g_d, g_s ~ GP(0, psi), independent
    shape = plan.grid.shape
    return DPSetConvRelease(plan=plan, density=density.reshape(shape) + plan.sigma_density * g[0],
                            signal=signal.reshape(shape) + plan.sigma_signal * g[1], n=int(x.shape[0]))


def dpsetconv(x, y, grid: PublicGrid, *, epsilon: float, delta: float, lengthscale: float, clip: float, t: float,
              rng: np.random.Generator) -> DPSetConvRelease:
    """Plan and release in one call (Alg. 3): returns the noisy channels and (in ``.event``) the event."""
    return dpsetconv_release(plan_dpsetconv(grid, lengthscale=lengthscale, clip=clip, t=t, epsilon=epsilon,
                                            delta=delta), x, y, rng)


def tight_neighbours(channel: str, clip: float, grid: PublicGrid, *, far: float | None = None):
    """A replace-one neighbouring pair of one-point context sets at which a channel's RKHS
    sensitivity bound is (nearly) attained: "density": x1, x2 on grid points far apart (Delta_d^2 =
    2 - 2 k(x1, x2)); "signal": x1 = x2 on a grid point, y1 = C, y2 = -C (Delta_s^2 = 4 C^2 exactly).
    Returns ((x1, y1), (x2, y2)) as arrays of shape (1, d) and (1,). For audits and tests."""
    pts = grid.points()
    C = check_clip(clip)
    if channel == "signal":
        x = pts[len(pts) // 2][None]
        return (x, np.array([C])), (x.copy(), np.array([-C]))
    if channel != "density":
        raise InvalidParameterError("channel", "'density' or 'signal'", channel)
    a, b = pts[0], pts[-1]
    if far is not None and math.dist(a, b) < far:
        raise InvalidParameterError("grid", f"two points at least {far:g} apart", math.dist(a, b))
    return (a[None], np.array([0.0])), (b[None], np.array([0.0]))
