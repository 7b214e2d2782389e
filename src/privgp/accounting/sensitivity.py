"""Bounds on V_n(r) and Delta_n(r) (seed 000, Def. 3.1, Prop. 3, Lemmas B.1, B.4, B.5, B.7, B.8).

All functions broadcast over numpy arrays. Each Delta_n bound is proved only under its lemma's
assumptions; :func:`sensitivity_bounds` checks them and raises AssumptionError otherwise.

Constants. ``constants="proven"`` (default) uses the lemmas as stated. ``constants="published"``
divides the B.1 and B.7 bounds by sqrt(2), as the paper's tables and published scripts did
(docs/notes/seed000_published_scripts.md, sec. 2.2, D1/D2). That value is NOT covered by the lemmas; it exists only to
reproduce published numbers, and every result computed with it says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from ..errors import AssumptionError, InvalidParameterError, NumericalError
from ..validation import all_true, any_true

PUBLISHED_FACTOR = 1.0 / math.sqrt(2.0)
PUBLISHED_WARNING = ("constants='published': Delta_n divided by sqrt(2) as in the paper's tables and "
                     "published scripts; this value is NOT covered by Lemmas B.1/B.7 and is not a "
                     "certified guarantee")

SENSITIVITIES = ("generic", "exp1d", "rkhs", "constant", "diagonal")
CONSTANTS = ("proven", "published")
#: the sensitivity lemmas a release offers: "auto" is resolved by :func:`choose_lemma`
LEMMA_CHOICES = ("auto", "generic", "exp1d")


def choose_lemma(sensitivity: str, kernel: str, dim: int) -> str:
    """The one "auto" rule: Lemma B.7 ("exp1d") for the exponential kernel on an interval (dim = 1),
    Lemma B.1 ("generic") otherwise (seed 000, App. B); "generic"/"exp1d" are returned as given."""
    if sensitivity not in LEMMA_CHOICES:
        raise InvalidParameterError("sensitivity", f"one of {LEMMA_CHOICES}", sensitivity)
    if sensitivity == "auto":
        return "exp1d" if (kernel == "exponential" and dim == 1) else "generic"
    return sensitivity


def v_generic(n: ArrayLike, r: ArrayLike) -> np.ndarray:
    """V_n(r) <= 1 for any kernel with k(x, x) <= 1 (Def. 3.1)."""
    return np.ones(np.broadcast_shapes(np.shape(n), np.shape(r)))


def v_bar(n: ArrayLike, r: ArrayLike, kappa: ArrayLike) -> np.ndarray:
    """V̄_n(r) = 1 - kappa^2 (n-1) / (n-1+r^2)  (Prop. 3; needs kappa >= 0 and sup k(x,x) = 1;
    exact when k(x, x) = 1 everywhere)."""
    n, r, kappa = (np.asarray(a, dtype=float) for a in (n, r, kappa))
    if any_true(kappa < 0) or any_true(kappa > 1):
        raise InvalidParameterError("kappa", "in [0, 1] (Prop. 3 needs a nonnegative normalised kernel)", kappa)
    with np.errstate(over="ignore", invalid="ignore"):
        direct = 1.0 - kappa**2 * (n - 1.0) / (n - 1.0 + r * r)
        # the same without the cancellation of 1 - (...), which gave V = 0 (hence Delta = 0, tau = 0 and
        # epsilon = 0) for kappa = 1 and r = 1e-9: ((1 - kappa)(1 + kappa)(n - 1) + r^2) / (n - 1 + r^2)
        stable = ((1.0 - kappa) * (1.0 + kappa) * (n - 1.0) + r * r) / (n - 1.0 + r * r)
    # the direct form where it loses at most a bit (V >= 1/2: the numbers certificates were computed with)
    return np.where(direct >= 0.5, direct, stable)


def _phi_parts(V: ArrayLike, r: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Phi_n(r) evaluated directly, sqrt(Phi_n(r)) evaluated without overflow, where the direct value is
    usable): the one home of the formula of Lemma B.1,

        Phi_n(r) = sup_{0<=u<=V} u/(u+r^2)^2 = 1/(4r^2) if V >= r^2 else V/(V+r^2)^2.

    The direct value overflows (V+r^2)^2 to inf beyond r ~ 1.2e77 (Phi = 0, hence Delta_n = 0 and a
    certified epsilon of 0) and Phi underflows soon after; sqrt(Phi) = 1/(2r) or (sqrt(V)/r) / (r + V/r)
    stays representable for every finite r > 0. The direct value is used where it is a normal float, so
    the numbers of existing certificates are unchanged."""
    V, r = np.asarray(V, dtype=float), np.asarray(r, dtype=float)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        r2 = r * r
        direct = np.where(V >= r2, 0.25 / r2, V / (V + r2) ** 2)
        root = np.where(V >= r2, 0.5 / r, (np.sqrt(V) / r) / (r + V / r))
    usable = np.isfinite(direct) & (direct >= np.finfo(float).tiny)
    return direct, root, usable


def phi_n(V: ArrayLike, r: ArrayLike) -> np.ndarray:
    """Phi_n(r) = sup_{0<=u<=V} u/(u+r^2)^2 = 1/(4r^2) if V >= r^2 else V/(V+r^2)^2 (Lemma B.1)."""
    direct, root, usable = _phi_parts(V, r)
    with np.errstate(over="ignore", under="ignore"):
        return np.where(usable, direct, root * root)


def sqrt_phi_n(V: ArrayLike, r: ArrayLike) -> np.ndarray:
    """sqrt(Phi_n(r)) (Lemma B.1), the factor of the Delta_n bounds of Lemmas B.1 and B.7; representable
    (never 0 from overflow) for every finite r > 0."""
    direct, root, usable = _phi_parts(V, r)
    return np.where(usable, np.sqrt(np.where(usable, direct, 0.0)), root)


def delta_generic(n: ArrayLike, r: ArrayLike, V: ArrayLike, M_Y: ArrayLike = 1.0) -> np.ndarray:
    """How far one record can move the posterior mean, for any kernel with k(x,x) <= 1 and responses
    bounded by M_Y: Delta_n(r) <= 2 M_Y (1 + sqrt(n-1)/r) sqrt(Phi_n(r)) (seed 000, Lemma B.1)."""
    n, r, V, M_Y = (np.asarray(a, dtype=float) for a in (n, r, V, M_Y))
    return 2.0 * M_Y * (1.0 + np.sqrt(n - 1.0) / r) * sqrt_phi_n(V, r)


def delta_exp1d(r: ArrayLike, V: ArrayLike, M_Y: ArrayLike = 1.0) -> np.ndarray:
    """How far one record can move the posterior mean, for the 1-D exponential kernel on an interval:
    Delta_n(r) <= 4 M_Y sqrt(Phi_n(r)) (seed 000, Lemma B.7)."""
    r, V, M_Y = (np.asarray(a, dtype=float) for a in (r, V, M_Y))
    return 4.0 * M_Y * sqrt_phi_n(V, r)


def delta_constant(n: ArrayLike, r: ArrayLike, M_Y: ArrayLike = 1.0) -> np.ndarray:
    """How far one record can move the posterior mean, for the constant kernel k = 1:
    Delta_n(r) <= 2 M_Y sqrt(r^2+n-1) / (r (r^2+n)) (seed 000, Lemma B.4)."""
    n, r, M_Y = (np.asarray(a, dtype=float) for a in (n, r, M_Y))
    return 2.0 * M_Y * np.sqrt(r * r + n - 1.0) / (r * (r * r + n))


def delta_diagonal(r: ArrayLike, M_Y: ArrayLike = 1.0) -> np.ndarray:
    """How far one record can move the posterior mean, for a purely diagonal kernel:
    Delta_n(r) <= sqrt(2) M_Y / r for r <= 1 and 2 sqrt(2) M_Y / (1 + r^2) for r >= 1 (seed 000, Lemma B.5)."""
    r, M_Y = np.asarray(r, dtype=float), np.asarray(M_Y, dtype=float)
    return np.where(r <= 1.0, math.sqrt(2.0) * M_Y / r, 2.0 * math.sqrt(2.0) * M_Y / (1.0 + r * r))


def delta_rkhs(r: ArrayLike, V: ArrayLike, rkhs_norm: ArrayLike) -> np.ndarray:
    """How far one record can move the posterior mean when responses are noiseless values y_i = f*(x_i)
    of a function of RKHS norm ||f*||_H: Delta_n(r) <= 2 ||f*||_H V_n / (r^2 + V_n) (seed 000, Lemma B.8)."""
    r, V, B = (np.asarray(a, dtype=float) for a in (r, V, rkhs_norm))
    return 2.0 * B * V / (r * r + V)


@dataclass(frozen=True)
class SensitivityBounds:
    """V_n and Delta_n upper bounds with the results they come from."""

    V: np.ndarray
    Delta: np.ndarray
    kappa: np.ndarray
    lemma_V: str
    lemma_Delta: str
    constants: str
    covered: bool
    notes: tuple[str, ...] = field(default_factory=tuple)


def sensitivity_bounds(n: ArrayLike, r: ArrayLike, *, kernel: str, kappa: ArrayLike, dim: int = 1,
                       unit_diagonal: bool = True, nonnegative: bool = True, sensitivity: str = "generic",
                       M_Y: ArrayLike = 1.0, rkhs_norm: ArrayLike | None = None,
                       constants: str = "proven") -> SensitivityBounds:
    """V_n and Delta_n for a kernel family and a sensitivity lemma, checking the lemma's assumptions.

    kernel: family name ("exponential", "matern32", "matern52", "squared_exponential", "constant",
    "diagonal"); kappa: inf of k over the public domain (array, broadcast with n and r).
    """
    if sensitivity not in SENSITIVITIES:
        raise InvalidParameterError("sensitivity", f"one of {SENSITIVITIES}", sensitivity)
    if constants not in CONSTANTS:
        raise InvalidParameterError("constants", f"one of {CONSTANTS}", constants)
    n = np.asarray(n, dtype=float)
    r = np.asarray(r, dtype=float)
    kappa = np.asarray(kappa, dtype=float)
    if any_true(~np.isfinite(n)) or any_true(n < 1) or any_true(n != np.floor(n)):
        raise InvalidParameterError("n", "a finite integer >= 1", n)
    if any_true(~(r > 0)) or any_true(np.isinf(r)):
        raise InvalidParameterError("r", "finite and > 0", r)
    if sensitivity != "rkhs" and (any_true(~(np.asarray(M_Y, float) > 0)) or any_true(np.isinf(M_Y))):
        raise InvalidParameterError("M_Y", "finite and > 0", M_Y)
    if any_true(~np.isfinite(kappa)):
        raise InvalidParameterError("kappa", "finite", kappa)
    return checked_sensitivity_bounds(n, r, kernel=kernel, kappa=kappa, dim=dim, unit_diagonal=unit_diagonal,
                                      nonnegative=nonnegative, sensitivity=sensitivity, M_Y=M_Y,
                                      rkhs_norm=rkhs_norm, constants=constants)


def checked_sensitivity_bounds(n: np.ndarray, r: np.ndarray, *, kernel: str, kappa: np.ndarray, dim: int,
                               unit_diagonal: bool, nonnegative: bool, sensitivity: str, M_Y: ArrayLike,
                               rkhs_norm: ArrayLike | None, constants: str) -> SensitivityBounds:
    """:func:`sensitivity_bounds` for inputs the caller has already validated (n, r, M_Y, kappa, the
    names); each lemma still checks its own assumptions."""
    notes: list[str] = []
    if nonnegative and all_true(kappa >= 0):
        V = v_bar(n, r, kappa)
        lemma_V = "Prop. 3 (V̄_n, exact)" if unit_diagonal else "Prop. 3 (V̄_n, upper bound)"
    else:
        V = v_generic(n, r)
        lemma_V = "V_n <= 1 (sup k(x,x) <= 1)"

    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):  # checked below
        if sensitivity == "generic":
            Delta, lemma = delta_generic(n, r, V, M_Y), "Lemma B.1 (generic, |y| <= M_Y)"
        elif sensitivity == "exp1d":
            if kernel != "exponential" or dim != 1:
                raise AssumptionError(f"Lemma B.7 (sensitivity='exp1d') holds only for the exponential kernel "
                                      f"on a 1-D interval; got kernel={kernel!r} in dimension {dim}")
            Delta, lemma = delta_exp1d(r, V, M_Y), "Lemma B.7 (1-D exponential kernel, |y| <= M_Y)"
        elif sensitivity == "constant":
            if kernel != "constant":
                raise AssumptionError(f"Lemma B.4 (sensitivity='constant') holds only for the constant kernel; got {kernel!r}")
            Delta, lemma = delta_constant(n, r, M_Y), "Lemma B.4 (constant kernel, |y| <= M_Y)"
        elif sensitivity == "diagonal":
            if kernel != "diagonal":
                raise AssumptionError(f"Lemma B.5 (sensitivity='diagonal') holds only for the diagonal kernel; got {kernel!r}")
            Delta, lemma = delta_diagonal(r, M_Y), "Lemma B.5 (diagonal kernel, |y| <= M_Y)"
        else:  # rkhs
            if rkhs_norm is None or any_true(~(np.asarray(rkhs_norm, float) > 0)) or any_true(np.isinf(rkhs_norm)):
                raise InvalidParameterError("rkhs_norm", "finite and > 0 for sensitivity='rkhs' (Lemma B.8)", rkhs_norm)
            Delta, lemma = delta_rkhs(r, V, rkhs_norm), "Lemma B.8 (responses y = f*(x), ||f*||_H <= B)"
            notes.append("Lemma B.8 assumes noiseless responses from one fixed RKHS function of norm <= B")

    Delta = np.asarray(Delta, float)
    if not all_true(Delta > 0):  # every lemma's bound is > 0: 0 (or NaN) is an under- or overflow, never a guarantee
        raise NumericalError(f"Delta_n ({lemma}) is not representable for these settings (it evaluates to "
                             f"{float(np.min(Delta))!r}, e.g. r^2 out of the float range or M_Y / r^2 below it): "
                             "no guarantee is computed")
    covered = True
    if constants == "published":
        if sensitivity not in ("generic", "exp1d"):
            raise InvalidParameterError("constants", "'proven' for sensitivity "
                                        f"{sensitivity!r} (published constants exist only for B.1 and B.7)",
                                        constants)
        Delta = Delta * PUBLISHED_FACTOR
        lemma += " / sqrt(2) [published constant, NOT covered by the lemma]"
        covered = False
        notes.append(PUBLISHED_WARNING)
    return SensitivityBounds(V=np.asarray(V, float), Delta=np.asarray(Delta, float), kappa=kappa,
                             lemma_V=lemma_V, lemma_Delta=lemma, constants=constants, covered=covered,
                             notes=tuple(notes))
