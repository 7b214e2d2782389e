"""Report-noisy-max on a fixed public grid with the Gaussian mechanism: a private optimisation
baseline that does not use posterior sampling.

The records are responses y_s (|y_s| <= M_Y) observed at public grid points g(s) following a public,
data-independent schedule (e.g. round-robin over the grid). The mechanism releases

    argmax_g  (S_g + Z_g) / c_g,    S_g = sum of the responses at g,  c_g = their number (public),

over the points with c_g > 0, with Z_g ~ N(0, s^2) independent. Replacing one record changes one
sum by at most 2 M_Y, so the vector (S_g) has L2 sensitivity 2 M_Y and the noisy vector is the
Gaussian mechanism: mu-GDP with mu = 2 M_Y / s (:class:`~privgp.accounting.GaussianEvent`; exact
(epsilon, delta) profile, Balle & Wang 2018, Thm 8; Dong, Roth & Su 2022). The argmax is
post-processing. Same neighbouring relation as private Thompson sampling (replace-one among the
records collected), so both are compared at equal (epsilon, delta) by the same accountant.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validation as v
from ..accounting.calibrate import calibrate_gaussian
from ..accounting.certificate import PrivacyCertificate, certify
from ..accounting.events import GaussianEvent
from ..errors import InvalidParameterError

MECHANISM = ("report-noisy-max over a fixed public grid: argmax of Gaussian-noised response sums divided by their "
             "public counts (Gaussian mechanism, L2 sensitivity 2 M_Y; argmax is post-processing)")


@dataclass(frozen=True)
class GridArgmaxPlan:
    """Public settings of one noisy-argmax release and its certificate."""

    M_Y: float
    noise_std: float
    delta: float
    event: GaussianEvent
    certificate: PrivacyCertificate

    @property
    def epsilon(self) -> float:
        return float(self.certificate.epsilon)


def plan_grid_argmax(*, epsilon: float, delta: float, M_Y: float = 1.0) -> GridArgmaxPlan:
    """The smallest noise std s with certified epsilon <= target (exact Gaussian profile,
    :func:`privgp.accounting.calibrate_gaussian`, re-checked by the accountant)."""
    target = v.positive("epsilon", epsilon)
    delta = v.probability("delta", delta)
    M_Y = v.positive("M_Y", M_Y)
    sens = 2.0 * M_Y
    # exact calibration of the Gaussian mechanism, moved to the feasible side and re-checked (the one calibrator)
    event, _ = calibrate_gaussian(sens, target, delta)
    s = event.noise_std
    cert = certify(event, delta, mechanism=MECHANISM, public={"M_Y": M_Y, "noise_std": s},
                   extra_assumptions=(f"responses are clipped to |y| <= M_Y = {M_Y:g}",
                                      "replace-one neighbours among the records; the grid and the schedule of "
                                      "which grid point each record is taken at are public and data-independent"))
    return GridArgmaxPlan(M_Y=M_Y, noise_std=s, delta=delta, event=event, certificate=cert)


def grid_argmax(plan: GridArgmaxPlan, sums, counts, rng: np.random.Generator) -> int:
    """The released index: argmax over points with counts > 0 of (sums + N(0, s^2)) / counts.

    ``sums`` must be sums of responses already clipped to |y| <= plan.M_Y; ``counts`` are public."""
    rng = v.generator("rng", rng)
    S = v.finite_array("sums", sums, ndim=1)
    c = v.finite_array("counts", counts, ndim=1)
    if c.shape != S.shape or np.any(c < 0) or np.any(c != np.floor(c)):
        raise InvalidParameterError("counts", f"{S.shape[0]} non-negative integers (one per grid point)", c)
    if not np.any(c > 0):
        raise InvalidParameterError("counts", "at least one grid point with a record", "all zero")
    if np.any(np.abs(S) > plan.M_Y * c * (1 + 1e-12)):
        raise InvalidParameterError("sums", f"sums of responses clipped to |y| <= M_Y = {plan.M_Y:g}", "larger sums")
    noisy = (S + plan.noise_std * rng.standard_normal(S.shape[0])) / np.where(c > 0, c, 1.0)
    return int(np.argmax(np.where(c > 0, noisy, -np.inf)))


__all__ = ["MECHANISM", "GridArgmaxPlan", "grid_argmax", "plan_grid_argmax"]
