"""The search over the Renyi order for large batches (Brent's method, block by block, in threads): the same
bits however the batch is split, never worse than the one-setting search beyond rounding of the optimum,
the objective at the order it reports, and the edge cases (no admissible order, NaN) of the other paths."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privgp.accounting import epsilon_from_rdp, rdp_posterior_sample
from privgp.accounting import order_search as search
from privgp.accounting.conversion import epsilon_raw
from privgp.errors import NumericalError
from privgp.mechanisms.posterior_sample import bounds_for, epsilon_posterior_sampling, posterior_sample_batch

S = 3000


def _settings(seed=11, size=S):
    """Wide random settings: sigma = inf (covariance only) for a fifth, r and sigma over six decades."""
    rng = np.random.default_rng(seed)
    return dict(n=rng.integers(2, 2000, size), r=np.exp(rng.uniform(np.log(1e-3), np.log(1e3), size)),
                sigma=np.where(rng.random(size) < 0.2, np.inf, np.exp(rng.uniform(np.log(1e-3), np.log(1e3), size))),
                eta=np.where(rng.random(size) < 0.5, 0.0, rng.uniform(0, 2, size)), L=rng.integers(1, 100, size),
                lengthscale=np.exp(rng.uniform(np.log(0.05), np.log(2), size)))


def _epsilon(s, sl=slice(None), conversion="improved"):
    return epsilon_posterior_sampling(s["n"][sl], s["r"][sl], s["sigma"][sl], 1e-5, eta=s["eta"][sl], L=s["L"][sl],
                                      lengthscale=s["lengthscale"][sl], kernel="matern32", conversion=conversion)


@pytest.fixture(scope="module")
def wide():
    s = _settings()
    return s, _epsilon(s)


def test_the_same_bits_however_the_batch_is_split(wide, monkeypatch):
    s, ref = wide
    monkeypatch.setattr(search, "THREAD_MIN_SETTINGS", 100)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")      # the suite's conftest sets 1
    for threads, part, in_threads in ((1, 25000, False), (2, 25000, False), (3, 25000, False), (1, 700, False),
                                      (1, 333, False), (2, 333, True)):        # threads; parts (in threads too)
        monkeypatch.setattr(search, "MAX_THREADS", threads)
        monkeypatch.setattr(search, "BRENT_PART", part)
        monkeypatch.setattr(search, "PARTS_IN_THREADS", in_threads)
        got = _epsilon(s)
        assert np.array_equal(got.epsilon, ref.epsilon) and np.array_equal(got.alpha, ref.alpha), (threads, part)
    # a part of the batch alone: each setting's search depends on that setting only
    part = _epsilon(s, slice(1000, 1700))
    assert np.array_equal(part.epsilon, ref.epsilon[1000:1700]) and np.array_equal(part.alpha, ref.alpha[1000:1700])


@pytest.mark.parametrize("conversion", ["improved", "mironov"])
def test_as_tight_as_the_one_setting_search_and_a_dense_grid(conversion):
    s = _settings(seed=12)
    big = _epsilon(s, conversion=conversion)                                   # Brent (more than 64 settings)
    small = np.concatenate([np.atleast_1d(_epsilon(s, slice(i, i + 50), conversion).epsilon)
                            for i in range(0, S, 50)])                         # zoom rounds (certificates' path)
    fin = np.isfinite(small)
    assert np.array_equal(fin, np.isfinite(big.epsilon))
    assert np.all(big.epsilon[fin] <= small[fin] * (1 + 1e-8) + 1e-12)
    # the dense grid over the whole admissible range of the first 40 settings (both ends resolved)
    t = np.linspace(-45.0, 35.0, 20001)
    for i in range(40):
        amax = float(big.alpha_max[i])
        grid = 1 + (amax - 1) / (1 + np.exp(-t)) if np.isfinite(amax) else 1 + np.exp(np.linspace(-23, 23, 20001))
        grid = grid[(grid > 1) & (grid < amax)]
        b = bounds_for(int(s["n"][i]), float(s["r"][i]), kernel="matern32", lengthscale=float(s["lengthscale"][i]))
        rdp = s["L"][i] * rdp_posterior_sample(grid, b.V, b.Delta, s["r"][i], s["sigma"][i], s["eta"][i])
        dense = float(np.min(epsilon_from_rdp(rdp, grid, 1e-5, conversion)))
        assert big.epsilon[i] <= dense * (1 + 2e-6) + 1e-12, i


def _brent_one_setting(objective, amax):
    """Brent's method for ONE setting in plain Python floats, written from the book (R. P. Brent 1973, ch. 5; the
    form of Numerical Recipes' ``brent``) with the lock-step search's choices: the start from the BRENT_GRID grid
    (x its best point, w the better neighbour, v the other, d = e = b - a), an absolute tolerance BRENT_TOL, and a
    parabola trusted only where every condition holds (so NaN, from infinite values, is never trusted). The
    independent reference of the vectorised search: (alpha at x, f(x))."""
    evaluate = search._evaluator(objective, np.array([amax]))
    f = lambda t: tuple(float(z[0, 0]) for z in evaluate(np.array([[t]])))  # noqa: E731  (alpha, value)
    lo, hi = (float(z[0]) for z in search.search_range(np.array([amax])))
    ts = [lo + (hi - lo) * float(st) for st in search._grid_steps(search.BRENT_GRID)]
    grid = [f(t) for t in ts]
    j = min(range(len(ts)), key=lambda i: grid[i][1])               # the first smallest, as np.argmin
    il, ir = max(j - 1, 0), min(j + 1, len(ts) - 1)
    a, x, b = ts[il], ts[j], ts[ir]
    ax, fx = grid[j]
    (w, fw), (v, fv) = ((a, grid[il][1]), (b, grid[ir][1])) if grid[il][1] <= grid[ir][1] else \
        ((b, grid[ir][1]), (a, grid[il][1]))
    d = e = b - a
    tol1 = search.BRENT_TOL
    tol2 = 2.0 * tol1
    for _ in range(search.BRENT_ITERATIONS):
        xm = 0.5 * (a + b)
        if abs(x - xm) <= tol2 - 0.5 * (b - a):
            break
        r = (x - w) * (fx - fv)
        q = (x - v) * (fx - fw)
        p = (x - v) * q - (x - w) * r
        q = 2.0 * (q - r)
        if q > 0.0:
            p = -p
        q = abs(q)
        golden = a - x if x >= xm else b - x
        if abs(e) > tol1 and abs(p) < abs(0.5 * q * e) and p > q * (a - x) and p < q * (b - x):
            e, d = d, p / q
            if (x + d) - a < tol2 or b - (x + d) < tol2:
                d = math.copysign(tol1, xm - x)
        else:
            e = golden
            d = search._CGOLD * golden
        u = x + (d if abs(d) >= tol1 else math.copysign(tol1, d))
        au, fu = f(u)
        if fu <= fx:
            if u >= x:
                a = x
            else:
                b = x
            v, fv, w, fw, x, fx, ax = w, fw, x, fx, u, fu, au
        else:
            if u < x:
                a = u
            else:
                b = u
            if fu <= fw or w == x:
                v, fv, w, fw = w, fw, u, fu
            elif fu <= fv or v == x or v == w:
                v, fv = u, fu
    return ax, fx


def test_the_lock_step_search_is_brents_method_setting_by_setting(monkeypatch):
    """The vectorised search (threads, parts, the done settings dropped) against the scalar method above, to the bit,
    on random posterior-sample settings (some of them covariance-only, some with alpha_max = inf)."""
    monkeypatch.setattr(search, "BRENT_PART", 97)
    s = _settings(seed=5, size=300)
    got = _epsilon(s)
    batch = posterior_sample_batch(s["n"], s["r"], s["sigma"], eta=s["eta"], L=s["L"], kernel="matern32",
                                   lengthscale=s["lengthscale"])
    amax = np.maximum(batch.alpha_max(), np.nextafter(1.0, 2.0) * (1 + 1e-12))   # as the accountant passes it
    lid = -np.log(1e-5)
    for i in range(300):
        curve = batch.rdp_of_rows(np.array([i]))
        a, value = _brent_one_setting(lambda al, c=curve: epsilon_raw(c(al), al, lid, "improved"), float(amax[i]))
        if value == np.inf:     # no admissible order: a valid order in range is reported, with value inf
            a = 1.0 + 0.5 * (amax[i] - 1.0) if np.isfinite(amax[i]) else 2.0
        assert (got.alpha[i], got.epsilon[i]) == (a, value), i


def _gaussian_rows(c, log_inv_delta):
    """rho alpha + log(1/delta) / (alpha - 1) (a Gaussian mechanism's RDP, Mironov's conversion) of settings c."""
    def rows(index):
        ci = c[index, None]
        return lambda alpha: ci * alpha + log_inv_delta / (alpha - 1.0)
    return rows


def test_brent_finds_a_known_minimum_and_reports_the_objective_at_its_order():
    rng = np.random.default_rng(3)
    c = np.exp(rng.uniform(np.log(1e-6), np.log(1e2), 5000))
    rows = _gaussian_rows(c, np.log(1e5))
    a, v = search.minimize_over_alpha(rows(np.arange(c.size)), np.full(c.size, np.inf), rows=rows)
    exact = c + 2.0 * np.sqrt(c * np.log(1e5))             # at alpha - 1 = sqrt(log(1/delta) / rho)
    assert np.all(v >= exact * (1 - 1e-14)) and np.all(v <= exact * (1 + 1e-9))
    assert np.array_equal(v, c * a + np.log(1e5) / (a - 1.0))


def test_no_admissible_order_and_nan_as_the_other_searches():
    rows = lambda index: (lambda alpha: np.full(alpha.shape, np.inf))  # noqa: E731
    amax = np.concatenate([np.full(100, 3.0), np.full(100, np.inf)])
    a, v = search.minimize_over_alpha(rows(np.arange(200)), amax, rows=rows)
    assert np.all(v == np.inf) and np.all(a[:100] == 2.0) and np.all(a[100:] == 2.0)
    bad = lambda index: (lambda alpha: np.where(alpha > 1.5, np.nan, alpha))  # noqa: E731
    with pytest.raises(NumericalError, match="NaN"):
        search.minimize_over_alpha(bad(np.arange(200)), np.full(200, 10.0), rows=bad)


floats = st.floats(allow_nan=True, allow_infinity=True, width=64)


@given(arrays(np.float64, 20, elements=floats), arrays(np.float64, 20, elements=floats), arrays(bool, 20))
def test_pick_is_np_where_to_the_bit(a, b, cond):
    got = search._pick(search._mask(cond), a, b)
    assert np.array_equal(got.view(np.int64), np.where(cond, a, b).view(np.int64))


@given(arrays(np.int64, 30, elements=st.integers(-2**63, 2**63 - 1)))
def test_tol1_signed_is_copysign_to_the_bit(bits):
    """Brent's steps of length tol1 signed by the bits (issue 30) are np.copysign's, for every float: zeros, subnormals,
    infinities and NaNs of either sign included."""
    y = np.concatenate([bits.view(np.float64), [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324]])
    expected = np.copysign(search.BRENT_TOL, y).view(np.int64)
    assert np.array_equal(search._tol1_signed(y, np.empty_like(y)).view(np.int64), expected)
    assert np.array_equal(search._tol1_signed(y, y).view(np.int64), expected)             # in place


def test_the_threads_see_the_callers_context_and_numpy_error_handling(monkeypatch):
    import contextvars
    import threading

    monkeypatch.setattr(search, "THREAD_MIN_SETTINGS", 100)
    monkeypatch.setattr(search, "MAX_THREADS", 2)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    var = contextvars.ContextVar("privgp_test_var", default="default")
    seen = set()

    def rows(index):
        def objective(alpha):
            seen.add((threading.get_ident(), var.get(), np.geterr()["under"]))   # "under": the search leaves it
            return alpha + 1.0 / (alpha - 1.0)
        return objective

    token = var.set("caller's")
    try:
        with np.errstate(under="raise"):
            search.minimize_over_alpha(rows(np.arange(400)), np.full(400, np.inf), rows=rows)
    finally:
        var.reset(token)
    assert threading.get_ident() not in {t for t, _, _ in seen}    # searched in the pool's threads
    assert {(v, d) for _, v, d in seen} == {("caller's", "raise")}


@pytest.mark.parametrize("omp, expected", [("1", 1), ("", 2), ("4", 2), ("0", 2), ("two", 2)])
def test_the_threads_follow_omp_num_threads(monkeypatch, omp, expected):
    monkeypatch.setattr(search.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", omp)
    assert search.search_threads() == expected
