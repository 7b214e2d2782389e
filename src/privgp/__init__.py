"""privgp: differentially private release of Gaussian-process posterior sample paths, and the
mechanisms and analyses around them, under one accountant.

The few names a user needs are available here (loaded on first use, so that ``import privgp`` and
``privgp --help`` stay fast):

* privacy events and the accountant: ``PosteriorSampleEvent``, ``GaussianEvent``, ``GdpEvent``,
  ``ComposedEvent``, ``epsilon``, ``delta``, ``certify``, ``calibrate``, ``PrivacyCertificate``;
* releasing from Python: ``records`` (private records from arrays or a DataFrame), ``Budget`` (a
  ledger file and a total budget that Python code charges), ``plan`` (any mechanism's plan from public
  inputs, as ``privgp release --mechanism NAME`` makes it; ``mechanism_names()`` lists them), ``release`` (check,
  charge, draw), ``plan_posterior_sample``,
  ``ResponseMap``, ``posterior_sample_event``; the DP sparse GP of seed 001: ``plan_sparse_gp``,
  ``DPSparseGPRegressor``, ``DPDirichletGPClassifier``, ``SelectionEvent`` (private selection);
  ``DPPosteriorSampler`` (one private posterior sample path as a scikit-learn estimator);
* private Thompson sampling: ``Candidates``, ``plan_thompson``, ``run_thompson``;
* the public domain and kernels: ``Box``, ``Exponential``, ``Matern32``, ``Matern52``,
  ``SquaredExponential``, ``make_kernel``.

Layers (imports flow one way) are described in docs/architecture.md.
"""
from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__

_EXPORTS = {
    "PosteriorSampleEvent": "privgp.accounting", "GaussianEvent": "privgp.accounting", "GdpEvent": "privgp.accounting",
    "ComposedEvent": "privgp.accounting", "PrivacyEvent": "privgp.accounting", "epsilon": "privgp.accounting",
    "delta": "privgp.accounting", "certify": "privgp.accounting", "calibrate": "privgp.accounting",
    "PrivacyCertificate": "privgp.accounting",
    "release": "privgp.mechanisms", "plan": "privgp.mechanisms.interface",
    "mechanism_names": "privgp.mechanisms.interface", "plan_posterior_sample": "privgp.mechanisms", "ResponseMap": "privgp.mechanisms",
    "posterior_sample_event": "privgp.mechanisms", "Ledger": "privgp.ledger",
    "plan_sparse_gp": "privgp.mechanisms", "DPSparseGPRegressor": "privgp.mechanisms",
    "DPDirichletGPClassifier": "privgp.mechanisms", "SelectionEvent": "privgp.accounting",
    "DPPosteriorSampler": "privgp.mechanisms", "Budget": "privgp.ledger", "records": "privgp.datasets.tabular",
    "Box": "privgp.models.domain",
    "Candidates": "privgp.tasks.thompson", "plan_thompson": "privgp.tasks.thompson",
    "run_thompson": "privgp.tasks.thompson",
    "Exponential": "privgp.models.kernels", "Matern32": "privgp.models.kernels", "Matern52": "privgp.models.kernels",
    "SquaredExponential": "privgp.models.kernels", "make_kernel": "privgp.models.kernels",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'privgp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
