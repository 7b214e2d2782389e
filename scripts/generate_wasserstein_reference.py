"""Independent high-precision reference for seed 004's Wasserstein-2 distance (writes
tests/data/wasserstein_reference.json).

Run:  python scripts/generate_wasserstein_reference.py   (about 20 s on one core; needs mpmath only)

Nothing here imports privgp. The quantiles of the mixture MIX at z = Phi^-1(u) for a few z (30 digits), and
W_2^2(F, G) = int_0^1 (F^-1(u) - G^-1(u))^2 du for two 1-D Gaussian mixtures, by
mpmath's tanh-sinh quadrature in z = Phi^-1(u) over [-9, 9] (split at -3, 0, 3), at 20 digits, with each
quantile found by 60 bisection halvings of [-5, 5] on the mixture's cdf and 4 Newton steps. The pair is the one
of tests/audit/samplers/test_wasserstein.py (MIX, GAUSS), which pins privgp's quantile and w2 against these numbers.
"""
from __future__ import annotations

import json
from pathlib import Path

import mpmath as mp

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "wasserstein_reference.json"
#: (means, sds, weights) of each mixture, as decimal strings
MIX = (["-0.3", "0.1", "0.25"], ["0.2", "0.15", "0.3"], ["0.5", "0.3", "0.2"])
GAUSS = (["0.05"], ["0.22"], ["1"])
#: the z of the quantile references
Z = ["-7", "-2", "-0.3", "0", "0.4", "3", "8"]


def _cdf_pdf(mixture):
    means, sds, weights = ([mp.mpf(float(v)) for v in col] for col in mixture)   # the float64 values privgp sees
    cdf = lambda x: mp.fsum(w * mp.ncdf((x - m) / s) for w, m, s in zip(weights, means, sds))  # noqa: E731
    pdf = lambda x: mp.fsum(w * mp.npdf(x, m, s) for w, m, s in zip(weights, means, sds))  # noqa: E731
    return cdf, pdf


def quantile(mixture, u):
    cdf, pdf = _cdf_pdf(mixture)
    lo, hi = mp.mpf(-5), mp.mpf(5)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < u else (lo, mid)
    x = (lo + hi) / 2
    for _ in range(4):
        x -= (cdf(x) - u) / pdf(x)
    return x


def w2(f, g):
    def integrand(z):
        u = mp.ncdf(z)
        return mp.npdf(z) * (quantile(f, u) - quantile(g, u)) ** 2

    return mp.sqrt(mp.quad(integrand, [-9, -3, 0, 3, 9]))


def main() -> None:
    mp.mp.dps = 30
    quantiles = {z: mp.nstr(quantile(MIX, mp.ncdf(mp.mpf(z))), 25) for z in Z}
    mp.mp.dps = 20
    ref = w2(MIX, GAUSS)
    doc = {"dps": mp.mp.dps, "mix": MIX, "gauss": GAUSS, "w2": mp.nstr(ref, 20), "quantile_dps": 30,
           "mix_quantiles": quantiles}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(doc)


if __name__ == "__main__":
    main()
