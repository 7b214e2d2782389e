"""Downstream tasks built on posterior sampling: excursion sets and private hyperparameter search
(seed 000, sec. 5 and App. D)."""
from .excursion import (BCE_CLIP, bce_from_margin, choose_cutoff, deterministic_estimate,
                        effective_dimension, excursion_probability, integrated_bce, iou, iou_curve,
                        smooth_paths, standardized_margin, trapezoid_weights, vote_cutoffs, vote_fraction,
                        vote_release)
from .hyperparameter_search import (CachedLoss, EpsilonCache, SearchResult, SearchSpace,
                                    grid_search)

__all__ = [
    "BCE_CLIP", "CachedLoss", "EpsilonCache", "SearchResult", "SearchSpace", "bce_from_margin",
    "choose_cutoff", "deterministic_estimate", "effective_dimension", "excursion_probability",
    "grid_search", "integrated_bce", "iou", "iou_curve", "smooth_paths", "standardized_margin",
    "trapezoid_weights", "vote_cutoffs", "vote_fraction", "vote_release",
]
