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
datasets of the game (:func:`privgp.audit.lood_release.game_lood`: D = n - 1 points of the game,
S = (x, y) optimised, the query S itself, which is the maximum over query sets), both directions.
It is add/remove-one distinguishability, a different neighbour relation from the certificate's
replace-one: reported next to the certified bound for scale, not as a check of it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validation as v
from ..domain import Box
from .game import MembershipGame
from .lood_release import GameLood, game_lood
from .neighbours import WorstCaseNeighbours, worst_case_neighbours


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

    @property
    def ratio(self) -> float:
        """found / certified (<= 1 when the certificate holds; 1 = tight)."""
        return self.found / self.certified if self.certified > 0 else float("nan")

    def as_dict(self) -> dict:
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
                "epsilon_certified": self.epsilon_certified, "delta": self.delta, "constants": self.constants,
                "evaluations": self.evaluations,
                "worst_pair": {"X_core": w.X_core.ravel(), "y_core": w.y_core, "x": w.x.ravel(), "y": w.y,
                               "x_prime": w.x_prime.ravel(), "y_prime": w.y_prime},
                "note": ("worst case over all replace-one neighbours on [0, 1] with |y| <= 1; x0, m_xi and the "
                         "covariate design of the game do not enter"),
                **self._lood_dict()}

    def _lood_dict(self) -> dict:
        if self.lood is None:
            return {}
        c = self.certified
        ratio = lambda x: x / c if c > 0 else None  # noqa: E731
        return {**self.lood.as_dict(), "lood_renyi_forward_over_certified": ratio(self.lood.forward),
                "lood_renyi_reverse_over_certified": ratio(self.lood.reverse)}


def audit_tightness(game: MembershipGame, *, alpha: float | None = None, delta: float = 0.05,
                    rng: np.random.Generator, restarts: int = 6, test_points: int = 2,
                    constants: str = "proven", lood_datasets: int = 6) -> TightnessResult:
    """Largest exact divergence over neighbouring datasets found at ``alpha`` (default: the order of
    the certified epsilon at ``delta``), beside the certified bound at the same alpha; with
    ``lood_datasets`` > 0 also the LOOD column (seed 003) from that many datasets of the game."""
    rng = v.generator("rng", rng)
    delta = v.open_interval("delta", delta, 0.0, 1.0)
    lood_datasets = v.integer("lood_datasets", lood_datasets, minimum=0)
    cert = game.certified_epsilon(delta, constants=constants)
    if alpha is None:
        alpha, source = float(cert.alpha), "certificate"
    else:
        alpha, source = v.greater_than("alpha", alpha, 1.0), "given"
    w = worst_case_neighbours(alpha, n=game.n, kernel=game.kernel, domain=Box.unit(1), r=game.r, sigma=game.sigma,
                              eta=0.0, M_Y=1.0, rng=rng, restarts=restarts, test_points=test_points,
                              sensitivity="exp1d", constants=constants)
    lood = game_lood(game, alpha, rng=rng, datasets=lood_datasets) if lood_datasets else None
    return TightnessResult(game=game, alpha=alpha, alpha_source=source, found=w.divergence, found_mean=w.mean_part,
                           found_cov=w.cov_part, certified=w.bound, certified_mean=w.mean_bound,
                           certified_cov=w.cov_bound, epsilon_certified=float(cert.epsilon), delta=delta,
                           constants=constants, evaluations=w.evaluations, worst=w, lood=lood)
