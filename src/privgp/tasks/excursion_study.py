"""The privacy-utility study of seed 000, sec. 5 and App. D, as a library pipeline (no files).

For a pool of (f*, D) pairs (:class:`~privgp.datasets.synthetic.ExcursionPairs`):

1. theta_* = argmin of the average integrated BCE (eq. 6) and theta_L^priv = the same under
   eps_L(theta) < eps0 (eq. 7), by :func:`~privgp.tasks.hyperparameter_search.grid_search`;
2. the cut-offs C (deterministic estimate {p_D >= C}) and c (L-path vote fraction) by mean IoU
   on a separate validation pool;
3. per pair of the stored pool: d_eff for both settings, the pairwise relative BCE increase, the
   IoU of {p_D >= C} under theta_*, and the Monte-Carlo mean and SD (over ``n_mc`` independent
   sets of L posterior paths) of the IoU of the randomised release under theta_L^priv, and the
   relative IoU gap 1 - IoU_release / IoU_*.

Every sweep goes through an executor (``privgp.parallel``) over chunks of pairs, so it runs in
local processes or on Dask. In the search, the 1-D exponential kernel's posterior on the mesh comes from an
exact O(n + m) Kalman smoother (:class:`~privgp.models.gp.markov1d.ExpKernelPosterior1D`); other kernels
use one eigendecomposition per chunk and lengthscale for all r (:class:`~privgp.models.gp.EigenPosterior`);
sigma is vectorised.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from .. import validation as v
from ..errors import InvalidParameterError
from ..models.domain import Box
from ..models.gp import EigenPosterior, ExactPosterior
from ..models.gp.markov1d import ExpKernelPosterior1D
from ..models.kernels import DistanceKernel, make_kernel, pairwise_distances
from . import excursion as ex
from .fast_bce import ClippedBCE
from .hyperparameter_search import CachedLoss, EpsilonCache, SearchResult, SearchSpace, grid_searches


def _one_blas_thread(fn):
    """Run a chunk function with BLAS pinned to one thread (also in-process, e.g. workers=1):
    the small batched decompositions are much slower multi-threaded, above all on a busy machine."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from ..blas_threads import one_blas_thread

        with one_blas_thread():
            return fn(*args, **kwargs)

    return wrapper


#: Largest number of kernel entries (pairs x mesh x n) formed at once inside a chunk.
_MAX_BLOCK = 3_000_000


@dataclass(frozen=True)
class PrivacySpec:
    """How eps_L(theta) is certified: seed 000 Thm 3.1 + L-fold composition + conversion.

    ``sensitivity``: "exp1d" (Lemma B.7, 1-D exponential kernel) or "generic" (Lemma B.1);
    ``constants``: "proven" (the lemmas) or "published" (Delta_n / sqrt(2), reproduces the
    paper's numbers, NOT covered by the lemmas); ``conversion``: "mironov" (the paper's eq. 3)
    or "improved".
    """

    eps0: float
    delta: float
    n: int
    domain: Box
    L: int = 1
    sensitivity: str = "exp1d"
    constants: str = "proven"
    conversion: str = "mironov"
    kernel: str = "exponential"
    M_Y: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "eps0", v.positive("eps0", self.eps0))
        object.__setattr__(self, "delta", v.probability("delta", self.delta))
        object.__setattr__(self, "n", v.integer("n", self.n, minimum=1))
        object.__setattr__(self, "L", v.integer("L", self.L, minimum=1))
        if self.constants not in ("proven", "published"):
            raise InvalidParameterError("constants", "'proven' or 'published'", self.constants)

    def epsilon(self, lengthscale, r, sigma) -> np.ndarray:
        from ..mechanisms.posterior_sample import epsilon_posterior_sampling

        return epsilon_posterior_sampling(self.n, r, sigma, self.delta, kernel=self.kernel,
                                          lengthscale=lengthscale, domain=self.domain, L=self.L, M_Y=self.M_Y,
                                          sensitivity=self.sensitivity, constants=self.constants,
                                          conversion=self.conversion).epsilon

    def to_dict(self) -> dict:
        return {"eps0": self.eps0, "delta": self.delta, "n": self.n, "domain": self.domain.to_dict(), "L": self.L,
                "sensitivity": self.sensitivity, "constants": self.constants, "conversion": self.conversion,
                "kernel": self.kernel, "M_Y": self.M_Y}


@dataclass(frozen=True)
class ReleaseSpec:
    """Where released paths live and how they are post-processed (a fixed, data-independent map)."""

    grid: np.ndarray            # (mr, d) points
    axes: tuple                 # per-axis coordinates (grid = product, 'ij' order)
    smoothing_px: float = 0.0   # Gaussian filter in grid pixels (App. D.1); 0 = none

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a) for a in self.axes)

    @property
    def weights(self) -> np.ndarray:
        return ex.trapezoid_weights(self.axes)


@dataclass(frozen=True)
class PairChunk:
    """The payload of one task: a few pairs and what is needed to score them."""

    X: np.ndarray
    y: np.ndarray
    mesh: np.ndarray
    weights: np.ndarray
    truth: np.ndarray           # (B, m) on the mesh
    release_truth: np.ndarray   # (B, mr) on the release grid
    seeds: tuple                # one SeedSequence per pair (paths)
    t: float


@dataclass(frozen=True)
class StudyConfig:
    space: SearchSpace
    private_space: SearchSpace
    privacy: PrivacySpec
    release: ReleaseSpec
    kernel: str = "exponential"
    clip: float = ex.BCE_CLIP
    n_mc: int = 50
    chunk_size: int = 50
    C_grid: tuple = tuple(ex.default_probability_cutoffs(99))

    def to_dict(self) -> dict:
        return {"space": self.space.to_dict(), "private_space": self.private_space.to_dict(),
                "privacy": self.privacy.to_dict(), "kernel": self.kernel, "bce_clip": self.clip,
                "n_mc": self.n_mc, "chunk_size": self.chunk_size,
                "release_grid_shape": list(self.release.shape), "smoothing_px": self.release.smoothing_px,
                "C_grid": [min(self.C_grid), max(self.C_grid), len(self.C_grid)]}


@dataclass(frozen=True)
class StudyResult:
    unconstrained: SearchResult
    private: SearchResult
    C: float
    c: float | None
    C_curve: np.ndarray
    c_curve: np.ndarray | None
    per_pair: pd.DataFrame
    epsilon_star: float
    epsilon_priv: float | None
    config: dict = field(default_factory=dict)
    stage_seconds: dict = field(default_factory=dict)   # wall time per stage (search shared by all results)

    @property
    def feasible(self) -> bool:
        return self.private.feasible


# --------------------------------------------------------------------------------------------
# per-chunk work (module level: picklable for process pools and Dask)

def _sub_batches(B: int, m: int, n: int):
    step = max(1, _MAX_BLOCK // max(1, m * n))
    for lo in range(0, B, step):
        yield slice(lo, min(B, lo + step))


_WORKSPACE: dict[str, np.ndarray] = {}


def _workspace(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A per-process array reused by successive :class:`_Grams` (one alive at a time in a chunk
    function): the (pairs, mesh, n) blocks are ~20 MB, and fresh ones cost page faults each round."""
    buf = _WORKSPACE.get(name)
    if buf is None or buf.shape != shape:
        buf = _WORKSPACE[name] = np.empty(shape)
    return buf


class _Grams:
    """k(X, X) and k(mesh, X) of a sub-batch of pairs for successive lengthscales.

    The distances are computed once and each lengthscale's Gram matrices are formed from them in
    place (the same values as ``kernel(X)`` / ``kernel(mesh, X)``); a kernel that is not a distance
    kernel is evaluated directly."""

    def __init__(self, kernel: str, X: np.ndarray, mesh: np.ndarray):
        self.kernel, self.X, self.mesh = kernel, X, mesh
        self.distance = isinstance(make_kernel(kernel, 1.0), DistanceKernel)
        if self.distance:
            self.D_xx = pairwise_distances(X, X)
            shape = X.shape[:-2] + (mesh.shape[0], X.shape[-2])
            self.D_qx = pairwise_distances(mesh, X, out=_workspace("D_qx", shape))
            self._cross = _workspace("cross", shape)

    def at_one_setting(self, ell: float, r: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mean and normalised variance on the mesh (b, m) and d_eff (b,) at one (lengthscale, r): per
        dataset a Cholesky factor and one triangular product (:meth:`~privgp.models.gp.ExactPosterior.mean_kD_diag`),
        cheaper than the eigenbasis for a single r."""
        k = make_kernel(self.kernel, float(ell))
        b, m = self.X.shape[0], self.mesh.shape[0]
        mean, var, deff = np.empty((b, m)), np.empty((b, m)), np.empty(b)
        for j in range(b):
            gram = k.of_distance(self.D_xx[j]) if isinstance(k, DistanceKernel) else k(self.X[j])
            cross = k.of_distance(self.D_qx[j], out=self._cross[j]) if isinstance(k, DistanceKernel) else None
            post = ExactPosterior(k, self.X[j], y[j], r, gram=gram)
            mean[j], var[j] = post.mean_kD_diag(self.mesh, cross=cross)
            deff[j] = post.effective_dimension()
        return mean, var, deff

    def posterior(self, ell: float, y: np.ndarray) -> tuple[EigenPosterior, np.ndarray | None]:
        """The eigendecomposed posterior at ``ell`` and k(mesh, X) for its :meth:`~EigenPosterior.mean_var`
        (valid until the next call)."""
        k = make_kernel(self.kernel, float(ell))
        if not isinstance(k, DistanceKernel):        # the same test as self.distance
            return EigenPosterior(k, self.X, y), None
        post = EigenPosterior(k, self.X, y, gram=k.of_distance(self.D_xx))
        return post, k.of_distance(self.D_qx, out=self._cross)

    def mean_var(self, ell: float, y: np.ndarray, rs) -> tuple[np.ndarray, np.ndarray, EigenPosterior]:
        """Mean and normalised variance on the mesh, shapes (R, b, m), and the posterior."""
        post, cross = self.posterior(ell, y)
        mean, var = post.mean_var(self.mesh, rs, cross=cross)
        if mean.ndim == 2:
            mean, var = mean[:, None], var[:, None]
        return mean, var, post


def _setting_posteriors(kernel: str, X: np.ndarray, y: np.ndarray, mesh: np.ndarray, settings: np.ndarray):
    """Mean and normalised variance on the mesh, each (b, m), for every (lengthscale, r) row of ``settings``
    (rows of one lengthscale adjacent): yields (row, mean, var).

    The 1-D exponential kernel uses the exact O(n + m) Kalman smoother
    (:class:`~privgp.models.gp.markov1d.ExpKernelPosterior1D`) for all settings at once; other kernels one
    eigendecomposition per lengthscale that serves every r (:class:`~privgp.models.gp.EigenPosterior`)."""
    if kernel == "exponential" and X.shape[-1] == 1:
        post = ExpKernelPosterior1D(X, y, mesh)
        for lo, mean, var in post.iter_mean_var(settings[:, 0], settings[:, 1]):
            for i in range(mean.shape[0]):
                yield lo + i, mean[i], var[i]
        return
    grams = _Grams(kernel, X, mesh)
    for ell in np.unique(settings[:, 0]):
        rows = np.flatnonzero(settings[:, 0] == ell)
        mean, var, _ = grams.mean_var(ell, y, settings[rows, 1])
        yield from zip(rows, mean, var)


@_one_blas_thread
def chunk_losses(chunk: PairChunk, candidates: np.ndarray, *, kernel: str, clip: float) -> np.ndarray:
    """Integrated BCE of every candidate (lengthscale, r, sigma) on every pair: shape (C, B).

    Per sub-batch of pairs the posterior mean and variance on the mesh are formed once per (lengthscale, r)
    (:func:`_setting_posteriors`) and sigma is vectorised; the clipped BCE sum is
    :class:`~privgp.tasks.fast_bce.ClippedBCE` (equal to :func:`~privgp.tasks.excursion.bce_from_margin`
    to ~1e-14 relative, within its clip bounds)."""
    cand = np.asarray(candidates, dtype=float).reshape(-1, 3)
    B, n = chunk.y.shape
    out = np.empty((cand.shape[0], B))
    settings, which = np.unique(cand[:, :2], axis=0, return_inverse=True)
    rows = np.split(np.argsort(which.reshape(-1), kind="stable"), np.cumsum(np.bincount(which.reshape(-1)))[:-1])
    bce = ClippedBCE(clip)
    for sl in _sub_batches(B, chunk.mesh.shape[0], n):
        for i, mean, var in _setting_posteriors(kernel, chunk.X[sl], chunk.y[sl], chunk.mesh, settings):
            out[rows[i], sl] = bce.of_posterior(chunk.truth[sl], mean, var, cand[rows[i], 2], chunk.weights, chunk.t)
    return out


def _theta_statistics(chunk: PairChunk, thetas, *, kernel: str, clip: float | None,
                      probabilities: bool = True) -> list[dict[str, Any]]:
    """Per setting theta = (lengthscale, r, sigma): the integrated BCE (when ``clip`` is given), p_D on
    the mesh (None without ``probabilities``) and d_eff of every pair, all from one eigendecomposition per
    (pair, setting)."""
    B, n = chunk.y.shape
    m = chunk.mesh.shape[0]
    out: list[dict[str, Any]] = [{"bce": np.empty(B), "p": np.empty((B, m)) if probabilities else None, "deff": np.empty(B)}
           for _ in thetas]
    for sl in _sub_batches(B, m, n):
        grams = _Grams(kernel, chunk.X[sl], chunk.mesh)
        for res, (ell, r, sigma) in zip(out, thetas):
            mean, var, deff = grams.at_one_setting(ell, r, chunk.y[sl])
            if clip is not None:
                margin = ex.standardized_margin(chunk.truth[sl], mean, var, chunk.t)
                res["bce"][sl] = ex.bce_from_margin(margin[None], np.array([[sigma]]), chunk.weights, clip=clip)[0]
            if probabilities:
                res["p"][sl] = ex.excursion_probability(mean, var, sigma, chunk.t)
            res["deff"][sl] = deff
    return out


@_one_blas_thread
def chunk_probabilities(chunk: PairChunk, theta, *, kernel: str) -> np.ndarray:
    """p_D on the mesh for every pair under theta: shape (B, m)."""
    return _theta_statistics(chunk, [theta], kernel=kernel, clip=None)[0]["p"]


def posterior_paths(kernel: str, X, y, release: ReleaseSpec, theta, n_paths: int,
                    rng: np.random.Generator) -> np.ndarray:
    """``n_paths`` exact independent posterior paths on the release grid, post-processed: (n_paths, mr).

    The sampler is chosen by :func:`privgp.models.sampling.exact_paths` (the O(n + m) sampler for the 1-D
    exponential kernel; on 2-D grids Matheron conditioning with the grid's prior factor shared by all
    pairs)."""
    from ..models.sampling import exact_paths

    ell, r, sigma = (float(a) for a in theta)
    paths = exact_paths(make_kernel(kernel, ell), X, y, release.axes, r=r, sigma=sigma, rng=rng, L=n_paths)
    return ex.smooth_paths(paths.reshape(n_paths, -1), release.shape, release.smoothing_px)


@_one_blas_thread
def chunk_release_iou(chunk: PairChunk, theta, *, kernel: str, release: ReleaseSpec, L: int, n_mc: int,
                      cutoffs, salt: int = 0) -> np.ndarray:
    """IoU of the L-path vote release for each pair, MC repetition and cut-off: (B, n_mc, len(cutoffs))."""
    cutoffs = np.asarray(cutoffs, dtype=float)
    w = release.weights
    out = np.empty((chunk.y.shape[0], n_mc, cutoffs.size))
    for j in range(chunk.y.shape[0]):
        rng = np.random.default_rng(np.random.SeedSequence(chunk.seeds[j]).spawn(salt + 1)[salt])
        paths = posterior_paths(kernel, chunk.X[j], chunk.y[j], release, theta, n_mc * L, rng)
        votes = ex.vote_fraction(paths.reshape(n_mc, L, -1), chunk.t)          # (n_mc, mr)
        for ci, c in enumerate(cutoffs):
            out[j, :, ci] = ex.iou(chunk.release_truth[j], votes >= c, w)
    return out


@_one_blas_thread
def chunk_metrics(chunk: PairChunk, theta_star, theta_priv, C: float, c: float | None, *, kernel: str,
                  clip: float, release: ReleaseSpec, L: int, n_mc: int) -> dict[str, np.ndarray]:
    """Per-pair statistics of Tables 1-4 for one chunk."""
    thetas = [tuple(theta_star)] + ([tuple(theta_priv)] if theta_priv is not None else [])
    stats = _theta_statistics(chunk, thetas, kernel=kernel, clip=clip)
    star = stats[0]
    out = {"bce_star": star["bce"], "deff_star": star["deff"],
           "iou_star": ex.iou(chunk.truth, ex.deterministic_estimate(star["p"], C), chunk.weights)}
    if theta_priv is not None:
        priv = stats[1]
        rel = chunk_release_iou(chunk, theta_priv, kernel=kernel, release=release, L=L, n_mc=n_mc,
                                cutoffs=[c], salt=1)[:, :, 0]
        out.update(bce_priv=priv["bce"], deff_priv=priv["deff"],
                   iou_priv_C=ex.iou(chunk.truth, ex.deterministic_estimate(priv["p"], C), chunk.weights),
                   iou_path_mean=rel.mean(axis=1), iou_path_sd=rel.std(axis=1, ddof=1) if n_mc > 1
                   else np.zeros(rel.shape[0]))
    return out


# --------------------------------------------------------------------------------------------
# orchestration

def make_chunks(pairs, release_signal: np.ndarray, chunk_size: int, seed_seq: np.random.SeedSequence) -> list[PairChunk]:
    """Split a pool of pairs into executor tasks; one child seed per pair (independent of chunking)."""
    chunk_size = v.integer("chunk_size", chunk_size, minimum=1)
    seeds = [tuple(s.generate_state(4).tolist()) for s in seed_seq.spawn(len(pairs))]
    truth = pairs.truth
    rtruth = np.asarray(release_signal) >= pairs.t
    chunks = []
    for lo in range(0, len(pairs), chunk_size):
        sl = slice(lo, min(len(pairs), lo + chunk_size))
        chunks.append(PairChunk(X=pairs.X[sl], y=pairs.y[sl], mesh=pairs.mesh, weights=pairs.weights,
                                truth=truth[sl], release_truth=rtruth[sl], seeds=tuple(seeds[sl]), t=pairs.t))
    return chunks


def _cat(results, axis=-1):
    return np.concatenate(results, axis=axis)


def run_excursion_study(train, val, cfg: StudyConfig, executor, *, seed: int = 0,
                        release_signal_train=None, release_signal_val=None, label: str = "",
                        privacy: dict[str, PrivacySpec] | None = None) -> dict[str, StudyResult]:
    """Run steps 1-3 of the module docstring for each privacy specification.

    ``privacy`` maps names (e.g. "proven", "published") to specifications; default
    ``{cfg.privacy.constants: cfg.privacy}``. All of them share the unconstrained search and every
    loss evaluation. ``release_signal_*``: the target on the release grid (default: the mesh
    signal, when the release grid is the mesh). Returns one :class:`StudyResult` per name."""
    if len(train) == 0 or len(val) == 0:
        raise InvalidParameterError("pairs", "non-empty training and validation pools", (len(train), len(val)))
    privacy = {cfg.privacy.constants: cfg.privacy} if privacy is None else dict(privacy)
    if not privacy:
        raise InvalidParameterError("privacy", "at least one privacy specification", privacy)
    ss = np.random.SeedSequence(seed)
    s_train, s_val = ss.spawn(2)
    rs_train = train.signal if release_signal_train is None else release_signal_train
    rs_val = val.signal if release_signal_val is None else release_signal_val
    chunks = make_chunks(train, rs_train, cfg.chunk_size, s_train)
    vchunks = make_chunks(val, rs_val, cfg.chunk_size, s_val)
    tag = f"{label} " if label else ""

    def mean_loss(cands):
        parts = executor.map(partial(chunk_losses, candidates=cands, kernel=cfg.kernel, clip=cfg.clip), chunks,
                             desc=f"{tag}BCE x {len(cands)} settings")
        return _cat(parts, axis=1).mean(axis=1)

    clock = time.perf_counter()
    loss = CachedLoss(mean_loss)
    eps_caches = {name: EpsilonCache(spec.epsilon) for name, spec in privacy.items()}
    # all searches in lockstep: one pass over the pairs per round (each lengthscale decomposed once)
    found = grid_searches(loss, [{"space": cfg.space}] + [
        {"space": cfg.private_space, "epsilon": eps_caches[name], "eps0": spec.eps0}
        for name, spec in privacy.items()])
    uncon, private = found[0], dict(zip(privacy, found[1:]))
    searched = time.perf_counter()
    theta_star = uncon.theta
    p_val = _cat(executor.map(partial(chunk_probabilities, theta=theta_star, kernel=cfg.kernel), vchunks,
                              desc=f"{tag}validation C"), axis=0)
    C, C_curve = ex.choose_cutoff(p_val, val.truth, val.weights, np.asarray(cfg.C_grid))
    shared = {"search": searched - clock, "validation_C": time.perf_counter() - searched}

    results = {}
    for name, spec in privacy.items():
        t_name = time.perf_counter()
        eps = eps_caches[name]
        priv = private[name]
        eps_star = float(eps(np.array([theta_star]))[0])
        theta_priv = priv.theta if priv.feasible else None
        c, c_curve = None, None
        if theta_priv is not None:
            cut = ex.vote_cutoffs(spec.L)
            if cut.size == 1:
                c = float(cut[0])   # L = 1: every cut-off in (0, 1] gives the same set
            else:
                ious = _cat(executor.map(partial(chunk_release_iou, theta=theta_priv, kernel=cfg.kernel,
                                                 release=cfg.release, L=spec.L, n_mc=max(1, cfg.n_mc // 5),
                                                 cutoffs=cut), vchunks, desc=f"{tag}validation c"), axis=0)
                c_curve = ious.mean(axis=(0, 1))
                c = float(cut[int(np.argmax(c_curve))])
        parts = executor.map(partial(chunk_metrics, theta_star=theta_star, theta_priv=theta_priv, C=C, c=c,
                                     kernel=cfg.kernel, clip=cfg.clip, release=cfg.release, L=spec.L,
                                     n_mc=cfg.n_mc), chunks, desc=f"{tag}per-pair metrics ({name})")
        per = pd.DataFrame({k: np.concatenate([p[k] for p in parts]) for k in parts[0]})
        if theta_priv is not None:
            per["rel_bce_increase"] = per["bce_priv"] / per["bce_star"] - 1.0
            with np.errstate(divide="ignore", invalid="ignore"):
                per["rel_iou_gap"] = np.where(per["iou_star"] > 0, 1.0 - per["iou_path_mean"] / per["iou_star"],
                                              np.nan)
        conf = cfg.to_dict()
        conf["privacy"] = spec.to_dict()
        results[name] = StudyResult(unconstrained=uncon, private=priv, C=C, c=c, C_curve=C_curve, c_curve=c_curve,
                                    per_pair=per, epsilon_star=eps_star,
                                    epsilon_priv=None if theta_priv is None else float(priv.best_setting["epsilon"]),
                                    config=conf, stage_seconds={**shared, "metrics": time.perf_counter() - t_name})
    return results


def summarize(result: StudyResult) -> dict[str, Any]:
    """Median [q25, q75] of each per-pair column, plus the selected settings."""
    out: dict[str, Any] = {"theta_star": dict(zip(("lengthscale", "r", "sigma"), result.unconstrained.theta)),
                           "epsilon_star": result.epsilon_star, "C": result.C, "c": result.c,
                           "feasible": result.feasible, "stage_seconds": dict(result.stage_seconds)}
    if result.feasible:
        out["theta_priv"] = dict(zip(("lengthscale", "r", "sigma"), result.private.theta))
        out["epsilon_priv"] = result.epsilon_priv
    else:
        out["message"] = result.private.message
    for col in result.per_pair.columns:
        q = np.nanquantile(result.per_pair[col].to_numpy(dtype=float), [0.25, 0.5, 0.75])
        out[col] = {"median": float(q[1]), "q25": float(q[0]), "q75": float(q[2])}
    return out
