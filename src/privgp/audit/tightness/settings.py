"""Tightness audit: how much slack the certified RDP bound has on a membership-game setting.

For the release of the game (1-D exponential kernel with lengthscale l on [0, 1], |y| <= 1, n points,
ridge r, scale sigma, L paths) and an order alpha, an adversarial search over replace-one neighbouring
datasets (:func:`privgp.audit.divergence.worst_case_neighbours`: core inputs/responses, the differing
point on both sides and extra test inputs) finds the largest *exact* Rényi divergence of eq. (12)
between the two posteriors; it is reported next to the certified bound at the same alpha (Thm 3.1
with V_n from Prop. 3 and Delta_n from Lemma B.7). The L paths are i.i.d. given the data, so both the
exact divergence and the bound of the L-path release are L times the single-path values (the exact
one by tensorisation of Rényi divergences, the bound by eq. (3)); their ratio does not depend on L.

found <= certified must hold (a found value above the bound would refute the certificate); the
ratio found / certified says how tight the certificate is, separately for the mean and covariance parts.
The search is a lower estimate of the true supremum (a local search from random starts), so the slack
it reports is an upper estimate of the true slack.

LOOD column (seed 003): the largest one-path Rényi LOOD at alpha found by record optimisation on
datasets of the game (:func:`privgp.audit.lood.release.game_lood`: D = n - 1 points of the game,
S = (x, y) optimised, the query S itself, which is the maximum over query sets), both directions.
It is add/remove-one distinguishability, a different neighbour relation from the certificate's
replace-one: reported next to the certified bound for scale, not as a check of it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import validation as v
from ...models.domain import Box
from ..lood.release import GameLood, game_lood
from ..membership.game import MembershipGame
from .neighbours import WorstCaseNeighbours, WorstMeanShift, exact_neighbour_parts, worst_case_neighbours
from .pair_attack import PairAttackResult


@dataclass(frozen=True)
class TightnessResult:
    game: MembershipGame
    alpha: float
    alpha_source: str              # "given" or "certificate" (the order at which the certified epsilon is attained)
    found: float                   # exact D_alpha of the worst pair found, one path
    found_mean: float
    found_cov: float
    certified: float               # certified single-path RDP bound at alpha
    certified_mean: float
    certified_cov: float
    epsilon_certified: float       # certified epsilon of the L-path release at delta
    delta: float
    constants: str
    evaluations: int
    worst: WorstCaseNeighbours
    lood: GameLood | None = None   # seed-003 LOOD column (one path); None when not computed
    #: whether found* are the worst pair's divergence recomputed in 60-digit arithmetic
    #: (:func:`~privgp.audit.tightness.neighbours.exact_neighbour_parts`); False: the search's float64 values
    found_exact: bool = False
    found_float: float = float("nan")   # the search's float64 value at the worst pair

    @property
    def ratio(self) -> float:
        """found / certified (<= 1 when the certificate holds; 1 = tight)."""
        return self.found / self.certified if self.certified > 0 else float("nan")

    def to_dict(self) -> dict:
        L = self.game.L
        w = self.worst
        return {**self.game.describe(), "alpha": self.alpha, "alpha_source": self.alpha_source,
                "rdp_found_one_path": self.found, "rdp_found_mean_part": self.found_mean,
                "rdp_found_cov_part": self.found_cov, "rdp_certified_one_path": self.certified,
                "rdp_certified_mean_part": self.certified_mean, "rdp_certified_cov_part": self.certified_cov,
                "rdp_found_L_paths": L * self.found, "rdp_certified_L_paths": L * self.certified,
                "ratio_found_to_certified": self.ratio,
                "mean_ratio": self.found_mean / self.certified_mean if self.certified_mean > 0 else None,
                "cov_ratio": self.found_cov / self.certified_cov if self.certified_cov > 0 else None,
                "found_le_certified": bool(self.found <= self.certified * (1 + 1e-9)),
                "found_recomputed_exactly": self.found_exact, "rdp_found_one_path_float64": self.found_float,
                "epsilon_certified": self.epsilon_certified, "delta": self.delta, "constants": self.constants,
                "evaluations": self.evaluations,
                "worst_pair": {"X_core": w.pair.X_core.ravel(), "y_core": w.pair.y_core, "x": w.pair.x.ravel(),
                               "y": w.pair.y, "x_prime": w.pair.x_prime.ravel(), "y_prime": w.pair.y_prime},
                "note": ("worst case over all replace-one neighbours on [0, 1] with |y| <= 1; x0, M_xi and the "
                         "covariate design of the game do not enter"),
                **self._lood_dict()}

    def _lood_dict(self) -> dict:
        if self.lood is None:
            return {}
        c = self.certified
        ratio = lambda x: x / c if c > 0 else None  # noqa: E731
        return {**self.lood.to_dict(), "lood_renyi_forward_over_certified": ratio(self.lood.forward),
                "lood_renyi_reverse_over_certified": ratio(self.lood.reverse)}


def tightness_bytes(n: int, test_points: int) -> int:
    """Estimated peak bytes of the neighbour search: about sixteen (m x m) float64 matrices (Gram matrices, both
    posteriors' covariances, their eigendecompositions, the optimiser's copies) for m = n + test_points + 2."""
    m = int(n) + int(test_points) + 2
    return 8 * 16 * m * m


def audit_tightness(game: MembershipGame, *, alpha: float | None = None, delta: float = 0.05,
                    rng: np.random.Generator, restarts: int = 6, test_points: int = 2,
                    constants: str = "proven", lood_datasets: int = 6,
                    memory_limit: float | None = None) -> TightnessResult:
    """Largest exact divergence over neighbouring datasets found at ``alpha`` (default: the order of
    the certified epsilon at ``delta``), beside the certified bound at the same alpha; with
    ``lood_datasets`` > 0 also the LOOD column (seed 003) from that many datasets of the game.
    ``memory_limit`` (bytes; None: unchecked): refuse, before the search, one estimated to need more."""
    rng = v.generator("rng", rng)
    delta = v.open_interval("delta", delta, 0.0, 1.0)
    lood_datasets = v.integer("lood_datasets", lood_datasets, minimum=0)
    test_points = v.integer("test_points", test_points, minimum=0)
    if memory_limit is not None:   # n = 1e5 ended in numpy's memory error (74.5 GiB; red team 25)
        param, value = ("n", game.n) if game.n >= test_points else ("test_points", test_points)
        v.check_memory(f"neighbour search over {game.n} records and {test_points} test points",
                       tightness_bytes(game.n, test_points), v.positive("memory_limit", memory_limit),
                       "use a smaller n or fewer test points", param=param, value=value)
    cert = game.certified_epsilon(delta, constants=constants)
    if alpha is None:
        alpha, source = float(cert.alpha), "certificate"
    else:
        alpha, source = v.greater_than("alpha", alpha, 1.0), "given"
    w = worst_case_neighbours(alpha, n=game.n, kernel=game.kernel, domain=Box.unit(1), r=game.r, sigma=game.sigma,
                              eta=0.0, M_Y=1.0, rng=rng, restarts=restarts, test_points=test_points,
                              sensitivity="exp1d", constants=constants)
    lood = game_lood(game, alpha, rng=rng, datasets=lood_datasets) if lood_datasets else None
    # the worst pair's divergence again, exactly: float64 loses the difference of nearly equal posteriors (large r)
    exact = exact_neighbour_parts(game.kernel, w.pair, w.XT, r=game.r, sigma=game.sigma, alpha=alpha)
    found = (w.divergence, w.mean_part, w.cov_part) if exact is None else exact
    return TightnessResult(game=game, alpha=alpha, alpha_source=source, found=found[0], found_mean=found[1],
                           found_cov=found[2], certified=w.bound, certified_mean=w.mean_bound,
                           certified_cov=w.cov_bound, epsilon_certified=float(cert.epsilon), delta=delta,
                           constants=constants, evaluations=w.evaluations, worst=w, lood=lood,
                           found_exact=exact is not None, found_float=w.divergence)


# ---------------------------------------------------------------------------------------------------------
# a tightness row for any kernel and dimension (the tightness table of the results page)


@dataclass(frozen=True)
class SettingTightness:
    """How loose each part of the certificate is on one setting (all numbers for the L-path release
    unless named per path).

    ``epsilon_certified``: the certificate (proven constants) at delta, attained at ``alpha``;
    ``epsilon_pair``: the same conversion applied to the exact Renyi curve (L D_alpha(Pi_D || Pi_D'), the
    direction the search maximised, minimised over alpha: :func:`~privgp.audit.tightness.neighbours.pair_epsilon`)
    of the worst neighbouring pair found at ``alpha``; ``lower``: the likelihood-ratio test on
    that pair (an empirical LOWER bound with confidence); ``mean`` / ``cov``: the largest mean / covariance
    part of the exact divergence found at ``alpha`` against the bound's mean / covariance term;
    ``shift``: the largest mean shift ||mu_D - mu_D'||_{H_-} found against the proven and the published
    Delta_n; ``lira``: for the 1-D exponential kernel, the membership game's attacks (paper, exact).
    """

    setting: dict
    delta: float
    alpha: float
    epsilon_certified: float
    epsilon_published: float
    epsilon_pair: float
    alpha_pair: float
    worst: WorstCaseNeighbours
    mean: WorstCaseNeighbours
    cov: WorstCaseNeighbours
    shift: WorstMeanShift
    lower: PairAttackResult
    lira: dict
    seconds: float

    def to_dict(self) -> dict:
        lb = self.lower.lower
        out = {**self.setting, "delta": self.delta, "alpha": self.alpha,
               "epsilon_certified": self.epsilon_certified, "epsilon_published_not_covered": self.epsilon_published,
               "epsilon_pair": self.epsilon_pair, "alpha_pair": self.alpha_pair,
               "epsilon_lr_lower": lb.epsilon, "epsilon_lr_point": _point_epsilon(lb),
               "lr_significant": lb.significant, "lr_confidence": lb.confidence,
               "rdp_found": self.worst.divergence, "rdp_bound": self.worst.bound,
               "mean_found": self.mean.mean_part, "mean_bound": self.mean.mean_bound,
               "cov_found": self.cov.cov_part, "cov_bound": self.cov.cov_bound,
               "Delta_found": self.shift.norm, "Delta_proven": self.shift.Delta_proven,
               "Delta_published": self.shift.Delta_published,
               "ratio_epsilon_pair": self.epsilon_pair / self.epsilon_certified,
               "ratio_lower": lb.epsilon / self.epsilon_certified,
               "ratio_rdp": self.worst.divergence / self.worst.bound,
               "ratio_mean": self.mean.mean_part / self.mean.mean_bound if self.mean.mean_bound > 0 else None,
               "ratio_cov": self.cov.cov_part / self.cov.cov_bound if self.cov.cov_bound > 0 else None,
               "ratio_Delta_proven": self.shift.ratio_proven, "ratio_Delta_published": self.shift.ratio_published,
               "seconds": self.seconds}
        for name, res in self.lira.items():
            out[f"lira_{name}_lower"] = res.lower.epsilon
            out[f"lira_{name}_point"] = _point_epsilon(res.lower)
            out[f"lira_{name}_auc"] = res.auc
        return out


def _point_epsilon(lb) -> float:
    """The epsilon the measured rates give at the chosen threshold without the confidence correction (an
    estimate, not a bound): max(log((TPR - delta)/FPR), log((1 - FPR - delta)/(1 - TPR))), 0 if neither
    is positive or defined."""
    import math

    vals = []
    if lb.tpr - lb.delta > 0 and lb.fpr > 0:
        vals.append(math.log((lb.tpr - lb.delta) / lb.fpr))
    if 1 - lb.fpr - lb.delta > 0 and lb.tpr < 1:
        vals.append(math.log((1 - lb.fpr - lb.delta) / (1 - lb.tpr)))
    return max([0.0] + vals) if vals else (math.inf if lb.fpr == 0 and lb.tpr > lb.delta else 0.0)


def audit_setting(*, kernel, domain: Box, n: int, r: float, sigma: float, L: int = 1, delta: float,
                  sensitivity: str = "generic", rng: np.random.Generator, restarts: int = 4, test_points: int = 2,
                  shift_restarts: int = 4, n_samples: int = 100_000, lira_size: int = 10_000, maxiter: int = 150,
                  label: str = "") -> SettingTightness:
    """Every column of the tightness table for one setting (see :class:`SettingTightness`)."""
    import time

    from ...mechanisms.posterior_sample import epsilon_posterior_sampling
    from ..membership.lira import audit_lira
    from .neighbours import neighbour_posteriors, pair_epsilon, worst_case_mean_shift
    from .pair_attack import likelihood_ratio_lower_bound

    t0 = time.perf_counter()
    rng = v.generator("rng", rng)
    delta = v.open_interval("delta", delta, 0.0, 1.0)
    opts = dict(kernel=kernel, domain=domain, L=L, sensitivity=sensitivity)
    cert = epsilon_posterior_sampling(n, r, sigma, delta, **opts).item()
    pub = epsilon_posterior_sampling(n, r, sigma, delta, constants="published", **opts).item()
    alpha = cert["alpha"]
    search = dict(n=n, kernel=kernel, domain=domain, r=r, sigma=sigma, rng=rng, restarts=restarts,
                  test_points=test_points, sensitivity=sensitivity, maxiter=maxiter)
    worst = worst_case_neighbours(alpha, objective="total", **search)
    mean = worst_case_neighbours(alpha, objective="mean", **search)
    cov = worst_case_neighbours(alpha, objective="cov", **search)
    p = worst.pair
    m1, S1, m2, S2 = neighbour_posteriors(kernel, p.X_core, p.y_core, p.x, p.y, p.x_prime, p.y_prime, worst.XT,
                                          r=r, sigma=sigma)
    # the direction the search maximised (D first), L draws; the continuous order search of the accountant
    eps_pair, a_pair = pair_epsilon(m1, S1, m2, S2, delta, symmetric=False, L=L)
    shift = worst_case_mean_shift(n=n, kernel=kernel, domain=domain, r=r, rng=rng, restarts=shift_restarts,
                                  sensitivity=sensitivity, maxiter=maxiter)
    lower = likelihood_ratio_lower_bound(m1, S1, m2, S2, L=L, delta=delta, rng=rng, n_select=n_samples,
                                         n_eval=n_samples)
    lira = {}
    if kernel.name == "exponential" and domain.dim == 1 and lira_size:
        game = MembershipGame(n=n, lengthscale=kernel.lengthscale, r=r, sigma=sigma, L=L)
        lira = audit_lira(game, attacks=("paper", "exact"), n_shadow=lira_size, n_eval=lira_size, delta=delta,
                          seed=int(rng.integers(2**31)))
    setting = {"label": label, "kernel": kernel.name, "lengthscale": getattr(kernel, "lengthscale", None),
               "dim": domain.dim, "n": n, "r": r, "sigma": sigma, "L": L, "sensitivity": sensitivity,
               "lemma_Delta": cert["lemma_Delta"]}
    return SettingTightness(setting=setting, delta=delta, alpha=alpha, epsilon_certified=cert["epsilon"],
                            epsilon_published=pub["epsilon"], epsilon_pair=eps_pair, alpha_pair=a_pair, worst=worst,
                            mean=mean, cov=cov, shift=shift, lower=lower, lira=lira,
                            seconds=time.perf_counter() - t0)
