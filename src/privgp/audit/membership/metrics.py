"""Attack metrics: ROC, AUC, TPR at fixed FPR, and empirical epsilon LOWER bounds with confidence.

Conventions (seed 000, App. C): the attack declares "member" when its score S >= t, so
FPR(t) = P_out(S >= t) and TPR(t) = P_in(S >= t). The ROC curve is computed directly (one sort; the
same points as scikit-learn's ``roc_curve(..., drop_intermediate=False)``, and the AUC the same as
``roc_auc_score``, i.e. Mann-Whitney with ties counted one half: tests check both against
scikit-learn); importing scikit-learn would cost an audit more time than the audit itself.

Empirical epsilon lower bound. If the release is (epsilon, delta)-DP then every test satisfies

    TPR <= e^eps FPR + delta     and     1 - FPR <= e^eps (1 - TPR) + delta,

because each (in, out) dataset pair of the game can be coupled into replace-one neighbours (see
:mod:`.game`). Hence eps >= log((TPR - delta) / FPR) and eps >= log((1 - FPR - delta) / (1 - TPR)).
A *lower bound with confidence 1 - gamma* replaces TPR by a one-sided Clopper-Pearson lower bound and
FPR by a one-sided Clopper-Pearson upper bound, each at level gamma / 2 (union bound); both forms use
exactly these two bounds, so taking the larger of the two costs no further confidence. The threshold
is chosen on data independent of the evaluation set (the shadow populations), so the selection does
not bias the bound. If no threshold certifies a positive value the bound is 0: "no evidence of any
leakage", never "no leakage".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import betaincinv

from ... import validation as v
from ...errors import InvalidParameterError
from ...formatting import exact_number

DEFAULT_FPR_TARGETS = (0.01, 0.05, 0.1)


def _scores(name, s):
    s = np.asarray(s, dtype=float).reshape(-1)
    if s.size == 0:
        raise InvalidParameterError(name, "non-empty", "an empty array")
    if np.any(np.isnan(s)):
        raise InvalidParameterError(name, "free of NaN", f"{int(np.isnan(s).sum())} NaN scores")
    return s


def check_fpr_targets(fpr_targets) -> tuple[float, ...]:
    targets = tuple(float(a) for a in np.atleast_1d(np.asarray(fpr_targets, dtype=float)))
    if not targets:
        raise InvalidParameterError("fpr_targets", "at least one value", fpr_targets)
    for a in targets:
        if not (0.0 < a < 1.0):
            raise InvalidParameterError("fpr_targets", "values in the open interval (0, 1)", a)
    if len(set(targets)) != len(targets):   # each is a key of the results: a repeated one collapsed silently
        raise InvalidParameterError("fpr_targets", "distinct values", targets)
    return targets


@dataclass(frozen=True)
class RocMetrics:
    """ROC curve, AUC and TPR at the FPR targets (TPR at the largest ROC point with FPR <= target)."""

    auc: float
    fpr_targets: tuple[float, ...]
    tpr_at_fpr: tuple[float, ...]
    fpr: np.ndarray = field(repr=False)
    tpr: np.ndarray = field(repr=False)

    @property
    def excess_tpr(self) -> tuple[float, ...]:
        """TPR@FPR - FPR (the paper's "excess TPR", Figs 2, 3, 5)."""
        return tuple(t - a for t, a in zip(self.tpr_at_fpr, self.fpr_targets))

    def to_dict(self) -> dict:
        key = exact_number   # "0.01", "0.05", "0.1"; 0.0500000001 stays itself (format "g" made it "0.05")
        return {"auc": self.auc, "tpr_at_fpr": {key(a): t for a, t in zip(self.fpr_targets, self.tpr_at_fpr)},
                "excess_tpr_at_fpr": {key(a): e for a, e in zip(self.fpr_targets, self.excess_tpr)}}


def roc_curve(scores_in, scores_out) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, TPR) of the tests "S >= t" for every distinct score t, from the largest down, starting at
    (0, 0) (t = +inf); ties move both rates at once."""
    s_in, s_out = _scores("scores_in", scores_in), _scores("scores_out", scores_out)
    scores = np.concatenate([s_in, s_out])
    member = np.concatenate([np.ones(s_in.size), np.zeros(s_out.size)])
    order = np.argsort(-scores, kind="mergesort")
    scores, member = scores[order], member[order]
    last = np.flatnonzero(np.diff(scores) != 0)             # last index of each distinct score
    ends = np.append(last, scores.size - 1)
    tps = np.cumsum(member)[ends]
    fps = ends + 1 - tps
    return np.concatenate([[0.0], fps / s_out.size]), np.concatenate([[0.0], tps / s_in.size])


def roc_metrics(scores_in, scores_out, fpr_targets=DEFAULT_FPR_TARGETS) -> RocMetrics:
    """ROC (:func:`roc_curve`), AUC (trapezoid rule on it = Mann-Whitney U / (n_in n_out)) and the TPR
    at each FPR target."""
    targets = check_fpr_targets(fpr_targets)
    fpr, tpr = roc_curve(scores_in, scores_out)
    auc = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))
    tpr_at = tuple(float(np.max(tpr[fpr <= a + 1e-12])) for a in targets)
    return RocMetrics(auc=auc, fpr_targets=targets, tpr_at_fpr=tpr_at, fpr=fpr, tpr=tpr)


def clopper_pearson_lower(k, n, level):
    """One-sided (1 - level) Clopper-Pearson lower bound on a binomial proportion (0 when k = 0)."""
    k, n = np.asarray(k, float), np.asarray(n, float)
    with np.errstate(invalid="ignore"):
        out = betaincinv(k, n - k + 1.0, level)      # the level-quantile of Beta(k, n - k + 1)
    return np.where(k <= 0, 0.0, out)


def clopper_pearson_upper(k, n, level):
    """One-sided (1 - level) Clopper-Pearson upper bound on a binomial proportion (1 when k = n)."""
    k, n = np.asarray(k, float), np.asarray(n, float)
    with np.errstate(invalid="ignore"):
        out = betaincinv(k + 1.0, n - k, 1.0 - level)  # the (1 - level)-quantile of Beta(k + 1, n - k)
    return np.where(k >= n, 1.0, out)


def _eps_from_rates(tpr_low, fpr_high, delta):
    """max(log((TPR_low - delta)/FPR_high), log((1 - FPR_high - delta)/(1 - TPR_low))), -inf if neither
    numerator is positive (nothing certified)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(tpr_low - delta > 0, np.log(np.maximum(tpr_low - delta, 1e-300)) - np.log(fpr_high), -np.inf)
        b = np.where(1.0 - fpr_high - delta > 0,
                     np.log(np.maximum(1.0 - fpr_high - delta, 1e-300)) - np.log(1.0 - tpr_low), -np.inf)
    return np.maximum(a, b), np.where(a >= b, "tpr", "tnr")


@dataclass(frozen=True)
class EpsilonLowerBound:
    """An empirical LOWER bound on epsilon, valid with probability >= ``confidence``.

    ``epsilon`` is 0 when nothing is significant (``significant`` False): that means "no evidence of
    leakage at this sample size", not "epsilon = 0".
    """

    epsilon: float
    significant: bool
    confidence: float
    delta: float
    threshold: float
    form: str                 # "tpr": log((TPR-d)/FPR); "tnr": log((1-FPR-d)/(1-TPR))
    tpr: float
    fpr: float
    tpr_low: float
    fpr_high: float
    n_in: int
    n_out: int
    selection: str = "threshold chosen on the shadow populations (independent of the evaluation sets)"

    def to_dict(self) -> dict:
        return {"epsilon_lower_bound": self.epsilon, "significant": self.significant,
                "confidence": self.confidence, "delta": self.delta, "threshold": self.threshold,
                "form": self.form, "tpr": self.tpr, "fpr": self.fpr, "tpr_low": self.tpr_low,
                "fpr_high": self.fpr_high, "n_in": self.n_in, "n_out": self.n_out, "selection": self.selection,
                "meaning": "a LOWER bound on the epsilon of any (epsilon, delta) guarantee the release can have"}


def _counts_at(sorted_scores, thresholds):
    """#{scores >= t} for each threshold (scores sorted ascending)."""
    return sorted_scores.size - np.searchsorted(sorted_scores, thresholds, side="left")


def select_threshold(select_in, select_out, delta: float, confidence: float, *, candidates: int = 2000) -> float:
    """The threshold that maximises the (same-confidence) epsilon lower bound on the selection data."""
    s_in, s_out = np.sort(_scores("select_in", select_in)), np.sort(_scores("select_out", select_out))
    pool = np.unique(np.concatenate([s_in, s_out]))
    if pool.size > candidates:
        pool = np.unique(np.quantile(pool, np.linspace(0.0, 1.0, candidates), method="nearest"))
    lvl = (1.0 - confidence) / 2.0
    k_in, k_out = _counts_at(s_in, pool), _counts_at(s_out, pool)
    eps, _ = _eps_from_rates(clopper_pearson_lower(k_in, s_in.size, lvl),
                             clopper_pearson_upper(k_out, s_out.size, lvl), delta)
    return float(pool[int(np.argmax(eps))])


def epsilon_lower_bound(eval_in, eval_out, *, threshold: float, delta: float,
                        confidence: float = 0.95) -> EpsilonLowerBound:
    """Empirical epsilon lower bound of the test "S >= threshold" on evaluation scores (threshold fixed
    in advance, e.g. by :func:`select_threshold` on independent data)."""
    delta = v.open_interval("delta", delta, 0.0, 1.0)
    confidence = v.open_interval("confidence", confidence, 0.0, 1.0)
    s_in, s_out = _scores("eval_in", eval_in), _scores("eval_out", eval_out)
    threshold = float(threshold)
    if math.isnan(threshold):
        raise InvalidParameterError("threshold", "a number", threshold)
    k_in, k_out = int(np.sum(s_in >= threshold)), int(np.sum(s_out >= threshold))
    lvl = (1.0 - confidence) / 2.0
    tl = float(clopper_pearson_lower(k_in, s_in.size, lvl))
    fh = float(clopper_pearson_upper(k_out, s_out.size, lvl))
    eps, form = _eps_from_rates(np.array(tl), np.array(fh), delta)
    eps = float(eps)
    significant = eps > 0
    return EpsilonLowerBound(epsilon=eps if significant else 0.0, significant=bool(significant),
                             confidence=confidence, delta=delta, threshold=threshold, form=str(form),
                             tpr=k_in / s_in.size, fpr=k_out / s_out.size, tpr_low=tl, fpr_high=fh,
                             n_in=int(s_in.size), n_out=int(s_out.size))
