"""Exact Rényi divergences (eq. (12) of seed 000) and the soundness of the certified bound.

1. ``renyi_divergence_gaussians`` against independent computations: numerical integration in 1-D, the
   textbook formula with ordinary inverses/determinants for positive-definite covariances, additivity
   over independent coordinates, and a hand-reduced singular (pseudo-inverse) case.
2. Soundness: for random and adversarially optimised replace-one neighbours (responses in
   [-M_Y, M_Y], several kernels, dimensions 1-2, r, sigma incl. inf, eta), the exact divergence on a
   test set containing the differing inputs never exceeds the certified bound (Thm 3.1 / Prop. 2 with
   the App. B lemmas) at the same alpha; the mean part never exceeds the Delta_n term and the
   covariance part never exceeds 2 psi_alpha(tau~).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats
from threadpoolctl import threadpool_limits

from privgp.accounting import rdp_covariance_term, rdp_mean_term, rdp_posterior_sample
from privgp.accounting.divergences import renyi_divergence_gaussians, renyi_divergence_parts
from privgp.audit.tightness.neighbours import neighbour_divergence, worst_case_neighbours
from privgp.errors import InvalidParameterError
from privgp.mechanisms.posterior_sample import bounds_for
from privgp.models.domain import Box
from privgp.models.kernels import Constant, Diagonal, Exponential, Matern32, Matern52, SquaredExponential


@pytest.fixture(autouse=True)
def _single_thread_blas():
    with threadpool_limits(1):  # tiny matrices: threads only add contention on the shared CI cores
        yield


def naive_renyi(alpha, m1, S1, m2, S2):
    """Textbook formula (Gil et al. 2013) with ordinary inverse and log-determinants."""
    Sa = alpha * S2 + (1 - alpha) * S1
    d = m1 - m2
    _, ld_a = np.linalg.slogdet(Sa)
    _, ld1 = np.linalg.slogdet(S1)
    _, ld2 = np.linalg.slogdet(S2)
    return 0.5 * alpha * d @ np.linalg.solve(Sa, d) - (ld_a - (1 - alpha) * ld1 - alpha * ld2) / (2 * (alpha - 1))


@pytest.mark.parametrize("alpha,m1,v1,m2,v2", [(2.5, 0.3, 1.2, -0.1, 1.5), (1.1, 0.0, 0.5, 2.0, 0.4),
                                               (7.0, 1.0, 1.0, 0.0, 1.0), (1.5, -0.4, 0.2, 0.4, 0.25)])
def test_one_dimensional_against_numerical_integration(alpha, m1, v1, m2, v2):
    def integrand(t):
        return math.exp(alpha * stats.norm.logpdf(t, m1, math.sqrt(v1)) + (1 - alpha) * stats.norm.logpdf(t, m2, math.sqrt(v2)))
    value, err = integrate.quad(integrand, -40, 40, points=[m1, m2], limit=200, epsabs=1e-14, epsrel=1e-12)
    expected = math.log(value) / (alpha - 1)
    total, mean, cov = renyi_divergence_parts(alpha, [m1], [[v1]], [m2], [[v2]])
    assert total == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert mean == pytest.approx(0.5 * alpha * (m1 - m2) ** 2 / (alpha * v2 + (1 - alpha) * v1), rel=1e-12)
    assert cov >= 0


def test_positive_definite_against_textbook_formula_and_basic_identities():
    rng = np.random.default_rng(3)
    for _ in range(30):
        m = int(rng.integers(1, 7))
        A = rng.normal(size=(m, m))
        S2 = A @ A.T + 0.5 * np.eye(m)
        B = rng.normal(size=(m, m)) * 0.3
        S1 = S2 + B @ B.T * 0.5
        m1, m2 = rng.normal(size=m), rng.normal(size=m)
        lam = np.linalg.eigvals(np.linalg.solve(S2, S1)).real.max()
        alpha = 1 + rng.uniform(0.05, 0.95) / max(lam - 1, 1e-3)
        assert renyi_divergence_gaussians(alpha, m1, S1, m2, S2) == pytest.approx(
            naive_renyi(alpha, m1, S1, m2, S2), rel=1e-8, abs=1e-10)
        assert renyi_divergence_gaussians(alpha, m1, S1, m1, S1) == pytest.approx(0.0, abs=1e-12)
        c = float(rng.uniform(0.1, 10))  # invariant under a common change of scale
        assert renyi_divergence_gaussians(alpha, c * m1, c * c * S1, c * m2, c * c * S2) == pytest.approx(
            renyi_divergence_gaussians(alpha, m1, S1, m2, S2), rel=1e-9, abs=1e-12)
    # additive over independent coordinates
    a = 1.7
    parts = [renyi_divergence_gaussians(a, [0.2], [[1.0]], [0.0], [[1.3]]),
             renyi_divergence_gaussians(a, [-1.0], [[0.5]], [0.5], [[0.6]])]
    joint = renyi_divergence_gaussians(a, [0.2, -1.0], np.diag([1.0, 0.5]), [0.0, 0.5], np.diag([1.3, 0.6]))
    assert joint == pytest.approx(sum(parts), rel=1e-12)


def test_singular_covariances_use_the_common_support():
    one = np.ones((3, 3))
    alpha = 2.0
    # both supported on the line through (1,1,1): reduce by hand to 1-D (variance 3c, mean offset along 1/sqrt 3)
    m1, m2 = np.array([1.0, 1.0, 1.0]), np.array([0.2, 0.2, 0.2])
    got = renyi_divergence_gaussians(alpha, m1, 0.5 * one, m2, 0.7 * one)
    ref = renyi_divergence_gaussians(alpha, [math.sqrt(3.0)], [[1.5]], [0.2 * math.sqrt(3.0)], [[2.1]])
    assert got == pytest.approx(ref, rel=1e-12)
    # a mean difference off the common support, different supports, or S_alpha not PD: +inf
    assert math.isinf(renyi_divergence_gaussians(alpha, [0, 1.0], np.diag([1.0, 0.0]), [0, 0.0], np.diag([1.0, 0.0])))
    assert math.isinf(renyi_divergence_gaussians(alpha, [0, 0], np.diag([1.0, 0.0]), [0, 0], np.eye(2)))
    assert math.isinf(renyi_divergence_gaussians(alpha, [0, 0], np.eye(2), [0, 0], np.diag([1.0, 0.0])))
    assert math.isinf(renyi_divergence_gaussians(3.0, [0.0], [[2.0]], [0.0], [[0.9]]))  # 3*0.9 - 2*2 < 0
    assert renyi_divergence_gaussians(2.0, [], np.zeros((0, 0)), [], np.zeros((0, 0))) == 0.0
    with pytest.raises(InvalidParameterError, match="alpha"):
        renyi_divergence_gaussians(1.0, [0.0], [[1.0]], [0.0], [[1.0]])
    with pytest.raises(InvalidParameterError, match="mean/cov"):
        renyi_divergence_gaussians(2.0, [0.0, 1.0], [[1.0]], [0.0], [[1.0]])


def naive_posterior(kernel, X, y, XT, r):
    A = kernel(X) + r * r * np.eye(len(X))
    KxT = kernel(X, XT)
    return KxT.T @ np.linalg.solve(A, y), kernel(XT) - KxT.T @ np.linalg.solve(A, KxT)


def test_neighbour_divergence_matches_a_naive_computation():
    rng = np.random.default_rng(11)
    k = Matern32(0.4)
    Xc, yc = rng.uniform(0, 1, (5, 2)), rng.uniform(-1, 1, 5)
    x, xp, XT = rng.uniform(0, 1, 2), rng.uniform(0, 1, 2), rng.uniform(0, 1, (3, 2))
    r, sigma, eta, alpha = 0.6, 0.8, 0.3, 1.4
    full = np.vstack([x, xp, XT])
    mD, KD = naive_posterior(k, np.vstack([Xc, x]), np.append(yc, 1.0), full, r)
    mP, KP = naive_posterior(k, np.vstack([Xc, xp]), np.append(yc, -1.0), full, r)
    noise = eta**2 * k(full)
    ref = naive_renyi(alpha, mD, sigma**2 * KD + noise, mP, sigma**2 * KP + noise)
    total, mean, cov = neighbour_divergence(k, Xc, yc, x, 1.0, xp, -1.0, XT, r=r, sigma=sigma, eta=eta, alpha=alpha)
    assert total == pytest.approx(ref, rel=1e-8) and mean + cov == pytest.approx(total, rel=1e-14)
    # sigma = inf: covariance only, zero mean part
    t_inf, m_inf, c_inf = neighbour_divergence(k, Xc, yc, x, 1.0, xp, -1.0, XT, r=r, sigma=math.inf, alpha=alpha)
    assert m_inf == 0.0 and t_inf == pytest.approx(naive_renyi(alpha, 0 * mD, KD, 0 * mP, KP), rel=1e-8)


# ----------------------------------------------------------------------------- soundness
KERNELS = {"exponential": Exponential, "matern32": Matern32, "matern52": Matern52,
           "squared_exponential": SquaredExponential, "constant": None, "diagonal": None}


def lemmas_for(kernel_name, dim):
    out = ["generic"]
    if kernel_name == "exponential" and dim == 1:
        out.append("exp1d")
    if kernel_name in ("constant", "diagonal"):
        out.append(kernel_name)
    return out


@st.composite
def neighbour_case(draw):
    name = draw(st.sampled_from(sorted(KERNELS)))
    dim = draw(st.sampled_from([1, 2]))
    ell = math.exp(draw(st.floats(math.log(0.1), math.log(3.0))))
    kernel = Constant() if name == "constant" else Diagonal() if name == "diagonal" else KERNELS[name](ell)
    return dict(
        kernel=kernel, name=name, dim=dim, n=draw(st.integers(1, 6)),
        r=math.exp(draw(st.floats(math.log(0.1), math.log(5.0)))),
        sigma=math.exp(draw(st.floats(math.log(0.05), math.log(20.0)))) if draw(st.integers(0, 4)) else math.inf,
        eta=0.0 if draw(st.booleans()) else math.exp(draw(st.floats(math.log(0.05), math.log(3.0)))),
        M_Y=math.exp(draw(st.floats(math.log(0.2), math.log(5.0)))), u=draw(st.floats(0.02, 0.98)),
        layout=draw(st.sampled_from(["uniform", "piled", "at_x", "extreme"])), extra=draw(st.integers(0, 3)),
        seed=draw(st.integers(0, 2**32 - 1)))


def make_data(c):
    rng = np.random.default_rng(c["seed"])
    d, nc, M = c["dim"], c["n"] - 1, c["M_Y"]
    x, xp = rng.uniform(0, 1, d), rng.uniform(0, 1, d)
    Xc = rng.uniform(0, 1, (nc, d))
    if c["layout"] == "piled":                      # Prop. 3's extremal core: all at one point
        Xc[:] = rng.uniform(0, 1, d)
    elif c["layout"] == "at_x" and nc:              # core points on the differing inputs
        Xc[: nc // 2 + 1] = x
        Xc[nc // 2 + 1:] = xp
    yc = rng.uniform(-M, M, nc)
    y, yp = rng.uniform(-M, M), rng.uniform(-M, M)
    if c["layout"] in ("extreme", "piled", "at_x"):  # responses at the bounds, opposite signs
        yc = M * rng.choice([-1.0, 1.0], nc)
        y, yp = M, -M
    XT = np.vstack([Xc, rng.uniform(0, 1, (c["extra"], d))])
    return Xc, yc, x, y, xp, yp, XT


@settings(max_examples=150, deadline=None)
@given(neighbour_case())
def test_exact_divergence_never_exceeds_the_certified_bound(c):
    dom = Box.unit(c["dim"])
    Xc, yc, x, y, xp, yp, XT = make_data(c)
    for lemma in lemmas_for(c["name"], c["dim"]):
        b = bounds_for(c["n"], c["r"], kernel=c["kernel"], domain=dom, M_Y=c["M_Y"], sensitivity=lemma)
        V, Delta = float(b.V), float(b.Delta)
        tau = V / (c["r"] ** 2 + (0 if math.isinf(c["sigma"]) else (c["eta"] / c["sigma"]) ** 2 * (V + c["r"] ** 2)))
        alpha = 1 + c["u"] / tau
        total, mean, cov = neighbour_divergence(c["kernel"], Xc, yc, x, y, xp, yp, XT, r=c["r"], sigma=c["sigma"],
                                                eta=c["eta"], alpha=alpha)
        bound = float(rdp_posterior_sample(alpha, V, Delta, c["r"], c["sigma"], c["eta"]))
        assert math.isfinite(bound)
        assert total <= bound * (1 + 1e-9) + 1e-10, (lemma, total, bound)
        assert mean <= float(rdp_mean_term(alpha, V, Delta, c["r"], c["sigma"], c["eta"])) * (1 + 1e-9) + 1e-10
        assert cov <= float(rdp_covariance_term(alpha, V, c["r"], c["sigma"], c["eta"])) * (1 + 1e-9) + 1e-10


ADVERSARIAL = [
    dict(kernel=Exponential(1.0), dim=1, sensitivity="exp1d", n=4, r=0.5, sigma=1.0, eta=0.0, u=0.5),
    dict(kernel=Exponential(0.3), dim=1, sensitivity="exp1d", n=3, r=0.3, sigma=0.3, eta=0.0, u=0.8),
    dict(kernel=Matern32(0.5), dim=2, sensitivity="generic", n=3, r=1.0, sigma=0.5, eta=0.5, u=0.6),
    dict(kernel=SquaredExponential(0.4), dim=1, sensitivity="generic", n=4, r=0.4, sigma=math.inf, eta=0.0, u=0.9),
    dict(kernel=Matern52(1.0), dim=2, sensitivity="generic", n=2, r=0.2, sigma=2.0, eta=0.0, u=0.3),
]


@pytest.mark.parametrize("case,objective", [(c, o) for c in ADVERSARIAL for o in ("total", "mean", "cov")
                                             if o != "mean" or math.isfinite(c["sigma"])],  # sigma = inf: no mean part
                         ids=lambda p: p if isinstance(p, str) else f"{p['kernel'].name}-{p['dim']}d-s{p['sigma']}")
def test_adversarially_optimised_neighbours_stay_below_the_bound(case, objective):
    dom = Box.unit(case["dim"])
    b = bounds_for(case["n"], case["r"], kernel=case["kernel"], domain=dom, sensitivity=case["sensitivity"])
    tau = float(b.V) / (case["r"] ** 2 + (0 if math.isinf(case["sigma"]) else
                                          (case["eta"] / case["sigma"]) ** 2 * (float(b.V) + case["r"] ** 2)))
    alpha = 1 + case["u"] / tau
    res = worst_case_neighbours(alpha, n=case["n"], kernel=case["kernel"], domain=dom, r=case["r"],
                                sigma=case["sigma"], eta=case["eta"], rng=np.random.default_rng(5), restarts=3,
                                test_points=1, maxiter=40, objective=objective, sensitivity=case["sensitivity"])
    assert math.isfinite(res.bound) and res.evaluations > 10
    assert res.divergence <= res.bound * (1 + 1e-9)
    assert res.mean_part <= res.mean_bound * (1 + 1e-9) + 1e-12
    assert res.cov_part <= res.cov_bound * (1 + 1e-9) + 1e-12
    assert 0 <= res.ratio <= 1
    # the reported pair is genuine: recomputing its divergence gives the reported value
    p = res.pair
    again = neighbour_divergence(case["kernel"], p.X_core, p.y_core, p.x, p.y, p.x_prime, p.y_prime,
                                 res.XT, r=case["r"], sigma=case["sigma"], eta=case["eta"], alpha=alpha)
    assert again[0] == pytest.approx(res.divergence, rel=1e-9, abs=1e-12)
    assert np.all(np.abs(p.y_core) <= 1.0) and abs(p.y) <= 1.0 and dom.contains(res.XT).all()


def test_worst_case_search_validates_its_input():
    with pytest.raises(InvalidParameterError, match="rng"):
        worst_case_neighbours(1.5, n=3, kernel=Exponential(1.0), domain=Box.unit(1), r=1.0, sigma=1.0, rng=0)
    with pytest.raises(InvalidParameterError, match="objective"):
        worst_case_neighbours(1.5, n=3, kernel=Exponential(1.0), domain=Box.unit(1), r=1.0, sigma=1.0,
                              rng=np.random.default_rng(0), objective="variance")
    with pytest.raises(InvalidParameterError, match="kernel"):
        worst_case_neighbours(1.5, n=3, kernel="exponential", domain=Box.unit(1), r=1.0, sigma=1.0,
                              rng=np.random.default_rng(0))
