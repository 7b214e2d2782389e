"""Independent high-precision reference values for seed 004 (writes tests/data/sgld_reference.json).

Run:  nice python scripts/generate_sgld_reference.py   (about 15 minutes on one core; needs mpmath only)

Nothing here imports privgp. Every value is recomputed from the paper's own (uncentred) formulas in
mpmath at high precision, by a different route from the library's centred log1p/expm1 form:

* the constants of eq. (17) with eta = 2/A^2 exactly; the D1 law mu_t = rho (1 - lambda^t)/(1 - lambda),
  var_t = lambda^(2t)/alpha + eta (1 - lambda^(2t))/(1 - lambda^2); the D2 component r as the uncentred
  affine epoch map theta -> P theta + q_r (r-1 normal steps, the odd step, n-r normal steps), iterated
  K times from the prior N(0, 1/alpha) in closed form, and inside an epoch by the explicit step
  products; at DPS digits the cancellations of the float64 formulas are harmless;
* Figure 1 (n = 1 149 019, alpha = 0.1, beta = 1, x_h = 1.8, c = 1 165 165): the indicator
  F_K = (1/n) sum_r (mu - mu^r)^2 / (s^r)^2 and P(theta_hat > mu) = (1/n) sum_r Phi((mu^r - mu)/s^r)
  summed over ALL n components term by term (lambda^(n-r) by repeated multiplication);
* the small case n = 5, alpha = 1, beta = 4, x_h = 1, c = 3 (T1 of docs/notes/seed004_sgld.md, sec. 5):
  laws by exact rational arithmetic (fractions) step by step over the 5 orders, and the Renyi divergences of both directions
  and the hockey-stick delta(eps) by mpmath quadrature / root finding with exact normal CDFs;
* the exact posteriors of the Figure-1 pair (Lemma 4.1) and their Renyi divergence (Gil et al. 2013).

The tests pin the library against these numbers (tests/audit/samplers/test_sgld_reference.py).
"""
from __future__ import annotations

import json
import sys
import time
from fractions import Fraction
from itertools import permutations
from pathlib import Path

import mpmath as mp

DPS = 34
mp.mp.dps = DPS
OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "sgld_reference.json"

FIG1 = dict(n=1149019, alpha=mp.mpf("0.1"), beta=mp.mpf(1), x_h=mp.mpf("1.8"), c=mp.mpf(1165165))
SMALL = dict(n=5, alpha=Fraction(1), beta=Fraction(4), x_h=Fraction(1), c=Fraction(3))


def s(x, digits=20):
    return mp.nstr(x, digits)


def constants(n, alpha, beta, x_h, c):
    A = alpha + n * x_h ** 2 * beta
    eta = 2 / A ** 2
    lam = 1 - eta / 2 * A
    lam_h = 1 - eta / 2 * (alpha + n * (x_h / 2) ** 2 * beta)
    rho = eta / 2 * n * c * x_h ** 2 * beta
    rho_h = eta / 2 * n * c * (x_h / 2) ** 2 * beta
    return A, eta, lam, lam_h, rho, rho_h


class Paper:
    """The paper's uncentred closed forms at mpmath precision (prior initialisation)."""

    def __init__(self, n, alpha, beta, x_h, c):
        self.n, self.alpha = n, alpha
        self.A, self.eta, self.lam, self.lam_h, self.rho, self.rho_h = constants(n, alpha, beta, x_h, c)
        self.P = self.lam_h * self.lam ** (n - 1)
        self.lam_nm1 = self.lam ** (n - 1)
        self.one_m_lam = 1 - self.lam
        self.one_m_lam2 = 1 - self.lam ** 2
        self._PK = {}

    def S(self, j):  # variance of j normal steps started at 0
        return self.eta * (1 - self.lam ** (2 * j)) / (1 - self.lam ** 2)

    def M(self, j):  # mean offset of j normal steps started at 0
        return self.rho * (1 - self.lam ** j) / (1 - self.lam)

    def d1(self, t):
        if t == mp.inf:
            return self.rho / (1 - self.lam), self.eta / (1 - self.lam ** 2)
        return self.M(t), self.lam ** (2 * t) / self.alpha + self.S(t)

    def epoch(self, r, w=None):
        """(q_r, V_r) of the uncentred epoch map; w = lambda^(n-r) may be passed in."""
        n, lam = self.n, self.lam
        w = lam ** (n - r) if w is None else w
        lam_rm1 = self.lam_nm1 / w
        q = (self.lam_h * self.rho * (1 - lam_rm1) / self.one_m_lam + self.rho_h) * w + self.rho * (1 - w) / self.one_m_lam
        V = w * w * (self.lam_h ** 2 * self.eta * (1 - lam_rm1 ** 2) / self.one_m_lam2 + self.eta) + \
            self.eta * (1 - w * w) / self.one_m_lam2
        return q, V

    def d2(self, K, r, w=None):
        q, V = self.epoch(r, w)
        if K == mp.inf:
            return q / (1 - self.P), V / (1 - self.P ** 2)
        if K not in self._PK:
            self._PK[K] = self.P ** K
        PK = self._PK[K]
        return q * (1 - PK) / (1 - self.P), PK * PK / self.alpha + V * (1 - PK * PK) / (1 - self.P ** 2)

    def d2_inside(self, K, j, r):
        """Component r at t = K n + j, 0 < j < n: from the epoch-end law, j more steps."""
        m, v = self.d2(K, r)
        lam = self.lam
        if r > j:
            return lam ** j * m + self.M(j), lam ** (2 * j) * v + self.S(j)
        m = lam ** (r - 1) * m + self.M(r - 1)
        v = lam ** (2 * (r - 1)) * v + self.S(r - 1)
        m, v = self.lam_h * m + self.rho_h, self.lam_h ** 2 * v + self.eta
        return lam ** (j - r) * m + self.M(j - r), lam ** (2 * (j - r)) * v + self.S(j - r)


def figure1(log):
    p = Paper(**FIG1)
    n = p.n
    out = {"setting": {k: s(v_) for k, v_ in FIG1.items()}, "constants": {
        "A": s(p.A), "eta": s(p.eta), "lambda": s(p.lam), "lambda_hat": s(p.lam_h), "P": s(p.P)}}
    per = []
    for K in (1, 5, 25, 29, 60, mp.inf):
        t = mp.inf if K == mp.inf else K * n
        m1, v1 = p.d1(t)
        for r in (1, 2, n // 2, n):
            m2, v2 = p.d2(K, r)
            per.append({"K": "inf" if K == mp.inf else K, "r": r, "gap": s(m1 - m2), "var2": s(v2), "var1": s(v1),
                        "ratio": s((m1 - m2) ** 2 / v2)})
    out["epoch_components"] = per
    inside = []
    K, j = 25, n // 3
    m1, v1 = p.d1(K * n + j)
    for r in (1, j, j + 1, n):
        m2, v2 = p.d2_inside(K, j, r)
        inside.append({"t": K * n + j, "r": r, "gap": s(m1 - m2), "var2": s(v2), "var1": s(v1)})
    out["inside_components"] = inside
    sums = []
    for K in (25, 60, mp.inf):
        t0 = time.time()
        t = mp.inf if K == mp.inf else K * n
        m1, v1 = p.d1(t)
        F = mp.mpf(0)
        tail = mp.mpf(0)
        w = mp.mpf(1)          # lambda^(n-r), r = n, n-1, ..., 1
        with_tail = K != 60
        for r in range(n, 0, -1):
            m2, v2 = p.d2(K, r, w)
            g2 = (m1 - m2) ** 2
            F += g2 / v2
            if with_tail:
                tail += mp.ncdf((m2 - m1) / mp.sqrt(v2))
            w *= p.lam
        row = {"K": "inf" if K == mp.inf else K, "F": s(F / n, 16)}
        if with_tail:
            row["tail"] = s(tail / n, 16)
        sums.append(row)
        log(f"  figure-1 full sum at K = {K}: {time.time() - t0:.0f} s")
    out["full_sums"] = sums
    # exact posteriors of the pair (Lemma 4.1) and their Renyi divergences (Gil et al. 2013)
    a, b, x, c = FIG1["alpha"], FIG1["beta"], FIG1["x_h"], FIG1["c"]
    mu1 = b * n * c * x ** 2 / (a + n * x ** 2 * b)
    s1 = 1 / (a + n * x ** 2 * b)
    sxx2 = (n - 1) * x ** 2 + (x / 2) ** 2
    mu2 = b * c * sxx2 / (a + sxx2 * b)
    s2 = 1 / (a + sxx2 * b)
    out["posterior"] = {"mean1": s(mu1), "var1": s(s1), "gap": s(mu1 - mu2), "var2": s(s2),
                        "renyi": [{"nu": nu, "D12": s(renyi_gauss(nu, mu1, s1, mu2, s2)),
                                   "D21": s(renyi_gauss(nu, mu2, s2, mu1, s1))} for nu in (2, 5, 100)]}
    return out


def renyi_gauss(nu, m1, v1, m2, v2):
    nu = mp.mpf(nu)
    vs = nu * v2 + (1 - nu) * v1
    if vs <= 0:
        return mp.inf
    return mp.log(mp.sqrt(v2 / v1)) + mp.log(v2 / vs) / (2 * (nu - 1)) + nu * (m1 - m2) ** 2 / (2 * vs)


# --------------------------------------------------------------------------- the small case
def small_laws(t):
    """Exact rational (mean, var) of D1 and of D2 for each of the n! shuffles (grouped by r)."""
    n, alpha, beta, x_h, c = (SMALL[k] for k in ("n", "alpha", "beta", "x_h", "c"))
    A = alpha + n * x_h ** 2 * beta
    eta = Fraction(2) / (A * A)
    x1 = [x_h] * n
    x2 = [x_h] * (n - 1) + [x_h / 2]

    def run(xs, order):
        m, v = Fraction(0), 1 / alpha
        for j in range(t):
            i = order[j % n]
            a = 1 - eta / 2 * (alpha + n * xs[i] ** 2 * beta)
            b = eta / 2 * n * beta * xs[i] * (c * xs[i])
            m, v = a * m + b, a * a * v + eta
        return m, v

    d1 = run(x1, list(range(n)))
    comps = {}
    for order in permutations(range(n)):
        r = order.index(n - 1) + 1
        law = run(x2, order)
        if r in comps:
            assert comps[r] == law
        comps[r] = law
    return d1, [comps[r] for r in range(1, n + 1)], eta


def small(log):
    out = {"setting": {k: float(v_) for k, v_ in SMALL.items()}, "laws": [], "divergences": [], "hockey": []}
    for t in (5, 7, 13, 15, 40, 52):
        d1, comps, eta = small_laws(t)
        out["laws"].append({"t": t, "mean1": s(mp.mpf(d1[0].numerator) / d1[0].denominator),
                            "var1": s(mp.mpf(d1[1].numerator) / d1[1].denominator),
                            "means2": [s(mp.mpf(m.numerator) / m.denominator) for m, _ in comps],
                            "vars2": [s(mp.mpf(v_.numerator) / v_.denominator) for _, v_ in comps]})
    for K in (1, 8, 100):
        d1, comps, _ = small_laws(5 * K)
        m1, v1 = (mp.mpf(q.numerator) / q.denominator for q in d1)
        cm = [(mp.mpf(m.numerator) / m.denominator, mp.mpf(v_.numerator) / v_.denominator) for m, v_ in comps]
        p = lambda x: mp.npdf(x, m1, mp.sqrt(v1))  # noqa: E731, B023
        q = lambda x: sum(mp.npdf(x, m, mp.sqrt(v_)) for m, v_ in cm) / len(cm)  # noqa: E731, B023
        lo, hi = m1 - 40, m1 + 40
        pts = [lo] + [m1 + k for k in range(-6, 7)] + [hi]
        for nu in (2, 3, 5):
            row = {"K": K, "nu": nu}
            for name, f, g, wide, narrow in (("D12", p, q, max(v_ for _, v_ in cm), v1),
                                             ("D21", q, p, v1, max(v_ for _, v_ in cm))):
                if nu * wide + (1 - nu) * narrow <= 0:
                    row[name] = "inf"
                else:
                    I = mp.quad(lambda x: f(x) ** nu * g(x) ** (1 - nu), [-mp.inf] + pts + [mp.inf])  # noqa: B023 (called within this iteration)
                    row[name] = s(mp.log(I) / (nu - 1))
            out["divergences"].append(row)
        P = lambda a, b: (mp.ncdf((b - m1) / mp.sqrt(v1)) - mp.ncdf((a - m1) / mp.sqrt(v1)))  # noqa: E731, B023
        Q = lambda a, b: sum(mp.ncdf((b - m) / mp.sqrt(v_)) - mp.ncdf((a - m) / mp.sqrt(v_)) for m, v_ in cm) / len(cm)  # noqa: E731, B023
        for eps in (0, mp.mpf("0.5"), 1):
            row = {"K": K, "eps": float(eps)}
            for name, f, g, Pf, Qf in (("d12", p, q, P, Q), ("d21", q, p, Q, P)):
                h = lambda x: f(x) - mp.e ** eps * g(x)  # noqa: E731, B023
                grid = [m1 - 30 + k * mp.mpf("0.01") for k in range(6001)]
                vals = [h(x) for x in grid]
                roots = [mp.findroot(h, (grid[i], grid[i + 1]), solver="anderson")
                         for i in range(len(grid) - 1) if (vals[i] > 0) != (vals[i + 1] > 0)]
                ends = [-mp.inf] + roots + [mp.inf]
                total = mp.mpf(0)
                for a, b in zip(ends[:-1], ends[1:]):
                    mid = (a + b) / 2 if mp.isfinite(a) and mp.isfinite(b) else (b - 1 if mp.isfinite(b) else a + 1)
                    if h(mid) > 0:
                        total += Pf(a, b) - mp.e ** eps * Qf(a, b)
                row[name] = s(total)
            out["hockey"].append(row)
        log(f"  small case K = {K} done")
    return out


def main() -> int:
    t0 = time.time()
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    data = {"generator": "scripts/generate_sgld_reference.py", "dps": DPS}
    data["small"] = small(log)
    data["figure1"] = figure1(log)
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    log(f"wrote {OUT} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
