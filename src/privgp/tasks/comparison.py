"""Mechanisms that release a function, compared at the same (epsilon, delta) on the same tasks.

Mechanisms (each a replace-one (epsilon, delta)-DP release of a function on a public grid):

* ``posterior_sampling`` (seed 000): one exact posterior path, r calibrated as the smallest ridge
  certified at the target epsilon for the given sigma (:func:`privgp.mechanisms.posterior_release.plan_posterior_sample`,
  Thm 3.1, Lemma B.7 in 1-D / B.1 in 2-D, "improved" conversion), drawn by
  :func:`privgp.mechanisms.release.sample_release` (exact samplers);
* ``functional`` (seed 002): the posterior mean with ridge r plus c g, c = Delta_n(r) / mu(epsilon,
  delta) (:mod:`privgp.mechanisms.functional`);
* ``dp_sparse_gp`` (seed 001, Honkela, Alg. 1): noisy sufficient statistics on a public grid of
  inducing inputs over the box, one Gaussian mechanism calibrated by the exact Gaussian profile,
  the noise-aware posterior (S_2 symmetric, rho = 0.01, sigma_a = sigma_b as in the paper,
  R_k by the tightest proven rule); the released function is its predictive mean on the grid
  (:func:`privgp.mechanisms.sparse_gp_release.plan_sparse_gp`, ``check`` / ``draw``), its band the
  predictive mean -+ 2 sd of the latent f;
* ``non_private``: the posterior mean without privacy (epsilon = inf), for reference;
* ``non_private_sparse_gp``: the sparse GP without privacy (Titsias' posterior, seed 001 eq. 2, on
  the same public inducing grid, no noise, no regulariser), for reference: what the DP sparse GP
  would reach without noise, i.e. the part of its error due to the sparse model itself.

Neighbouring relation. All three are replace-one guarantees for datasets of a public size n with
responses |y| <= 1 (here y already lies in [-1, 1], so the public clip is the identity): seed 000's
Thm 3.1 and seed 002's Thm 4.1 (through Delta_n of seed 000) for inputs in the public box; seed
001's Lemma 5 / eq. 6 is replace-one ("substitute neighbourhood", sec. 2.1) for |y| <= R_y = 1 and
any input x (||k(x)|| <= R_k needs only a bounded kernel), so it covers at least the same pairs.

Free hyperparameters are chosen per task and epsilon on *pilot* data that are not the evaluation
data and are public by construction: independent datasets from the same generator for synthetic
tasks (as seed 002 tuned its DP-SVGP baseline on simulated data), the public half of the sales for
Baltimore (as the ``realdata`` experiment). The criterion is the mean RMSE to the pilot reference.
Searched: lengthscale, and sigma for posterior sampling, r for the posterior means (the kernel
family is fixed to the exponential, as in seed 000's studies: Lemma B.7 and the exact 1-D sampler
are for it); for the DP sparse GP its own public settings: kernel (exponential or squared
exponential, the paper's), lengthscale, observation noise std and number of inducing inputs.

Metrics per evaluated release (the released function f on the grid, trapezoid weights w):
RMSE = sqrt(sum w (f - ref)^2 / sum w) to the reference (the true field f* on synthetic tasks;
the non-private posterior mean of the private data on Baltimore); excursion IoU of
{f >= t} against {ref >= t} (2-D: after a fixed 1-pixel Gaussian filter, data-independent
post-processing as in seed 000, App. D.1); where the mechanism has a pointwise band, the fraction of
the grid (trapezoid weights) where the band covers the reference and the band's mean half-width
(functional mechanism: f -+ 1.96 c, a band for the noise only; DP sparse GP: mean -+ 2 sd, its
noise-aware predictive band for f). One posterior-sample path has no band. Coverage is a
calibration check only where the reference is the truth (synthetic tasks); on Baltimore it is the
coverage of the non-private posterior mean.

The private mechanisms are planned through the mechanism registry (:func:`privgp.mechanisms.interface.plan`:
the plan ``privgp release --mechanism NAME`` makes with these options). This study compares the three
function-release mechanisms of the seed papers, with their own pilot searches, and two non-private
references; the study of EVERY registered mechanism at its default settings (a new mechanism appears
there without any edit) is :mod:`privgp.tasks.utility_study`.

Library code: no files, no printing. The experiment ``privgp experiment mechanisms`` orchestrates it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .. import validation as v
from ..errors import InvalidParameterError
from ..mechanisms.functional import posterior_mean_weights
from ..mechanisms.interface import plan as plan_mechanism
from ..mechanisms.interface import simulation_twin
from ..mechanisms.posterior_release import sample_release
from ..mechanisms.release import ResponseMap, grid_sizes
from ..mechanisms.sparse_gp import sparse_gp_spec, sufficient_statistics
from ..mechanisms.sparse_gp_release import inducing_grid
from ..models.domain import Box, PublicGrid
from ..models.gp.sparse_posterior import noise_aware_posterior
from ..models.kernels import make_kernel
from . import excursion as ex

MECHANISMS = ("posterior_sampling", "functional", "dp_sparse_gp", "non_private", "non_private_sparse_gp")
#: the registered mechanism (``privgp release --mechanism``) each private one of the study is
REGISTERED = {"posterior_sampling": "posterior-sample", "functional": "functional", "dp_sparse_gp": "sparse-gp"}
#: the kernels searched for the DP sparse GP (the others use the workload's kernel)
SPARSE_GP_KERNELS = ("exponential", "squared_exponential")
Z95 = 1.959963984540054
_IDENTITY = ResponseMap(threshold=0.0, clip=1.0)   # |y| <= 1 already: clip(y, -1, 1) is the identity


@dataclass(frozen=True)
class Workload:
    """One task: evaluation and pilot datasets with their references on a public grid, and the
    public settings shared by every mechanism. ``X`` (B, n, d), ``y`` (B, n), ``ref`` (B, m); each
    dataset is released ``repeats`` times (Baltimore: one dataset, many releases)."""

    name: str
    domain: Box
    grid: PublicGrid
    X: np.ndarray
    y: np.ndarray
    ref: np.ndarray
    pilot_X: np.ndarray
    pilot_y: np.ndarray
    pilot_ref: np.ndarray
    t: float
    lengthscales: tuple[float, ...]
    #: DP sparse GP: candidate numbers of inducing inputs along the longest side of the box
    inducing: tuple[int, ...] = (4, 8, 16, 32)
    repeats: int = 1
    pilot_repeats: int = 1
    kernel: str = "exponential"
    snap: int | None = None
    iou_smoothing_px: float = 0.0
    reference: str = "true field f*"
    info: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.X.shape[1]

    @property
    def weights(self) -> np.ndarray:
        return ex.trapezoid_weights(self.grid.axes())

    @property
    def evaluations(self) -> int:
        return self.X.shape[0] * self.repeats

    def describe(self) -> dict:
        return {"task": self.name, "n": self.n, "datasets": int(self.X.shape[0]), "repeats": self.repeats,
                "pilot_datasets": int(self.pilot_X.shape[0]), "pilot_repeats": self.pilot_repeats,
                "domain": self.domain.to_dict(), "grid": self.grid.to_dict(), "kernel": self.kernel,
                "lengthscale_candidates": list(self.lengthscales), "inducing_candidates": list(self.inducing),
                "excursion_level": self.t, "snap": self.snap,
                "iou_smoothing_px": self.iou_smoothing_px, "reference": self.reference, **self.info}


# ------------------------------------------------------------------------------------------------
# Workloads
# ------------------------------------------------------------------------------------------------

def _grid_for(domain: Box, points: int) -> PublicGrid:
    return PublicGrid.on_box(domain, grid_sizes(domain, points))


def synthetic_1d(datasets: int, pilot: int, *, n: int = 100, M_xi: float = 0.3, grid: int = 201,
                 rng: np.random.Generator) -> Workload:
    """Seed 000, App. D: f* ~ GP(0, exp(-|x - x'|)) rescaled to sup-norm 1 - M_xi, x ~ U[0, 1],
    y = f*(x) + U[-M_xi, M_xi] (|y| <= 1); target {f* >= 0}."""
    from ..datasets.synthetic import excursion_pairs_1d

    ev = excursion_pairs_1d(datasets, n, M_xi, rng=rng, mesh_size=grid)
    pi = excursion_pairs_1d(pilot, n, M_xi, rng=rng, mesh_size=grid)
    return Workload(name="1-D GP field", domain=Box.unit(1), grid=_grid_for(Box.unit(1), grid), X=ev.X, y=ev.y,
                    ref=ev.signal, pilot_X=pi.X, pilot_y=pi.y, pilot_ref=pi.signal, t=0.0,
                    lengthscales=(0.1, 0.3, 1.0), inducing=(4, 8, 16, 32), info={"generator": ev.info["generator"], "M_xi": M_xi})


def synthetic_2d(datasets: int, pilot: int, *, n: int = 400, M_xi: float = 0.3, grid: int = 41, snap: int = 2,
                 rng: np.random.Generator) -> Workload:
    """Seed 000, App. D.1: plume fields on [0, 1]^2, n uniform sensors, y = (1 - M_xi) f* + noise;
    target {(1 - M_xi) f* >= 0}. Inputs are snapped to the grid lattice refined ``snap`` times (a
    fixed public per-record map, applied for every mechanism alike) so that exact paths use the
    circulant sampler."""
    from ..datasets.plumes import excursion_pairs_2d
    from ..models.sampling import snap_to_lattice

    dom = Box.unit(2)
    g = _grid_for(dom, grid)
    ev = excursion_pairs_2d(datasets, n, M_xi, rng=rng, mesh_size=grid)
    pi = excursion_pairs_2d(pilot, n, M_xi, rng=rng, mesh_size=grid)
    snapped = lambda X: np.stack([snap_to_lattice(x, g.axes(), refine=snap) for x in X])
    return Workload(name="2-D plume field", domain=dom, grid=g, X=snapped(ev.X), y=ev.y, ref=ev.signal,
                    pilot_X=snapped(pi.X), pilot_y=pi.y, pilot_ref=pi.signal, t=float(ev.t),
                    lengthscales=(0.1, 0.2, 0.4), inducing=(3, 4, 6, 9), snap=snap, iou_smoothing_px=1.0,
                    info={"generator": ev.info["generator"], "M_xi": M_xi})


def baltimore(repeats: int, pilot_repeats: int, *, grid: int = 61, split_seed: int = 0,
              lengthscales=(10.0, 30.0, 90.0), ridges=(0.1, 0.3, 1.0, 3.0)) -> Workload:
    """The 211 Baltimore sales (seed 000 real-data analogue): y = clip(log(price / 50k), -1, 1);
    a seeded random half of the sales is declared public (pilot), the other half is the private
    dataset, released ``repeats`` times. Reference: the non-private posterior mean of the private
    half with (lengthscale, r) chosen by 5-fold cross-validated squared error on the public half."""
    from ..datasets.baltimore import PUBLIC_BOX, load_baltimore
    from ..models.sampling import snap_to_lattice

    df = load_baltimore()
    X = PUBLIC_BOX.check_contains("Baltimore locations", df[["x", "y"]].to_numpy(dtype=float))
    y = np.clip(np.log(df["price"].to_numpy(dtype=float) / 50.0), -1.0, 1.0)
    perm = np.random.default_rng(np.random.SeedSequence([split_seed, 4])).permutation(len(df))
    half = len(df) // 2
    pub, priv = np.sort(perm[:half]), np.sort(perm[half: 2 * half])     # equal sizes (n public)
    g = _grid_for(PUBLIC_BOX, grid)
    Xs = snap_to_lattice(X, g.axes(), refine=2)
    folds = np.array_split(np.random.default_rng(np.random.SeedSequence([split_seed, 5])).permutation(half), 5)
    best, best_err = None, math.inf
    for ell in lengthscales:
        k = make_kernel("exponential", ell)
        for r in ridges:
            err = 0.0
            for f in folds:
                tr = np.setdiff1d(np.arange(half), f)
                a = posterior_mean_weights(k, Xs[pub][tr], y[pub][tr], r)
                err += float(np.sum((k(Xs[pub][f], Xs[pub][tr]) @ a - y[pub][f]) ** 2))
            if err < best_err:
                best, best_err = (ell, r), err
    if best is None:
        raise InvalidParameterError("lengthscales/ridges", "at least one candidate with a finite error", best_err)
    ell, r = best
    k = make_kernel("exponential", ell)
    P = g.points()
    ref = lambda idx: k(P, Xs[idx]) @ posterior_mean_weights(k, Xs[idx], y[idx], r)
    return Workload(name="Baltimore house prices", domain=PUBLIC_BOX, grid=g, X=Xs[priv][None], y=y[priv][None],
                    ref=ref(priv)[None], pilot_X=Xs[pub][None], pilot_y=y[pub][None], pilot_ref=ref(pub)[None], t=0.0,
                    lengthscales=tuple(float(x) for x in lengthscales), inducing=(3, 4, 6, 9), repeats=repeats, pilot_repeats=pilot_repeats,
                    snap=2, iou_smoothing_px=1.0, reference="non-private posterior mean of the private half",
                    info={"reference_lengthscale": ell, "reference_r": r, "response": "clip(log(price / 50k), -1, 1)",
                          "split": "seeded random half public (pilot), the other half private", "n_public": half})


# ------------------------------------------------------------------------------------------------
# One mechanism on a batch of datasets
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Batch:
    """What a worker needs: public settings and a slice of datasets (picklable, small)."""

    domain: Box
    grid: PublicGrid
    kernel: str
    snap: int | None
    t: float
    iou_smoothing_px: float
    X: np.ndarray
    y: np.ndarray
    ref: np.ndarray
    repeats: int


def batch_of(w: Workload, idx, *, pilot: bool = False) -> Batch:
    X, y, ref = (w.pilot_X, w.pilot_y, w.pilot_ref) if pilot else (w.X, w.y, w.ref)
    idx = np.asarray(idx)
    return Batch(domain=w.domain, grid=w.grid, kernel=w.kernel, snap=w.snap, t=w.t, iou_smoothing_px=w.iou_smoothing_px,
                 X=X[idx], y=y[idx], ref=ref[idx], repeats=w.pilot_repeats if pilot else w.repeats)


def _check_mechanism(mechanism: str) -> None:
    if mechanism not in MECHANISMS:
        raise InvalidParameterError("mechanism", f"one of {MECHANISMS}", mechanism)


@dataclass(frozen=True)
class Released:
    """The releases of one batch: ``values`` (B * repeats, m) on the grid; ``half_width`` of the
    mechanism's pointwise band, (B * repeats,) or (B * repeats, m), or None; the public settings
    actually ``used`` (e.g. the calibrated r); ``per_release``: extra per-release numbers (name ->
    array of length B * repeats) reported beside the metrics."""

    values: np.ndarray
    half_width: np.ndarray | None
    used: dict
    per_release: dict = field(default_factory=dict)


def release_batch(b: Batch, mechanism: str, params: dict, epsilon: float, delta: float,
                  rng: np.random.Generator) -> Released:
    """Release every dataset of the batch ``b.repeats`` times with ``mechanism`` at (epsilon, delta)
    and the public ``params`` (module docstring)."""
    _check_mechanism(mechanism)
    n = b.X.shape[1]
    ell = float(params["lengthscale"])
    k = make_kernel(b.kernel, ell)
    P = b.grid.points()
    out = []
    if mechanism == "posterior_sampling":
        plan = plan_mechanism(REGISTERED[mechanism], n, b.domain, _IDENTITY, epsilon=epsilon, delta=delta,
                              grid=max(b.grid.sizes), kernel=b.kernel, lengthscale=ell, sigma=float(params["sigma"]),
                              snap=b.snap or 0)
        if tuple(plan.grid) != b.grid.sizes:  # pragma: no cover - grid_sizes is the one rule for both
            raise InvalidParameterError("grid", f"the release plan's grid {plan.grid}", b.grid.sizes)
        for X, y in zip(b.X, b.y):
            for _ in range(b.repeats):
                out.append(sample_release(plan, X, y, rng).paths[0].reshape(-1))
        return Released(np.asarray(out), None, {"r": plan.r, "sigma": plan.sigma, "certified_epsilon": plan.epsilon})
    if mechanism == "functional":
        # the workload's inputs are on the grid lattice already (snap): one unknown per occupied site
        plan = plan_mechanism(REGISTERED[mechanism], n, b.domain, _IDENTITY, epsilon=epsilon, delta=delta,
                              grid=max(b.grid.sizes), kernel=b.kernel, lengthscale=ell, r=float(params["r"]),
                              snap=b.snap or 0)
        if plan.grid.sizes != b.grid.sizes:  # pragma: no cover - grid_sizes is the one rule for both
            raise InvalidParameterError("grid", f"the release plan's grid {plan.grid.sizes}", b.grid.sizes)
        for X, y in zip(b.X, b.y):
            mean = plan.posterior_mean(*plan.check(X, y))   # computed once, released b.repeats times
            for _ in range(b.repeats):
                out.append(plan.add_noise(mean, rng).values.reshape(-1))
        return Released(np.asarray(out), np.full(len(out), Z95 * plan.multiplier), {
            "r": plan.r, "multiplier": plan.multiplier, "sensitivity": plan.sensitivity,
            "certified_epsilon": plan.certified_epsilon})
    if mechanism == "dp_sparse_gp":
        plan = simulation_twin(plan_mechanism(   # a study, not a release: the exact sampler's twin
            REGISTERED[mechanism], n, b.domain, _IDENTITY, epsilon=epsilon, delta=delta, grid=max(b.grid.sizes),
            kernel=str(params["kernel"]), lengthscale=ell, noise_std=float(params["noise_std"]),
            inducing=int(params["inducing"])))
        if tuple(plan.grid) != b.grid.sizes:  # pragma: no cover - grid_sizes is the one rule for both
            raise InvalidParameterError("grid", f"the release plan's grid {plan.grid}", b.grid.sizes)
        bands, repaired = [], []
        for X, y in zip(b.X, b.y):
            X, y = plan.check(X, y)
            for _ in range(b.repeats):
                rel = plan.draw(X, y, rng)
                out.append(rel.mean.reshape(-1))
                bands.append(2.0 * rel.sd.reshape(-1))
                repaired.append(float(rel.repair_shift > 0))
        return Released(np.asarray(out), np.asarray(bands), {
            "inducing_points": plan.spec.n_inducing, "R_k": plan.spec.kernel_bound,
            "sensitivity": plan.spec.sensitivity(), "sigma_a": plan.noise.sigma_a, "certified_epsilon": plan.epsilon},
            {"repaired": np.asarray(repaired)})
    if mechanism == "non_private_sparse_gp":   # the same public model as plan_sparse_gp, no noise, no lambda
        spec = sparse_gp_spec(inducing_grid(b.domain, int(params["inducing"])), response_bound=1.0,
                              kernel=str(params["kernel"]), lengthscale=ell)
        bands = []
        for X, y in zip(b.X, b.y):
            st = sufficient_statistics(X, y, spec)
            post = noise_aware_posterior(spec.inducing_points, spec.kernel, st.A, st.B,
                                         scale=float(params["noise_std"]) ** 2, sigma_a=0.0, sigma_b=0.0,
                                         regularise=False)
            mu, var = post.predict(P)
            out.extend([mu] * b.repeats)
            bands.extend([2.0 * np.sqrt(var)] * b.repeats)
        return Released(np.asarray(out), np.asarray(bands), {"inducing_points": spec.n_inducing})
    # non_private: the posterior mean itself (deterministic; repeats are identical)
    r = float(params["r"])
    for X, y in zip(b.X, b.y):
        m = k(P, X) @ posterior_mean_weights(k, X, y, r)
        out.extend([m] * b.repeats)
    return Released(np.asarray(out), None, {"r": r})


def metrics(b: Batch, rel: Released) -> dict[str, np.ndarray]:
    """RMSE, IoU (and band coverage and mean band half-width) of each release against the reference
    (module docstring), plus the release's own per-release numbers."""
    values = rel.values
    ref = np.repeat(b.ref, b.repeats, axis=0)
    w = ex.trapezoid_weights(b.grid.axes())
    rmse = np.sqrt(((values - ref) ** 2) @ w / w.sum())
    smooth = ex.smooth_paths(values, b.grid.shape, b.iou_smoothing_px) if b.grid.dim > 1 else values
    iou = ex.iou(ref >= b.t, smooth >= b.t, w)
    out = {"rmse": rmse, "iou": iou}
    if rel.half_width is not None:
        hw = np.broadcast_to(rel.half_width if rel.half_width.ndim == 2 else rel.half_width[:, None], values.shape)
        out["coverage"] = (np.abs(values - ref) <= hw) @ w / w.sum()
        out["band_half_width"] = hw @ w / w.sum()
    out.update(rel.per_release)
    return out


def evaluate_job(job: tuple) -> dict:
    """One executor item: (batch, mechanism, params, epsilon, delta, seed_entropy) -> metrics and
    the public settings used. Fresh generator from the job's seed (reproducible, independent)."""
    b, mechanism, params, epsilon, delta, entropy = job
    from ..blas_threads import one_blas_thread

    rng = np.random.default_rng(np.random.SeedSequence(entropy))
    with one_blas_thread():
        rel = release_batch(b, mechanism, params, epsilon, delta, rng)
        return {"metrics": metrics(b, rel), "used": rel.used}


#: the ridges r searched for the functional mechanism (non-private search): 10 log-spaced values in [0.1, 30]
DEFAULT_RIDGES = tuple(np.geomspace(0.1, 30.0, 10).round(4))


def candidates(mechanism: str, lengthscales, *, sigmas=(0.03, 0.1, 0.3, 1.0),
               ridges=DEFAULT_RIDGES, kernels=SPARSE_GP_KERNELS,
               noise_stds=(0.03, 0.1, 0.3, 1.0), inducing=(4, 8, 16, 32)) -> list[dict]:
    """The public grid of free hyperparameters searched on the pilot data: lengthscale x sigma
    (posterior sampling), lengthscale x r (functional, non-private), kernel x lengthscale x noise std
    x inducing inputs along the longest side of the box (the sparse GPs)."""
    _check_mechanism(mechanism)
    if mechanism == "posterior_sampling":
        return [{"lengthscale": float(l), "sigma": float(s)} for l in lengthscales for s in sigmas]
    if mechanism in ("dp_sparse_gp", "non_private_sparse_gp"):
        return [{"kernel": str(k), "lengthscale": float(l), "noise_std": float(s), "inducing": int(m)}
                for k in kernels for l in lengthscales for s in noise_stds for m in inducing]
    return [{"lengthscale": float(l), "r": float(r)} for l in lengthscales for r in ridges]


def pilot_jobs(w: Workload, mechanism: str, cands: list[dict], epsilon: float, delta: float, entropy) -> list[tuple]:
    """One job per candidate on all pilot datasets."""
    b = batch_of(w, np.arange(w.pilot_X.shape[0]), pilot=True)
    return [(b, mechanism, c, epsilon, delta, list(entropy) + [i]) for i, c in enumerate(cands)]


def choose(cands: list[dict], results: list[dict]) -> tuple[dict, float]:
    """The candidate with the smallest mean pilot RMSE (first on ties) and that RMSE."""
    scores = [float(np.mean(r["metrics"]["rmse"])) for r in results]
    i = int(np.argmin(scores))
    return cands[i], scores[i]


def summarise(parts: list[dict]) -> dict:
    """Mean and standard error of each metric over all releases of one setting."""
    out = {}
    keys = parts[0]["metrics"].keys()
    for k in keys:
        a = np.concatenate([p["metrics"][k] for p in parts])
        out[k] = float(a.mean())
        out[k + "_se"] = float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else math.nan
    out["releases"] = int(sum(len(p["metrics"]["rmse"]) for p in parts))
    return out


def with_repeats(w: Workload, repeats: int, pilot_repeats: int | None = None) -> Workload:
    return replace(w, repeats=v.integer("repeats", repeats, minimum=1),
                   pilot_repeats=w.pilot_repeats if pilot_repeats is None else v.integer("pilot_repeats", pilot_repeats, minimum=1))
