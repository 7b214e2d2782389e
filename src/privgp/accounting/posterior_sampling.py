"""The privacy event of releasing L exact GP posterior sample paths (seed 000, sec. 2-3, App. A-B).

:class:`PosteriorSampleEvent` holds what Thm 3.1 / Prop. 2 need and nothing else: n, r, sigma,
eta, L, the response bound M_Y (or the RKHS norm for Lemma B.8), and the kernel facts the lemmas
use — kappa = inf k over the public domain (Prop. 3), the input dimension, the kernel family (for
Lemma B.7's "exponential kernel on an interval"), whether k(x, x) = 1 everywhere and whether
k >= 0 — plus the sensitivity lemma and the constants. Mechanisms compute the kernel facts from
their kernel and public domain (:func:`privgp.mechanisms.posterior_sample.posterior_sample_event`);
this module never sees a kernel.

Per draw (Prop. 2; Thm 3.1 when eta = 0), with V >= V_n(r), Delta >= Delta_n(r) from App. B
(:mod:`.sensitivity`), tau~ = sigma^2 V / (sigma^2 r^2 + eta^2 (V + r^2)):

    eps_alpha <= 2 psi_alpha(tau~) + alpha/2 (V + r^2) Delta^2 / (sigma^2 (r^2 - (alpha-1) V) + eta^2 (V + r^2))

for 1 < alpha < 1 + 1/tau~ (+inf beyond), and L draws compose to L times that (eq. (3)).
:meth:`PosteriorSampleEvent.batch` builds the struct-of-arrays form for grids of settings.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..errors import InvalidParameterError
from .events import EventBatch, Neighbouring, PrivacyEvent
from .rdp import alpha_max_of_tau, bound_coefficients, rdp_curve, rdp_raw
from .sensitivity import CONSTANTS, PUBLISHED_WARNING, SENSITIVITIES, SensitivityBounds, checked_sensitivity_bounds

#: the kernel families whose facts the lemmas know by name ("other": any normalised kernel)
KERNEL_FAMILIES = ("exponential", "matern32", "matern52", "squared_exponential", "constant", "diagonal", "other")


#: the largest n and L: the bounds count in float64, where the integers above 2^53 are not all exact (n = L =
#: 2^53 + 1 were recorded, and L composed, as 2^53: L rounded down, the unsafe direction; red team 25)
MAX_COUNT = 2**53


def _check_counts(n: ArrayLike, L: ArrayLike) -> None:
    """Refuse n or L above :data:`MAX_COUNT`, compared before any conversion to float (which would round 2^53 + 1
    down to 2^53); values that are not numbers are left to the other checks."""
    for name, x in (("n", n), ("L", L)):
        try:
            big = v.any_true(np.asarray(x) > MAX_COUNT)
        except (TypeError, ValueError):
            continue
        if big:
            raise InvalidParameterError(name, f"at most 2^53 = {MAX_COUNT} (the bounds count in float64, where larger "
                                        "integers are not all exact)", x)


def _scalar_ok(n: Any, r: Any, sigma: Any, eta: Any, L: Any, M_Y: Any, kappa: Any) -> bool:
    """Fast path for scalar fields (what a ledger parses a thousand times): all plainly valid."""
    if any(isinstance(x, (bool, np.bool_, str, bytes)) for x in (n, r, sigma, eta, L, M_Y, kappa)):
        return False   # float() takes them; the full checks refuse them by name
    try:
        if not (n <= MAX_COUNT and L <= MAX_COUNT):   # exact comparisons, before float() rounds 2^53 + 1 to 2^53
            return False
        n, r, sigma, eta, L, M_Y, kappa = (float(x) for x in (n, r, sigma, eta, L, M_Y, kappa))
    except (TypeError, ValueError):
        return False
    return (math.isfinite(n) and n >= 1 and n == math.floor(n) and 0 < r < math.inf and sigma > 0
            and 0 <= eta < math.inf and math.isfinite(L) and L >= 1 and L == math.floor(L) and 0 < M_Y < math.inf
            and math.isfinite(kappa) and kappa <= 1)


_Arr = np.ndarray


def _array(name: str, value: ArrayLike, ok: Callable[[_Arr], Any], requirement: str) -> _Arr:
    """``value`` as a float array whose every entry satisfies ``ok`` (NaN never does), else an error naming it."""
    if isinstance(value, str) and value in ("inf", "-inf"):   # JSON's infinity (json_number): sigma = inf
        value = float(value)
    try:
        a = v.real_array(name, value)   # booleans, other strings and complex numbers refused (n=True was n = 1)
    except InvalidParameterError:
        raise InvalidParameterError(name, requirement, value) from None
    if not v.all_true(ok(a)):
        raise InvalidParameterError(name, requirement, value)
    return a


def _check_numbers(n: ArrayLike, r: ArrayLike, sigma: ArrayLike, eta: ArrayLike, L: ArrayLike, M_Y: ArrayLike,
                   kappa: ArrayLike, dim: int, sensitivity: str, constants: str, rkhs_norm: ArrayLike | None,
                   kernel: str) -> tuple[_Arr, _Arr, _Arr, _Arr, _Arr, _Arr, _Arr, int]:
    """Validate (possibly array-valued) numeric fields; returns float arrays."""
    _check_counts(n, L)
    n = _array("n", n, lambda a: np.isfinite(a) & (a >= 1) & (a == np.floor(a)), "a finite integer >= 1")
    r = _array("r", r, lambda a: (a > 0) & np.isfinite(a), "finite and > 0")
    sigma = _array("sigma", sigma, lambda a: a > 0, "> 0 (inf allowed: covariance-only limit)")
    eta = _array("eta", eta, lambda a: (a >= 0) & np.isfinite(a), "finite and >= 0")
    L = _array("L", L, lambda a: np.isfinite(a) & (a >= 1) & (a == np.floor(a)), "a finite integer >= 1")
    M_Y = _array("M_Y", M_Y, lambda a: (a > 0) & np.isfinite(a), "finite and > 0")
    kappa = _array("kappa", kappa, lambda a: np.isfinite(a) & (a <= 1),
                   "finite and <= 1 (inf of a normalised kernel over the domain)")
    dim = v.integer("dim", dim, minimum=1)
    if sensitivity not in SENSITIVITIES:
        raise InvalidParameterError("sensitivity", f"one of {SENSITIVITIES}", sensitivity)
    if constants not in CONSTANTS:
        raise InvalidParameterError("constants", f"one of {CONSTANTS}", constants)
    if kernel not in KERNEL_FAMILIES:
        raise InvalidParameterError("kernel", f"one of {KERNEL_FAMILIES}", kernel)
    if rkhs_norm is not None:
        _array("rkhs_norm", rkhs_norm, lambda a: (a > 0) & np.isfinite(a), "finite and > 0")
    return n, r, sigma, eta, L, M_Y, kappa, dim


def _bounds(n: np.ndarray, r: np.ndarray, kappa: np.ndarray, *, kernel: str, dim: int, unit_diagonal: bool,
            nonnegative: bool, sensitivity: str, M_Y: ArrayLike, rkhs_norm: ArrayLike | None,
            constants: str) -> SensitivityBounds:
    """V_n and Delta_n of a batch whose numbers and names :func:`_check_numbers` has validated (as the scalar event's
    are): its checks include and are at least as strict as :func:`sensitivity_bounds`'s, which are not made twice;
    each lemma still checks its own assumptions."""
    return checked_sensitivity_bounds(n, r, kernel=kernel, kappa=kappa, dim=dim, unit_diagonal=unit_diagonal,
                                      nonnegative=nonnegative, sensitivity=sensitivity, M_Y=M_Y, rkhs_norm=rkhs_norm,
                                      constants=constants)


@dataclass(frozen=True)
class PosteriorSampleEvent(PrivacyEvent):
    """The privacy event of releasing posterior sample paths (seed 000): L independent exact posterior paths
    f_D ~ GP(mu_D, sigma^2 k_D) (+ independent prior noise GP(0, eta^2 k) when eta > 0) of a GP with ridge r fitted to n records (seed 000, eqs. (1),
    (5); Thm 3.1, Prop. 2, App. B).

    Assumptions (each lemma checks its own, raising AssumptionError outside them): |y| <= M_Y (or
    noiseless y = f*(x) with ||f*||_H <= rkhs_norm for Lemma B.8); sup k(x,x) <= 1 (= 1 when
    ``unit_diagonal``); ``kappa`` = inf k over the public domain (used when ``nonnegative``);
    replace-one neighbours of size n; hyperparameters independent of the data.
    """

    n: int
    r: float
    sigma: float
    eta: float = 0.0
    L: int = 1
    M_Y: float = 1.0
    kappa: float = 0.0
    dim: int = 1
    kernel: str = "other"
    unit_diagonal: bool = True
    nonnegative: bool = True
    sensitivity: str = "generic"
    rkhs_norm: float | None = None
    constants: str = "proven"
    _bounds: SensitivityBounds = field(init=False, repr=False, compare=False)
    _coef: tuple = field(init=False, repr=False, compare=False)

    kind: ClassVar[str] = "posterior_sample"
    neighbouring: ClassVar[Neighbouring] = Neighbouring.REPLACE_ONE
    proof: ClassVar[str] = "seed 000, Thm 3.1 / Prop. 2 (single draw), eq. (3) (L draws)"

    def __post_init__(self):
        kernel = str(self.kernel)
        sens, const = str(self.sensitivity), str(self.constants)
        rk = None if self.rkhs_norm is None else float(self.rkhs_norm)
        fields_ = (self.n, self.r, self.sigma, self.eta, self.L, self.M_Y, self.kappa)
        if (all(np.ndim(x) == 0 for x in fields_) and _scalar_ok(*fields_) and isinstance(self.dim, (int, np.integer))
                and self.dim >= 1 and sens in SENSITIVITIES and const in CONSTANTS and kernel in KERNEL_FAMILIES
                and (rk is None or 0 < rk < math.inf)):
            n, r, sigma, eta, L, M_Y, kappa = (float(x) for x in fields_)
            dim = int(self.dim)
        else:
            *arrays, dim = _check_numbers(
                self.n, self.r, self.sigma, self.eta, self.L, self.M_Y, self.kappa, self.dim, sens, const, rk, kernel)
            for name, a in zip(("n", "r", "sigma", "eta", "L", "M_Y", "kappa"), arrays):
                if np.ndim(a) != 0:
                    raise InvalidParameterError(name, "a scalar (use PosteriorSampleEvent.batch for arrays)", a)
            n, r, sigma, eta, L, M_Y, kappa = (float(a) for a in arrays)
        vals: dict[str, Any] = dict(n=int(n), r=float(r), sigma=float(sigma), eta=float(eta), L=int(L), M_Y=float(M_Y),
                    kappa=float(kappa), dim=dim, kernel=kernel, unit_diagonal=bool(self.unit_diagonal),
                    nonnegative=bool(self.nonnegative), sensitivity=sens, rkhs_norm=rk, constants=const)
        for k, val in vals.items():
            object.__setattr__(self, k, val)
        b = checked_sensitivity_bounds(vals["n"], vals["r"], kernel=kernel, kappa=vals["kappa"], dim=dim,
                                       unit_diagonal=vals["unit_diagonal"], nonnegative=vals["nonnegative"],
                                       sensitivity=sens, M_Y=vals["M_Y"], rkhs_norm=rk, constants=const)
        object.__setattr__(self, "_bounds", b)
        object.__setattr__(self, "_coef", tuple(float(c) for c in
                                                bound_coefficients(b.V, b.Delta, vals["r"], vals["sigma"], vals["eta"])))

    # -- the curve ----------------------------------------------------------------------------------
    def _params(self):
        tau, V, r2, eta2_s2, m = self._coef
        return {"tau": tau, "V": V, "r2": r2, "eta2_s2": eta2_s2, "m": m, "L": float(self.L)}

    @classmethod
    def _rdp_arrays(cls, alpha, tau, V, r2, eta2_s2, m, L):
        return L * rdp_raw(alpha, tau, V, r2, eta2_s2, m)

    @classmethod
    def _alpha_max_arrays(cls, tau, V, r2, eta2_s2, m, L):
        return v.read_only_broadcast(alpha_max_of_tau(tau), v.broadcast_shape(np.shape(tau), np.shape(L)))

    @classmethod
    def _rdp_curve(cls, tau, V, r2, eta2_s2, m, L):
        """:meth:`_rdp_arrays` with the bound's per-setting pieces computed once (:func:`rdp_curve`): the same values
        at every order, to the bit."""
        curve = rdp_curve(tau, V, r2, eta2_s2, m)
        return lambda alpha: L * curve(alpha)

    def single_draw(self) -> PosteriorSampleEvent:
        """The same release with L = 1 (the per-draw bound)."""
        if self.L == 1:
            return self
        return self.with_values(L=1)

    def with_values(self, **changes: Any) -> PosteriorSampleEvent:
        """A copy with some fields changed (validated again)."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        d.update(changes)
        return PosteriorSampleEvent(**d)

    # -- what a certificate shows ------------------------------------------------------------------------
    @property
    def V(self) -> float:
        return float(self._bounds.V)

    @property
    def Delta(self) -> float:
        return float(self._bounds.Delta)

    @property
    def tau(self) -> float:
        return self._coef[0]

    @property
    def covered(self) -> bool:
        return bool(self._bounds.covered)

    def lemmas(self) -> tuple[str, ...]:
        return (self.proof, f"V_n: {self._bounds.lemma_V}", f"Delta_n: {self._bounds.lemma_Delta}")

    def notes(self) -> tuple[str, ...]:
        return tuple(self._bounds.notes)

    def details(self) -> dict[str, Any]:
        return {"V_n": self.V, "Delta_n": self.Delta, "kappa": self.kappa, "tau": self.tau,
                "alpha_max": self.alpha_max, "lemma_V": self._bounds.lemma_V,
                "lemma_Delta": self._bounds.lemma_Delta}

    def assumptions(self) -> tuple[str, ...]:
        out = [
            # n itself is in the event (describe()); keeping it out of this sentence lets a composition
            # of rounds with growing n (Thompson sampling) state the relation once
            "neighbouring datasets differ by replacing one record and both have the event's n records (Def. 3.1)",
            "every input, private or queried, lies in the public domain, fixed before seeing the data",
            "the kernel is normalised (sup_x k(x, x) = 1) and kappa = inf k over the public domain is as "
            f"recorded ({self.kappa:.6g}; Prop. 3)",
            "the kernel, lengthscale, r, sigma, eta, L and the domain are chosen independently of the private data",
            "each released path is an exact draw from the GP posterior (approximate samplers are not covered)",
        ]
        if self.sensitivity == "rkhs":
            out.append(f"responses are noiseless values y = f*(x) of one fixed function f* with RKHS norm "
                       f"||f*||_H <= {self.rkhs_norm:g} (Lemma B.8)")
        else:
            out.append(f"every response satisfies |y| <= M_Y = {self.M_Y:g} (clip responses before release)")
        if self.sensitivity == "exp1d":
            out.append("the kernel is exp(-|x - x'| / lengthscale) on a 1-D interval (Lemmas B.6, B.7)")
        if self.sensitivity == "constant":
            out.append("the kernel is the constant kernel k = 1 (Lemma B.4)")
        if self.sensitivity == "diagonal":
            out.append("the kernel is purely diagonal (Lemma B.5)")
        if self.L > 1:
            out.append(f"the {self.L} paths are drawn independently; RDP adds over them (eq. (3)), also for "
                       "adaptive releases")
        if self.eta > 0:
            out.append("the prior noise g is drawn independently of the posterior draw (Prop. 2)")
        if math.isinf(self.sigma):
            out.append("sigma = inf: the covariance-only limit, i.e. release of the centred path f_D - mu_D "
                       "(sec. 4); the posterior mean is not released")
        return tuple(out)

    def describe(self) -> str:
        return (f"posterior sample (n={self.n}, r={self.r:.6g}, sigma={self.sigma:.6g}, eta={self.eta:.6g}, "
                f"L={self.L}, {self.kernel} kernel, kappa={self.kappa:.4g}, dim={self.dim}, "
                f"{self.sensitivity}, {self.constants})")

    # -- many settings at once ------------------------------------------------------------------------
    @classmethod
    def batch(cls, n: ArrayLike, r: ArrayLike, sigma: ArrayLike, *, eta: ArrayLike = 0.0, L: ArrayLike = 1,
              M_Y: ArrayLike = 1.0, kappa: ArrayLike = 0.0, dim: int = 1, kernel: str = "other",
              unit_diagonal: bool = True, nonnegative: bool = True, sensitivity: str = "generic",
              rkhs_norm: ArrayLike | None = None, constants: str = "proven") -> EventBatch:
        """Struct-of-arrays form: n, r, sigma, eta, L, M_Y, kappa (and rkhs_norm) broadcast against each
        other; the other fields are shared. One vectorised pass computes V_n, Delta_n and the curve's
        coefficients for every setting (:func:`privgp.accounting.accountant.epsilon` then optimises all
        orders in lock-step)."""
        kernel, sensitivity, constants = str(kernel), str(sensitivity), str(constants)
        n, r, sigma, eta, L, M_Y, kappa, dim = _check_numbers(n, r, sigma, eta, L, M_Y, kappa, dim, sensitivity,
                                                              constants, rkhs_norm, kernel)
        b = _bounds(n, r, kappa, kernel=kernel, dim=dim, unit_diagonal=bool(unit_diagonal),
                    nonnegative=bool(nonnegative), sensitivity=sensitivity, M_Y=M_Y, rkhs_norm=rkhs_norm,
                    constants=constants)
        shape = v.broadcast_shape(np.shape(b.V), np.shape(b.Delta), r.shape, sigma.shape, eta.shape, L.shape)
        tau, V, r2, eta2_s2, m = (v.read_only_broadcast(c, shape) for c in bound_coefficients(b.V, b.Delta, r, sigma, eta))
        params = {"tau": tau, "V": V, "r2": r2, "eta2_s2": eta2_s2, "m": m, "L": v.read_only_broadcast(L, shape)}
        fields_ = {"n": n, "r": r, "sigma": sigma, "eta": eta, "L": L, "M_Y": M_Y, "kappa": kappa,
                   "dim": np.asarray(dim), "kernel": np.asarray(kernel, dtype=object),
                   "unit_diagonal": np.asarray(bool(unit_diagonal)), "nonnegative": np.asarray(bool(nonnegative)),
                   "sensitivity": np.asarray(sensitivity, dtype=object),
                   "rkhs_norm": np.asarray(rkhs_norm if rkhs_norm is not None else None, dtype=object),
                   "constants": np.asarray(constants, dtype=object)}
        extra = {"V": v.read_only_broadcast(b.V, shape), "Delta": v.read_only_broadcast(b.Delta, shape),
                 "kappa": v.read_only_broadcast(b.kappa, shape), "lemma_V": b.lemma_V, "lemma_Delta": b.lemma_Delta,
                 "covered": b.covered, "notes": b.notes}
        return EventBatch(cls, tuple(shape), params, fields_, extra)


__all__ = ["KERNEL_FAMILIES", "PUBLISHED_WARNING", "PosteriorSampleEvent"]
