"""Iterative samplers for the seed-000 GP posterior: exact iterate laws and what they leak (beyond the papers).

Seed 004 shows that a sampler stopped after finitely many steps can leak far more than an exact
posterior draw, even for a conjugate Gaussian model. For the GP posterior of seed 000 (prior
GP(0, sigma^2 k), noise variance sigma^2 r^2) two standard samplers are affine-Gaussian recursions, so
their iterate at a finite set of release points XT is Gaussian at every step and everything is exact:

* ``"sto"`` - sample-then-optimise (pathwise conditioning by gradient descent): f_0 ~ GP(0, sigma^2 k),
  eps ~ N(0, sigma^2 r^2 I), v_(s+1) = v_s - h (H v_s - (y - f_0(X) - eps)), H = K_XX + r^2 I, v_0 = 0;
  released f_t = f_0 + k(., X) v_t. With P_t(s) = (1 - (1 - h s)^t)/s:
  mean K_TX P_t(H) y and covariance sigma^2 [K_TT - K_TX (2 P_t - P_t H P_t)(H) K_XT], and
  2 P_t - P_t H P_t = P_2t. t = inf is the exact posterior. :func:`sto_law`, :func:`sto_sample`.
* ``"ula"`` - full-batch unadjusted Langevin on the function values u at Z = [X; XT], preconditioned
  by the prior covariance sigma^2 K_ZZ (well posed without K^-1):
  u <- u + (h/2) [-u + K_ZX (y - u_X) / r^2] + sqrt(h) sigma K_ZZ^(1/2) xi, started at a prior draw
  (``init="prior"``) or at 0. Its mean converges to the posterior mean, its covariance to a
  discretisation-biased one (docs/notes/seed004_sgld.md, sec. 6.5). :func:`ula_law`, :func:`ula_sample`.

Both step sizes must be chosen without the data: the defaults h = 1/(n + r^2) (sto) and
h = 1/(1 + n/r^2) (ula) contract for every dataset because the spectrum of K_XX lies in [0, n].

Privacy of the iterate.
* :func:`privgp.audit.tightness.neighbours.pair_rdp` / :func:`~privgp.audit.tightness.neighbours.pair_epsilon` (``symmetric=True``,
  a continuous search over the order): the exact Renyi divergence (both directions) between the iterates on two
  neighbouring datasets (:class:`~privgp.audit.tightness.neighbours.NeighbourPair`), and the epsilon its RDP curve
  converts to;
* :func:`pair_epsilon_lower`: the exact epsilon(delta) of the best linear statistic of the released
  vector (Fisher direction), a valid LOWER bound on the epsilon of the sampler as a mechanism;
* :func:`worst_pair` - an adversarial search over neighbouring datasets on the public domain for the
  pair that maximises the iterate's divergence (a lower estimate of the worst case);
* the certified UPPER bound for the sto iterate is
  :class:`privgp.accounting.sampler_bounds.SampleThenOptimiseEvent` (uniform over the domain);
  :func:`audit_sampler` puts them side by side over a grid of step counts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ... import validation as v
from ...accounting import accountant
from ...accounting.conversion import check_conversion
from ...accounting.mixtures import Mixture1D, hockey_stick_epsilon
from ...accounting.sampler_bounds import SampleThenOptimiseEvent
from ...errors import InvalidParameterError
from ...mechanisms.posterior_sample import posterior_sample_event
from ...models.domain import Box
from ...models.gp import ExactPosterior
from ...models.kernels import Kernel
from ..tightness.neighbours import NeighbourPair, PairCoding, pair_epsilon, pair_rdp

SAMPLERS = ("sto", "ula")


def default_step(sampler: str, n: int, r: float) -> float:
    """A data-independent step size that contracts for every dataset of n records."""
    if sampler == "sto":
        return 1.0 / (n + r * r)
    if sampler == "ula":
        return 1.0 / (1.0 + n / (r * r))
    raise InvalidParameterError("sampler", f"one of {SAMPLERS}", sampler)


def _steps(steps) -> np.ndarray:
    s = np.atleast_1d(np.asarray(steps, dtype=float))
    if np.any(~((s >= 0) & ((s == np.floor(s)) | np.isinf(s)))):
        raise InvalidParameterError("steps", "integers >= 0 (or inf)", steps)
    return s


def _check_common(kernel, X, y, XT, r, sigma):
    if not isinstance(kernel, Kernel):
        raise InvalidParameterError("kernel", "a privgp.models.kernels.Kernel instance", type(kernel).__name__)
    X = v.points("X", X)
    y = v.responses("y", y, X.shape[0])
    XT = v.points("XT", XT, dim=X.shape[1])
    return X, y, XT, v.positive("r", r), v.positive("sigma", sigma)


@dataclass(frozen=True)
class GaussianLaw:
    """N(mean, cov) of the released vector at the release points (one step count)."""

    steps: float
    mean: np.ndarray
    cov: np.ndarray


# ------------------------------------------------------------------------------------------------
# sample-then-optimise
# ------------------------------------------------------------------------------------------------

def _sqrt_factor(K: np.ndarray) -> np.ndarray:
    """F with F F^T = K for a PSD matrix (eigenvectors times sqrt of the eigenvalues raised to >= 0):
    any square root works in the recursions below, even for a singular K."""
    w, V = np.linalg.eigh(K)
    return V * np.sqrt(np.maximum(w, 0.0))


def _power(base: np.ndarray, t: float) -> np.ndarray:
    """base^t for |base| < 1 (t = inf gives 0)."""
    if math.isinf(t):
        return np.zeros_like(base)
    return np.power(base, t)


def sto_law(kernel: Kernel, X, y, XT, *, r: float, sigma: float, step: float | None = None, steps) -> list[GaussianLaw]:
    """Exact laws of the sample-then-optimise iterate at XT after each step count in ``steps``."""
    X, y, XT, r, sigma = _check_common(kernel, X, y, XT, r, sigma)
    n = X.shape[0]
    h = default_step("sto", n, r) if step is None else v.positive("step", step)
    if not h < 2.0 / (n + r * r):
        raise InvalidParameterError("step", f"< 2 / (n + r^2) = {2.0 / (n + r * r):.6g}", h)
    s, U = np.linalg.eigh(kernel(X) + r * r * np.eye(n))
    s = np.maximum(s, r * r)
    C = kernel(XT, X) @ U
    Uy = U.T @ y
    KTT = kernel(XT)
    base = 1.0 - h * s
    out = []
    for t in _steps(steps):
        Pt = -np.expm1(np.log1p(-h * s) * t) / s if np.all(base > 0) else (1.0 - _power(base, t)) / s
        P2t = (1.0 - _power(base, 2 * t)) / s
        cov = sigma * sigma * (KTT - (C * P2t) @ C.T)
        out.append(GaussianLaw(float(t), C @ (Pt * Uy), 0.5 * (cov + cov.T)))
    return out


def sto_sample(kernel: Kernel, X, y, XT, *, r: float, sigma: float, step: float | None = None, steps: int,
               size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` independent runs of the sampler itself (prior draws, noise, gradient descent), values at XT."""
    X, y, XT, r, sigma = _check_common(kernel, X, y, XT, r, sigma)
    rng = v.generator("rng", rng)
    n, m = X.shape[0], XT.shape[0]
    h = default_step("sto", n, r) if step is None else v.positive("step", step)
    steps = v.integer("steps", steps, minimum=0)
    F = _sqrt_factor(kernel(np.vstack([X, XT])))
    f0 = sigma * rng.standard_normal((size, n + m)) @ F.T
    eps = sigma * r * rng.standard_normal((size, n))
    H = kernel(X) + r * r * np.eye(n)
    b = y[None, :] - f0[:, :n] - eps
    vv = np.zeros((size, n))
    for _ in range(steps):
        vv = vv - h * (vv @ H - b)
    return f0[:, n:] + vv @ kernel(X, XT)


# ------------------------------------------------------------------------------------------------
# preconditioned unadjusted Langevin (ULA)
# ------------------------------------------------------------------------------------------------

def _ula_parts(kernel, X, XT, r):
    n = X.shape[0]
    L = _sqrt_factor(kernel(np.vstack([X, XT])))   # K_ZZ = L L^T
    beta, U = np.linalg.eigh(L[:n].T @ L[:n])    # B = L_X^T L_X
    return L, np.maximum(beta, 0.0), U


def ula_law(kernel: Kernel, X, y, XT, *, r: float, sigma: float, step: float | None = None, steps,
            init: str = "prior") -> list[GaussianLaw]:
    """Exact laws of the preconditioned ULA iterate at XT after each step count in ``steps``.

    In whitened coordinates u = sigma L w the recursion is w <- M w + b + sqrt(h) xi with the symmetric
    M = I - (h/2)(I + L_X^T L_X / r^2) and b = (h/2) L_X^T y / (sigma r^2); in the eigenbasis of M every
    coordinate is an independent scalar AR(1) process."""
    X, y, XT, r, sigma = _check_common(kernel, X, y, XT, r, sigma)
    if init not in ("prior", "zero"):
        raise InvalidParameterError("init", "'prior' or 'zero'", init)
    n = X.shape[0]
    h = default_step("ula", n, r) if step is None else v.positive("step", step)
    if not h < 4.0 / (1.0 + n / (r * r)):
        raise InvalidParameterError("step", f"< 4 / (1 + n / r^2) = {4.0 / (1.0 + n / (r * r)):.6g}", h)
    L, beta, U = _ula_parts(kernel, X, XT, r)
    c = 1.0 - 0.5 * h * (1.0 + beta / (r * r))
    bt = 0.5 * h / (sigma * r * r) * (U.T @ (L[:n].T @ y))
    G = L[n:] @ U
    s0 = 1.0 if init == "prior" else 0.0
    out = []
    for t in _steps(steps):
        ct = _power(c, t)
        mean_w = bt * (1.0 - ct) / (1.0 - c)
        var_w = ct * ct * s0 + h * (1.0 - ct * ct) / (1.0 - c * c)
        cov = sigma * sigma * (G * var_w) @ G.T
        out.append(GaussianLaw(float(t), sigma * G @ mean_w, 0.5 * (cov + cov.T)))
    return out


def ula_sample(kernel: Kernel, X, y, XT, *, r: float, sigma: float, step: float | None = None, steps: int,
               size: int, rng: np.random.Generator, init: str = "prior") -> np.ndarray:
    """``size`` independent runs of the preconditioned ULA recursion itself, values at XT after ``steps``."""
    X, y, XT, r, sigma = _check_common(kernel, X, y, XT, r, sigma)
    rng = v.generator("rng", rng)
    n, m = X.shape[0], XT.shape[0]
    h = default_step("ula", n, r) if step is None else v.positive("step", step)
    steps = v.integer("steps", steps, minimum=0)
    KZ = kernel(np.vstack([X, XT]))
    F = _sqrt_factor(KZ)
    u = sigma * rng.standard_normal((size, n + m)) @ F.T if init == "prior" else np.zeros((size, n + m))
    KXZ = KZ[:n]
    for _ in range(steps):
        drift = -u + (y[None, :] - u[:, :n]) @ KXZ / (r * r)
        u = u + 0.5 * h * drift + math.sqrt(h) * sigma * rng.standard_normal((size, n + m)) @ F.T
    return u[:, n:]


def posterior_law(kernel: Kernel, X, y, XT, *, r: float, sigma: float) -> GaussianLaw:
    """The exact posterior N(mu_D(XT), sigma^2 k_D(XT, XT)) (seed 000, sec. 2)."""
    X, y, XT, r, sigma = _check_common(kernel, X, y, XT, r, sigma)
    post = ExactPosterior(kernel, X, y, r, sigma)
    return GaussianLaw(math.inf, post.mean(XT), post.cov(XT))


def iterate_laws(sampler: str, kernel: Kernel, X, y, XT, *, r, sigma, step=None, steps, init="prior") -> list[GaussianLaw]:
    if sampler == "sto":
        return sto_law(kernel, X, y, XT, r=r, sigma=sigma, step=step, steps=steps)
    if sampler == "ula":
        return ula_law(kernel, X, y, XT, r=r, sigma=sigma, step=step, steps=steps, init=init)
    raise InvalidParameterError("sampler", f"one of {SAMPLERS}", sampler)


# ------------------------------------------------------------------------------------------------
# divergences of a pair of laws
# ------------------------------------------------------------------------------------------------

#: a coarse fixed grid of orders for a quick :func:`privgp.audit.tightness.neighbours.pair_epsilon`. Its minimum is an
#: UPPER estimate of the pair's epsilon (it jumps from 1.63 to 2: with n = 2, r = 1, sigma = 10, lengthscale 0.1 it gave
#: 9.808 for a pair whose curve converts to 7.286 at alpha = 1.93, above the certified 8.658; red team 25), so the audit
#: searches the order continuously (``orders=None``) for the values it reports as lower estimates of the worst case
ORDER_GRID = np.concatenate([1.0 + np.geomspace(1e-3, 1.0, 16)[:-1], np.geomspace(2.0, 1e4, 30)])


def _laws(P: GaussianLaw, Q: GaussianLaw) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return P.mean, P.cov, Q.mean, Q.cov


def _projection_epsilon(a: np.ndarray, P: GaussianLaw, Q: GaussianLaw, d: float) -> float:
    """Exact epsilon(delta) of the statistic a^T f (two univariate Gaussians), both directions."""
    sp, sq = float(a @ P.cov @ a), float(a @ Q.cov @ a)
    mp_, mq = float(a @ P.mean), float(a @ Q.mean)
    scale = max(sp, sq)
    if not scale > 0:
        return 0.0
    if min(sp, sq) <= 1e-14 * scale:   # one side (numerically) degenerate: skip rather than claim inf
        return 0.0
    A = Mixture1D.gaussian(mp_, math.sqrt(sp))
    B = Mixture1D.gaussian(mq, math.sqrt(sq))
    return max(hockey_stick_epsilon(d, A, B), hockey_stick_epsilon(d, B, A))


def pair_epsilon_lower(P: GaussianLaw, Q: GaussianLaw, delta: float) -> float:
    """A valid LOWER bound on the sampler's epsilon(delta): the largest exact epsilon of a one-dimensional
    statistic a^T f of the release (each is a post-processing, so its epsilon cannot exceed the release's),
    over the Fisher direction (S_P + S_Q)^+ (m_P - m_Q) and the generalised eigenvectors of (S_P, S_Q)
    (directions where the covariances differ most)."""
    d = v.probability("delta", delta)
    S = P.cov + Q.cov
    w, V = np.linalg.eigh(S)
    keep = w > 1e-12 * max(float(w[-1]), 1e-300)
    if not keep.any():
        return 0.0
    W = V[:, keep] / np.sqrt(w[keep])          # whitening of S on its support
    dirs = [W @ (W.T @ (P.mean - Q.mean))]
    lam, U = np.linalg.eigh(W.T @ P.cov @ W)   # generalised eigenvectors of (S_P, S_P + S_Q)
    dirs.extend((W @ U).T)
    best = 0.0
    for a in dirs:
        if np.any(a):
            best = max(best, _projection_epsilon(a, P, Q, d))
    return best


# ------------------------------------------------------------------------------------------------
# neighbouring datasets and the adversarial search
# ------------------------------------------------------------------------------------------------

def pair_laws(sampler, kernel, pair: NeighbourPair, XT, *, r, sigma, step=None, steps=(math.inf,), init="prior"):
    """(laws on D, laws on D') of the sampler's iterate (``sampler="posterior"``: exact posteriors)."""
    (X1, y1), (X2, y2) = pair.datasets()
    if sampler == "posterior":
        return [posterior_law(kernel, X1, y1, XT, r=r, sigma=sigma)], [posterior_law(kernel, X2, y2, XT, r=r, sigma=sigma)]
    return (iterate_laws(sampler, kernel, X1, y1, XT, r=r, sigma=sigma, step=step, steps=steps, init=init),
            iterate_laws(sampler, kernel, X2, y2, XT, r=r, sigma=sigma, step=step, steps=steps, init=init))


def worst_pair(sampler: str, kernel: Kernel, domain: Box, XT, *, n: int, r: float, sigma: float, steps: float,
               alpha: float, M_Y: float = 1.0, step: float | None = None, init: str = "prior",
               rng: np.random.Generator, restarts: int = 3, maxiter: int = 60,
               start: NeighbourPair | None = None) -> tuple[NeighbourPair, float]:
    """Adversarial search (random restarts + L-BFGS-B, the first start structured or ``start``) over
    neighbouring datasets of n records on ``domain`` with |y| <= M_Y for the pair maximising the
    iterate's pair_rdp at order alpha after ``steps`` steps. A lower estimate of the worst case."""
    alpha = v.greater_than("alpha", alpha, 1.0)
    n = v.integer("n", n, minimum=1)
    rng = v.generator("rng", rng)
    restarts = v.integer("restarts", restarts, minimum=1)
    if not isinstance(domain, Box):
        raise InvalidParameterError("domain", "a privgp.models.domain.Box", domain)
    XT = v.points("XT", XT, dim=domain.dim)
    coding = PairCoding(domain, n, M_Y)

    def value(z):
        P, Q = pair_laws(sampler, kernel, coding.unpack(z)[0], XT, r=r, sigma=sigma, step=step, steps=[steps],
                         init=init)
        val = pair_rdp(alpha, *_laws(P[0], Q[0]))
        return val if math.isfinite(val) else 1e300

    best = coding.maximise(value, restarts=restarts, rng=rng, maxiter=maxiter,
                           first=(coding.pack(start) if start is not None else "piled",))
    return coding.unpack(best[1])[0], float(best[0])


# ------------------------------------------------------------------------------------------------
# the audit: certified posterior epsilon next to the iterate's epsilon over step counts
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SamplerAuditRow:
    steps: float
    rdp_iterate: float              # exact pair RDP of the iterate at alpha (worst pair found)
    rdp_posterior_pair: float       # exact posterior RDP of the same pair at alpha
    epsilon_iterate_pair: float     # RDP-converted epsilon of the iterate's pair curve
    epsilon_iterate_lower: float    # exact epsilon of the Fisher statistic: a lower bound for the sampler
    epsilon_posterior_pair: float   # RDP-converted epsilon of the exact posterior's pair curve
    epsilon_iterate_certified: float  # certified upper bound (sto); inf where none is proven (every ula row)
    pair: NeighbourPair = field(repr=False)

    def to_dict(self) -> dict:
        return {k: (getattr(self, k) if k != "pair" else self.pair.to_dict()) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class SamplerAudit:
    sampler: str
    n: int
    r: float
    sigma: float
    step: float
    delta: float
    alpha: float
    epsilon_posterior_certified: float
    rows: tuple[SamplerAuditRow, ...]
    settings: dict

    def to_dict(self) -> dict:
        return {"sampler": self.sampler, "n": self.n, "r": self.r, "sigma": self.sigma, "step": self.step,
                "delta": self.delta, "alpha": self.alpha, "epsilon_posterior_certified": self.epsilon_posterior_certified,
                "settings": self.settings, "rows": [row.to_dict() for row in self.rows]}

    def worst_factor(self) -> float:
        """max over steps of (lower bound on the iterate's epsilon) / (certified posterior epsilon): above 1
        the iterate provably leaks more than the exact-posterior certificate allows."""
        return max(row.epsilon_iterate_lower for row in self.rows) / self.epsilon_posterior_certified


def sampler_bytes(n: int, release_points: int) -> int:
    """Estimated peak bytes of the sampler audit: about eighteen (m x m) float64 matrices for m = n +
    release_points (the Gram matrices and their eigendecompositions, the iterate's and the posterior's laws on
    both datasets, the divergences' temporaries; measured at most 14.5 while one pair of laws is held)."""
    m = int(n) + int(release_points)
    return 8 * 18 * m * m


def check_sampler_memory(n: int, release_points: int, memory_limit: float, *,
                         names: tuple[str, str] = ("n", "release_points")) -> None:
    """Refuse, before any work, a sampler audit estimated to need more than ``memory_limit`` bytes
    (``--n 100000`` ended in numpy's memory error: red team 25), naming the larger of n and release_points (by
    ``names``: the command's options)."""
    param, value = (names[0], n) if n >= release_points else (names[1], release_points)
    v.check_memory(f"sampler audit (n = {n} records, {release_points} release points)",
                   sampler_bytes(n, release_points), memory_limit, "use a smaller n or fewer release points",
                   param=param, value=value)


#: the largest n M_Y / (sigma r^2) the audit accepts (mu_0 of :func:`privgp.accounting.sampler_bounds.convergence_rates`:
#: the largest mean shift over sigma). The epsilons grow like its square (about 1e80 here); --M-Y 1e300 overflowed the
#: sto bound's square (OverflowError) and from about 1e50 the exact statistic's hockey-stick search gave NaN (red team 25)
MAX_MEAN_SHIFT = 1e40


def audit_sampler(sampler: str, *, kernel: Kernel, n: int, r: float, sigma: float, XT, domain: Box | None = None,
                  M_Y: float = 1.0, delta: float = 1e-3, steps, step: float | None = None, init: str = "prior",
                  alpha: float | None = None, rng: np.random.Generator, restarts: int = 3,
                  conversion: str = "improved", progress=None, memory_limit: float | None = None) -> SamplerAudit:
    """For each step count: the worst neighbouring pair found for the iterate (warm-started from the
    previous step count), the iterate's exact pair RDP / epsilon and lower bound, the exact posterior's
    values for the same pair, and (sto) the certified iterate epsilon; plus the certified exact-posterior
    epsilon (seed 000). ``alpha`` (the search order) defaults to the order of the posterior certificate.
    ``memory_limit`` (bytes; None: unchecked): refuse, before any work, an audit estimated to need more
    (:func:`sampler_bytes`)."""
    if sampler not in SAMPLERS:
        raise InvalidParameterError("sampler", f"one of {SAMPLERS}", sampler)
    domain = Box.unit(1) if domain is None else domain
    n = v.integer("n", n, minimum=2)
    r, sigma, M_Y = v.positive("r", r), v.scale("sigma", sigma), v.positive("M_Y", M_Y)   # the laws hold sigma^2
    if not n * M_Y <= MAX_MEAN_SHIFT * sigma * r * r:   # products: inf or 0 at the float range's ends, never an error
        raise InvalidParameterError("M_Y", f"at most {MAX_MEAN_SHIFT:g} sigma r^2 / n = "
                                    f"{MAX_MEAN_SHIFT * sigma * r * r / n:.3g} with sigma = {sigma:g}, r = {r:g}, n = {n} "
                                    "(the mean shift n M_Y / (sigma r^2) is squared by the bounds and divergences; beyond "
                                    "this the epsilons leave the float range): lower M_Y or raise sigma or r", M_Y)
    d = v.probability("delta", delta)
    check_conversion(conversion)
    rng = v.generator("rng", rng)
    grid = _steps(steps)
    h = default_step(sampler, n, r) if step is None else v.positive("step", step)
    XT = v.points("XT", XT, dim=domain.dim)
    if memory_limit is not None:
        check_sampler_memory(n, XT.shape[0], v.positive("memory_limit", memory_limit))
    post_event = posterior_sample_event(n, r, sigma, kernel=kernel, domain=domain, M_Y=M_Y)
    cert = accountant.epsilon(post_event, d, conversion=conversion)
    alpha = float(cert.alpha) if alpha is None else v.greater_than("alpha", alpha, 1.0)
    rows = []
    pair = None
    it = grid if progress is None else progress(grid)
    for t in it:
        pair, _ = worst_pair(sampler, kernel, domain, XT, n=n, r=r, sigma=sigma, steps=t, alpha=alpha, M_Y=M_Y,
                             step=h, init=init, rng=rng, restarts=restarts, start=pair)
        P, Q = pair_laws(sampler, kernel, pair, XT, r=r, sigma=sigma, step=h, steps=[t], init=init)
        PP, QQ = pair_laws("posterior", kernel, pair, XT, r=r, sigma=sigma)
        if sampler == "sto" and math.isfinite(t):
            ev = SampleThenOptimiseEvent(post_event, h, int(t))
            certified = float(accountant.epsilon(ev, d, conversion=conversion).epsilon)
        elif sampler == "sto":
            certified = float(cert.epsilon)
        else:   # no bound on the ULA iterate is proven: the only upper bound privgp can state is the vacuous one
            certified = math.inf
        rows.append(SamplerAuditRow(
            steps=float(t), rdp_iterate=pair_rdp(alpha, *_laws(P[0], Q[0])),
            rdp_posterior_pair=pair_rdp(alpha, *_laws(PP[0], QQ[0])),
            epsilon_iterate_pair=pair_epsilon(*_laws(P[0], Q[0]), d, conversion=conversion)[0],
            epsilon_iterate_lower=pair_epsilon_lower(P[0], Q[0], d),
            epsilon_posterior_pair=pair_epsilon(*_laws(PP[0], QQ[0]), d, conversion=conversion)[0],
            epsilon_iterate_certified=certified, pair=pair))
    return SamplerAudit(sampler=sampler, n=n, r=r, sigma=sigma, step=h, delta=d, alpha=alpha,
                        epsilon_posterior_certified=float(cert.epsilon), rows=tuple(rows),
                        settings={"kernel": kernel.describe(), "domain": [list(domain.lower), list(domain.upper)],
                                  "M_Y": M_Y, "init": init, "release_points": int(XT.shape[0]),
                                  "conversion": conversion, "restarts": restarts})
