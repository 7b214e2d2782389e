"""Kernels of seed 003 (LOOD): the RBF kernel as the paper's code uses it and the NNGP kernels of
fully connected networks, with gradients in the first argument for query optimisation.

Not normalised (sup k(x, x) = 1 does not hold for NNGP kernels), so these are not seed-000 kernels;
they serve the LOOD analyses of :mod:`privgp.audit.lood.models`.

Every kernel here is a small frozen dataclass with

* ``k(X1, X2=None)`` -> Gram matrix (m, n); ``k.diag(X)`` -> (m,);
* ``k.vjp(Q, X, G)`` -> (q, d): the gradient in Q of sum_jk G_jk k(Q_j, X_k), X held fixed.
  For a term k(Q, Q) (both arguments vary) use ``vjp(Q, Q, G + G.T)``: kernels are symmetric, so
  the derivative in the second argument is the derivative in the first with the roles swapped.

NNGP recursion (Lee et al. 2018; seed 003, App. B; docs/notes/seed003_lood.md, sec. 1.7) of the network
``Flatten -> [Dense(width), act] x depth -> Dense(out)`` with weight std ``w_std`` (NTK-style
N(0, w_std^2 / fan_in)) and bias std ``b_std``:

    K_1(x, x')     = w_std^2 <x, x'> / d + b_std^2,
    K_{l+1}(x, x') = w_std^2 E_{(u, v) ~ N(0, [[K_l(x,x), K_l(x,x')], [K_l(x,x'), K_l(x',x')]])}[phi(u) phi(v)]
                     + b_std^2,   l = 1..depth;

the kernel is K_{depth+1} (depth = 0 is the linear kernel). The bivariate expectations F(k11, k22, k12):

* ReLU (arc-cosine, Cho & Saul 2009): s = sqrt(k11 k22 - k12^2), theta = atan2(s, k12),
  F = (s + (pi - theta) k12) / (2 pi); dF/dk12 = (pi - theta) / (2 pi), dF/dk11 = s / (4 pi k11)
  (the square-root singularities cancel: the gradients are continuous at correlation 1).
* GeLU x Phi(x) (exact erf form): P = k11 k22, P1 = (1 + k11)(1 + k22), Delta = sqrt(P1 - k12^2) >= 1,
  F = k12/4 + [ (k12^2 + P Delta^2) / (P1 Delta) + k12 atan2(k12, Delta) ] / (2 pi).
* erf (Williams 1997): F = (2/pi) asin(2 k12 / sqrt((1 + 2 k11)(1 + 2 k22))).
* ELU (standard, alpha = 1: x for x > 0, e^x - 1 otherwise; the paper's footnote 12 writes a
  threshold 1, a typo giving a discontinuous map): no elementary closed form. E[phi(v) | u] is
  closed form (a Gaussian's truncated moments), and the remaining integral over u is done by
  Gauss-Legendre quadrature on each half-line (the kink of phi is at the split), about 1e-12
  accurate; its partial derivatives come from Price's theorem (dF/dk12 = E[phi'(u) phi'(v)],
  dF/dk11 = E[phi''(u) phi(v)] / 2) with the same quadrature. Costlier than the others: use it
  for moderate n.

All partial derivatives are analytic (no autodiff); tests check them against finite differences,
mpmath quadrature of the expectations and Monte Carlo over wide random networks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np
from scipy.special import ndtr

from .. import validation as v
from ..errors import InvalidParameterError

ACTIVATIONS = ("relu", "gelu", "erf", "elu")
_TWO_PI = 2.0 * math.pi


def _pts(name: str, X) -> np.ndarray:
    return v.points(name, X)


def _same_dim(X1: np.ndarray, X2: np.ndarray) -> None:
    if X1.shape[1] != X2.shape[1]:
        raise InvalidParameterError("X2", f"points of dimension {X1.shape[1]} (as X1)", f"dimension {X2.shape[1]}")


def _cotangent(G, shape) -> np.ndarray:
    G = np.asarray(G, dtype=float)
    if G.shape != shape:
        raise InvalidParameterError("G", f"an array of shape {shape}", f"shape {G.shape}")
    return G


# -- RBF ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RBF:
    """k(x, x') = exp(-(gamma / d) |x - x'|^2) with d the number of features (the reference code's
    ``gamma / d`` scaling, gamma = 1 by default). The 1-D toys of seed 003 (App. F.1) use
    exp(-(x - x')^2 / 2), i.e. gamma = 0.5 with d = 1."""

    gamma: float = 1.0
    name: ClassVar[str] = "rbf"

    def __post_init__(self):
        object.__setattr__(self, "gamma", v.positive("gamma", self.gamma))

    def _sqdist(self, X1, X2):
        d2 = (X1 * X1).sum(1)[:, None] + (X2 * X2).sum(1)[None, :] - 2.0 * X1 @ X2.T
        return np.maximum(d2, 0.0)

    def __call__(self, X1, X2=None) -> np.ndarray:
        X1 = _pts("X1", X1)
        X2 = X1 if X2 is None else _pts("X2", X2)
        _same_dim(X1, X2)
        K = np.exp(-(self.gamma / X1.shape[1]) * self._sqdist(X1, X2))
        if X2 is X1:
            K = 0.5 * (K + K.T)
            np.fill_diagonal(K, 1.0)
        return K

    def diag(self, X) -> np.ndarray:
        return np.ones(_pts("X", X).shape[0])

    def vjp(self, Q, X, G) -> np.ndarray:
        Q, X = _pts("Q", Q), _pts("X", X)
        _same_dim(Q, X)
        G = _cotangent(G, (Q.shape[0], X.shape[0]))
        c = self.gamma / Q.shape[1]
        W = G * np.exp(-c * self._sqdist(Q, X))          # (q, n)
        return -2.0 * c * (W.sum(1)[:, None] * Q - W @ X)

    def describe(self) -> dict:
        return {"kernel": self.name, "gamma": self.gamma, "formula": "exp(-(gamma/d)|x-x'|^2)"}


# -- bivariate expectations F(k11, k22, k12) and their partial derivatives ---------------------

def _relu(k11, k22, k12, grad: bool):
    s = np.sqrt(np.maximum(k11 * k22 - k12 * k12, 0.0))
    theta = np.arctan2(s, k12)
    F = (s + (math.pi - theta) * k12) / _TWO_PI
    if not grad:
        return F, None, None, None
    with np.errstate(divide="ignore", invalid="ignore"):
        F11 = np.where(k11 > 0, s / (2.0 * _TWO_PI * k11), 0.0)
        F22 = np.where(k22 > 0, s / (2.0 * _TWO_PI * k22), 0.0)
    return F, F11, F22, (math.pi - theta) / _TWO_PI


def _gelu(k11, k22, k12, grad: bool):
    P = k11 * k22
    P1 = (1.0 + k11) * (1.0 + k22)
    D2 = np.maximum(P1 - k12 * k12, 1.0 + k11 + k22)  # P1 - k12^2 >= 1 + k11 + k22 by Cauchy-Schwarz
    D = np.sqrt(D2)
    at = np.arctan2(k12, D)
    F = 0.25 * k12 + ((k12 * k12 + P * D2) / (P1 * D) + k12 * at) / _TWO_PI
    if not grad:
        return F, None, None, None
    u = k12
    Tu = at + u / D + (2.0 - P) * u / (P1 * D) + u ** 3 / (P1 * D2 * D)

    def side(kb):  # dT/dka with the other variance kb fixed (T depends on ka only through P, P1)
        P_a, P1_a = kb, 1.0 + kb
        D_a = P1_a / (2.0 * D)
        t1 = -u * u * (P1_a * D + P1 * D_a) / (P1 * D) ** 2
        t2 = (P_a * D + P * D_a) / P1 - P * D * P1_a / (P1 * P1)
        t3 = -u * u * D_a / P1
        return t1 + t2 + t3

    return F, side(k22) / _TWO_PI, side(k11) / _TWO_PI, 0.25 + Tu / _TWO_PI


def _erf(k11, k22, k12, grad: bool):
    den2 = (1.0 + 2.0 * k11) * (1.0 + 2.0 * k22)
    den = np.sqrt(den2)
    F = (2.0 / math.pi) * np.arcsin(np.clip(2.0 * k12 / den, -1.0, 1.0))
    if not grad:
        return F, None, None, None
    root = np.sqrt(np.maximum(den2 - 4.0 * k12 * k12, 1.0 + 2.0 * k11 + 2.0 * k22))
    Fu = (4.0 / math.pi) / root
    F11 = -(4.0 / math.pi) * k12 * (1.0 + 2.0 * k22) / (den2 * root)
    F22 = -(4.0 / math.pi) * k12 * (1.0 + 2.0 * k11) / (den2 * root)
    return F, F11, F22, Fu


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(96)
_T_MAX = 9.0  # standard-normal mass beyond 9 is ~1e-19
_T = 0.5 * _T_MAX * (_GL_NODES + 1.0)                       # nodes on (0, T_MAX)
_W = 0.5 * _T_MAX * _GL_WEIGHTS * np.exp(-0.5 * _T * _T) / math.sqrt(_TWO_PI)


def _phi(z):
    return np.exp(-0.5 * z * z) / math.sqrt(_TWO_PI)


def _elu_conditional(m, s):
    """E[elu(Y)], E[elu'(Y)], E[elu''(Y)] for Y ~ N(m, s^2) (s may be 0: a point mass at m)."""
    tiny = s <= 1e-150
    s_ = np.where(tiny, 1.0, s)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        z = m / s_
        ez = np.exp(np.minimum(m + 0.5 * s_ * s_, 700.0)) * ndtr(-(m + s_ * s_) / s_)
        e0 = m * ndtr(z) + s_ * _phi(z) + ez - ndtr(-z)
        e1 = ndtr(z) + ez
        e2 = ez
    pm_e0 = np.where(m > 0, m, np.expm1(np.minimum(m, 0.0)))
    pm_e1 = np.where(m > 0, 1.0, np.exp(np.minimum(m, 0.0)))
    pm_e2 = np.where(m > 0, 0.0, np.exp(np.minimum(m, 0.0)))
    return np.where(tiny, pm_e0, e0), np.where(tiny, pm_e1, e1), np.where(tiny, pm_e2, e2)


def _elu(k11, k22, k12, grad: bool):
    k11, k22, k12 = np.broadcast_arrays(np.asarray(k11, float), np.asarray(k22, float), np.asarray(k12, float))
    sd1 = np.sqrt(k11)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(k11 > 0, k12 / np.where(k11 > 0, k11, 1.0), 0.0)[..., None]
    s = np.sqrt(np.maximum(k22 - np.where(k11 > 0, k12 * k12 / np.where(k11 > 0, k11, 1.0), 0.0), 0.0))[..., None]
    F = np.zeros(k11.shape)
    F11 = np.zeros(k11.shape)
    F22 = np.zeros(k11.shape)
    Fu = np.zeros(k11.shape)
    for sign in (1.0, -1.0):
        x = sign * sd1 * _T                                        # (..., nodes)
        e0, e1, e2 = _elu_conditional(slope * x, s)
        if sign > 0:
            p0, p1, p2 = x, np.ones_like(x), np.zeros_like(x)
        else:
            ex = np.exp(x)
            p0, p1, p2 = ex - 1.0, ex, ex
        F += (p0 * e0) @ _W
        if grad:
            Fu += (p1 * e1) @ _W
            F11 += 0.5 * (p2 * e0) @ _W
            F22 += 0.5 * (p0 * e2) @ _W
    if not grad:
        return F, None, None, None
    return F, F11, F22, Fu


_EXPECTATIONS = {"relu": _relu, "gelu": _gelu, "erf": _erf, "elu": _elu}


def bivariate_expectation(activation: str, k11, k22, k12, *, grad: bool = False):
    """F = E[phi(u) phi(v)] for (u, v) ~ N(0, [[k11, k12], [k12, k22]]) (broadcast), and with
    ``grad`` its partial derivatives (F, dF/dk11, dF/dk22, dF/dk12)."""
    if activation not in _EXPECTATIONS:
        raise InvalidParameterError("activation", f"one of {ACTIVATIONS}", activation)
    k11, k22, k12 = (np.asarray(a, dtype=float) for a in (k11, k22, k12))
    if np.any(k11 < 0) or np.any(k22 < 0):
        raise InvalidParameterError("k11/k22", "variances >= 0", (k11, k22))
    out = _EXPECTATIONS[activation](k11, k22, k12, grad)
    return out if grad else out[0]


# -- NNGP of a fully connected network ---------------------------------------------------------

@dataclass(frozen=True)
class NNGP:
    """NNGP kernel of ``Flatten -> [Dense, activation] x depth -> Dense`` (see the module docstring).

    Defaults are the reference code's: w_std = sqrt(2), b_std = 0. With ReLU, w_std = sqrt(2) and
    b_std = 0 the diagonal stays 2 |x|^2 / d at every depth, and the kernel is homogeneous of degree 1
    in each argument (seed 003, App. C.3)."""

    activation: str = "relu"
    depth: int = 1
    w_std: float = math.sqrt(2.0)
    b_std: float = 0.0
    name: ClassVar[str] = "nngp"

    def __post_init__(self):
        if self.activation not in ACTIVATIONS:
            raise InvalidParameterError("activation", f"one of {ACTIVATIONS}", self.activation)
        object.__setattr__(self, "depth", v.integer("depth", self.depth, minimum=0))
        object.__setattr__(self, "w_std", v.positive("w_std", self.w_std))
        object.__setattr__(self, "b_std", v.nonnegative("b_std", self.b_std))

    @property
    def _F(self):
        return _EXPECTATIONS[self.activation]

    def _first(self, X1, X2):
        w2, b2, d = self.w_std ** 2, self.b_std ** 2, X1.shape[1]
        return w2 * (X1 * X1).sum(1) / d + b2, w2 * (X2 * X2).sum(1) / d + b2, (w2 / d) * (X1 @ X2.T) + b2

    def _diag_step(self, a):
        return self.w_std ** 2 * self._F(a, a, a, False)[0] + self.b_std ** 2

    def __call__(self, X1, X2=None) -> np.ndarray:
        X1 = _pts("X1", X1)
        X2_ = X1 if X2 is None else _pts("X2", X2)
        _same_dim(X1, X2_)
        a, c, k = self._first(X1, X2_)
        w2, b2 = self.w_std ** 2, self.b_std ** 2
        for _ in range(self.depth):
            F = self._F(a[:, None], c[None, :], k, False)[0]
            k = F
            k *= w2
            k += b2
            a = self._diag_step(a)
            c = a if X2 is None else self._diag_step(c)
        if X2 is None:
            k = 0.5 * (k + k.T)
            np.fill_diagonal(k, a)
        return k

    def diag(self, X) -> np.ndarray:
        X = _pts("X", X)
        a = self.w_std ** 2 * (X * X).sum(1) / X.shape[1] + self.b_std ** 2
        for _ in range(self.depth):
            a = self._diag_step(a)
        return a

    def vjp(self, Q, X, G) -> np.ndarray:
        """Gradient in Q of sum_jk G_jk K(Q_j, X_k) (X fixed): reverse mode through the recursion."""
        Q, X = _pts("Q", Q), _pts("X", X)
        _same_dim(Q, X)
        G = _cotangent(G, (Q.shape[0], X.shape[0]))
        w2, b2, d = self.w_std ** 2, self.b_std ** 2, Q.shape[1]
        a, c, k = self._first(Q, X)
        tape = []
        for _ in range(self.depth):
            F, F11, _, Fu = self._F(a[:, None], c[None, :], k, True)
            _, d11, d22, du = self._F(a, a, a, True)
            tape.append((F11, Fu, d11 + d22 + du))
            k = w2 * F + b2
            a = w2 * self._F(a, a, a, False)[0] + b2
            c = self._diag_step(c)
        Gk, Ga = G, np.zeros(Q.shape[0])
        for F11, Fu, dd in reversed(tape):
            Ga = w2 * (Ga * dd + (Gk * F11).sum(1))
            Gk = w2 * (Gk * Fu)
        return (w2 / d) * (Gk @ X + 2.0 * Ga[:, None] * Q)

    def describe(self) -> dict:
        return {"kernel": self.name, "activation": self.activation, "depth": self.depth,
                "w_std": self.w_std, "b_std": self.b_std}


class LoodKernel(Protocol):
    """What the kernels of this module provide (see the module docstring)."""

    def __call__(self, X1, X2=None) -> np.ndarray: ...

    def diag(self, X) -> np.ndarray: ...

    def vjp(self, Q, X, G) -> np.ndarray: ...

    def describe(self) -> dict: ...


@dataclass(frozen=True)
class Scaled:
    """factor * base kernel (a prior variance multiplier), with the base kernel's gradients."""

    base: LoodKernel
    factor: float

    def __post_init__(self):
        object.__setattr__(self, "factor", v.positive("factor", self.factor))

    def __call__(self, X1, X2=None) -> np.ndarray:
        return self.factor * self.base(X1, X2)

    def diag(self, X) -> np.ndarray:
        return self.factor * self.base.diag(X)

    def vjp(self, Q, X, G) -> np.ndarray:
        return self.factor * self.base.vjp(Q, X, G)

    def describe(self) -> dict:
        return {**self.base.describe(), "scale": self.factor}


def make_lood_kernel(name: str, **params):
    """``rbf`` (gamma) or ``nngp`` (activation, depth, w_std, b_std) by name."""
    if name == "rbf":
        return RBF(**params)
    if name == "nngp":
        return NNGP(**params)
    raise InvalidParameterError("kernel", "one of ('rbf', 'nngp')", name)
