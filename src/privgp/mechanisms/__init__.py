"""Mechanisms: private releases joining models to accounting.

* :mod:`.release` -- L exact GP posterior sample paths on a grid over a public domain (seed 000),
  with bounded responses (App. D.2), calibrated public hyperparameters and a certificate.
"""
from .release import (MECHANISM, ReleasedPaths, ReleasePlan, ResponseMap, default_delta,
                      default_lengthscale, plan_release, sample_release)

__all__ = ["MECHANISM", "ReleasePlan", "ReleasedPaths", "ResponseMap", "default_delta",
           "default_lengthscale", "plan_release", "sample_release"]
