"""The practitioner's baseline: noisy per-cell sums and counts on a public grid, then smoothing.

What a user of any general DP library would write to publish a map: cut the public box into
disjoint cells, release for every cell c the sum S_c of the clipped responses y_i in [-1, 1] and the
count N_c of the records in it, both with Gaussian noise N(0, s^2), and post-process (smooth the
sums and the counts with a public Gaussian filter, take their ratio) onto the release grid.

Sensitivity (replace-one neighbours, |y| <= 1; proof note). Let (x, y) be replaced by (x', y').
If both lie in the same cell, only S_c changes, by y' - y: the L2 change of the vector (S, N) is
|y' - y| <= 2. If they lie in cells a != b, S_a changes by -y, N_a by -1, S_b by +y', N_b by +1:
the L2 change is sqrt(y^2 + 1 + y'^2 + 1) <= 2. So the joint L2 sensitivity of (S, N) is exactly 2
(the first case is attained at y = -1, y' = 1), the same as that of the sums alone: the counts cost
nothing extra. The release is the Gaussian mechanism with sensitivity 2 and noise std s, i.e.
mu-GDP with mu = 2 / s (Dong, Roth & Su 2022, Thm 2.7), and s is calibrated on the exact GDP
profile (Balle & Wang 2018, Thm 8) -- :class:`privgp.accounting.GaussianEvent`.

Smoothing, the ratio, the excursion set and the released standard deviation are functions of the
released (S~, N~) and public settings only: post-processing, no further privacy cost.

Floating point (red team 21). Gaussian noise added in float64 leaks through the low bits of the result (Mironov
2012; delta >= 0.14 at a certified (5, 1e-6)). The release therefore adds *discrete* Gaussian noise in integer
arithmetic (:func:`privgp.mechanisms.discrete_noise.discrete_gaussian`): the counts and the sums are put on a public
lattice g = 2^-k (the counts exactly, the sums rounded: k from the noise and n, the noise std at least 2^24 lattice
steps and g <= 2^-20 for n < 2^32, and n 2^k <= 2^52, so a float sum's own rounding error is at most g / 4), each gets N_Z(0, T^2) lattice steps
of noise (std s = T g), and the integers become floats afterwards (post-processing). Rounding moves a sum by at most
g / 2 plus its float error, so a replacement moves the lattice statistics by at most 2 + 2g in L2 norm (two cells:
sqrt((|y| + 1.5 g)^2 + 1 + (|y'| + 1.5 g)^2 + 1) <= 2 + 2g). The discrete Gaussian with lattice shifts has the
continuous Gaussian's Renyi curve (Canonne, Kamath & Steinke 2020, Thm 4; independent coordinates add), so the
release is rho-zCDP with rho = (2 + 2g)^2 / (2 s^2) (:class:`~privgp.accounting.events.ZcdpEvent`); its exact GDP
profile is not proven for the discrete law, so s is calibrated on the zCDP curve (about 4-8% more noise than the
float release's exact-GDP calibration). Certificates written before 2026-11-26 record no ``noise`` setting; they
are rebuilt with their float noise and GDP event, and verify says NOT VERIFIED (their epsilon does not hold).

Seed 002's eq. (37) mechanism, which shares this module's released field, is
:mod:`privgp.mechanisms.registered.discretised_gaussian`.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from ... import portable
from ... import validation as v
from ...accounting import GaussianEvent, PrivacyCertificate, calibrate_gaussian, certify
from ...accounting.calibrate import calibrate
from ...accounting.events import EventBatch, ZcdpEvent
from ...accounting.gaussian import gaussian_noise_std
from ...errors import InvalidParameterError
from ...formatting import format_upper
from ...models.domain import Box, CellGrid, cell_index
from ..discrete_noise import DISCRETE_GAUSSIAN, MAX_T, discrete_gaussian
from ..interface import (
    CsvFile,
    Mechanism,
    MechanismReport,
    NpzFile,
    Option,
    OutputFile,
    PictureContext,
    Recorded,
    ReleasedField,
    Request,
    file_mismatch,
    grid_axes,
    grid_text,
    released_array,
    reliable_mask,
)
from ..release import ResponseMap, check_site_statistics, default_delta, grid_sizes

#: default memory limit of a grid-type release (bytes), as for the other mechanisms
DEFAULT_MEMORY_LIMIT = 4 * 2**30
#: records per chunk of the eq. (37) channels: at most this many floats in one chunk's kernel block
CHUNK_FLOATS = 20_000_000


def release_assumptions(domain: Box, settings: str = "the cells, the smoothing bandwidth and the map grid"
                        ) -> tuple[str, ...]:
    """The assumptions of a grid-type release, in words, for its certificate."""
    return ("neighbouring datasets differ by replacing one record; n is public",
            f"every record lies in the public domain {domain.exact_text()}, and the public response map clips its "
            "response to |y| <= 1",
            f"the domain, {settings} are chosen independently of the private data")


#: L2 sensitivity of the per-cell (sums, counts) vector under replace-one with |y| <= 1 (module docstring)
GRID_SENSITIVITY = 2.0
#: eq. 37's squared per-point sensitivities with C = 1, C_k = 1: Delta_s^2 = 4, Delta_d^2 = 1
EQ37_PER_POINT = math.sqrt(4.0 + 1.0)


def cell_sizes(domain: Box, cells: int, name: str = "cells") -> tuple[int, ...]:
    """Cells per axis: ``cells`` along the longest side, nearly square cells on the others (>= 1);
    ``name`` is the parameter an error names."""
    cells = v.integer(name, cells, minimum=1)
    w = domain.widths
    h = w.max() / cells
    return tuple(int(max(1, math.floor(wi / h + 0.5))) for wi in w)


def grid_memory(cells: tuple[int, ...], grid: tuple[int, ...], n: int) -> float:
    """Bytes a noisy-grid release needs: the per-cell statistics and the discrete samplers' work arrays (about 200
    bytes per cell at their peak, red team 23), the separable smoothing onto the map grid, one index array over the
    records."""
    return 8.0 * (32 * float(np.prod(cells)) + 8 * float(np.prod(grid)) + 2 * sum(g * c for g, c in zip(grid, cells))
                  + 2 * n)


#: the most records a discrete noisy grid takes: its lattice needs n 2^k <= 2^52 with k >= 0 (red team 23: at
#: n >= 2^52 the exponent went negative and the counts were shifted to 0)
MAX_RECORDS = 2**51


#: the noise is at least 2^LATTICE_STEPS_LOG2 lattice steps; the lattice g = 2^-k no coarser than 2^-MIN_LATTICE_EXPONENT
#: (the lattice's share of the sensitivity, a few g, at most a few 1e-6) unless n caps it
LATTICE_STEPS_LOG2 = 24
MIN_LATTICE_EXPONENT = 20


def lattice_exponent(scale: Fraction, n: int) -> int:
    """k of a discrete noisy grid's lattice g = 2^-k for noise of scale ``scale`` (a std or a Laplace scale, exact):
    the coarsest g <= scale 2^-24 and g <= 2^-20, but no finer than :func:`lattice_cap` allows for n records.
    Exact rational arithmetic (a float log2 is only the first guess)."""
    scale, two = Fraction(scale), Fraction(2)
    bound = scale * two ** (-LATTICE_STEPS_LOG2)
    k = math.ceil(LATTICE_STEPS_LOG2 - math.log2(float(scale)))
    while two ** (-k) > bound:
        k += 1
    while two ** (-(k - 1)) <= bound:
        k -= 1
    return min(max(k, MIN_LATTICE_EXPONENT), lattice_cap(n))


def lattice_cap(n: int) -> int:
    """The finest lattice exponent k with n 2^k <= 2^52 (the float sums' own error at most g / 4); n above
    :data:`MAX_RECORDS` is refused (before any charge: the plan functions call this)."""
    if int(n) > MAX_RECORDS:
        raise InvalidParameterError("n", "at most 2^51 records for a discrete noisy grid (its lattice needs n 2^k <= "
                                    "2^52)", n)
    return 52 - int(n).bit_length()


def cell_statistics(domain: Box, cells: tuple[int, ...], X: np.ndarray, y: np.ndarray, *, exact: bool = True
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell (sums of y, counts) of the points X on the grid of ``cells``. ``exact``: each sum is the exact
    sum rounded once (:mod:`privgp.datasets.cellstats`: independent of record order and partitioning, what a
    release uses); otherwise a float64 ``bincount`` (60x faster; for simulations and non-private references)."""
    size = int(np.prod(cells))
    idx = cell_index(domain, cells, X)
    if exact:
        from ...datasets.cellstats import cell_sums  # noqa: PLC0415

        sums, counts = cell_sums(size, idx, y)
    else:
        sums = np.bincount(idx, weights=y, minlength=size)
        counts = np.bincount(idx, minlength=size).astype(float)
    return sums.reshape(cells), counts.reshape(cells)


check_memory = v.check_memory   # re-exported: the registered mechanisms import it from here

#: the smallest smoothing bandwidth (cells) of the noisy grids: below it a map point half-way between two cell
#: centres gets a weight under e^-2 of its cell's, and at about 0.03 none at all (the map is 0 there, its sd 0)
MIN_BANDWIDTH = 0.25


def check_bandwidth(bandwidth) -> float:
    """The noisy grids' smoothing bandwidth in cells: finite and at least :data:`MIN_BANDWIDTH`."""
    b = v.positive("bandwidth", bandwidth)
    if b < MIN_BANDWIDTH:
        raise InvalidParameterError("bandwidth", f">= {MIN_BANDWIDTH:g} cells (a smaller one leaves the map between "
                                    "cell centres with almost no weight: a map of zeros there)", b)
    return b


def _gauss_matrix(targets: np.ndarray, centres: np.ndarray, h: float) -> np.ndarray:
    d = (targets[:, None] - centres[None, :]) / h
    return portable.exp(-0.5 * d * d)


@dataclass(frozen=True)
class GridField:
    """A released map on the public release grid: ``field`` (model units, [-1, 1]), its pointwise
    ``sd`` (the released noise's, by the delta method; public) and the raw released statistics."""

    axes: tuple[np.ndarray, ...]
    field: np.ndarray
    sd: np.ndarray
    statistics: dict
    level: float = 0.0

    @property
    def paths(self) -> np.ndarray:
        return self.field[None]

    def excursion(self) -> np.ndarray:
        return self.field > self.level

    def reliable(self) -> np.ndarray:
        """Where the released field is farther than RELIABLE_SD released sds from the threshold (:func:`reliable_mask`)."""
        return reliable_mask(self.field - self.level, self.sd)

    def grid_points(self) -> np.ndarray:
        mesh = np.meshgrid(*self.axes, indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=-1)


def smooth_ratio(axes, domain: Box, cells: tuple[int, ...], sums: np.ndarray, counts: np.ndarray, noise_std: float,
                 bandwidth: float) -> tuple[np.ndarray, np.ndarray]:
    """Post-processing of released per-cell (sums, counts): a separable Gaussian filter of ``bandwidth``
    cells onto the grid ``axes``, the ratio A / max(B, b0) clipped to [-1, 1] with b0 = max(1, 2 sd(B)),
    and its sd s sqrt(sum w^2) sqrt(1 + m^2) / max(B, b0) (delta method; public). The same bits on every CPU
    (:mod:`privgp.portable`: the C library's exp, products added in a fixed order), so that ``privgp verify``
    rebuilds a released map exactly wherever it runs."""
    mats = []
    for lo, w, c, ax in zip(domain.lower, domain.widths, cells, axes):
        centres = lo + (np.arange(c) + 0.5) * w / c
        mats.append(_gauss_matrix(ax, centres, max(bandwidth, 1e-9) * w / c))
    AB = np.stack([np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)])   # filtered together
    sq = np.ones(cells)
    for j, W in enumerate(mats):
        AB = portable.contract(W, AB, j + 1)
        sq = portable.contract(W * W, sq, j)
    A, B = AB[0], AB[1]
    sd_b = noise_std * np.sqrt(sq)
    denom = np.maximum(B, np.maximum(1.0, 2.0 * sd_b))
    m = np.clip(A / denom, -1.0, 1.0)
    return m, sd_b * np.sqrt(1.0 + m * m) / denom


@dataclass(frozen=True, eq=False)
class CellGridRelease:
    """What the noisy grids share (the Gaussian :class:`NoisyGridPlan` and the Laplace
    :class:`~privgp.mechanisms.registered.laplace_grid.LaplaceGridPlan`): the checks, the per-cell statistics, the
    release from them and the post-processing. A plan adds its noise (:meth:`_noise`) and the std the released
    sd is computed with (:meth:`_released_noise_std`)."""

    n: int
    domain: Box
    response_map: ResponseMap
    cells: tuple[int, ...]
    bandwidth: float
    grid: tuple[int, ...]

    #: the released statistics :meth:`post_process` takes, in its order (field.npz: ``released_<name>``)
    statistics_names: ClassVar[tuple[str, ...]] = ("sums", "counts")

    @property
    def statistics_shape(self) -> tuple[int, ...]:
        return tuple(self.cells)

    #: the noise of privgp's releases (a subclass's discrete kind; "float": certificates before 2026-11-26) and its
    #: name in words; a subclass has the fields ``noise`` and ``lattice_exponent``
    discrete_kind: ClassVar[str] = ""
    noise_words: ClassVar[str] = ""

    def _noise(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def _integer_noise(self, name: str, rng: np.random.Generator) -> np.ndarray:
        """A discrete plan's integer noise (int64, the cells' shape) for the statistic ``name``, in its lattice
        steps."""
        raise NotImplementedError

    def _released_noise_std(self) -> float:
        raise NotImplementedError

    def statistic_exponents(self) -> dict[str, int]:
        """The lattice exponent k of each released statistic of a discrete release (its values are multiples of
        2^-k)."""
        raise NotImplementedError

    @property
    def lattice(self) -> float:
        """g = 2^-k: the released sums are whole multiples of it (discrete noise)."""
        return math.ldexp(1.0, -getattr(self, "lattice_exponent", 0))

    def check_releasable(self) -> None:
        """Refuse to release with float noise (red team 22: ``dataclasses.replace(plan, noise="float", ...)`` matched
        its own rebuild, since a certificate without a ``noise`` setting rebuilds as one of before 2026-11-26): such a
        plan only rebuilds old certificates and simulates forecasts."""
        noise = getattr(self, "noise", self.discrete_kind)
        if noise != self.discrete_kind:
            raise InvalidParameterError("plan", f"a {getattr(self, 'mechanism', '')} plan with {self.discrete_kind} "
                                        "noise (float noise only rebuilds certificates written before 2026-11-26: its "
                                        "low bits leak; nothing was charged)", f"noise={noise!r}")

    def check_verifiable(self) -> None:
        """``privgp verify``: a release drawn with float noise (privgp before 2026-11-26) does not hold its epsilon
        (red team 21: the low bits of its released statistics tell whether a cell holds a record, delta(5) >= 0.29
        for a "pure 5-DP" laplace-grid release), so it is NOT VERIFIED, naming why (walk-through 17: a note under
        "VERIFIED ... epsilon <= 5" and exit 0 told a reader the guarantee held)."""
        if getattr(self, "noise", self.discrete_kind) == self.discrete_kind:
            return
        from ...errors import CertificateMismatch  # noqa: PLC0415

        raise CertificateMismatch("public_settings.noise", f"absent: this release added {self.noise_words} noise in "
                                  "floating point (privgp before 2026-11-26), whose low-order bits can tell whether a "
                                  "cell holds a record (Mironov 2012; red team 21), so its epsilon does not hold; "
                                  "withdraw its files (a new release is charged again)")

    #: the released counts' total may stray from n by at most this many of its noise's standard deviations (plus one
    #: record) before verify refuses the stated n (red team 19c: n = 5000 stated over counts summing to 197 passed);
    #: a sum of per-cell Laplace or Gaussian noise strays this far with probability below 1e-50
    COUNT_TOTAL_SDS = 20.0

    def check_released_statistics(self, npz: str, sums: np.ndarray, counts: np.ndarray) -> None:
        """A discrete release's statistics as it draws them: each a whole multiple of its lattice (anything else is
        not what privgp released, and low digits could carry other data); and, every record falling in one cell, the
        released counts summing to the stated n up to their noise (at most :data:`COUNT_TOTAL_SDS` standard
        deviations of the total: a far larger or smaller n is not the n these counts were drawn from)."""
        total_sd = self._released_noise_std() * math.sqrt(float(np.size(counts)))
        total = float(np.sum(np.asarray(counts, dtype=float)))
        if not abs(total - self.n) <= self.COUNT_TOTAL_SDS * total_sd + 1.0:
            raise file_mismatch(f"{npz}.released_counts", f"counts summing to n = {self.n} up to their noise (within "
                                f"{self.COUNT_TOTAL_SDS:g} standard deviations of the total, {total_sd:.3g}); they "
                                f"sum to {total:.6g}: the certificate states another n than the records'")
        if getattr(self, "noise", self.discrete_kind) != self.discrete_kind:
            return
        for name, values in (("counts", counts), ("sums", sums)):
            k = self.statistic_exponents()[name]
            scaled = np.ldexp(values, k)
            # -0.0 equals 0.0 but privgp never writes it (an integer turned float is +0.0): a bit per zero cell
            # (red team 22)
            if not np.array_equal(scaled, np.rint(scaled)) or np.any(np.signbit(scaled) & (scaled == 0)):
                what = "whole numbers" if k == 0 else f"whole multiples of the lattice {math.ldexp(1.0, -k)!r}"
                raise file_mismatch(f"{npz}.released_{name}", f"numbers that are not {what} as a discrete release "
                                    "writes them (no -0)")

    def check(self, X: ArrayLike, z: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        X = self.domain.check_contains("coordinates", X)
        if X.shape[0] != self.n:
            raise InvalidParameterError("coordinates", f"{self.n} rows (the n the release was planned for)", X.shape[0])
        return X, self.response_map.apply(v.responses("responses", z, self.n))

    def statistics(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-cell (sums, counts) of the checked inputs: the only private quantity the release reads. Each
        sum is the exact sum rounded once (:mod:`privgp.datasets.cellstats`), so the statistics do not depend
        on the order of the records and equal those reduced over partitions (``privgp.datasets.sources``)."""
        return cell_statistics(self.domain, self.cells, X, y)

    def draw(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> GridField:
        return self.draw_from_statistics(*self.statistics(X, y), rng)

    def check_statistics(self, sums: ArrayLike, counts: ArrayLike) -> None:
        """Before the charge, per-cell statistics reduced elsewhere (a database, a cluster) must be what the
        sensitivity assumes (:func:`~privgp.mechanisms.release.check_site_statistics`: one (sum, count) per cell,
        whole counts adding up to the planned n, |sum| <= count)."""
        check_site_statistics(sums, counts, int(np.prod(self.cells)), self.n)

    def site_rule(self) -> CellGrid:
        """The public rule that reduces records to this plan's private input: per-cell (sums, counts)."""
        return CellGrid(self.domain, self.cells)

    def draw_from_statistics(self, sums: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> GridField:
        """The release from per-cell (sums, counts) of the checked, clipped records (e.g. reduced on a Dask
        cluster): the plan's noise on the sums, then on the counts, and the post-processing; :meth:`draw`
        calls it. A discrete plan (privgp's releases) puts each statistic on its lattice as integers (the sums
        rounded; |sum| 2^k <= n 2^k <= 2^52, exact), adds the subclass's integer noise (:meth:`_integer_noise`)
        and turns the results into floats (post-processing); a "float" plan adds float noise, as privgp did before
        2026-11-26 (forecast simulations only)."""
        rng = v.generator("rng", rng)
        sums = np.asarray(sums, dtype=float).reshape(self.cells)
        counts = np.asarray(counts, dtype=float).reshape(self.cells)
        if self.discrete_kind and getattr(self, "noise", None) == self.discrete_kind:
            k = self.statistic_exponents()
            noisy = {name: np.rint(np.ldexp(stat, k[name])).astype(np.int64) + self._integer_noise(name, rng)
                     for name, stat in (("sums", sums), ("counts", counts))}   # sums first, then counts
            return self.post_process(*(np.ldexp(noisy[name].astype(float), -k[name]) for name in ("sums", "counts")))
        s_rel = sums + self._noise(sums.shape, rng)
        n_rel = counts + self._noise(counts.shape, rng)
        return self.post_process(s_rel, n_rel)

    def post_process(self, sums: np.ndarray, counts: np.ndarray) -> GridField:
        """The released map from released statistics (public; anyone can redo it from the statistics)."""
        axes = grid_axes(self.domain, self.grid)
        m, sd = smooth_ratio(axes, self.domain, self.cells, sums, counts, self._released_noise_std(), self.bandwidth)
        return GridField(axes=axes, field=m, sd=sd, statistics={"sums": sums, "counts": counts})


@dataclass(frozen=True, eq=False)
class NoisyGridPlan(CellGridRelease):
    """Every public setting of one noisy-grid release (the :class:`~privgp.mechanisms.release.ReleasePlan`
    protocol): ``cells`` per axis, the smoothing ``bandwidth`` (in cells), the release ``grid`` (fields of
    :class:`CellGridRelease`)."""

    target_epsilon: float
    delta: float
    noise_std: float
    event: GaussianEvent | ZcdpEvent = field(repr=False)
    certificate: PrivacyCertificate = field(repr=False)
    hyperparameter_source: str = "given"
    mechanism: str = "grid"
    L: int = 1
    #: DISCRETE_GAUSSIAN (privgp's releases) or "float" (certificates before 2026-11-26; forecast simulations)
    noise: str = DISCRETE_GAUSSIAN
    lattice_exponent: int = 0
    lattice_steps: int = 0
    discrete_kind: ClassVar[str] = DISCRETE_GAUSSIAN
    noise_words: ClassVar[str] = "Gaussian"

    def statistic_exponents(self) -> dict[str, int]:
        """Both released statistics are whole multiples of the lattice g (the counts too)."""
        return {"counts": self.lattice_exponent, "sums": self.lattice_exponent}

    @property
    def sensitivity(self) -> float:
        """The L2 sensitivity the event is computed with: 2, or 2 + 2g on the lattice (module docstring)."""
        return GRID_SENSITIVITY + (2.0 * self.lattice if self.noise == DISCRETE_GAUSSIAN else 0.0)

    def _noise(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        return rng.normal(0.0, self.noise_std, shape)

    def _integer_noise(self, name: str, rng: np.random.Generator) -> np.ndarray:
        """N_Z(0, T^2) lattice steps for the sums and the counts alike (module docstring, "Floating point")."""
        return discrete_gaussian(self.lattice_steps, self.cells, rng)

    def _released_noise_std(self) -> float:
        return self.noise_std

    def scaled(self, n: int) -> NoisyGridPlan:
        """The same plan for ``n`` records with the noise std scaled by n / self.n: its released statistics are
        sums over records, so the map it gives from n records is what this plan gives from self.n (the release
        forecast simulates large n this way)."""
        return replace(self, n=n, noise_std=self.noise_std * n / self.n, noise="float")

    def describe(self) -> str:
        kind = (f"discrete Gaussian noise std {self.noise_std:.4g} (L2 sensitivity 2 + 2g, g = 2^-{self.lattice_exponent})"
                if self.noise == DISCRETE_GAUSSIAN else f"Gaussian noise std {self.noise_std:.4g} (L2 sensitivity 2)")
        return (f"noisy grid sums and counts: n={self.n}, cells {' x '.join(map(str, self.cells))}, {kind}, smoothing "
                f"{self.bandwidth:g} cells, domain {self.domain.describe()}")

    def public_settings(self) -> dict:
        return {"mechanism": self.mechanism, "n": self.n, "dim": self.domain.dim, "domain": self.domain.to_dict(),
                "response_map": self.response_map.to_dict(), "cells": list(self.cells), "bandwidth": self.bandwidth,
                "grid": list(self.grid), "target_epsilon": self.target_epsilon, "delta": self.delta,
                "sensitivity": self.sensitivity, "noise_std": self.noise_std,
                "hyperparameters": self.hyperparameter_source,
                **({"noise": DISCRETE_GAUSSIAN, "lattice": self.lattice} if self.noise == DISCRETE_GAUSSIAN else {})}


def plan_grid(n: int, domain: Box, response_map: ResponseMap, *, epsilon: float, delta: float | None = None,
              cells: int = 8, bandwidth: float = 1.0, grid: int = 81, hyperparameter_source: str = "given",
              memory_limit: float = DEFAULT_MEMORY_LIMIT, _noise: str = DISCRETE_GAUSSIAN) -> NoisyGridPlan:
    """Plan a noisy-grid release at target (epsilon, delta): discrete Gaussian noise of std s = T g, calibrated on its
    zCDP curve at L2 sensitivity 2 + 2g (module docstring, "Floating point"; :func:`discrete_gaussian_noise`).
    Every check runs here, before any charge: the arrays (per-cell statistics, the smoothing on the map grid)
    must fit ``memory_limit``; the pass over the records is O(n) and needs one index array of n integers.
    ``_noise="float"`` rebuilds a certificate written before 2026-11-26 (float noise, s = 2 / mu*(epsilon, delta) on
    the exact GDP profile); it is refused for a release."""
    n = v.integer("n", n, minimum=2)
    epsilon = v.positive("epsilon", epsilon)
    delta = default_delta(n) if delta is None else v.probability("delta", delta)
    bandwidth = check_bandwidth(bandwidth)
    hyperparameter_source = check_hyperparameter_source(hyperparameter_source)
    if _noise not in (DISCRETE_GAUSSIAN, "float"):
        raise InvalidParameterError("noise", f"{DISCRETE_GAUSSIAN!r} or 'float' (certificates before 2026-11-26)",
                                    _noise)
    csz = cell_sizes(domain, cells)
    gsz = grid_sizes(domain, grid)
    v.check_memory("noisy grid", grid_memory(csz, gsz, n), memory_limit, "use fewer cells (--cells) or a coarser map "
                 "(--grid)")
    k = T = 0
    event: GaussianEvent | ZcdpEvent
    if _noise == DISCRETE_GAUSSIAN:
        k, T, event = discrete_gaussian_noise(epsilon, delta, n)
        cert = certify(event, delta=delta, mechanism="grid", extra_assumptions=release_assumptions(domain))
        s = math.ldexp(float(T), -k)
    else:
        gauss, cert = calibrate_gaussian(GRID_SENSITIVITY, epsilon, delta, extra_assumptions=release_assumptions(domain))
        event, s = gauss, gauss.noise_std
    return NoisyGridPlan(n=n, domain=domain, response_map=response_map, cells=csz, bandwidth=float(bandwidth),
                         grid=gsz, target_epsilon=float(epsilon), delta=float(delta), noise_std=s,
                         event=event, certificate=cert, hyperparameter_source=hyperparameter_source, noise=_noise,
                         lattice_exponent=k, lattice_steps=T)




def _rho(T: int, k: int) -> float:
    """rho = (2 + 2g)^2 / (2 (T g)^2) for g = 2^-k, rounded up to a float (an upper bound of the exact rational)."""
    g = Fraction(2) ** (-k)
    exact = (2 + 2 * g) ** 2 / (2 * (T * g) ** 2)
    rho = float(exact)
    return rho if Fraction(rho) >= exact else math.nextafter(rho, math.inf)


def discrete_gaussian_noise(epsilon: float, delta: float, n: int) -> tuple[int, int, ZcdpEvent]:
    """(k, T, event) of a discrete Gaussian grid at (epsilon, delta) for n records: the lattice g = 2^-k (std >= 2^24
    steps, g <= 2^-20, n 2^k <= 2^52), the smallest T whose zCDP event rho = (2 + 2g)^2 / (2 (T g)^2) has a certified
    epsilon <= the target (the one calibrator, then whole lattice steps, re-checked)."""
    s0 = float(gaussian_noise_std(GRID_SENSITIVITY, epsilon, delta))   # the float release's std: a lower bound
    k = lattice_exponent(Fraction(s0), n)
    g = math.ldexp(1.0, -k)
    sens2 = (2.0 + 2.0 * g) ** 2

    def batch(stds: np.ndarray) -> EventBatch:   # the vectorised accountant path of the calibrator
        rho = sens2 / (2.0 * stds * stds)
        return EventBatch(ZcdpEvent, tuple(rho.shape), {"rho": rho}, {"rho": rho})

    res = calibrate(lambda s: ZcdpEvent(rho=sens2 / (2.0 * s * s)), "noise_std", (s0, 16.0 * s0), epsilon, delta,
                    make_batch=batch)
    T = math.ceil(Fraction(res.value) / Fraction(g))
    for _ in range(64):   # whole lattice steps, rho rounded up: re-checked through the accountant
        if T > MAX_T - 1:
            raise InvalidParameterError("epsilon", "large enough for the exact discrete Gaussian sampler (noise of at "
                                        "most 2^56 lattice steps)", epsilon)
        event = ZcdpEvent(rho=_rho(T, k))
        if certify(event, delta=delta).epsilon <= epsilon:
            return k, T, event
        T += 1
    raise InvalidParameterError("epsilon", "a target the discrete Gaussian calibration reaches", epsilon)  # pragma: no cover


# -- the mechanism ---------------------------------------------------------------------------------

DEFAULT_CELLS = 8
DEFAULT_BANDWIDTH = 1.0
CELLS = Option("cells", f"cells along the longest side of the box (default {DEFAULT_CELLS}; nearly square cells)", int,
               "C", default=DEFAULT_CELLS)
BANDWIDTH = Option("bandwidth", f"smoothing bandwidth in cells, >= {MIN_BANDWIDTH:g} (public post-processing; default "
                   f"{DEFAULT_BANDWIDTH:g})",
                   float, "B", default=DEFAULT_BANDWIDTH)


def grid_arguments(mech: Mechanism, request: Request) -> dict:
    """The plan function's arguments of a noisy-grid-type mechanism from a request (its options: cells, bandwidth)."""
    return dict(epsilon=mech.epsilon(request), delta=request.delta, cells=mech.option(request, "cells"),
                bandwidth=mech.option(request, "bandwidth"), grid=request.grid_points(), memory_limit=request.memory_limit)


def recorded_grid_arguments(recorded: Recorded) -> dict:
    """The same arguments from a certificate's public settings (cells along the longest side; an older
    certificate may record them as one number)."""
    s = recorded.setting
    cells = recorded.grid_points("cells") if isinstance(s("cells"), list) and s("cells") else s("cells")
    return dict(epsilon=s("target_epsilon"), delta=s("delta"), cells=cells, bandwidth=s("bandwidth"),
                grid=recorded.grid_points())


#: what a noisy grid's released uncertainty and its "unreliable" marks cover, and what they do not (report.html)
UNCERTAINTY_COVERS = ("The released uncertainty is that of the privacy noise only. Outside the marked places the "
                      "noise alone cannot have put the map on the wrong side of the threshold, but the cells can: a "
                      "feature smaller than a cell is blurred into its neighbours, and a cell with few records gives a "
                      "rough average, so an unmarked place can still be on the wrong side.")


#: how the settings of a grid-type release were chosen: by the data holder, or (grid and laplace-grid) by
#: ``--mechanism auto``, whose text starts with this (``privgp verify`` checks the whole text: auto.check_auto_choice)
GIVEN, AUTO_PREFIX = "given", "auto: "


def check_hyperparameter_source(source: object, *, auto: bool = True) -> str:
    """``source`` if it is one a release of this kind records: "given", or (``auto``) auto's own text. The field is
    public and printed in the report, so nothing else may ride in it (a certificate's free text is bounded and
    checked elsewhere; this one states how the settings were chosen, and that statement must be true)."""
    if source == GIVEN or (auto and isinstance(source, str) and source.startswith(AUTO_PREFIX)):
        return source
    want = f"{GIVEN!r} or --mechanism auto's own text ({AUTO_PREFIX!r}...)" if auto else repr(GIVEN)
    raise InvalidParameterError("hyperparameters", want, source)


def settings_chosen_by(source: str) -> str:
    """The report's "how it was chosen" words for the cells and bandwidth of a grid-type plan whose
    ``hyperparameter_source`` is ``source`` (checked by :func:`check_hyperparameter_source`)."""
    if source.startswith(AUTO_PREFIX):
        return "chosen by privgp (--mechanism auto) from public inputs only (n, \u03b5, \u03b4) on pilot simulations"
    return "set by the data holder"


def field_files(released: GridField, plan, coordinates: Sequence[str]) -> list[OutputFile]:
    """field.npz (field, sd, reliable mask, axes, the released statistics, response map) and field.csv."""
    names = list(coordinates)
    rm = plan.response_map
    reliable = released.reliable()
    stats = {f"released_{k}": val for k, val in released.statistics.items()}
    npz = NpzFile("field.npz", dict(
        field=released.field, sd=released.sd, reliable=reliable,
        **{f"axis_{nm}": ax for nm, ax in zip(names, released.axes)}, **stats,
        threshold=np.float64(rm.threshold), clip=np.float64(rm.clip), transform=np.array(rm.transform),
        units=np.array("field and sd in model units: (g(response) - g(threshold)) / clip, in [-1, 1]; threshold at 0")))
    f = released.field.ravel()
    csv = CsvFile("field.csv", names + ["field_model_units", "field_response_units", "sd_model_units", "reliable"],
                  np.column_stack([released.grid_points(), f, rm.to_response_units(f), released.sd.ravel(),
                                   reliable.ravel().astype(int)]))
    return [npz, csv]


class GridFieldMechanism(Mechanism):
    """A mechanism whose release is one :class:`GridField` (a map with its released sd): field.npz and
    field.csv, and one field for the picture, called :attr:`noun`. Not registered itself (no ``name``)."""

    #: what the picture calls the released map (singular, plural)
    noun: ClassVar[str]
    plural: ClassVar[str]
    forecast_reps = 8

    npz = "field.npz"
    data_files = ("field.npz", "field.csv")

    def files(self, released: GridField, plan: Any, coordinates: Sequence[str]) -> list[OutputFile]:
        return field_files(released, plan, coordinates)

    def released_from_arrays(self, arrays: dict[str, np.ndarray], plan: Any) -> GridField:
        """The map and its sd recomputed from the released statistics in field.npz (public post-processing under the
        plan: its noise scale, hence the sd, follows from epsilon)."""
        stats = [released_array(arrays, self.npz, f"released_{k}", plan.statistics_shape) for k in plan.statistics_names]
        check = getattr(plan, "check_released_statistics", None)   # e.g. a discrete release's lattice
        if check is not None:
            check(self.npz, *stats)
        return plan.post_process(*stats)

    def fields(self, released: GridField, plan: Any) -> ReleasedField:
        return ReleasedField(axes=released.axes, values=released.field[None], noun=self.noun, plural=self.plural,
                             sd=released.sd)


class CellGridMechanism(GridFieldMechanism):
    """A noisy-grid-type mechanism: private input per-cell sums and counts, options ``--cells`` and
    ``--bandwidth``, planned by :attr:`plan_function` (``plan_function(n, domain, response_map, **arguments)``)."""

    options = (CELLS, BANDWIDTH)
    reads_cell_statistics = True
    plan_function: ClassVar[Callable[..., Any]]

    def plan(self, request: Request) -> Any:
        return type(self).plan_function(request.n, request.domain, request.response_map,
                                        **grid_arguments(self, request))


class NoisyGrid(CellGridMechanism):
    name = "grid"
    help = ("noisy per-cell sums and counts of the clipped responses on a public grid of cells (exact discrete Gaussian "
            "noise, L2 sensitivity 2 + 2g on a lattice g, zCDP calibration), smoothed onto the map: the "
            "practitioner's baseline")
    plan_type = NoisyGridPlan
    plan_function = staticmethod(plan_grid)
    noun, plural = "smoothed noisy-grid map", "smoothed noisy-grid maps"
    order = 50

    def rebuild(self, recorded: Recorded) -> NoisyGridPlan:
        """Through :func:`plan_grid`, from the recorded cells (along the longest side), bandwidth, grid, target."""
        noise = recorded.setting("noise") if recorded.has("noise") else "float"   # before 2026-11-26: float noise
        return plan_grid(recorded.n, recorded.domain(), recorded.response_map(), **recorded_grid_arguments(recorded),
                         hyperparameter_source=recorded.setting("hyperparameters"), _noise=noise)

    def report_text(self, plan: NoisyGridPlan, ctx: PictureContext) -> MechanismReport:
        resp = ctx.response
        thr = ctx.value(plan.response_map.threshold)
        cells = grid_text(plan.cells, " \u00d7 ")
        released = (f"One map of {resp.label} over the public domain, smoothed from noisy per-cell totals on a public "
                    f"grid of {cells} cells, and where it exceeds the threshold {thr}; with the released uncertainty "
                    "of the map at every point.")
        discrete = plan.noise == DISCRETE_GAUSSIAN
        noise = "discrete Gaussian noise" if discrete else "Gaussian noise"
        lattice_words = (f" (totals and counts on a lattice of {plan.lattice:.6g} and the noise drawn in whole steps of "
                         "that size, by integer arithmetic only, so that no rounding of the computer's arithmetic can "
                         "give a record away)" if discrete else "")
        how = ("The domain was cut into equal cells fixed in advance. For every cell, the total of the clipped "
               f"responses and the number of records in it were computed, and {noise} was added to each total "
               f"and count{lattice_words}, with a standard deviation of {plan.noise_std:.4g} (on the clipped scale) "
               "calibrated so "
               "that replacing one record (which changes these numbers by at most 2 in total, Euclidean length) is "
               "covered by the guarantee. The map is the ratio of the smoothed noisy totals to the smoothed noisy "
               "counts; its uncertainty comes from the known noise. Places where the map is closer to the threshold "
               "than twice its uncertainty are marked as unreliable: there the released map cannot say on which side "
               "of the threshold the response is. " + UNCERTAINTY_COVERS)
        if discrete and isinstance(plan.event, ZcdpEvent):
            statement = (f"The discrete Gaussian mechanism with L2 sensitivity {format_upper(plan.sensitivity, 9)} (the "
                         f"per-cell sums and counts on a lattice of {plan.lattice:.6g}, under replacement of one record "
                         f"with |y| \u2264 1) and noise standard deviation {plan.noise_std:.9g} is \u03c1-zCDP with "
                         f"\u03c1 = {format_upper(plan.event.rho, 6)} (Canonne, Kamath & Steinke 2020, Thm 4), "
                         "drawn "
                         "exactly in integer arithmetic; (\u03b5, \u03b4) from its R\u00e9nyi curve. Smoothing is "
                         "post-processing.")
        else:
            statement = (f"The Gaussian mechanism with L2 sensitivity {GRID_SENSITIVITY:g} (the per-cell sums and counts "
                         f"under replacement of one record with |y| \u2264 1) and noise standard deviation "
                         f"{plan.noise_std:.6g} is \u03bc-GDP with \u03bc = {format_upper(GRID_SENSITIVITY / plan.noise_std, 6)} (Dong, "
                         "Roth & Su 2022, Thm 2.7); (\u03b5, \u03b4) from its exact privacy profile (Balle & Wang 2018, "
                         "Thm 8). Smoothing is post-processing.")
        chosen = settings_chosen_by(plan.hyperparameter_source)
        rows = (("cells", cells, chosen), ("smoothing bandwidth", f"{plan.bandwidth:g} cells", chosen),
                ("noise standard deviation", f"{plan.noise_std:.6g}", "calibrated from \u03b5 and \u03b4 (zCDP, whole "
                 "lattice steps)" if discrete else "calibrated from \u03b5 and \u03b4 (exact Gaussian-DP)"),
                ("grid", grid_text(plan.grid, " \u00d7 "), "resolution of the released map (post-processing)"))
        return MechanismReport(released=released, how=how, statement=statement, hyperparameters=rows,
                               account_command=None,
                               references=(("C. Canonne, G. Kamath and T. Steinke, The Discrete Gaussian for "
                                            "Differential Privacy, NeurIPS 2020.",
                                            "I. Mironov, On Significance of the Least Significant Bits for Differential "
                                            "Privacy, CCS 2012.") if discrete else
                                           ("J. Dong, A. Roth and W. J. Su, Gaussian Differential Privacy, JRSS B 2022.",
                                            "B. Balle and Y.-X. Wang, Improving the Gaussian Mechanism for "
                                            "Differential Privacy, ICML 2018.")))

    def summary(self, plan: NoisyGridPlan) -> dict:
        return {"L": 1, "cells": list(plan.cells), "bandwidth": plan.bandwidth, "noise_std": plan.noise_std,
                "sensitivity": plan.sensitivity, "target_epsilon": plan.target_epsilon,
                "hyperparameters": plan.hyperparameter_source,
                **({"noise": DISCRETE_GAUSSIAN, "lattice": plan.lattice} if plan.noise == DISCRETE_GAUSSIAN else {})}

    def summary_lines(self, plan: NoisyGridPlan) -> list[str]:
        return [
            (f"  mechanism   noisy grid sums and counts (discrete Gaussian on the lattice g = 2^-{plan.lattice_exponent}, "
             f"L2 sensitivity 2 + 2g, noise std {plan.noise_std:.4g}), smoothed" if plan.noise == DISCRETE_GAUSSIAN else
             f"  mechanism   noisy grid sums and counts (Gaussian, L2 sensitivity 2, noise std {plan.noise_std:.4g}), "
             "smoothed"),
            f"  settings    {grid_text(plan.cells)} cells, bandwidth {plan.bandwidth:g} cells "
            f"({plan.hyperparameter_source})",
            f"  grid        {grid_text(plan.grid)}",
        ]
