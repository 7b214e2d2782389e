"""Independent high-precision references for the privacy events (writes tests/data/event_reference.json).

Run:  python scripts/generate_event_reference.py   (a few seconds; needs mpmath only)

Nothing here imports privgp. Every value comes from the *definitions*, by numerical integration at
40 digits, not from the closed forms the library uses:

* the Renyi divergence D_alpha(N(Delta, s^2) || N(0, s^2)) = log(int p^alpha q^(1-alpha)) / (alpha - 1)
  (the RDP of the Gaussian mechanism / of mu-GDP with mu = Delta / s, at several orders);
* the hockey-stick divergence delta(epsilon) = int max(0, p - e^epsilon q) of N(mu, 1) vs N(0, 1)
  (the exact privacy profile of mu-GDP), and the epsilon at which it equals a target delta by root
  finding on the integral;
* the Renyi divergence of binary randomized response with parameter epsilon (the epsilon-DP
  mechanism a PureDpEvent's curve must dominate).

The tests (tests/accounting/test_events.py) pin the library against these numbers.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import mpmath as mp

mp.mp.dps = 40
OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "event_reference.json"


def normal_pdf(x, m):
    return mp.exp(-(x - m) ** 2 / 2) / mp.sqrt(2 * mp.pi)


def renyi_gaussian_integral(alpha, mu):
    """D_alpha(N(mu, 1) || N(0, 1)) from its definition (scale-free: Delta/s = mu)."""
    alpha, mu = mp.mpf(alpha), mp.mpf(mu)
    f = lambda x: normal_pdf(x, mu) ** alpha * normal_pdf(x, 0) ** (1 - alpha)  # noqa: E731
    centre = alpha * mu
    val = mp.quad(f, [-mp.inf, centre - 20, centre, centre + 20, mp.inf])
    return mp.log(val) / (alpha - 1)


def hockey_stick_integral(mu, eps):
    """int max(0, N(mu,1)(x) - e^eps N(0,1)(x)) dx: the integrand is positive for x > x0 with
    x0 = eps/mu + mu/2 (log-likelihood ratio mu x - mu^2/2 = eps)."""
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    x0 = eps / mu + mu / 2
    f = lambda x: normal_pdf(x, mu) - mp.exp(eps) * normal_pdf(x, 0)  # noqa: E731
    # the integrand decays like exp(-x0 t) beyond x0: breakpoints on that scale, geometrically spaced
    h = 1 / max(abs(x0), 1)
    points = [x0] + [x0 + h * mp.mpf(2) ** k for k in range(-8, 12)] + [mp.inf]
    return mp.quad(f, points)


def epsilon_for_delta(mu, delta):
    """The epsilon >= 0 with hockey_stick_integral(mu, epsilon) = delta (decreasing in epsilon)."""
    mu, delta = mp.mpf(mu), mp.mpf(delta)
    if hockey_stick_integral(mu, 0) <= delta:
        return mp.mpf(0)
    lo, hi = mp.mpf(0), mu * mu + 10 * mu + 10
    for _ in range(200):
        mid = (lo + hi) / 2
        if hockey_stick_integral(mu, mid) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo < mp.mpf(10) ** -30:
            break
    return (lo + hi) / 2


def renyi_randomized_response(alpha, eps):
    """D_alpha(P || Q) for P = (e^eps, 1)/(1+e^eps), Q = (1, e^eps)/(1+e^eps)."""
    alpha, eps = mp.mpf(alpha), mp.mpf(eps)
    p = mp.exp(eps) / (1 + mp.exp(eps))
    q = 1 - p
    s = p ** alpha * q ** (1 - alpha) + q ** alpha * p ** (1 - alpha)
    return mp.log(s) / (alpha - 1)


def main() -> None:
    t0 = time.time()
    gaussian_rdp = [{"mu": mu, "alpha": a, "rdp": str(renyi_gaussian_integral(a, mu))}
                    for mu in (0.1, 0.5, 1.0, 2.5) for a in (1.01, 1.5, 2.0, 8.0, 32.0)]
    profile = [{"mu": mu, "epsilon": e, "delta": str(hockey_stick_integral(mu, e))}
               for mu in (0.1, 0.5, 1.0, 2.0, 5.0) for e in (0.0, 0.25, 1.0, 3.0, 8.0)]
    inverse = [{"mu": mu, "delta": d, "epsilon": str(epsilon_for_delta(mu, d))}
               for mu in (0.2, 1.0, 3.0) for d in (1e-2, 1e-5, 1e-9)]
    rr = [{"epsilon": e, "alpha": a, "rdp": str(renyi_randomized_response(a, e))}
          for e in (0.01, 0.3, 1.0, 3.0) for a in (1.1, 2.0, 10.0, 100.0)]
    OUT.write_text(json.dumps({
        "meta": {"generator": "scripts/generate_event_reference.py", "mpmath_dps": mp.mp.dps,
                 "seconds": round(time.time() - t0, 1)},
        "gaussian_rdp": gaussian_rdp, "gdp_profile": profile, "gdp_epsilon_for_delta": inverse,
        "randomized_response_rdp": rr}, indent=1) + "\n")
    print(f"wrote {OUT} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
