"""Seed 004, Claim 4.2 computed: SGLD in place of line 19 of Propose-Test-Sample leaks.

Claim 4.2: with step size eta = 1/(alpha + n1 x_h^2 beta)^2 there is a T(n1) such that the algorithm is
not (eps, delta)-DP for any eps > 0 and delta < 1/6, witnessed by D3, D4 of eq. (8) (c = n1^rho3) at the
parameters of eq. (27): rho3 = 1.15, alpha = 1, beta = 3, x_h = 1. The proof has two parts: (i) the
sampling step leaks without bound, eq. (31): for W = D3 vs W = D4, P(theta_T > mu_T | D3) >
e^{eps'} P(theta_T > mu_T | D4) + 6 delta with eps' = Omega(n1^{2 (rho3 - 1)}); (ii) Claim C.1, the test
steps keep W = D3 / D4 with probability >= 1 - 5 delta for large n1. This script computes part (i)
exactly (the iterate is Gaussian under D3 and a uniform mixture of n1 Gaussians under D4,
``privgp.audit.samplers.sgld_model.CyclicSGLD``): for each n1 the epoch K* at which the indicator F peaks, the
event lower bound log((1/2 - 6 delta) / P(theta_T > mu_T | D4)) of eq. (31) there, and the exact eps of
the iterate at delta (both directions, largest). Part (ii) is not computed.

    python scripts/seed004_claim42.py [--out docs/runs/seed004-claim42]   # about 30 s of CPU
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

DELTA = 0.01
PARAMS = dict(alpha=1.0, beta=3.0, x_h=1.0)
RHO3 = 1.15
N1 = (1000, 10_000, 100_000, 1_000_000)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/runs/seed004-claim42")
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    from privgp.accounting.mixtures import hockey_stick_epsilon, test_epsilon_lower_bound
    from privgp.audit.samplers.sgld_model import CyclicSGLD

    t0 = time.perf_counter()
    rows = []
    for n1 in N1:
        A = PARAMS["alpha"] + n1 * PARAMS["x_h"] ** 2 * PARAMS["beta"]
        s = CyclicSGLD(n1, PARAMS["alpha"], PARAMS["beta"], PARAMS["x_h"], float(n1) ** RHO3, eta=1.0 / A ** 2)
        best = None
        for K in range(1, 400):
            law = s.law(K * n1)
            F = law.indicator()
            if best is not None and F < best[1]:
                break
            best = (K, F, law)
        K, F, law = best
        P = law.tail_probability()
        G, M = law.gaussian(), law.mixture()
        eps_exact = max(hockey_stick_epsilon(DELTA, G, M), hockey_stick_epsilon(DELTA, M, G))
        rows.append({"n1": n1, "c = n1^1.15": f"{float(n1) ** RHO3:.4g}", "peak epoch K*": K,
                     "F at K*": f"{F:.4g}", "P(theta > mu; D4)": f"{P:.4g}",
                     "eq. (31) event bound on eps (6 delta)": f"{test_epsilon_lower_bound(0.5, P, 6 * DELTA):.3f}",
                     "exact eps of theta_T (delta = 0.01)": f"{eps_exact:.3f}",
                     "n1^(2 (rho3 - 1))": f"{float(n1) ** (2 * (RHO3 - 1)):.3f}"})
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    (out / "claim42.md").write_text("\n".join(lines) + "\n")
    (out / "run.json").write_text(json.dumps({
        "command": "python scripts/seed004_claim42.py --out " + out.as_posix(), "delta": DELTA, "rho3": RHO3, **PARAMS,
        "eta": "1/(alpha + n1 x_h^2 beta)^2", "rows": rows, "seconds": round(time.perf_counter() - t0, 1)}, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
