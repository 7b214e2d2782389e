"""The membership game of seed 000, sec. 4 and App. C.

A dataset D of n points on Omega_X = [0, 1] with responses

    y = (1 - M_xi) f_step(x) + xi,   xi ~ U[-M_xi, M_xi],   f_step(x) = -1 if x < 1/2 else +1,

is fitted by a GP with the exponential kernel exp(-|x - x'| / l), effective ridge r and scale sigma
(seed 000, sec. 2). The mechanism releases L posterior sample paths; the adversary sees their values
at the target location x0 (App. C, eq. 21):

    f_D^(l)(x0) = mu_D(x0) + sigma sqrt(v_D(x0)) Z_l,   Z_l ~ N(0, 1),   l = 1..L.

Hypotheses: *in* (member) -- D holds the target z0 = (x0, y0) plus n - 1 fresh points; *out* -- D holds
n fresh points. Covariates are i.i.d. uniform on [0, 1] (``"uniform"``, the paper) or stratified,
floor(n/2) on [0, 1/2) and the rest on [1/2, 1] with the target taking one slot of the right half
(``"stratified"``, what the published scripts did, docs/notes/seed000_published_scripts.md, sec. 1.2).

Sufficient statistics. The L released values are i.i.d. N(mu0, sigma^2 v0); their joint density
depends on them only through

    f_hat = mean_l f^(l)(x0)  ~ N(mu0, sigma^2 v0 / L),
    v_hat = sum_l (f^(l)(x0) - f_hat)^2 / (L sigma^2)  ~ v0 chi^2_{L-1} / L,   independent of f_hat,

so :func:`release_statistics` samples (f_hat, v_hat) directly, O(1) in L (exact in distribution; the
attacks of :mod:`.attacks` -- including the likelihood ratio of all L values -- only need these).
:func:`release_values` draws the L values themselves (used to check the shortcut).

sigma = inf is the covariance-only limit (sec. 4): the released object is the centred, normalised draw
(f_D - mu_D) / sigma ~ GP(0, k_D), i.e. values sqrt(v0) Z_l; f_hat and v_hat are then computed with
mean 0 and scale 1.

Why the game is covered by the certificate: coupling the out-dataset's extra fresh point with the
target (replace z0 by it) makes every (in, out) pair of datasets replace-one neighbours of size n,
both on [0, 1] with |y| <= 1 = M_Y; an (epsilon, delta)-DP mechanism therefore satisfies
TPR <= e^epsilon FPR + delta for every test, also against these mixtures.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import validation as v
from ...errors import InvalidParameterError
from ...models.gp import batched_mean_var
from ...models.kernels import Exponential

COVARIATES = ("uniform", "stratified")


@dataclass(frozen=True)
class MembershipGame:
    """One setting of the membership game (defaults: the paper's n = 10, x0 = 1/2, M_xi = 0, l = 1).

    ``y0=None`` gives the target the same noisy step-function response as every other point (the
    published scripts); a number fixes it (|y0| <= 1). With M_xi = 0 both are z0 = (x0, 1).
    """

    n: int = 10
    x0: float = 0.5
    lengthscale: float = 1.0
    r: float = 0.1
    sigma: float = 0.5
    M_xi: float = 0.0
    L: int = 1
    covariates: str = "uniform"
    y0: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "n", v.integer("n", self.n, minimum=2))
        x0 = v.nonnegative("x0", self.x0) + 0.0   # -0.0 recorded as 0.0 (as M_xi below)
        if x0 > 1:
            raise InvalidParameterError("x0", "in the domain [0, 1]", self.x0)
        object.__setattr__(self, "x0", x0)
        # scales within v.SCALE_RANGE, as a release's (sigma = 1e300 squared to inf, and the audits failed later on
        # NaN covariances or a mixture fit, naming internals: red team 26); sigma = inf is the covariance-only game
        object.__setattr__(self, "lengthscale", v.scale("lengthscale", self.lengthscale))
        object.__setattr__(self, "r", v.scale("r", self.r))
        sigma = v.positive("sigma", self.sigma, allow_inf=True)
        object.__setattr__(self, "sigma", sigma if math.isinf(sigma) else v.scale("sigma", sigma))
        # -0.0 passes the check, and rng.uniform(-M_xi, M_xi) then refused "high - low < 0" (red team 25): + 0.0 is +0.0
        m = v.nonnegative("M_xi", self.M_xi) + 0.0
        if m >= 1:
            raise InvalidParameterError("M_xi", "in [0, 1)", self.M_xi)
        object.__setattr__(self, "M_xi", m)
        object.__setattr__(self, "L", v.integer("L", self.L, minimum=1))
        if self.covariates not in COVARIATES:
            raise InvalidParameterError("covariates", f"one of {COVARIATES}", self.covariates)
        if self.y0 is not None:
            y0 = float(self.y0)
            if not (math.isfinite(y0) and abs(y0) <= 1.0):
                raise InvalidParameterError("y0", "in [-1, 1] (|y| <= M_Y = 1)", self.y0)
            object.__setattr__(self, "y0", y0)

    @property
    def kernel(self) -> Exponential:
        return Exponential(lengthscale=self.lengthscale)

    @property
    def covariance_only(self) -> bool:
        """sigma = inf: the centred normalised draw is released (sec. 4, covariance-only limit)."""
        return math.isinf(self.sigma)

    def replace(self, **changes) -> MembershipGame:
        from dataclasses import replace

        return replace(self, **changes)

    def certified_epsilon(self, delta: float, *, constants: str = "proven", conversion: str = "improved"):
        """Certified (epsilon, delta) of the release: Thm 3.1 with V_n from Prop. 3 and Delta_n from
        Lemma B.7 (1-D exponential kernel on [0, 1], kappa = exp(-1/l), M_Y = 1), L-fold composition."""
        from ...mechanisms.posterior_sample import epsilon_posterior_sampling

        return epsilon_posterior_sampling(self.n, self.r, self.sigma, delta, kernel="exponential",
                                          lengthscale=self.lengthscale, sensitivity="exp1d", L=self.L,
                                          M_Y=1.0, constants=constants, conversion=conversion)

    def describe(self) -> dict:
        return {"n": self.n, "x0": self.x0, "lengthscale": self.lengthscale, "r": self.r, "sigma": self.sigma,
                "M_xi": self.M_xi, "L": self.L, "covariates": self.covariates, "y0": self.y0}


@dataclass(frozen=True)
class Population:
    """Datasets drawn under one hypothesis: posterior mean/normalised variance at x0 and the release
    statistics (f_hat, v_hat) of one release per dataset (v_hat = 0 and unused when L = 1)."""

    member: bool
    mu0: np.ndarray
    v0: np.ndarray
    fhat: np.ndarray
    vhat: np.ndarray

    def __len__(self) -> int:
        return int(self.mu0.shape[0])


def step_response(game: MembershipGame, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """y = (1 - M_xi) f_step(x) + U[-M_xi, M_xi] (one noise draw per point, also when M_xi = 0)."""
    noise = rng.uniform(-game.M_xi, game.M_xi, size=np.shape(x))
    return (1.0 - game.M_xi) * np.where(x < 0.5, -1.0, 1.0) + noise


def sample_datasets(game: MembershipGame, member: bool, size: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``size`` datasets under the in (member) or out hypothesis: X, y of shape (size, n)."""
    size = v.integer("size", size, minimum=1)
    rng = v.generator("rng", rng)
    n, fresh = game.n, game.n - (1 if member else 0)
    if game.covariates == "uniform":
        x = rng.uniform(0.0, 1.0, size=(size, fresh))
    else:
        left = n // 2
        x = np.concatenate([rng.uniform(0.0, 0.5, size=(size, left)),
                            rng.uniform(0.5, 1.0, size=(size, fresh - left))], axis=1)
    y = step_response(game, x, rng)
    if member:
        y_target = step_response(game, np.full((size, 1), game.x0), rng) if game.y0 is None else \
            np.full((size, 1), game.y0)
        x = np.concatenate([np.full((size, 1), game.x0), x], axis=1)
        y = np.concatenate([y_target, y], axis=1)
    return x, y


def posterior_at_target(game: MembershipGame, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """mu_D(x0) and v_D(x0) = k_D(x0, x0) of each dataset (App. C), one batched solve."""
    mean, var = batched_mean_var(game.kernel, X, y, np.array([[game.x0]]), game.r)
    return mean[:, 0], var[:, 0]


def _center_scale(game: MembershipGame, mu0: np.ndarray) -> tuple[np.ndarray, float]:
    if game.covariance_only:
        return np.zeros_like(mu0), 1.0
    return mu0, game.sigma


def release_values(game: MembershipGame, mu0, v0, rng: np.random.Generator) -> np.ndarray:
    """The L released values at x0 of each dataset, shape (B, L) (normalised when sigma = inf)."""
    rng = v.generator("rng", rng)
    mu0, v0 = np.asarray(mu0, float), np.asarray(v0, float)
    center, scale = _center_scale(game, mu0)
    return center[:, None] + scale * np.sqrt(v0)[:, None] * rng.standard_normal((mu0.shape[0], game.L))


def statistics_of_values(game: MembershipGame, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f_hat, v_hat) of App. C from released values of shape (B, L)."""
    values = np.asarray(values, float)
    scale = 1.0 if game.covariance_only else game.sigma
    fhat = values.mean(axis=1)
    vhat = np.sum((values - fhat[:, None]) ** 2, axis=1) / (values.shape[1] * scale**2)
    return fhat, vhat


def release_statistics(game: MembershipGame, mu0, v0, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Exact draws of the sufficient statistics (f_hat, v_hat) of one L-path release per dataset:
    f_hat ~ N(mu0, sigma^2 v0 / L), v_hat ~ v0 chi^2_{L-1} / L, independent (0 when L = 1)."""
    rng = v.generator("rng", rng)
    mu0, v0 = np.asarray(mu0, float), np.asarray(v0, float)
    center, scale = _center_scale(game, mu0)
    L = game.L
    fhat = center + scale * np.sqrt(v0 / L) * rng.standard_normal(mu0.shape[0])
    vhat = v0 * rng.chisquare(L - 1, size=mu0.shape[0]) / L if L > 1 else np.zeros_like(v0)
    return fhat, vhat


def sample_population(game: MembershipGame, member: bool, size: int, rng: np.random.Generator) -> Population:
    """Datasets, their posteriors at x0 and one release each, all from ``rng``."""
    X, y = sample_datasets(game, member, size, rng)
    mu0, v0 = posterior_at_target(game, X, y)
    fhat, vhat = release_statistics(game, mu0, v0, rng)
    return Population(member=bool(member), mu0=mu0, v0=v0, fhat=fhat, vhat=vhat)


@dataclass(frozen=True)
class GameData:
    """Shadow (attack fitting / threshold selection) and evaluation populations, in and out."""

    game: MembershipGame
    shadow_in: Population
    shadow_out: Population
    eval_in: Population
    eval_out: Population


MIN_SHADOW = 100
MIN_EVAL = 20


def play(game: MembershipGame, n_shadow: int, n_eval: int, seed) -> tuple[GameData, np.random.Generator]:
    """Draw the shadow and evaluation populations with independent streams.

    ``seed`` (an int or a numpy SeedSequence) is split with ``SeedSequence.spawn`` into five
    independent streams: shadow-in, shadow-out, eval-in, eval-out and the attack's own stream (returned
    as a Generator for optimiser restarts), so attack-fitting randomness never perturbs the data.
    """
    n_shadow = v.integer("n_shadow", n_shadow, minimum=MIN_SHADOW)   # datasets per hypothesis
    n_eval = v.integer("n_eval", n_eval, minimum=MIN_EVAL)
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(v.integer("seed", seed, minimum=0))
    s_in, s_out, e_in, e_out, attack = (np.random.default_rng(s) for s in ss.spawn(5))
    data = GameData(game=game,
                    shadow_in=sample_population(game, True, n_shadow, s_in),
                    shadow_out=sample_population(game, False, n_shadow, s_out),
                    eval_in=sample_population(game, True, n_eval, e_in),
                    eval_out=sample_population(game, False, n_eval, e_out))
    return data, attack
