"""SGLD on the Bayesian linear regression counterexample of seed 004 (sec. 4.2, App. A.2-A.3).

* :func:`counterexample_datasets` (eq. (7)), :func:`ptr_datasets` (eq. (8)) and :class:`RatioDomain`
  (eq. (5)) - the neighbouring pair and the data domain;
* :func:`simulate_sgld` - a Monte Carlo simulator of eq. (3): cyclic (one shuffle, then fixed
  order), reshuffled every epoch, or sampled with replacement; any batch size; the prior or a fixed
  initialisation;
* :func:`fixed_order_law` - the exact Gaussian law of the iterate for any dataset and any fixed
  sequence of batches (the affine moment recursion, step by step);
* :class:`CyclicSGLD` - exact iterate laws of cyclic SGLD with batch size 1 on D1 and D2 at any
  step t (epoch ends and inside an epoch, and t = inf): N(mu_t, s_t^2) under D1, the uniform mixture
  (1/n) sum_r N(mu_t^r, (s_t^r)^2) under D2 (r = position of the odd record; Lemma A.1, Cor. A.1).

Numerics (docs/notes/seed004_sgld.md, sec. 6.2). At the Figure-1 parameters 1 - lambda = 2.7e-7, the means
are about 1.2e6 and the gaps that matter are 1e-3 to 1e-9, so the paper's formulas (eq. (18))
in float64 lose the signal to cancellation (tests/audit/samplers/test_sgld_reference.py shows it). :class:`CyclicSGLD`
never forms 1 - lambda by subtraction: it uses the gaps g = (eta/2) A and g^ = (eta/2)(alpha + n x_h^2 beta / 4) with log lambda = log1p(-g), every
1 - x^k as -expm1(k log x), and works in coordinates centred on the stationary mean
mu_inf = n c x_h^2 beta / A (the D1 posterior mean, Claim D.1): phi = theta - mu_inf. A normal step
is phi <- lambda phi + noise, the odd step phi <- lambda^ phi + b^ + noise with
b^ = -(3/8) eta alpha mu_inf (Claim D.4). The mean gaps mu_t - mu_t^r are computed directly as sums of
positive terms (no difference of two large numbers).

Initialisation. The paper implies theta_0 ~ prior N(0, 1/alpha) (E[theta_0] = 0 in Lemma A.2 and the
(1/alpha)(...)^(2(k+1)) term of eq. (20)); ``init="fixed"`` starts at ``theta0`` with variance 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.special import ndtr

from ... import validation as v
from ...accounting.mixtures import Mixture1D, chernoff_tail_bound, log_tail_probability
from ...errors import InvalidParameterError
from ...models.gp.linear_regression import BayesianLinearRegression

ORDERS = ("cyclic", "reshuffle", "replacement")
INITS = ("prior", "fixed")


# ------------------------------------------------------------------------------------------------
# Data: the neighbouring pairs and the domain
# ------------------------------------------------------------------------------------------------

def counterexample_datasets(n: int, c: float, x_h: float) -> tuple[tuple[np.ndarray, np.ndarray],
                                                                     tuple[np.ndarray, np.ndarray]]:
    """D1 = {(x_h, c x_h)} x n and D2 = D1 with the last record replaced by (x_h/2, c x_h/2) (eq. (7))."""
    n = v.integer("n", n, minimum=1)
    c = v.positive("c", c)
    x_h = v.positive("x_h", x_h)
    x1 = np.full(n, x_h)
    x2 = x1.copy()
    x2[-1] = 0.5 * x_h
    return (x1, c * x1), (x2, c * x2)


def ptr_datasets(n1: int, rho3: float, x_h: float):
    """D3, D4 of eq. (8): the pair of eq. (7) with c = n1^rho3 (Claim 4.2)."""
    n1 = v.integer("n1", n1, minimum=1)
    rho3 = v.positive("rho3", rho3)
    return counterexample_datasets(n1, float(n1) ** rho3, x_h)


@dataclass(frozen=True)
class RatioDomain:
    """The domain of eq. (5): n records with x_l <= x_i <= x_h, x_i, y_i > 0 and |y_i/x_i - c| <= n^gamma1."""

    n: int
    gamma1: float
    x_h: float
    x_l: float
    c: float

    def __post_init__(self):
        object.__setattr__(self, "n", v.integer("n", self.n, minimum=1))
        object.__setattr__(self, "gamma1", v.positive("gamma1", self.gamma1))
        object.__setattr__(self, "x_h", v.positive("x_h", self.x_h))
        object.__setattr__(self, "x_l", v.positive("x_l", self.x_l))
        object.__setattr__(self, "c", v.positive("c", self.c))
        if not self.x_l <= self.x_h:
            raise InvalidParameterError("x_l", f"<= x_h = {self.x_h:g}", self.x_l)

    @property
    def half_width(self) -> float:
        """n^gamma1: the allowed deviation of y_i / x_i from c."""
        return float(self.n) ** self.gamma1

    def records_ok(self, x, y) -> np.ndarray:
        """Per-record membership (boolean array) of the conditions of eq. (5)."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio_ok = np.abs(y / x - self.c) <= self.half_width
        return (x >= self.x_l) & (x <= self.x_h) & (x > 0) & (y > 0) & ratio_ok

    def contains(self, x, y) -> bool:
        """Whether the dataset (x, y) lies in the domain (n records, every record admissible)."""
        x = np.asarray(x, dtype=float).reshape(-1)
        y = np.asarray(y, dtype=float).reshape(-1)
        return x.shape == y.shape == (self.n,) and bool(np.all(self.records_ok(x, y)))


# ------------------------------------------------------------------------------------------------
# Monte Carlo simulator of eq. (3)
# ------------------------------------------------------------------------------------------------

def _check_sgld(x, y, alpha, beta, eta, steps, batch, order, init):
    x = v.finite_array("x", x, ndim=1)
    y = v.responses("y", y, x.shape[0])
    model = BayesianLinearRegression(alpha, beta)
    eta = v.positive("eta", eta)
    steps = v.integer("steps", steps, minimum=0)
    batch = v.integer("batch", batch, minimum=1)
    if batch > x.shape[0]:
        raise InvalidParameterError("batch", f"<= n = {x.shape[0]}", batch)
    if order not in ORDERS:
        raise InvalidParameterError("order", f"one of {ORDERS}", order)
    if init not in INITS:
        raise InvalidParameterError("init", f"one of {INITS}", init)
    return x, y, model, eta, steps, batch


def simulate_sgld(x, y, *, alpha: float, beta: float, eta: float, steps: int, chains: int,
                  rng: np.random.Generator, order: str = "cyclic", batch: int = 1, init: str = "prior",
                  theta0: float = 0.0) -> np.ndarray:
    """Final iterates theta_steps of ``chains`` independent SGLD runs (eq. (3)) on the data (x, y):

        theta <- theta + (eta/2) [ -alpha theta + (n/b) sum_{i in batch} beta (y_i - theta x_i) x_i ] + sqrt(eta) xi

    ``order``: "cyclic" (one random shuffle per chain, then batches of consecutive records in that
    order, cyclically - the scheme the paper analyses), "reshuffle" (a fresh shuffle every epoch),
    "replacement" (every batch drawn uniformly with replacement, as eq. (3) is written).
    ``init``: "prior" (theta_0 ~ N(0, 1/alpha)) or "fixed" (theta_0 = ``theta0``)."""
    x, y, model, eta, steps, batch = _check_sgld(x, y, alpha, beta, eta, steps, batch, order, init)
    chains = v.integer("chains", chains, minimum=1)
    rng = v.generator("rng", rng)
    n = x.shape[0]
    theta = rng.normal(0.0, 1.0 / math.sqrt(model.alpha), chains) if init == "prior" else np.full(chains, float(theta0))
    rows = np.arange(chains)[:, None]
    perm = np.argsort(rng.random((chains, n)), axis=1) if order != "replacement" else None
    scale = n / batch
    for j in range(steps):
        if order == "replacement":
            idx = rng.integers(0, n, size=(chains, batch))
        else:
            start = (j * batch) % n
            if order == "reshuffle" and j > 0 and start < batch:   # a new epoch starts inside this batch
                perm = np.argsort(rng.random((chains, n)), axis=1)
            pos = (start + np.arange(batch)) % n
            assert perm is not None                                  # drawn above for every order but "replacement"
            idx = perm[rows, pos[None, :]]
        xb, yb = x[idx], y[idx]
        grad = model.grad_log_prior(theta) + scale * np.sum(model.grad_log_likelihood(theta[:, None], xb, yb), axis=1)
        theta = theta + 0.5 * eta * grad + math.sqrt(eta) * rng.standard_normal(chains)
    return theta


def fixed_order_law(x, y, batches, *, alpha: float, beta: float, eta: float, init: str = "prior",
                    theta0: float = 0.0) -> tuple[float, float]:
    """Exact (mean, variance) of the SGLD iterate after the given sequence of batches (each an array
    of record indices; the same record may repeat). Every step is theta <- a theta + b + sqrt(eta) xi with
    a = 1 - (eta/2)(alpha + (n/|B|) beta sum_B x_i^2), b = (eta/2)(n/|B|) beta sum_B x_i y_i, so the law
    is Gaussian (Cor. A.1): m <- a m + b, s^2 <- a^2 s^2 + eta."""
    x = v.finite_array("x", x, ndim=1)
    y = v.responses("y", y, x.shape[0])
    model = BayesianLinearRegression(alpha, beta)
    eta = v.positive("eta", eta)
    if init not in INITS:
        raise InvalidParameterError("init", f"one of {INITS}", init)
    n = x.shape[0]
    m, s2 = (0.0, 1.0 / model.alpha) if init == "prior" else (float(theta0), 0.0)
    for B in batches:
        B = np.atleast_1d(np.asarray(B, dtype=int))
        k = n / B.shape[0]
        a = 1.0 - 0.5 * eta * (model.alpha + k * model.beta * float(np.sum(x[B] ** 2)))
        b = 0.5 * eta * k * model.beta * float(np.sum(x[B] * y[B]))
        m, s2 = a * m + b, a * a * s2 + eta
    return m, s2


def cyclic_batches(order, steps: int, batch: int = 1) -> list[np.ndarray]:
    """The batches of cyclic SGLD for a fixed permutation ``order`` (records visited in that order)."""
    order = np.asarray(order, dtype=int)
    n = order.shape[0]
    return [order[(j * batch + np.arange(batch)) % n] for j in range(v.integer("steps", steps, minimum=0))]


# ------------------------------------------------------------------------------------------------
# Exact laws of cyclic SGLD, batch 1, on D1 / D2 (stable, centred form)
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class IterateLaws:
    """The laws of the SGLD iterate theta_t under D1 and D2, in coordinates centred on the D1 mean at
    step t: D1 is N(0, var1) and the D2 component r is N(-gaps[r], vars2[r]) (equal weights 1/n).
    ``mean1`` is the D1 mean in the coordinates phi = theta - mu_inf (so theta = mu_inf + mean1 + ...)."""

    t: float
    mu_inf: float
    mean1: float
    var1: float
    gaps: np.ndarray        # mu_t - mu_t^r, r = 1..n  (D1 mean minus component mean)
    vars2: np.ndarray       # (s_t^r)^2

    @property
    def sds2(self) -> np.ndarray:
        return np.sqrt(self.vars2)

    def indicator(self) -> float:
        """The Figure-1 quantity (1/n) sum_r (mu_t - mu_t^r)^2 / (s_t^r)^2."""
        return float(np.mean(self.gaps ** 2 / self.vars2))

    def gaussian(self) -> Mixture1D:
        """The D1 law, centred: N(0, var1)."""
        return Mixture1D.gaussian(0.0, math.sqrt(self.var1))

    def mixture(self) -> Mixture1D:
        """The D2 law, centred on the D1 mean: (1/n) sum_r N(-gap_r, var2_r)."""
        return Mixture1D(-self.gaps, self.sds2)

    def tail_probability(self) -> float:
        """P(theta_hat_t > mu_t | D2) = (1/n) sum_r Phi(-gap_r / s_r) (the event S of Lemma A.6)."""
        return float(np.mean(ndtr(-self.gaps / self.sds2)))

    def log_tail_probability(self) -> float:
        return log_tail_probability(0.0, -self.gaps, self.sds2)

    def chernoff_bound(self) -> float:
        """Lemma 4.4: (1/n) sum_r exp(-gap_r^2 / (2 s_r^2)) >= P(theta_hat_t > mu_t)."""
        return chernoff_tail_bound(self.gaps, self.sds2)


def _pow(log_x: float, k):
    """x^k from log x (k scalar or array; k = inf gives 0 for x < 1)."""
    with np.errstate(invalid="ignore"):
        return np.exp(np.multiply(k, log_x))


def _one_minus_pow(log_x: float, k):
    """1 - x^k = -expm1(k log x), no cancellation for x near 1."""
    with np.errstate(invalid="ignore"):
        return -np.expm1(np.multiply(k, log_x))


@dataclass(frozen=True)
class CyclicSGLD:
    """Cyclic SGLD with batch size 1 on D1 / D2 of eq. (7), exact laws at every step.

    Step size ``eta`` defaults to the paper's 2 / (alpha + n x_h^2 beta)^2 (sec. 4.2); Claim 4.2 uses
    1 / (alpha + n x_h^2 beta)^2. ``init``: "prior" (theta_0 ~ N(0, 1/alpha), implied by the paper) or
    "fixed" (theta_0 = ``theta0``). The shuffle is uniform, so under D2 the position r of the odd record
    is uniform on {1..n} ("r-order", sec. 4.2)."""

    n: int
    alpha: float
    beta: float
    x_h: float
    c: float
    eta: float | None = None
    init: str = "prior"
    theta0: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "n", v.integer("n", self.n, minimum=1))
        for name in ("alpha", "beta", "x_h", "c"):
            object.__setattr__(self, name, v.positive(name, getattr(self, name)))
        A = self.alpha + self.n * self.x_h ** 2 * self.beta
        eta = 2.0 / A ** 2 if self.eta is None else v.positive("eta", self.eta)
        object.__setattr__(self, "eta", eta)
        if self.init not in INITS:
            raise InvalidParameterError("init", f"one of {INITS}", self.init)
        object.__setattr__(self, "theta0", v._as_float("theta0", self.theta0))
        if not 0.5 * eta * A < 1.0:
            raise InvalidParameterError("eta", f"< 2 / (alpha + n x_h^2 beta) = {2.0 / A:.6g} (so that 0 < lambda < 1)", eta)

    # -- constants (eq. (17)) ---------------------------------------------------------------------
    @property
    def step_size(self) -> float:
        """``eta`` as set by ``__post_init__`` (None there means the paper's 2 / A^2), never None."""
        assert self.eta is not None
        return self.eta

    @cached_property
    def A(self) -> float:
        """alpha + n x_h^2 beta (the D1 posterior precision)."""
        return self.alpha + self.n * self.x_h ** 2 * self.beta

    @cached_property
    def g(self) -> float:
        """1 - lambda = (eta/2) A."""
        return 0.5 * self.step_size * self.A

    @cached_property
    def g_hat(self) -> float:
        """1 - lambda^ = (eta/2)(alpha + n x_h^2 beta / 4)."""
        return 0.5 * self.step_size * (self.alpha + 0.25 * self.n * self.x_h ** 2 * self.beta)

    @cached_property
    def log_lam(self) -> float:
        return math.log1p(-self.g)

    @cached_property
    def log_lam_hat(self) -> float:
        return math.log1p(-self.g_hat)

    @cached_property
    def log_ratio(self) -> float:
        """log(lambda^ / lambda) = log1p((g - g^) / (1 - g)) > 0, with g - g^ = (3/8) eta n x_h^2 beta."""
        return math.log1p(0.375 * self.step_size * self.n * self.x_h ** 2 * self.beta / (1.0 - self.g))

    @cached_property
    def log_P(self) -> float:
        """log of the per-epoch contraction P = lambda^ lambda^(n-1)."""
        return self.log_lam_hat + (self.n - 1) * self.log_lam

    @cached_property
    def mu_inf(self) -> float:
        """n c x_h^2 beta / A: the D1 posterior mean and SGLD's stationary mean under D1 (Claim D.1)."""
        return self.n * self.c * self.x_h ** 2 * self.beta / self.A

    @cached_property
    def b_hat(self) -> float:
        """Offset of the odd step in centred coordinates: rho^ - (1 - lambda^) mu_inf = -(3/8) eta alpha mu_inf."""
        return -0.375 * self.step_size * self.alpha * self.mu_inf

    @cached_property
    def one_minus_lam2(self) -> float:
        """1 - lambda^2 = g (2 - g)."""
        return self.g * (2.0 - self.g)

    def noise_sum(self, j):
        """eta (1 - lambda^(2j)) / (1 - lambda^2): variance added by j normal steps (j may be an array / inf)."""
        return self.step_size * _one_minus_pow(2.0 * self.log_lam, j) / self.one_minus_lam2

    @property
    def phi0(self) -> tuple[float, float]:
        """(mean, variance) of the initial iterate in centred coordinates."""
        if self.init == "prior":
            return -self.mu_inf, 1.0 / self.alpha
        return self.theta0 - self.mu_inf, 0.0

    def constants(self) -> dict:
        """The constants of eq. (17) and derived quantities (lambda, lambda^, rho, rho^ in float64)."""
        lam, lam_hat = 1.0 - self.g, 1.0 - self.g_hat
        rho = 0.5 * self.step_size * self.n * self.c * self.x_h ** 2 * self.beta
        return {"A": self.A, "eta": self.step_size, "lambda": lam, "lambda_hat": lam_hat, "one_minus_lambda": self.g,
                "one_minus_lambda_hat": self.g_hat, "rho": rho, "rho_hat": 0.25 * rho, "P": math.exp(self.log_P),
                "mu_inf": self.mu_inf, "stationary_var_D1": self.step_size / self.one_minus_lam2,
                "posterior_var_D1": 1.0 / self.A}

    # -- one epoch of D2 with the odd record at position r ------------------------------------------
    @cached_property
    def r(self) -> np.ndarray:
        return np.arange(1, self.n + 1, dtype=float)

    def epoch_map(self) -> tuple[float, np.ndarray, np.ndarray]:
        """(log P, Q_r, V_r): one epoch under D2 with the odd record at position r maps a Gaussian
        N(m, s^2) (centred) to N(P m + Q_r, P^2 s^2 + V_r), with
        Q_r = b^ lambda^(n-r) and V_r = lambda^(2(n-r)) (lambda^2 S(r-1) + eta) + S(n-r),
        S(j) = eta (1 - lambda^(2j)) / (1 - lambda^2)."""
        r, n = self.r, self.n
        w = _pow(self.log_lam, n - r)
        lam_hat2 = math.exp(2.0 * self.log_lam_hat)
        V = w * w * (lam_hat2 * self.noise_sum(r - 1) + self.step_size) + self.noise_sum(n - r)
        return self.log_P, self.b_hat * w, V

    def _epoch_end(self, K):
        """(mean1, var1, gaps, vars2) after K whole epochs (K = inf: stationary)."""
        m0, v0 = self.phi0
        logP, Q, V = self.epoch_map()
        one_m_P = _one_minus_pow(logP, 1.0)
        one_m_P2 = _one_minus_pow(2.0 * logP, 1.0)
        if math.isinf(K):
            mean1, var1 = 0.0, self.noise_sum(math.inf)
            gaps = -Q / one_m_P
            vars2 = V / one_m_P2
            return mean1, var1, gaps, vars2
        t = K * self.n
        mean1 = m0 * math.exp(t * self.log_lam)
        var1 = v0 * math.exp(2.0 * t * self.log_lam) + self.noise_sum(t)
        PK = math.exp(K * logP)
        geo = _one_minus_pow(logP, K) / one_m_P            # (1 - P^K) / (1 - P)
        # mu_t - mu^r_t = m0 (lambda^(Kn) - P^K) - Q_r (1 - P^K)/(1 - P);  lambda^(Kn) - P^K = -lambda^(Kn) expm1(K log(lam^/lam))
        gaps = -m0 * math.exp(t * self.log_lam) * math.expm1(K * self.log_ratio) - Q * geo
        vars2 = v0 * PK * PK + V * _one_minus_pow(2.0 * logP, K) / one_m_P2
        return mean1, var1, gaps, vars2

    def law(self, t) -> IterateLaws:
        """Exact laws of theta_t under D1 and D2 (any integer t >= 0, or t = inf for the stationary laws)."""
        if isinstance(t, float) and math.isinf(t) and t > 0:
            mean1, var1, gaps, vars2 = self._epoch_end(math.inf)
            return IterateLaws(math.inf, self.mu_inf, mean1, var1, gaps, vars2)
        t = v.integer("t", t, minimum=0)
        K, j = divmod(t, self.n)
        mean1, var1, gaps, vars2 = self._epoch_end(K)
        if j == 0:
            return IterateLaws(t, self.mu_inf, mean1, var1, gaps, vars2)
        # j more steps inside epoch K+1: component r has met its odd record iff r <= j
        r = self.r
        lam_j = math.exp(j * self.log_lam)
        met = r <= j
        rm1 = np.where(met, r - 1, 0.0)
        jr = np.where(met, j - r, 0.0)
        lam_rm1 = _pow(self.log_lam, rm1)
        lam_jr = _pow(self.log_lam, jr)
        lam_hat = math.exp(self.log_lam_hat)
        # before the odd step: lambda^(r-1) scaling; the odd step; then j - r normal steps
        # gap (met) = lambda^(j-r) [ lambda^(r-1) (lambda^ gap_K + (lambda - lambda^) mean1_K) - b^ ],  lambda - lambda^ = -(g - g^)
        g_diff = 0.375 * self.step_size * self.n * self.x_h ** 2 * self.beta
        gap_met = lam_jr * (lam_rm1 * (lam_hat * gaps - g_diff * mean1) - self.b_hat)
        var_met = lam_jr ** 2 * (lam_hat ** 2 * (lam_rm1 ** 2 * vars2 + self.noise_sum(rm1)) + self.step_size) + self.noise_sum(jr)
        gaps_t = np.where(met, gap_met, lam_j * gaps)
        vars_t = np.where(met, var_met, lam_j ** 2 * vars2 + self.noise_sum(j))
        mean1_t = mean1 * lam_j
        var1_t = var1 * lam_j ** 2 + self.noise_sum(j)
        return IterateLaws(t, self.mu_inf, mean1_t, var1_t, gaps_t, vars_t)

def posterior_pair(setting: CyclicSGLD) -> tuple[tuple[float, float], tuple[float, float]]:
    """Exact posteriors (mean, variance) of D1 and D2 (Lemma 4.1) for the setting's pair, with the mean of
    D2 returned as the gap mu_D1 - mu_D2 computed without cancellation.

    mu_D1 = n c x^2 beta / A, mu_D2 = (n - 3/4) c x^2 beta / (A - (3/4) x^2 beta), so
    mu_D1 - mu_D2 = c x^2 beta (3/4) alpha / (A (A - (3/4) x^2 beta))."""
    s = setting
    xb = s.x_h ** 2 * s.beta
    A2 = s.A - 0.75 * xb
    gap = s.c * xb * 0.75 * s.alpha / (s.A * A2)
    return (s.mu_inf, 1.0 / s.A), (gap, 1.0 / A2)
