"""Helpers shared by the sampler tests: exact laws and Monte-Carlo moment checks (and tests of the checks).

Tolerances come from the sample size: the sample mean of N draws has standard error sqrt(C_ii / N);
the sample covariance entry has standard error sqrt((C_ii C_jj + C_ij^2) / (N - 1)) for Gaussian
draws. A check passes when every entry is within K_SE = 5 standard errors.
"""
import numpy as np

from privgp.models.gp import ExactPosterior

K_SE = 5.0


def released_law(post: ExactPosterior, Xq, eta=0.0):
    """Mean and covariance of f_D + g at Xq: mu_D, sigma^2 k_D + eta^2 k (seed 000, eq. 1 and Prop. 2)."""
    return post.mean(Xq), post.cov(Xq) + eta**2 * post.kernel(Xq)


def mc_deviation(samples, mean, cov):
    """Largest deviation of the sample mean and covariance from (mean, cov), in standard errors."""
    samples = np.asarray(samples, dtype=float)
    N = samples.shape[0]
    sd = np.sqrt(np.diag(cov))
    z_mean = np.abs(samples.mean(0) - mean) / (sd / np.sqrt(N))
    se_cov = np.sqrt((np.outer(sd**2, sd**2) + cov**2) / (N - 1))
    z_cov = np.abs(np.cov(samples.T) - cov) / se_cov
    return float(z_mean.max()), float(z_cov.max())


def assert_law(samples, mean, cov, k=K_SE):
    zm, zc = mc_deviation(samples, mean, cov)
    assert zm <= k, f"sample mean {zm:.2f} standard errors away"
    assert zc <= k, f"sample covariance {zc:.2f} standard errors away"


def affine_law(f0, columns):
    """Mean and covariance of f0 + A z, z standard normal, from the images of the unit vectors."""
    A = np.asarray(columns) - f0[None, :]
    return f0, A.T @ A


def test_mc_check_accepts_the_right_law_and_rejects_a_wrong_one():
    """The checks can fail: at the sample sizes used (N = 4000) a 20% variance error is caught."""
    rng = np.random.default_rng(0)
    C = np.array([[1.0, 0.6, 0.2], [0.6, 1.5, -0.3], [0.2, -0.3, 0.8]])
    mu = np.array([0.5, -1.0, 0.0])
    S = rng.multivariate_normal(mu, C, size=4000)
    assert_law(S, mu, C)
    zm, zc = mc_deviation(S, mu, 1.2 * C)
    assert zc > K_SE
    zm, zc = mc_deviation(S, mu + 0.2, C)
    assert zm > K_SE
