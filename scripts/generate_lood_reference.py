"""Independent reference values for seed 003 (LOOD), written to tests/data/lood_reference.json.

Computed independently of privgp's code paths:

1. bivariate expectations E[phi(u) phi(v)] of the NNGP activations (relu, gelu = x Phi(x), erf,
   elu with alpha = 1) and, by Price's theorem, dE/dk12 = E[phi'(u) phi'(v)], by nested adaptive
   1-D quadrature (scipy.integrate.quad, epsrel 1e-13) over standardised coordinates, split at the
   kinks of phi (correlation +-1: a 1-D integral); privgp uses closed forms (relu, gelu, erf) or
   a conditional closed form plus Gauss-Legendre (elu). Spot-checked against mpmath tanh-sinh
   quadrature at 30 digits (agreement ~1e-15);
2. with mpmath at 30 digits: LOOD of small RBF problems by brute-force refits on D and D' = D u S in mpmath matrices:
   KL both directions, mean distance, Rényi of order 2 (multivariate closed form), single and
   multi query, one and two outputs, and the gradient of the single-query KL in the query
   (mpmath.diff of the refit);
3. with mpmath: the exact AUC of the likelihood-ratio test between two 1-D Gaussians, by 1-D quadrature of
   P_in(T > T(x)) against the "out" density (the set {T > t} is an interval).

Run:  python scripts/generate_lood_reference.py   (about a minute)
"""
from __future__ import annotations

import json
from pathlib import Path

import mpmath as mp
import numpy as np
from scipy import integrate
from scipy.special import erf, ndtr

mp.mp.dps = 30
OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "lood_reference.json"

def Phi(x):
    return mp.ncdf(x)


ACT = {
    "relu": (lambda x: np.maximum(x, 0.0), lambda x: (x > 0).astype(float) if np.ndim(x) else float(x > 0)),
    "gelu": (lambda x: x * ndtr(x), lambda x: ndtr(x) + x * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)),
    "erf": (lambda x: erf(x), lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)),
    "elu": (lambda x: x if x > 0 else np.expm1(x), lambda x: 1.0 if x > 0 else np.exp(x)),
}

COVS = [(1.3, 0.9, 0.7), (2.0, 0.5, -0.6), (0.8, 1.7, 0.0), (1.0, 1.0, 1.0), (0.5, 2.0, 1.0),
        (1.2, 1.2, -1.2), (0.05, 3.0, 0.2), (4.0, 0.3, 1.05)]
QUAD = dict(epsabs=1e-15, epsrel=1e-13, limit=200)


def _npdf(z):
    return np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)


def _quad_line(h, breaks):
    """int h over the real line split at the given breakpoints."""
    edges = [-np.inf] + sorted(breaks) + [np.inf]
    return sum(integrate.quad(h, lo, hi, **QUAD)[0] for lo, hi in zip(edges[:-1], edges[1:]))


def expectation(f, g, k11, k22, k12):
    s1, s2 = np.sqrt(k11), np.sqrt(k22)
    rho = k12 / (s1 * s2)
    if abs(abs(rho) - 1) < 1e-14:
        sgn = 1.0 if rho > 0 else -1.0
        return _quad_line(lambda z: float(f(s1 * z)) * float(g(sgn * s2 * z)) * _npdf(z), [0.0])
    c = np.sqrt(1 - rho * rho)

    def inner(z1):
        return _quad_line(lambda z2: float(g(s2 * (rho * z1 + c * z2))) * _npdf(z2), [-rho * z1 / c])

    return _quad_line(lambda z1: float(f(s1 * z1)) * _npdf(z1) * inner(z1), [0.0])


# -- LOOD by refits --------------------------------------------------------------------------

def rbf(a, b, gamma):
    d = len(a)
    return mp.exp(-(mp.mpf(gamma) / d) * sum((mp.mpf(x) - mp.mpf(y)) ** 2 for x, y in zip(a, b)))


def posterior(X, Y, Q, noise, gamma):
    n, q = len(X), len(Q)
    Kdd = mp.matrix(n, n)
    for i in range(n):
        for j in range(n):
            Kdd[i, j] = rbf(X[i], X[j], gamma) + (mp.mpf(noise) if i == j else 0)
    Kqd = mp.matrix(q, n)
    for i in range(q):
        for j in range(n):
            Kqd[i, j] = rbf(Q[i], X[j], gamma)
    Kqq = mp.matrix(q, q)
    for i in range(q):
        for j in range(q):
            Kqq[i, j] = rbf(Q[i], Q[j], gamma)
    Minv = mp.inverse(Kdd)
    C = len(Y[0])
    Ym = mp.matrix(n, C)
    for i in range(n):
        for c in range(C):
            Ym[i, c] = mp.mpf(Y[i][c])
    mean = Kqd * Minv * Ym
    cov = Kqq - Kqd * Minv * Kqd.T
    return mean, cov


def kl_mp(m0, S0, m1, S1):
    q, C = m0.rows, m0.cols
    S1inv = mp.inverse(S1)
    tr = sum((S1inv * S0)[i, i] for i in range(q))
    out = C * (mp.log(mp.det(S1)) - mp.log(mp.det(S0)) - q + tr)
    for c in range(C):
        d = mp.matrix([m0[i, c] - m1[i, c] for i in range(q)])
        out += (d.T * S1inv * d)[0, 0]
    return out / 2


def renyi_mp(alpha, m0, S0, m1, S1):
    alpha = mp.mpf(alpha)
    q, C = m0.rows, m0.cols
    Sa = alpha * S1 + (1 - alpha) * S0
    if min(mp.eigsy(Sa)[0]) <= 0:
        return mp.inf  # S_alpha not positive definite: the divergence is infinite
    out = -C * mp.log(mp.det(Sa) / (mp.det(S0) ** (1 - alpha) * mp.det(S1) ** alpha)) / (2 * (alpha - 1))
    Sainv = mp.inverse(Sa)
    for c in range(C):
        d = mp.matrix([m0[i, c] - m1[i, c] for i in range(q)])
        out += alpha / 2 * (d.T * Sainv * d)[0, 0]
    return out


def lood_all(case):
    X, Y, XS, YS, Q, noise, gamma = (case[k] for k in ("X", "Y", "XS", "YS", "Q", "noise", "gamma"))
    m0, S0 = posterior(X, Y, Q, noise, gamma)
    m1, S1 = posterior(X + XS, Y + YS, Q, noise, gamma)
    md = sum((m0[i, c] - m1[i, c]) ** 2 for i in range(m0.rows) for c in range(m0.cols))
    out = {"kl": kl_mp(m0, S0, m1, S1), "kl_reverse": kl_mp(m1, S1, m0, S0), "mean_distance": md / 2,
           "mean_distance_code": md / (2 * m0.rows * m0.cols)}
    if case.get("renyi_alpha"):
        out["renyi"] = renyi_mp(case["renyi_alpha"], m0, S0, m1, S1)
        out["renyi_reverse"] = renyi_mp(case["renyi_alpha"], m1, S1, m0, S0)
    return {k: float(v) for k, v in out.items()}


def kl_single_grad(case):
    """d KL / d Q for a single query (refit in mpmath, derivative by mpmath.diff)."""
    X, Y, XS, YS, Q, noise, gamma = (case[k] for k in ("X", "Y", "XS", "YS", "Q", "noise", "gamma"))
    d = len(Q[0])
    grad = []
    for j in range(d):
        def f(t, j=j):
            q = list(map(mp.mpf, Q[0]))
            q[j] = t
            m0, S0 = posterior(X, Y, [q], noise, gamma)
            m1, S1 = posterior(X + XS, Y + YS, [q], noise, gamma)
            return kl_mp(m0, S0, m1, S1)
        grad.append(float(mp.diff(f, mp.mpf(Q[0][j]))))
    return grad


# -- exact LR-test AUC, 1-D ------------------------------------------------------------------

def auc_1d(v0, v1, d):
    """P(T(X_in) > T(X_out)), X_out ~ N(0, v0), X_in ~ N(d, v1), T = log p_in - log p_out."""
    v0, v1, d = mp.mpf(v0), mp.mpf(v1), mp.mpf(d)

    def T(x):
        return -(x - d) ** 2 / (2 * v1) + x ** 2 / (2 * v0) - mp.log(mp.sqrt(v1 / v0))

    a = 1 / (2 * v0) - 1 / (2 * v1)
    mstar = -(d / (2 * v1)) / a
    cst = T(mstar)

    def p_in_above(t):  # P_in(T(X) > t); a < 0: T > t <=> (x - m*)^2 < (t - cst)/a
        r2 = (t - cst) / a
        if r2 <= 0:
            return mp.mpf(0)
        r = mp.sqrt(r2)
        sd = mp.sqrt(v1)
        return Phi((mstar + r - d) / sd) - Phi((mstar - r - d) / sd)

    sd0 = mp.sqrt(v0)
    return float(mp.quad(lambda x: p_in_above(T(x)) * mp.npdf(x, 0, sd0), sorted([-mp.inf, mp.mpf(0), mstar, mp.inf])))


def main():
    ref = {"generator": "scripts/generate_lood_reference.py", "mp_dps": mp.mp.dps, "bivariate": [],
           "lood": [], "auc": []}
    for act, (f, fp) in ACT.items():
        for k11, k22, k12 in COVS:
            E = expectation(f, f, k11, k22, k12)
            Eu = expectation(fp, fp, k11, k22, k12)
            ref["bivariate"].append({"activation": act, "k11": k11, "k22": k22, "k12": k12,
                                     "F": float(E), "dF_dk12": float(Eu)})
            print(act, k11, k22, k12, float(E), float(Eu), flush=True)
    cases = [
        {"name": "1d_single", "X": [[-1.0], [0.2], [0.9], [2.0]], "Y": [[0.3], [-0.5], [0.8], [0.1]],
         "XS": [[0.5]], "YS": [[1.2]], "Q": [[0.7]], "noise": 0.05, "gamma": 0.5, "renyi_alpha": 1.5},
        {"name": "1d_at_S", "X": [[-1.0], [0.2], [0.9], [2.0]], "Y": [[0.3], [-0.5], [0.8], [0.1]],
         "XS": [[0.5]], "YS": [[1.2]], "Q": [[0.5]], "noise": 0.05, "gamma": 0.5},
        {"name": "2d_multi_query_two_outputs", "X": [[0.1, -0.3], [1.0, 0.4], [-0.7, 0.8], [0.3, 1.5], [-1.2, -0.9]],
         "Y": [[0.5, -0.5], [-0.5, 0.5], [0.5, -0.5], [-0.5, 0.5], [0.5, -0.5]],
         "XS": [[0.4, 0.2]], "YS": [[-0.5, 0.5]], "Q": [[0.2, 0.1], [1.1, -0.2], [-0.4, 0.6]], "noise": 0.1,
         "gamma": 1.0, "renyi_alpha": 1.3},
        {"name": "2d_group", "X": [[0.1, -0.3], [1.0, 0.4], [-0.7, 0.8]], "Y": [[0.2], [-0.4], [0.9]],
         "XS": [[0.4, 0.2], [-0.2, -0.5]], "YS": [[-0.7], [0.6]], "Q": [[0.3, 0.3], [0.0, -0.4]], "noise": 0.2,
         "gamma": 1.0, "renyi_alpha": 1.2},
    ]
    for case in cases:
        vals = lood_all(case)
        entry = dict(case, values=vals)
        if len(case["Q"]) == 1 and case["name"] == "1d_single":
            entry["kl_grad"] = kl_single_grad(case)
        ref["lood"].append(entry)
        print(case["name"], vals, flush=True)
    for v0, v1, d in [(1.0, 0.5, 0.3), (1.0, 0.99, 2.0), (0.4, 0.05, -0.7), (1.0, 1e-3, 0.01)]:
        auc = auc_1d(v0, v1, d)
        ref["auc"].append({"var": v0, "var_prime": v1, "dmu": d, "auc": auc})
        print("auc", v0, v1, d, auc, flush=True)
    OUT.write_text(json.dumps(ref, indent=1) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
