"""Which mechanism publishes the most useful map? Every release mechanism at its default public settings, on
data with a known answer (library part of ``privgp experiment utility``; no files, no printing).

Mechanisms (:data:`MECHANISMS`: every registered mechanism with ``in_utility_study``, in registry order),
each planned from public inputs only by the registry (:mod:`privgp.mechanisms.interface`), exactly as
``privgp release`` plans it by default on a 2-D box (grid 41 points along the longest side in the study):

* ``posterior-sample`` (seed 000): one exact posterior path, exponential kernel, lengthscale one fifth of
  the box diameter, sigma 0.1, r calibrated to the target epsilon, inputs snapped to the grid;
* ``sparse-gp`` (seed 001): the DP sparse GP's predictive mean (exponential kernel, noise std 0.3,
  8 x 8 inducing inputs, exact Gaussian calibration);
* ``functional`` (seed 002, Thm 4.1): posterior mean + GP noise, r the smallest ridge with noise std
  <= 0.2, inputs snapped to the grid;
* ``discretised-gaussian`` (seed 002, App. A.5, eq. 37): 6 points along the longest side;
* ``grid``: the practitioner's baseline as a user would write it: 8 cells along the longest side,
  smoothing 1 cell (:mod:`privgp.mechanisms.registered.grid`);
* ``auto``: the noisy grid with cells and bandwidth from the tuning table (pilot simulations with their
  own seeds, :mod:`privgp.mechanisms.registered.auto`);
* ``posterior-sample:pilot`` and ``sparse-gp:pilot``: the two GP mechanisms that came closest, with their
  public settings chosen per (n, epsilon) on pilot simulations (own seeds) among :data:`PILOT_CANDIDATES`
  (kernel, lengthscale, sigma; kernel, lengthscale, inducing inputs) by the same criterion (mean IoU).

Each simulated data set (family, n, repetition) is released by every mechanism at every epsilon (paired
comparison). Metrics against the truth of the synthetic field (:mod:`privgp.datasets.fields`): the
excursion IoU and the RMSE of the released field (model units, [-1, 1]). On the embedded Baltimore
sales (no known truth) the reference is the non-private map of the same records
(:func:`privgp.tasks.forecast.nonprivate_map`), and the share of sales on the correct side of the
threshold (each sale's released value against its own price) is reported too.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..datasets.fields import SyntheticField
from ..mechanisms.interface import DEFAULT_MEMORY_LIMIT, Request, get, registry, simulation_twin
from ..mechanisms.release import ResponseMap
from ..models.domain import Box, trapezoid_weights
from .forecast import _compare, nonprivate_map, released_field

MECHANISMS = tuple(name for name, mech in registry().items() if mech.in_utility_study)
#: public settings searched on pilot data for the pilot-tuned GP mechanisms (lengthscales in box diameters)
PILOT_CANDIDATES = {
    "posterior-sample:pilot": tuple({"kernel": k, "lengthscale": ell, "sigma": sig}
                                    for k in ("exponential", "squared_exponential") for ell in (0.07, 0.18)
                                    for sig in (0.03, 0.1, 0.3)),
    "sparse-gp:pilot": tuple({"kernel": k, "lengthscale": ell, "inducing": m}
                             for k in ("exponential", "squared_exponential") for ell in (0.07, 0.18)
                             for m in (6, 12)),
}
TUNED = tuple(PILOT_CANDIDATES)
IDENTITY = ResponseMap(threshold=0.0, clip=1.0)


def default_plan(mechanism: str, n: int, domain: Box, rmap: ResponseMap, epsilon: float, delta: float, grid: int,
                 params: dict | None = None):
    """The plan ``privgp release --mechanism NAME`` makes by default for these public inputs (2-D); for a
    pilot-tuned mechanism (``NAME:pilot``) the plan with the given public ``params`` (lengthscale in box
    diameters)."""
    base, options = mechanism, {}
    if mechanism in TUNED:
        p = dict(params or {})
        base = mechanism.split(":")[0]
        options = {"kernel": p["kernel"], "lengthscale": float(p["lengthscale"]) * float(domain.diameter)}
        options.update({"sigma": p["sigma"]} if base == "posterior-sample" else {"inducing": int(p["inducing"])})
    return get(base, "mechanism").build(Request(n=n, domain=domain, response_map=rmap, epsilon=epsilon, delta=delta,
                                                grid=grid, memory_limit=DEFAULT_MEMORY_LIMIT, options=options))


@lru_cache(maxsize=1024)
def cached_plan(mechanism: str, n: int, lower: tuple, upper: tuple, rmap: ResponseMap, epsilon: float, delta: float,
                grid: int, params: tuple = ()):
    """Plans are public and depend only on public inputs: each worker plans once per setting."""
    return default_plan(mechanism, n, Box(lower, upper), rmap, epsilon, delta, grid, dict(params))


def release_scores(X: np.ndarray, y: np.ndarray, domain: Box, rmap: ResponseMap, mechanisms, epsilons, delta: float,
                   grid: int, rng: np.random.Generator, truth: SyntheticField | None = None,
                   settings: dict | None = None) -> list[dict]:
    """One simulated (or real) data set released by every mechanism at every epsilon; a row per release.
    ``y`` are raw responses for ``rmap`` (synthetic data: model units with the identity map). ``settings``
    maps (mechanism, n, epsilon) to the public params of a pilot-tuned mechanism."""
    y_model = rmap.apply(y)
    rows = []
    ref_cache: dict[tuple, tuple] = {}
    for mech in mechanisms:
        for eps in epsilons:
            params = tuple(sorted((settings or {}).get((mech, X.shape[0], float(eps)), {}).items()))
            plan = cached_plan(mech, X.shape[0], tuple(domain.lower), tuple(domain.upper), rmap, float(eps), delta, grid,
                               params)
            Xc, yc = plan.check(X, y)
            rel = simulation_twin(plan).draw(Xc, yc, rng)   # a study, not a release: the exact sampler's twin
            field = released_field(rel)
            if field is None:   # pragma: no cover - the study's mechanisms always release a map
                raise ValueError(f"{mech} released no map")
            axes, f, exc = field
            key = tuple(len(a) for a in axes)
            if key not in ref_cache:
                w = trapezoid_weights(axes).reshape(key)
                nonpriv = nonprivate_map(domain, axes, X, y_model)
                ref_cache[key] = (w / w.sum(), nonpriv, None if truth is None else truth.on_axes(axes))
            w, nonpriv, tr = ref_cache[key]
            row = {"mechanism": mech, "epsilon": float(eps), "certified_epsilon": float(plan.certificate.epsilon),
                   "params": dict(params)}
            iou_np, _, rmse_np = _compare(f, exc, nonpriv, w)
            row.update(iou_nonprivate=iou_np, rmse_nonprivate=rmse_np)
            if tr is not None:
                iou, agree, rmse = _compare(f, exc, tr, w)
                row.update(iou=iou, rmse=rmse, agreement=agree)
            else:  # real data: each record's released value against its own response
                from scipy.interpolate import RegularGridInterpolator  # noqa: PLC0415

                at = RegularGridInterpolator(axes, f, method="nearest", bounds_error=False, fill_value=None)(X)
                row.update(records_correct_side=float(np.mean((at > 0) == (y_model > 0))))
            rows.append(row)
    return rows


def pilot_scores(X: np.ndarray, y: np.ndarray, truth: SyntheticField, epsilons, delta: float, grid: int,
                 rng: np.random.Generator) -> list[dict]:
    """Pilot data set: every candidate of every pilot-tuned mechanism at every epsilon; IoU against the truth."""
    rows = []
    for mech, cands in PILOT_CANDIDATES.items():
        for i, cand in enumerate(cands):
            settings = {(mech, X.shape[0], float(e)): cand for e in epsilons}
            for r in release_scores(X, y, truth.domain, IDENTITY, (mech,), epsilons, delta, grid, rng, truth, settings):
                rows.append({"mechanism": mech, "candidate": i, "epsilon": r["epsilon"], "iou": r["iou"]})
    return rows
