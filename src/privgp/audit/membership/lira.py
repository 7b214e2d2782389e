"""LiRA-style membership-inference audit of one setting (seed 000, sec. 4, App. C).

:func:`audit_lira` plays the game of :mod:`.game` (shadow and evaluation populations from independent
streams), fits one or more attacks of :mod:`.attacks` on the shadow populations, and reports for each
the ROC metrics on the evaluation populations, an empirical epsilon LOWER bound with its confidence
(threshold chosen on the shadow populations), and the certified epsilon UPPER bound of the release
(Thm 3.1 + Lemma B.7 + L-fold composition) at the same delta. All attacks of one call see the same data.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ... import validation as v
from ...accounting import PUBLISHED_WARNING
from ...errors import InvalidParameterError
from .attacks import ATTACKS, fit_attack
from .game import MIN_EVAL, MIN_SHADOW, MembershipGame, play
from .metrics import DEFAULT_FPR_TARGETS, EpsilonLowerBound, RocMetrics, check_fpr_targets, epsilon_lower_bound, roc_metrics, select_threshold


@dataclass(frozen=True)
class LiraResult:
    """The audit of one attack on one setting."""

    game: MembershipGame
    attack: str
    seed: int
    n_shadow: int
    n_eval: int
    roc: RocMetrics
    lower: EpsilonLowerBound
    epsilon_certified: float
    certified_constants: str
    epsilon_published: float          # with the paper's sqrt(2)-smaller Delta_n: NOT covered by the lemmas
    seconds: float
    scores_in: np.ndarray | None = field(repr=False, default=None)
    scores_out: np.ndarray | None = field(repr=False, default=None)

    @property
    def auc(self) -> float:
        return self.roc.auc

    @property
    def epsilon_lower_bound(self) -> float:
        return self.lower.epsilon

    def to_dict(self) -> dict:
        out = {"attack": self.attack, **self.game.describe(), "seed": self.seed, "n_shadow": self.n_shadow,
               "n_eval": self.n_eval, **self.roc.to_dict(), "epsilon_lower_bound": self.lower.epsilon,
               "lower_bound": self.lower.to_dict(), "epsilon_certified": self.epsilon_certified,
               "certified_constants": self.certified_constants,
               "certified_note": (PUBLISHED_WARNING if self.certified_constants == "published" else
                                  "proven constants (Lemma B.7): an upper bound"),
               "epsilon_published_not_covered": self.epsilon_published,
               "lower_le_certified": bool(self.lower.epsilon <= self.epsilon_certified),
               "seconds": self.seconds}
        return out


def certified_epsilons(game: MembershipGame, delta: float, constants: str = "proven") -> tuple[float, float]:
    """(certified epsilon with ``constants``, epsilon with the published constants [not covered])."""
    cert = float(game.certified_epsilon(delta, constants=constants).epsilon)
    pub = float(game.certified_epsilon(delta, constants="published").epsilon)
    return cert, pub


#: elements of the batched solves' temporaries processed at once (models.gp.posterior._CHUNK)
SOLVE_CHUNK = 2**20


def lira_bytes(n: int, n_shadow: int, n_eval: int) -> tuple[int, str]:
    """(estimated peak bytes, the parameter that drives it: 'n', 'n_shadow' or 'n_eval') of a LiRA audit of a
    game with ``n`` records: the datasets of the largest population while drawn (about six (size, n) arrays),
    the four populations kept (five numbers per dataset), the attacks' scores, and the batched solves
    (at least one n x n system at a time, three copies)."""
    n, ns, ne = int(n), int(n_shadow), int(n_eval)
    size = max(ns, ne)
    data = 8 * 6 * size * n + 40 * (2 * ns + 2 * ne) + 160 * size
    solve = 24 * max(SOLVE_CHUNK, n * (n + 2))
    return data + solve, ("n" if solve >= data else "n_shadow" if ns >= ne else "n_eval")


def check_lira_memory(n: int, n_shadow: int, n_eval: int, memory_limit: float) -> None:
    """Refuse, before anything is drawn, a LiRA audit estimated to need more than ``memory_limit`` bytes
    (InvalidParameterError naming the parameter that drives the estimate, with the estimate)."""
    need, name = lira_bytes(n, n_shadow, n_eval)
    v.check_memory(f"LiRA audit (n = {n}, {n_shadow} shadow + {n_eval} evaluation datasets per hypothesis)", need,
                   memory_limit, "use fewer datasets (n_shadow, n_eval) or a smaller n", param=name,
                   value={"n": n, "n_shadow": n_shadow, "n_eval": n_eval}[name])


def audit_lira(game: MembershipGame, *, attacks=("paper",), n_shadow: int = 10_000, n_eval: int = 10_000,
               delta: float = 0.05, seed: int = 0, fpr_targets=DEFAULT_FPR_TARGETS, confidence: float = 0.95,
               constants: str = "proven", keep_scores: bool = False, memory_limit: float | None = None,
               **attack_options) -> dict[str, LiraResult]:
    """Audit ``game`` with each attack in ``attacks`` (names from :data:`~.attacks.ATTACKS`) on the same
    shadow/evaluation data. Returns {attack name: LiraResult}.

    ``seed`` fixes the data streams (shadow in/out, eval in/out) and the attacks' own stream, all
    spawned independently from it (:func:`~.game.play`). ``memory_limit`` (bytes; None: unchecked): refuse,
    before anything is drawn, an audit estimated to need more (:func:`lira_bytes`).
    """
    if isinstance(attacks, str):
        attacks = (attacks,)
    attacks = tuple(attacks)
    for a in attacks:
        if a not in ATTACKS:
            raise InvalidParameterError("attack", f"one of {ATTACKS}", a)
    targets = check_fpr_targets(fpr_targets)
    delta = v.open_interval("delta", delta, 0.0, 1.0)
    confidence = v.open_interval("confidence", confidence, 0.0, 1.0)
    seed = v.integer("seed", seed, minimum=0)
    if memory_limit is not None:
        check_lira_memory(game.n, v.integer("n_shadow", n_shadow, minimum=MIN_SHADOW),
                          v.integer("n_eval", n_eval, minimum=MIN_EVAL),
                          v.positive("memory_limit", memory_limit))
    t0 = time.perf_counter()
    eps_cert, eps_pub = certified_epsilons(game, delta, constants)
    data, attack_rng = play(game, n_shadow, n_eval, seed)
    setup = time.perf_counter() - t0
    out = {}
    for name in attacks:
        t1 = time.perf_counter()
        fitted = fit_attack(name, data, attack_rng, **attack_options)
        s_in, s_out = fitted.score(data.eval_in), fitted.score(data.eval_out)
        roc = roc_metrics(s_in, s_out, targets)
        thr = select_threshold(fitted.shadow_in_scores, fitted.shadow_out_scores, delta, confidence)
        lower = epsilon_lower_bound(s_in, s_out, threshold=thr, delta=delta, confidence=confidence)
        # the benchmark releases the exact (mu0, v0): not a private mechanism, nothing is certified
        cert, pub = (float("inf"), float("inf")) if name == "benchmark" else (eps_cert, eps_pub)
        out[name] = LiraResult(game=game, attack=name, seed=seed, n_shadow=len(data.shadow_in),
                               n_eval=len(data.eval_in), roc=roc, lower=lower, epsilon_certified=cert,
                               certified_constants=constants, epsilon_published=pub,
                               seconds=setup + time.perf_counter() - t1,
                               scores_in=s_in if keep_scores else None, scores_out=s_out if keep_scores else None)
    return out
