"""NNGP and RBF kernels of seed 003 (privgp.models.nngp): closed forms against independent quadrature,
neural-tangents reference values (docs/notes/seed003_lood.md, sec. 5, item 6), Monte Carlo over wide random networks,
and analytic gradients against finite differences (including at correlation 1)."""
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import erf, ndtr

from privgp.errors import InvalidParameterError
from privgp.models.nngp import ACTIVATIONS, NNGP, RBF, bivariate_expectation, make_lood_kernel

REF = json.loads((Path(__file__).resolve().parents[1] / "data" / "lood_reference.json").read_text())

PHI = {"relu": lambda z: np.maximum(z, 0.0), "gelu": lambda z: z * ndtr(z), "erf": erf,
       "elu": lambda z: np.where(z > 0, z, np.expm1(np.minimum(z, 0.0)))}


@pytest.mark.parametrize("row", REF["bivariate"], ids=lambda r: f"{r['activation']}-{r['k11']}-{r['k22']}-{r['k12']}")
def test_bivariate_expectation_matches_quadrature(row):
    F, _, _, Fu = bivariate_expectation(row["activation"], row["k11"], row["k22"], row["k12"], grad=True)
    assert float(F) == pytest.approx(row["F"], abs=2e-11)
    # dF/dk12 = E[phi'(u) phi'(v)] (Price's theorem), computed independently by quadrature
    assert float(Fu) == pytest.approx(row["dF_dk12"], abs=2e-9)


def test_neural_tangents_reference_values():
    """docs/notes/seed003_lood.md, sec. 5, item 6: FC depth 2, W_std = sqrt(2), b_std = 0 on RandomState(0).randn(3,4,4,3),
    the values neural-tangents 0.6.5 prints (to all printed digits)."""
    x = np.random.RandomState(0).randn(3, 4, 4, 3).reshape(3, -1)
    relu = [[2.56991721, 1.04229879, 1.13679833], [1.04229879, 1.53730012, 0.79879343],
            [1.13679833, 0.79879343, 2.05531398]]
    gelu = [[2.26429799, 0.65920611, 0.74386772], [0.65920611, 1.22529447, 0.43839424],
            [0.74386772, 0.43839424, 1.74351721]]
    np.testing.assert_allclose(NNGP("relu", depth=2)(x), relu, atol=6e-9)
    np.testing.assert_allclose(NNGP("gelu", depth=2)(x), gelu, atol=6e-9)


def test_relu_diagonal_is_constant_in_depth():
    """ReLU with w_std = sqrt(2), b_std = 0 keeps the diagonal at K_1(x, x) = 2 |x|^2 / d at every
    depth (docs/notes/seed003_lood.md, sec. 5, item 6; the neural-tangents values above have the factor 2)."""
    x = np.random.default_rng(3).normal(size=(5, 7))
    for depth in (0, 1, 4, 9):
        np.testing.assert_allclose(NNGP("relu", depth=depth).diag(x), 2 * (x * x).sum(1) / 7, rtol=1e-13)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_gram_diag_and_cross_agree(activation):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 4))
    k = NNGP(activation, depth=3, w_std=1.3, b_std=0.2)
    K = k(X)
    np.testing.assert_allclose(np.diag(K), k.diag(X), rtol=1e-12)
    np.testing.assert_allclose(K, k(X, X.copy()), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(K, K.T)
    assert np.linalg.eigvalsh(K)[0] > -1e-10


def _wide_network_kernel(X, k: NNGP, width: int, rng):
    """Empirical output kernel of a random width-`width` network on the rows of X.

    Given the previous layer's activations h (width x q), the next pre-activations are i.i.d. over
    units with covariance w^2 h^T h / width + b^2: sampling them layer by layer is exactly a random
    network with Gaussian weights N(0, w^2/fan_in) and biases N(0, b^2), without width^2 weights."""
    w2, b2, d = k.w_std ** 2, k.b_std ** 2, X.shape[1]
    cov = w2 * X @ X.T / d + b2
    for _ in range(k.depth):
        L = np.linalg.cholesky(cov + 1e-12 * np.eye(len(X)))
        pre = rng.standard_normal((width, len(X))) @ L.T
        h = PHI[k.activation](pre)
        cov = w2 * h.T @ h / width + b2
    return cov


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_recursion_matches_wide_random_networks(activation):
    """Monte Carlo over 40 random networks of width 20000 (finite-width bias O(1/width) ~ 1e-4 is
    below the tolerance): |closed form - MC mean| <= 5 standard errors + 5e-4."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(3, 5))
    X[2] = 1.7 * X[0]  # correlation 1 between rows 0 and 2 at the first layer
    k = NNGP(activation, depth=3, w_std=1.4, b_std=0.3)
    draws = np.array([_wide_network_kernel(X, k, 20_000, rng) for _ in range(40)])
    mean, se = draws.mean(0), draws.std(0, ddof=1) / math.sqrt(len(draws))
    assert np.all(np.abs(k(X) - mean) <= 5 * se + 5e-4), (k(X), mean, se)


def _fd_vjp(k, Q, X, G, h=1e-6):
    out = np.zeros_like(Q)
    for i in range(Q.shape[0]):
        for j in range(Q.shape[1]):
            Qp, Qm = Q.copy(), Q.copy()
            Qp[i, j] += h
            Qm[i, j] -= h
            out[i, j] = np.sum((k(Qp, X) - k(Qm, X)) * G) / (2 * h)
    return out


def _fd_self(k, Q, G, h=1e-6):
    out = np.zeros_like(Q)
    for i in range(Q.shape[0]):
        for j in range(Q.shape[1]):
            Qp, Qm = Q.copy(), Q.copy()
            Qp[i, j] += h
            Qm[i, j] -= h
            out[i, j] = np.sum((k(Qp, Qp) - k(Qm, Qm)) * G) / (2 * h)
    return out


KERNELS = [RBF(1.0), RBF(0.3), NNGP("relu", 3), NNGP("relu", 2, b_std=0.1), NNGP("gelu", 3, b_std=0.1),
           NNGP("erf", 2, w_std=1.5, b_std=0.2), NNGP("elu", 2, b_std=0.3), NNGP("relu", 0)]


@pytest.mark.parametrize("k", KERNELS, ids=repr)
def test_vjp_matches_finite_differences_including_correlation_one(k):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(6, 5))
    Q = rng.normal(size=(3, 5))
    Q[1] = X[2]           # a query equal to a training point (correlation 1, the NaN trap of arccos)
    Q[2] = 0.5 * X[4]     # parallel to a training point (correlation 1 for b_std = 0)
    G = rng.normal(size=(3, 6))
    g = k.vjp(Q, X, G)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, _fd_vjp(k, Q, X, G), atol=5e-8 * max(1.0, np.abs(g).max()))
    H = rng.normal(size=(3, 3))
    gs = k.vjp(Q, Q, H + H.T)
    np.testing.assert_allclose(gs, _fd_self(k, Q, H), atol=5e-8 * max(1.0, np.abs(gs).max()))


def test_rbf_is_the_papers_form():
    x, y = np.array([[0.3, -1.0]]), np.array([[1.1, 0.5]])
    assert RBF(1.0)(x, y)[0, 0] == pytest.approx(math.exp(-(0.8 ** 2 + 1.5 ** 2) / 2))
    assert RBF(0.5)(np.array([[0.0]]), np.array([[1.0]]))[0, 0] == pytest.approx(math.exp(-0.5))


def test_relu_homogeneity_and_gelu_not():
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    k = NNGP("relu", 3)
    np.testing.assert_allclose(k(2.5 * X, Y), 2.5 * k(X, Y), rtol=1e-12)
    g = NNGP("gelu", 3)
    assert not np.allclose(g(2.5 * X, Y), 2.5 * g(X, Y), rtol=1e-3)


@pytest.mark.parametrize("bad, match", [
    (dict(activation="tanh"), "activation"), (dict(depth=-1), "depth"), (dict(w_std=0.0), "w_std"),
    (dict(b_std=-1.0), "b_std"), (dict(depth=1.5), "depth")])
def test_bad_parameters_are_clear_errors(bad, match):
    with pytest.raises(InvalidParameterError, match=match):
        NNGP(**bad)


def test_bad_inputs_are_clear_errors():
    k = NNGP("relu", 2)
    with pytest.raises(InvalidParameterError, match="X1"):
        k(np.array([[np.nan, 1.0]]))
    with pytest.raises(InvalidParameterError, match="X2"):
        k(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(InvalidParameterError, match="G"):
        k.vjp(np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 2)))
    with pytest.raises(InvalidParameterError, match="gamma"):
        RBF(-1.0)
    with pytest.raises(InvalidParameterError, match="kernel"):
        make_lood_kernel("matern")
    with pytest.raises(InvalidParameterError, match="k11"):
        bivariate_expectation("relu", -1.0, 1.0, 0.0)
