"""Independent high-precision reference values for privgp.accounting (writes tests/data/accounting_reference.json).

Run:  python scripts/generate_accounting_reference.py   (about a minute; needs mpmath only)

Nothing here imports privgp: every quantity is recomputed from the statements in seed 000 with mpmath
at high precision, by a different route wherever one exists:

* psi_alpha(tau) (Lemma A.3) as the *definition*, a maximum over lambda in [1/(1+tau), 1+tau] of
  phi(lambda) = -1/2 log lambda - log(alpha - (alpha-1) lambda) / (2(alpha-1)), by brute force on a
  dense grid that contains both endpoints (not the closed form);
* Phi_n(r) = sup_{0<=u<=V} u / (u + r^2)^2 (Lemmas B.1, B.7) and the suprema inside Lemmas B.5 and B.8
  by a dense grid plus golden-section refinement (not the case formulas);
* kappa = inf k over the box from the kernel profiles at the box diameter, V̄_n of Prop. 3;
* the bound of Thm 3.1 / Prop. 2 from those pieces; L-fold composition (eq. 3);
* epsilon (both conversions) and delta-for-epsilon minimised over the admissible orders by a dense
  two-sided logarithmic grid in alpha followed by golden-section refinement at 40 digits.

The tests pin the library against these numbers (tests/accounting/test_reference.py).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import mpmath as mp

DPS = 40
mp.mp.dps = DPS
OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "accounting_reference.json"

SQ2 = mp.sqrt(2)


# --------------------------------------------------------------------------- building blocks
def phi_lambda(alpha, lam):
    alpha, lam = mp.mpf(alpha), mp.mpf(lam)
    arg = alpha - (alpha - 1) * lam
    if arg <= 0:
        return mp.inf
    return -mp.log(lam) / 2 - mp.log(arg) / (2 * (alpha - 1))


def psi_brute(alpha, tau, points=401):
    """max over a dense lambda grid containing both endpoints of [1/(1+tau), 1+tau]."""
    alpha, tau = mp.mpf(alpha), mp.mpf(tau)
    if tau == 0:
        return mp.mpf(0)
    if tau * (alpha - 1) >= 1:
        return mp.inf
    lo, hi = 1 / (1 + tau), 1 + tau
    return max(phi_lambda(alpha, lo + (hi - lo) * mp.mpf(i) / (points - 1)) for i in range(points))


def psi_endpoints(alpha, tau):
    """The maximum of the convex phi over the interval: the larger endpoint value (used inside the
    optimisation loops for speed; checked against psi_brute in main())."""
    alpha, tau = mp.mpf(alpha), mp.mpf(tau)
    if tau == 0:
        return mp.mpf(0)
    if tau * (alpha - 1) >= 1:
        return mp.inf
    return max(phi_lambda(alpha, 1 / (1 + tau)), phi_lambda(alpha, 1 + tau))


def golden_section(f, a, b, iters, maximize):
    """Golden-section search for the max (or min) of a unimodal f on [a, b]. Returns the final
    bracket ends a, b and the two interior points with their values, [(f(c), c), (f(d), d)]."""
    a, b = mp.mpf(a), mp.mpf(b)
    g = (mp.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if (fc >= fd) if maximize else (fc <= fd):
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return a, b, [(fc, c), (fd, d)]


def golden_max(f, a, b, iters=160):
    a, b, inner = golden_section(f, a, b, iters, maximize=True)
    return max(inner[0][0], inner[1][0], f(a), f(b))


def sup_on_interval(f, lo, hi, points=2001):
    """sup of a unimodal-or-monotone f on [lo, hi]: dense grid, then golden section around the best."""
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    xs = [lo + (hi - lo) * mp.mpf(i) / (points - 1) for i in range(points)]
    vals = [f(x) for x in xs]
    i = max(range(points), key=lambda j: vals[j])
    a, b = xs[max(i - 1, 0)], xs[min(i + 1, points - 1)]
    return max(vals[i], golden_max(f, a, b))


def kernel_profile(name, d):
    d = mp.mpf(d)
    if name == "exponential":
        return mp.exp(-d)
    if name == "matern32":
        s = mp.sqrt(3) * d
        return (1 + s) * mp.exp(-s)
    if name == "matern52":
        s = mp.sqrt(5) * d
        return (1 + s + s * s / 3) * mp.exp(-s)
    if name == "squared_exponential":
        return mp.exp(-d * d / 2)
    raise ValueError(name)


def kappa_of(kernel, lengthscale, dim):
    if kernel == "constant":
        return mp.mpf(1)
    if kernel == "diagonal":
        return mp.mpf(0)
    return kernel_profile(kernel, mp.sqrt(dim) / mp.mpf(lengthscale))  # unit box [0, 1]^dim


def v_bar(n, r, kappa):
    n, r = mp.mpf(n), mp.mpf(r)
    return 1 - kappa**2 * (n - 1) / (n - 1 + r * r)


def phi_n_brute(V, r):
    r2 = mp.mpf(r) ** 2
    return sup_on_interval(lambda u: u / (u + r2) ** 2, 0, V)


def delta_bound(sens, n, r, V, M_Y, rkhs_norm, constants):
    n, r, M_Y = mp.mpf(n), mp.mpf(r), mp.mpf(M_Y)
    r2 = r * r
    if sens == "generic":      # Lemma B.1
        out = 2 * M_Y * (1 + mp.sqrt(n - 1) / r) * mp.sqrt(phi_n_brute(V, r))
    elif sens == "exp1d":      # Lemma B.7
        out = 4 * M_Y * mp.sqrt(phi_n_brute(V, r))
    elif sens == "constant":   # Lemma B.4
        out = 2 * M_Y * mp.sqrt(r2 + n - 1) / (r * (r2 + n))
    elif sens == "diagonal":   # Lemma B.5: 2 sqrt(2) M_Y sup_{0<=v<=1} sqrt(v) / (r^2 + v)
        out = 2 * SQ2 * M_Y * sup_on_interval(lambda u: mp.sqrt(u) / (r2 + u), 0, 1)
    elif sens == "rkhs":       # Lemma B.8: 2 B sup_{0<=v<=V} v / (r^2 + v)
        out = 2 * mp.mpf(rkhs_norm) * sup_on_interval(lambda u: u / (r2 + u), 0, V)
    else:
        raise ValueError(sens)
    if constants == "published":
        out = out / SQ2
    return out


def tau_tilde(V, r, sigma, eta):
    r2 = mp.mpf(r) ** 2
    if sigma == "inf":
        return V / r2
    s2, e2 = mp.mpf(sigma) ** 2, mp.mpf(eta) ** 2
    return s2 * V / (s2 * r2 + e2 * (V + r2))


def rdp_single(alpha, V, Delta, r, sigma, eta, psi=psi_endpoints):
    """Thm 3.1 / Prop. 2 (eq. (4)); sigma = 'inf' is the covariance-only limit."""
    alpha = mp.mpf(alpha)
    tau = tau_tilde(V, r, sigma, eta)
    if not (1 < alpha < 1 + 1 / tau):
        return mp.inf
    cov = 2 * psi(alpha, tau)
    if sigma == "inf":
        return cov
    r2 = mp.mpf(r) ** 2
    s2, e2 = mp.mpf(sigma) ** 2, mp.mpf(eta) ** 2
    den = s2 * (r2 - (alpha - 1) * V) + e2 * (V + r2)
    if den <= 0:
        return mp.inf
    return cov + alpha / 2 * (V + r2) * Delta**2 / den


def eps_conv(rdp, alpha, delta, conversion):
    alpha, delta = mp.mpf(alpha), mp.mpf(delta)
    if rdp == mp.inf:
        return mp.inf
    if conversion == "mironov":   # Mironov (2017), Prop. 3
        return rdp + mp.log(1 / delta) / (alpha - 1)
    # Canonne, Kamath, Steinke (2020), Prop. 12
    return max(mp.mpf(0), rdp + mp.log((alpha - 1) / alpha) - (mp.log(delta) + mp.log(alpha)) / (alpha - 1))


def log_delta_conv(rdp, alpha, epsilon, conversion):
    alpha, epsilon = mp.mpf(alpha), mp.mpf(epsilon)
    if rdp == mp.inf:
        return mp.mpf(0)
    out = (alpha - 1) * (rdp - epsilon)
    if conversion == "improved":
        out += (alpha - 1) * mp.log((alpha - 1) / alpha) - mp.log(alpha)
    return min(out, mp.mpf(0))


def minimise_alpha(f, amax, points=1500):
    """min over 1 < alpha < amax of f: log grid in alpha - 1 (from 1e-12) and in amax - alpha,
    then golden section on the bracket around the best grid point (40 digits)."""
    cands = []
    if amax == mp.inf:
        top = mp.mpf(10) ** 12
        cands = [1 + mp.mpf(10) ** (-12 + 24 * mp.mpf(i) / (points - 1)) for i in range(points)]
    else:
        w = amax - 1
        lo_exp = min(mp.log10(w) - 1, -12)
        cands = [1 + mp.mpf(10) ** (lo_exp + (mp.log10(w) - lo_exp) * mp.mpf(i) / (points - 1)) for i in range(points)]
        cands += [amax - w * mp.mpf(10) ** (-14 + 14 * mp.mpf(i) / (points - 1)) for i in range(points)]
        cands = [a for a in cands if 1 < a < amax]
        top = None
    cands = sorted(set(cands))
    vals = [f(a) for a in cands]
    i = min(range(len(cands)), key=lambda j: vals[j])
    if vals[i] == mp.inf:
        return mp.inf, mp.nan
    a = cands[max(i - 1, 0)] if i > 0 else (1 + (cands[0] - 1) / 10)
    b = cands[min(i + 1, len(cands) - 1)] if i < len(cands) - 1 else (amax if top is None else top)
    _, _, inner = golden_section(f, a, b, 200, maximize=False)
    best = min([(vals[i], cands[i])] + inner, key=lambda t: t[0])
    return best


# --------------------------------------------------------------------------- cases
def num(x):
    if x == mp.inf:
        return "inf"
    return float(x)


def setting_record(s):
    """V, Delta, kappa, tau, alpha_max for a setting dict."""
    kappa = kappa_of(s["kernel"], s.get("lengthscale", 1.0), s.get("dim", 1))
    V = v_bar(s["n"], s["r"], kappa)
    Delta = delta_bound(s["sensitivity"], s["n"], s["r"], V, s.get("M_Y", 1.0), s.get("rkhs_norm"),
                        s.get("constants", "proven"))
    tau = tau_tilde(V, s["r"], s["sigma"], s.get("eta", 0.0))
    amax = mp.inf if tau == 0 else 1 + 1 / tau
    return kappa, V, Delta, tau, amax


def epsilon_case(s):
    kappa, V, Delta, tau, amax = setting_record(s)
    L = s.get("L", 1)
    out = dict(s, kappa=num(kappa), V=num(V), Delta=num(Delta), tau=num(tau), alpha_max=num(amax))
    for conv in ("mironov", "improved"):
        f = lambda a: eps_conv(L * rdp_single(a, V, Delta, s["r"], s["sigma"], s.get("eta", 0.0)),  # noqa: E731
                               a, s["delta"], conv)  # noqa: B023 (called within this iteration)
        e, a = minimise_alpha(f, amax)
        out[f"epsilon_{conv}"] = num(e)
        out[f"alpha_{conv}"] = num(a)
    return out


def delta_case(s):
    kappa, V, Delta, tau, amax = setting_record(s)
    L = s.get("L", 1)
    out = dict(s, V=num(V), Delta=num(Delta), alpha_max=num(amax))
    for conv in ("mironov", "improved"):
        f = lambda a: log_delta_conv(L * rdp_single(a, V, Delta, s["r"], s["sigma"], s.get("eta", 0.0)),  # noqa: E731
                                     a, s["epsilon"], conv)  # noqa: B023 (called within this iteration)
        ld, a = minimise_alpha(f, amax)
        out[f"delta_{conv}"] = num(mp.exp(ld))
        out[f"alpha_{conv}"] = num(a)
    return out


EPSILON_SETTINGS = [
    # docs/notes/seed000_published_scripts.md, sec. 2.3 (Fig. 3, Fig. 2-like, Table 1-like, 2-D, London-like), both constants
    *[dict(n=10, kernel="exponential", lengthscale=1.0, dim=1, r=1.0, sigma=5.0, delta=0.05, L=L,
           sensitivity="exp1d", constants=c, tag="ref2.3 fig3") for L in (1, 10, 100) for c in ("published", "proven")],
    *[dict(n=10, kernel="exponential", lengthscale=1.0, dim=1, r=0.1, sigma=0.5, delta=0.05, L=1,
           sensitivity="exp1d", constants=c, tag="ref2.3 fig2 r=0.1") for c in ("published", "proven")],
    *[dict(n=10, kernel="exponential", lengthscale=0.2, dim=1, r=3.0, sigma=1.0, delta=0.05, L=1,
           sensitivity="exp1d", constants=c, tag="ref2.3 fig2 r=3") for c in ("published", "proven")],
    *[dict(n=100, kernel="exponential", lengthscale=0.3, dim=1, r=2.0, sigma=0.5, delta=0.005, L=1,
           sensitivity="exp1d", constants=c, tag="ref2.3 table1") for c in ("published", "proven")],
    *[dict(n=400, kernel="exponential", lengthscale=0.2, dim=2, r=4.0, sigma=0.12, delta=d, L=1,
           sensitivity="generic", constants=c, tag="ref2.3 2d") for d in (400 ** -1.1, 0.001)
      for c in ("published", "proven")],
    *[dict(n=1075, kernel="exponential", lengthscale=0.1, dim=2, r=5.0, sigma=0.1, delta=1075 ** -1.1, L=1,
           sensitivity="generic", constants=c, tag="ref2.3 london") for c in ("published", "proven")],
    # every lemma, kernels, dimensions, sigma = inf, GP noise eta (Prop. 2), composition
    dict(n=1000, kernel="exponential", lengthscale=1.0, dim=1, r=10.0, sigma=1.0, delta=5e-4, sensitivity="generic"),
    dict(n=1000, kernel="matern32", lengthscale=0.5, dim=2, r=3.0, sigma=2.0, delta=1e-5, sensitivity="generic"),
    dict(n=50, kernel="matern52", lengthscale=0.3, dim=1, r=0.5, sigma=1.0, delta=1e-3, sensitivity="generic", L=4),
    dict(n=20, kernel="squared_exponential", lengthscale=0.7, dim=2, r=1.5, sigma=0.8, delta=1e-2,
         sensitivity="generic", eta=0.5),
    dict(n=10, kernel="exponential", lengthscale=0.5, dim=1, r=0.3, sigma=2.0, delta=0.05, sensitivity="exp1d"),
    dict(n=10, kernel="exponential", lengthscale=0.5, dim=1, r=0.3, sigma=2.0, delta=0.05, sensitivity="exp1d",
         eta=2.0),
    dict(n=10, kernel="exponential", lengthscale=1.0, dim=1, r=0.5, sigma="inf", delta=0.05, sensitivity="exp1d"),
    dict(n=10, kernel="exponential", lengthscale=1.0, dim=1, r=2.0, sigma="inf", delta=0.05, sensitivity="exp1d", L=5),
    dict(n=300, kernel="matern32", lengthscale=0.2, dim=2, r=1.0, sigma="inf", delta=1e-6, sensitivity="generic",
         eta=1.0),
    dict(n=1000, kernel="exponential", lengthscale=1.0, dim=1, r=3.0, sigma=0.5, delta=5e-4, sensitivity="rkhs",
         rkhs_norm=3.0),
    dict(n=200, kernel="squared_exponential", lengthscale=0.4, dim=2, r=0.8, sigma=1.0, delta=1e-4,
         sensitivity="rkhs", rkhs_norm=1.5, L=3),
    dict(n=100, kernel="constant", dim=1, r=0.5, sigma=0.3, delta=1e-3, sensitivity="constant", M_Y=2.0),
    dict(n=1, kernel="constant", dim=1, r=2.0, sigma=1.0, delta=1e-3, sensitivity="constant"),
    dict(n=30, kernel="diagonal", dim=2, r=0.6, sigma=1.0, delta=1e-3, sensitivity="diagonal"),
    dict(n=30, kernel="diagonal", dim=2, r=1.7, sigma=0.4, delta=1e-3, sensitivity="diagonal", L=2),
    dict(n=1, kernel="exponential", lengthscale=1.0, dim=1, r=1.0, sigma=1.0, delta=1e-3, sensitivity="generic"),
    dict(n=5000, kernel="matern52", lengthscale=2.0, dim=1, r=50.0, sigma=0.05, delta=1e-8, sensitivity="generic",
         M_Y=0.5, L=1000),
    dict(n=10, kernel="exponential", lengthscale=1.0, dim=1, r=1.0, sigma=5.0, delta=0.5, sensitivity="exp1d"),
    dict(n=2, kernel="exponential", lengthscale=0.05, dim=1, r=0.05, sigma=10.0, delta=1e-3, sensitivity="exp1d"),
    dict(n=10, kernel="exponential", lengthscale=1.0, dim=1, r=30.0, sigma=3.0, delta=0.3, sensitivity="exp1d",
         eta=5.0),
]

DELTA_SETTINGS = [
    dict(n=10, kernel="exponential", lengthscale=1.0, dim=1, r=1.0, sigma=5.0, epsilon=5.0, sensitivity="exp1d"),
    dict(n=10, kernel="exponential", lengthscale=1.0, dim=1, r=1.0, sigma=5.0, epsilon=1.0, sensitivity="exp1d", L=3),
    dict(n=100, kernel="matern32", lengthscale=0.3, dim=2, r=2.0, sigma=1.0, epsilon=3.0, sensitivity="generic"),
    dict(n=10, kernel="exponential", lengthscale=1.0, dim=1, r=2.0, sigma="inf", epsilon=2.0, sensitivity="exp1d"),
    dict(n=50, kernel="squared_exponential", lengthscale=0.5, dim=1, r=1.0, sigma=1.0, epsilon=8.0,
         sensitivity="generic", eta=1.0),
]

PSI_CASES = [(1.5, 0.1), (2.0, 0.5), (1.01, 10.0), (1.9, 1.0), (3.0, 0.49), (1.2, 4.9), (50.0, 0.01),
             (1.000001, 100.0), (2.0, 1e-6), (1.5, 0.0), (2.0, 1.0), (3.0, 0.7)]

PHI_CASES = [(0.3, 1.0), (2.0, 0.9), (0.999, 1.0), (1.0, 0.5), (0.05, 0.2)]

RDP_CASES = [
    dict(alpha=1.5, V=0.9, Delta=1.2, r=1.0, sigma=2.0, eta=0.0),
    dict(alpha=1.05, V=1.0, Delta=3.0, r=0.3, sigma=0.5, eta=0.0),
    dict(alpha=4.0, V=0.6, Delta=0.7, r=2.0, sigma=1.0, eta=0.7),
    dict(alpha=1.8, V=0.9, Delta=1.2, r=1.0, sigma="inf", eta=0.0),
    dict(alpha=1.8, V=0.9, Delta=1.2, r=1.0, sigma="inf", eta=3.0),
    dict(alpha=2.2, V=0.9, Delta=1.2, r=1.0, sigma=2.0, eta=0.0),   # beyond 1 + r^2/V: inf
    dict(alpha=2.2, V=0.9, Delta=1.2, r=1.0, sigma=2.0, eta=1.0),   # admissible thanks to eta (Prop. 2)
]


def main() -> int:
    t0 = time.time()
    data: dict = {"meta": {"generator": "scripts/generate_accounting_reference.py", "mpmath": mp.__version__,
                           "dps": DPS, "python": sys.version.split()[0],
                           "note": "independent of privgp; see the generator's docstring"}}
    psi = []
    for a, t in PSI_CASES:
        brute = psi_brute(a, t)
        ends = psi_endpoints(a, t)
        assert brute == ends or abs(brute - ends) <= mp.mpf(10) ** (-30) * max(1, abs(ends)), (a, t)
        psi.append({"alpha": a, "tau": t, "psi": num(brute)})
    data["psi"] = psi
    data["phi_n"] = [{"V": V, "r": r, "Phi": num(phi_n_brute(V, r))} for V, r in PHI_CASES]

    lemmas = []
    for s in [dict(n=10, r=0.5, kernel="exponential", lengthscale=1.0, dim=1),
              dict(n=1000, r=10.0, kernel="matern32", lengthscale=0.5, dim=2),
              dict(n=3, r=2.0, kernel="squared_exponential", lengthscale=0.2, dim=1)]:
        kappa = kappa_of(s["kernel"], s["lengthscale"], s["dim"])
        V = v_bar(s["n"], s["r"], kappa)
        rec = dict(s, kappa=num(kappa), V=num(V))
        for sens in ("generic", "exp1d", "rkhs"):
            rec[f"Delta_{sens}"] = num(delta_bound(sens, s["n"], s["r"], V, 1.5, 2.0, "proven"))
        rec["Delta_generic_published"] = num(delta_bound("generic", s["n"], s["r"], V, 1.5, None, "published"))
        rec["Delta_exp1d_published"] = num(delta_bound("exp1d", s["n"], s["r"], V, 1.5, None, "published"))
        rec["M_Y"], rec["rkhs_norm"] = 1.5, 2.0
        lemmas.append(rec)
    for n, r in [(1, 0.5), (7, 0.3), (100, 3.0)]:
        lemmas.append({"n": n, "r": r, "kernel": "constant", "M_Y": 1.5,
                       "Delta_constant": num(delta_bound("constant", n, r, None, 1.5, None, "proven"))})
    for r in (0.2, 1.0, 1.0000001, 4.0):
        lemmas.append({"n": 5, "r": r, "kernel": "diagonal", "M_Y": 1.5,
                       "Delta_diagonal": num(delta_bound("diagonal", 5, r, None, 1.5, None, "proven"))})
    data["lemmas"] = lemmas

    rdp = []
    for c in RDP_CASES:
        rdp.append(dict(c, rdp=num(rdp_single(c["alpha"], mp.mpf(c["V"]), mp.mpf(c["Delta"]), c["r"], c["sigma"],
                                              c["eta"], psi=psi_brute))))
    data["rdp"] = rdp
    data["epsilon"] = [epsilon_case(s) for s in EPSILON_SETTINGS]
    data["delta_for_epsilon"] = [delta_case(s) for s in DELTA_SETTINGS]
    data["meta"]["seconds"] = round(time.time() - t0, 1)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUT} ({len(data['epsilon'])} epsilon cases) in {data['meta']['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
