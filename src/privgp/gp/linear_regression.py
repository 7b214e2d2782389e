"""Bayesian linear regression with a conjugate Gaussian prior (seed 004, eq. (4), Lemma 4.1).

    y = theta x + xi,   xi ~ N(0, 1/beta),   theta ~ N(0, 1/alpha)

This is GP regression with the linear kernel k(x, x') = x x' / alpha and noise variance 1/beta: the
posterior of theta is the GP posterior in weight space, and releasing a draw of theta releases the
whole posterior function draw f(x) = theta x. Lemma 4.1 / eq. (6):

    p(theta | D) = N(mu, s^2),  mu = beta sum_i x_i y_i / (alpha + beta sum_i x_i^2),
                                s^2 = 1 / (alpha + beta sum_i x_i^2);

in d dimensions (eq. (11), Bishop 2006, eqs. 3.49-3.51 with m_0 = 0, S_0 = I/alpha):
m_N = beta S_N Phi^T t, S_N^-1 = alpha I + beta Phi^T Phi.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validation as v
from ..errors import InvalidParameterError


@dataclass(frozen=True)
class BayesianLinearRegression:
    """Prior precision ``alpha`` and noise precision ``beta`` of eq. (4)."""

    alpha: float
    beta: float

    def __post_init__(self):
        object.__setattr__(self, "alpha", v.positive("alpha", self.alpha))
        object.__setattr__(self, "beta", v.positive("beta", self.beta))

    def posterior(self, x, y) -> tuple[np.ndarray, np.ndarray]:
        """(mean, variance) of p(theta | D), eq. (6), for one dataset (1-D x, y) or a batch of
        datasets of equal size (x, y of shape (B, n)); returns arrays of the batch shape."""
        x = v.finite_array("x", x, ndim=(1, 2), allow_empty=True)
        y = v.finite_array("y", y, ndim=(1, 2), allow_empty=True)
        if x.shape != y.shape:
            raise InvalidParameterError("y", f"the shape of x {x.shape}", y.shape)
        prec = self.alpha + self.beta * np.sum(x * x, axis=-1)
        return self.beta * np.sum(x * y, axis=-1) / prec, 1.0 / prec

    def posterior_from_sums(self, sxx, sxy) -> tuple[np.ndarray, np.ndarray]:
        """(mean, variance) from the sufficient statistics sum x_i^2 and sum x_i y_i (broadcasting)."""
        sxx = np.asarray(sxx, dtype=float)
        sxy = np.asarray(sxy, dtype=float)
        prec = self.alpha + self.beta * sxx
        return self.beta * sxy / prec, 1.0 / prec

    def posterior_multivariate(self, Phi, t) -> tuple[np.ndarray, np.ndarray]:
        """(m_N, S_N) of eq. (11) for design matrix Phi (n x d) and targets t (n)."""
        Phi = v.finite_array("Phi", Phi, ndim=2)
        t = v.responses("t", t, Phi.shape[0])
        prec = self.alpha * np.eye(Phi.shape[1]) + self.beta * Phi.T @ Phi
        S = np.linalg.inv(prec)
        S = 0.5 * (S + S.T)
        return self.beta * S @ (Phi.T @ t), S

    def log_likelihood(self, theta, x, y):
        """log p(y | x, theta) = -beta (y - theta x)^2 / 2 - log(2 pi / beta) / 2 (eq. (4)), elementwise."""
        theta, x, y = (np.asarray(a, dtype=float) for a in (theta, x, y))
        return -0.5 * self.beta * (y - theta * x) ** 2 - 0.5 * np.log(2.0 * np.pi / self.beta)

    def grad_log_prior(self, theta):
        """d/dtheta log p(theta) = -alpha theta."""
        return -self.alpha * np.asarray(theta, dtype=float)

    def grad_log_likelihood(self, theta, x, y):
        """d/dtheta log p(y | x, theta) = beta (y - theta x) x (proof of Lemma A.1)."""
        theta, x, y = (np.asarray(a, dtype=float) for a in (theta, x, y))
        return self.beta * (y - theta * x) * x
