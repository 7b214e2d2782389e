"""Mechanisms: private releases joining models to accounting.

* :mod:`.release` -- L exact GP posterior sample paths on a grid over a public domain (seed 000),
  with bounded responses (App. D.2), calibrated public hyperparameters and a certificate.
* :mod:`.dpsetconv` -- DPSetConv, the private SetConv encoder of the DPConvCNP (seed 002, Alg. 3).
"""
from .dpsetconv import (DPSetConvPlan, DPSetConvRelease, dpsetconv, dpsetconv_release, plan_dpsetconv,
                        setconv_channels)
from .release import (MECHANISM, ReleasedPaths, ReleasePlan, ResponseMap, default_delta,
                      default_lengthscale, plan_release, sample_release)

__all__ = ["DPSetConvPlan", "DPSetConvRelease", "MECHANISM", "ReleasePlan", "ReleasedPaths", "ResponseMap",
           "default_delta", "default_lengthscale", "dpsetconv", "dpsetconv_release", "plan_dpsetconv",
           "plan_release", "sample_release", "setconv_channels"]
