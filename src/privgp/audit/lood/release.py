"""Per-record LOOD of a planned seed-000 release, and the LOOD column of the tightness audit.

A posterior-sample release (seed 000) *is* a GP model in seed 003's sense: kernel sigma^2 k, noise
sigma^2 r^2, responses y in [-1, 1]; its prediction distribution is the posterior GP(mu_D, sigma^2 k_D)
from which the L paths are drawn. Divergences between N(mu, sigma^2 S) and N(mu', sigma^2 S') equal
those between N(mu / sigma, S) and N(mu' / sigma, S'), so the model here is (k, noise r^2, y / sigma);
sigma = inf (covariance-only release) has zero means.

Per record i of the data holder's own dataset D (:func:`audit_release_lood`):

* **LOOD** (seed 003, Def. 2.1): D_{-i} = D minus record i against D, KL and Rényi of order alpha in
  both directions, of the whole released path. With eta = 0 the law of f(x_i) is a sufficient
  statistic of the pair (docs/notes/seed003_lood.md, sec. 1.6), so the value at Q = {x_i} is the divergence of the whole
  path, and an upper bound for its restriction to the release grid; L paths multiply it by L. With
  added prior noise (eta > 0) the value at {x_i} is only a lower estimate.
  This is add/remove-one distinguishability; the seed-000 certificate is for **replace-one**
  neighbours of fixed n, so a LOOD above the certified RDP does not refute the certificate.
* **Replace-one exposure** (for the ``top`` most exposed records): the largest D_alpha(P_D || P_D~),
  both orders, found over replacements (x', y') of record i with x' on a grid over the public domain
  and y' = +-1 (the divergence is convex in y'). For eta = 0 it is exact for the whole path (the law
  of (f(x_i), f(x')) is sufficient). It is a lower estimate of the supremum the certificate bounds:
  it must stay <= the certified RDP at alpha; one above it would refute the certificate.

:func:`game_lood` adds the LOOD of record optimisation to the tightness audit of the membership game.
Both are internal audits for the data holder: per-record values are statistics of the private data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ... import validation as v
from ...accounting.divergences import renyi_divergence_gaussians, renyi_gaussian_1d, renyi_gaussians_batched, renyi_parts_exact
from ...errors import InvalidParameterError
from ...models.domain import Box
from ...models.kernels import make_kernel
from ..membership.game import sample_datasets
from .models import GPPosterior, single_query_divergence

NOTICE = ("INTERNAL AUDIT for the data holder: per-record values are statistics of the private data. "
          "Do not publish them; they are not covered by the release's privacy guarantee.")


@dataclass(frozen=True)
class ReleaseLoodAudit:
    """Per-record LOOD of one planned release (values for all L paths, i.e. L x one path)."""

    n: int
    L: int
    alpha: float
    alpha_source: str                 # "certificate" or "given"
    certified_rdp: float              # certified RDP of the L-path release at alpha (replace-one)
    epsilon_certified: float
    delta: float
    kl: np.ndarray                    # KL(P_{D-i} || P_D), (n,)
    kl_reverse: np.ndarray            # KL(P_D || P_{D-i})
    renyi: np.ndarray                 # D_alpha(P_{D-i} || P_D) (+inf where S_alpha is not positive definite)
    renyi_reverse: np.ndarray         # D_alpha(P_D || P_{D-i})
    replace_one: dict                 # record index -> largest replace-one D_alpha found (both orders)
    whole_path: bool                  # eta = 0: the values are those of the whole path
    snapped: bool
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def renyi_max(self) -> np.ndarray:
        return np.maximum(self.renyi, self.renyi_reverse)

    def ranking(self) -> np.ndarray:
        """Record indices, most exposed first (by the larger Rényi direction, then KL)."""
        return np.lexsort((-self.kl, -self.renyi_max))

    def to_dict(self, top: int = 10) -> dict:
        order = self.ranking()[:top]
        rdp = self.certified_rdp

        def over(x: float | None) -> float | None:
            """x / the certified RDP; None where undefined (no bound of 0, and inf over inf was NaN: red team 26)."""
            if x is None or not rdp > 0 or (math.isinf(rdp) and math.isinf(x)):
                return None
            return float(x / rdp)

        rows = [{"record": int(i), "kl": float(self.kl[i]), "kl_reverse": float(self.kl_reverse[i]),
                 "renyi": float(self.renyi[i]), "renyi_reverse": float(self.renyi_reverse[i]),
                 "renyi_max_over_certified": over(float(self.renyi_max[i])),
                 "replace_one_found": self.replace_one.get(int(i)),
                 "replace_one_over_certified": over(self.replace_one.get(int(i)))}
                for i in order]
        rep = list(self.replace_one.values())
        return {"notice": NOTICE, "n": self.n, "L": self.L, "alpha": self.alpha, "alpha_source": self.alpha_source,
                "certified_rdp_at_alpha": rdp, "epsilon_certified": self.epsilon_certified, "delta": self.delta,
                "whole_path": self.whole_path, "inputs_snapped": self.snapped,
                "kl_median": float(np.median(self.kl)), "kl_max": float(np.max(self.kl)),
                "renyi_max": float(np.max(self.renyi_max)),
                "renyi_max_over_certified": over(float(np.max(self.renyi_max))),
                "replace_one_max_found": max(rep) if rep else None,
                "replace_one_le_certified": all(x <= rdp * (1 + 1e-9) for x in rep),
                "most_exposed": rows, "notes": list(self.notes)}


def _model(plan, X, z):
    """(kernel, X as the release uses it, y / sigma, noise r^2, snapped) for a PosteriorSamplePlan."""
    from ...models.sampling import snap_to_lattice

    X, y = plan.check(X, z)
    snapped = plan.snap is not None
    if snapped:
        X = snap_to_lattice(X, plan.axes(), refine=plan.snap)
    scale = 0.0 if math.isinf(plan.sigma) else 1.0 / plan.sigma
    return make_kernel(plan.kernel, plan.lengthscale), X, y * scale, plan.r ** 2, snapped


#: the largest noise variance r^2 (kernel scale 1) the audit computes with (see :func:`audit_release_lood`)
MAX_NOISE = 1e12


def _prior_noise(plan, kernel, Xq) -> np.ndarray:
    """Variance of the added prior GP noise g ~ GP(0, eta^2 k) in units of sigma^2 (0 for eta = 0)."""
    if plan.eta == 0:
        return np.zeros(len(Xq))
    if math.isinf(plan.sigma):
        ratio = 1.0
    else:
        scale = plan.eta / plan.sigma
        if not scale <= 1e150:   # its square overflowed with a traceback (red team 25: --eta 1e300)
            raise InvalidParameterError("eta", "at most 1e150 times sigma (the prior noise's variance a float64 "
                                        "number)", plan.eta)
        ratio = scale * scale
    return ratio * kernel.diag(Xq)


def _candidates(domain: Box, per_axis: int) -> np.ndarray:
    axes = [np.linspace(lo, hi, per_axis) for lo, hi in zip(domain.lower, domain.upper)]
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=-1)


def _stack(a, b, c):
    """2 x 2 symmetric matrices [[a, b], [b, c]] from arrays of equal shape."""
    return np.stack([np.stack([a, b], -1), np.stack([b, c], -1)], -2)


def _replace_one(P: GPPosterior, A: np.ndarray, i: int, C: np.ndarray, alpha: float, extra: np.ndarray,
                 y_scale: float) -> float:
    """Largest D_alpha over replacements (x' in C, y' = +-1) of record i, both orders, one path.

    P_D and P_D~ are both one-point updates of P_{D-i}; at Q = (x_i, x') everything is 2 x 2."""
    noise = P.noise
    Xi = P.X[i:i + 1]
    Q = np.vstack([Xi, C])
    mu = P.mean(Q)[:, 0]
    S_ii, S_ci, S_cc = P.cov(Xi)[0, 0], P.cov(C, Xi)[:, 0], P.var(C)
    c = P.kernel(Q, P.X) @ A[:, i] / A[i, i]             # Sigma_{D-i}(Q, x_i)
    beta = 1.0 / A[i, i]
    e_over_beta = (A @ P.Y[:, 0])[i]
    # D_{-i} at (x_i, x'): Sigma_{-i} = Sigma_D + c c^T / beta, mu_{-i} = mu_D - c e / beta
    m_i, m_c = mu[0] - c[0] * e_over_beta, mu[1:] - c[1:] * e_over_beta
    s_ii, s_ci, s_cc = S_ii + c[0] ** 2 / beta, S_ci + c[0] * c[1:] / beta, S_cc + c[1:] ** 2 / beta
    m = C.shape[0]
    add_i, add_c = extra[0], extra[1:]
    S_D = _stack(np.full(m, S_ii + add_i), S_ci, S_cc + add_c)
    m_D = np.stack([np.full(m, mu[0]), mu[1:]], -1)
    bt = s_cc + noise
    S_t = _stack(np.full(m, s_ii) - s_ci ** 2 / bt + add_i, s_ci - s_ci * s_cc / bt, s_cc - s_cc ** 2 / bt + add_c)
    det = np.linalg.det(S_D), np.linalg.det(S_t)
    regular = (det[0] > 1e-10 * S_D[:, 0, 0] * S_D[:, 1, 1]) & (det[1] > 1e-10 * S_t[:, 0, 0] * S_t[:, 1, 1])
    best, laws = 0.0, None
    for y_new in (-1.0, 1.0):
        e = y_new * y_scale - m_c
        m_t = np.stack([m_i + s_ci * e / bt, m_c + s_cc * e / bt], -1)
        for a_, b_ in (((m_D, S_D), (m_t, S_t)), ((m_t, S_t), (m_D, S_D))):
            if regular.any():
                r = np.flatnonzero(regular)
                vals = renyi_gaussians_batched(alpha, a_[0][r], a_[1][r], b_[0][r], b_[1][r])
                j = r[int(np.argmax(vals))]
                if float(np.max(vals)) > best:
                    best, laws = float(np.max(vals)), (a_[0][j], a_[1][j], b_[0][j], b_[1][j])
            for j in np.flatnonzero(~regular):  # x' at (or numerically at) x_i: degenerate 2 x 2 laws
                val = renyi_divergence_gaussians(alpha, a_[0][j], a_[1][j], b_[0][j], b_[1][j])
                if val > best:
                    best, laws = val, None
    if laws is not None:
        # the largest pair's divergence exactly (float64 loses about log10(alpha) digits in S_alpha: a round-off
        # excess read as a contradicted certificate, red team 25); any pair's exact value is a found value
        best = renyi_parts_exact(alpha, *laws)[0]
    return float(best)


def replace_one_bytes(n: int, dim: int, per_axis: int) -> int:
    """Estimated peak bytes of the replace-one search over ``per_axis``^dim replacement locations for a dataset
    of ``n`` records: the candidates and their mesh, a few (m, n) cross-covariances and about eighty
    length-m arrays (the 2 x 2 laws of every candidate), plus the n x n inverse."""
    m = int(per_axis) ** int(dim)
    return 8 * (3 * m * int(dim) + 4 * m * int(n) + 80 * m + 3 * int(n) ** 2)


def check_lood_memory(n: int, dim: int, per_axis: int, memory_limit: float) -> None:
    """Refuse (InvalidParameterError naming ``candidates_per_axis``, with the estimate) a LOOD audit whose
    replace-one search is estimated to need more than ``memory_limit`` bytes."""
    v.check_memory(f"replace-one search over {per_axis}^{dim} = {float(per_axis) ** dim:.3g} locations and {n} "
                   "records", replace_one_bytes(n, dim, per_axis), memory_limit,
                   "use fewer replacement locations per axis", param="candidates_per_axis", value=per_axis)


def audit_release_lood(plan, X, z, *, alpha: float | None = None, top: int = 10,
                       candidates_per_axis: int | None = None,
                       memory_limit: float | None = None) -> ReleaseLoodAudit:
    """Per-record LOOD of the release ``plan`` (a PosteriorSamplePlan) on the private data (X, z),
    and the replace-one exposure of the ``top`` most exposed records (see the module docstring).
    ``memory_limit`` (bytes; None: unchecked): refuse, before the work, a search estimated to need more."""
    top = v.integer("top", top, minimum=0)
    cert = plan.certificate
    if alpha is None:
        alpha, source = float(cert.alpha), "certificate"
        if not (math.isfinite(alpha) and alpha > 1):
            raise InvalidParameterError("alpha", "given (> 1): the certificate has no RDP order", cert.alpha)
    else:
        alpha, source = v.greater_than("alpha", alpha, 1.0), "given"
    per_axis = candidates_per_axis or (201 if plan.domain.dim == 1 else 31)
    per_axis = v.integer("candidates_per_axis", per_axis, minimum=2)
    if memory_limit is not None:
        check_lood_memory(len(X), plan.domain.dim, per_axis, v.positive("memory_limit", memory_limit))
    kernel, Xm, y, noise, snapped = _model(plan, X, z)
    if not noise <= MAX_NOISE:   # r = 1e8 ended in a 16-line error on zero variances (red team 25)
        raise InvalidParameterError("r", f"at most {math.sqrt(MAX_NOISE):g}: each record's leave-one-out variance "
                                    "is 1/A_ii - r^2, which float64 resolves only for r^2 well below 1e16",
                                    plan.r if hasattr(plan, "r") else math.sqrt(noise))
    P = GPPosterior(kernel, Xm, y, noise)
    A = P._inverse()
    dA = np.diag(A)
    v_ = np.maximum(1.0 / dA - noise, 0.0)                 # Sigma_{D-i}(x_i)
    e = (A @ P.Y[:, 0]) / dA                               # y_i - mu_{D-i}(x_i), in sigma units
    add = _prior_noise(plan, kernel, Xm)
    var_small = v_ + add                                   # D_{-i} at x_i
    var_full = noise * v_ / (v_ + noise) + add             # D at x_i
    dmu = (-v_ * e / (v_ + noise))[:, None]                # mu_{D-i} - mu_D
    L = plan.L
    kl = L * single_query_divergence("kl", var_small, var_full, dmu)
    klr = L * single_query_divergence("kl_reverse", var_small, var_full, dmu)
    ren = L * single_query_divergence("renyi", var_small, var_full, dmu, alpha)
    renr = L * single_query_divergence("renyi_reverse", var_small, var_full, dmu, alpha)
    certified = float(np.asarray(plan.event.rdp(alpha)).reshape(()))
    order = np.lexsort((-kl, -np.maximum(ren, renr)))[:top]
    C = _candidates(plan.domain, per_axis)
    extra = _prior_noise(plan, kernel, np.vstack([Xm[:1], C]))
    y_scale = 0.0 if math.isinf(plan.sigma) else 1.0 / plan.sigma
    replace = {}
    for i in order:
        extra[0] = _prior_noise(plan, kernel, Xm[i:i + 1])[0]
        replace[int(i)] = L * _replace_one(P, A, int(i), C, alpha, extra, y_scale)
    notes = ["LOOD is add/remove-one distinguishability (seed 003); the certificate bounds replace-one "
             "neighbours of fixed n, so a LOOD above the certified RDP does not contradict it.",
             f"replace-one exposure: largest divergence found over replacements x' on a {per_axis}-per-axis grid "
             "of the public domain and y' = +-1, both orders; a lower estimate of what the certificate bounds."]
    if plan.eta > 0:
        notes.append("eta > 0: the record's location is not a sufficient query; the values are lower estimates "
                     "(queries at the record and, for replace-one, at the replacement only).")
    if snapped:
        notes.append("inputs snapped to the grid lattice as the release does (a public per-record map).")
    return ReleaseLoodAudit(n=P.n, L=L, alpha=alpha, alpha_source=source, certified_rdp=certified,
                            epsilon_certified=float(cert.epsilon), delta=float(cert.delta), kl=kl, kl_reverse=klr,
                            renyi=ren, renyi_reverse=renr, replace_one=replace, whole_path=plan.eta == 0,
                            snapped=snapped, notes=tuple(notes))


# -- the tightness column ---------------------------------------------------------------------------

@dataclass(frozen=True)
class GameLood:
    """Largest one-path Rényi LOOD found by record optimisation on datasets of the membership game."""

    alpha: float
    forward: float      # max D_alpha(P_D || P_{D u S}) found (may be +inf: S_alpha not positive definite)
    reverse: float      # max D_alpha(P_{D u S} || P_D) found
    kl: float           # max KL(P_D || P_{D u S}) found
    datasets: int
    note: str = ("add/remove-one LOOD of the whole path (seed 003), D = n - 1 points of the game, S = (x, y) "
                 "optimised over [0, 1] x {-1, +1}; the certificate covers replace-one neighbours")

    def to_dict(self) -> dict:
        return {"lood_alpha": self.alpha, "lood_renyi_forward_found": self.forward,
                "lood_renyi_reverse_found": self.reverse, "lood_kl_found": self.kl,
                "lood_datasets": self.datasets, "lood_note": self.note}


def game_lood(game, alpha: float, *, rng: np.random.Generator, datasets: int = 6, grid: int = 2001) -> GameLood:
    """For ``datasets`` draws of n - 1 points of the game (:class:`privgp.audit.membership.game.MembershipGame`),
    maximise the Rényi LOOD at S over S = (x, y), x on a ``grid`` over [0, 1], y = +-1 (the divergence
    is convex in y), both directions; the query is S itself (the maximum over query sets)."""
    rng = v.generator("rng", rng)
    alpha = v.greater_than("alpha", alpha, 1.0)
    datasets = v.integer("datasets", datasets, minimum=1)
    xs = np.linspace(0.0, 1.0, v.integer("grid", grid, minimum=2))[:, None]
    scale = 0.0 if math.isinf(game.sigma) else 1.0 / game.sigma
    noise = game.r ** 2
    fwd = rev = klm = 0.0
    Xs, ys = sample_datasets(game, True, datasets, rng)       # the "in" datasets; the target (column 0) dropped
    for X, y in zip(Xs[:, 1:], ys[:, 1:]):
        P = GPPosterior(game.kernel, X, y * scale, noise)
        var = P.var(xs)
        mu = P.mean(xs)[:, 0]
        var_p = noise * var / (var + noise)
        for y_new in (-1.0, 1.0):
            d = var * (y_new * scale - mu) / (var + noise)
            sd, sdp = np.sqrt(var), np.sqrt(var_p)
            fwd = max(fwd, float(np.max(renyi_gaussian_1d(alpha, 0.0, sd, d, sdp))))
            rev = max(rev, float(np.max(renyi_gaussian_1d(alpha, d, sdp, 0.0, sd))))
            klm = max(klm, float(np.max(single_query_divergence("kl", var, var_p, d[:, None]))))
    return GameLood(alpha=alpha, forward=fwd, reverse=rev, kl=klm, datasets=datasets)
