"""A certificate for the *iterate* of a sample-then-optimise GP sampler (beyond the papers).

The sampler. For the posterior of seed 000 (prior GP(0, sigma^2 k), noise variance sigma^2 r^2, n records,
sup k(x, x) <= 1, |y_i| <= M), draw a prior path f_0 ~ GP(0, sigma^2 k) and eps ~ N(0, sigma^2 r^2 I_n),
run ``steps`` = t steps of gradient descent with step h from v_0 = 0 on

    v -> 1/2 v^T H v - v^T (y - f_0(X) - eps),   H = K_XX + r^2 I,

and release f_t = f_0 + k(., X) v_t (the "sample-then-optimise" / pathwise-conditioning sampler; with
t = inf it is an exact posterior draw). v_t = P_t(H)(y - f_0(X) - eps) with P_t(s) = (1 - (1 - h s)^t)/s,
so at any finite set of release points T the iterate is Gaussian (derivation in
:mod:`privgp.audit.samplers.langevin_gp`):

    mean  m_t = K_TX P_t(H) y,    cov  S_t = sigma^2 [K_TT - K_TX P_2t(H) K_XT]  (P_2t = 2P_t - P_t H P_t).

Convergence in Renyi divergence, uniformly over all datasets (derived here; [derived] = not in a paper).
Let q = max(|1 - h r^2|, |1 - h (n + r^2)|) (the spectrum of H lies in [r^2, n + r^2] because
|k| <= 1), rho_t = q^(2t), gamma_t = rho_t n / r^2, mu_t^2 = rho_t n^2 M^2 / (sigma^2 r^4). With
S_inf = sigma^2 (K_TT - C C^T), C = K_TX H^(-1/2):

1. C C^T <= (n / r^2)(K_TT - C C^T): for any direction a with s = a^T K_TT a and c = K_XT a,
   a^T C C^T a = c^T H^-1 c <= s lambda_max(K)/(lambda_max(K) + r^2) because c^T K^+ c <= s
   (Schur complement of the joint prior covariance), and lambda_max(K) <= n.
2. S_t - S_inf = sigma^2 C (1 - hH)^(2t) C^T, so S_inf <= S_t <= (1 + gamma_t) S_inf, and rank(S_t - S_inf) <= n.
3. m_t - m_inf = -C (1 - hH)^t H^(-1/2) y, so (m_t - m_inf)^T S_inf^+ (m_t - m_inf) <= (n / (r^2 sigma^2))
   rho_t ||y||^2 / r^2 <= mu_t^2.

Hence (Gil et al. / seed 000 eq. (12) in the generalised eigenbasis; phi_nu(l) = -1/2 log l -
log(nu - (nu-1) l)/(2(nu-1)), at most n eigenvalues differ from 1):

    D_nu(iterate || posterior) <= n phi_nu(1 + gamma_t) + nu mu_t^2 / (2 (1 - (nu-1) gamma_t))   [(nu-1) gamma_t < 1]
    D_nu(posterior || iterate) <= n phi_nu(1 / (1 + gamma_t)) + nu mu_t^2 / 2.

Combined with the certified posterior RDP bound R (seed 000, Thm 3.1) by the weak triangle inequality of
Renyi divergences (Mironov 2017, Prop. 11: D_a(P||R) <= (a - 1/p)/(a - 1) D_pa(P||Q) + D_q(a-1/p)(Q||R),
1/p + 1/q = 1), applied twice (iterate_D -> posterior_D -> posterior_D' -> iterate_D'):

    RDP_nu(iterate) <= c(nu, p) F(p nu) + c(b, p') R(p' b) + G(q' (b - 1/p')),  b = q (nu - 1/p),

minimised over a grid of p, p' (every choice is a valid bound). The bound is uniform over the domain and
over the release points, so it certifies the iterate as a mechanism; it is +inf for small t (the sampler
has not converged far enough for this argument), and tends to (slightly more than) the posterior's
certificate as t grows. It does NOT cover other samplers (ULA has a stationary bias; its exact pair
divergences are in :mod:`privgp.audit.samplers.langevin_gp`).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..errors import InvalidParameterError, NumericalError
from .events import Neighbouring, PrivacyEvent, _check_orders, admissible_only, event_from_dict
from .posterior_sampling import PosteriorSampleEvent

#: Hoelder exponents p (and p') tried by the weak triangle inequality
HOLDER_GRID = np.array([1.01, 1.03, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0, 1000.0])


def _phi(nu, lam_minus_1):
    """phi_nu(l) = -1/2 log l - log(nu - (nu - 1) l) / (2 (nu - 1)) with l = 1 + lam_minus_1 (+inf where
    nu - (nu-1) l <= 0); written with log1p so that l near 1 keeps its precision."""
    with np.errstate(invalid="ignore", divide="ignore"):
        x = -(nu - 1.0) * lam_minus_1
        out = -0.5 * np.log1p(lam_minus_1) - np.log1p(x) / (2.0 * (nu - 1.0))
        out = np.where(x > -1.0, out, np.inf)
    return np.maximum(out, 0.0)


def convergence_rates(n: int, r: float, sigma: float, M: float, step: float, steps: int) -> tuple[float, float]:
    """(gamma_t, mu_t^2) of the module docstring; raises unless 0 < step < 2/(n + r^2)."""
    n = v.integer("n", n, minimum=1)
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma)
    M = v.positive("M", M)
    h = v.positive("step", step)
    if not h < 2.0 / (n + r * r):
        raise InvalidParameterError("step", f"< 2 / (n + r^2) = {2.0 / (n + r * r):.6g} (gradient descent on H "
                                    "must contract for every dataset)", h)
    t = v.integer("steps", steps, minimum=0)
    a, b = h * r * r, h * (n + r * r)
    log_q = math.log1p(-a) if (a <= 1.0 and 1.0 - a >= b - 1.0) else math.log(b - 1.0) if b > 1.0 else math.log(abs(1.0 - a))
    rho = math.exp(2.0 * t * log_q)
    return rho * n / (r * r), rho * (n * M / (sigma * r * r)) ** 2


def forward_bound(nu: ArrayLike, n: float, gamma: float, mu2: float) -> np.ndarray:
    """Bound on D_nu(iterate || posterior), vectorised over nu (+inf where (nu - 1) gamma >= 1)."""
    nu = np.asarray(nu, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        slack = 1.0 - (nu - 1.0) * gamma
        out = n * _phi(nu, gamma) + nu * mu2 / (2.0 * slack)
        return np.where(slack > 0, out, np.inf)


def reverse_bound(nu: ArrayLike, n: float, gamma: float, mu2: float) -> np.ndarray:
    """Bound on D_nu(posterior || iterate), vectorised over nu (always finite)."""
    nu = np.asarray(nu, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        return n * _phi(nu, -gamma / (1.0 + gamma)) + 0.5 * nu * mu2


def triangle_bound(alpha: ArrayLike, posterior_rdp: Callable[[np.ndarray], np.ndarray], n: float, gamma: float,
                   mu2: float, grid: np.ndarray = HOLDER_GRID) -> np.ndarray:
    """min over p, p' of the doubly applied weak triangle inequality (module docstring), vectorised over
    alpha; ``posterior_rdp(orders)`` is the certified posterior RDP curve (+inf outside its range)."""
    a = np.asarray(alpha, dtype=float)[..., None, None]
    p = grid[:, None]
    pp = grid[None, :]
    q, qq = p / (p - 1.0), pp / (pp - 1.0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        c1 = (a - 1.0 / p) / (a - 1.0)
        b = q * (a - 1.0 / p)
        c2 = (b - 1.0 / pp) / (b - 1.0)
        first = c1 * forward_bound(p * a, n, gamma, mu2)
        middle = c2 * np.asarray(posterior_rdp(pp * b), dtype=float)
        last = reverse_bound(qq * (b - 1.0 / pp), n, gamma, mu2)
        total = first + middle + last
    total = np.where(np.isnan(total), np.inf, total)
    return total.min(axis=(-2, -1))


@dataclass(frozen=True)
class SampleThenOptimiseEvent(PrivacyEvent):
    """Release of L paths, each the iterate after ``steps`` gradient steps (step size ``step``) of the
    sample-then-optimise sampler for the seed-000 posterior of ``posterior`` (a single-draw
    :class:`PosteriorSampleEvent` with eta = 0 and finite sigma). RDP: the module's [derived] bound
    (uniform convergence in Renyi divergence + Mironov 2017, Prop. 11, twice), times L."""

    posterior: PosteriorSampleEvent
    step: float
    steps: int
    L: int = 1
    kind: ClassVar[str] = "sample_then_optimise"
    neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    vectorised: ClassVar[bool] = False   # its curve is not an array formula: compositions call rdp() per event
    proof: ClassVar[str] = ("[derived] sample-then-optimise iterate: uniform Renyi convergence (privgp.accounting."
                            "sampler_bounds) + weak triangle inequality (Mironov 2017, Prop. 11) around seed 000, Thm 3.1")

    def __post_init__(self):
        post = self.posterior
        if not isinstance(post, PosteriorSampleEvent):
            raise InvalidParameterError("posterior", "a PosteriorSampleEvent", type(post).__name__)
        if post.L != 1 or post.eta != 0.0 or not math.isfinite(post.sigma):
            raise InvalidParameterError("posterior", "a single draw (L = 1) with eta = 0 and finite sigma",
                                        post.describe())
        object.__setattr__(self, "L", v.integer("L", self.L, minimum=1))
        convergence_rates(post.n, post.r, post.sigma, self.response_bound, self.step, self.steps)  # validates
        object.__setattr__(self, "step", float(self.step))
        object.__setattr__(self, "steps", int(self.steps))

    @property
    def response_bound(self) -> float:
        """M with |y_i| <= M: M_Y, or the RKHS norm of f* for Lemma B.8 (|f*(x)| <= ||f*||_H sqrt(k(x,x)))."""
        post = self.posterior
        if post.sensitivity != "rkhs":
            return float(post.M_Y)
        if post.rkhs_norm is None:  # pragma: no cover - PosteriorSampleEvent requires it for Lemma B.8
            raise InvalidParameterError("rkhs_norm", "set for sensitivity='rkhs' (Lemma B.8)", None)
        return float(post.rkhs_norm)

    @property
    def rates(self) -> tuple[float, float]:
        p = self.posterior
        return convergence_rates(p.n, p.r, p.sigma, self.response_bound, self.step, self.steps)

    def rdp(self, alpha: ArrayLike) -> np.ndarray:
        alpha = _check_orders(alpha)
        if self.steps == 0:   # f_0 is a prior draw: the release does not depend on the data at all
            return np.zeros(alpha.shape)
        gamma, mu2 = self.rates
        out = self.L * triangle_bound(alpha, self.posterior.rdp, self.posterior.n, gamma, mu2)
        if np.isnan(out).any():
            raise NumericalError("SampleThenOptimiseEvent.rdp: NaN")
        return admissible_only(out, alpha, self.alpha_max)

    @property
    def alpha_max(self) -> float:
        # the inner posterior order p' b exceeds alpha, so orders >= the posterior's alpha_max give +inf
        return math.inf if self.steps == 0 else float(self.posterior.alpha_max)

    def _params(self):  # pragma: no cover - rdp() is overridden
        raise NotImplementedError

    @classmethod
    def _rdp_arrays(cls, alpha, **params):  # pragma: no cover - rdp() is overridden
        raise NotImplementedError

    @property
    def covered(self) -> bool:
        return self.posterior.covered

    def lemmas(self) -> tuple[str, ...]:
        return (self.proof, *self.posterior.lemmas())

    def assumptions(self) -> tuple[str, ...]:
        return (*self.posterior.assumptions()[:-1],
                f"each released path is the sample-then-optimise iterate after {self.steps} gradient steps of size "
                f"{self.step:.6g} from v_0 = 0, with its own prior path and noise draw (not an exact posterior draw)")

    def details(self) -> dict[str, Any]:
        gamma, mu2 = self.rates
        return {"gamma_t": gamma, "mu_t^2": mu2, "posterior": self.posterior.details()}

    def describe(self) -> str:
        return f"sample-then-optimise iterate (t={self.steps}, h={self.step:.6g}, L={self.L}) of {self.posterior.describe()}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "posterior": self.posterior.to_dict(), "step": self.step, "steps": self.steps,
                "L": self.L}

    @classmethod
    def from_fields(cls, d: dict[str, Any]) -> SampleThenOptimiseEvent:
        body = dict(d)
        body["posterior"] = event_from_dict(body["posterior"])
        return cls(**body)
