"""Seed 004's exact laws against independent mpmath references (scripts/generate_sgld_reference.py ->
tests/data/sgld_reference.json): the paper's uncentred formulas at 34 digits, exact rationals for the
small case, and full sums over all 1 149 019 components for the Figure-1 indicator.

The stable centred form agrees with the references; the paper's formulas evaluated naively in float64
do not (the test that shows why the centred log1p/expm1 form is needed).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from privgp.accounting.divergences import renyi_gaussian_1d
from privgp.audit.samplers.sgld_model import CyclicSGLD, IterateLaws, posterior_pair

REF = json.loads((Path(__file__).resolve().parents[2] / "data" / "sgld_reference.json").read_text())
FIG = REF["figure1"]
S = CyclicSGLD(1149019, 0.1, 1.0, 1.8, 1165165.0)


def _K(k):
    return math.inf if k == "inf" else int(k)


def _law(K):
    return S.law(math.inf if math.isinf(K) else K * S.n)


def _naive_epoch_law(s: CyclicSGLD, K: int) -> IterateLaws:
    """Laws at t = K n from the paper's uncentred formulas (eqs. (17), (18), (20), (22) as an affine
    epoch map) in plain float64: 1 - lambda formed by subtraction, means of size mu_inf subtracted.
    What the library must not do (privgp.audit.samplers.sgld_model uses the centred log1p/expm1 form)."""
    n, eta = s.n, s.eta
    lam = 1.0 - 0.5 * eta * (s.alpha + n * s.x_h ** 2 * s.beta)
    lam_hat = 1.0 - 0.5 * eta * (s.alpha + n * (s.x_h / 2) ** 2 * s.beta)
    rho = 0.5 * eta * n * s.c * s.x_h ** 2 * s.beta
    rho_hat = 0.5 * eta * n * s.c * (s.x_h / 2) ** 2 * s.beta
    r = s.r
    P = lam_hat * lam ** (n - 1)
    # uncentred epoch offset: r-1 normal steps from 0, odd step, n-r normal steps
    before = rho * (1.0 - lam ** (r - 1)) / (1.0 - lam)
    q = (lam_hat * before + rho_hat) * lam ** (n - r) + rho * (1.0 - lam ** (n - r)) / (1.0 - lam)

    def noise(j):
        return eta * (1.0 - lam ** (2 * j)) / (1.0 - lam ** 2)

    V = lam ** (2 * (n - r)) * (lam_hat ** 2 * noise(r - 1) + eta) + noise(n - r)
    m0 = 0.0 if s.init == "prior" else s.theta0
    v0 = 1.0 / s.alpha if s.init == "prior" else 0.0
    mu2 = P ** K * m0 + q * (1.0 - P ** K) / (1.0 - P)
    var2 = P ** (2 * K) * v0 + V * (1.0 - P ** (2 * K)) / (1.0 - P ** 2)
    t = K * n
    mu1 = lam ** t * m0 + rho * (1.0 - lam ** t) / (1.0 - lam)
    var1 = lam ** (2 * t) * v0 + noise(t)
    mu_inf = rho / (1.0 - lam)
    return IterateLaws(t, mu_inf, mu1 - mu_inf, var1, mu1 - mu2, var2)


def test_constants():
    c = S.constants()
    assert c["eta"] == pytest.approx(float(FIG["constants"]["eta"]), rel=1e-15)
    assert c["one_minus_lambda"] == pytest.approx(1 - float(FIG["constants"]["lambda"]), rel=1e-9)
    assert c["P"] == pytest.approx(float(FIG["constants"]["P"]), rel=1e-12)


@pytest.mark.parametrize("row", FIG["epoch_components"], ids=lambda r: f"K{r['K']}-r{r['r']}")
def test_epoch_end_components(row):
    law = _law(_K(row["K"]))
    i = row["r"] - 1
    assert law.gaps[i] == pytest.approx(float(row["gap"]), rel=1e-10)
    assert law.vars2[i] == pytest.approx(float(row["var2"]), rel=1e-12)
    assert law.var1 == pytest.approx(float(row["var1"]), rel=1e-12)


@pytest.mark.parametrize("row", FIG["inside_components"], ids=lambda r: f"r{r['r']}")
def test_components_inside_an_epoch(row):
    law = S.law(row["t"])
    i = row["r"] - 1
    assert law.gaps[i] == pytest.approx(float(row["gap"]), rel=1e-10)
    assert law.vars2[i] == pytest.approx(float(row["var2"]), rel=1e-12)
    assert law.var1 == pytest.approx(float(row["var1"]), rel=1e-12)


@pytest.mark.parametrize("row", FIG["full_sums"], ids=lambda r: f"K{r['K']}")
def test_figure1_indicator_full_sums(row):
    law = _law(_K(row["K"]))
    assert law.indicator() == pytest.approx(float(row["F"]), rel=1e-9)
    if "tail" in row:
        assert law.tail_probability() == pytest.approx(float(row["tail"]), rel=1e-12)


def test_pinned_figure1_values():
    """Figure 1 as reproduced in docs/notes/seed004_sgld.md, sec. 3: peak F_25 = 3.033463, F_inf = 1.566028e-9, P(theta > mu) at the peak."""
    assert _law(25).indicator() == pytest.approx(3.033463, abs=5e-7)
    assert _law(math.inf).indicator() == pytest.approx(1.566028e-9, rel=1e-6)
    assert _law(25).tail_probability() == pytest.approx(0.04078188, rel=1e-6)


@pytest.mark.parametrize("K", [60, "inf"])
def test_naive_float64_loses_the_signal_where_the_stable_form_does_not(K):
    """The paper's uncentred formulas in float64 (1 - lambda by subtraction, means ~1.2e6 subtracted) miss
    the mpmath indicator by 0.17% at K = 60 and 1.7% at K = inf; the centred form matches it to 1e-9."""
    ref = float(next(r for r in FIG["full_sums"] if r["K"] == K)["F"])
    if K == "inf":
        naive = _naive_epoch_law(S, 10 ** 6)      # P^K underflows: the naive stationary law
    else:
        naive = _naive_epoch_law(S, K)
    assert abs(naive.indicator() / ref - 1) > 1e-3
    assert _law(_K(K)).indicator() == pytest.approx(ref, rel=1e-9)


def test_small_case_exact_rationals():
    s = CyclicSGLD(5, 1.0, 4.0, 1.0, 3.0)
    for row in REF["small"]["laws"]:
        law = s.law(row["t"])
        assert law.mu_inf + law.mean1 == pytest.approx(float(row["mean1"]), rel=1e-13)
        assert law.var1 == pytest.approx(float(row["var1"]), rel=1e-13)
        means = law.mu_inf + law.mean1 - law.gaps
        assert means == pytest.approx([float(m) for m in row["means2"]], rel=1e-13)
        assert law.vars2 == pytest.approx([float(x) for x in row["vars2"]], rel=1e-13)


def test_posterior_pair_and_its_renyi():
    (mu1, v1), (gap, v2) = posterior_pair(S)
    P = FIG["posterior"]
    assert mu1 == pytest.approx(float(P["mean1"]), rel=1e-15)
    assert gap == pytest.approx(float(P["gap"]), rel=1e-12)
    assert v2 == pytest.approx(float(P["var2"]), rel=1e-14)
    for row in P["renyi"]:
        nu = row["nu"]
        d12 = float(renyi_gaussian_1d(nu, 0.0, math.sqrt(v1), -gap, math.sqrt(v2)))
        d21 = float(renyi_gaussian_1d(nu, -gap, math.sqrt(v2), 0.0, math.sqrt(v1)))
        assert d12 == pytest.approx(float(row["D12"]), rel=1e-5)
        assert d21 == pytest.approx(float(row["D21"]), rel=1e-5)
    assert np.isfinite(d12)
