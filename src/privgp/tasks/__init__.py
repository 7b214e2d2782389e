"""Downstream tasks built on posterior sampling: excursion sets and private hyperparameter search
(seed 000, sec. 5 and App. D). Private selection (seed 001) is a mechanism: :mod:`privgp.mechanisms.private_selection`.

The names below are loaded on first use, so that importing one task module (e.g.
``privgp.tasks.excursion``) does not import the others (pandas,
scipy.special).
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {name: "excursion" for name in (
    "BCE_CLIP", "bce_from_margin", "choose_cutoff", "deterministic_estimate", "effective_dimension",
    "excursion_probability", "integrated_bce", "iou", "iou_curve", "smooth_paths", "standardized_margin",
    "trapezoid_weights", "vote_cutoffs", "vote_fraction", "vote_release")}
_EXPORTS.update({name: "hyperparameter_search" for name in (
    "CachedLoss", "EpsilonCache", "SearchResult", "SearchSpace", "grid_search")})

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'privgp.tasks' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
