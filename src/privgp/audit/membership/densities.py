"""Density models fitted by the membership-inference attacks (seed 000, App. C).

``LatentTanhMixture``: f = tanh(phi / 2) + eta, phi ~ sum_j w_j N(m_j, tau_j^2), eta ~ N(0, s^2) (the
paper's model for f_hat); ``TanhGaussianMixture``: its noise-free limit (the benchmark's model for the
exact mean mu0); ``GaussianMixture1D``: the two-component mixture for log v_hat. Pure numpy/scipy; the
attacks that use them are in :mod:`.attacks`.

The latent-mixture density (App. C, "the integral is evaluated numerically") is computed without
quadrature ripples: the latent u = tanh(phi / 2) in (-1, 1) is cut into cells whose edges are fixed
during a fit (a uniform grid, a grid uniform in phi and the data quantiles). Each cell gets its exact
mass under the mixture, Phi((2 artanh(e_{k+1}) - m_j)/tau_j) - Phi((2 artanh(e_k) - m_j)/tau_j), and
spreads it uniformly over the cell; the convolution with N(0, s^2) is then exact,

    rho(t) = sum_k q_k (Phi((t - e_k)/s) - Phi((t - e_{k+1})/s)) / (e_{k+1} - e_k),

a proper density for every parameter value (the masses sum to one). After a first fit, every cell
holding mass is split into parts narrower than s / 2 and the fit is polished on the refined cells,
so the Gaussian smoothing sees no steps between neighbouring cells: the density is smooth in t
(no comb of narrow bumps, which node-based Gauss-Legendre or Gauss-Hermite quadrature gives when s is
small; a test counts the modes). Only cells within 9 s of a point are summed (the rest contribute
< 1e-19 of the largest cell height), so narrow noise costs no more than wide noise. The
maximum-likelihood fit uses analytic gradients (BFGS) on a weighted histogram of the samples
(equal-count bins at their means, the extreme values kept as they are), from a few starts (EM on the
tanh-inverted samples, a wide-noise variant, one jittered copy); the fitted density is then evaluated
at every scored point, in logs where it would underflow.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, log_ndtr, logsumexp, ndtr

from ... import validation as v
from ...errors import InvalidParameterError, NumericalError

_TAU_FLOOR = 1e-3      # latent component scales (phi units)
_S_FLOOR = 1e-4        # observation noise of the latent model
U_MAX = 1.0 - 1e-12    # latent u is kept inside (-1, 1)
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _phi(z):
    """Standard normal pdf, 0 at +-inf."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)
    return np.where(np.isfinite(z), out, 0.0)


def _ndtr_steps(alpha):
    """Phi(alpha[..., k]) - Phi(alpha[..., k+1]) for alpha decreasing along the last axis, with
    relative accuracy in both tails, one ndtr per edge: with the tail probabilities Q = Phi(-|alpha|),
    Q_b - Q_a where both edges are above 0, Q_a - Q_b where both are at or below it, and
    1 - Q_a - Q_b for the one cell of a row that straddles 0 (NaN stays NaN)."""
    Q = ndtr(-np.abs(alpha))
    above = alpha > 0
    Qa, Qb = Q[..., :-1], Q[..., 1:]
    out = Qb - Qa
    np.negative(out, out=out, where=~above[..., :-1])   # Q_a - Q_b, the same number
    straddle = above[..., :-1] & ~above[..., 1:]
    out[straddle] = 1.0 - Qa[straddle] - Qb[straddle]
    return out


def _log_ndtr_diff(hi, lo):
    """log(Phi(hi) - Phi(lo)) for hi >= lo, accurate in both tails and for hi - lo small."""
    hi, lo = np.broadcast_arrays(np.asarray(hi, float), np.asarray(lo, float))
    flip = lo > 0
    a = np.where(flip, -hi, lo)   # lower argument after reflection
    b = np.where(flip, -lo, hi)   # upper argument
    with np.errstate(divide="ignore", invalid="ignore"):
        lb, la = log_ndtr(b), log_ndtr(a)
        wide = lb + np.log(-np.expm1(np.minimum(la - lb, -1e-300)))
        # narrow cells: midpoint rule with its second-order correction (relative error ~ d^4)
        mid, d = 0.5 * (a + b), b - a
        narrow = -0.5 * mid * mid - _LOG_SQRT_2PI + np.log(d) + np.log1p(d * d * (mid * mid - 1.0) / 24.0)
    return np.where(d < 1e-3, narrow, wide)


# ----------------------------------------------------------------------------------------------
# one-dimensional Gaussian mixture (for log v_hat)


@dataclass(frozen=True)
class GaussianMixture1D:
    """A one-dimensional Gaussian mixture with its log-density."""

    weights: np.ndarray
    means: np.ndarray
    sds: np.ndarray

    def logpdf(self, x) -> np.ndarray:
        x = np.asarray(x, float)[..., None]
        z = (x - self.means) / self.sds
        return logsumexp(np.log(self.weights) - 0.5 * z * z - np.log(self.sds) - _LOG_SQRT_2PI, axis=-1)


def fit_gaussian_mixture_1d(samples, *, components: int = 2, var_floor: float = 1e-6, weights=None,
                            max_iter: int = 2000, tol: float = 1e-10) -> GaussianMixture1D:
    """Maximum-likelihood K-component mixture by EM (start: equal weights, means at evenly spaced
    quantiles, common variance); variances floored at ``var_floor`` (as scikit-learn's reg_covar).
    ``weights``: optional sample weights (a weighted histogram: bin positions and counts).

    A vectorised 1-D EM rather than ``sklearn.mixture.GaussianMixture``: it reaches the same optimum
    (a test compares the log-likelihoods) and, run on a weighted histogram, takes milliseconds
    instead of ~0.3 s per fit on 10^4 points; every audited setting fits four such mixtures.
    """
    x = v.finite_array("samples", samples, ndim=1)
    K = v.integer("components", components, minimum=1)
    if x.size < 2 * K:
        raise InvalidParameterError("samples", f"at least {2 * K} values for {K} components", x.size)
    c = np.ones(x.size) if weights is None else np.asarray(weights, float)
    c = c / c.sum()
    order = np.argsort(x)
    cum = np.cumsum(c[order])
    mu = x[order][np.minimum(np.searchsorted(cum, (np.arange(K) + 0.5) / K), x.size - 1)]
    mean = float(c @ x)
    var = np.full(K, max(float(c @ (x - mean) ** 2), var_floor))
    w = np.full(K, 1.0 / K)
    prev = -np.inf
    for _ in range(max_iter):
        z = (x[:, None] - mu) / np.sqrt(var)
        logp = np.log(w) - 0.5 * z * z - 0.5 * np.log(var) - _LOG_SQRT_2PI
        mx = logp.max(axis=1, keepdims=True)
        resp = np.exp(logp - mx)
        tot = resp.sum(axis=1, keepdims=True)
        resp *= c[:, None] / tot
        mean_ll = float(c @ (mx[:, 0] + np.log(tot[:, 0])))
        nk = resp.sum(axis=0) + 1e-300
        w = nk / nk.sum()
        mu = (resp.T @ x) / nk
        var = np.maximum((resp * (x[:, None] - mu) ** 2).sum(axis=0) / nk, var_floor)
        if mean_ll - prev <= tol * max(1.0, abs(mean_ll)):
            break
        prev = mean_ll
    w = np.maximum(w, 1e-300)
    return GaussianMixture1D(weights=w / w.sum(), means=mu, sds=np.sqrt(var))


def fit_gaussian_mixture_1d_binned(samples, *, bins: int = 512, **options) -> GaussianMixture1D:
    """:func:`fit_gaussian_mixture_1d` on a weighted histogram of the samples (equal-count bins at
    their means, the 32 most extreme values on each side kept as they are)."""
    x = v.finite_array("samples", samples, ndim=1)
    pos, cnt = _histogram(x, bins, splits=())
    return fit_gaussian_mixture_1d(pos, weights=cnt, **options)


# ----------------------------------------------------------------------------------------------
# the latent tanh-transformed mixture (for f_hat)


def _unpack(theta):
    w1 = expit(theta[0])
    w = np.array([w1, 1.0 - w1])
    m = np.asarray(theta[1:3], float)
    tau = _TAU_FLOOR + np.exp(theta[3:5])
    s = _S_FLOOR + np.exp(theta[5])
    return w, m, tau, s


def _pack(w1, m, tau, s):
    w1 = float(np.clip(w1, 1e-6, 1 - 1e-6))
    return np.array([np.log(w1 / (1 - w1)), m[0], m[1],
                     np.log(max(tau[0] - _TAU_FLOOR, 1e-12)), np.log(max(tau[1] - _TAU_FLOOR, 1e-12)),
                     np.log(max(s - _S_FLOOR, 1e-12))])


def _latent_cell_masses(phi_edges, w, m, tau, *, grad=False):
    """Masses q_k = sum_j w_j P_jk of the latent cells (and dP/dm, dP/dtau per component)."""
    z = (phi_edges[None, :] - m[:, None]) / tau[:, None]            # (2, K+1), +-inf at the ends
    cdf = ndtr(z)
    upper = z[:, :-1] > 0                                            # both edges in the upper tail
    P = np.where(upper, ndtr(-z[:, :-1]) - ndtr(-z[:, 1:]), cdf[:, 1:] - cdf[:, :-1])
    P = np.maximum(P, 0.0)
    q = w @ P
    if not grad:
        return q, P
    pdf = _phi(z)
    with np.errstate(invalid="ignore"):
        zpdf = np.where(np.isfinite(z), z * pdf, 0.0)
    dP_dm = -(pdf[:, 1:] - pdf[:, :-1]) / tau[:, None]
    dP_dtau = -(zpdf[:, 1:] - zpdf[:, :-1]) / tau[:, None]
    return q, P, dP_dm, dP_dtau


def _cell_edges(samples, n_quantiles: int) -> np.ndarray:
    """Cell edges of the latent u in [-1, 1]: a uniform grid, a grid uniform in phi = 2 artanh(u),
    the data quantiles (equal-count, plus a geometric ladder into both tails)."""
    u_uniform = np.linspace(-1.0, 1.0, 33)
    u_phi = np.tanh(np.linspace(-24.0, 24.0, 49) / 2.0)
    tail = np.geomspace(1e-4, 0.5 / n_quantiles, 12)
    levels = np.concatenate([np.linspace(0.0, 1.0, n_quantiles + 1), tail, 1.0 - tail])
    u_data = np.quantile(samples, levels)
    e = np.unique(np.clip(np.concatenate([u_uniform, u_phi, u_data]), -U_MAX, U_MAX))
    keep = np.concatenate([[True], np.diff(e) > 1e-12])
    e = e[keep]
    e[0], e[-1] = -1.0, 1.0
    if e.size >= 3 and e[1] <= -1.0:
        e = np.delete(e, 1)
    if e.size >= 3 and e[-2] >= 1.0:
        e = np.delete(e, -2)
    return e


def _refine_edges(edges, s, masses, *, max_cells: int = 4000) -> np.ndarray:
    """Split every cell that holds mass and is wider than s / 2 into equal parts narrower than s / 2,
    so that the Gaussian smoothing (scale s) sees no steps between neighbouring cells."""
    width = np.diff(edges)
    parts = np.where(masses > 1e-14, np.ceil(width / (0.5 * s)), 1.0)
    extra = parts.sum() - parts.size
    if extra > max_cells:
        parts = np.maximum(1.0, np.floor(parts * max_cells / max(extra, 1.0)))
    pieces = [np.linspace(a, b, int(p) + 1)[:-1] for a, b, p in zip(edges[:-1], edges[1:], parts)]
    return np.concatenate(pieces + [edges[-1:]])


def _band_edges(t, e, cells, s):
    """alpha = (t - e_j) / s at the W + 1 edges of each point's band of W cells (shape (N, W + 1)), so
    that the cells' left and right edges share one evaluation each; exact for the cells inside the band
    (see :func:`_band`), the rest is masked by the caller."""
    K = e.size - 1
    E = np.minimum(cells[:, :1] + np.arange(cells.shape[1] + 1), K)
    return (t[:, None] - e[E]) / s


def _band(t, e, s, window: float = 9.0):
    """The cells [e_k, e_{k+1}] within ``window`` s of each point: (cells (N, W), inside (N, W)), or
    None when a dense evaluation is cheaper. Cells further away change a Gaussian-smoothed density by
    less than 2 Phi(-window) max(h) ~ 1e-19 max(h) in total."""
    K = e.size - 1
    lo = np.clip(np.searchsorted(e, t - window * s, side="right") - 1, 0, K - 1)
    hi = np.clip(np.searchsorted(e, t + window * s, side="left"), lo + 1, K)
    W = int(np.max(hi - lo)) if t.size else 0
    if 2 * W >= K:
        return None
    cells = lo[:, None] + np.arange(W)
    inside = cells < hi[:, None]
    return np.minimum(cells, K - 1), inside


def _box_mixture_density(t, e, h, s, *, chunk: int = 512) -> np.ndarray:
    """rho(t) = sum_k h_k (Phi((t - e_k)/s) - Phi((t - e_{k+1})/s)): piecewise-constant heights h on
    the cells [e_k, e_{k+1}] convolved with N(0, s^2) (cells beyond 9 s of a point are skipped).

    The points are taken in sorted order, ``chunk`` at a time, so that a chunk's band (the most cells any
    of its points needs) is close to each point's own: ~40% less work than unsorted chunks of 4096."""
    order = np.argsort(t, kind="stable")
    ts = t[order]
    out = np.empty(t.size)
    for i in range(0, ts.size, chunk):
        tt = ts[i:i + chunk]
        band = _band(tt, e, s)
        if band is None:
            out[order[i:i + chunk]] = _ndtr_steps((tt[:, None] - e[None, :]) / s) @ h
            continue
        cells, inside = band
        G = _ndtr_steps(_band_edges(tt, e, cells, s))
        out[order[i:i + chunk]] = np.sum(np.where(inside, G * h[cells], 0.0), axis=1)
    return out


def _phi_edges(edges):
    with np.errstate(divide="ignore"):
        out = 2.0 * np.arctanh(edges)
    out[0], out[-1] = -np.inf, np.inf
    return out


@dataclass(frozen=True)
class LatentTanhMixture:
    """f = tanh(phi / 2) + eta, phi ~ sum_j w_j N(m_j, tau_j^2), eta ~ N(0, s^2) (App. C), on fixed cells."""

    weights: np.ndarray
    means: np.ndarray
    taus: np.ndarray
    noise: float
    edges: np.ndarray = field(repr=False)
    nll: float = float("nan")         # mean negative log-likelihood of the fit (binned samples)
    iterations: int = 0

    def _heights(self):
        q, _ = _latent_cell_masses(_phi_edges(self.edges), self.weights, self.means, self.taus)
        return q / np.diff(self.edges)

    def logpdf(self, t) -> np.ndarray:
        """Log-density at each point of t (exact for the cell discretisation of the latent law)."""
        t = np.asarray(t, float)
        flat = t.reshape(-1)
        h = self._heights()
        e, s = self.edges, self.noise
        rho = _box_mixture_density(flat, e, h, s)
        # The density-domain sum has relative accuracy (tail-stable steps) until it underflows, far
        # from the mass; recompute those points in logs.
        bad = ~(rho > 1e-250)
        out = np.empty(flat.shape)
        out[~bad] = np.log(rho[~bad])
        if np.any(bad):
            tt = flat[bad]
            lg = _log_ndtr_diff((tt[:, None] - e[None, :-1]) / s, (tt[:, None] - e[None, 1:]) / s)
            with np.errstate(divide="ignore"):
                out[bad] = logsumexp(lg + np.log(h)[None, :], axis=1)
        return out.reshape(t.shape)

    def pdf(self, t) -> np.ndarray:
        return np.exp(self.logpdf(t))


@dataclass(frozen=True)
class TanhGaussianMixture:
    """The latent model in its noise-free limit s = 0: u = tanh(phi / 2) with phi a Gaussian mixture,
    density p(u) = p_phi(2 artanh u) 2 / (1 - u^2) on (-1, 1). Used for the exact mean mu0 (benchmark)."""

    latent: GaussianMixture1D

    def logpdf(self, u) -> np.ndarray:
        u = np.clip(np.asarray(u, float), -U_MAX, U_MAX)
        return self.latent.logpdf(2.0 * np.arctanh(u)) + np.log(2.0) - np.log1p(-u * u)


def _inverse_weights(c, rho):
    """c / rho, or None where a bin's model density is zero or so small that its weight overflows:
    the objective is then +inf there (the line search backs off), never a NaN gradient."""
    if not np.all(rho > 0):
        return None
    with np.errstate(over="ignore", divide="ignore"):
        rw = c / rho
    return rw if np.all(np.isfinite(rw)) else None


class _BinnedObjective:
    """Mean negative log-likelihood of the latent model on a weighted histogram, with its gradient."""

    def __init__(self, t_bins, weights, edges):
        self.t = t_bins
        self.c = weights / np.sum(weights)
        self.e = edges
        self.width = np.diff(edges)
        self.phi_e = _phi_edges(edges)

    def __call__(self, theta):
        w, m, tau, s = _unpack(theta)
        q, P, dP_dm, dP_dtau = _latent_cell_masses(self.phi_e, w, m, tau, grad=True)
        band = _band(self.t, self.e, s)
        if band is None:                                                  # dense: all (bin, cell) pairs
            alpha = (self.t[:, None] - self.e[None, :]) / s              # (T, K+1)
            H = _ndtr_steps(alpha) / self.width                           # (T, K)
            rho = H @ q
            rw = _inverse_weights(self.c, rho)
            if rw is None:
                return np.inf, np.zeros_like(theta)
            g_q = -(H.T @ rw)                                             # dNLL/dq_k
            ap = alpha * _phi(alpha)
            dH_ds = -(ap[:, :-1] - ap[:, 1:]) / (s * self.width)
            g_s = -float(rw @ (dH_ds @ q))
        else:                                                             # banded: cells near each bin
            cells, inside = band
            alpha = _band_edges(self.t, self.e, cells, s)
            wd = self.width[cells]
            H = np.where(inside, _ndtr_steps(alpha), 0.0) / wd
            qc = q[cells]
            rho = np.sum(H * qc, axis=1)
            rw = _inverse_weights(self.c, rho)
            if rw is None:
                return np.inf, np.zeros_like(theta)
            g_q = -np.bincount(cells.ravel(), weights=(rw[:, None] * H).ravel(), minlength=q.size)
            ap = alpha * _phi(alpha)
            dH_ds = np.where(inside, -(ap[:, :-1] - ap[:, 1:]), 0.0) / (s * wd)
            g_s = -float(rw @ np.sum(dH_ds * qc, axis=1))
        nll = -float(self.c @ np.log(rho))
        g = np.empty(6)
        g[0] = float(g_q @ (P[0] - P[1])) * w[0] * w[1]
        g[1:3] = w * (dP_dm @ g_q)
        g[3:5] = w * (dP_dtau @ g_q) * (tau - _TAU_FLOOR)
        g[5] = g_s * (s - _S_FLOOR)
        return nll, g


def _histogram(samples, bins: int, n_tail: int = 32, splits=(-1.0, 1.0)):
    """A weighted histogram for a fit: the ``n_tail`` smallest and largest samples as themselves, the
    rest in about ``bins`` equal-count bins (represented by their means) that never straddle
    ``splits`` (the support edges -1 and +1 of the latent u). Returns bin positions and counts."""
    x = np.sort(samples)
    if x.size <= bins + 2 * n_tail:
        return x, np.ones(x.size)
    pos, cnt = [x[:n_tail], x[-n_tail:]], [np.ones(n_tail), np.ones(n_tail)]
    core = x[n_tail:-n_tail]
    size = core.size / bins
    for part in np.split(core, np.searchsorted(core, list(splits))):
        if part.size == 0:
            continue
        chunks = np.array_split(part, max(1, int(round(part.size / size))))
        pos.append(np.array([c.mean() for c in chunks]))
        cnt.append(np.array([c.size for c in chunks], float))
    return np.concatenate(pos), np.concatenate(cnt)


def _starts(samples, rng):
    """Initial parameters: EM on the tanh-inverted samples, a wide-noise variant, a jittered copy."""
    sd = float(np.std(samples))
    scale = max(1.0, float(np.quantile(np.abs(samples), 0.995)))
    u = np.clip(samples / scale, -1 + 1e-6, 1 - 1e-6)
    phi = 2.0 * np.arctanh(u)
    gm = fit_gaussian_mixture_1d_binned(phi, bins=256, tol=1e-7)
    order = np.argsort(gm.means)
    w1, m, tau = gm.weights[order][0], gm.means[order], np.maximum(gm.sds[order], 2 * _TAU_FLOOR)
    s_small = max(0.05 * sd, 2 * _S_FLOOR)
    base = _pack(w1, m, tau, s_small)
    wide = _pack(w1, m, 0.5 * tau + _TAU_FLOOR, max(0.5 * sd, 2 * _S_FLOOR))
    jitter = base + rng.normal(0.0, [0.5, 0.5, 0.5, 0.25, 0.25, 0.5])
    return [base, wide, jitter]


def fit_latent_tanh_mixture(samples, rng: np.random.Generator, *, bins: int = 128,
                            restarts: int = 3, maxiter: int = 300) -> LatentTanhMixture:
    """Maximum-likelihood latent tanh mixture (App. C) with analytic gradients (BFGS).

    The likelihood is that of a weighted histogram of ``bins`` equal-count bins (represented by their
    means); starts are the EM start, a wide-noise start and jittered copies (``restarts`` in all); the
    best optimum wins. ``rng`` only drives EM initialisation and the jitter.
    """
    from scipy.optimize import minimize  # here: scipy.optimize is a slow import, needed by this fit only

    x = v.finite_array("samples", samples, ndim=1)
    if x.size < 10:
        raise InvalidParameterError("samples", "at least 10 values to fit a two-component mixture", x.size)
    v.generator("rng", rng)
    restarts = v.integer("restarts", restarts, minimum=1)
    t_bins, counts = _histogram(x, bins)
    edges = _cell_edges(x, bins)
    objective = _BinnedObjective(t_bins, counts, edges)
    starts = _starts(x, rng)
    while len(starts) < restarts:
        starts.append(starts[0] + rng.normal(0.0, [0.5, 0.5, 0.5, 0.25, 0.25, 0.5]))
    # every start for a few iterations, then the most promising one to convergence
    best = None
    for theta0 in starts[:restarts]:
        f0, _ = objective(theta0)
        if not np.isfinite(f0):
            continue
        res = minimize(objective, theta0, jac=True, method="BFGS", options={"maxiter": 25, "gtol": 1e-5})
        if best is None or res.fun < best.fun:
            best = res
    if best is not None and not best.success:
        nit = best.nit
        best = minimize(objective, best.x, jac=True, method="BFGS", options={"maxiter": maxiter, "gtol": 1e-5})
        best.nit += nit
    if best is None:   # statistics far beyond the tanh model's scale (LiRA at sigma = 1e16: red team 26)
        raise NumericalError(f"the paper's LiRA density (seed 000, App. C: a latent tanh mixture) has no finite "
                             f"likelihood at any start for these statistics (|values| up to {np.max(np.abs(x)):.3g}); "
                             "at this setting use the exact attack (privgp audit lira --attack exact) or a smaller "
                             "sigma")
    # refine the cells to the fitted noise scale and polish on the refined model (<= 2 rounds)
    nit = int(best.nit)
    for _ in range(2):
        w, m, tau, s = _unpack(best.x)
        q, _ = _latent_cell_masses(objective.phi_e, w, m, tau)
        refined = _refine_edges(edges, s, q)
        if refined.size == edges.size:
            break
        edges = refined
        objective = _BinnedObjective(t_bins, counts, edges)
        best = minimize(objective, best.x, jac=True, method="BFGS", options={"maxiter": maxiter, "gtol": 1e-5})
        nit += int(best.nit)
        if _unpack(best.x)[3] > 0.7 * s:
            break
    best.nit = nit
    w, m, tau, s = _unpack(best.x)
    return LatentTanhMixture(weights=w, means=m, taus=tau, noise=float(s), edges=edges, nll=float(best.fun),
                             iterations=int(best.nit))


def safe_log(x):
    """log x, with x floored at 1e-300 (a finite score for a zero statistic)."""
    return np.log(np.maximum(np.asarray(x, float), 1e-300))
