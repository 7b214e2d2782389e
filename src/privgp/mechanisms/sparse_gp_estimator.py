"""Estimators with the conventions scikit-learn users know, around the DP sparse GP (seed 001).

* :class:`DPSparseGPRegressor`: ``fit(X, y)`` runs Alg. 1 once ((epsilon, delta)-DP in (X, y));
  ``predict(X, return_std=True)`` is post-processing (eq. 17).
* :class:`DPDirichletGPClassifier`: the Dirichlet-based GP classifier of Milios et al. (2018) (seed
  001, sec. 5, eq. 21): one heteroscedastic DP sparse GP per class (App. D), the (epsilon, delta)
  budget split equally over the classes and composed exactly (each class model is
  mu/sqrt(C)-GDP; their composition, ``event_``, is mu-GDP with delta(epsilon) = delta).

Everything that shapes the release (inducing points, kernel, bounds, budget, and the class labels) is
a constructor argument, fixed before ``fit`` sees data; fitted attributes end with an underscore.
``rng``: a numpy Generator, or None for fresh OS entropy at every fit. Each call to ``fit`` is a new
release of the data and costs its budget again.
"""
from __future__ import annotations

from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike

from .. import validation as v
from ..errors import InvalidParameterError
from .sparse_gp import (NoiseBounds, SparseGpSpec, calibrate_noise, fit_sparse_gp, release_from_statistics, sparse_gp_spec,
                        weighted_statistics)


def _rng(rng: np.random.Generator | None) -> np.random.Generator:
    return np.random.default_rng() if rng is None else v.generator("rng", rng)


class _Base:
    _params: tuple[str, ...] = ()
    # the public settings both estimators share (constructor arguments)
    inducing_points: ArrayLike
    kernel: str
    lengthscale: float
    signal_variance: float
    kernel_bound: str
    noise_ratio: float | str
    rho: float
    correction: str
    rng: np.random.Generator | None

    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in self._params}

    def set_params(self, **params: Any) -> Self:
        for k, val in params.items():
            if k not in self._params:
                raise InvalidParameterError("parameter", f"one of {self._params}", k)
            setattr(self, k, val)
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self._params
                                                     if k != "inducing_points") + ")"

    def _spec(self, response_bound: float) -> SparseGpSpec:
        return sparse_gp_spec(self.inducing_points, response_bound=response_bound, kernel=self.kernel,
                              lengthscale=self.lengthscale, signal_variance=self.signal_variance,
                              kernel_bound=self.kernel_bound, noise_ratio=self.noise_ratio, rho=self.rho,
                              correction=self.correction)

    def _check_fitted(self):
        if not hasattr(self, "release_") and not hasattr(self, "releases_"):
            raise InvalidParameterError("estimator", "fitted (call fit first)", type(self).__name__)


class DPSparseGPRegressor(_Base):
    """(epsilon, delta)-DP sparse GP regression with private inputs and outputs (seed 001, Alg. 1).

    Parameters: ``inducing_points`` (public Z), ``response_bound`` R_y (y is clipped to [-R_y, R_y]),
    ``noise_std`` sigma, ``epsilon``, ``delta``, ``kernel``/``lengthscale``/``signal_variance``,
    ``kernel_bound`` (R_k rule: auto, trivial, separation, grid-1d, grid-1d-printed), ``noise_ratio``
    (sigma_a / sigma_b, or "min-sensitivity"), ``rho`` (eq. 10), ``correction`` (S_2: symmetric,
    paper, none), ``rng``.

    Fitted attributes: ``release_`` (:class:`~privgp.mechanisms.sparse_gp.SparseGpRelease`),
    ``mean_`` (m) and ``covariance_`` (S) of q(u), ``inducing_points_``, ``event_``, ``sensitivity_``,
    ``kernel_bound_``, ``sigma_a_``, ``sigma_b_``, ``lambda_`` (eq. 10, paper units), ``n_clipped_``,
    ``n_features_in_``."""

    _params = ("inducing_points", "response_bound", "noise_std", "epsilon", "delta", "kernel", "lengthscale",
               "signal_variance", "kernel_bound", "noise_ratio", "rho", "correction", "rng")

    def __init__(self, inducing_points: ArrayLike, *, response_bound: float, noise_std: float, epsilon: float,
                 delta: float, kernel: str = "squared_exponential", lengthscale: float = 1.0,
                 signal_variance: float = 1.0, kernel_bound: str = "auto", noise_ratio: float | str = 1.0,
                 rho: float = 0.01, correction: str = "symmetric", rng: np.random.Generator | None = None) -> None:
        self.inducing_points = inducing_points
        self.response_bound = response_bound
        self.noise_std = noise_std
        self.epsilon = epsilon
        self.delta = delta
        self.kernel = kernel
        self.lengthscale = lengthscale
        self.signal_variance = signal_variance
        self.kernel_bound = kernel_bound
        self.noise_ratio = noise_ratio
        self.rho = rho
        self.correction = correction
        self.rng = rng

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        spec = self._spec(self.response_bound)
        rel = fit_sparse_gp(X, y, spec, noise_std=self.noise_std, epsilon=self.epsilon, delta=self.delta,
                            rng=_rng(self.rng))
        self.release_ = rel
        self.inducing_points_ = spec.inducing_points
        self.mean_ = rel.posterior.mean
        self.covariance_ = rel.posterior.covariance
        self.event_ = rel.event
        self.sensitivity_ = rel.sensitivity
        self.kernel_bound_ = spec.kernel_bound
        self.sigma_a_ = rel.noise.sigma_a
        self.sigma_b_ = rel.noise.sigma_b
        assert rel.noise_std is not None  # a homoscedastic fit records its noise std
        self.lambda_ = rel.posterior.ridge / rel.noise_std**2
        self.n_clipped_ = rel.n_clipped
        self.n_features_in_ = spec.dim
        return self

    def predict(self, X: ArrayLike, return_std: bool = False,
                include_noise: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Mean (and std) of the predictive distribution at X (eq. 17); latent f unless ``include_noise``."""
        self._check_fitted()
        return self.release_.predict(X, return_std=return_std, include_noise=include_noise)


def dirichlet_targets(onehot: ArrayLike, alpha_epsilon: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """Milios et al. (2018) / seed 001 eq. 21 (typos corrected): alpha = y + alpha_eps,
    sigma~^2 = log(1/alpha + 1), y~ = log(alpha) - sigma~^2 / 2. Returns (y~, sigma~^2)."""
    a = np.asarray(onehot, dtype=float) + v.positive("alpha_epsilon", alpha_epsilon)
    s2 = np.log(1.0 / a + 1.0)
    return np.log(a) - 0.5 * s2, s2


class DPDirichletGPClassifier(_Base):
    """(epsilon, delta)-DP classification by Dirichlet-based GP regression (seed 001, sec. 5).

    ``classes``: the public list of labels (never read from the data). Per class c the one-hot
    targets are transformed by eq. 21 into heteroscedastic Gaussian regression with two possible
    (y~, sigma~^2) pairs; the public prior mean is their midpoint. The noise variances lie in
    [log(1/(1+a) + 1), log(1/a + 1)] (a = alpha_epsilon), so App. D's weights and the weighted
    response |w y~| are bounded by public constants (:class:`~privgp.mechanisms.sparse_gp.NoiseBounds`).
    Budget: C releases on the same records, each at mu/sqrt(C) with mu = mu*(epsilon, delta)
    (``event_`` is their composition). ``predict_proba``: p_c proportional to exp(mu_c + v_c / 2)
    (the mean of the log-normal class weight; Milios et al. sample instead)."""

    _params = ("inducing_points", "classes", "epsilon", "delta", "alpha_epsilon", "kernel", "lengthscale",
               "signal_variance", "kernel_bound", "noise_ratio", "rho", "correction", "rng")

    def __init__(self, inducing_points: ArrayLike, *, classes: ArrayLike, epsilon: float, delta: float,
                 alpha_epsilon: float = 0.01, kernel: str = "squared_exponential", lengthscale: float = 1.0,
                 signal_variance: float = 1.0, kernel_bound: str = "auto", noise_ratio: float | str = 1.0,
                 rho: float = 0.01, correction: str = "symmetric", rng: np.random.Generator | None = None) -> None:
        self.inducing_points = inducing_points
        self.classes = classes
        self.epsilon = epsilon
        self.delta = delta
        self.alpha_epsilon = alpha_epsilon
        self.kernel = kernel
        self.lengthscale = lengthscale
        self.signal_variance = signal_variance
        self.kernel_bound = kernel_bound
        self.noise_ratio = noise_ratio
        self.rho = rho
        self.correction = correction
        self.rng = rng

    def _targets(self):
        (t0, t1), (s0, s1) = dirichlet_targets([0.0, 1.0], self.alpha_epsilon)
        offset = 0.5 * (t0 + t1)
        Ry = 0.5 * abs(t1 - t0)
        RA = max(abs(t0 - offset) / s0, abs(t1 - offset) / s1)
        return offset, Ry, NoiseBounds(min(s0, s1), max(s0, s1), weighted_response_bound=RA)

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        classes = np.asarray(self.classes)
        if classes.ndim != 1 or classes.size < 2 or np.unique(classes).size != classes.size:
            raise InvalidParameterError("classes", "at least two distinct public labels", self.classes)
        offset, Ry, bounds = self._targets()
        spec = self._spec(Ry)
        C = classes.size
        sens = bounds.sensitivity(spec)
        noise = calibrate_noise(sens, self.epsilon, self.delta, spec.noise_ratio, parts=C)
        X = v.points("X", X, dim=spec.dim)
        labels = np.asarray(y)
        if labels.ndim != 1 or labels.shape[0] != X.shape[0]:
            raise InvalidParameterError("y", f"one label per row of X ({X.shape[0]})", labels.shape)
        known = np.isin(labels, classes)
        if not known.all():
            raise InvalidParameterError("y", f"labels from the public classes {classes.tolist()}",
                                        f"{int(np.sum(~known))} unknown label(s)")
        rng = _rng(self.rng)
        releases = []
        for c in classes:
            t, s2 = dirichlet_targets((labels == c).astype(float), self.alpha_epsilon)
            stats = weighted_statistics(X, t - offset, s2, spec, bounds)
            releases.append(release_from_statistics(stats, spec, noise, sens, rng, noise_std=None))
        self.releases_ = tuple(releases)
        self.classes_ = classes
        self.prior_mean_ = offset
        self.event_ = noise.total_event
        self.class_event_ = noise.event
        self.sensitivity_ = sens
        self.sigma_a_ = noise.sigma_a
        self.sigma_b_ = noise.sigma_b
        self.n_features_in_ = spec.dim
        return self

    def latent(self, X: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(C, m) latent means and variances of the log class weights at X."""
        self._check_fitted()
        out = [r.posterior.predict(X) for r in self.releases_]
        return self.prior_mean_ + np.stack([o[0] for o in out]), np.stack([o[1] for o in out])

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        mu, var = self.latent(X)
        logits = mu + 0.5 * var
        logits -= logits.max(axis=0, keepdims=True)
        p = np.exp(logits)
        return (p / p.sum(axis=0, keepdims=True)).T

    def predict(self, X: ArrayLike) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


__all__ = ["DPSparseGPRegressor", "DPDirichletGPClassifier", "dirichlet_targets"]
