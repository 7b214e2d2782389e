"""The single-draw bound as a curve in alpha (``rdp.rdp_curve``, issue 30): the pieces that depend on a setting alone
(1 + tau, log(1 + tau), eta^2/sigma^2 (V + r^2), the masks) are computed once per search instead of at every order.
Certificates and calibrations are rebuilt exactly by ``privgp verify``, so the curve must give the same bits as
the bound evaluated in one piece, as privgp computed it before the change (``reference`` below: that code, verbatim
apart from names), everywhere: where the closed form cancels, at tau = 0, at orders past 1 + 1/tau, where the mean
term vanishes and where its denominator is <= 0."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from privgp.accounting.events import PrivacyEvent, admissible_only
from privgp.accounting.posterior_sampling import PosteriorSampleEvent
from privgp.accounting.rdp import _small_log_gap, bound_coefficients, rdp_curve, rdp_raw


def reference_small_log_gap(y, sign):
    """``rdp._small_log_gap`` as written before issue 30's sixth stop shared its denominator and started the series
    from w (verbatim apart from names): the series below y = 1/8, the logarithm above."""
    u = y / (2.0 - sign * y)
    w = u * u
    acc = np.full_like(y, 1.0 / 15)
    for j in range(6, 0, -1):
        acc *= w
        acc += 1.0 / (2 * j + 1)
    out = y * y / (2.0 - sign * y) + sign * 2.0 * (u * w) * acc
    large = ~(y < 0.125)
    if large.any():
        z = y[large]
        out[large] = (-np.log1p(-np.minimum(z, 1.0)) - z) if sign > 0 else (z - np.log1p(z))
    return out


def reference(alpha, tau, V, r2, eta2_s2, m):
    """``rdp_raw`` as written before the per-setting pieces were split out (the psi and mean terms inline)."""
    am1 = alpha - 1.0
    x = tau * am1
    half_log = 0.5 * np.log1p(tau)
    two_am1 = 2.0 * am1
    log_first = np.log1p(x / (1.0 + tau)) / two_am1
    log_second = np.log1p(-np.minimum(x, 1.0)) / two_am1
    out = np.maximum(half_log - log_first, -half_log - log_second)
    cancels = 256.0 * out < half_log + log_first - log_second
    if cancels.any():
        out = np.array(out, dtype=float)
        t = np.broadcast_to(tau, out.shape)[cancels]
        a = np.broadcast_to(am1, out.shape)[cancels]
        s = t / (1.0 + t)
        gap = reference_small_log_gap
        out[cancels] = 0.5 * np.maximum(gap(s, 1) + gap(a * s, -1) / a, gap(t, -1) + gap(a * t, 1) / a)
    out = np.where((x >= 1.0) | (tau == np.inf), np.inf, out)
    out = np.where(tau == 0.0, 0.0, out)
    psi = np.maximum(out, 0.0)
    denom = (r2 - (alpha - 1.0) * V) + eta2_s2 * (V + r2)
    mean = np.where(m == 0.0, 0.0, alpha * m / denom)
    mean = np.where(denom <= 0.0, np.inf, mean)
    return 2.0 * psi + mean


def _settings(draw_floats, size):
    """Settings spread over many decades (tiny tau, where psi's closed form cancels, included), some with
    Delta = 0 (m = 0), sigma = inf or eta > 0."""
    V = draw_floats(size, -14.0, 1.0)
    Delta = np.where(draw_floats(size, -1.0, 0.0) < 0.2, 0.0, draw_floats(size, -8.0, 1.0))
    r = draw_floats(size, -3.0, 4.0)
    sigma = np.where(draw_floats(size, -1.0, 0.0) < 0.2, np.inf, draw_floats(size, -2.0, 2.0))
    eta = np.where(draw_floats(size, -1.0, 0.0) < 0.5, 0.0, draw_floats(size, -3.0, 1.0))
    return bound_coefficients(V, Delta, r, sigma, eta)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=1, max_value=40))
def test_the_curve_is_the_bound_to_the_bit(seed, G):
    rng = np.random.default_rng(seed)

    def logs(size, lo, hi):
        return 10.0 ** rng.uniform(lo, hi, size)
    S = 50
    tau, V, r2, eta2_s2, m = (c[:, None] for c in _settings(logs, S))
    # orders from 1 + 1e-12 up to past 1 + 1/tau (where psi is +inf and the mean's denominator may be <= 0)
    frac = rng.uniform(0.0, 1.3, (S, G))
    alpha = 1.0 + np.maximum(frac / np.where(tau > 0, tau, 1.0), 1e-12)
    with np.errstate(all="ignore"):
        want = reference(alpha, tau, V, r2, eta2_s2, m)
        got = rdp_curve(tau, V, r2, eta2_s2, m)(alpha)
        also = rdp_raw(alpha, tau, V, r2, eta2_s2, m)
    assert got.tobytes() == want.tobytes()
    assert also.tobytes() == want.tobytes()


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 6), elements=st.floats(1e-15, 1e6)),
       hnp.arrays(np.float64, st.integers(1, 6), elements=st.floats(1.0 + 1e-12, 1e8)))
def test_the_events_masked_curve_is_the_generic_one_to_the_bit(tau_values, alpha_values):
    """PosteriorSampleEvent's masked curve (its own ``_rdp_curve``: the pieces computed once) against the base class's
    (the bound at every order, then the order mask), for the same parameters; tau = 0 included."""
    tau = np.concatenate([tau_values, [0.0]])[:, None]
    params = {"tau": tau, "V": tau * 0.5, "r2": np.full_like(tau, 0.5), "eta2_s2": np.full_like(tau, 0.1),
              "m": np.full_like(tau, 0.3), "L": np.full_like(tau, 3.0)}
    alpha = np.broadcast_to(alpha_values[None, :], (tau.shape[0], alpha_values.size))
    with np.errstate(all="ignore"):
        ours = PosteriorSampleEvent._masked_rdp_curve(**params)(alpha)
        # the base class's curve: the whole bound (_rdp_arrays) at each order, then the order mask
        plain = PrivacyEvent._rdp_curve.__func__(PosteriorSampleEvent, **params)(alpha)
        generic = admissible_only(np.asarray(plain, dtype=float), alpha, PosteriorSampleEvent._alpha_max_arrays(**params))
    assert ours.tobytes() == generic.tobytes()


@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=0, max_value=300))
def test_the_small_log_gap_is_as_before_to_the_bit(seed, size):
    """h(y) on [0, 1) and g(y) on [0, inf) (the series below 1/8, the logarithm above, both sides of the switch)."""
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.exp(rng.uniform(np.log(1e-300), np.log(0.999), size)), [0.0, 0.125, np.nextafter(0.125, 0)],
                        rng.uniform(0.1, 0.15, size)])
    for sign, ys in ((1, y), (-1, np.concatenate([y, np.exp(rng.uniform(0.0, np.log(1e300), size))]))):
        with np.errstate(all="ignore"):      # as the accountant calls it (large y overflow in the unused series)
            ours, before = _small_log_gap(ys.copy(), sign), reference_small_log_gap(ys.copy(), sign)
        assert np.array_equal(ours.view(np.int64), before.view(np.int64)), sign


@given(st.integers(1, 1500), st.integers(1, 3), st.sampled_from([0.0, 0.01, 1.0]), st.integers(0, 2**32 - 1))
def test_the_order_mask_is_np_where(settings_count, orders, outside, seed):
    """admissible_only (the one home of the order mask) gives np.where's values, for few and many values, orders all
    admissible (then, for many, the values themselves: issue 30) or not, and an order bound per setting."""
    rng = np.random.default_rng(seed)
    amax = 1.0 + rng.exponential(size=(settings_count, 1))
    alpha = 1.0 + (amax - 1.0) * rng.uniform(0.01, 0.99, (settings_count, orders))
    alpha = np.where(rng.random(alpha.shape) < outside, amax + rng.exponential(size=alpha.shape), alpha)
    values = rng.normal(size=alpha.shape)
    got, expected = admissible_only(values, alpha, amax), np.where(alpha < amax, values, np.inf)
    assert got.shape == expected.shape and got.tobytes() == expected.tobytes()
