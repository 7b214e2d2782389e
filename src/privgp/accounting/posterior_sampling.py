"""The certified (epsilon, delta) of releasing L posterior sample paths (seed 000, sec. 2-3, App. A-B).

:func:`epsilon_posterior_sampling` is the one vectorised entry point: n, r, sigma, eta, L,
lengthscale and delta broadcast against each other, so that a hyperparameter grid is one call.
Per setting: V_n and Delta_n from App. B (:mod:`.sensitivity`), the single-draw RDP bound of
Thm 3.1 / Prop. 2 (:mod:`.rdp`), L-fold composition (eq. 3), conversion to (epsilon, delta)
(:mod:`.conversion`), minimised over the admissible orders (:mod:`.optimize`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import validation as v
from ..domain import Box
from ..errors import InvalidParameterError, NumericalError
from ..kernels import KERNELS, Kernel, make_kernel
from .conversion import check_conversion, epsilon_raw
from .curves import RdpCurve
from .optimize import minimize_over_alpha
from .rdp import alpha_max as _alpha_max
from .rdp import bound_coefficients, rdp_posterior_sample, rdp_raw
from .sensitivity import SensitivityBounds, sensitivity_bounds


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
        out = {}
        for k in ("epsilon", "delta", "alpha", "rdp", "V", "Delta", "kappa", "tau", "alpha_max"):
            a = np.asarray(getattr(self, k))
            if a.size != 1:
                raise InvalidParameterError("result", "a single setting for item()", f"shape {a.shape}")
            out[k] = float(a.reshape(()))
        out.update(conversion=self.conversion, constants=self.constants, lemma_V=self.lemma_V,
                   lemma_Delta=self.lemma_Delta, covered=self.covered, notes=list(self.notes))
        return out


_UNIT_KERNELS = {name: cls(1.0) for name, cls in KERNELS.items()}  # profiles of the named families
_UNIT_INTERVAL = Box.unit(1)


def kernel_facts(kernel, lengthscale, domain: Box):
    """(family name, kappa array, unit_diagonal, nonnegative) for a kernel name or instance.

    kappa = inf over the public domain of k(x, x') (Prop. 3). A name ("exponential", "matern32",
    "matern52", "squared_exponential") takes ``lengthscale`` (scalar or array; None means 1.0);
    "constant" and "diagonal" take none. A Kernel instance carries its own lengthscale: then
    ``lengthscale`` must be None or equal to it (a disagreeing value is an error, never a silent
    override).
    """
    if isinstance(kernel, Kernel):
        own = getattr(kernel, "lengthscale", None)
        if lengthscale is not None:
            ell = np.asarray(lengthscale, dtype=float)
            if own is None or ell.size == 0 or np.any(ell != own):
                raise InvalidParameterError(
                    "lengthscale", f"None or equal to the kernel instance's own ({own}); pass the kernel "
                    "by name to vary the lengthscale", lengthscale)
        return kernel.name, np.asarray(float(kernel.kappa(domain))), bool(kernel.unit_diagonal), \
            bool(kernel.nonnegative)
    name = str(kernel)
    if name in ("constant", "diagonal"):
        k = make_kernel(name)
        return name, np.asarray(float(k.kappa(domain))), bool(k.unit_diagonal), True
    if name not in _UNIT_KERNELS:
        make_kernel(name, 1.0)  # raises the standard error for an unknown name
    ell = np.asarray(1.0 if lengthscale is None else lengthscale, dtype=float)
    if ell.size == 0 or not np.all((ell > 0) & (ell < np.inf)):
        raise InvalidParameterError("lengthscale", "finite and > 0", lengthscale)
    return name, _UNIT_KERNELS[name].profile(domain.diameter / ell), True, True


def _check_common(sigma, eta, L, delta=None):
    sigma = np.asarray(sigma, dtype=float)
    if np.any(~(sigma > 0)):
        raise InvalidParameterError("sigma", "> 0 (inf allowed: covariance-only limit)", sigma)
    eta = np.asarray(eta, dtype=float)
    if np.any(~(eta >= 0)) or np.any(np.isinf(eta)):
        raise InvalidParameterError("eta", "finite and >= 0", eta)
    try:
        L_arr = np.asarray(L, dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameterError("L", "an integer >= 1", L) from None
    if np.any(~np.isfinite(L_arr)) or np.any(L_arr < 1) or np.any(L_arr != np.floor(L_arr)):
        raise InvalidParameterError("L", "a finite integer >= 1", L)
    if delta is not None:
        d = np.asarray(delta, dtype=float)
        if np.any(~((d > 0) & (d < 1))):
            raise InvalidParameterError("delta", "in the open interval (0, 1)", delta)
    return sigma, eta, L_arr


def bounds_for(n, r, *, kernel="exponential", lengthscale=None, domain: Box | None = None,
               M_Y=1.0, sensitivity="generic", rkhs_norm=None, constants="proven") -> SensitivityBounds:
    """V_n and Delta_n bounds for a kernel, a public domain and a sensitivity lemma."""
    domain = _UNIT_INTERVAL if domain is None else domain
    name, kappa, unit_diag, nonneg = kernel_facts(kernel, lengthscale, domain)
    return sensitivity_bounds(n, r, kernel=name, kappa=kappa, dim=domain.dim, unit_diagonal=unit_diag,
                              nonnegative=nonneg, sensitivity=sensitivity, M_Y=M_Y, rkhs_norm=rkhs_norm,
                              constants=constants)


def epsilon_posterior_sampling(n, r, sigma, delta, *, kernel="exponential", lengthscale=None,
                               domain: Box | None = None, eta=0.0, L=1, M_Y=1.0,
                               sensitivity: str = "generic", rkhs_norm=None, constants: str = "proven",
                               conversion: str = "improved", alpha=None) -> EpsilonResult:
    """Certified epsilon of releasing L independent posterior paths f_D (+ g, g ~ GP(0, eta^2 k)).

    RDP per draw: Thm 3.1 (eta = 0) / Prop. 2 with V_n, Delta_n from App. B; L-fold composition
    (eq. 3); (epsilon, delta) conversion minimised over 1 < alpha < 1 + 1/tau~ (or evaluated at
    the given ``alpha``, which broadcasts like the other inputs; outside the admissible range the
    result is +inf). n, r, sigma (inf allowed), eta, L, lengthscale, delta and alpha broadcast.
    Assumptions: |y| <= M_Y (or y = f*(x) with ||f*||_H <= rkhs_norm for 'rkhs'), sup k(x,x) = 1,
    replace-one neighbours of size n, public domain, hyperparameters independent of the data.
    """
    check_conversion(conversion)
    sigma, eta, L = _check_common(sigma, eta, L, delta)
    if alpha is not None:
        alpha = np.asarray(alpha, dtype=float)
        if np.any(~(alpha > 1.0)):
            raise InvalidParameterError("alpha", "> 1 (Rényi order)", alpha)
    b = bounds_for(n, r, kernel=kernel, lengthscale=lengthscale, domain=domain, M_Y=M_Y,
                   sensitivity=sensitivity, rkhs_norm=rkhs_norm, constants=constants)
    r = np.asarray(r, dtype=float)
    delta = np.asarray(delta, dtype=float)
    shapes = [b.V.shape, b.Delta.shape, b.kappa.shape, r.shape, sigma.shape, eta.shape, L.shape, delta.shape]
    if alpha is not None:
        shapes.append(alpha.shape)
    shape = np.broadcast_shapes(*shapes)
    V, Delta, kappa, r_, s_, e_, L_, d_ = (np.broadcast_to(a, shape).reshape(-1) for a in
                                           (b.V, b.Delta, b.kappa, r, sigma, eta, L, delta))
    coef = bound_coefficients(V, Delta, r_, s_, e_)  # (tau~, V, r^2, eta^2/sigma^2, m), checked for NaN
    tau = coef[0]
    with np.errstate(divide="ignore"):
        amax = 1.0 + 1.0 / tau  # Prop. 2: 1 < alpha < 1 + 1/tau~

    with np.errstate(all="ignore"):
        if alpha is None:
            coef2 = tuple(c[:, None] for c in coef)
            Lc = L_[:, None]
            lid = -np.log(d_)[:, None]

            def objective(al):  # orders from the search are always > 1; called under errstate
                return epsilon_raw(Lc * rdp_raw(al, *coef2), al, lid, conversion)

            alpha_, _ = minimize_over_alpha(objective, amax)
        else:
            alpha_ = np.broadcast_to(alpha, shape).reshape(-1)  # checked > 1 above
        # recomputed at the reported alpha (the same formulas as rdp_posterior_sample / epsilon_from_rdp)
        rdp = L_ * rdp_raw(alpha_, *coef)
        eps = epsilon_raw(rdp, alpha_, -np.log(d_), conversion)
    if np.isnan(rdp).any() or np.isnan(eps).any():
        raise NumericalError("epsilon_posterior_sampling: NaN epsilon from valid inputs")
    rs = lambda a: np.asarray(a, dtype=float).reshape(shape)  # noqa: E731
    return EpsilonResult(epsilon=rs(eps), delta=rs(d_), alpha=rs(alpha_), rdp=rs(rdp), V=rs(V), Delta=rs(Delta),
                         kappa=rs(kappa), tau=rs(tau), alpha_max=rs(amax),
                         conversion=conversion, constants=constants, lemma_V=b.lemma_V,
                         lemma_Delta=b.lemma_Delta, covered=b.covered, notes=b.notes)


def delta_posterior_sampling(n, r, sigma, epsilon, **kwargs):
    """Smallest delta (over alpha) at which the release is (epsilon, delta)-DP; scalar inputs."""
    conversion = kwargs.pop("conversion", "improved")
    curve, _ = posterior_sampling_curve(n, r, sigma, **kwargs)
    return curve.delta(epsilon, conversion)


def posterior_sampling_curve(n, r, sigma, *, kernel="exponential", lengthscale=None, domain: Box | None = None,
                             eta=0.0, L=1, M_Y=1.0, sensitivity="generic", rkhs_norm=None,
                             constants="proven") -> tuple[RdpCurve, SensitivityBounds]:
    """The RDP curve of L draws for one (scalar) setting, for composition with other releases."""
    n = v.integer("n", n, minimum=1)
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma, allow_inf=True)
    eta = v.nonnegative("eta", eta)
    L = v.integer("L", L, minimum=1)
    b = bounds_for(n, r, kernel=kernel, lengthscale=lengthscale, domain=domain, M_Y=M_Y,
                   sensitivity=sensitivity, rkhs_norm=rkhs_norm, constants=constants)
    V, Delta = float(b.V), float(b.Delta)
    amax = float(_alpha_max(V, r, sigma, eta))
    one = RdpCurve(lambda al: rdp_posterior_sample(al, V, Delta, r, sigma, eta), amax,
                   f"posterior sample (n={n}, r={r:g}, sigma={sigma:g}, eta={eta:g})")
    return (one.times(L) if L > 1 else one), b
