"""Divergences between univariate Gaussian mixtures (one side usually a single Gaussian).

Seed 004 (SGLD privacy), sec. 4.2: on the neighbouring datasets D1, D2 of eq. (7) the cyclic-SGLD
iterate is a Gaussian under D1 and a uniform mixture of n Gaussians under D2 (one component per
position r of the odd record). Its exact privacy loss is a divergence between a Gaussian and an
n-component mixture, which has no closed form. Everything here is exact up to floating point: every
component enters every density and every probability (no subsampling; n = 1 149 019 at the
Figure-1 parameters), densities in the log domain (log-sum-exp over chunks of components),
probabilities as sums of normal CDFs / survival functions.

* :class:`Mixture1D`: sum_r w_r N(mean_r, sd_r^2), equal weights by default; log-density (and its
  derivative) at a batch of points, CDF / survival function.
* :func:`renyi_divergence`: D_nu(P || Q) = log(int p^nu q^(1-nu)) / (nu - 1) for any order nu > 1,
  +inf when the widest component of P is too wide for the widest of Q (nu sdQ^2 + (1 - nu) sdP^2 <= 0:
  the integrand does not decay), else a composite Gauss-Legendre quadrature of the cancellation-free
  integrand q (e^(nu L) - 1 - nu (e^L - 1)), L = log p - log q (its integral is
  e^((nu-1) D) - 1, because int q (e^L - 1) = 0).
* :func:`hockey_stick_delta` / :func:`hockey_stick_epsilon`: delta(eps) = int (p - e^eps q)_+, the
  exact (eps, delta) profile of the pair (Balle et al. 2018, Thm 1 / Definition of the hockey-stick
  divergence). The set {L > eps} is found on a grid and its end points refined by Newton's method on
  the exact log-densities; delta is then a sum of exact interval probabilities.
* :func:`test_epsilon_lower_bound`: the epsilon that a single distinguishing event S proves
  *not* achievable, log((P(S) - delta) / Q(S)) (Definition 1 with one set; seed 004, Lemma A.6).
* :func:`chernoff_tail_bound`: Lemma 4.4, P(mixture > mu) <= (1/n) sum_r exp(-(mu - m_r)^2 / (2 s_r^2)).

A :class:`PairTable` evaluates log p and log q once on shared quadrature nodes so that several
orders and both directions reuse the expensive mixture densities.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import log_ndtr, logsumexp, ndtr

from .. import validation as v
from ..errors import InvalidParameterError, NumericalError

CHUNK = 8192                # components per (cache-sized) block of a log-density evaluation
XBATCH = 16                 # points per block
TAIL_SDS = 14.0             # quadrature / scan range: component means -+ TAIL_SDS widest sds
GL_NODES = 10               # Gauss-Legendre nodes per panel
PANEL_SDS = 1.0             # quadrature panel width in narrowest standard deviations
NEWTON_TOL = 1e-13          # relative tolerance of a refined crossing point (in units of the local sd)
_LOG_2PI_HALF = 0.5 * math.log(2.0 * math.pi)


# ------------------------------------------------------------------------------------------------
# Mixtures
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Mixture1D:
    """The univariate Gaussian mixture sum_r w_r N(means[r], sds[r]^2) (equal weights by default).

    A single Gaussian is the one-component mixture (:meth:`gaussian`)."""

    means: np.ndarray
    sds: np.ndarray
    weights: np.ndarray | None = None
    _log_w: np.ndarray = field(init=False, repr=False)
    _inv_sd: np.ndarray = field(init=False, repr=False)
    _log_sd: np.ndarray = field(init=False, repr=False)
    _a: np.ndarray = field(init=False, repr=False)
    _w: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        m = v.finite_array("means", self.means, ndim=(0, 1)).reshape(-1)
        s = v.finite_array("sds", self.sds, ndim=(0, 1)).reshape(-1)
        if s.shape == (1,) and m.shape[0] > 1:
            s = np.full(m.shape, s[0])
        if s.shape != m.shape:
            raise InvalidParameterError("sds", f"one standard deviation per mean ({m.shape[0]})", f"{s.shape[0]}")
        if np.any(~(s > 0)):
            raise InvalidParameterError("sds", "> 0", s[~(s > 0)][:6])
        if self.weights is None:
            log_w = np.full(m.shape, -math.log(m.shape[0]))
            w = None
        else:
            w = v.finite_array("weights", self.weights, ndim=1)
            if w.shape != m.shape or np.any(w < 0) or not w.sum() > 0:
                raise InvalidParameterError("weights", f"{m.shape[0]} non-negative numbers with a positive sum", w)
            w = w / w.sum()
            with np.errstate(divide="ignore"):
                log_w = np.log(w)
        object.__setattr__(self, "means", m)
        object.__setattr__(self, "sds", s)
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "_log_w", log_w - np.log(s) - _LOG_2PI_HALF)
        object.__setattr__(self, "_inv_sd", 1.0 / s)
        object.__setattr__(self, "_log_sd", np.log(s))
        object.__setattr__(self, "_a", 1.0 / (math.sqrt(2.0) * s))
        object.__setattr__(self, "_w", np.full(m.shape, 1.0 / m.shape[0]) if w is None else w)

    @classmethod
    def gaussian(cls, mean: float, sd: float) -> Mixture1D:
        return cls(np.array([float(mean)]), np.array([float(sd)]))

    @property
    def size(self) -> int:
        return int(self.means.shape[0])

    @property
    def sd_max(self) -> float:
        return float(self.sds.max())

    @property
    def sd_min(self) -> float:
        return float(self.sds.min())

    def mean(self) -> float:
        return float(np.dot(self._w, self.means))

    def variance(self) -> float:
        mu = self.mean()
        return float(np.dot(self._w, self.sds ** 2 + (self.means - mu) ** 2))

    # -- densities ---------------------------------------------------------------------------------
    def logpdf(self, x: ArrayLike) -> np.ndarray:
        """log density at the points x (any shape), every component included (log-sum-exp)."""
        return self._logpdf(x, derivative=False)[0]

    def logpdf_and_dlogpdf(self, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(log p(x), d/dx log p(x)) at the points x."""
        logp, dlogp = self._logpdf(x, derivative=True)
        assert dlogp is not None  # derivative=True always computes it
        return logp, dlogp

    def _logpdf(self, x: ArrayLike, derivative: bool) -> tuple[np.ndarray, np.ndarray | None]:
        # e_r(x) = c_r - (a_r (x - mean_r))^2 with a_r = 1/(sqrt(2) sd_r), c_r = log w_r - log sd_r
        # - log sqrt(2 pi); a running log-sum-exp over cache-sized blocks of components, in place.
        x = np.asarray(x, dtype=float)
        flat = x.reshape(-1)
        out = np.empty(flat.shape)
        dout = np.empty(flat.shape if derivative else 0)  # the derivative, filled only when asked for
        K = self.size
        cb = min(K, CHUNK)
        a, m, c = self._a, self.means, self._log_w
        for i in range(0, flat.shape[0], XBATCH):
            xs = flat[i:i + XBATCH, None]
            B = xs.shape[0]
            run_max = np.full(B, -np.inf)
            run_sum = np.zeros(B)
            run_d = np.zeros(B)
            buf = np.empty((B, cb))
            dbuf = np.empty((B, cb) if derivative else (0, 0))
            for j in range(0, K, cb):
                sl = slice(j, min(j + cb, K))
                k = sl.stop - sl.start
                t = buf[:, :k]
                np.subtract(xs, m[None, sl], out=t)
                t *= a[None, sl]
                if derivative:
                    d = dbuf[:, :k]
                    np.multiply(t, a[None, sl], out=d)
                    d *= -2.0
                np.square(t, out=t)
                np.subtract(c[None, sl], t, out=t)
                new_max = np.maximum(run_max, t.max(axis=1))
                with np.errstate(invalid="ignore"):
                    scale = np.exp(np.where(np.isfinite(run_max), run_max - new_max, -np.inf))
                t -= new_max[:, None]
                np.exp(t, out=t)
                run_sum = run_sum * scale + t.sum(axis=1)
                if derivative:
                    d *= t
                    run_d = run_d * scale + d.sum(axis=1)
                run_max = new_max
            out[i:i + B] = run_max + np.log(run_sum)
            if derivative:
                dout[i:i + B] = run_d / run_sum
        if np.isnan(out).any():
            raise NumericalError("Mixture1D.logpdf: NaN")
        return out.reshape(x.shape), (dout.reshape(x.shape) if derivative else None)

    # -- probabilities -----------------------------------------------------------------------------
    def _upper(self, a: float) -> float:
        """P(X > a), finite a."""
        z = (a - self.means) * self._inv_sd
        return float(np.dot(self._w, ndtr(-z)))

    def _lower(self, b: float) -> float:
        """P(X <= b), finite b."""
        z = (b - self.means) * self._inv_sd
        return float(np.dot(self._w, ndtr(z)))

    def cdf(self, x: ArrayLike) -> np.ndarray:
        """P(X <= x), exact sum over components (x may be -inf/+inf)."""
        return self._prob(x, upper=False)

    def sf(self, x: ArrayLike) -> np.ndarray:
        """P(X > x), exact sum over components (keeps relative precision in the upper tail)."""
        return self._prob(x, upper=True)

    def _prob(self, x: ArrayLike, upper: bool) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        flat = x.reshape(-1)
        out = np.empty(flat.shape)
        for i, xi in enumerate(flat):
            if np.isnan(xi):
                raise InvalidParameterError("x", "a number (not NaN)", xi)
            if np.isinf(xi):
                out[i] = float((xi < 0) == upper)
            else:
                out[i] = self._upper(xi) if upper else self._lower(xi)
        return out.reshape(x.shape)

    def interval_probability(self, a: float, b: float) -> float:
        """P(a < X <= b) (a <= b; infinite ends allowed), per component in the tail-accurate form."""
        if not a <= b:
            raise InvalidParameterError("interval", "a <= b", (a, b))
        if a == b:
            return 0.0
        if a == -np.inf:
            return 1.0 if b == np.inf else self._lower(b)
        if b == np.inf:
            return self._upper(a)
        za = (a - self.means) * self._inv_sd
        zb = (b - self.means) * self._inv_sd
        upper = za > 0  # both ends in the upper half: difference of survival functions
        p = np.where(upper, ndtr(-za) - ndtr(-zb), ndtr(zb) - ndtr(za))
        return float(np.dot(self._w, np.maximum(p, 0.0)))


def _as_mixture(name: str, m: object) -> Mixture1D:
    if not isinstance(m, Mixture1D):
        raise InvalidParameterError(name, "a privgp.accounting.mixtures.Mixture1D", type(m).__name__)
    return m


# ------------------------------------------------------------------------------------------------
# Renyi divergences
# ------------------------------------------------------------------------------------------------

def renyi_finite(order: float, P: Mixture1D, Q: Mixture1D) -> bool:
    """Whether D_order(P || Q) is finite: the integrand p^nu q^(1-nu) decays in both tails iff
    nu sdQ_max^2 + (1 - nu) sdP_max^2 > 0 (the widest components govern the tails)."""
    return order * Q.sd_max ** 2 + (1.0 - order) * P.sd_max ** 2 > 0.0


def _tilt_range(nu: float, A: Mixture1D, B: Mixture1D) -> tuple[float, float]:
    """Where the integrand a^nu b^(1-nu) lives (finite orders only). With B's widest component b*,
    b >= w* phi_b* and a <= max_a phi_a, so a^nu b^(1-nu) <= max_a phi_a^nu (w* phi_b*)^(1-nu): a Gaussian
    bump per component a, centred at c_a = (nu m_a/s_a^2 - (nu-1) m*/s*^2) / (nu/s_a^2 - (nu-1)/s*^2) with
    scale 1/sqrt(nu/s_a^2 - (nu-1)/s*^2), times at most w*^(1-nu) <= size(B)^(nu-1). Beyond
    z = sqrt(2 (92 + (nu-1) log size(B))) scales of every bump the integrand is below e^-92 ~ 1e-40."""
    j = int(np.argmax(B.sds))
    mb, vb = float(B.means[j]), float(B.sds[j]) ** 2
    va = A.sds ** 2
    den = nu / va - (nu - 1.0) / vb
    centre = (nu * A.means / va - (nu - 1.0) * mb / vb) / den
    spread = 1.0 / np.sqrt(den)
    z = math.sqrt(2.0 * (92.0 + (nu - 1.0) * math.log(B.size)))
    return float(np.min(centre - z * spread)), float(np.max(centre + z * spread))


def _scan_range(P: Mixture1D, Q: Mixture1D, orders: tuple[float, ...] = ()) -> tuple[float, float]:
    """[lo, hi] covering both distributions to TAIL_SDS widest sds and, for every order in ``orders``
    (both directions, where finite), the region where the Renyi integrand lives (:func:`_tilt_range`)."""
    spread = max(P.sd_max, Q.sd_max)
    lo = float(min(P.means.min(), Q.means.min()) - TAIL_SDS * spread)
    hi = float(max(P.means.max(), Q.means.max()) + TAIL_SDS * spread)
    for nu in orders:
        for A, B in ((P, Q), (Q, P)):
            if renyi_finite(nu, A, B):
                a, b = _tilt_range(nu, A, B)
                lo, hi = min(lo, a), max(hi, b)
    return lo, hi


def _quadrature_nodes(P: Mixture1D, Q: Mixture1D, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre nodes and weights on [lo, hi], panels one narrowest sd wide (the
    integrands are smooth on that scale; halving the panels changes the seed-004 values by < 1e-12)."""
    h = PANEL_SDS * min(P.sd_min, Q.sd_min)
    panels = int(min(max(math.ceil((hi - lo) / h), 8), 200_000))
    edges = np.linspace(lo, hi, panels + 1)
    t, w = np.polynomial.legendre.leggauss(GL_NODES)
    half = 0.5 * np.diff(edges)
    mid = 0.5 * (edges[1:] + edges[:-1])
    x = (mid[:, None] + half[:, None] * t[None, :]).reshape(-1)
    wx = (half[:, None] * w[None, :]).reshape(-1)
    return x, wx


@dataclass(frozen=True, eq=False)
class PairTable:
    """log p and log q of a pair of mixtures on shared quadrature nodes (computed once), so that
    several orders and both directions reuse the expensive mixture densities."""

    P: Mixture1D
    Q: Mixture1D
    orders: tuple[float, ...]
    x: np.ndarray
    w: np.ndarray
    lp: np.ndarray
    lq: np.ndarray

    @classmethod
    def build(cls, P: Mixture1D, Q: Mixture1D, orders: Iterable[float] = (2.0,)) -> PairTable:
        """Nodes covering the Renyi integrands of every order in ``orders`` (both directions)."""
        P, Q = _as_mixture("P", P), _as_mixture("Q", Q)
        checked = tuple(v.greater_than("order", o, 1.0) for o in orders)
        lo, hi = _scan_range(P, Q, checked)
        x, w = _quadrature_nodes(P, Q, lo, hi)
        return cls(P, Q, checked, x, w, P.logpdf(x), Q.logpdf(x))

    def renyi(self, order: float, direction: str = "PQ") -> float:
        """D_order(P || Q) ("PQ") or D_order(Q || P) ("QP") from the table (+inf when not finite)."""
        nu = v.greater_than("order", order, 1.0)
        if direction == "PQ":
            A, B, la, lb = self.P, self.Q, self.lp, self.lq
        elif direction == "QP":
            A, B, la, lb = self.Q, self.P, self.lq, self.lp
        else:
            raise InvalidParameterError("direction", "'PQ' or 'QP'", direction)
        if not renyi_finite(nu, A, B):
            return math.inf
        if not any(math.isclose(nu, o, rel_tol=1e-12) for o in self.orders):
            raise InvalidParameterError("order", f"one of the orders the table was built for {self.orders}", nu)
        return _renyi_from_logs(nu, la, lb, self.w)


def _renyi_from_logs(nu: float, la: np.ndarray, lb: np.ndarray, w: np.ndarray) -> float:
    """D_nu = log(int a^nu b^(1-nu)) / (nu - 1) from log-densities at quadrature nodes with weights w.

    Large values: the log-integral by log-sum-exp (no overflow). Small ones (log-integral < 1e-2):
    log1p(I) with I = int b (e^(nu L) - 1 - nu (e^L - 1)), L = log a - log b, whose integrand is >= 0 and
    second order in L (int b (e^L - 1) = 0), so nothing cancels."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        g = nu * la + (1.0 - nu) * lb
        g = np.where(np.isfinite(la) | np.isfinite(lb), g, -np.inf)
        log_int = float(logsumexp(g, b=w))
    if math.isnan(log_int):
        raise NumericalError("renyi_divergence: NaN integrand")
    if log_int > 1e-2:
        return log_int / (nu - 1.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        L = la - lb
        small = np.abs(L) <= 0.5
        Ls = np.where(small, L, 0.0)
        near = np.exp(lb) * (np.expm1(nu * Ls) - nu * np.expm1(Ls))
        far = np.exp(g) - nu * np.exp(la) + (nu - 1.0) * np.exp(lb)
        f = np.where(small, near, far)
        f = np.where(np.isfinite(la) | np.isfinite(lb), f, 0.0)
    if np.isnan(f).any():
        raise NumericalError("renyi_divergence: NaN integrand")
    integral = float(np.dot(w, np.maximum(f, 0.0)))
    return max(math.log1p(integral) / (nu - 1.0), 0.0)


def renyi_divergence(order: float, P: Mixture1D, Q: Mixture1D) -> float:
    """D_order(P || Q) between univariate Gaussian mixtures (exact up to quadrature, every component
    used); +inf when the widest component of P is too wide for Q at this order."""
    nu = v.greater_than("order", order, 1.0)
    P, Q = _as_mixture("P", P), _as_mixture("Q", Q)
    if not renyi_finite(nu, P, Q):
        return math.inf
    return PairTable.build(P, Q, orders=(nu,)).renyi(nu, "PQ")


# ------------------------------------------------------------------------------------------------
# Hockey-stick divergence (the exact (epsilon, delta) profile of the pair)
# ------------------------------------------------------------------------------------------------

class _Profile:
    """delta(eps) = int (p - e^eps q)_+ with the level sets {L > eps} of L = log p - log q."""

    def __init__(self, P: Mixture1D, Q: Mixture1D, grid: int | None = None):
        self.P, self.Q = P, Q
        lo, hi = _scan_range(P, Q)
        h = 0.5 * min(P.sd_min, Q.sd_min)
        G = grid if grid is not None else int(min(max(math.ceil((hi - lo) / h), 64), 200_000))
        self.x = np.linspace(lo, hi, G)
        self.L = P.logpdf(self.x) - Q.logpdf(self.x)
        self.evaluations = G

    def _L_and_dL(self, x: float) -> tuple[float, float]:
        lp, dp = self.P.logpdf_and_dlogpdf(np.array([x]))
        lq, dq = self.Q.logpdf_and_dlogpdf(np.array([x]))
        self.evaluations += 1
        return float(lp[0] - lq[0]), float(dp[0] - dq[0])

    def _crossing(self, eps: float, a: float, b: float, La: float, Lb: float) -> float:
        """x in [a, b] with L(x) = eps (L(a) - eps and L(b) - eps of opposite signs): safeguarded Newton."""
        fa = La - eps
        x = a + (b - a) * fa / (La - Lb) if La != Lb else 0.5 * (a + b)
        scale = max(self.P.sd_min, self.Q.sd_min)
        for _ in range(60):
            Lx, dLx = self._L_and_dL(x)
            fx = Lx - eps
            if fx == 0.0:
                return x
            if (fx > 0) == (fa > 0):
                a, fa = x, fx
            else:
                b = x
            step = fx / dLx if dLx != 0 else math.inf
            x_new = x - step
            if not (min(a, b) < x_new < max(a, b)):
                x_new = 0.5 * (a + b)
            if abs(x_new - x) <= NEWTON_TOL * scale or abs(b - a) <= NEWTON_TOL * scale:
                return x_new
            x = x_new
        return x

    def level_set(self, eps: float) -> list[tuple[float, float]]:
        """The intervals of {L > eps} (ends -inf / +inf where the set reaches the edge of the scan)."""
        above = self.L > eps
        if not above.any():
            return []
        out: list[tuple[float, float]] = []
        idx = np.flatnonzero(np.diff(above.astype(np.int8)))
        ends = []
        for i in idx:
            ends.append(self._crossing(eps, self.x[i], self.x[i + 1], self.L[i], self.L[i + 1]))
        start = -math.inf if above[0] else None
        k = 0
        for i in idx:
            if above[i]:        # leaving the set
                assert start is not None  # above[i] holds after entering (or from the left edge)
                out.append((start, ends[k]))
                start = None
            else:               # entering
                start = ends[k]
            k += 1
        if start is not None:
            out.append((start, math.inf))
        return out

    def delta_and_slope(self, eps: float) -> tuple[float, float]:
        """(delta(eps), d delta / d eps = -e^eps Q({L > eps}))."""
        pP = pQ = 0.0
        for a, b in self.level_set(eps):
            pP += self.P.interval_probability(a, b)
            pQ += self.Q.interval_probability(a, b)
        if pQ > 0:   # e^eps Q(S) without overflow at large eps
            lq = eps + math.log(pQ)
            eq = math.exp(lq) if lq < 700.0 else math.inf
        else:
            eq = 0.0
        return max(pP - eq, 0.0), -eq


def hockey_stick_delta(epsilon: float, P: Mixture1D, Q: Mixture1D) -> float:
    """delta(eps) = int (p - e^eps q)_+ dx: the smallest delta with P(S) <= e^eps Q(S) + delta for all S."""
    eps = v.nonnegative("epsilon", epsilon)
    P, Q = _as_mixture("P", P), _as_mixture("Q", Q)
    return _Profile(P, Q).delta_and_slope(eps)[0]


def hockey_stick_epsilon(delta: float, P: Mixture1D, Q: Mixture1D, *, tol: float = 1e-9,
                         profile: _Profile | None = None) -> float:
    """The exact epsilon of the pair at delta: the root of int (p - e^eps q)_+ = delta (0 when the total
    variation is <= delta). The value returned is the largest eps found with delta(eps) > delta, within a
    relative ``tol`` below the root: as the epsilon of one neighbouring pair it is a valid lower bound
    on the epsilon of the mechanism."""
    d = v.probability("delta", delta)
    P, Q = _as_mixture("P", P), _as_mixture("Q", Q)
    prof = profile if profile is not None else _Profile(P, Q)
    d0, s0 = prof.delta_and_slope(0.0)
    if d0 <= d:
        return 0.0
    # delta is convex and decreasing in t = e^eps (a supremum of the affine maps t -> P(S) - t Q(S)), with
    # slope -Q({L > eps}): Newton's method in t from t = 1 (where delta > target) stays left of the root and
    # converges monotonically; a bracket [lo, hi] in eps (bisection) safeguards it. The Newton step in t,
    # t' = t + (delta - target) / Q, is taken in eps as eps' = eps + log1p((delta - target) / (e^eps Q)).
    lo, hi = 0.0, None
    cand = max(float(prof.L.max()), 1.0)
    for _ in range(60):   # an upper end of the bracket
        if prof.delta_and_slope(cand)[0] <= d:
            hi = cand
            break
        lo, cand = cand, cand * 2.0
    if hi is None:
        return math.inf
    eps, de, sl = 0.0, d0, s0
    if lo > 0.0:
        de, sl = prof.delta_and_slope(lo)
        eps = lo
    for _ in range(200):
        nxt = eps + math.log1p((de - d) / -sl) if sl < 0 and math.isfinite(sl) else 0.5 * (lo + hi)
        if not (lo < nxt < hi):
            nxt = 0.5 * (lo + hi)
        dn, sn = prof.delta_and_slope(nxt)
        if dn > d:
            step = nxt - eps
            lo, eps, de, sl = nxt, nxt, dn, sn
            if abs(step) <= tol * max(1.0, eps):
                break
        else:
            hi = nxt
        if hi - lo <= tol * max(1.0, hi):
            break
    return float(lo)


# ------------------------------------------------------------------------------------------------
# One distinguishing event, and the Chernoff bound of Lemma 4.4
# ------------------------------------------------------------------------------------------------

def test_epsilon_lower_bound(p_event: ArrayLike, q_event: ArrayLike, delta: float) -> np.ndarray:
    """log((P(S) - delta) / Q(S)): releasing is not (eps, delta)-DP for any eps below this, because
    P(S) > e^eps Q(S) + delta (Definition 1 with the single set S). -inf when P(S) <= delta."""
    p = np.asarray(p_event, dtype=float)
    q = np.asarray(q_event, dtype=float)
    d = v.probability("delta", delta)
    if np.any((p < 0) | (p > 1) | (q < 0) | (q > 1)):
        raise InvalidParameterError("p_event/q_event", "probabilities in [0, 1]", (p, q))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(p > d, np.log(np.maximum(p - d, 0.0)) - np.log(q), -np.inf)
    return out


def chernoff_tail_bound(gaps: ArrayLike, sds: ArrayLike) -> float:
    """Seed 004, Lemma 4.4: P(theta_hat > mu) <= (1/n) sum_r exp(-(mu - m_r)^2 / (2 s_r^2)) for the
    uniform mixture of N(m_r, s_r^2), with gaps = mu - m_r. The Chernoff bound P(Z > a) <= e^(-a^2/2)
    needs a >= 0; a component with gap <= 0 contributes its trivial bound 1 (Lemma A.2 guarantees
    gap > 0 for the paper's pair)."""
    g = v.finite_array("gaps", gaps, ndim=1)
    s = v.finite_array("sds", sds, ndim=1)
    if s.shape != g.shape or np.any(s <= 0):
        raise InvalidParameterError("sds", f"{g.shape[0]} positive standard deviations", s.shape)
    a = g / s
    terms = np.where(a > 0, np.exp(-0.5 * a * a), 1.0)
    return float(np.mean(terms))


def log_tail_probability(threshold: float, means: ArrayLike, sds: ArrayLike) -> float:
    """log P(X > threshold) for the uniform mixture of N(means, sds^2), in the log domain (tails)."""
    m = v.finite_array("means", means, ndim=1)
    s = v.finite_array("sds", sds, ndim=1)
    z = (float(threshold) - m) / s
    return float(logsumexp(log_ndtr(-z)) - math.log(m.shape[0]))
