"""The paper's bounds on cyclic SGLD for the counterexample (seed 004, App. A.2-A.3, D) and Theorem 1.

Everything takes a :class:`~privgp.audit.samplers.sgld_model.CyclicSGLD` setting (its constants are computed
without cancellation) and is checked against the exact laws in tests/audit/samplers/test_sgld_bounds.py.

* :func:`kdot` - k. of Lemma A.4: (1/(2n)) log_lambda(1 / (1 + (1 - lambda^2)/(alpha eta))) - 1, the
  epoch where prior and data contribute about equally to the variance; the paper's step is
  T = (ceil(k.) + 1) n (:func:`paper_step`).
* :func:`lemma_a2_gap_lower_bound` - Lemma A.2: mu_(k+1)n - mu^r_(k+1)n >= lambda^(n-1) mu_inf
  lambda^(k(n-1)) (lambda^^(k+1) - lambda^(k+1)) for every r.
* :func:`lemma_a3_variance_bounds` (k <= k.) and :func:`lemma_a4_variance_bounds` (k = ceil(k.)).
* :func:`eq15_lower_bound` (Lemma A.5) and :func:`eq16_epsilon_prime` (Lemma A.6 / 4.6: releasing
  theta_T is not (eps, delta)-DP for eps < eps').
* :func:`theorem1_constants` - n_p and c_p of the proof of Theorem 1 in mpmath (they overflow float64:
  the exponent 1/(2(gamma2 - 1)) is 500 at gamma2 = 1.001), with the corrected n_2 of Claim D.30
  (9/10, the factor x_h^2 beta, exponents 1/(2 - gamma1 - gamma2) and 1/(3 - 2 gamma2); docs/notes/seed004_sgld.md, sec. 6.4).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath
import numpy as np

from ... import validation as v
from ...errors import InvalidParameterError
from .sgld_model import CyclicSGLD


def _check(setting) -> CyclicSGLD:
    if not isinstance(setting, CyclicSGLD):
        raise InvalidParameterError("setting", "a privgp.audit.samplers.sgld_model.CyclicSGLD", type(setting).__name__)
    return setting


def kdot(setting: CyclicSGLD) -> float:
    """k. of Lemma A.4 (real, may be <= 0 when the conditions of Claim D.22 fail)."""
    s = _check(setting)
    return (-math.log1p(s.one_minus_lam2 / (s.alpha * s.step_size)) / s.log_lam) / (2.0 * s.n) - 1.0


def paper_step(setting: CyclicSGLD) -> int:
    """T = (ceil(k.) + 1) n: the step at which Lemma A.6 shows non-privacy."""
    return (math.ceil(kdot(setting)) + 1) * _check(setting).n


def lemma_a2_gap_lower_bound(setting: CyclicSGLD, k) -> np.ndarray:
    """Lemma A.2 at step (k+1) n: lambda^((k+1)(n-1)) mu_inf (lambda^^(k+1) - lambda^(k+1))
    = mu_inf lambda^((k+1) n) expm1((k+1) log(lambda^/lambda)) (k >= 0, vectorised)."""
    s = _check(setting)
    k1 = np.asarray(k, dtype=float) + 1.0
    if np.any(k1 < 1):
        raise InvalidParameterError("k", ">= 0", k)
    return s.mu_inf * np.exp(k1 * s.n * s.log_lam) * np.expm1(k1 * s.log_ratio)


def lemma_a3_variance_bounds(setting: CyclicSGLD, k: int, r) -> np.ndarray:
    """Lemma A.3 / eq. (19) at step (k+1) n, for 0 < k <= k.:  r = 1: 2 P^(2(k+1)) / alpha;
    r > 1: 6 (lambda^ lambda^(n-r))^2 P^(2k) / alpha."""
    s = _check(setting)
    k = v.integer("k", k, minimum=1)
    if k > kdot(s):
        raise InvalidParameterError("k", f"<= k. = {kdot(s):.6g} (Lemma A.3)", k)
    return _variance_bound(s, k, r, first=2.0)


def lemma_a4_variance_bounds(setting: CyclicSGLD, r) -> np.ndarray:
    """Lemma A.4 at step (ceil(k.) + 1) n: r = 1: (1 + 2 e^(1/(x_h^2 beta))) P^(2(ceil(k.)+1)) / alpha;
    r > 1: 6 (lambda^ lambda^(n-r))^2 P^(2 ceil(k.)) / alpha."""
    s = _check(setting)
    k = math.ceil(kdot(s))
    return _variance_bound(s, k, r, first=1.0 + 2.0 * math.exp(1.0 / (s.x_h ** 2 * s.beta)))


def _variance_bound(s: CyclicSGLD, k: int, r, first: float) -> np.ndarray:
    r = np.asarray(r, dtype=float)
    if np.any((r < 1) | (r > s.n) | (r != np.floor(r))):
        raise InvalidParameterError("r", f"integers in 1..{s.n}", r)
    one = first * np.exp(2.0 * (k + 1) * s.log_P) / s.alpha
    other = 6.0 * np.exp(2.0 * (s.log_lam_hat + (s.n - r) * s.log_lam) + 2.0 * k * s.log_P) / s.alpha
    return np.where(r == 1, one, other)


def v1(setting: CyclicSGLD) -> float:
    """v_1 = max{6, 1 + 2 e^(1/(x_h^2 beta))} (eq. (15))."""
    s = _check(setting)
    return max(6.0, 1.0 + 2.0 * math.exp(1.0 / (s.x_h ** 2 * s.beta)))


def eq15_lower_bound(setting: CyclicSGLD) -> float:
    """Lemma A.5 / eq. (15): (mu_T - mu^r_T)^2 / (s^r_T)^2 >= e^(-2/(x_h^2 beta)) (alpha/v_1)(3/(32 x_h^2 beta))^2 (c/n)^2."""
    s = _check(setting)
    xb = s.x_h ** 2 * s.beta
    return math.exp(-2.0 / xb) * s.alpha / v1(s) * (3.0 / (32.0 * xb)) ** 2 * (s.c / s.n) ** 2


def eq16_epsilon_prime(setting: CyclicSGLD, delta: float) -> float:
    """Lemma A.6 / eq. (16): releasing theta_T is not (eps, delta)-DP for delta < 1/2 and
    eps < eps' = eq15 / 2 + log(1/2 - delta) (negative = vacuous)."""
    d = v.open_interval("delta", delta, 0.0, 0.5)
    return 0.5 * eq15_lower_bound(setting) + math.log(0.5 - d)


def lemma_a5_conditions(setting: CyclicSGLD) -> dict[str, bool]:
    """The assumptions of Lemmas A.3-A.6: x_h^2 beta > 3 and n above the three thresholds, and the paper's
    step size eta = 2 / A^2 (the lemmas' algebra uses it)."""
    s = _check(setting)
    xb = s.x_h ** 2 * s.beta
    return {"x_h^2 beta > 3": xb > 3.0,
            "n > alpha/(x_h^2 beta)": s.n > s.alpha / xb,
            "n > D.22 threshold": s.n > s.alpha / xb * (math.exp(2.0 / xb) - 2.0) + 1.0 / (2.0 * xb),
            "n > D.21 threshold": s.n > 1.0 / (2.0 * s.alpha * xb) - 1.0 / xb,
            "eta = 2/A^2": math.isclose(s.step_size, 2.0 / s.A ** 2, rel_tol=1e-12)}


# ------------------------------------------------------------------------------------------------
# Theorem 1
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Theorem1Constants:
    """n_p, c_p (mpmath numbers) and their parts; ``log10_n_p``/``log10_c_p`` as floats."""

    n1: mpmath.mpf
    n2: mpmath.mpf
    n3: mpmath.mpf
    n_eps_prime: mpmath.mpf
    n_p: mpmath.mpf
    c_p: mpmath.mpf
    nu1: float
    v1: float

    @property
    def log10_n_p(self) -> float:
        return float(mpmath.log10(self.n_p))

    @property
    def log10_c_p(self) -> float:
        return float(mpmath.log10(self.c_p))

    def to_dict(self) -> dict:
        s = lambda x: mpmath.nstr(x, 12)  # noqa: E731
        return {"n1": s(self.n1), "n2": s(self.n2), "n3": s(self.n3), "n_eps_prime": s(self.n_eps_prime),
                "n_p": s(self.n_p), "c_p": s(self.c_p), "log10_n_p": self.log10_n_p,
                "log10_c_p": self.log10_c_p, "nu1": self.nu1, "v1": self.v1}


def theorem1_constants(epsilon, epsilon_prime, delta, *, alpha, beta, x_h, gamma1, gamma2,
                       dps: int = 50) -> Theorem1Constants:
    """The constants of the proof of Theorem 1 (x_l = x_h/2, c = n^gamma2) in mpmath at ``dps`` digits.

    n_1 as printed; n_2 = Claim D.30 with its corrected exponents and factors; n_3 = Lemma 4.2's
    corrected condition n > 1 + 10 nu x_h^2/x_l^2 (the printed nu/beta is not sufficient for beta > 1) at
    nu_1 = 2 log(1/delta)/eps + 1; the fourth term of n_p from eq. (10). Requires
    0 < gamma1 < 1/2, 1 + gamma1 < gamma2 < 3/2, delta < 1/2, x_h^2 beta > 3."""
    eps = v.positive("epsilon", epsilon)
    eps_p = v.positive("epsilon_prime", epsilon_prime)
    d = v.open_interval("delta", delta, 0.0, 0.5)
    gamma1 = v.open_interval("gamma1", gamma1, 0.0, 0.5)
    gamma2 = v.open_interval("gamma2", gamma2, 1.0 + gamma1, 1.5)
    alpha, beta, x_h = v.positive("alpha", alpha), v.positive("beta", beta), v.positive("x_h", x_h)
    if not x_h ** 2 * beta > 3:
        raise InvalidParameterError("x_h^2 beta", "> 3 (standing assumption of seed 004)", x_h ** 2 * beta)
    with mpmath.workdps(v.integer("dps", dps, minimum=15)):
        mp = mpmath.mpf
        a, b, xh, g1, g2 = mp(alpha), mp(beta), mp(x_h), mp(gamma1), mp(gamma2)
        xl = xh / 2
        xb = xh ** 2 * b
        e, ep, dl = mp(eps), mp(eps_p), mp(d)
        nu = 2 * mpmath.log(1 / dl) / e + 1
        vv1 = max(mp(6), 1 + 2 * mpmath.exp(1 / xb))
        n1 = max(1 / (2 * a * xb) - 1 / xb, a / xb, a / xb * (mpmath.exp(2 / xb) - 2) + 1 / (2 * xb))
        r2 = xh ** 2 / xl ** 2
        a_term = xh ** 2 * a + xh ** 4 * b
        corr = 1 + 1 / (1 + 10 * r2 * nu) ** (g2 - g1)
        t4 = 16 * nu * b / e * xb * a_term / (mp("0.9") * (xl ** 2 * b) ** 2) * corr
        t5 = 4 * nu / e * a_term ** 2 / (mp("0.9") * xl ** 6 * b) * corr ** 2
        n2 = max(1 + r2 * 8 / e, 1 + nu * r2 * (1 + 8 * (nu - 1) / e),
                 (16 * nu * b * xh ** 4 / (mp("0.9") * e * xl ** 2)) ** (1 / (1 - 2 * g1)),
                 t4 ** (1 / (2 - g1 - g2)), t5 ** (1 / (3 - 2 * g2)))
        n3 = max(1 + 10 * r2 * nu, 1 + nu * r2)
        n4 = ((ep - mpmath.log(mp("0.5") - dl)) * mpmath.exp(2 / xb) * (32 * xb / 3) ** 2 * (2 * vv1 / a)) ** (1 / (2 * (g2 - 1)))
        n_p = max(n1, n2, n3, n4)
        c_p = n_p ** g2
        return Theorem1Constants(n1=n1, n2=n2, n3=n3, n_eps_prime=n4, n_p=n_p, c_p=c_p, nu1=float(nu), v1=float(vv1))
