"""COINPRESS private mean of scalars (Biswas, Dong, Kamath & Ullman 2020, Alg. 1 with d = 1), as seed 001
uses it for the validation log-likelihood (sec. 4.1): several steps, each a Gaussian mechanism on the
mean of values clipped to a shrinking interval around the previous noisy estimate.

Step t with interval (c, r) and budget rho_t:

    r' = r + g_1 s,   g_1 = sqrt(2 log(2n / beta))       (each value within g_1 s of the mean w.p. 1 - beta)
    c  <- mean(clip(x, c - r', c + r')) + N(0, sd_t^2),   sd_t = 2 r' / (n sqrt(2 rho_t))
    r  <- g_2 sqrt(s^2 / n + sd_t^2),   g_2 = sqrt(2 log(2 / beta))

Privacy does not depend on how the interval is updated: at every step the clipped mean has
replace-one sensitivity 2 r' / n, so adding N(0, sd_t^2) is rho_t-zCDP (Bun & Steinke 2016,
Prop. 1.6), the interval is a function of earlier noisy outputs, and adaptive composition gives
sum_t rho_t = rho (Prop. 1.7): a :class:`~privgp.accounting.events.ZcdpEvent`. The radius update
assumes values with standard deviation ``scale`` s (COINPRESS assumes unit-variance Gaussian data);
when that is wrong only accuracy suffers. n is public (replace-one neighbours).

Seed 001's schedule (sec. 4.1): 12 steps, 3/4 of rho on the last and the rest split evenly over the
first 11 (rho/44 each): :func:`paper_schedule`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import validation as v
from ..accounting.events import ZcdpEvent
from ..errors import InvalidParameterError


def paper_schedule(rho: float, steps: int = 12, last_fraction: float = 0.75) -> np.ndarray:
    """Per-step budgets: ``last_fraction`` of rho on the last step, the rest evenly over the others."""
    rho = v.positive("rho", rho)
    steps = v.integer("steps", steps, minimum=1)
    if steps == 1:
        return np.array([rho])
    f = v.open_interval("last_fraction", last_fraction, 0.0, 1.0)
    out = np.full(steps, (1.0 - f) * rho / (steps - 1))
    out[-1] = f * rho
    return out


@dataclass(frozen=True)
class CoinpressMean:
    """The private mean (last step's noisy centre), the intervals it went through and its event."""

    estimate: float
    centres: tuple[float, ...]
    radii: tuple[float, ...]
    event: ZcdpEvent


def coinpress_mean(x, centre: float, radius: float, schedule, rng: np.random.Generator, *, beta: float = 0.01,
                   scale: float = 1.0) -> CoinpressMean:
    """rho-zCDP estimate (rho = sum(schedule)) of the mean of the scalars x, starting from the public
    interval [centre - radius, centre + radius] (see the module docstring)."""
    x = v.finite_array("x", x, ndim=1)
    c = v.finite_array("centre", centre, ndim=0).item()
    r = v.positive("radius", radius)
    sched = v.finite_array("schedule", schedule, ndim=1)
    if np.any(sched <= 0):
        raise InvalidParameterError("schedule", "positive per-step budgets", sched)
    rng = v.generator("rng", rng)
    beta = v.probability("beta", beta)
    s = v.positive("scale", scale)
    n = x.shape[0]
    g1 = math.sqrt(2.0 * math.log(2.0 * n / beta))
    g2 = math.sqrt(2.0 * math.log(2.0 / beta))
    centres, radii = [], []
    steps = np.asarray(sched, dtype=float).reshape(-1)
    noise = np.asarray(rng.standard_normal(steps.size), dtype=float)
    for rho_t, z in zip(steps, noise):
        rr = r + g1 * s
        sd = 2.0 * rr / (n * math.sqrt(2.0 * float(rho_t)))
        c = float(np.mean(np.clip(x, c - rr, c + rr))) + sd * float(z)
        r = g2 * math.sqrt(s * s / n + sd * sd)
        centres.append(c)
        radii.append(r)
    return CoinpressMean(c, tuple(centres), tuple(radii), ZcdpEvent(float(np.sum(sched))))
