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
the iterate at delta (both directions, largest).

Part (ii), Claim C.1, at eq. (27)'s remaining parameters (rho1 = 1.25, rho2 = 0.45, gamma1 = 0.49,
x_l = x_h/2) with the algorithm's eps = 1 and the same delta: step 19 is reached only if the noisy count
n_W = |W| - t + Lap(1/eps) is at least n_min (eq. (26)), and n_min >= n_b, the smallest n at which Claim
D.29's conditions hold with c = m~ (``privgp.mechanisms.propose_test_sample.n_min``; computed here with
the library's ``claim_d29_conditions`` up to 10^200, for c = n1^rho3 and, to show it does not depend on c,
for c = 1). As |W| <= n1, P(reach step 19; D3) <= P(Lap(1/eps) >= n_b - n1 + t) = exp(-eps (n_b - n1 + t))/2,
whose log10 is written; C.1's 1 - 5 delta needs n1 >= n_b + t - log(10 delta)/eps. A Monte Carlo run of
the library's steps 1-18 (``pts_select``, ``MC_RUNS`` runs per n1 with a seeded generator) counts the runs
that reach step 19 on D3.

    python scripts/seed004_claim42.py [--out docs/runs/seed004-claim42]   # about 40 s of CPU
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

DELTA = 0.01
PARAMS = dict(alpha=1.0, beta=3.0, x_h=1.0)
RHO3 = 1.15
N1 = (1000, 10_000, 100_000, 1_000_000)
PTS = dict(epsilon=1.0, rho1=1.25, rho2=0.45, gamma1=0.49, x_l=0.5)   # eq. (27); eps of the algorithm
MC_RUNS = 200


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
    rows_c1 = claim_c1_rows()
    lines = markdown(rows)
    (out / "claim42.md").write_text(lines)
    (out / "claim_c1.md").write_text(markdown(rows_c1))
    (out / "run.json").write_text(json.dumps({
        "command": "python scripts/seed004_claim42.py --out " + out.as_posix(), "delta": DELTA, "rho3": RHO3, **PARAMS,
        "eta": "1/(alpha + n1 x_h^2 beta)^2", "rows": rows, "claim_c1": {"params": {**PTS, "delta": DELTA},
                                                                         "mc_runs": MC_RUNS, "rows": rows_c1},
        "seconds": round(time.perf_counter() - t0, 1)}, indent=1))
    print(lines + "\n" + markdown(rows_c1))


def markdown(rows: list[dict]) -> str:
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def claim_c1_rows() -> list[dict]:
    """Part (ii): the test steps of Algorithm 1 on D3 (see the module docstring)."""
    import numpy as np

    from privgp.accounting.linear_regression import claim_d29_conditions
    from privgp.accounting.order_search import smallest_integer
    from privgp.mechanisms.propose_test_sample import PtsParams, pts_select

    p = PtsParams(delta=DELTA, x_h=PARAMS["x_h"], alpha=PARAMS["alpha"], beta=PARAMS["beta"], **PTS)
    kw = dict(alpha=p.alpha, beta=p.beta, x_h=p.x_h, x_l=p.x_l, gamma1=p.gamma1)

    def n_b(c: float) -> int:
        return smallest_integer(lambda n: all(claim_d29_conditions(n, p.epsilon, p.delta, c=c, **kw).values()),
                                2, 10 ** 200)

    nb_c1 = n_b(1.0)
    rng = np.random.default_rng(0)
    rows = []
    for n1 in N1:
        c = float(n1) ** RHO3
        nb = n_b(c)
        x, y = np.full(n1, p.x_h), np.full(n1, c * p.x_h)   # D3 of eq. (8)
        runs = [pts_select(x, y, p, rng) for _ in range(MC_RUNS)]
        reached = sum(r.stopped_at is None for r in runs)
        stops = sorted({str(r.stopped_at) for r in runs})
        log10_p = (math.log(0.5) - p.epsilon * (nb - n1 + p.shift)) / math.log(10)
        need = nb + p.shift - math.log(10 * p.delta) / p.epsilon
        rows.append({"n1": n1, "c = n1^1.15": f"{c:.4g}", "log10 n_b (c = n1^1.15)": f"{math.log10(nb):.2f}",
                     "log10 n_b (c = 1)": f"{math.log10(nb_c1):.2f}",
                     "log10 P(reach step 19; D3) <=": f"{log10_p:.3g}",
                     "log10 of the n1 the claim needs": f"{math.log10(need):.2f}",
                     f"Monte Carlo: runs reaching step 19 (of {MC_RUNS})": reached, "where they stopped": ", ".join(stops)})
    return rows


if __name__ == "__main__":
    main()
