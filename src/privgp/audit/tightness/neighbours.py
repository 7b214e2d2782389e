"""Neighbouring posteriors and the adversarial search for the worst replace-one pair.

:func:`neighbour_divergence` builds the two posteriors of replace-one neighbours D = core + (x, y),
D' = core + (x', y') on a finite test set and evaluates eq. (12) (Prop. 2's release with prior noise
eta when eta > 0; the covariance-only limit when sigma = inf). :func:`worst_case_neighbours` searches
adversarially (random restarts + L-BFGS-B) for neighbours that maximise it (the total, its mean part
or its covariance part), and reports the certified bound (Thm 3.1 / Prop. 2) at the same order.

:func:`mean_shift_norm` is the quantity the Delta_n lemmas bound (App. B): the RKHS norm of the mean
difference in the geometry of the core posterior,

    || mu_D - mu_D' ||_{H_-}^2 = e^2 v(x) + e'^2 v(x') - 2 e e' k_-(x, x'),
    e = (y - mu_-(x)) / (v(x) + r^2),   e' = (y' - mu_-(x')) / (v(x') + r^2),

with mu_-, k_-, v the posterior mean, covariance and variance of the core D_- (the one-step update
mu_D = mu_- + e k_-(., x), eq. (9)); :func:`worst_case_mean_shift` maximises it, for comparison with
the proven Delta_n (Lemmas B.1, B.7) and the published one (Delta_n / sqrt 2, NOT covered).

:class:`NeighbourPair` is the one neighbour-pair type of the audit (this module's searches and the sampler
audit of :mod:`privgp.audit.samplers.langevin_gp` return it); :func:`pair_rdp` and :func:`pair_epsilon` are the one
place that turns the two Gaussian releases of a pair into its exact Renyi divergence and the epsilon that
curve converts to. The closed-form divergences themselves live in :mod:`privgp.accounting.divergences`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from ... import validation as v
from ...accounting import rdp_covariance_term, rdp_mean_term, rdp_posterior_sample
from ...accounting.conversion import check_conversion, epsilon_from_rdp
from ...accounting.divergences import renyi_divergence_parts
from ...accounting.order_search import minimize_over_alpha
from ...blas_threads import one_blas_thread
from ...errors import InvalidParameterError
from ...mechanisms.posterior_sample import bounds_for
from ...models.domain import Box
from ...models.gp import ExactPosterior
from ...models.kernels import Kernel

OBJECTIVES = ("total", "mean", "cov")


def _check_alpha(alpha) -> float:
    return v.greater_than("alpha", alpha, 1.0)


@dataclass(frozen=True)
class NeighbourPair:
    """Replace-one neighbours D = core + (x, y) and D' = core + (x', y') (x, x' of shape (dim,))."""

    X_core: np.ndarray
    y_core: np.ndarray
    x: np.ndarray
    y: float
    x_prime: np.ndarray
    y_prime: float

    def datasets(self):
        """((X, y) of D, (X', y') of D')."""
        X1 = np.vstack([self.X_core, self.x[None, :]])
        X2 = np.vstack([self.X_core, self.x_prime[None, :]])
        return (X1, np.append(self.y_core, self.y)), (X2, np.append(self.y_core, self.y_prime))

    def to_dict(self) -> dict:
        return {"X_core": self.X_core.tolist(), "y_core": self.y_core.tolist(), "x": self.x.tolist(), "y": self.y,
                "x_prime": self.x_prime.tolist(), "y_prime": self.y_prime}


def pair_rdp(alpha, mean1, cov1, mean2, cov2, *, symmetric: bool = True, L: int = 1) -> float:
    """The exact Renyi divergence of order alpha > 1 between L i.i.d. draws of the release on D,
    N(mean1, cov1), and on D', N(mean2, cov2) (seed 000, eq. (12); L draws: L times one draw, by
    tensorisation).

    ``symmetric=True``: max(D_alpha(P || Q), D_alpha(Q || P)), the mechanism's Renyi divergence on this
    pair (the neighbour relation is symmetric). ``symmetric=False``: D_alpha(P || Q) only, D first: the
    direction :func:`worst_case_neighbours` maximises (its search space holds both orders of the pair)."""
    a = _check_alpha(alpha)
    fwd = renyi_divergence_parts(a, mean1, cov1, mean2, cov2)[0]
    if symmetric:
        fwd = max(fwd, renyi_divergence_parts(a, mean2, cov2, mean1, cov1)[0])
    return L * fwd


def pair_epsilon(mean1, cov1, mean2, cov2, delta: float, *, symmetric: bool = True, L: int = 1,
                 conversion: str = "improved", orders=None) -> tuple[float, float]:
    """(epsilon, alpha): the exact Renyi curve of the pair (:func:`pair_rdp` with ``symmetric`` and ``L``)
    converted to (epsilon, delta) by the certificates' conversion (so the numbers compare like for like),
    minimised over the order.

    ``orders=None``: a continuous search over alpha > 1 (:func:`privgp.accounting.order_search.minimize_over_alpha`,
    the accountant's search; the tightness table). ``orders`` an array: the smallest value over those orders
    (the sampler audit's fixed grid)."""
    check_conversion(conversion)
    d = v.probability("delta", delta)
    if orders is None:
        def objective(alpha):
            flat = alpha.reshape(-1)
            rdp = np.array([pair_rdp(float(a), mean1, cov1, mean2, cov2, symmetric=symmetric, L=L) for a in flat])
            return epsilon_from_rdp(rdp, flat, d, conversion).reshape(alpha.shape)

        a, eps = minimize_over_alpha(objective, np.array([np.inf]))
        return float(eps[0]), float(a[0])
    orders = np.asarray(orders, dtype=float)
    vals = np.array([pair_rdp(a, mean1, cov1, mean2, cov2, symmetric=symmetric, L=L) for a in orders])
    eps = epsilon_from_rdp(vals, orders, d, conversion)
    i = int(np.argmin(eps))
    return float(eps[i]), float(orders[i])


@dataclass(frozen=True)
class PairCoding:
    """Replace-one neighbours of n records on ``domain`` with |y| <= M_Y, plus ``extra`` free test inputs,
    as one point z of a box (inputs in [0, 1] per axis, responses in [-1, 1]): the variables of the
    adversarial searches. z = (core inputs, core responses, x, x', y, y', extra inputs)."""

    domain: Box
    n: int
    M_Y: float = 1.0
    extra: int = 0

    @property
    def bounds(self) -> list[tuple[float, float]]:
        d, nc = self.domain.dim, self.n - 1
        return ([(0.0, 1.0)] * (nc * d) + [(-1.0, 1.0)] * nc + [(0.0, 1.0)] * (2 * d) + [(-1.0, 1.0)] * 2
                + [(0.0, 1.0)] * (self.extra * d))

    def unpack(self, z: np.ndarray) -> tuple[NeighbourPair, np.ndarray]:
        """(the pair, the extra test inputs (extra, dim)) coded by z."""
        d, nc = self.domain.dim, self.n - 1
        lo, width = np.asarray(self.domain.lower), self.domain.widths
        Xc, yc, x, xp, yy, yp, xt = np.split(np.asarray(z, dtype=float), np.cumsum([nc * d, nc, d, d, 1, 1]))
        pair = NeighbourPair(X_core=lo + width * Xc.reshape(nc, d), y_core=self.M_Y * yc, x=lo + width * x,
                             y=self.M_Y * float(yy[0]), x_prime=lo + width * xp, y_prime=self.M_Y * float(yp[0]))
        return pair, lo + width * xt.reshape(self.extra, d)

    def pack(self, pair: NeighbourPair) -> np.ndarray:
        """z of a pair (no extra inputs)."""
        lo, width = np.asarray(self.domain.lower), self.domain.widths
        return np.concatenate([((pair.X_core - lo) / width).ravel(), pair.y_core / self.M_Y, (pair.x - lo) / width,
                               (pair.x_prime - lo) / width, [pair.y / self.M_Y, pair.y_prime / self.M_Y]])

    def start(self, kind: str, rng: np.random.Generator) -> np.ndarray:
        """A structured first point: ``"spread"``: x and x' on two core inputs of a uniformly spread core, the core
        responses opposite to theirs (the worst mean shift found in 1-D; needs n >= 3); ``"piled"``: the core on
        one corner with y = +M, x and x' near the far corner with opposite responses; extra inputs uniform."""
        d, nc = self.domain.dim, self.n - 1
        if kind == "spread":
            core = rng.uniform(0.0, 1.0, (nc, d))
            z = np.concatenate([core.ravel(), np.full(nc, -1.0), core[0], core[1], [1.0, 1.0]])
        elif kind == "piled":
            z = np.concatenate([np.full(nc * d, 0.02), np.ones(nc), np.full(d, 0.98), np.full(d, 0.9), [-1.0, 1.0]])
        else:
            raise InvalidParameterError("kind", "'spread' or 'piled'", kind)
        return np.concatenate([z, rng.uniform(0.0, 1.0, self.extra * d)]) if self.extra else z

    def maximise(self, value, *, restarts: int, rng: np.random.Generator, maxiter: int,
                 first: tuple = ()) -> tuple[float, np.ndarray]:
        """(largest value found, its z): L-BFGS-B on the box from the points ``first`` (each a z or a start
        kind, drawn when its turn comes), then uniform random points, ``restarts`` in all; stops early at an
        infinite value (nothing is larger). ``value(z)`` may return inf or nan (searched as a very large or
        very small number)."""
        bounds = self.bounds
        lo_b, hi_b = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])

        def objective(z):
            val = value(np.clip(z, lo_b, hi_b))
            return -val if math.isfinite(val) else (-1e300 if val > 0 else 1e300)

        best: tuple[float, np.ndarray | None] = (-math.inf, None)
        with one_blas_thread():  # tiny matrices: BLAS threads only add contention
            for k in range(restarts):
                if k < len(first):
                    z0 = first[k] if isinstance(first[k], np.ndarray) else self.start(first[k], rng)
                else:
                    z0 = np.array([rng.uniform(a, c) for a, c in bounds])
                res = minimize(objective, z0, method="L-BFGS-B", bounds=bounds, options={"maxiter": maxiter})
                val = value(res.x)
                if val > best[0]:
                    best = (val, res.x)
                if val == math.inf:
                    break
        if best[1] is None:
            raise InvalidParameterError("value", "a number at some point of the search", best[0])
        return float(best[0]), best[1]


def _one_point(name: str, x, dim: int) -> np.ndarray:
    arr = v.finite_array(name, x).reshape(1, -1)
    if arr.shape[1] != dim:
        raise InvalidParameterError(name, f"one point of dimension {dim}", f"{arr.size} coordinates")
    return arr


def _unique_rows(X: np.ndarray) -> np.ndarray:
    _, idx = np.unique(X, axis=0, return_index=True)
    return X[np.sort(idx)]


def neighbour_posteriors(kernel: Kernel, X_core, y_core, x, y, x_prime, y_prime, XT, *, r: float,
                         sigma: float, eta: float = 0.0):
    """Means and covariances on XT of the released vector for D = core + (x, y), D' = core + (x', y').

    Release: f_D(XT) ~ N(mu_D, sigma^2 K_D) (+ eta^2 K(XT, XT) prior noise, Prop. 2). With sigma = inf
    the covariance-only limit: zero means and covariance K_D (+ 0: eta / sigma -> 0).
    """
    XT = v.points("XT", XT)
    dim = XT.shape[1]
    Xc = np.asarray(X_core, dtype=float).reshape(-1, dim)
    yc = np.asarray(y_core, dtype=float).reshape(-1)
    x, xp = _one_point("x", x, dim), _one_point("x_prime", x_prime, dim)
    post_D = ExactPosterior(kernel, np.vstack([Xc, x]), np.append(yc, float(y)), r)
    post_Dp = ExactPosterior(kernel, np.vstack([Xc, xp]), np.append(yc, float(y_prime)), r)
    K1, K2 = post_D.kD(XT), post_Dp.kD(XT)
    if math.isinf(sigma):
        zero = np.zeros(XT.shape[0])
        return zero, K1, zero, K2
    noise = eta * eta * kernel(XT) if eta > 0 else 0.0
    return post_D.mean(XT), sigma * sigma * K1 + noise, post_Dp.mean(XT), sigma * sigma * K2 + noise


#: the largest test set whose divergence :func:`exact_neighbour_parts` re-evaluates (60-digit m x m products)
EXACT_MAX_POINTS = 64


def exact_neighbour_parts(kernel: Kernel, pair: NeighbourPair, XT, *, r: float, sigma: float, eta: float = 0.0,
                          alpha: float) -> tuple[float, float, float] | None:
    """(total, mean part, covariance part) of eq. (12) between the two posteriors of ``pair`` on XT, with the
    posteriors (seed 000, sec. 2) and the divergence computed in 60-digit arithmetic (mpmath;
    :func:`privgp.accounting.divergences.renyi_parts_exact`) from the float64 kernel matrices: float64 loses the
    difference of nearly equal posteriors (r = 1e8 gave 4.3e-27 for an exact 9.0e-31, "above" a certified
    1.3e-29: red team 25). None where XT has more than EXACT_MAX_POINTS points or a posterior covariance is singular
    there (e.g. a test input repeated)."""
    import mpmath

    from ...accounting.divergences import EXACT_DPS, renyi_parts_exact
    from ...accounting.divergences import mp_matrix as M

    XT = v.points("XT", XT)
    if XT.shape[0] > EXACT_MAX_POINTS:
        return None
    dim = XT.shape[1]
    Xc = np.asarray(pair.X_core, dtype=float).reshape(-1, dim)
    yc = np.asarray(pair.y_core, dtype=float).reshape(-1)
    with mpmath.workdps(EXACT_DPS):
        def posterior(x, y):
            X = np.vstack([Xc, np.asarray(x, dtype=float).reshape(1, dim)])
            K = M(kernel(X)) + mpmath.mpf(r) ** 2 * mpmath.eye(X.shape[0])
            Kx, Kt = M(kernel(X, XT)), M(kernel(XT))
            W = mpmath.inverse(K) * Kx                        # (K_XX + r^2 I)^{-1} k_X(XT)
            y_ = M(np.append(yc, float(y)).reshape(-1, 1))
            mean = W.T * y_
            cov = Kt - Kx.T * W
            cov = (cov + cov.T) / 2
            return mean, cov

        (m1, K1), (m2, K2) = posterior(pair.x, pair.y), posterior(pair.x_prime, pair.y_prime)
        if math.isinf(sigma):
            zero = mpmath.zeros(XT.shape[0], 1)
            m1, m2, S1, S2 = zero, zero, K1, K2
        else:
            s2 = mpmath.mpf(sigma) ** 2
            noise = mpmath.mpf(eta) ** 2 * M(kernel(XT)) if eta > 0 else mpmath.zeros(XT.shape[0], XT.shape[0])
            S1, S2 = s2 * K1 + noise, s2 * K2 + noise
        try:
            return renyi_parts_exact(alpha, m1, S1, m2, S2)
        except InvalidParameterError:   # a singular posterior covariance on XT
            return None


def neighbour_divergence(kernel: Kernel, X_core, y_core, x, y, x_prime, y_prime, XT, *, r, sigma,
                         eta=0.0, alpha, include_differing: bool = True) -> tuple[float, float, float]:
    """Exact D_alpha(Pi_D(XT) || Pi_D'(XT)) for replace-one neighbours D = core + (x, y) and
    D' = core + (x', y') (seed 000, eq. (12); Prop. 2 release when eta > 0; sigma = inf allowed).

    Returns (total, mean part, covariance part). With ``include_differing`` (default) x and x' are
    added to XT (exact duplicates are dropped; they change nothing). Without prior noise (eta = 0)
    the test set core + {x, x'} already gives the divergence of the whole paths, because the
    likelihood ratio depends on the path only through its values there.
    """
    alpha = _check_alpha(alpha)
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma, allow_inf=True)
    eta = v.nonnegative("eta", eta)
    x = v.finite_array("x", x).reshape(1, -1)
    dim = x.shape[1]
    XT = v.finite_array("XT", XT, allow_empty=include_differing).reshape(-1, dim)
    if include_differing:
        XT = np.vstack([x, _one_point("x_prime", x_prime, dim), XT])
    XT = _unique_rows(XT)
    m1, S1, m2, S2 = neighbour_posteriors(kernel, X_core, y_core, x, y, x_prime, y_prime, XT, r=r,
                                          sigma=sigma, eta=eta)
    return renyi_divergence_parts(alpha, m1, S1, m2, S2)


@dataclass(frozen=True)
class WorstCaseNeighbours:
    """The most divergent neighbouring pair found, and the certified bound at the same order."""

    alpha: float
    objective: str            # "total", "mean" or "cov"
    divergence: float         # total D_alpha at the best pair
    mean_part: float
    cov_part: float
    bound: float              # certified single-draw RDP bound (Thm 3.1 / Prop. 2) at alpha
    mean_bound: float         # its mean (Delta_n) term
    cov_bound: float          # its covariance term 2 psi_alpha(tau~)
    pair: NeighbourPair
    XT: np.ndarray
    n: int
    r: float
    sigma: float
    eta: float
    M_Y: float
    lemma_Delta: str
    evaluations: int

    @property
    def ratio(self) -> float:
        """Found / certified, for the chosen objective (<= 1 when the bound holds)."""
        num, den = {"total": (self.divergence, self.bound), "mean": (self.mean_part, self.mean_bound),
                    "cov": (self.cov_part, self.cov_bound)}[self.objective]
        return num / den if den > 0 else (0.0 if num == 0 else math.inf)


def worst_case_neighbours(alpha, *, n, kernel: Kernel, domain: Box, r, sigma, eta=0.0, M_Y=1.0, rng,
                          restarts: int = 6, test_points: int = 2, objective: str = "total",
                          sensitivity: str = "generic", constants: str = "proven",
                          maxiter: int = 150) -> WorstCaseNeighbours:
    """Adversarial search for replace-one neighbours (size n, inputs in ``domain``, responses in
    [-M_Y, M_Y]) maximising the exact divergence (``objective="total"``) or its mean part
    (``"mean"``) at order alpha, over the core inputs and responses, x, x', y, y' and ``test_points``
    extra test inputs. Restarts, each refined by L-BFGS-B on the box: x and x' on two core inputs of
    a spread-out core with the opposite response (the worst mean shift found in 1-D), the core piled on
    one corner with x, x' at the far one, then uniform random points.
    """
    alpha = _check_alpha(alpha)
    n = v.integer("n", n, minimum=1)
    r = v.positive("r", r)
    sigma = v.positive("sigma", sigma, allow_inf=True)
    eta = v.nonnegative("eta", eta)
    M_Y = v.positive("M_Y", M_Y)
    rng = v.generator("rng", rng)
    restarts = v.integer("restarts", restarts, minimum=1)
    test_points = v.integer("test_points", test_points, minimum=0)
    if objective not in OBJECTIVES:
        raise InvalidParameterError("objective", "one of " + ", ".join(repr(o) for o in OBJECTIVES), objective)
    if not isinstance(kernel, Kernel):
        raise InvalidParameterError("kernel", "a privgp.models.kernels.Kernel instance", kernel)
    if not isinstance(domain, Box):
        raise InvalidParameterError("domain", "a privgp.models.domain.Box", domain)
    b = bounds_for(n, r, kernel=kernel, domain=domain, M_Y=M_Y, sensitivity=sensitivity, constants=constants)
    V, Delta = float(b.V), float(b.Delta)
    bound = float(rdp_posterior_sample(alpha, V, Delta, r, sigma, eta))
    mean_bound = float(rdp_mean_term(alpha, V, Delta, r, sigma, eta))
    cov_bound = float(rdp_covariance_term(alpha, V, r, sigma, eta))

    coding = PairCoding(domain, n, M_Y, extra=test_points)
    count = [0]

    def parts(z):
        pair, xt = coding.unpack(z)
        XT = np.vstack([pair.X_core, xt]) if n > 1 else xt
        count[0] += 1
        return neighbour_divergence(kernel, pair.X_core, pair.y_core, pair.x, pair.y, pair.x_prime, pair.y_prime, XT,
                                    r=r, sigma=sigma, eta=eta, alpha=alpha)

    idx = OBJECTIVES.index(objective)
    _, z = coding.maximise(lambda z: parts(z)[idx], restarts=restarts, rng=rng, maxiter=maxiter,
                           first=("spread" if n >= 3 else "piled", "piled"))
    total, mean_part, cov_part = parts(z)
    pair, xt = coding.unpack(z)
    XT = _unique_rows(np.vstack([pair.x[None], pair.x_prime[None], pair.X_core, xt]))
    return WorstCaseNeighbours(alpha=alpha, objective=objective, divergence=total, mean_part=mean_part,
                               cov_part=cov_part, bound=bound, mean_bound=mean_bound, cov_bound=cov_bound,
                               pair=pair, XT=XT, n=n, r=r,
                               sigma=sigma, eta=eta, M_Y=M_Y, lemma_Delta=b.lemma_Delta, evaluations=count[0])


def mean_shift_norm(kernel: Kernel, X_core, y_core, x, y, x_prime, y_prime, *, r: float) -> float:
    """|| mu_D - mu_D' ||_{H_-} for D = core + (x, y), D' = core + (x', y') (see the module docstring):
    the quantity bounded by Delta_n in App. B (normalised: sigma plays no part)."""
    r = v.positive("r", r)
    x = v.finite_array("x", x).reshape(1, -1)
    dim = x.shape[1]
    xp = _one_point("x_prime", x_prime, dim)
    Xc = np.asarray(X_core, dtype=float).reshape(-1, dim)
    yc = np.asarray(y_core, dtype=float).reshape(-1)
    pts = np.vstack([x, xp])
    if Xc.shape[0]:
        core = ExactPosterior(kernel, Xc, yc, r)
        mu, K = core.mean(pts), core.kD(pts)
    else:
        mu, K = np.zeros(2), kernel(pts)
    e = (float(y) - mu[0]) / (K[0, 0] + r * r)
    ep = (float(y_prime) - mu[1]) / (K[1, 1] + r * r)
    sq = e * e * K[0, 0] + ep * ep * K[1, 1] - 2.0 * e * ep * K[0, 1]
    return math.sqrt(max(sq, 0.0))


@dataclass(frozen=True)
class WorstMeanShift:
    """The largest mean shift || mu_D - mu_D' ||_{H_-} found, beside the proven and published Delta_n."""

    norm: float
    Delta_proven: float
    Delta_published: float      # Delta_n / sqrt(2) of the paper's scripts: NOT covered by the lemmas
    lemma_Delta: str
    pair: NeighbourPair
    n: int
    r: float
    M_Y: float
    evaluations: int

    @property
    def ratio_proven(self) -> float:
        return self.norm / self.Delta_proven

    @property
    def ratio_published(self) -> float:
        return self.norm / self.Delta_published


def worst_case_mean_shift(*, n, kernel: Kernel, domain: Box, r, M_Y=1.0, rng, restarts: int = 8,
                          sensitivity: str = "generic", maxiter: int = 200) -> WorstMeanShift:
    """Adversarial search (random restarts + L-BFGS-B over the core inputs and responses, x, x', y, y')
    for the largest :func:`mean_shift_norm` of replace-one neighbours of size n in ``domain`` with
    responses in [-M_Y, M_Y]. Starts: x and x' on two core inputs of a spread-out core with the opposite
    response (the worst case found in 1-D), the core piled on one corner with x, x' at the far one, then
    uniform random points."""
    n = v.integer("n", n, minimum=1)
    r = v.positive("r", r)
    M_Y = v.positive("M_Y", M_Y)
    rng = v.generator("rng", rng)
    restarts = v.integer("restarts", restarts, minimum=1)
    if not isinstance(kernel, Kernel):
        raise InvalidParameterError("kernel", "a privgp.models.kernels.Kernel instance", kernel)
    if not isinstance(domain, Box):
        raise InvalidParameterError("domain", "a privgp.models.domain.Box", domain)
    proven = bounds_for(n, r, kernel=kernel, domain=domain, M_Y=M_Y, sensitivity=sensitivity, constants="proven")
    published = bounds_for(n, r, kernel=kernel, domain=domain, M_Y=M_Y, sensitivity=sensitivity,
                           constants="published")
    coding = PairCoding(domain, n, M_Y)
    count = [0]

    def norm(z):
        count[0] += 1
        p = coding.unpack(z)[0]
        return mean_shift_norm(kernel, p.X_core, p.y_core, p.x, p.y, p.x_prime, p.y_prime, r=r)

    best = coding.maximise(norm, restarts=restarts, rng=rng, maxiter=maxiter,
                           first=("spread" if n >= 3 else "piled", "piled"))
    pair = coding.unpack(best[1])[0]
    return WorstMeanShift(norm=best[0], Delta_proven=float(proven.Delta), Delta_published=float(published.Delta),
                          lemma_Delta=proven.lemma_Delta,
                          pair=pair, n=n, r=r, M_Y=M_Y, evaluations=count[0])
