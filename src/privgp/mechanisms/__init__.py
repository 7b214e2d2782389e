"""Mechanisms: private releases joining models to accounting.

* :mod:`.release` -- the protocol shared by every mechanism (plan, check, charge, draw) and
  :func:`release`, the library's whole release workflow; response maps and grids;
* :mod:`.posterior_sample` -- seed 000's privacy events built from kernels and public domains,
  certificates and calibration;
* :mod:`.posterior_release` -- the seed-000 plan: L exact GP posterior sample paths on a grid.
"""
from .posterior_release import (MECHANISM, PosteriorSamplePlan, ReleasedPaths, default_lengthscale,
                                plan_posterior_sample, sample_release)
from .posterior_sample import (calibrate_eta, calibrate_L, calibrate_r, certify_posterior_sample,
                               check_certificate, epsilon_posterior_sampling, posterior_sample_event)
from .release import ReleaseResult, ResponseMap, default_delta, grid_sizes, release

__all__ = ["MECHANISM", "PosteriorSamplePlan", "ReleaseResult", "ReleasedPaths", "ResponseMap", "calibrate_L",
           "calibrate_eta", "calibrate_r", "certify_posterior_sample", "check_certificate", "default_delta",
           "default_lengthscale", "epsilon_posterior_sampling", "grid_sizes", "plan_posterior_sample",
           "posterior_sample_event", "release", "sample_release"]
