"""Membership-inference attacks on the game of :mod:`.game` (seed 000, sec. 4 and App. C).

``paper``  The published LiRA-style attack (App. C): densities of f_hat fitted by a latent
           tanh-transformed two-component Gaussian mixture (f_hat = tanh(phi / 2) + eta,
           phi ~ sum_j w_j N(m_j, tau_j^2), eta ~ N(0, s^2)), densities of log v_hat by a
           two-component Gaussian mixture, score S = S_f + S_v (S_f alone for L = 1).
``exact``  The likelihood ratio of all L released values under the in and out hypotheses, each a
           mixture of Gaussians N(mu_D(x0), sigma^2 v_D(x0)) over datasets D, estimated by the
           shadow datasets' closed-form (mu0, v0). With the true mixtures this is the most powerful
           test of the threat model (Neyman-Pearson); the shadow mixture is its plug-in estimate.
``benchmark``  The non-private benchmark of Fig. 3: the paper's density models fitted to the exact
           posterior mean and variance (mu0, v0) at x0 (the L -> infinity limit of the release); the
           latent model for mu0 is then noise-free (s = 0): a two-component mixture for 2 artanh(mu0).

The density models (the latent tanh mixture, one-dimensional Gaussian mixtures) live in
:mod:`.densities`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import validation as v
from ...errors import InvalidParameterError
from .densities import (
    U_MAX,
    GaussianMixture1D,
    LatentTanhMixture,
    TanhGaussianMixture,
    fit_gaussian_mixture_1d_binned,
    fit_latent_tanh_mixture,
    safe_log,
)
from .game import GameData, MembershipGame, Population

ATTACKS = ("paper", "exact", "benchmark")


@dataclass(frozen=True)
class PaperAttack:
    """The fitted attack of App. C (``use_exact_statistics`` = the non-private benchmark)."""

    L: int
    f_in: LatentTanhMixture | TanhGaussianMixture
    f_out: LatentTanhMixture | TanhGaussianMixture
    v_in: GaussianMixture1D | None
    v_out: GaussianMixture1D | None
    use_exact_statistics: bool = False
    name: str = "paper"

    def _stats(self, pop: Population):
        if self.use_exact_statistics:
            return pop.mu0, pop.v0
        return pop.fhat, pop.vhat

    def score_parts(self, pop: Population) -> tuple[np.ndarray, np.ndarray]:
        """(S_f, S_v) of App. C; S_v = 0 when L = 1."""
        f, vv = self._stats(pop)
        s_f = self.f_in.logpdf(f) - self.f_out.logpdf(f)
        if self.v_in is None or self.v_out is None:
            return s_f, np.zeros_like(s_f)
        lv = safe_log(vv)
        return s_f, self.v_in.logpdf(lv) - self.v_out.logpdf(lv)

    def score(self, pop: Population) -> np.ndarray:
        s_f, s_v = self.score_parts(pop)
        return s_f + s_v


def fit_paper_attack(data: GameData, rng: np.random.Generator, *, exact_statistics: bool = False,
                     restarts: int = 3, bins: int = 128) -> PaperAttack:
    """Fit the App. C densities on the shadow populations (or, for the benchmark, on (mu0, v0))."""
    game = data.game
    use_v = exact_statistics or game.L > 1
    pops = (data.shadow_in, data.shadow_out)
    fits: list[LatentTanhMixture | TanhGaussianMixture]
    if exact_statistics:
        fits = [TanhGaussianMixture(fit_gaussian_mixture_1d_binned(
            2.0 * np.arctanh(np.clip(p.mu0, -U_MAX, U_MAX)))) for p in pops]
    else:
        fits = [fit_latent_tanh_mixture(p.fhat, rng, restarts=restarts, bins=bins) for p in pops]
    vfits: list[GaussianMixture1D | None] = [None, None]
    if use_v:
        vfits = [fit_gaussian_mixture_1d_binned(safe_log(p.v0 if exact_statistics else p.vhat)) for p in pops]
    return PaperAttack(L=game.L, f_in=fits[0], f_out=fits[1], v_in=vfits[0], v_out=vfits[1],
                       use_exact_statistics=exact_statistics, name="benchmark" if exact_statistics else "paper")


@dataclass(frozen=True)
class ExactAttack:
    """Likelihood ratio of the L released values under the shadow mixtures of N(mu0, sigma^2 v0).

    Per component (mu, v) the log-likelihood of the L values is, up to terms common to all components,
    -(L/2) log v - L ((f_hat - mu)^2 + sigma^2 v_hat) / (2 sigma^2 v) (f_hat, v_hat sufficient), i.e. an
    inner product of (1, f_hat, f_hat^2, v_hat) with per-component coefficients; the score is
    log mean_in exp(.) - log mean_out exp(.), evaluated blockwise (exact, no binning of the shadows).
    """

    game: MembershipGame
    coef_in: np.ndarray = field(repr=False)     # (4, K_in)
    coef_out: np.ndarray = field(repr=False)    # (4, K_out)
    name: str = "exact"

    @staticmethod
    def coefficients(game: MembershipGame, mu0, v0) -> np.ndarray:
        L = game.L
        scale2 = 1.0 if game.covariance_only else game.sigma * game.sigma   # inf beyond 1.3e154 (** raised OverflowError)
        mu = np.zeros_like(mu0) if game.covariance_only else np.asarray(mu0, float)
        v0 = np.asarray(v0, float)
        if np.any(v0 <= 0):
            raise InvalidParameterError("v0", "> 0 (a non-degenerate posterior at x0)", float(np.min(v0)))
        sv = scale2 * v0
        with np.errstate(over="ignore", divide="ignore"):
            finite = bool(np.all(np.isfinite(sv) & np.isfinite(1.0 / sv)))
        if not finite:   # the release's variance sigma^2 v_D(x0) (v_D(x0) <= 1 shrinks with r) or its inverse overflows
            raise InvalidParameterError("sigma", "small enough for the exact attack that sigma^2 v_D(x0), the release's "
                                        "variance at x0, and its inverse are in the float range (sigma < 1.3e154, and "
                                        "r not so small that v_D(x0) underflows)", game.sigma)
        return np.stack([-0.5 * L * np.log(v0) - 0.5 * L * mu * mu / sv, L * mu / sv,
                         -0.5 * L / sv * np.ones_like(mu), -0.5 * L / v0])

    def _log_mean(self, F, coef, exclude=None, block: int = 256, top: int = 16, margin: float = 60.0):
        """log mean_k exp(F[i] @ coef[:, k]) for each row i (``exclude[i]``: a component left out).

        Rows are processed in blocks of consecutive f_hat (sorted). For a block, each component's
        log-likelihood is bounded above over the whole block (U_k, from the distance of mu_k to the
        block's f_hat range and its smallest v_hat); a lower bound LB on every row's largest term comes
        from the ``top`` components with the largest U_k; components with U_k < LB - ``margin`` are
        dropped (together they change the sum by a relative < K e^-margin, below double precision).
        The remaining exponentials are taken in float32 after subtracting the row maximum in float64
        (relative error < 1e-6 on the mean).
        """
        K = coef.shape[1]
        order = np.argsort(F[:, 1], kind="stable")
        Fs = F[order]
        ex = None if exclude is None else np.asarray(exclude)[order]
        a, b, c, d = coef
        mu = -b / (2.0 * c)                       # component means (0 in the covariance-only case)
        logv_term = a - c * mu * mu               # -(L/2) log v
        out = np.empty(F.shape[0])
        for i in range(0, Fs.shape[0], block):
            Fb = Fs[i:i + block]
            lo, hi, vmin = Fb[0, 1], Fb[-1, 1], Fb[:, 3].min()
            dist = np.maximum(0.0, np.maximum(lo - mu, mu - hi))
            U = logv_term + c * dist * dist + d * vmin
            cand = np.argpartition(U, K - top)[K - top:] if K > top else np.arange(K)
            Mc = Fb @ coef[:, cand]
            if ex is not None:
                Mc[ex[i:i + block, None] == cand[None, :]] = -np.inf
            LB = Mc.max(axis=1).min()
            keep = np.flatnonzero(U >= LB - margin)
            M = Fb @ coef[:, keep]
            if ex is not None:
                pos = np.searchsorted(keep, ex[i:i + block])
                hit = (pos < keep.size) & (keep[np.minimum(pos, keep.size - 1)] == ex[i:i + block])
                M[np.flatnonzero(hit), pos[hit]] = -np.inf
            mx = M.max(axis=1)
            M -= mx[:, None]
            E = M.astype(np.float32)
            np.exp(E, out=E)
            out[i:i + block] = mx + np.log(E.sum(axis=1, dtype=np.float64))
        res = np.empty_like(out)
        res[order] = out
        return res - np.log(K - (0 if exclude is None else 1))

    @staticmethod
    def _features(pop: Population) -> np.ndarray:
        f = pop.fhat
        return np.stack([np.ones_like(f), f, f * f, pop.vhat], axis=1)

    def score(self, pop: Population, *, leave_out: str | None = None) -> np.ndarray:
        """Log-likelihood ratio; ``leave_out='in'|'out'`` drops each shadow release's own component
        (for scoring the shadow populations themselves, leave-one-out)."""
        F = self._features(pop)
        idx = np.arange(F.shape[0])
        lin = self._log_mean(F, self.coef_in, exclude=idx if leave_out == "in" else None)
        lout = self._log_mean(F, self.coef_out, exclude=idx if leave_out == "out" else None)
        return lin - lout


def fit_exact_attack(data: GameData) -> ExactAttack:
    g = data.game
    return ExactAttack(game=g, coef_in=ExactAttack.coefficients(g, data.shadow_in.mu0, data.shadow_in.v0),
                       coef_out=ExactAttack.coefficients(g, data.shadow_out.mu0, data.shadow_out.v0))


@dataclass(frozen=True)
class FittedAttack:
    """A fitted attack with its scores on the shadow populations (for honest threshold selection)."""

    name: str
    model: PaperAttack | ExactAttack
    shadow_in_scores: np.ndarray = field(repr=False)
    shadow_out_scores: np.ndarray = field(repr=False)

    def score(self, pop: Population) -> np.ndarray:
        return self.model.score(pop)


def fit_attack(name: str, data: GameData, rng: np.random.Generator, *, n_select: int = 5000,
               **options) -> FittedAttack:
    """Fit ``name`` in :data:`ATTACKS` on the shadow populations of ``data``.

    Also scores the first ``n_select`` shadow releases of each hypothesis, for choosing the threshold
    of the epsilon lower bound on data independent of the evaluation sets: in-sample for the
    parametric ``paper``/``benchmark`` densities (6 + 6 parameters per hypothesis), leave-one-out for
    ``exact`` (whose mixture holds each shadow dataset itself).
    """
    if name not in ATTACKS:
        raise InvalidParameterError("attack", f"one of {ATTACKS}", name)
    rng = v.generator("rng", rng)
    n_select = v.integer("n_select", n_select, minimum=1)
    sel_in, sel_out = (_head(p, n_select) for p in (data.shadow_in, data.shadow_out))
    model: PaperAttack | ExactAttack
    if name == "exact":
        exact = fit_exact_attack(data)
        s_in = exact.score(sel_in, leave_out="in")
        s_out = exact.score(sel_out, leave_out="out")
        model = exact
    else:
        paper = fit_paper_attack(data, rng, exact_statistics=(name == "benchmark"), **options)
        s_in, s_out = paper.score(sel_in), paper.score(sel_out)
        model = paper
    return FittedAttack(name=name, model=model, shadow_in_scores=s_in, shadow_out_scores=s_out)


def _head(pop: Population, n: int) -> Population:
    """The first n datasets of a population (i.i.d., so a random subset)."""
    return Population(member=pop.member, mu0=pop.mu0[:n], v0=pop.v0[:n], fhat=pop.fhat[:n], vhat=pop.vhat[:n])
