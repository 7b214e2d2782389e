"""Independent high-precision reference values for the GDP profile and the functional mechanism's
multipliers (writes tests/data/functional_reference.json).

Run:  python scripts/generate_functional_reference.py   (about half a minute; needs mpmath only)

Nothing here imports privgp. Every number is recomputed from the statements of seed 002 with mpmath
at 40 digits, by a different route from the library's wherever one exists:

* delta(epsilon; mu) of eq. (5) twice: from the formula with mpmath's normal CDF, and as the
  hockey-stick divergence  int (p_0(z) - e^eps p_mu(z))_+ dz  of N(0, 1) vs N(mu, 1) by quadrature
  (the library uses log_ndtr and a cancellation-free rearrangement); the two routes must agree;
* mu(epsilon, delta) as the root of delta(epsilon; mu) = delta by mpmath's bisection-type solver
  (the library bisects in float64);
* the RDP multiplier (Jiang et al. 2023 via seed 002, eq. 38): for each sigma the order alpha is
  optimised numerically (golden section on eq. 38, *not* the closed form alpha* of eq. 39), and
  sigma is found by root-finding on min_alpha epsilon(alpha, sigma) = epsilon (not the closed-form
  root of eq. 40);
* Hall et al.'s multiplier (Thm 3.3) and the GDP multiplier Delta / mu (Thm 4.1);
* DPSetConv noise scales of eq. (12) and the invariant 4C^2/sigma_s^2 + 2/sigma_d^2 = mu^2.

The tests pin the library against these numbers (tests/accounting/test_functional_noise.py).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import mpmath as mp

mp.mp.dps = 40
OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "functional_reference.json"


def delta_formula(mu, eps):
    with mp.workdps(120):  # the two terms cancel to many digits where delta is tiny
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        out = mp.ncdf(-eps / mu + mu / 2) - mp.e**eps * mp.ncdf(-eps / mu - mu / 2)
    return +out


def delta_hockey_stick(mu, eps):
    """int (phi(z) - e^eps phi(z - mu))_+ dz: phi(z) >= e^eps phi(z - mu) iff z <= mu/2 - eps/mu, so the
    positive part is the integral up to that point."""
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    z0 = mu / 2 - eps / mu
    # p_mu(z) / p_0(z) = exp(mu z - mu^2 / 2), and at z = z0 - u that times e^eps is exp(-mu u); with
    # u = v / a, a = max(1, |z0|), the integrand is smooth on the scale v ~ 1:
    # phi(z0 - v/a) = phi(z0) exp(z0 v / a - v^2 / (2 a^2))
    a = max(mp.mpf(1), abs(z0))
    f = lambda w: mp.exp(z0 * w / a - w * w / (2 * a * a)) * -mp.expm1(-mu * w / a) / a
    return mp.npdf(z0) * mp.quad(f, [0, mp.mpf(1) / 8, mp.mpf(1) / 2, 1, 2, 4, 8, 16, 32, 64, mp.inf])


def bisect(f, lo, hi, iters=130):
    """Root of an increasing f on [lo, hi] (f(lo) < 0 < f(hi)) by bisection: 2^-130 relative width."""
    assert f(lo) < 0 < f(hi)
    for _ in range(iters):
        mid = (lo + hi) / 2
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def mu_root(eps, delta):
    eps, delta = mp.mpf(eps), mp.mpf(delta)
    lo, hi = mp.mpf("1e-8"), mp.mpf(1)
    while delta_formula(hi, eps) < delta:
        hi *= 2
    return bisect(lambda m: delta_formula(m, eps) - delta, lo, hi)


def rdp_eps_alpha(Delta, sigma, delta, alpha):
    return alpha * Delta**2 / (2 * sigma**2) - mp.log(delta) / (alpha - 1)


def golden_min(f, a, b, iters=160):
    g = (mp.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def rdp_best_eps(Delta, sigma, delta):
    # minimise over alpha in log space on a wide bracket (eq. 38 is convex in alpha > 1)
    f = lambda la: rdp_eps_alpha(Delta, sigma, delta, 1 + mp.e**la)
    la = golden_min(f, mp.mpf(-30), mp.mpf(30))
    return f(la)


def rdp_sigma(Delta, eps, delta):
    Delta, eps, delta = mp.mpf(Delta), mp.mpf(eps), mp.mpf(delta)
    lo, hi = mp.mpf("1e-6"), mp.mpf(1)
    while rdp_best_eps(Delta, hi, delta) > eps:
        hi *= 2
    return bisect(lambda s: eps - rdp_best_eps(Delta, s, delta), lo, hi)


def main():
    t0 = time.time()
    out = {"generator": "scripts/generate_functional_reference.py", "mpmath_dps": mp.mp.dps}
    rows = []
    for mu in ("0.05", "0.2", "0.5", "1", "2", "4", "8"):
        for eps in ("0", "0.1", "0.5", "1", "2", "5", "10", "20"):
            a, b = delta_formula(mu, eps), delta_hockey_stick(mu, eps)
            assert abs(a - b) <= mp.mpf(10) ** -20 * a, (mu, eps, a, b)
            rows.append({"mu": float(mu), "epsilon": float(eps), "delta": mp.nstr(a, 30), "log_delta": mp.nstr(mp.log(a), 30)})
    out["gdp_delta"] = rows
    rows = []
    for eps in ("0.1", "1/3", "0.5", "0.9", "1", "2", "3", "4", "9", "20"):
        for delta in ("1e-3", "1e-5", "1e-9"):
            e = mp.mpf(eps) if "/" not in eps else mp.mpf(1) / 3
            m = mu_root(e, mp.mpf(delta))
            rows.append({"epsilon": float(e), "delta": float(delta), "mu": mp.nstr(m, 30)})
    out["gdp_mu"] = rows
    Delta = mp.sqrt(10)
    delta = mp.mpf("1e-3")
    rows = []
    for eps in ("0.05", "0.1", "0.25", "0.5", "1", "2", "3", "4", "6", "10"):
        e = mp.mpf(eps)
        m = mu_root(e, delta)
        row = {"epsilon": float(e), "delta": float(delta), "Delta2": 10.0,
               "rdp": mp.nstr(rdp_sigma(Delta, e, delta), 25), "gdp": mp.nstr(Delta / m, 30)}
        if e <= 1:
            row["hall"] = mp.nstr(Delta / e * mp.sqrt(2 * mp.log(2 / delta)), 30)
        rows.append(row)
    out["figure4"] = rows
    rows = []
    for eps in ("1", "3"):
        for C, t in (("2", "0.5"), ("1", "0.2"), ("0.5", "0.9")):
            m = mu_root(mp.mpf(eps), delta)
            C_, t_ = mp.mpf(C), mp.mpf(t)
            ss = mp.sqrt(4 * C_**2 / (t_ * m**2))
            sd = mp.sqrt(2 / ((1 - t_) * m**2))
            assert abs(4 * C_**2 / ss**2 + 2 / sd**2 - m**2) < mp.mpf(10) ** -30
            rows.append({"epsilon": float(eps), "delta": float(delta), "C": float(C_), "t": float(t_),
                         "sigma_s": mp.nstr(ss, 30), "sigma_d": mp.nstr(sd, 30)})
    out["noise_scales"] = rows
    out["seconds"] = round(time.time() - t0, 1)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT} in {out['seconds']} s")


if __name__ == "__main__":
    main()
