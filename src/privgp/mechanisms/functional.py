"""The functional mechanism as a release: f_D + c g on a public grid (Hall et al. 2013; seed 002, Thm 4.1).

The released function is f_D + c g with g ~ GP(0, k) a sample path of the *same* kernel k whose RKHS
norm bounds the sensitivity Delta = sup_{D ~ D'} ||f_D - f_D'||_{H_k}, and c = Delta / mu: mu-GDP
for every epsilon (seed 002, Thm 4.1 via Lemma A.3), hence (epsilon, delta(epsilon))-DP with
delta(epsilon) of eq. (5). Values on any finite grid inherit the guarantee (App. A.1-A.3), and
anything computed from them (excursion sets, plots) is post-processing.

RKHS sensitivities of the estimators a user would release (replace-one neighbours):

* kernel mean embedding / SetConv density  sum_i k(., x_i)  (``density_sensitivity``):
  ||k_{x1} - k_{x2}||_H^2 = k11 - 2 k12 + k22 <= 2 C_k for 0 <= k <= C_k (seed 002, eqs. 20-26;
  tight for the RBF, and for every normalised stationary kernel here, as x1, x2 move apart).
  The normalised mean embedding (1/N) sum_i k(., x_i) has sqrt(2 C_k) / N (N public).
* SetConv signal  sum_i clip(y_i, C) k(., x_i)  (``signal_sensitivity``):
  ||y1 k_{x1} - y2 k_{x2}||_H^2 <= 4 C^2 C_k (eqs. 27-30; equality at x1 = x2, y1 = -y2 = C).
* GP posterior mean with ridge r, mu_D = k_X^T (K_XX + r^2 I)^{-1} y, bounded responses
  |y_i| <= M_Y, k(x, x) <= 1 (``posterior_mean_sensitivity``): Delta <= Delta_n(r) of seed 000.

  *Proof note.* Let D = D_- u {(x, y)}, D' = D_- u {(x', y')} and k_- = k_{D_-} the normalised
  posterior kernel of the common core (ridge r), H_- its RKHS. Seed 000, Lemma A.2: mu_D - mu_D' =
  eta k_-(., x) - eta' k_-(., x') lies in H_-, and Delta_n(r) = sup ||mu_D - mu_D'||_{H_-}
  (Def. 3.1). Now k = k_- + k_{X_-}(.)^T (K_- + r^2 I)^{-1} k_{X_-}(.) is k_- plus a positive
  semidefinite kernel, so by Aronszajn's theorem on sums of reproducing kernels (Aronszajn 1950,
  "Theory of reproducing kernels", Part I, sec. 6) H_- is contained in H_k with
  ||h||_{H_k} <= ||h||_{H_-}. Hence sup ||mu_D - mu_D'||_{H_k} <= Delta_n(r), and every bound
  on Delta_n(r) of seed 000, App. B applies unchanged: Lemma B.1 (generic; with V_n <= V̄_n of
  Prop. 3) and Lemma B.7 (1-D exponential kernel on an interval), under their assumptions
  (bounded responses, public domain, sup k(x, x) = 1). Exactly, ||h||_{H_k}^2 = ||h||_{H_-}^2 -
  r^2 ||(K_- + r^2 I)^{-1} (eta k_{X_-}(x) - eta' k_{X_-}(x'))||^2, so the bound can be loose;
  :func:`posterior_mean_rkhs_distance` computes the exact H_k distance of a given pair and the
  tests search for bad pairs (tests/mechanisms/test_functional.py).

Exact noise: :func:`privgp.models.sampling.prior_paths` (float64, no rank truncation, jitter only upwards:
a covariance K + P, P positive semidefinite, is K-noise plus independent noise, post-processing).

The plan fixes every public setting before the data are seen: the grid is a
:class:`~privgp.models.domain.PublicGrid` (never computed from the data), the domain a public
:class:`~privgp.models.domain.Box` (kappa and V̄_n use it), responses must already lie in [-M_Y, M_Y]
(map and clip them with a public :class:`~privgp.mechanisms.release.ResponseMap`; unclipped
responses are an error, not silently clipped).

Scale (n = 10^6 and more): the posterior mean is computed with one unknown per distinct input, as the
posterior-sample samplers do (:mod:`privgp.models.sampling.mean`: on the lattice by conjugate gradients with FFT
products, checked by its true residual, or a Cholesky factorisation; the O(n + m) Kalman smoother for
the 1-D exponential kernel; a dense solve of the distinct inputs otherwise). Records sharing an input x_s enter only
through their count c_s and mean response ybar_s, and

    k(., X) (K_XX + r^2 I)^{-1} y = k(., S) (K_SS + r^2 diag(1 / c_s))^{-1} ybar      (S: distinct inputs)

exactly (c observations of f(x_s) with noise variance r^2 have the likelihood of one observation ybar_s
with variance r^2 / c_s, up to a factor free of f), so this is the same estimator, not an approximation.
With ``snap`` = R (the CLI's default in 2-D, as for posterior sampling) every input is first moved to the
nearest point of the grid lattice refined R times per axis (:func:`privgp.models.sampling.snap_to_lattice`, then
clipped into the public box against rounding): the number of unknowns is then at most the number of
lattice sites, whatever n is. Snapping is a fixed, public map applied to each record separately and
chosen before the data are seen; the certificate's public settings state it ("preprocessing"). The
privacy analysis is unchanged: the sensitivity bound above holds for the exact posterior mean of *any*
n records in the public domain, in particular of the snapped records (which stay in the box), and a
public per-record map sends replace-one neighbouring datasets to replace-one neighbouring (or equal)
datasets, so the release is (epsilon, delta)-DP -- mu-GDP -- with respect to the original records. What
snapping changes is the estimator (inputs move by at most half a lattice spacing per axis), not the
guarantee. Before any budget is charged, :meth:`FunctionalPlan.check` estimates the memory and time of
the solve (:func:`privgp.models.sampling.mean.plan_posterior_mean`) and refuses a release above the memory
limit, naming the option that would work (snapping, a coarser lattice or grid, or a higher limit).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import ClassVar, cast

import numpy as np

from .. import validation as v
from ..accounting import PrivacyCertificate, feasible_side
from ..accounting.functional_noise import MULTIPLIERS, FunctionalEvent, check_clip
from ..accounting.sensitivity import choose_lemma
from ..errors import InfeasibleTargetError, InvalidParameterError
from ..formatting import format_upper
from ..models.domain import Box, PublicGrid
from ..models.kernels import DistanceKernel, Kernel, make_kernel
from .posterior_release import DEFAULT_MEMORY_LIMIT
from .posterior_sample import bounds_for
from .release import ResponseMap, occupied_site_points

MECHANISM = "functional mechanism f_D + c g (Hall et al. 2013; GDP analysis: seed 002, Thm 4.1)"
def _kernel_bound(kernel: Kernel) -> float:
    """C_k = sup k for privgp's normalised kernels (sup k(x, x) = 1; all are nonnegative)."""
    if not kernel.nonnegative:
        raise InvalidParameterError("kernel", "nonnegative (the bounds of seed 002, eqs. 20-30, assume 0 <= k <= C_k)",
                                    kernel.name)
    return 1.0


def density_sensitivity(kernel: Kernel, n: int | None = None) -> float:
    """RKHS sensitivity of sum_i k(., x_i) (SetConv density): sqrt(2 C_k); of the kernel mean
    embedding (1/n) sum_i k(., x_i) when the public size n is given: sqrt(2 C_k) / n."""
    out = math.sqrt(2.0 * _kernel_bound(kernel))
    return out if n is None else out / v.integer("n", n, minimum=1)


def signal_sensitivity(kernel: Kernel, clip: float) -> float:
    """RKHS sensitivity of sum_i clip(y_i, C) k(., x_i) (SetConv signal): 2 C sqrt(C_k)."""
    return 2.0 * check_clip(clip) * math.sqrt(_kernel_bound(kernel))


@dataclass(frozen=True)
class MeanSensitivity:
    """An upper bound on sup ||mu_D - mu_D'||_{H_k} and where it comes from."""

    value: float | np.ndarray   # an array for an array of ridges r
    lemma: str
    V: float | np.ndarray
    note: str = ("Delta_H(mu) <= Delta_n(r): seed 000 Lemma A.2 + Aronszajn's inclusion H_{k_-} in H_k "
                 "(privgp.mechanisms.functional, proof note)")


def posterior_mean_sensitivity(n: int, r, *, kernel: str, lengthscale: float, domain: Box, M_Y: float = 1.0,
                               sensitivity: str = "auto"):
    """Upper bound on the RKHS (H_k) sensitivity of the posterior mean with ridge r (see the module
    docstring's proof note): Delta_n(r) of seed 000, Lemma B.1 / B.7 with V̄_n (Prop. 3). ``r`` may be
    an array (one bound per value); returns a :class:`MeanSensitivity` (``value`` an array then)."""
    n = v.integer("n", n, minimum=2)
    if not isinstance(domain, Box):
        raise InvalidParameterError("domain", "a privgp.models.domain.Box (public)", type(domain).__name__)
    name = make_kernel(kernel, v.positive("lengthscale", lengthscale)).name
    lemma = choose_lemma(sensitivity, name, domain.dim)
    b = bounds_for(n, r, kernel=name, lengthscale=lengthscale, domain=domain, M_Y=v.positive("M_Y", M_Y),
                   sensitivity=lemma)
    val = np.asarray(b.Delta, dtype=float)
    V = np.asarray(b.V, dtype=float)
    return MeanSensitivity(value=float(val) if val.ndim == 0 else val, lemma=b.lemma_Delta,
                           V=float(V) if V.ndim == 0 else V)


def posterior_mean_weights(kernel: Kernel, X, y, r: float) -> np.ndarray:
    """alpha = (K_XX + r^2 I)^{-1} y: mu_D = sum_i alpha_i k(., x_i)."""
    from scipy.linalg import cho_factor, cho_solve

    X = v.points("X", X)
    y = v.responses("y", y, X.shape[0])
    r = v.positive("r", r)
    return cho_solve(cho_factor(kernel(X) + r * r * np.eye(X.shape[0]), lower=True), y)


def posterior_mean_rkhs_distance(kernel: Kernel, r: float, X1, y1, X2, y2) -> float:
    """||mu_{D1} - mu_{D2}||_{H_k} exactly: with Z = (X1, X2) and c = (alpha_1, -alpha_2),
    ||sum_j c_j k(., z_j)||^2 = c^T K_ZZ c (for any two datasets; used by audits and tests)."""
    X1, X2 = v.points("X1", X1), v.points("X2", X2)
    a1 = posterior_mean_weights(kernel, X1, y1, r)
    a2 = posterior_mean_weights(kernel, X2, y2, r)
    Z = np.vstack([X1, X2])
    c = np.concatenate([a1, -a2])
    return float(np.sqrt(max(c @ kernel(Z) @ c, 0.0)))


# ------------------------------------------------------------------------------------------------
# Plan and release
# ------------------------------------------------------------------------------------------------

#: red team 20f: paths.npz's values are mean + noise in one float addition; an attacker who knows both neighbouring
#: data sets computes both means and tests which one float noise can give (2000 of 2000 told apart at (5, 1e-6))
FUNCTIONAL_FLOAT_LEAK = ("its released values are the posterior mean plus noise added in floating point, whose low-order "
                         "bits tell two neighbouring data sets apart (red team 20f: 2 000 of 2 000 releases of the "
                         "embedded sales told apart from those with one price changed, at a certified (5, 1e-6)), so "
                         "its (epsilon, delta) holds for exact arithmetic only, not as computed; it stays for planning, "
                         "accounting and simulation (privgp account, privgp experiment); use --mechanism auto (the default, "
                         "a tuned noisy grid), grid or sparse-gp, which release a map with exact discrete noise")


@dataclass(frozen=True)
class FunctionalPlan:
    """Every public setting of one functional-mechanism release of a GP posterior mean: the seed-002
    implementation of :class:`privgp.mechanisms.release.ReleasePlan` (``check``, ``draw``, ``event``,
    ``certificate``). ``privgp release`` and :func:`privgp.release` refuse it (:data:`FUNCTIONAL_FLOAT_LEAK`); the
    experiments and ``privgp account`` plan and simulate it."""

    def check_verifiable(self) -> None:
        """``privgp verify``: a release of it does not hold its certificate as computed
        (:data:`FUNCTIONAL_FLOAT_LEAK`): NOT VERIFIED."""
        from ..errors import CertificateMismatch  # noqa: PLC0415

        raise CertificateMismatch("mechanism", f"functional: {FUNCTIONAL_FLOAT_LEAK}; withdraw its files")

    n: int
    domain: Box
    grid: PublicGrid
    kernel: str
    lengthscale: float
    r: float
    M_Y: float
    epsilon: float
    delta: float
    accounting: str          # how c was chosen: "gdp" (Thm 4.1), "rdp" (Jiang et al.), "hall" (Thm 3.3)
    sensitivity: float       # RKHS sensitivity bound Delta
    lemma: str
    mu: float                # Delta / c: the release is mu-GDP
    multiplier: float        # c
    event: FunctionalEvent = field(repr=False)
    certificate: PrivacyCertificate = field(repr=False)
    response_map: ResponseMap | None = None   # None: responses must already satisfy |y| <= M_Y
    hyperparameter_source: str = "given r"
    calibration: dict | None = None
    snap: int | None = None  # inputs snapped to the grid lattice refined snap times per axis (public map)
    memory_limit: float = DEFAULT_MEMORY_LIMIT
    mechanism: str = "functional"

    L: ClassVar[int] = 1     # one released function per release

    def kernel_object(self) -> Kernel:
        return make_kernel(self.kernel, self.lengthscale)

    @property
    def mean_method(self) -> str:
        """How the posterior mean is computed (public settings only; :mod:`privgp.models.sampling.mean`):
        "lattice" with snapping, "exp1d" for the 1-D exponential kernel, else "dense"."""
        if self.snap is not None:
            return "lattice"
        return "exp1d" if (self.kernel == "exponential" and self.domain.dim == 1) else "dense"

    @property
    def preprocessing(self) -> str:
        return ("none" if self.snap is None else
                f"inputs snapped to the grid lattice refined {self.snap}x per axis (fixed public per-record map)")

    @property
    def certified_epsilon(self) -> float:
        return float(self.certificate.epsilon)

    @property
    def target_epsilon(self) -> float:
        return self.epsilon

    def public_settings(self) -> dict:
        out = {"estimator": "GP posterior mean", "n": self.n, "dim": self.domain.dim, "domain": self.domain.to_dict(),
               "grid": list(self.grid.sizes), "kernel": self.kernel, "lengthscale": self.lengthscale, "r": self.r,
               "hyperparameters": self.hyperparameter_source, "M_Y": self.M_Y, "target_epsilon": self.epsilon,
               "delta": self.delta, "accounting": self.accounting, "sensitivity_bound": self.sensitivity,
               "sensitivity_lemma": self.lemma, "mu": self.mu, "multiplier": self.multiplier,
               "snap": self.snap, "preprocessing": self.preprocessing}
        if self.response_map is not None:
            out["response_map"] = self.response_map.to_dict()
        return out

    def describe(self) -> str:
        return (f"functional mechanism (posterior mean + c g): n={self.n}, {self.kernel} kernel (lengthscale "
                f"{self.lengthscale:.4g}), r={self.r:.4g}, Delta={format_upper(self.sensitivity, 4)}, c={self.multiplier:.4g}, "
                f"domain {self.domain.describe()}"
                + ("" if self.snap is None else f", inputs snapped to the grid lattice (refined {self.snap}x)"))

    def check(self, X, z) -> tuple[np.ndarray, np.ndarray]:
        """Every check of the private inputs (before any charge): X in the public domain with n rows;
        responses mapped by the plan's ResponseMap, or (without one) already bounded by M_Y; the grid
        tripwire; then (with ``snap``) the inputs snapped to the grid lattice, and the memory of the
        posterior-mean solve estimated and refused above ``memory_limit`` (naming the option that would
        work). Returns the inputs the mean is computed from (snapped with ``snap``) and the responses in
        [-M_Y, M_Y]. Error messages may name counts of the private data (for the data holder)."""
        X = self.domain.check_contains("coordinates", X)
        if X.shape[0] != self.n:
            raise InvalidParameterError("coordinates", f"{self.n} rows (the n the release was planned for)", X.shape[0])
        z = v.responses("responses", z, self.n)
        y = self.response_map.apply(z) if self.response_map is not None else check_bounded("responses", z, self.M_Y)
        self.grid.check_not_fitted_to("coordinates", X, public_box=self.domain)
        if self.snap is not None:
            X = self.snapped(X)
        self.check_cost(X)
        return X, y

    def snapped(self, X) -> np.ndarray:
        """The public per-record map: each input to the nearest point of the grid lattice refined ``snap``
        times per axis, clipped into the public box (the grid spans it, so clipping only undoes rounding)."""
        from ..models.sampling import snap_to_lattice  # noqa: PLC0415

        out = snap_to_lattice(X, self.grid.axes(), refine=self.snap or 1)
        return np.clip(out, np.asarray(self.domain.lower), np.asarray(self.domain.upper), out=out)

    def mean_cost(self, X):
        """The :class:`privgp.models.sampling.mean.MeanPlan` (method, unknowns, bytes, seconds) of the posterior
        mean of these (checked, snapped) inputs."""
        from ..models.sampling.mean import plan_posterior_mean  # noqa: PLC0415

        return plan_posterior_mean(self.kernel_object(), X, self.grid.axes(), method=self.mean_method,
                                   refine=self.snap)

    def check_cost(self, X) -> None:
        """Refuse (before any charge) a posterior-mean solve whose estimated memory exceeds the limit."""
        cost = self.mean_cost(X)
        if cost.bytes <= self.memory_limit:
            return
        if cost.method == "dense":
            hint = ("snap the inputs to the grid (snap=1 / --snap 1): one unknown per occupied grid site, "
                    "whatever n is")
        elif cost.method == "lattice":
            hint = "use a coarser lattice (a smaller snap refinement / --snap) or a coarser grid (--grid)"
        else:
            hint = "use a coarser grid (--grid)"
        raise InvalidParameterError(
            "memory", f"at most the limit of {self.memory_limit / 2**30:.3g} GiB for the {cost.method} posterior "
            f"mean ({cost.unknowns} unknowns, {cost.grid_points} grid points); {hint}, or raise the limit "
            "(memory_limit / --memory-limit)", f"an estimated {cost.gib:.3g} GiB and about {cost.seconds:.3g} s")

    def draw(self, X, y, rng: np.random.Generator) -> FunctionalRelease:
        """mu_D(grid) + c g(grid), g an exact draw of GP(0, k) (X, y from :meth:`check`): the exact
        posterior mean with one unknown per distinct input / occupied site (module docstring, "Scale")."""
        rng = v.generator("rng", rng)
        return self.add_noise(self.posterior_mean(X, y), rng)

    #: its ``scaled`` keeps the noise (the release is not a sum over records)
    scaled_noise = False

    def scaled(self, n: int) -> FunctionalPlan:
        """The same plan (same noise, calibrated for self.n) for ``n`` records: the release forecast simulates a
        large n at n records; fewer records and the same noise give a noisier map, so the forecast is
        conservative. Not a plan to release with (its certificate is self.n's)."""
        return dataclasses.replace(self, n=n)

    def site_rule(self):
        """With snapping: the public rule reducing records to per-lattice-site counts and sums of the responses,
        all the posterior mean depends on (:class:`~privgp.models.sampling.grid.LatticeSites`); None without."""
        from ..models.sampling.grid import LatticeSites  # noqa: PLC0415

        return None if self.snap is None else LatticeSites.of(self.grid.axes(), self.snap)

    def check_statistics(self, sums: np.ndarray, counts: np.ndarray) -> None:
        """Before the charge, from per-site statistics: n as planned, the mean's solve within the memory limit."""
        self.check_cost(occupied_site_points(self, sums, counts))

    def draw_from_statistics(self, sums: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> FunctionalRelease:
        """mu_D(grid) + c g(grid) from per-site sums and counts of the clipped responses (:meth:`site_rule`)."""
        from ..models.sampling.mean import posterior_mean_from_sites  # noqa: PLC0415

        rule = self.site_rule()
        if rule is None:
            raise InvalidParameterError("snap", "an integer >= 1 to release from per-site statistics", self.snap)
        mean = posterior_mean_from_sites(self.kernel_object(), rule, sums, counts, self.grid.axes(), r=self.r)
        return self.add_noise(mean.reshape(self.grid.shape), v.generator("rng", rng))

    def posterior_mean(self, X, y) -> np.ndarray:
        """The noise-free estimator mu_D on the grid (grid shape), from :meth:`check`'s output. Not a release."""
        from ..models.sampling.mean import posterior_mean_on_grid  # noqa: PLC0415

        return posterior_mean_on_grid(self.kernel_object(), X, y, self.grid.axes(), r=self.r, method=self.mean_method,
                                      refine=self.snap).reshape(self.grid.shape)

    def add_noise(self, mean: np.ndarray, rng: np.random.Generator) -> FunctionalRelease:
        """mean + c g, g an exact draw of GP(0, k) on the grid (draws the same numbers as :meth:`draw`; one
        mean from :meth:`posterior_mean` may be released several times, each a separate charge)."""
        from ..models.sampling import prior_paths  # noqa: PLC0415

        rng = v.generator("rng", rng)
        noise = prior_paths(self.kernel_object(), self.grid.axes(), rng=rng, L=1, scale=self.multiplier)[0]
        return FunctionalRelease(axes=self.grid.axes(), paths=(np.reshape(mean, self.grid.shape) + noise)[None],
                                 multiplier=self.multiplier)


def ridge_for_noise(n: int, domain: Box, *, kernel: str, lengthscale: float, epsilon: float, delta: float,
                    noise_std: float, M_Y: float = 1.0, sensitivity: str = "auto", accounting: str = "gdp",
                    r_max: float = 1e6) -> float:
    """The smallest r (to 1e-6 relative) whose multiplier c(r) = Delta_n(r) / mu is <= ``noise_std``:
    Delta_n decreases in r (Lemmas B.1, B.7), so this is a bracketed bisection on public quantities
    only. The rule trades the noise of the release against the shrinkage of the posterior mean."""
    noise_std = v.positive("noise_std", noise_std)
    if accounting not in MULTIPLIERS:
        raise InvalidParameterError("accounting", f"one of {sorted(MULTIPLIERS)}", accounting)

    def c_of(r):
        d = float(posterior_mean_sensitivity(n, r, kernel=kernel, lengthscale=lengthscale, domain=domain, M_Y=M_Y,
                                             sensitivity=sensitivity).value)
        return float(MULTIPLIERS[accounting](d, epsilon, delta))

    lo, hi = 1e-6, 1.0
    if c_of(lo) <= noise_std:
        return lo
    while c_of(hi) > noise_std:
        hi *= 2.0
        if hi > r_max:
            raise InfeasibleTargetError(f"no ridge r <= {r_max:g} gives noise std <= {noise_std:g} at "
                                        f"epsilon={epsilon:g}, delta={delta:g}")
    while hi - lo > 1e-6 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if c_of(mid) <= noise_std else (mid, hi)
    return hi


def plan_functional(n: int, domain: Box, grid: PublicGrid, *, kernel: str = "exponential", lengthscale: float,
                    r: float | None = None, epsilon: float, delta: float, M_Y: float = 1.0, sensitivity: str = "auto",
                    accounting: str = "gdp", response_map: ResponseMap | None = None,
                    noise_std: float | None = None, memory_limit: float = DEFAULT_MEMORY_LIMIT,
                    snap: int | None = None) -> FunctionalPlan:
    """Validate the public settings, bound the sensitivity and choose the multiplier c for the
    target (epsilon, delta) (``accounting="gdp"``: c = Delta / mu(epsilon, delta), Thm 4.1;
    "rdp"/"hall" for comparison: more noise for the same target). ``r`` given, or (``r=None``)
    the smallest r whose c is <= ``noise_std`` (:func:`ridge_for_noise`). The certified epsilon of
    the event is recomputed and never exceeds the target (c is raised in steps of 2^-40 where rounding
    would otherwise put it above: :func:`~privgp.accounting.feasible_side`). With a ``response_map``
    raw responses are mapped into [-1, 1] (M_Y must then be 1). The noise sampler for the grid is chosen here, from public settings, and a
    grid it cannot handle within ``memory_limit`` bytes is refused before any data are touched; the
    posterior mean's solve is estimated against the same limit in :meth:`FunctionalPlan.check` (it
    depends on the number of distinct inputs). ``snap`` = R: inputs are snapped to the grid lattice
    refined R times per axis (a public per-record map; the grid must span the domain box; see the
    module docstring, "Scale"), so the mean costs one unknown per occupied lattice site."""
    n = v.integer("n", n, minimum=2)
    if not isinstance(domain, Box):
        raise InvalidParameterError("domain", "a privgp.models.domain.Box (public)", type(domain).__name__)
    if not isinstance(grid, PublicGrid):
        raise InvalidParameterError("grid", "a privgp.models.domain.PublicGrid built from public numbers (an array of "
                                    "points is refused: a grid computed from the private data would leak it)",
                                    type(grid).__name__)
    if grid.dim != domain.dim:
        raise InvalidParameterError("grid", f"of the domain's dimension {domain.dim}", grid.dim)
    lengthscale = v.positive("lengthscale", lengthscale)
    k = make_kernel(kernel, lengthscale)
    M_Y = v.positive("M_Y", M_Y)
    if response_map is not None:
        if not isinstance(response_map, ResponseMap):
            raise InvalidParameterError("response_map", "a privgp.mechanisms.ResponseMap", type(response_map).__name__)
        if M_Y != 1.0:
            raise InvalidParameterError("M_Y", "1 with a response map (it maps responses into [-1, 1])", M_Y)
    epsilon = v.positive("epsilon", epsilon)
    delta = v.probability("delta", delta)
    if accounting not in MULTIPLIERS:
        raise InvalidParameterError("accounting", f"one of {sorted(MULTIPLIERS)}", accounting)
    from ..models.sampling.prior import plan_prior_sampler  # noqa: PLC0415

    if snap is not None:
        snap = v.integer("snap", snap, minimum=1)
        if grid.lower != domain.lower or grid.upper != domain.upper:
            raise InvalidParameterError("grid", "spanning the domain box when inputs are snapped (PublicGrid.on_box: "
                                        "snapped inputs must stay in the public domain)",
                                        f"{grid.lower} .. {grid.upper} in {domain.describe()}")
        if not isinstance(k, DistanceKernel):
            raise InvalidParameterError("kernel", "a stationary distance kernel when inputs are snapped", k.name)
    sp = plan_prior_sampler(k, grid.axes())
    memory_limit = v.positive("memory_limit", memory_limit)
    if sp.bytes > memory_limit:
        raise InvalidParameterError("grid", f"small enough for the {sp.method} noise sampler within the memory limit of "
                                    f"{memory_limit / 2**30:.3g} GiB (use a coarser grid or raise the limit)",
                                    f"{' x '.join(map(str, grid.sizes))} points, an estimated {sp.gib:.3g} GiB")
    calibration = None
    if r is None:
        if noise_std is None:
            raise InvalidParameterError("r", "given, or calibrated from a target noise_std", None)
        r = ridge_for_noise(n, domain, kernel=k.name, lengthscale=lengthscale, epsilon=epsilon, delta=delta,
                            noise_std=noise_std, M_Y=M_Y, sensitivity=sensitivity, accounting=accounting)
        source = "calibrated r"
        calibration = {"parameter": "r", "value": r, "target_noise_std": float(noise_std),
                       "rule": "smallest r whose multiplier c = Delta_n(r) / mu is <= the target noise std "
                               "(public quantities only)"}
    else:
        if noise_std is not None:
            raise InvalidParameterError("noise_std", "left out when r is given", noise_std)
        r = v.positive("r", r)
        source = "given r"
    sens = posterior_mean_sensitivity(n, r, kernel=k.name, lengthscale=lengthscale, domain=domain, M_Y=M_Y,
                                      sensitivity=sensitivity)
    Delta = float(sens.value)
    c0 = float(MULTIPLIERS[accounting](Delta, epsilon, delta))
    # the accountant rounds epsilon up: c is raised in steps of 2^-40 until the certified epsilon is <= the target
    c, ev, cert = feasible_side(
        lambda c: FunctionalEvent(sensitivity=Delta, noise_std=c), c0, epsilon, delta, parameter="multiplier",
        mechanism=MECHANISM,
        public={"estimator": "GP posterior mean", "kernel": k.name, "lengthscale": lengthscale, "r": r,
                "domain": domain.describe(), "sensitivity lemma": sens.lemma, "accounting": accounting},
        extra_assumptions=(f"bounded responses |y| <= M_Y = {M_Y:g}", "a public domain containing "
                           "every input (kappa, V_n)", sens.note))
    event = cast(FunctionalEvent, ev)
    return FunctionalPlan(n=n, domain=domain, grid=grid, kernel=k.name, lengthscale=lengthscale, r=r, M_Y=M_Y,
                          epsilon=epsilon, delta=delta, accounting=accounting, sensitivity=Delta, lemma=sens.lemma,
                          mu=event.mu, multiplier=c, event=event, certificate=cert, response_map=response_map,
                          hyperparameter_source=source, calibration=calibration, snap=snap,
                          memory_limit=memory_limit)


def check_bounded(name: str, y, M_Y: float) -> np.ndarray:
    """Responses must already satisfy |y| <= M_Y (the sensitivity lemmas assume it)."""
    y = np.asarray(y, dtype=float)
    bad = int(np.sum(~(np.abs(y) <= M_Y)))
    if bad:
        raise InvalidParameterError(name, f"bounded by M_Y = {M_Y:g} in absolute value (map and clip them with a "
                                    "public ResponseMap first; the mechanism does not clip silently)",
                                    f"{bad} of {y.size} values outside [-{M_Y:g}, {M_Y:g}]")
    return y


@dataclass(frozen=True)
class FunctionalRelease:
    """The released function mu_D + c g on the public grid: ``paths`` (1, *grid shape) on ``axes`` (the
    interface of :class:`privgp.mechanisms.posterior_release.ReleasedPaths`)."""

    axes: tuple[np.ndarray, ...]
    paths: np.ndarray
    multiplier: float
    level: float = 0.0

    @property
    def values(self) -> np.ndarray:
        return self.paths[0]

    def excursion(self) -> np.ndarray:
        return self.paths >= self.level

    def grid_points(self) -> np.ndarray:
        mesh = np.meshgrid(*self.axes, indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=-1)

    def band(self, z: float = 1.959963984540054) -> tuple[np.ndarray, np.ndarray]:
        """values -+ z c: a pointwise band for the *noise-free estimator* mu_D (k(x, x) = 1); it says
        nothing about the estimator's own error against the truth."""
        return self.values - z * self.multiplier, self.values + z * self.multiplier


def release_functional(plan: FunctionalPlan, X, y, rng: np.random.Generator) -> FunctionalRelease:
    """check + draw WITHOUT charging any ledger (experiments, tests; a release to publish goes through
    :func:`privgp.mechanisms.release.release`). Every check runs before the noise is drawn."""
    if not isinstance(plan, FunctionalPlan):
        raise InvalidParameterError("plan", "a FunctionalPlan (from plan_functional)", type(plan).__name__)
    rng = v.generator("rng", rng)
    X, y = plan.check(X, y)
    return plan.draw(X, y, rng)
