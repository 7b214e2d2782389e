"""Exact prior draws on a grid (privgp.models.sampling.prior): the noise of the functional mechanism and
DPSetConv (seed 002, Thm 4.1, Alg. 3, App. B). Every method draws from the covariance that
prior_covariance reports, which is the kernel matrix plus a positive semidefinite jitter only."""
from __future__ import annotations

import numpy as np
import pytest

from privgp.errors import InvalidParameterError
from privgp.models.kernels import Exponential, Matern32, SquaredExponential
from privgp.models.sampling import prior_paths
from privgp.models.sampling.prior import prior_covariance

A = np.linspace(0.0, 1.0, 8)
CASES = [(SquaredExponential(0.3), (A,), "kronecker"), (SquaredExponential(0.3), (A, A[:5]), "kronecker"),
         (Exponential(0.4), (A,), "circulant"), (Matern32(0.3), (A, A[:5]), "circulant"),
         (SquaredExponential(0.3), (A, A[:5]), "dense"), (Exponential(0.4), (A,), "dense")]


def _gram(kernel, axes):
    mesh = np.meshgrid(*axes, indexing="ij")
    G = np.stack([m.ravel() for m in mesh], axis=-1)
    return kernel(G)


@pytest.mark.parametrize("kernel,axes,method", CASES, ids=lambda c: getattr(c, "name", str(c)))
def test_reported_covariance_is_kernel_plus_psd(kernel, axes, method):
    C = prior_covariance(kernel, axes, method=method)
    K = _gram(kernel, axes)
    assert np.abs(C - K).max() <= 1e-9
    lam = np.linalg.eigvalsh(C - K)
    assert lam.min() >= -1e-12                          # only variance added (round-off allowed)


@pytest.mark.parametrize("kernel,axes,method", CASES, ids=lambda c: getattr(c, "name", str(c)))
def test_draws_have_the_reported_covariance(kernel, axes, method):
    """30000 draws: empirical covariance within 0.03 of k (about 5 standard errors); mean ~ 0; the
    scale multiplies every draw."""
    rng = np.random.default_rng(11)
    P = prior_paths(kernel, axes, rng=rng, L=30000, method=method, scale=2.0)
    assert P.shape == (30000,) + tuple(a.size for a in axes)
    X = P.reshape(30000, -1) / 2.0
    assert np.abs(X.mean(0)).max() <= 0.03
    assert np.abs(np.cov(X.T) - _gram(kernel, axes)).max() <= 0.03


def test_auto_choice_and_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidParameterError, match="kronecker"):
        prior_paths(Exponential(0.3), (A,), rng=rng, method="kronecker")
    with pytest.raises(InvalidParameterError, match="uniformly spaced"):
        prior_paths(Exponential(0.3), (A**2,), rng=rng, method="circulant")
    with pytest.raises(InvalidParameterError, match="scale"):
        prior_paths(Exponential(0.3), (A,), rng=rng, scale=0.0)
    with pytest.raises(InvalidParameterError, match="rng"):
        prior_paths(Exponential(0.3), (A,), rng=1)
    # an irregular grid still works through the dense sampler
    P = prior_paths(Exponential(0.3), (A**2,), rng=rng, L=3)
    assert P.shape == (3, 8)


def test_same_seed_same_draw_and_fresh_draws_differ():
    a = prior_paths(SquaredExponential(0.2), (A,), rng=np.random.default_rng(4), L=2)
    b = prior_paths(SquaredExponential(0.2), (A,), rng=np.random.default_rng(4), L=2)
    assert np.array_equal(a, b) and not np.allclose(a[0], a[1])
