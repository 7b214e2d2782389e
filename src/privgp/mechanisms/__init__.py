"""Mechanisms: private releases joining models to accounting.

* :mod:`.release` -- the protocol shared by every mechanism (plan, check, charge, draw) and
  :func:`release`, the library's whole release workflow; response maps and grids;
* :mod:`.posterior_sample` -- seed 000's privacy events built from kernels and public domains,
  certificates and calibration;
* :mod:`.posterior_release` -- the seed-000 plan: L exact GP posterior sample paths on a grid;
* :mod:`.sparse_gp` -- the DP sparse GP of seed 001 (noisy sufficient statistics on public inducing
  inputs, Alg. 1); :mod:`.sparse_gp_estimator` -- its scikit-learn-style regressor and Dirichlet
  classifier; :mod:`.sparse_gp_release` -- its release plan; :mod:`.coinpress` -- COINPRESS private
  means (zCDP).
* :mod:`.functional` -- the functional mechanism f_D + c g for a GP posterior mean (Hall et al. 2013;
  GDP analysis of seed 002, Thm 4.1), with RKHS sensitivities;
* :mod:`.dpsetconv` -- DPSetConv, the private SetConv encoder of the DPConvCNP (seed 002, Alg. 3).
"""
from .dpsetconv import (DPSetConvPlan, DPSetConvRelease, dpsetconv, dpsetconv_release, plan_dpsetconv,
                        setconv_channels)
from .functional import FunctionalPlan, FunctionalRelease, plan_functional, release_functional
from .posterior_release import (MECHANISM, PosteriorSamplePlan, ReleasedPaths, default_lengthscale,
                                plan_posterior_sample, sample_release)
from .posterior_sample import (calibrate_eta, calibrate_L, calibrate_r, certify_posterior_sample,
                               check_certificate, epsilon_posterior_sampling, posterior_sample_event)
from .release import ReleaseResult, ResponseMap, default_delta, grid_sizes, release
from .sparse_gp import (SparseGpPrediction, SparseGpRelease, fit_sparse_gp, sparse_gp_fit_predict,
                        sparse_gp_spec)
from .sparse_gp_estimator import DPDirichletGPClassifier, DPSparseGPRegressor
from .sparse_gp_release import SparseGpPlan, SparseGpReleased, plan_sparse_gp

__all__ = ["DPSetConvPlan", "DPSetConvRelease", "FunctionalPlan", "FunctionalRelease", "dpsetconv",
           "dpsetconv_release", "plan_dpsetconv", "plan_functional", "release_functional", "setconv_channels",
           "MECHANISM", "PosteriorSamplePlan", "ReleaseResult", "ReleasedPaths", "ResponseMap", "calibrate_L",
           "calibrate_eta", "calibrate_r", "certify_posterior_sample", "check_certificate", "default_delta",
           "default_lengthscale", "epsilon_posterior_sampling", "grid_sizes", "plan_posterior_sample",
           "posterior_sample_event", "release", "sample_release",
           "DPDirichletGPClassifier", "DPSparseGPRegressor", "SparseGpPrediction", "SparseGpRelease",
           "fit_sparse_gp", "sparse_gp_fit_predict", "sparse_gp_spec", "SparseGpPlan", "SparseGpReleased",
           "plan_sparse_gp"]
