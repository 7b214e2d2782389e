"""Mechanisms: private releases joining models to accounting.

* :mod:`.release` -- L exact GP posterior sample paths on a grid over a public domain (seed 000),
  with bounded responses (App. D.2), calibrated public hyperparameters and a certificate.
* :mod:`.sparse_gp` -- the DP sparse GP of seed 001 (noisy sufficient statistics on public inducing
  inputs, Alg. 1); :mod:`.sparse_gp_estimator` -- its scikit-learn-style regressor and Dirichlet
  classifier; :mod:`.coinpress` -- COINPRESS private means (zCDP).
"""
from .release import (MECHANISM, ReleasedPaths, ReleasePlan, ResponseMap, default_delta,
                      default_lengthscale, plan_release, sample_release)
from .sparse_gp import (SparseGpPrediction, SparseGpRelease, fit_sparse_gp, sparse_gp_fit_predict,
                        sparse_gp_spec)
from .sparse_gp_estimator import DPDirichletGPClassifier, DPSparseGPRegressor

__all__ = ["DPDirichletGPClassifier", "DPSparseGPRegressor", "SparseGpPrediction", "SparseGpRelease",
           "fit_sparse_gp", "sparse_gp_fit_predict", "sparse_gp_spec",
           "MECHANISM", "ReleasePlan", "ReleasedPaths", "ResponseMap", "default_delta",
           "default_lengthscale", "plan_release", "sample_release"]
