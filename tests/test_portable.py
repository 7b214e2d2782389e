"""privgp.portable: the same bits on every CPU, checked against plain Python floats (math's C-library functions,
sums in a fixed order), which do not depend on numpy's SIMD dispatch or on BLAS."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from privgp import portable
from privgp.mechanisms.registered.grid import smooth_ratio
from privgp.models.domain import Box


def test_exp_is_the_c_librarys_on_both_paths(monkeypatch):
    x = np.random.default_rng(0).uniform(-745.0, 709.0, (37, 11))
    want = np.array([[math.exp(v) for v in row] for row in x.tolist()])
    assert np.array_equal(portable.exp(x), want)
    portable.exp_route.cache_clear()
    monkeypatch.setattr(np, "exp", lambda a: np.full_like(a, np.nan))   # a numpy exp that is not the C library's
    try:
        assert not portable.numpy_exp_is_the_c_librarys()
        assert np.array_equal(portable.exp(x), want)                    # the elementwise path
    finally:
        portable.exp_route.cache_clear()


def test_every_exp_route_gives_the_c_librarys_bits(monkeypatch):
    """Each of exp's routes (numpy where it is the C library's, numpy read backwards, one Python call a value) gives
    math.exp's bits wherever it is chosen; the route is chosen by a probe, and a numpy whose exp read backwards is
    not the C library's (its SIMD loop taking negative strides one day) is not used that way."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-745.0, 709.0, 20_000), rng.uniform(-40.0, 5.0, 20_000),
                        [0.0, -0.0, -np.inf, 1e-320, -745.13, -745.14, -708.4, 709.78]])
    want = np.array([math.exp(v) for v in x.tolist()])
    same = lambda a, b: np.array_equal(np.asarray(a).view(np.int64), np.asarray(b).view(np.int64))  # noqa: E731
    route = portable.exp_route()
    assert route in ("numpy", "reversed", "python")
    assert same(portable.exp(x), want) and same(portable.exp(x.reshape(8, -1).T), want.reshape(8, -1).T)
    assert same(portable.exp(x[5]), want[5]) and portable.exp(x[:0]).shape == (0,)
    for forced in ("reversed", "python") if route != "numpy" else ("python",):
        monkeypatch.setattr(portable, "exp_route", lambda forced=forced: forced)
        assert same(portable.exp(x), want), forced
    monkeypatch.undo()
    real_exp = np.exp

    def simd_everywhere(a):   # a numpy whose backwards reads also take a loop that is not the C library's
        return np.nextafter(real_exp(a), np.inf)

    portable.exp_route.cache_clear()
    monkeypatch.setattr(np, "exp", simd_everywhere)
    try:
        assert portable.exp_route() == "python"
        assert same(portable.exp(x), want)
    finally:
        monkeypatch.undo()
        portable.exp_route.cache_clear()
    assert portable.exp_route() == route


def test_geomspace_is_numpys_formula_with_the_c_librarys_functions():
    for lo, hi, num in ((1e-9, 3.0, 129), (0.37, 0.3700000001, 33), (2.0, 5e4, 2)):
        got = portable.geomspace(lo, hi, num)
        a, b = math.log10(lo), math.log10(hi)
        ys = [a + (b - a) * i / (num - 1) for i in range(num)]
        assert got[0] == lo and got[-1] == hi
        assert np.allclose(got, np.geomspace(lo, hi, num), rtol=1e-14, atol=0.0)
        assert np.allclose(got[1:-1], [10.0 ** y for y in ys[1:-1]], rtol=1e-14, atol=0.0)
        assert np.array_equal(got[1:-1], [math.pow(10.0, y) for y in np.linspace(a, b, num)[1:-1].tolist()])


@pytest.mark.skipif(not portable.numpy_exp_is_the_c_librarys(), reason="numpy uses its own SIMD loops here")
def test_geomspace_equals_numpys_where_numpy_uses_the_c_library():
    rng = np.random.default_rng(1)
    for _ in range(200):
        lo = 10.0 ** rng.uniform(-12, 3)
        hi, num = lo * 10.0 ** rng.uniform(1e-9, 6), int(rng.integers(2, 130))
        assert np.array_equal(portable.geomspace(lo, hi, num), np.geomspace(lo, hi, num))


def _contract_every_term(W, A, axis):
    """portable.contract before it skipped zero weights: every term added, in order."""
    A = np.moveaxis(np.asarray(A, dtype=float), axis, 0)
    out = np.zeros((W.shape[0],) + A.shape[1:])
    for k in range(W.shape[1]):
        out += W[:, k].reshape((-1,) + (1,) * (A.ndim - 1)) * A[k]
    return np.moveaxis(out, 0, axis)


@hypothesis_settings(max_examples=80)
@given(st.integers(1, 9), st.integers(1, 7), st.integers(1, 4), st.integers(0, 2**32 - 1), st.booleans())
def test_contract_skipping_zero_weights_keeps_every_bit(p, c, m, seed, special):
    """contract adds, for each k, only over W[:, k]'s rows from its first nonzero to its last: a banded smoothing
    matrix (Gaussian tails that underflow to 0) costs less, with the same bits as adding every term, signed
    zeros, underflowing products and all-zero columns included; with a non-finite A every term is added."""
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(p, c)) * rng.choice([1.0, 0.0, -0.0, 1e-300], size=(p, c))
    A = rng.normal(size=(m, c, 2)) * rng.choice([1.0, 0.0, -0.0, -1e-300, 1e300], size=(m, c, 2))
    if special:
        A[0, 0, 0] = rng.choice([np.inf, -np.inf, np.nan])
    with np.errstate(invalid="ignore", over="ignore"):   # inf * 0 and 1e300 * 1e300 are part of the law
        got, want = portable.contract(W, A, 1), _contract_every_term(W, A, 1)
    assert got.shape == want.shape == (m, p, 2)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


def test_contract_adds_in_order_each_product_rounded():
    rng = np.random.default_rng(2)
    W, A = rng.normal(size=(7, 5)), rng.normal(size=(3, 5, 4))
    got = portable.contract(W, A, 1)
    assert got.shape == (3, 7, 4)
    assert np.allclose(got, np.moveaxis(np.tensordot(W, A, axes=([1], [1])), 0, 1), rtol=1e-13, atol=1e-14)
    for i in range(3):
        for p in range(7):
            for j in range(4):
                acc = 0.0
                for k in range(5):
                    acc += float(W[p, k]) * float(A[i, k, j])
                assert got[i, p, j] == acc


def test_smooth_ratio_equals_plain_python_floats_bit_for_bit():
    """The released map of a noisy grid, recomputed by verify: every number as plain Python computes it."""
    rng = np.random.default_rng(3)
    box = Box(np.array([0.0, 10.0]), np.array([4.0, 13.0]))
    cells, axes = (4, 3), (np.linspace(0.0, 4.0, 9), np.linspace(10.0, 13.0, 7))
    sums, counts = rng.normal(size=cells) * 3, rng.integers(0, 9, size=cells).astype(float)
    m, sd = smooth_ratio(axes, box, cells, sums, counts, 1.7, 0.5)

    def kernel(ax, lo, w, c):
        centres = [lo + (k + 0.5) * w / c for k in range(c)]
        h = 0.5 * w / c
        return [[math.exp(-0.5 * ((t - ce) / h) * ((t - ce) / h)) for ce in centres] for t in ax.tolist()]

    Kx = kernel(axes[0], 0.0, 4.0, 4)
    Ky = kernel(axes[1], 10.0, 3.0, 3)

    def smooth(S, K1, K2):
        rows = [[sum_in_order([K1[i][a] * S[a][b] for a in range(len(S))]) for b in range(len(S[0]))]
                for i in range(len(K1))]
        return [[sum_in_order([K2[j][b] * rows[i][b] for b in range(len(S[0]))]) for j in range(len(K2))]
                for i in range(len(K1))]

    A = smooth(sums.tolist(), Kx, Ky)
    B = smooth(counts.tolist(), Kx, Ky)
    sq = smooth([[1.0] * 3 for _ in range(4)], [[w * w for w in r] for r in Kx], [[w * w for w in r] for r in Ky])
    for i in range(9):
        for j in range(7):
            sd_b = 1.7 * math.sqrt(sq[i][j])
            denom = max(B[i][j], max(1.0, 2.0 * sd_b))
            mm = min(max(A[i][j] / denom, -1.0), 1.0)
            assert m[i, j] == mm and sd[i, j] == sd_b * math.sqrt(1.0 + mm * mm) / denom


def sum_in_order(terms: list[float]) -> float:
    acc = 0.0
    for t in terms:
        acc += t
    return acc


def last_bit_moved(f):
    """``f`` as numpy with AVX-512 may compute it: its float64 results one ulp up (numpy's own loops differ from
    the C library's in the last bit on some inputs; here on all, so that any use of them shows)."""
    def moved(*args, **kwargs):
        out = f(*args, **kwargs)
        arr = np.asarray(out)
        if arr.dtype != np.float64 or arr.size == 0:
            return out
        return np.where(np.isfinite(arr) & (arr != 0), np.nextafter(arr, np.inf), arr)
    return moved


def test_a_noisy_grid_release_its_calibration_and_forecast_do_not_depend_on_numpys_vector_math(monkeypatch):
    """What ``privgp verify`` rebuilds of a noisy-grid release -- the calibrated discrete-Gaussian noise, the map
    from the released statistics, the forecast -- is the same when numpy's exp, log10 and power round the last
    bit otherwise (as its AVX-512 loops do on some inputs): the earlier code took them from numpy and BLAS, and a
    release made on one CPU failed verification on another."""
    import privgp
    from privgp.mechanisms.release import ResponseMap
    from privgp.tasks.forecast import forecast

    box = Box(np.array([850.0, 500.0]), np.array([1000.0, 590.0]))
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.uniform(850, 1000, 211), rng.uniform(500, 590, 211)])
    y = rng.uniform(-1.0, 1.0, 211)

    def everything():
        out = {}
        for name in ("laplace-grid", "grid"):
            plan = privgp.plan(name, 211, box, ResponseMap(threshold=0.0, clip=1.0), epsilon=2.0, delta=1e-6)
            released = plan.draw(X, y, np.random.default_rng(6))
            out[name] = (plan.public_settings(), released.field, released.sd,
                         forecast(plan, reps=2, seed=7).to_dict())
        # a calibrated value is a point of the calibrator's grids (portable.geomspace)
        sampled = privgp.plan("posterior-sample", 211, box, ResponseMap(threshold=0.0, clip=1.0), epsilon=2.0,
                              delta=1e-6, grid=21)
        out["calibrated r"] = sampled.public_settings()
        return out

    here = everything()
    for fn in ("exp", "log10", "power", "geomspace"):
        monkeypatch.setattr(np, fn, last_bit_moved(getattr(np, fn)))
    portable.exp_route.cache_clear()
    try:
        assert not portable.numpy_exp_is_the_c_librarys()
        elsewhere = everything()
    finally:
        portable.exp_route.cache_clear()
    assert here.pop("calibrated r") == elsewhere.pop("calibrated r")
    for name, (settings, field, sd, fc) in here.items():
        settings2, field2, sd2, fc2 = elsewhere[name]
        assert settings == settings2, name
        assert np.array_equal(field, field2) and np.array_equal(sd, sd2), name
        assert fc == fc2, name
