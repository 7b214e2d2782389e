"""Bayesian linear regression with a conjugate Gaussian prior (seed 004, eq. (4), Lemma 4.1).

    y = theta x + xi,   xi ~ N(0, 1/beta),   theta ~ N(0, 1/alpha)

This is GP regression with the linear kernel k(x, x') = x x' / alpha and noise variance 1/beta: the
posterior of theta is the GP posterior in weight space, and releasing a draw of theta releases the
whole posterior function draw f(x) = theta x. Lemma 4.1 / eq. (6):

    p(theta | D) = N(mu, s^2),  mu = beta sum_i x_i y_i / (alpha + beta sum_i x_i^2),
                                s^2 = 1 / (alpha + beta sum_i x_i^2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import validation as v
from ...errors import InvalidParameterError


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

    def grad_log_prior(self, theta):
        """d/dtheta log p(theta) = -alpha theta."""
        return -self.alpha * np.asarray(theta, dtype=float)

    def grad_log_likelihood(self, theta, x, y):
        """d/dtheta log p(y | x, theta) = beta (y - theta x) x (proof of Lemma A.1)."""
        theta, x, y = (np.asarray(a, dtype=float) for a in (theta, x, y))
        return self.beta * (y - theta * x) * x
