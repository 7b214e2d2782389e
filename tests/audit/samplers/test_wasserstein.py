"""Seed 004, Theorem 2's ingredients against mpmath references, and the theorem itself on exact laws."""
import json
import math
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

from privgp.accounting.mixtures import Mixture1D
from privgp.audit.samplers.sgld_model import CyclicSGLD, posterior_pair
from privgp.audit.samplers.wasserstein import ball_average, lipschitz, quantile, theorem2, w2
from privgp.errors import InvalidParameterError

MIX = Mixture1D(np.array([-0.3, 0.1, 0.25]), np.array([0.2, 0.15, 0.3]), np.array([0.5, 0.3, 0.2]))
GAUSS = Mixture1D.gaussian(0.05, 0.22)


def _mp(m: Mixture1D):
    w = [mp.mpf(float(a)) for a in (m.weights if m.weights is not None else np.full(m.size, 1.0 / m.size))]
    mus = [mp.mpf(float(a)) for a in m.means]
    sds = [mp.mpf(float(a)) for a in m.sds]
    cdf = lambda x: mp.fsum(wi * mp.ncdf((x - mi) / si) for wi, mi, si in zip(w, mus, sds))  # noqa: E731
    pdf = lambda x: mp.fsum(wi * mp.npdf(x, mi, si) for wi, mi, si in zip(w, mus, sds))  # noqa: E731
    return cdf, pdf


#: scripts/generate_wasserstein_reference.py (mpmath: quantiles at 30 digits, W2 by quadrature at 20; about 20 s)
REF = json.loads((Path(__file__).resolve().parents[2] / "data" / "wasserstein_reference.json").read_text())


def test_the_references_are_of_this_pair():
    for m, (means, sds, weights) in ((MIX, REF["mix"]), (GAUSS, REF["gauss"])):
        assert m.means.tolist() == [float(v) for v in means] and m.sds.tolist() == [float(v) for v in sds]
        assert (m.weights if m.weights is not None else np.ones(1)).tolist() == [float(v) for v in weights]


def test_quantiles_equal_mpmath():
    """Bisection on the mpmath cdf (60 halvings of [-5, 5]), then Newton polishing, at 30 digits."""
    z = [float(k) for k in REF["mix_quantiles"]]
    ours = quantile(MIX, np.array(z))
    for q, ref in zip(ours, REF["mix_quantiles"].values()):
        assert abs(float(ref) - q) < 1e-12


def test_w2_equals_mpmath_quadrature_of_the_quantile_functions():
    """W_2^2 = int_0^1 (F^-1 - G^-1)^2 du, by mpmath's tanh-sinh quadrature in z at 20 digits."""
    assert w2(MIX, GAUSS) == pytest.approx(float(REF["w2"]), rel=1e-9)
    # two Gaussians: the closed form, also through the quadrature path
    a, b = Mixture1D.gaussian(0.3, 0.5), Mixture1D.gaussian(-0.1, 0.2)
    assert w2(a, b) == pytest.approx(math.hypot(0.4, 0.3), rel=1e-15)
    two = Mixture1D(np.array([0.3, 0.3]), np.array([0.5, 0.5]))
    assert w2(two, b) == pytest.approx(0.5, rel=1e-10)


def test_ball_average_and_lipschitz_equal_mpmath():
    mp.mp.dps = 30
    cdf, pdf = _mp(MIX)
    for x, lam in ((0.0, 0.05), (-0.4, 0.3), (1.2, 0.01)):
        ref = mp.quad(pdf, [x - lam, x + lam]) / (2 * lam)
        assert float(ball_average(MIX, np.array([x]), lam)[0]) == pytest.approx(float(ref), rel=1e-12)
    # sup |p'|: the root of p'' next to the best of a coarse grid of |p'|, all in mpmath (analytic derivatives)
    w = [mp.mpf(float(a)) for a in MIX.weights]
    comps = list(zip(w, [mp.mpf(float(a)) for a in MIX.means], [mp.mpf(float(a)) for a in MIX.sds]))
    d1 = lambda x: mp.fsum(-c * (x - m) / s**2 * mp.npdf(x, m, s) for c, m, s in comps)  # noqa: E731
    d2 = lambda x: mp.fsum(c * ((x - m) ** 2 / s**4 - 1 / s**2) * mp.npdf(x, m, s) for c, m, s in comps)  # noqa: E731
    grid = [mp.mpf(-1.5) + mp.mpf(3) * k / 600 for k in range(601)]
    x0 = max(grid, key=lambda x: abs(d1(x)))
    x_star = mp.findroot(d2, (x0 - mp.mpf(3) / 600, x0 + mp.mpf(3) / 600), solver="illinois")
    assert lipschitz(MIX) == pytest.approx(abs(float(d1(x_star))), rel=1e-9)
    assert lipschitz(GAUSS) == pytest.approx(1 / (0.22 ** 2 * math.sqrt(2 * math.pi * math.e)), rel=1e-15)


def test_theorem2_terms_and_that_it_holds():
    r = theorem2(MIX, GAUSS, 0.4)
    eps = math.sqrt(w2(MIX, GAUSS))
    L = max(lipschitz(MIX), lipschitz(GAUSS))
    assert r.eps == pytest.approx(eps) and r.R == pytest.approx(0.4 / (0.4 - eps))
    assert r.A == pytest.approx((r.R - 1) * 2 * 0.4 * L + eps / (2 * (0.4 - eps)))
    x = np.linspace(-3, 3, 20001)
    brute = ball_average(MIX, x, 0.4) - r.R * ball_average(GAUSS, x, 0.4)
    assert r.excess == pytest.approx(max(brute.max(), 0.0), abs=1e-9) and r.holds
    with pytest.raises(InvalidParameterError, match="lam"):
        theorem2(MIX, GAUSS, 0.5 * eps)


@pytest.mark.parametrize("K", [0, 3, 30, math.inf])
def test_theorem2_holds_for_cyclic_sgld_against_the_posterior(K):
    """The exact laws of the paper's counterexample (n = 30): the theorem's A bounds the exact excess
    under D1 (a Gaussian) and D2 (the 30-component mixture) at several radii."""
    s = CyclicSGLD(30, 0.1, 1.0, 1.8, 30 ** 1.001)
    law = s.law(K if math.isinf(K) else K * s.n)
    (_, v1), (gap2, v2) = posterior_pair(s)
    pairs = [(Mixture1D.gaussian(law.mean1, math.sqrt(law.var1)), Mixture1D.gaussian(0.0, math.sqrt(v1))),
             (Mixture1D(law.mean1 - law.gaps, law.sds2), Mixture1D.gaussian(-gap2, math.sqrt(v2)))]
    for P, Q in pairs:
        eps = math.sqrt(w2(P, Q))
        for k in (1.1, 3.0, 30.0):
            assert theorem2(P, Q, k * eps, eps=eps).holds
