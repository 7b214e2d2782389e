"""Seed 000's mechanism, accounted: posterior-sample events built from kernels and public domains.

The accountant (:mod:`privgp.accounting`) never sees a kernel. This module computes the kernel facts
the lemmas need — kappa = inf k over the public domain (Prop. 3), unit diagonal, non-negativity,
the family name for Lemma B.7 — and builds :class:`~privgp.accounting.PosteriorSampleEvent` s, then
offers the user-facing calls of seed 000 in terms of kernels:

* :func:`posterior_sample_event` / :func:`posterior_sample_batch` (one setting / arrays of settings);
* :func:`epsilon_posterior_sampling` (vectorised certified epsilon, a 10^5-setting grid in one call),
  :func:`delta_posterior_sampling`;
* :func:`certify_posterior_sample` (a :class:`~privgp.accounting.PrivacyCertificate` with the kernel,
  lengthscale and domain as public settings) and :func:`check_certificate` (re-derives the kernel
  facts from those public settings and recomputes the guarantee);
* :func:`calibrate_r`, :func:`calibrate_eta`, :func:`calibrate_L`: thin uses of
  :func:`privgp.accounting.calibrate`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..accounting import accountant
from ..accounting.accountant import Guarantee
from ..accounting.calibrate import CalibrationResult, calibrate
from ..accounting.certificate import PrivacyCertificate, certify
from ..accounting.events import EventBatch
from ..accounting.posterior_sampling import PosteriorSampleEvent
from ..accounting.rdp import alpha_max_of_tau
from ..accounting.sensitivity import SensitivityBounds, sensitivity_bounds
from ..errors import InfeasibleTargetError, InvalidParameterError, NumericalError
from ..formatting import format_upper
from ..models.domain import Box
from ..models.kernels import KERNELS, Kernel, make_kernel

MECHANISM = ("release of L independent exact posterior sample paths f_D ~ GP(mu_D, sigma^2 k_D) "
             "(plus independent prior noise g ~ GP(0, eta^2 k) when eta > 0) [seed 000, eq. (1), (5)]")

_UNIT_KERNELS = {name: cls(1.0) for name, cls in KERNELS.items()}  # profiles of the named families
_UNIT_INTERVAL = Box.unit(1)


def kernel_facts(kernel: str | Kernel, lengthscale: ArrayLike | None,
                 domain: Box | None) -> tuple[str, np.ndarray, bool, bool, int]:
    """(family name, kappa array, unit_diagonal, nonnegative, dim) for a kernel name or instance.

    kappa = inf over the public domain of k(x, x') (Prop. 3). A name ("exponential", "matern32",
    "matern52", "squared_exponential") takes ``lengthscale`` (scalar or array; None means 1.0);
    "constant" and "diagonal" take none. A Kernel instance carries its own lengthscale: then
    ``lengthscale`` must be None or equal to it (a disagreeing value is an error, never a silent
    override).
    """
    domain = _UNIT_INTERVAL if domain is None else domain
    if not isinstance(domain, Box):
        raise InvalidParameterError("domain", "a privgp.models.domain.Box (or None for [0, 1])", domain)
    if isinstance(kernel, Kernel):
        own = getattr(kernel, "lengthscale", None)
        if lengthscale is not None:
            ell = np.asarray(lengthscale, dtype=float)
            if own is None or ell.size == 0 or v.any_true(ell != own):
                raise InvalidParameterError(
                    "lengthscale", f"None or equal to the kernel instance's own ({own}); pass the kernel "
                    "by name to vary the lengthscale", lengthscale)
        name = kernel.name if kernel.name in _UNIT_KERNELS or kernel.name in ("constant", "diagonal") else "other"
        return (name, np.asarray(float(kernel.kappa(domain))), bool(kernel.unit_diagonal), bool(kernel.nonnegative),
                domain.dim)
    name = str(kernel)
    if name in ("constant", "diagonal"):
        k = make_kernel(name)
        return name, np.asarray(float(k.kappa(domain))), bool(k.unit_diagonal), True, domain.dim
    if name not in _UNIT_KERNELS:
        make_kernel(name, 1.0)  # raises the standard error for an unknown name
    ell = np.asarray(1.0 if lengthscale is None else lengthscale, dtype=float)
    lo, hi = v.SCALE_RANGE   # as a kernel instance's lengthscale: diameter / ell stays finite (red team 26)
    if ell.size == 0 or not v.all_true((ell >= lo) & (ell <= hi)):
        raise InvalidParameterError("lengthscale", f"between {lo:g} and {hi:g} (finite and > 0, its square and "
                                    "inverse square finite and > 0 in float64)", lengthscale)
    return name, _UNIT_KERNELS[name].kappa_at(domain.diameter / ell), True, True, domain.dim


def _event_kwargs(kernel: str | Kernel, lengthscale: ArrayLike | None, domain: Box | None, M_Y: ArrayLike,
                  sensitivity: str, rkhs_norm: ArrayLike | None, constants: str) -> dict[str, Any]:
    name, kappa, unit_diag, nonneg, dim = kernel_facts(kernel, lengthscale, domain)
    return dict(kappa=kappa, dim=dim, kernel=name, unit_diagonal=unit_diag, nonnegative=nonneg, M_Y=M_Y,
                sensitivity=sensitivity, rkhs_norm=rkhs_norm, constants=constants)


def posterior_sample_event(n: int, r: float, sigma: float, *, kernel: str | Kernel = "exponential",
                           lengthscale: float | None = None, domain: Box | None = None, eta: float = 0.0,
                           L: int = 1, M_Y: float = 1.0, sensitivity: str = "generic",
                           rkhs_norm: float | None = None, constants: str = "proven") -> PosteriorSampleEvent:
    """The privacy event of releasing L posterior paths of a GP with this kernel on this public domain."""
    kw = _event_kwargs(kernel, lengthscale, domain, M_Y, sensitivity, rkhs_norm, constants)
    kw["kappa"] = float(np.asarray(kw["kappa"]).reshape(-1)[0]) if np.size(kw["kappa"]) == 1 else kw["kappa"]
    return PosteriorSampleEvent(n=n, r=r, sigma=sigma, eta=eta, L=L, **kw)


def posterior_sample_batch(n: ArrayLike, r: ArrayLike, sigma: ArrayLike, *, kernel: str | Kernel = "exponential",
                           lengthscale: ArrayLike | None = None, domain: Box | None = None, eta: ArrayLike = 0.0,
                           L: ArrayLike = 1, M_Y: ArrayLike = 1.0, sensitivity: str = "generic",
                           rkhs_norm: ArrayLike | None = None, constants: str = "proven") -> EventBatch:
    """Arrays of settings (n, r, sigma, eta, L, lengthscale, M_Y broadcast) as one EventBatch."""
    kw = _event_kwargs(kernel, lengthscale, domain, M_Y, sensitivity, rkhs_norm, constants)
    return PosteriorSampleEvent.batch(n, r, sigma, eta=eta, L=L, **kw)


def bounds_for(n: ArrayLike, r: ArrayLike, *, kernel: str | Kernel = "exponential",
               lengthscale: ArrayLike | None = None, domain: Box | None = None, M_Y: ArrayLike = 1.0,
               sensitivity: str = "generic", rkhs_norm: ArrayLike | None = None,
               constants: str = "proven") -> SensitivityBounds:
    """V_n and Delta_n bounds (App. B) for a kernel, a public domain and a sensitivity lemma."""
    name, kappa, unit_diag, nonneg, dim = kernel_facts(kernel, lengthscale, domain)
    return sensitivity_bounds(n, r, kernel=name, kappa=kappa, dim=dim, unit_diagonal=unit_diag,
                              nonnegative=nonneg, sensitivity=sensitivity, M_Y=M_Y, rkhs_norm=rkhs_norm,
                              constants=constants)


@dataclass(frozen=True)
class EpsilonResult:
    """Arrays (broadcast shape of the inputs) plus the lemmas and rules used."""

    epsilon: np.ndarray
    delta: np.ndarray
    alpha: np.ndarray
    rdp: np.ndarray          # L-fold RDP at alpha (what is converted)
    V: np.ndarray
    Delta: np.ndarray
    kappa: np.ndarray
    tau: np.ndarray
    alpha_max: np.ndarray
    conversion: str
    constants: str
    lemma_V: str
    lemma_Delta: str
    covered: bool
    notes: tuple[str, ...] = field(default_factory=tuple)

    def item(self) -> dict:
        """The scalar result as a plain dict (inputs must have been scalars)."""
        out: dict[str, Any] = {}
        for k in ("epsilon", "delta", "alpha", "rdp", "V", "Delta", "kappa", "tau", "alpha_max"):
            a = np.asarray(getattr(self, k))
            if a.size != 1:
                raise InvalidParameterError("result", "a single setting for item()", f"shape {a.shape}")
            out[k] = float(a.reshape(()))
        out.update(conversion=self.conversion, constants=self.constants, lemma_V=self.lemma_V,
                   lemma_Delta=self.lemma_Delta, covered=self.covered, notes=list(self.notes))
        return out


def epsilon_posterior_sampling(n: ArrayLike, r: ArrayLike, sigma: ArrayLike, delta: ArrayLike, *,
                               kernel: str | Kernel = "exponential", lengthscale: ArrayLike | None = None,
                               domain: Box | None = None, eta: ArrayLike = 0.0, L: ArrayLike = 1,
                               M_Y: ArrayLike = 1.0, sensitivity: str = "generic",
                               rkhs_norm: ArrayLike | None = None, constants: str = "proven",
                               conversion: str = "improved", alpha: ArrayLike | None = None) -> EpsilonResult:
    """Certified epsilon of releasing L posterior paths (Thm 3.1 / Prop. 2, App. B, eq. (3)), vectorised:
    n, r, sigma (inf allowed), eta, L, lengthscale, delta and alpha broadcast against each other, so a
    hyperparameter grid is one accountant call. Outside the admissible orders the result is +inf."""
    batch = posterior_sample_batch(n, r, sigma, kernel=kernel, lengthscale=lengthscale, domain=domain, eta=eta,
                                   L=L, M_Y=M_Y, sensitivity=sensitivity, rkhs_norm=rkhs_norm, constants=constants)
    g = accountant.epsilon(batch, delta, conversion=conversion, alpha=alpha)
    shape = np.shape(g.epsilon)
    ex = batch.extra
    b = lambda a: v.read_only_broadcast(np.asarray(a, dtype=float), shape)  # noqa: E731
    tau = b(batch.params["tau"])
    amax = alpha_max_of_tau(tau)
    return EpsilonResult(epsilon=b(g.epsilon), delta=b(g.delta), alpha=b(g.alpha), rdp=b(g.rdp), V=b(ex["V"]),
                         Delta=b(ex["Delta"]), kappa=b(ex["kappa"]), tau=tau, alpha_max=amax, conversion=conversion,
                         constants=constants, lemma_V=ex["lemma_V"], lemma_Delta=ex["lemma_Delta"],
                         covered=ex["covered"], notes=tuple(ex["notes"]))


def delta_posterior_sampling(n: int, r: float, sigma: float, epsilon: ArrayLike, *, conversion: str = "improved",
                             **kwargs: Any) -> Guarantee:
    """Smallest delta (over alpha) at which the release is (epsilon, delta)-DP; scalar inputs."""
    return accountant.delta(posterior_sample_event(n, r, sigma, **kwargs), epsilon, conversion=conversion)


def _public(kernel: str | Kernel, lengthscale: float | None, domain: Box | None) -> dict:
    domain = _UNIT_INTERVAL if domain is None else domain
    if isinstance(kernel, Kernel):
        name, ell = kernel.name, getattr(kernel, "lengthscale", None)
    else:
        name = str(kernel)
        ell = None if name in ("constant", "diagonal") else (1.0 if lengthscale is None else
                                                             v.positive("lengthscale", lengthscale))
    return {"kernel": name, "lengthscale": None if ell is None else float(ell), "domain": domain.to_dict()}


def certify_posterior_sample(n: int, r: float, sigma: float, delta: float | None = None, *,
                             kernel: str | Kernel, lengthscale: float | None, domain: Box | None, eta: float = 0.0,
                             L: int = 1, M_Y: float = 1.0, sensitivity: str = "generic",
                             rkhs_norm: float | None = None, constants: str = "proven", conversion: str = "improved",
                             alpha: float | None = None, epsilon: float | None = None) -> PrivacyCertificate:
    """Certify the release of L posterior sample paths (seed 000, Thm 3.1 / Prop. 2, App. B).

    Gives epsilon for ``delta`` (minimised over the admissible orders, or at the given ``alpha``); with
    ``epsilon=E`` instead of delta, the smallest delta for epsilon E. ``domain`` is the public input box
    (None: [0, 1]). The kernel, lengthscale and domain are recorded as public settings."""
    event = posterior_sample_event(n, r, sigma, kernel=kernel, lengthscale=lengthscale, domain=domain, eta=eta,
                                   L=L, M_Y=M_Y, sensitivity=sensitivity, rkhs_norm=rkhs_norm, constants=constants)
    public = _public(kernel, lengthscale, domain)
    box = Box(public["domain"]["lower"], public["domain"]["upper"])
    return certify(event, delta, epsilon=epsilon, conversion=conversion, alpha=alpha, mechanism=MECHANISM,
                   public=public, extra_assumptions=(f"the public domain is {box.exact_text()}",))


def check_certificate(cert: PrivacyCertificate) -> PrivacyCertificate:
    """Verify a posterior-sample certificate: the kernel facts recorded in its event must be those of
    its public kernel, lengthscale and domain, and the guarantee must recompute to the same numbers.
    Returns the recomputed certificate; raises NumericalError on any disagreement."""
    ev = cert.event
    if not isinstance(ev, PosteriorSampleEvent):
        raise InvalidParameterError("certificate", "a posterior-sample certificate", type(ev).__name__)
    pub = cert.public
    try:
        box = Box(pub["domain"]["lower"], pub["domain"]["upper"])
        name, kappa, unit_diag, nonneg, dim = kernel_facts(pub["kernel"], pub.get("lengthscale"), box)
    except (KeyError, TypeError) as exc:
        raise InvalidParameterError("certificate public settings", "kernel, lengthscale and domain", str(exc)) from None
    facts = (name, float(kappa), unit_diag, nonneg, dim)
    if facts != (ev.kernel, ev.kappa, ev.unit_diagonal, ev.nonnegative, ev.dim):
        raise NumericalError(f"certificate: kernel facts {facts} of the public settings differ from those in the "
                             f"event {(ev.kernel, ev.kappa, ev.unit_diagonal, ev.nonnegative, ev.dim)}")
    again = cert.recompute()
    if (again.epsilon, again.delta) != (cert.epsilon, cert.delta):
        raise NumericalError(f"certificate: recomputed ({again.epsilon}, {again.delta}) differs from the recorded "
                             f"({cert.epsilon}, {cert.delta})")
    return again


# -- calibration: thin uses of the one calibrator -----------------------------------------------------------

def _maker(n, r, sigma, eta, L, opts):
    """make_event / make_batch for one free parameter (the one given as None)."""
    free = [k for k, val in (("r", r), ("eta", eta), ("L", L)) if val is None][0]

    def setting(val):
        return dict(r=val if free == "r" else r, eta=val if free == "eta" else eta, L=val if free == "L" else L)

    return (lambda val: posterior_sample_event(n, sigma=sigma, **setting(val), **opts),
            lambda vals: posterior_sample_batch(n, sigma=sigma, **setting(vals), **opts))


def _opts(kernel: str | Kernel, lengthscale: float | None, domain: Box | None, M_Y: float, sensitivity: str,
          rkhs_norm: float | None, constants: str) -> dict[str, Any]:
    return dict(kernel=kernel, lengthscale=lengthscale, domain=domain, M_Y=M_Y, sensitivity=sensitivity,
                rkhs_norm=rkhs_norm, constants=constants)


def calibrate_r(target_epsilon: float, delta: float, *, n: int, sigma: float, eta: float = 0.0, L: int = 1,
                kernel: str | Kernel = "exponential", lengthscale: float | None = None, domain: Box | None = None,
                M_Y: float = 1.0, sensitivity: str = "generic", rkhs_norm: float | None = None,
                constants: str = "proven", conversion: str = "improved",
                r_bounds: tuple[float, float] = (1e-3, 1e4)) -> CalibrationResult:
    """Smallest effective ridge r in ``r_bounds`` with certified epsilon <= target at delta (sigma, eta, L
    fixed; sigma = inf allowed). InfeasibleTargetError when even the largest r misses the target."""
    n = v.integer("n", n, minimum=1)
    sigma = v.positive("sigma", sigma, allow_inf=True)
    eta = v.nonnegative("eta", eta)
    L = v.integer("L", L, minimum=1)
    try:
        r_lo, r_hi = (float(b) for b in r_bounds)
    except (TypeError, ValueError):
        raise InvalidParameterError("r_bounds", "a pair (r_min, r_max)", r_bounds) from None
    if not (0 < r_lo < r_hi < np.inf):
        raise InvalidParameterError("r_bounds", "0 < r_min < r_max < inf", r_bounds)
    opts = _opts(kernel, lengthscale, domain, M_Y, sensitivity, rkhs_norm, constants)
    make_event, make_batch = _maker(n, None, sigma, eta, L, opts)

    def hint(grid, eps):
        msg = f" (n = {n}, sigma = {sigma:g}, eta = {eta:g}, L = {L})"
        if np.isfinite(sigma):
            cov_only = float(accountant.epsilon(posterior_sample_event(n, r_hi, np.inf, eta=eta, L=L, **opts),
                                                delta, conversion=conversion).epsilon)
            if cov_only > target_epsilon:
                return msg + (f"; the covariance term alone (sigma = inf) already gives epsilon {format_upper(cov_only, 4)} at "
                              f"r = {r_hi:g}, so no sigma helps: allow larger r, fewer draws L or a looser target")
            return msg + "; a larger sigma, a larger r_max or GP noise eta > 0 may reach it"
        return msg + " (sigma = inf: this is the covariance term alone; allow larger r or fewer draws L)"

    return calibrate(make_event, "r", (r_lo, r_hi), target_epsilon, delta, direction="smallest",
                     make_batch=make_batch, conversion=conversion, infeasible_hint=hint)


def calibrate_eta(target_epsilon: float, delta: float, *, n: int, r: float, sigma: float, L: int = 1,
                  kernel: str | Kernel = "exponential", lengthscale: float | None = None, domain: Box | None = None,
                  M_Y: float = 1.0, sensitivity: str = "generic", rkhs_norm: float | None = None,
                  constants: str = "proven", conversion: str = "improved", eta_max: float = 1e4) -> CalibrationResult:
    """Smallest GP-noise level eta in [0, eta_max] (release f_D + g, g ~ GP(0, eta^2 k), Prop. 2) with
    certified epsilon <= target at delta; 0 when no noise is needed."""
    n = v.integer("n", n, minimum=1)
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma, allow_inf=True)
    L = v.integer("L", L, minimum=1)
    eta_max = v.positive("eta_max", eta_max)
    opts = _opts(kernel, lengthscale, domain, M_Y, sensitivity, rkhs_norm, constants)
    make_event, make_batch = _maker(n, r, sigma, None, L, opts)

    def hint(grid, eps):
        msg = (f" (n = {n}, r = {r:g}, sigma = {sigma:g}, L = {L}): epsilon is {format_upper(eps[0], 4, nan='nan')} at eta = 0 "
               f"and {format_upper(eps[-1], 4, nan='nan')} at eta = {eta_max:g}")
        if not np.isfinite(sigma):
            return msg + " (sigma = inf: eta has no effect on the covariance-only bound; increase r instead)"
        return msg + "; allow a larger eta_max or increase r"

    return calibrate(make_event, "eta", (0.0, eta_max), target_epsilon, delta, direction="smallest",
                     make_batch=make_batch, conversion=conversion, infeasible_hint=hint)


def calibrate_L(target_epsilon: float, delta: float, *, n: int, r: float, sigma: float, eta: float = 0.0,
                kernel: str | Kernel = "exponential", lengthscale: float | None = None, domain: Box | None = None,
                M_Y: float = 1.0, sensitivity: str = "generic", rkhs_norm: float | None = None,
                constants: str = "proven", conversion: str = "improved", L_max: int = 10**6) -> CalibrationResult:
    """Largest number L <= L_max of independently released paths with certified epsilon <= target at
    delta (capped at L_max). InfeasibleTargetError when even L = 1 misses it."""
    n = v.integer("n", n, minimum=1)
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma, allow_inf=True)
    eta = v.nonnegative("eta", eta)
    L_max = v.integer("L_max", L_max, minimum=1)
    opts = _opts(kernel, lengthscale, domain, M_Y, sensitivity, rkhs_norm, constants)
    make_event, make_batch = _maker(n, r, sigma, eta, None, opts)
    if L_max == 1:
        ev = make_event(1)
        g = accountant.epsilon(ev, delta, conversion=conversion)
        if not float(g.epsilon) <= target_epsilon:
            raise InfeasibleTargetError(f"even one released path (L = 1) gives epsilon {format_upper(float(g.epsilon), 4)} > "
                                        f"{target_epsilon:g} at delta = {delta:g}")
        return CalibrationResult("L", 1, float(target_epsilon), float(delta), ev, g, True)

    def hint(grid, eps):
        return (f" (n = {n}, r = {r:g}, sigma = {sigma:g}, eta = {eta:g}): even one released path is too many; "
                "increase r, sigma or eta, or loosen the target")

    return calibrate(make_event, "L", (1, L_max), target_epsilon, delta, direction="largest", integer=True,
                     make_batch=make_batch, conversion=conversion, infeasible_hint=hint)


__all__ = ["MECHANISM", "EpsilonResult", "bounds_for", "calibrate_L", "calibrate_eta", "calibrate_r",
           "certify_posterior_sample", "check_certificate", "delta_posterior_sampling", "epsilon_posterior_sampling",
           "kernel_facts", "posterior_sample_batch", "posterior_sample_event"]
