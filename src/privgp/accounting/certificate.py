"""Privacy certificates: an immutable, JSON-serialisable record of one certified release.

A :class:`PrivacyCertificate` records every input of the accountant (n, kernel, lengthscale, public
domain, r, sigma, eta, L, delta or epsilon, M_Y, the sensitivity lemma, constants, conversion rule),
the results it used (V_n and Delta_n with the lemmas they come from, kappa, tau~, the order alpha,
the single-draw and L-fold RDP values) and the guarantee (epsilon, delta), together with the
assumptions under which the guarantee holds, in words. ``covered`` is False when the number is not
covered by the paper's lemmas (``constants="published"``), and ``warnings`` says why.

Build one with :func:`certify`; serialise with :meth:`PrivacyCertificate.to_json` and read it back
with :meth:`PrivacyCertificate.from_dict` / :meth:`PrivacyCertificate.from_json`. Infinite values
are written as the string "inf" (JSON has no infinity).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .. import __version__
from .. import validation as v
from ..domain import Box
from ..errors import InvalidParameterError
from ..kernels import Kernel
from .conversion import check_conversion, log_delta_from_rdp
from .curves import RdpCurve
from .posterior_sampling import epsilon_posterior_sampling, posterior_sampling_curve
from .rdp import rdp_posterior_sample

MECHANISM = ("release of L independent exact posterior sample paths f_D ~ GP(mu_D, sigma^2 k_D) "
             "(plus independent prior noise g ~ GP(0, eta^2 k) when eta > 0) [seed 000, eq. (1), (5)]")


def _assumptions(sensitivity: str, kernel: str, domain: Box, M_Y: float, rkhs_norm, sigma: float,
                 eta: float, L: int) -> tuple[str, ...]:
    out = [
        "neighbouring datasets differ by replacing one record; both have n records (Def. 3.1)",
        f"every input, private or queried, lies in the public domain {domain.describe()}, fixed before "
        "seeing the data",
        "the kernel is normalised (sup_x k(x, x) = 1) and kappa = inf k over the domain is as recorded (Prop. 3)",
        "the kernel, lengthscale, r, sigma, eta, L and the domain are chosen independently of the private data",
        "each released path is an exact draw from the GP posterior (approximate samplers are not covered)",
    ]
    if sensitivity == "rkhs":
        out.append(f"responses are noiseless values y = f*(x) of one fixed function f* with RKHS norm "
                   f"||f*||_H <= {rkhs_norm:g} (Lemma B.8)")
    else:
        out.append(f"every response satisfies |y| <= M_Y = {M_Y:g} (clip responses before release)")
    if sensitivity == "exp1d":
        out.append("the kernel is exp(-|x - x'| / lengthscale) on a 1-D interval (Lemmas B.6, B.7)")
    if sensitivity == "constant":
        out.append("the kernel is the constant kernel k = 1 (Lemma B.4)")
    if sensitivity == "diagonal":
        out.append("the kernel is purely diagonal (Lemma B.5)")
    if L > 1:
        out.append(f"the {L} paths are drawn independently; RDP adds over them (eq. (3)), also for adaptive releases")
    if eta > 0:
        out.append("the prior noise g is drawn independently of the posterior draw (Prop. 2)")
    if math.isinf(sigma):
        out.append("sigma = inf: the covariance-only limit, i.e. release of the centred path f_D - mu_D "
                   "(sec. 4); the posterior mean is not released")
    return tuple(out)


def _num(x: Any) -> Any:
    """JSON-ready float: inf/-inf/nan as strings."""
    if x is None:
        return None
    x = float(x)
    if math.isfinite(x):
        return x
    return "inf" if x > 0 else ("-inf" if x < 0 else "nan")


def _from_num(x: Any) -> Any:
    if x is None:
        return None
    return float(x)  # float("inf") parses the string form


@dataclass(frozen=True)
class PrivacyCertificate:
    """Everything needed to state, check and reproduce one (epsilon, delta) guarantee."""

    # inputs
    n: int
    kernel: str
    lengthscale: float | None
    domain_lower: tuple[float, ...]
    domain_upper: tuple[float, ...]
    r: float
    sigma: float
    eta: float
    L: int
    M_Y: float
    sensitivity: str
    rkhs_norm: float | None
    constants: str
    conversion: str
    # what was solved for ("epsilon" given delta, or "delta" given epsilon) and how alpha was chosen
    solved_for: str
    alpha_optimised: bool
    # results
    lemma_V: str
    lemma_Delta: str
    V_n: float
    Delta_n: float
    kappa: float
    tau: float
    alpha_max: float
    alpha: float
    rdp_single: float
    rdp: float
    epsilon: float
    delta: float
    covered: bool
    warnings: tuple[str, ...] = field(default_factory=tuple)
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    mechanism: str = MECHANISM
    privgp_version: str = __version__

    @property
    def domain(self) -> Box:
        return Box(self.domain_lower, self.domain_upper)

    def to_dict(self) -> dict:
        """A JSON-ready dict (infinite numbers as the string "inf")."""
        out: dict[str, Any] = {}
        for f in fields(self):
            val = getattr(self, f.name)
            if f.name in ("domain_lower", "domain_upper"):
                continue
            if isinstance(val, tuple):
                val = list(val)
            elif isinstance(val, float):
                val = _num(val)
            out[f.name] = val
        out["domain"] = {"lower": list(self.domain_lower), "upper": list(self.domain_upper)}
        return out

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict) -> "PrivacyCertificate":
        """Inverse of :meth:`to_dict`."""
        d = dict(d)
        try:
            dom = d.pop("domain")
            kw: dict[str, Any] = {"domain_lower": tuple(float(a) for a in dom["lower"]),
                                  "domain_upper": tuple(float(b) for b in dom["upper"])}
            for f in fields(cls):
                if f.name in kw:
                    continue
                if f.name not in d:
                    if f.name in ("mechanism", "privgp_version", "warnings", "assumptions"):
                        continue
                    raise KeyError(f.name)
                val = d[f.name]
                if f.name in ("n", "L"):
                    val = int(val)
                elif f.name in ("warnings", "assumptions"):
                    val = tuple(str(s) for s in val)
                elif f.name in ("covered", "alpha_optimised"):
                    val = bool(val)
                elif f.name in ("kernel", "sensitivity", "constants", "conversion", "solved_for", "lemma_V",
                                "lemma_Delta", "mechanism", "privgp_version"):
                    val = str(val)
                else:
                    val = _from_num(val)
                kw[f.name] = val
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidParameterError("certificate", "a dict written by PrivacyCertificate.to_dict",
                                        f"missing or malformed field ({exc})") from None
        return cls(**kw)

    @classmethod
    def from_json(cls, text: str) -> "PrivacyCertificate":
        return cls.from_dict(json.loads(text))

    def rdp_curve(self) -> RdpCurve:
        """The RDP curve alpha -> L-fold bound of this release, for composition with others."""
        curve, _ = posterior_sampling_curve(self.n, self.r, self.sigma, kernel=self.kernel,
                                            lengthscale=self.lengthscale, domain=self.domain, eta=self.eta,
                                            L=self.L, M_Y=self.M_Y, sensitivity=self.sensitivity,
                                            rkhs_norm=self.rkhs_norm, constants=self.constants)
        return curve

    def recompute(self) -> "PrivacyCertificate":
        """A fresh certificate from the recorded inputs (same alpha when it was given, not optimised)."""
        return certify(self.n, self.r, self.sigma, self.delta if self.solved_for == "epsilon" else None,
                       kernel=self.kernel, lengthscale=self.lengthscale, domain=self.domain, eta=self.eta,
                       L=self.L, M_Y=self.M_Y, sensitivity=self.sensitivity, rkhs_norm=self.rkhs_norm,
                       constants=self.constants, conversion=self.conversion,
                       alpha=None if self.alpha_optimised else self.alpha,
                       epsilon=self.epsilon if self.solved_for == "delta" else None)

    def summary(self) -> str:
        """A readable multi-line summary (for the CLI)."""
        ell = "" if self.lengthscale is None else f", lengthscale {self.lengthscale:g}"
        lines = [
            f"({self.epsilon:.6g}, {self.delta:.6g})-DP for {self.L} posterior sample path(s)"
            + ("" if self.covered else "   [NOT COVERED by the lemmas: published constants]"),
            f"  data:        n = {self.n}, domain {self.domain.describe()}, "
            + (f"||f*||_H <= {self.rkhs_norm:g}" if self.sensitivity == "rkhs" else f"|y| <= {self.M_Y:g}"),
            f"  model:       {self.kernel} kernel{ell}, r = {self.r:g}, sigma = {self.sigma:g}, eta = {self.eta:g}",
            f"  V_n:         {self.V_n:.6g}  ({self.lemma_V}; kappa = {self.kappa:.6g})",
            f"  Delta_n:     {self.Delta_n:.6g}  ({self.lemma_Delta})",
            f"  order:       alpha = {self.alpha:.6g} ({'optimised' if self.alpha_optimised else 'given'}; "
            f"admissible alpha < {self.alpha_max:.6g})",
            f"  RDP:         {self.rdp_single:.6g} per path, {self.rdp:.6g} for L = {self.L}",
            f"  conversion:  {self.conversion} ({'Canonne-Kamath-Steinke 2020' if self.conversion == 'improved' else 'Mironov 2017, Prop. 3'}),"
            f" constants: {self.constants}",
        ]
        for w in self.warnings:
            lines.append(f"  WARNING: {w}")
        lines.append("  assumptions:")
        lines.extend(f"    - {a}" for a in self.assumptions)
        return "\n".join(lines)


def _kernel_record(kernel, lengthscale) -> tuple[str, float | None]:
    if isinstance(kernel, Kernel):
        own = getattr(kernel, "lengthscale", None)
        return kernel.name, (None if own is None else float(own))
    name = str(kernel)
    if name in ("constant", "diagonal"):
        return name, None
    return name, (1.0 if lengthscale is None else v.positive("lengthscale", lengthscale))


def certify(n, r, sigma, delta=None, *, kernel, lengthscale, domain, eta=0.0, L=1, M_Y=1.0,
            sensitivity="generic", rkhs_norm=None, constants="proven", conversion="improved", alpha=None,
            epsilon=None) -> PrivacyCertificate:
    """Certify the release of L posterior sample paths (seed 000, Thm 3.1 / Prop. 2, App. B).

    Gives epsilon for ``delta`` (minimised over the admissible orders, or at the given ``alpha``);
    with ``epsilon=E`` instead of delta (delta=None), gives the smallest delta for epsilon E.
    ``domain`` is the public input box (None: the unit interval [0, 1]). Scalar inputs only.
    """
    n = v.integer("n", n, minimum=1)
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma, allow_inf=True)
    eta = v.nonnegative("eta", eta)
    L = v.integer("L", L, minimum=1)
    check_conversion(conversion)
    domain = Box.unit(1) if domain is None else domain
    if not isinstance(domain, Box):
        raise InvalidParameterError("domain", "a privgp.domain.Box (or None for [0, 1])", domain)
    if (delta is None) == (epsilon is None):
        raise InvalidParameterError("delta/epsilon", "exactly one of delta and epsilon", (delta, epsilon))
    if alpha is not None:
        alpha = v.greater_than("alpha", alpha, 1.0)
    kname, ell = _kernel_record(kernel, lengthscale)
    M_Y = float(M_Y)
    rk = None if rkhs_norm is None else float(rkhs_norm)
    common = dict(kernel=kernel, lengthscale=lengthscale, domain=domain, eta=eta, L=L, M_Y=M_Y,
                  sensitivity=sensitivity, rkhs_norm=rkhs_norm, constants=constants, conversion=conversion)

    if delta is not None:
        delta = v.probability("delta", delta)
        res = epsilon_posterior_sampling(n, r, sigma, delta, alpha=alpha, **common).item()
        a, eps, dlt, rdp = res["alpha"], res["epsilon"], delta, res["rdp"]
        solved = "epsilon"
    else:
        epsilon = v.nonnegative("epsilon", epsilon)
        # bounds and alpha_max from the same engine (delta is a placeholder here, only epsilon is solved)
        res = epsilon_posterior_sampling(n, r, sigma, 0.5, alpha=alpha, **common).item()
        if alpha is None:
            g = posterior_sampling_curve(n, r, sigma, **{k: common[k] for k in common if k != "conversion"})[0] \
                .delta(epsilon, conversion)
            a, dlt, rdp = g.alpha, g.delta, g.rdp
        else:
            a = alpha
            rdp = float(L * rdp_posterior_sample(a, res["V"], res["Delta"], r, sigma, eta))
            dlt = float(np.exp(log_delta_from_rdp(rdp, a, epsilon, conversion)))
        eps = epsilon
        solved = "delta"
    rdp_single = float(rdp_posterior_sample(a, res["V"], res["Delta"], r, sigma, eta))

    warnings = list(res["notes"])
    if not math.isfinite(eps):
        warnings.append("epsilon is +inf: no finite guarantee at this setting" +
                        (" (alpha is outside the admissible range 1 < alpha < alpha_max)"
                         if alpha is not None and alpha >= res["alpha_max"] else ""))
    if solved == "delta" and dlt >= 1.0:
        warnings.append("delta = 1: no guarantee at this epsilon")
    if not res["covered"] and not any("NOT covered" in w for w in warnings):
        warnings.append("not covered by the lemmas")
    return PrivacyCertificate(
        n=n, kernel=kname, lengthscale=ell, domain_lower=domain.lower, domain_upper=domain.upper, r=r,
        sigma=sigma, eta=eta, L=L, M_Y=M_Y, sensitivity=sensitivity, rkhs_norm=rk, constants=constants,
        conversion=conversion, solved_for=solved, alpha_optimised=alpha is None, lemma_V=res["lemma_V"],
        lemma_Delta=res["lemma_Delta"], V_n=res["V"], Delta_n=res["Delta"], kappa=res["kappa"],
        tau=res["tau"], alpha_max=res["alpha_max"], alpha=float(a), rdp_single=rdp_single, rdp=float(rdp),
        epsilon=float(eps), delta=float(dlt), covered=bool(res["covered"]), warnings=tuple(warnings),
        assumptions=_assumptions(sensitivity, kname, domain, M_Y, rk, sigma, eta, L))
