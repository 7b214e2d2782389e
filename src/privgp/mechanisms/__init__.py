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

from __future__ import annotations

import importlib
from typing import Any

# light submodules whose names are also exported names (the function `release`, `dpsetconv`): imported
# here so that the function, not the submodule, is the package attribute (as before)
from .dpsetconv import DPSetConvPlan, DPSetConvRelease, dpsetconv, dpsetconv_release, plan_dpsetconv, setconv_channels  # noqa: F401 (re-exported)
from .release import ReleaseResult, ResponseMap, default_delta, grid_sizes, release  # noqa: F401 (re-exported)

# every other name -> its submodule; resolved on first use (PEP 562) so that importing one submodule, e.g.
# privgp.mechanisms.release from the CLI, does not import scipy.linalg, the GP and every other mechanism
_EXPORTS: dict[str, str] = {
    "DPSetConvPlan": "dpsetconv",
    "DPSetConvRelease": "dpsetconv",
    "dpsetconv": "dpsetconv",
    "dpsetconv_release": "dpsetconv",
    "plan_dpsetconv": "dpsetconv",
    "setconv_channels": "dpsetconv",
    "FunctionalPlan": "functional",
    "FunctionalRelease": "functional",
    "plan_functional": "functional",
    "release_functional": "functional",
    "MECHANISM": "posterior_release",
    "PosteriorSamplePlan": "posterior_release",
    "ReleasedPaths": "posterior_release",
    "default_lengthscale": "posterior_release",
    "plan_posterior_sample": "posterior_release",
    "sample_release": "posterior_release",
    "calibrate_eta": "posterior_sample",
    "calibrate_L": "posterior_sample",
    "calibrate_r": "posterior_sample",
    "certify_posterior_sample": "posterior_sample",
    "check_certificate": "posterior_sample",
    "epsilon_posterior_sampling": "posterior_sample",
    "posterior_sample_event": "posterior_sample",
    "ReleaseResult": "release",
    "ResponseMap": "release",
    "default_delta": "release",
    "grid_sizes": "release",
    "release": "release",
    "SparseGpPrediction": "sparse_gp",
    "SparseGpRelease": "sparse_gp",
    "fit_sparse_gp": "sparse_gp",
    "sparse_gp_fit_predict": "sparse_gp",
    "sparse_gp_spec": "sparse_gp",
    "DPDirichletGPClassifier": "sparse_gp_estimator",
    "DPSparseGPRegressor": "sparse_gp_estimator",
    "DPPosteriorSampler": "sparse_gp_estimator",
    "SparseGpPlan": "sparse_gp_release",
    "SparseGpReleased": "sparse_gp_release",
    "plan_sparse_gp": "sparse_gp_release",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
