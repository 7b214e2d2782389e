"""Propose-Test-Sample (seed 004, sec. 4.3, Algorithm 1, App. B-C): one posterior draw of 1-D Bayesian
linear regression without assuming the data lie in the domain of eq. (5).

Steps (Algorithm 1; Lap(b) is Laplace noise of scale b, t = (1/eps) log(1/(2 delta))):

    1-5   clip x_i to [x_l, x_h], y_i <- max(y_i, 0)
    6     n1~ = n1 - t + Lap(1/eps)                               (noisy size)
    7     V = {i : y_i/x_i <= n1~^rho1}                            (drop large ratios)
    8     n2 = |V| - t + Lap(1/eps);   9-11: n2 <= 1 -> null
    12    m = sum_V x y / sum_V x^2
    13    m~ = m + Lap((1/eps) n1~^rho1 (2(n2-1) x_h^2 x_l^2 + x_h^4) / (n2 (n2-1) x_l^4))
    14    W = {i : |y_i/x_i - m~| <= n2^rho2}
    15    n_W = |W| - t + Lap(1/eps);  16-18: n_W < n_min -> null
    19    return a draw from p(theta | W)  (Lemma 4.1)

Claim 4.1: the algorithm is (5 eps, 2 delta)-DP (replace-one neighbours); the intermediate noisy
values returned in :class:`PtsResult` are part of that composition (Claims C.6-C.12).

n_min (eq. (26)). The proof (Claim C.11) needs W in the domain D(|W|, gamma1, x_h, x_l, c = m~) of
eq. (5) and Claim D.29's conditions at n = |W|. We compute exactly that: n_b = the smallest n at which
every condition of Claim D.29 and of Lemma 4.2 holds with c = m~ (each is monotone in n, so a bisection
is exact; Lemma 4.2's condition in its corrected form n > 1 + 10 nu x_h^2/x_l^2, without the paper's 1/beta,
see docs/results.md "Corrections to the paper"), and the domain condition |W|^gamma1 >= n2^rho2 (eq. (36)) as n >= max(n1, n2)^(rho2/gamma1)
(eq. (26) prints n1^(rho2/gamma1); eq. (36) needs n2; the maximum covers both). The closed forms printed
in eq. (26) carry the exponent slips of Claims D.29/D.30 (docs/notes/seed004_sgld.md, sec. 6.4) and are not used.
Two corner cases the paper leaves open are resolved conservatively, by decisions that depend only on
already-released noisy values: n1~ <= 0 keeps only records with y = 0 in V; m~ <= 0 (outside the
domain's c > 0) returns null; an empty V gives m = 0.

Claim 4.2 (replacing step 19 by SGLD breaks privacy) is not a mechanism: :func:`pts_select` exposes
steps 1-18 so that audits can run other samplers on W.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import validation as v
from ..accounting.events import ApproxDpEvent
from ..accounting.linear_regression import claim_d29_conditions
from ..accounting.order_search import smallest_integer
from ..errors import InvalidParameterError
from ..models.gp.linear_regression import BayesianLinearRegression

SOURCE = "seed 004 (SGLD privacy), Claim 4.1: Propose-Test-Sample (Algorithm 1) is (5 eps, 2 delta)-DP"


@dataclass(frozen=True)
class PtsParams:
    """Public parameters of Algorithm 1 (checked against its stated ranges)."""

    epsilon: float
    delta: float
    x_l: float
    x_h: float
    alpha: float
    beta: float
    rho1: float
    rho2: float
    gamma1: float

    def __post_init__(self):
        object.__setattr__(self, "epsilon", v.positive("epsilon", self.epsilon))
        object.__setattr__(self, "delta", v.open_interval("delta", self.delta, 0.0, 0.5))
        object.__setattr__(self, "x_l", v.positive("x_l", self.x_l))
        object.__setattr__(self, "x_h", v.greater_than("x_h", self.x_h, self.x_l))
        object.__setattr__(self, "alpha", v.positive("alpha", self.alpha))
        beta = v.positive("beta", self.beta)
        if not beta >= 3.0 / self.x_h ** 2:
            raise InvalidParameterError("beta", f">= 3 / x_h^2 = {3.0 / self.x_h ** 2:.6g} (Algorithm 1)", beta)
        object.__setattr__(self, "beta", beta)
        object.__setattr__(self, "rho1", v.open_interval("rho1", self.rho1, 1.0, 1.5))
        object.__setattr__(self, "rho2", v.open_interval("rho2", self.rho2, 0.0, 0.5))
        object.__setattr__(self, "gamma1", v.open_interval("gamma1", self.gamma1, self.rho2, 0.5))

    @property
    def shift(self) -> float:
        """t = (1/eps) log(1/(2 delta)): the downward shift of every noisy count."""
        return math.log(1.0 / (2.0 * self.delta)) / self.epsilon

    def event(self) -> ApproxDpEvent:
        """The guarantee of one run (Claim 4.1)."""
        return ApproxDpEvent(5.0 * self.epsilon, 2.0 * self.delta, SOURCE)


def n_min(params: PtsParams, m_check: float, n1: int, n2: float) -> float:
    """The threshold of step 16 (see the module docstring): +inf when m~ <= 0."""
    if not m_check > 0:
        return math.inf
    p = params
    kw = dict(alpha=p.alpha, beta=p.beta, x_h=p.x_h, x_l=p.x_l, c=m_check, gamma1=p.gamma1)

    def ok(n):
        return all(claim_d29_conditions(n, p.epsilon, p.delta, **kw).values())

    n_b = smallest_integer(ok, 2, 10 ** 18)
    if n_b is None:
        return math.inf
    return float(max(n_b, max(float(n1), float(n2)) ** (p.rho2 / p.gamma1)))


@dataclass(frozen=True)
class PtsResult:
    """theta (None = null), the step that returned null, and the noisy values computed on the way."""

    theta: float | None
    stopped_at: str | None          # None, "n2 <= 1", "m~ <= 0" or "n_W < n_min"
    n1_check: float
    n2: float | None = None
    m_check: float | None = None
    n_W: float | None = None
    n_min: float | None = None
    W: np.ndarray | None = field(default=None, repr=False)   # indices of W (not released; for audits)
    event: ApproxDpEvent | None = None

    def to_dict(self) -> dict:
        return {"theta": self.theta, "stopped_at": self.stopped_at, "n1_check": self.n1_check, "n2": self.n2,
                "m_check": self.m_check, "n_W": self.n_W, "n_min": self.n_min,
                "event": None if self.event is None else self.event.to_dict()}


def _check_data(x, y):
    x = v.finite_array("x", x, ndim=1)
    y = v.responses("y", y, x.shape[0])
    return x, y


def pts_select(x, y, params: PtsParams, rng: np.random.Generator) -> PtsResult:
    """Steps 1-18 of Algorithm 1: the noisy values and, when the tests pass, the index set W
    (``theta`` is None; ``stopped_at`` is None when step 19 would be reached)."""
    if not isinstance(params, PtsParams):
        raise InvalidParameterError("params", "a PtsParams", type(params).__name__)
    x, y = _check_data(x, y)
    rng = v.generator("rng", rng)
    p = params
    x = np.clip(x, p.x_l, p.x_h)
    y = np.maximum(y, 0.0)
    ratio = y / x
    n1 = x.shape[0]
    scale = 1.0 / p.epsilon
    n1c = n1 - p.shift + rng.laplace(0.0, scale)
    cut = n1c ** p.rho1 if n1c > 0 else 0.0
    V = ratio <= cut
    n2 = int(V.sum()) - p.shift + rng.laplace(0.0, scale)
    if n2 <= 1:
        return PtsResult(None, "n2 <= 1", n1c, n2)
    sxx = float(np.sum(x[V] ** 2))
    m = float(np.sum(x[V] * y[V])) / sxx if sxx > 0 else 0.0
    sens = scale * cut * (2.0 * (n2 - 1.0) * p.x_h ** 2 * p.x_l ** 2 + p.x_h ** 4) / (n2 * (n2 - 1.0) * p.x_l ** 4)
    m_check = m + rng.laplace(0.0, sens) if sens > 0 else m
    W = np.flatnonzero(np.abs(ratio - m_check) <= n2 ** p.rho2)
    n_W = W.shape[0] - p.shift + rng.laplace(0.0, scale)
    if not m_check > 0:
        return PtsResult(None, "m~ <= 0", n1c, n2, m_check, n_W)
    nm = n_min(p, m_check, n1, n2)
    if n_W < nm:
        return PtsResult(None, "n_W < n_min", n1c, n2, m_check, n_W, nm)
    return PtsResult(None, None, n1c, n2, m_check, n_W, nm, W)


def propose_test_sample(x, y, params: PtsParams, rng: np.random.Generator) -> PtsResult:
    """Algorithm 1: a draw from p(theta | W) or null, with the (5 eps, 2 delta) event of Claim 4.1.
    All parameters and data are validated before any noise is drawn."""
    sel = pts_select(x, y, params, rng)
    event = params.event()
    if sel.stopped_at is not None:
        return PtsResult(**{**sel.__dict__, "event": event, "W": None})
    xw = np.clip(np.asarray(x, float)[sel.W], params.x_l, params.x_h)
    yw = np.maximum(np.asarray(y, float)[sel.W], 0.0)
    mean, var = BayesianLinearRegression(params.alpha, params.beta).posterior(xw, yw)
    theta = float(mean + math.sqrt(float(var)) * rng.standard_normal())
    return PtsResult(**{**sel.__dict__, "theta": theta, "event": event, "W": None})
