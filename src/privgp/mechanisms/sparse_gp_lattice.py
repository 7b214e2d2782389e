"""Exact discrete noise for a DP sparse-GP release (``privgp release --mechanism sparse-gp``).

Why: seed 001's mechanism adds Gaussian noise to the statistics (A, B^) in float64 (eq. 5), and float noise leaks
through the low-order bits of its result (Mironov 2012): with one inducing point the released m and S give a~
exactly, and red team 20f measured delta(5) >= 0.10 where 1e-6 was certified. A release therefore puts the
statistics on public lattices, adds *discrete* Gaussian noise in integer arithmetic
(:func:`privgp.mechanisms.discrete_noise.discrete_gaussian`, Canonne, Kamath & Steinke 2020, Alg. 3) and only then
turns the integers into floats (post-processing, as the noisy grids do).

The lattices. Each record's kernel vector k_i = (sigma_f^2 k(z_j, x_i))_j is rounded entrywise to the lattice
g_k = 2^-e_k, the coarsest power of two with sigma_f^2 / g_k <= 2^16 (:data:`LATTICE_BITS`), and clipped to
|k~| <= 2^16 steps; its clipped response to g_y = 2^-e_y with R_y / g_y <= 2^16, and clipped to floor(R_y / g_y)
steps, so |y~| <= R_y. The statistics are then
integers: A~ = sum y~_i k~_i in units g_k g_y and B~ = sum k~_i k~_i^T in units g_k^2. They are computed exactly:
in blocks of at most 2^15 records (:data:`LATTICE_CHUNK`) a float64 product of integer-valued matrices has every
partial sum an integer below 2^15 2^32 = 2^47 < 2^53, so every addition is exact whatever BLAS's order, blocking
or threads; the blocks are added as int64, below 2^28 2^32 = 2^60 for n <= 2^28 (:data:`LATTICE_MAX_RECORDS`).

Sensitivity. Lemma 5 (eq. 6) bounds the change of [A ; B^] under replace-one for any vectors with ||k|| <= R_k and
|y| <= R_y (its proof maximises over <k, k'> without a sign), so it holds for the rounded records with
R_k' = R_k + g_k sqrt(d) (rounding moves each of the d entries by at most g_k / 2; the other g_k / 2 covers the
float error of computing k_i and R_k, below 1e-13 of sigma_f^2) and the same R_y (y~ is clipped to it):
Delta' = Delta(R_y, R_k', ratio) (:func:`~privgp.mechanisms.sparse_gp_sensitivity.statistics_sensitivity`).

Noise and accounting. A~ gets N_Z(0, T_a^2) steps per entry, B~'s diagonal N_Z(0, T_d^2), each off-diagonal pair
(once, mirrored) N_Z(0, T_o^2), with T_a g_k g_y >= sigma_a, T_d g_k^2 >= sigma_a / ratio and T_o g_k^2 >=
sigma_a / (ratio sqrt 2): at least the continuous mechanism's noise on [A ; ratio B^] (the sqrt 2 of B^'s
off-diagonal entries). For lattice shifts the multivariate discrete Gaussian with independent coordinates has the
continuous Gaussian's Renyi curve (their Thm 4; coordinates add), so the release is rho-zCDP with
rho = Delta'^2 / (2 sigma_a^2) (:class:`~privgp.accounting.events.ZcdpEvent`); sigma_a is calibrated on that curve
(its exact GDP profile is not proven for the discrete law), a few per cent more noise than the float mechanism's
exact-GDP calibration. The noise-aware posterior (eqs. 9-15) is given the stds drawn, T_a g_k g_y and T_d g_k^2.

Weighted statistics (App. D: the classifier, heteroscedastic fits; :func:`weighted_lattice_noise`): A_h = sum v~ k~
with v~ = w y on its own lattice (clipped to R_A) and B_h = sum u~ u~^T with u~ = sqrt(w) k on a lattice of
2^-16 of sqrt(w_max) sigma_f^2. Their rounding no longer keeps the two terms of one record coupled as Lemma 5's proof
uses, so the sensitivity is App. D's bound for the exact terms plus twice one record's rounding error in the noise's
units (the triangle inequality: the other records' rounded terms are the same in both data sets).

Who draws it: ``privgp release --mechanism sparse-gp``, ``DPSparseGPRegressor``, ``DPDirichletGPClassifier``,
``fit_sparse_gp``, ``fit_sparse_gp_heteroscedastic`` and Alg. 2's ``select_sparse_gp`` (their ``noise`` default);
the paper's float noise is opt-in (``noise="float"``: reproductions, not releases; red teams 21a, 21b).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .. import validation as v
from ..accounting import certify
from ..accounting.calibrate import calibrate
from ..accounting.events import ComposedEvent, EventBatch, ZcdpEvent
from ..accounting.gaussian import gaussian_noise_std
from ..errors import InvalidParameterError
from .discrete_noise import MAX_T, discrete_gaussian
from .sparse_gp import (
    NoiseBounds,
    NoiseCalibration,
    SparseGpRelease,
    SparseGpSpec,
    StatisticsAccumulator,
    blas_limit,
    check_public_inducing,
    checked_records,
    kernel_vectors,
    release_from_noisy,
)
from .sparse_gp_sensitivity import statistics_sensitivity

#: kernel values and responses on lattices of 2^-LATTICE_BITS of their bounds
LATTICE_BITS = 16
#: records per block of the lattice sums (module docstring: every partial sum below 2^53)
LATTICE_CHUNK = 2**15
#: the most records of a release with lattice statistics (the int64 sums and the noise below 2^63)
LATTICE_MAX_RECORDS = 2**28
_SQRT2 = math.sqrt(2.0)


def lattice_exponent(bound: float) -> int:
    """e with 2^-e the coarsest power of two such that bound / 2^-e <= 2^LATTICE_BITS (exact: frexp)."""
    mant, ex = math.frexp(v.positive("bound", bound))   # bound = mant 2^ex, 0.5 <= mant < 1
    ceil_log2 = ex - 1 if mant == 0.5 else ex
    return LATTICE_BITS - ceil_log2


@dataclass(frozen=True)
class LatticeNoise:
    """The public settings of a release's exact discrete noise (module docstring): the lattice exponents, the noise
    in whole lattice steps, the calibrated sigma_a they meet, the sensitivity Delta' and the zCDP event."""

    kernel_exponent: int
    response_exponent: int
    steps_a: int
    steps_diag: int
    steps_off: int
    sigma_a: float
    sensitivity: float
    event: ZcdpEvent     # one release's (``parts`` of them compose: the classifier's classes)
    response_bound: float = 1.0
    #: weighted statistics (App. D): B is summed from u = sqrt(w) k on the lattice 2^-b_exponent (None: k's own)
    b_exponent: int | None = None
    parts: int = 1

    @property
    def unit_a(self) -> float:
        return math.ldexp(1.0, -(self.kernel_exponent + self.response_exponent))

    @property
    def unit_b(self) -> float:
        return math.ldexp(1.0, -2 * (self.kernel_exponent if self.b_exponent is None else self.b_exponent))

    @property
    def std_a(self) -> float:
        """The std of the noise drawn on A (what the noise-aware posterior is told)."""
        return self.steps_a * self.unit_a

    @property
    def std_b(self) -> float:
        """The std of the noise drawn on B's diagonal (off-diagonal entries: std_b / sqrt 2, to 1 step)."""
        return self.steps_diag * self.unit_b

    @property
    def response_steps(self) -> int:
        """The largest |y~| in lattice steps: floor(R_y / g_y), so that |y~| <= R_y."""
        return math.floor(math.ldexp(self.response_bound, self.response_exponent))

    def calibration(self, epsilon: float, delta: float) -> NoiseCalibration:
        """The :class:`~privgp.mechanisms.sparse_gp.NoiseCalibration` of this noise: the stds drawn (what the
        noise-aware posterior is told) and the event, for the target (epsilon, delta)."""
        return NoiseCalibration(self.std_a, self.std_b, self.event, float(epsilon), float(delta), self.parts)

    def to_dict(self) -> dict:
        return {"kernel_exponent": self.kernel_exponent, "response_exponent": self.response_exponent,
                "steps": [self.steps_a, self.steps_diag, self.steps_off],
                **({} if self.b_exponent is None else {"b_exponent": self.b_exponent})}


def _rho(sensitivity: float, sigma_a: float) -> float:
    """Delta^2 / (2 sigma^2), rounded up past the float operations' error."""
    return sensitivity * sensitivity / (2.0 * sigma_a * sigma_a) * (1.0 + 2.0**-48)


def _exponent(name: str, bound: float, what: str | None = None, value: float | None = None) -> int:
    """The lattice exponent of ``bound`` (:func:`lattice_exponent`), refused naming ``name`` (and ``what`` the bound
    is made of, with the parameter's own ``value``) where its lattice units would leave the normal floats."""
    e = lattice_exponent(bound)
    if not -400 <= e <= 400:   # red team 21b: 1e-300 overflowed the lattice units (ldexp) with a traceback
        where = "" if what is None else f"such that {what} is "
        raise InvalidParameterError(name, f"{where}between 2^-384 and 2^416 (the lattice of 2^-16 of it, squared, "
                                    "stays a normal float)", bound if value is None else value)
    return e


def lattice_noise(spec: SparseGpSpec, *, epsilon: float, delta: float) -> LatticeNoise:
    """The lattices and the smallest noise (whole steps) whose zCDP event certifies epsilon <= the target at delta
    for ``spec``'s homoscedastic statistics (the one calibrator, then steps rounded up and the certificate
    re-checked)."""
    d = spec.n_inducing
    ek = _exponent("signal_variance", spec.signal_variance)
    ey = _exponent("response_bound", spec.response_bound)

    def sens(ratio: float) -> float:
        return statistics_sensitivity(spec.response_bound, spec.kernel_bound + math.ldexp(math.sqrt(d), -ek), ratio)

    return _calibrated(sens, ek, ey, None, float(spec.response_bound), spec.noise_ratio, epsilon, delta, 1,
                       names=((("response_bound", spec.response_bound), ("signal_variance", spec.signal_variance)),
                              (("signal_variance", spec.signal_variance), ("response_bound", spec.response_bound))),
                       ratio_given=spec.noise_ratio_rule == "given")


def weighted_lattice_noise(*, spec: SparseGpSpec, bounds: NoiseBounds, epsilon: float, delta: float, parts: int = 1,
                           renamed: dict[str, tuple[str, float]] | None = None) -> LatticeNoise:
    """The lattice noise of weighted statistics (seed 001, App. D: A_h = sum (w y) k, B_h = sum w k k^T), ``parts``
    releases on the same records sharing (epsilon, delta) (the classifier's classes). Each record's terms are put on
    lattices: k~ (2^-16 of sigma_f^2), v~ = w y (2^-16 of R_A, clipped to R_A), u~ = sqrt(w) k (2^-16 of sqrt(w_max)
    sigma_f^2); A~ = sum v~ k~, B~ = sum u~ u~^T, exactly. Replacing one record moves them by at most Delta_h (App. D,
    :meth:`~privgp.mechanisms.sparse_gp.NoiseBounds.sensitivity`) plus twice one record's rounding, in the noise's
    units: e_A = g_v (R_k + g_k sqrt d) + R_A g_k sqrt d and e_B = ratio g_u sqrt d (2 sqrt(w_max) R_k + g_u sqrt d)
    (the triangle inequality; whole steps g, not g / 2, cover the float error of each term). ``renamed``: the caller's
    own parameter (name, value) for ``min_noise_var`` / ``weighted_response_bound`` where it derives them (the
    classifier: ``alpha_epsilon``), named in a refusal instead (red team 22a F4)."""
    try:
        return _weighted_lattice_noise(spec, bounds, epsilon, delta, parts)
    except InvalidParameterError as exc:
        if renamed is None or exc.name not in renamed:
            raise
        name, value = renamed[exc.name]
        req = exc.requirement
        raise InvalidParameterError(name, f"such that, with {exc.name} derived from it, {req.removeprefix('such that ')}"
                                    if req.startswith("such that ") else
                                    f"such that {exc.name} (derived from it) is {req}", value) from None


def _weighted_lattice_noise(spec: SparseGpSpec, bounds: NoiseBounds, epsilon: float, delta: float,
                            parts: int) -> LatticeNoise:
    d = spec.n_inducing
    w_max = 1.0 / bounds.min_var
    RA = bounds.weighted_response_bound if bounds.weighted_response_bound is not None else w_max * spec.response_bound
    ek = _exponent("signal_variance", spec.signal_variance)
    # red team 21d L4: a tiny min_noise_var (a huge weight) was named as the weighted response bound
    if bounds.weighted_response_bound is not None:
        ev = _exponent("weighted_response_bound", RA)
    else:
        ev = _exponent("min_noise_var", RA, "response_bound / min_noise_var", bounds.min_var)
    eu = _exponent("min_noise_var", math.sqrt(w_max) * spec.signal_variance,
                   "signal_variance / sqrt(min_noise_var)", bounds.min_var)
    gk, gv, gu, rd = math.ldexp(1.0, -ek), math.ldexp(1.0, -ev), math.ldexp(1.0, -eu), math.sqrt(d)
    Rk = spec.kernel_bound
    e_A = gv * (Rk + gk * rd) + RA * gk * rd

    def sens(ratio: float) -> float:
        e_B = ratio * gu * rd * (2.0 * math.sqrt(w_max) * Rk + gu * rd)
        at = spec if ratio == spec.noise_ratio else replace(spec, noise_ratio=ratio)
        return (bounds.sensitivity(at) + 2.0 * (e_A + e_B)) * (1.0 + 2.0**-40)

    a_name = (("weighted_response_bound", bounds.weighted_response_bound) if bounds.weighted_response_bound is not None
              else ("min_noise_var", bounds.min_var))
    sv = ("signal_variance", spec.signal_variance)
    return _calibrated(sens, ek, ev, eu, float(RA), spec.noise_ratio, epsilon, delta,
                       v.integer("parts", parts, minimum=1), names=((a_name, sv), (("min_noise_var", bounds.min_var), sv)),
                       ratio_given=spec.noise_ratio_rule == "given")


Candidates = tuple[tuple[str, float], ...]


def _overflow_culprit(moderate: tuple[int, int, int], ratio_one_fits: bool, noise_ratio: float, epsilon: float,
                      names: tuple[Candidates, Candidates]) -> tuple[str, float]:
    """The parameter to name where the noise needs more than 2^56 steps of a lattice (red teams 21d L4, 22a F3):
    the noise ratio where a ratio of 1 would fit (``ratio_one_fits``: calibrated again at noise_ratio = 1); epsilon
    where a moderate one would fit (``moderate``: the step counts (A, B, B's diagonal) at epsilon = max(epsilon, 1));
    else the scale parameter behind the lattice that overflows there (``names[0]`` for A's, ``names[1]`` for B's: the
    candidates whose ratio sets its steps against the noise) farthest from 1 in orders of magnitude, the one a user
    set to an extreme."""
    if noise_ratio != 1.0 and ratio_one_fits:
        return "noise_ratio", noise_ratio
    if max(moderate) <= MAX_T - 1:
        return "epsilon", epsilon
    candidates = names[1] if max(moderate[1:]) > MAX_T - 1 else names[0]
    return max(candidates, key=lambda c: abs(math.log(c[1])) if c[1] > 0 else math.inf)


def _calibrated(sens_at: Callable[[float], float], ek: int, ey: int, eu: int | None, response_bound: float,
                noise_ratio: float, epsilon: float, delta: float, parts: int, *,
                names: tuple[Candidates, Candidates], ratio_given: bool = True) -> LatticeNoise:
    """The smallest sigma_a (whole steps) with ``parts`` zCDP releases of sensitivity ``sens`` certified at <= the
    target (epsilon, delta), re-checked by the accountant; ``sens_at(ratio)``: the sensitivity at a noise ratio (the
    plan's, and 1 for a refusal's diagnosis). ``names``: the (parameter, value) candidates behind A's and B's
    lattices, one named where the noise overflows them (:func:`_overflow_culprit`); ``ratio_given``: the caller set
    the noise ratio (not derived), so it may be named."""
    sens = sens_at(noise_ratio)

    def float_std(sensitivity: float, eps: float) -> float:   # the float noise's std: a lower bound
        return float(gaussian_noise_std(sensitivity, eps, delta)) * math.sqrt(parts)

    s0 = float_std(sens, epsilon)

    def batch(stds: np.ndarray) -> EventBatch:   # the vectorised accountant path of the calibrator
        rho = parts * sens * sens / (2.0 * stds * stds) * (1.0 + 2.0**-48)
        return EventBatch(ZcdpEvent, tuple(rho.shape), {"rho": rho}, {"rho": rho})

    sa = calibrate(lambda s: ZcdpEvent(rho=parts * _rho(sens, s)), "sigma_a", (s0, 16.0 * s0), epsilon, delta,
                   make_batch=batch).value
    ua, ub = math.ldexp(1.0, -(ek + ey)), math.ldexp(1.0, -2 * (ek if eu is None else eu))

    def step_counts(s: float, ratio: float = noise_ratio) -> tuple[int, int, int]:   # +1: the divisions' rounding
        return (math.ceil(s / ua) + 1, math.ceil(s / ratio / ub) + 1, math.ceil(s / (ratio * _SQRT2) / ub) + 1)

    for _ in range(64):
        steps = step_counts(sa)
        if max(steps) > MAX_T - 1:
            # walk-through 21: one parameter's name (the CLI shows its flag), the other in the words
            moderate = step_counts(float_std(sens, max(epsilon, 1.0)))
            # a noise ratio privgp derived ("min-sensitivity") is not the caller's to change (red team 22b F4)
            ratio_one_fits = ratio_given and max(step_counts(float_std(sens_at(1.0), epsilon), 1.0)) <= MAX_T - 1
            name, value = _overflow_culprit(moderate, ratio_one_fits, noise_ratio, epsilon, names)
            raise InvalidParameterError(name, "such that the noise is at most 2^56 lattice steps (the exact discrete "
                                        f"Gaussian sampler's range): sigma_a = {sa:.3g} on A in steps of {ua:.3g}, "
                                        f"sigma_a / noise_ratio = {sa / noise_ratio:.3g} on B in steps of {ub:.3g}, "
                                        f"at epsilon = {epsilon:g} and noise_ratio = {noise_ratio:g}", value)
        event = ZcdpEvent(rho=_rho(sens, sa))
        total = event if parts == 1 else ComposedEvent.of([(event, parts)])   # as NoiseCalibration.total_event
        if certify(total, delta=delta).epsilon <= epsilon:
            return LatticeNoise(ek, ey, *steps, sigma_a=sa, sensitivity=sens, event=event,
                                response_bound=response_bound, b_exponent=eu, parts=parts)
        sa *= 1.0 + 1e-9
    raise InvalidParameterError("epsilon", "a target the discrete Gaussian calibration reaches", epsilon)  # pragma: no cover


def lattice_records(K: np.ndarray, y: np.ndarray, noise: LatticeNoise) -> tuple[np.ndarray, np.ndarray]:
    """The rounded kernel vectors (columns of K) and clipped responses, as integer-valued float64 (lattice steps)."""
    top = float(2**LATTICE_BITS)
    Ki = np.multiply(K, math.ldexp(1.0, noise.kernel_exponent))   # a power of two: exact
    np.rint(Ki, out=Ki)
    np.clip(Ki, -top, top, out=Ki)
    ytop = float(noise.response_steps)   # |y~| <= R_y exactly (red team 21a L4: 2^16 steps can exceed R_y)
    yi = np.clip(np.rint(np.ldexp(y, noise.response_exponent)), -ytop, ytop)
    return Ki, yi


def lattice_sums(Ki: np.ndarray, yi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A~ = Ki yi and B~ = Ki Ki^T of at most :data:`LATTICE_CHUNK` records, exactly, as int64."""
    if Ki.shape[1] > LATTICE_CHUNK:
        raise InvalidParameterError("records", f"at most {LATTICE_CHUNK} per block", Ki.shape[1])
    return np.rint(Ki @ yi).astype(np.int64), np.rint(Ki @ Ki.T).astype(np.int64)


def privatise_lattice(A: np.ndarray, B: np.ndarray, noise: LatticeNoise, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(a~, B~) as floats: the integer statistics plus exact discrete Gaussian steps (B's upper triangle drawn once
    and mirrored), then scaled by the lattice units (post-processing of integers)."""
    d = A.shape[0]
    iu = np.triu_indices(d, 1)
    na = discrete_gaussian(noise.steps_a, d, rng)
    nd = discrete_gaussian(noise.steps_diag, d, rng)
    no = discrete_gaussian(noise.steps_off, iu[0].size, rng) if iu[0].size else np.zeros(0, dtype=np.int64)
    for part in (na, nd, no):
        if part.size and int(np.max(np.abs(part))) > 2**61:  # pragma: no cover - probability below e^-2^9
            raise ArithmeticError("discrete Gaussian noise beyond the int64 range of the statistics")
    a_int = A + na
    B_int = np.array(B, dtype=np.int64, copy=True)
    B_int[np.arange(d), np.arange(d)] += nd
    B_int[iu] += no
    B_int[(iu[1], iu[0])] = B_int[iu]
    return a_int.astype(float) * noise.unit_a, B_int.astype(float) * noise.unit_b


class LatticeAccumulator(StatisticsAccumulator):
    """Running integer A~, B~ (module docstring) over batches of records, mergeable in any order with exactly the
    same result: what ``--data`` folders, DuckDB and a Dask cluster reduce the records to for a release."""

    dtype = np.int64

    def __init__(self, spec: SparseGpSpec, noise: LatticeNoise) -> None:
        self.noise = noise
        super().__init__(spec)

    def _sums(self, X: np.ndarray, yc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = self.spec.n_inducing
        A, B = np.zeros(d, dtype=np.int64), np.zeros((d, d), dtype=np.int64)
        with blas_limit(X.shape[0]):
            for s in range(0, X.shape[0], LATTICE_CHUNK):
                Ki, yi = lattice_records(kernel_vectors(X[s:s + LATTICE_CHUNK], self.spec), yc[s:s + LATTICE_CHUNK],
                                         self.noise)
                a, b = lattice_sums(Ki, yi)
                A += a
                B += b
        return A, B

    def _empty(self) -> LatticeAccumulator:
        return LatticeAccumulator(self.spec, self.noise)


@dataclass(frozen=True)
class LatticeReduction:
    """The public reduction of records to a release's integer statistics (for one spec and lattice)."""

    spec: SparseGpSpec
    noise: LatticeNoise

    def start(self) -> LatticeAccumulator:
        return LatticeAccumulator(self.spec, self.noise)


def lattice_statistics(X, y, spec, noise: LatticeNoise) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(A~, B~, n, n_clipped) of the records in memory: one accumulator over them."""
    return LatticeAccumulator(spec, noise).add(X, y).result()


def weighted_lattice_statistics(X, y, noise_var, spec: SparseGpSpec, bounds: NoiseBounds, noise: LatticeNoise
                                ) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(A~, B~, n, n_clipped) of weighted records on the lattices of :func:`weighted_lattice_noise`: w = 1 / clip(sigma^2)
    (App. D), v~ = clip(w y, R_A) and k~ for A~ = sum v~ k~, u~ = sqrt(w) k for B~ = sum u~ u~^T, as int64, exactly
    (blocks of at most :data:`LATTICE_CHUNK` records, every entry at most 2^16 steps). Z is checked as the caller's."""
    X, yc, nc = checked_records(X, y, spec)
    s2 = v.finite_array("noise_var", noise_var, ndim=1)
    if s2.shape[0] != X.shape[0]:
        raise InvalidParameterError("noise_var", f"one variance per record ({X.shape[0]})", s2.shape[0])
    if noise.b_exponent is None:
        raise InvalidParameterError("noise", "the lattice noise of weighted statistics (weighted_lattice_noise)", noise)
    s2c = np.clip(s2, bounds.min_var, bounds.max_var)
    w = 1.0 / s2c
    wy = np.clip(w * yc, -noise.response_bound, noise.response_bound)
    nc += int(np.sum(s2c != s2))
    top = float(2**LATTICE_BITS)
    d = spec.n_inducing
    A, B = np.zeros(d, dtype=np.int64), np.zeros((d, d), dtype=np.int64)
    with blas_limit(X.shape[0]):
        for s in range(0, X.shape[0], LATTICE_CHUNK):
            K = kernel_vectors(X[s:s + LATTICE_CHUNK], spec)
            Ki, vi = lattice_records(K, wy[s:s + LATTICE_CHUNK], noise)   # k~ and v~ = w y (clipped to R_A)
            Ui = np.clip(np.rint(K * (np.sqrt(w[s:s + LATTICE_CHUNK]) * math.ldexp(1.0, noise.b_exponent))), -top, top)
            A += np.rint(Ki @ vi).astype(np.int64)
            B += np.rint(Ui @ Ui.T).astype(np.int64)
    return A, B, X.shape[0], nc


def lattice_inputs(X, y, spec: SparseGpSpec, noise: LatticeNoise, *, noise_var=None,
                   bounds: NoiseBounds | None = None) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Every check of a caller's private records that can fail (X's shape, at most :data:`LATTICE_MAX_RECORDS`, Z not
    made of them), then their lattice statistics (weighted with ``noise_var`` and ``bounds``): run before the charge."""
    X = v.points("X", X, dim=spec.dim)
    if X.shape[0] > LATTICE_MAX_RECORDS:
        raise InvalidParameterError("X", "at most 2^28 records (the integer statistics stay within int64)", X.shape[0])
    check_public_inducing(spec.inducing_points, X)
    if noise_var is None:
        return lattice_statistics(X, y, spec, noise)
    if bounds is None:
        raise InvalidParameterError("bounds", "the public NoiseBounds of weighted statistics", None)
    return weighted_lattice_statistics(X, y, noise_var, spec, bounds, noise)


def lattice_release(statistics: tuple, spec: SparseGpSpec, noise: LatticeNoise, rng: np.random.Generator, *,
                    epsilon: float, delta: float, noise_std: float | None = None,
                    weighted: bool = False) -> SparseGpRelease:
    """One release with exact noise from lattice ``statistics`` (:func:`lattice_inputs`; Alg. 2 computes them once
    per lengthscale): discrete Gaussian noise, the noise-aware posterior (post-processing)."""
    A, B, n, n_clipped = statistics
    a, B_noisy = privatise_lattice(A, B, noise, rng)
    return release_from_noisy(a, B_noisy, spec, noise.calibration(epsilon, delta), noise.sensitivity, n, n_clipped,
                              noise_std=noise_std, weighted=weighted)
