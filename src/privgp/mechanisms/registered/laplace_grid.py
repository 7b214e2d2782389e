"""``--mechanism laplace-grid``: the noisy grid with Laplace noise, a pure epsilon-DP map (delta = 0).

The same per-cell sums S_c of the clipped responses y in [-1, 1] and counts N_c as the Gaussian noisy grid
(:mod:`privgp.mechanisms.registered.grid`), each released with Laplace noise of scale b, then the same
public smoothing, ratio and excursion set (post-processing).

Sensitivity (replace-one neighbours, |y| <= 1; proof note). Replacing (x, y) by (x', y') changes (S, N)
in L1 norm by |y' - y| <= 2 when both lie in one cell, and by |y| + 1 + |y'| + 1 <= 4 when they lie in
cells a != b (S_a by -y, N_a by -1, S_b by +y', N_b by +1). So Delta_1 = 4 (attained at |y| = |y'| = 1 in
two cells), and the Laplace mechanism with b = Delta_1 / epsilon is epsilon-DP (Dwork, McSherry, Nissim &
Smith 2006, Prop. 1): :class:`~privgp.accounting.PureDpEvent` (the ledger composes it with randomized
response's Renyi curve, the tightest valid for epsilon-DP). A guarantee with no delta at all, and at privgp's
default deltas LESS noise than the Gaussian grid: its standard deviation 4 sqrt(2) / epsilon is 0.36-0.78 of
the Gaussian's calibrated at L2 sensitivity 2 for epsilon in [0.1, 50] at delta = 1e-6 (5.66 vs 8.45 at epsilon = 1), with heavier
tails (measured in docs/runs/utility).

Floating point (red team 21). Laplace noise added in float64 leaks through the low bits of the result (Mironov
2012): a count of 1 plus noise landing in (-0.5, 0.5) is a multiple of 2^-53, a count of 0 plus noise almost never
is, so one released number told whether a record was in a cell (delta(5) >= 0.29 for a "pure 5-DP" grid). The
release therefore adds *discrete* Laplace noise in integer arithmetic (:mod:`privgp.mechanisms.discrete_noise`):
the counts are integers; the sums are rounded to whole multiples of a public lattice g = 2^-k (k from epsilon and
n: the noise scale is at least 2^24 lattice steps and g <= 2^-20 for n < 2^32, and n 2^k <= 2^52, so the float sums' own rounding error is at
most g / 2); each gets discrete Laplace noise of scale b (b / g steps for the sums), and the integer results are
turned into floats afterwards (post-processing). Rounding a sum changes it by at most g plus its float error, so a
replacement moves the lattice sums of its (at most two) cells by at most |y| + 2g each in y units: the L1
sensitivity is 4 + 4g, and b = T g with T = ceil((4 + 4g) / (epsilon g)) keeps the release epsilon-DP exactly
(P(M = m) / P(M' = m) <= e^{(4 + 4g) / b} <= e^epsilon at every output m). Certificates written before this record
no ``noise`` setting; they are rebuilt with the float noise they were drawn with and verify says NOT VERIFIED.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import ClassVar

import numpy as np

from ... import validation as v
from ...accounting import PrivacyCertificate, certify
from ...accounting.events import PureDpEvent
from ...errors import InvalidParameterError
from ...formatting import format_upper
from ...models.domain import Box
from ..discrete_noise import MAX_T, discrete_laplace
from ..interface import (
    MechanismReport,
    PictureContext,
    Recorded,
    grid_text,
)
from ..release import ResponseMap, default_delta, grid_sizes
from .grid import (
    DEFAULT_BANDWIDTH,
    DEFAULT_CELLS,
    DEFAULT_MEMORY_LIMIT,
    UNCERTAINTY_COVERS,
    CellGridMechanism,
    CellGridRelease,
    cell_sizes,
    check_bandwidth,
    check_hyperparameter_source,
    check_memory,
    grid_memory,
    lattice_exponent,
    recorded_grid_arguments,
    release_assumptions,
    settings_chosen_by,
)

#: L1 sensitivity of the per-cell (sums, counts) vector under replace-one with |y| <= 1 (module docstring)
L1_SENSITIVITY = 4.0
#: the release's noise: discrete Laplace in integer arithmetic on the lattice (module docstring, "Floating point")
DISCRETE = "discrete-laplace"
def lattice(epsilon: float, n: int) -> tuple[int, int]:
    """(k, T) of a discrete release at ``epsilon`` for ``n`` records: the sums' lattice g = 2^-k, the coarsest with
    epsilon g <= 2^-22 and g <= 2^-20, no finer than n 2^k <= 2^52 allows (so a float sum's rounding error is at most
    g / 4; :func:`~privgp.mechanisms.registered.grid.lattice_exponent` with the scale 4 / epsilon), and the noise
    scale b = T g, T = ceil((4 + 4 g) / (epsilon g)) (the module docstring's sensitivity 4 + 4 g). Exact rational
    arithmetic on the float epsilon; an epsilon so small that T exceeds the sampler's integers (about 6e-11) is
    refused."""
    eps, two = Fraction(float(epsilon)), Fraction(2)
    k = lattice_exponent(4 / eps, n)          # the scale 4 / epsilon: epsilon g <= 2^-22
    g = two ** (-k)
    T = math.ceil((4 + 4 * g) / (eps * g))
    if T > MAX_T:
        raise InvalidParameterError("epsilon", f"large enough for the exact discrete Laplace sampler (noise of at "
                                    f"most 2^56 lattice steps of {float(g):g}: epsilon >= about "
                                    f"{float((4 + 4 * g) / (g * MAX_T)):.2g})", float(epsilon))
    return k, T


@dataclass(frozen=True, eq=False)
class LaplaceGridPlan(CellGridRelease):
    """Every public setting of one Laplace noisy-grid release: ``cells`` per axis, smoothing ``bandwidth``
    (cells), release ``grid`` (fields of :class:`~privgp.mechanisms.registered.grid.CellGridRelease`), Laplace
    ``scale`` b = 4 / epsilon."""

    target_epsilon: float
    delta: float
    scale: float
    event: PureDpEvent = field(repr=False)
    certificate: PrivacyCertificate = field(repr=False)
    hyperparameter_source: str = "given"
    mechanism: str = "laplace-grid"
    L: int = 1
    #: DISCRETE (privgp's releases) or "float": continuous noise in float64, which certificates written before
    #: 2026-11-26 were drawn with (rebuilt for verify) and forecasts simulate with (the same law up to the lattice)
    noise: str = DISCRETE
    lattice_exponent: int = 0
    lattice_steps: int = 0
    discrete_kind: ClassVar[str] = DISCRETE
    noise_words: ClassVar[str] = "Laplace"

    def statistic_exponents(self) -> dict[str, int]:
        """The lattice exponent of each released statistic (counts: whole numbers; sums: multiples of g)."""
        return {"counts": 0, "sums": self.lattice_exponent}

    @property
    def noise_std(self) -> float:
        """The standard deviation of the Laplace noise, b sqrt(2) (for the released sd). For the discrete noise it is
        the sums' (2^24 lattice steps and more: the continuous value to 1e-7) and an upper bound on the counts',
        (1 / (2 sinh^2(1 / (2b))))^(1/2) <= b sqrt(2) (1.06 against 1.13 at epsilon 5, 0.12 against 0.28 at 20): the
        released sd and its "unreliable" marks err on the cautious side."""
        return self.scale * math.sqrt(2.0)

    def _noise(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        return rng.laplace(0.0, self.scale, shape)

    def _integer_noise(self, name: str, rng: np.random.Generator) -> np.ndarray:
        """Discrete Laplace noise of scale b = T g (module docstring): T lattice steps for the sums, b = T / 2^k for
        the whole counts (k >= 0: n <= 2^51)."""
        T, k = self.lattice_steps, self.lattice_exponent
        return discrete_laplace(T, 1, self.cells, rng) if name == "sums" else discrete_laplace(T, 2 ** k, self.cells, rng)

    def _released_noise_std(self) -> float:
        return self.noise_std

    def scaled(self, n: int) -> LaplaceGridPlan:
        """The same plan for ``n`` records, noise scaled by n / self.n (sums over records; the forecast)."""
        return replace(self, n=n, scale=self.scale * n / self.n, noise="float")

    def describe(self) -> str:
        kind = (f"discrete Laplace scale {self.scale:.4g} (L1 sensitivity 4 + 4g, g = 2^-{self.lattice_exponent})"
                if self.noise == DISCRETE else f"Laplace scale {self.scale:.4g} (L1 sensitivity 4)")
        return (f"Laplace noisy grid sums and counts: n={self.n}, cells {grid_text(self.cells)}, {kind}, smoothing "
                f"{self.bandwidth:g} cells")

    @property
    def l1_sensitivity(self) -> float:
        """4 (float noise) or 4 + 4 g (sums rounded to the lattice; module docstring)."""
        return L1_SENSITIVITY + (4.0 * self.lattice if self.noise == DISCRETE else 0.0)

    def public_settings(self) -> dict:
        return {"mechanism": self.mechanism, "n": self.n, "dim": self.domain.dim, "domain": self.domain.to_dict(),
                "response_map": self.response_map.to_dict(), "cells": list(self.cells), "bandwidth": self.bandwidth,
                "grid": list(self.grid), "target_epsilon": self.target_epsilon, "delta": self.delta,
                "l1_sensitivity": self.l1_sensitivity, "laplace_scale": self.scale,
                **({"noise": DISCRETE, "lattice": self.lattice} if self.noise == DISCRETE else {}),
                # who chose cells and bandwidth, recorded when privgp did (--mechanism auto); a release with the
                # data holder's settings records nothing here, as certificates of privgp 0.x before auto did
                **({} if self.hyperparameter_source == "given" else {"hyperparameters": self.hyperparameter_source})}


def plan_laplace_grid(n: int, domain: Box, response_map: ResponseMap, *, epsilon: float, delta: float | None = None,
                      cells: int = DEFAULT_CELLS, bandwidth: float = DEFAULT_BANDWIDTH, grid: int = 121,
                      hyperparameter_source: str = "given",
                      memory_limit: float = DEFAULT_MEMORY_LIMIT, _noise: str = DISCRETE) -> LaplaceGridPlan:
    """Plan an epsilon-DP Laplace noisy-grid release: discrete Laplace noise of scale b = T g >= (4 + 4 g) / epsilon
    (:func:`lattice`; module docstring). ``delta`` only sets the (epsilon, delta) the certificate also states (the
    release is (epsilon, 0)-DP). ``_noise="float"`` rebuilds a certificate written before 2026-11-26 (float noise,
    b = 4 / epsilon); it is not offered for new releases (its low bits leak)."""
    n = v.integer("n", n, minimum=2)
    epsilon = v.positive("epsilon", epsilon)
    delta = default_delta(n) if delta is None else v.probability("delta", delta)
    bandwidth = check_bandwidth(bandwidth)
    hyperparameter_source = check_hyperparameter_source(hyperparameter_source)
    csz = cell_sizes(domain, cells)
    gsz = grid_sizes(domain, grid)
    check_memory("Laplace noisy grid", grid_memory(csz, gsz, n), memory_limit, "use fewer cells (--cells) or a "
                 "coarser map (--grid)")
    if _noise not in (DISCRETE, "float"):
        raise InvalidParameterError("noise", f"{DISCRETE!r} or 'float' (certificates before 2026-11-26)", _noise)
    event = PureDpEvent(epsilon=float(epsilon))
    cert = certify(event, delta=delta, mechanism="laplace-grid", extra_assumptions=release_assumptions(domain))
    k, T = lattice(epsilon, n) if _noise == DISCRETE else (0, 0)
    scale = math.ldexp(float(T), -k) if _noise == DISCRETE else L1_SENSITIVITY / float(epsilon)
    return LaplaceGridPlan(n=n, domain=domain, response_map=response_map, cells=csz, bandwidth=float(bandwidth),
                           grid=gsz, target_epsilon=float(epsilon), delta=float(delta), scale=scale, event=event,
                           certificate=cert, hyperparameter_source=hyperparameter_source, noise=_noise,
                           lattice_exponent=k, lattice_steps=T)


#: the discrete mechanism's references (report.html)
DISCRETE_REFERENCES = (
    "A. Ghosh, T. Roughgarden and M. Sundararajan, Universally Utility-Maximizing Privacy Mechanisms, SIAM J. "
    "Comput. 2012.",
    "C. Canonne, G. Kamath and T. Steinke, The Discrete Gaussian for Differential Privacy, NeurIPS 2020.",
    "I. Mironov, On Significance of the Least Significant Bits for Differential Privacy, CCS 2012.")


class LaplaceGrid(CellGridMechanism):
    name = "laplace-grid"
    help = ("the noisy grid with exact discrete Laplace noise (L1 sensitivity 4 + 4g on a lattice g <= 2^-20, scale "
            "(4 + 4g) / epsilon): a pure epsilon-DP map, no delta; its noise std is below the Gaussian grid's at "
            "delta <= 1e-6 and epsilon >= 0.005")
    plan_type = LaplaceGridPlan
    plan_function = staticmethod(plan_laplace_grid)
    noun, plural = "smoothed Laplace noisy-grid map", "smoothed Laplace noisy-grid maps"
    order = 70

    def rebuild(self, recorded: Recorded) -> LaplaceGridPlan:
        source = recorded.setting("hyperparameters") if recorded.has("hyperparameters") else "given"
        noise = recorded.setting("noise") if recorded.has("noise") else "float"   # before 2026-11-26: float noise
        return plan_laplace_grid(recorded.n, recorded.domain(), recorded.response_map(),
                                 **recorded_grid_arguments(recorded), hyperparameter_source=source, _noise=noise)

    def report_text(self, plan: LaplaceGridPlan, ctx: PictureContext) -> MechanismReport:
        resp = ctx.response
        cells = grid_text(plan.cells, " \u00d7 ")
        released = (f"One map of {resp.label} over the public domain, smoothed from noisy per-cell totals on a public "
                    f"grid of {cells} cells, and where it exceeds the threshold "
                    f"{ctx.value(plan.response_map.threshold)}; with its released uncertainty.")
        noise = ("discrete Laplace noise of scale " if plan.noise == DISCRETE else "Laplace noise of scale ")
        lattice_words = (f" (the totals first rounded to whole multiples of {plan.lattice:.6g} and their noise drawn in "
                         "whole steps of that size, the counts' noise in whole numbers, by integer arithmetic only, so "
                         "that no rounding of the computer's arithmetic can give a record away)"
                         if plan.noise == DISCRETE else "")
        how = ("The domain was cut into equal cells fixed in advance. For every cell, the total of the clipped "
               f"responses and the number of records in it were computed, and {noise}"
               f"{plan.scale:.4g} was added to each{lattice_words}, enough to hide any one record completely in the "
               "sense of pure differential privacy (no small probability of failure). The map is the ratio of the "
               "smoothed noisy "
               "totals to the smoothed noisy counts; its uncertainty comes from the known noise. Places where the map "
               "is closer to the threshold than twice its uncertainty are marked as unreliable. " + UNCERTAINTY_COVERS)
        if plan.noise == DISCRETE:
            statement = (f"The discrete Laplace mechanism with L1 sensitivity {format_upper(plan.l1_sensitivity, 9)} "
                         "(per-cell counts and sums rounded to multiples of "
                         f"{plan.lattice:.6g}, under replacement of one record with |y| \u2264 1) and scale "
                         f"{plan.scale:.9g} is {format_upper(plan.event.epsilon, 6)}-DP (Ghosh, Roughgarden & "
                         "Sundararajan 2012), drawn exactly in integer arithmetic (Canonne, Kamath & Steinke 2020); "
                         "smoothing is post-processing.")
        else:
            statement = (f"The Laplace mechanism with L1 sensitivity {L1_SENSITIVITY:g} (per-cell sums and counts under "
                         f"replacement of one record with |y| \u2264 1) and scale {plan.scale:.6g} is "
                         f"{format_upper(plan.event.epsilon, 6)}-DP (Dwork, McSherry, Nissim & Smith 2006); smoothing is "
                         "post-processing.")
        chosen = settings_chosen_by(plan.hyperparameter_source)
        rows = (("cells", cells, chosen), ("smoothing bandwidth", f"{plan.bandwidth:g} cells", chosen),
                ("Laplace scale", f"{plan.scale:.6g}", "4 / \u03b5" if plan.noise != DISCRETE else
                 f"(4 + 4g) / \u03b5 rounded up to whole lattice steps g = {plan.lattice:.6g}"),
                ("grid", grid_text(plan.grid, " \u00d7 "), "resolution of the released map (post-processing)"))
        return MechanismReport(released=released, how=how, statement=statement, hyperparameters=rows,
                               account_command=None,
                               references=("C. Dwork, F. McSherry, K. Nissim and A. Smith, Calibrating Noise to "
                                           "Sensitivity in Private Data Analysis, TCC 2006.",) + (DISCRETE_REFERENCES
                                                                                                if plan.noise == DISCRETE
                                                                                                else ()))

    def summary(self, plan: LaplaceGridPlan) -> dict:
        return {"L": 1, "cells": list(plan.cells), "bandwidth": plan.bandwidth, "laplace_scale": plan.scale,
                "l1_sensitivity": plan.l1_sensitivity, "target_epsilon": plan.target_epsilon, "pure_epsilon": True,
                "hyperparameters": plan.hyperparameter_source,
                **({"noise": DISCRETE, "lattice": plan.lattice} if plan.noise == DISCRETE else {})}

    def summary_lines(self, plan: LaplaceGridPlan) -> list[str]:
        kind = (f"discrete Laplace, sums on the lattice g = 2^-{plan.lattice_exponent}, L1 sensitivity 4 + 4g"
                if plan.noise == DISCRETE else "Laplace, L1 sensitivity 4")
        return [f"  mechanism   noisy grid sums and counts ({kind}, scale {plan.scale:.4g}): "
                f"pure {format_upper(plan.event.epsilon, 6)}-DP, smoothed",
                f"  settings    {grid_text(plan.cells)} cells, bandwidth {plan.bandwidth:g} cells "
                f"({plan.hyperparameter_source})",
                f"  grid        {grid_text(plan.grid)}"]
