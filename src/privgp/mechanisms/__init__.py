"""Mechanisms: private releases joining models to accounting.

* :mod:`.release` -- L exact GP posterior sample paths on a grid over a public domain (seed 000),
  with bounded responses (App. D.2), calibrated public hyperparameters and a certificate.
* :mod:`.dpsetconv` -- DPSetConv, the private SetConv encoder of the DPConvCNP (seed 002, Alg. 3).
* :mod:`.functional` -- the functional mechanism f_D + c g for a GP posterior mean (Hall et al. 2013;
  GDP analysis of seed 002, Thm 4.1), with RKHS sensitivities.
"""
from .dpsetconv import (DPSetConvPlan, DPSetConvRelease, dpsetconv, dpsetconv_release, plan_dpsetconv,
                        setconv_channels)
from .functional import FunctionalPlan, FunctionalRelease, plan_functional, release_functional
from .release import (MECHANISM, ReleasedPaths, ReleasePlan, ResponseMap, default_delta,
                      default_lengthscale, plan_release, sample_release)

__all__ = ["DPSetConvPlan", "DPSetConvRelease", "FunctionalPlan", "FunctionalRelease", "plan_functional",
           "release_functional", "MECHANISM", "ReleasePlan", "ReleasedPaths", "ResponseMap",
           "default_delta", "default_lengthscale", "dpsetconv", "dpsetconv_release", "plan_dpsetconv",
           "plan_release", "sample_release", "setconv_channels"]
