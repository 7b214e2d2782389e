"""Synthetic (f*, D) pairs for the excursion-set experiments (seed 000, sec. 5, eq. 8 and App. D).

1-D (App. D): x_i ~ Unif[0, 1] i.i.d.; f~* ~ GP(0, exp(-|x - x'| / l_gen)) drawn exactly on
mesh ∪ X; f* = (1 - M_xi) f~* / ||f~*||_inf; y_i = f*(x_i) + xi_i, xi_i ~ Unif[-M_xi, M_xi].
The sup-norm is taken over mesh ∪ X (the paper: "approximated on the evaluation grid"), so that
|f*(x_i)| <= 1 - M_xi and |y_i| <= 1 = M_Y hold exactly, as the privacy bounds assume.

The published script additionally rejected paths whose excursion set was too small, too large
or too fragmented (docs/notes/seed000_published_scripts.md, sec. 1.3); the paper does not mention it. It is available
as ``target_filter="published"``; the default ``"none"`` follows the paper.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .. import validation as v
from ..errors import InvalidParameterError

TARGET_FILTERS = ("none", "published")
#: The published script's rejection rule (README flags): excursion volume in [0.1, 0.9], at most 13
#: components, mean component width >= 0.05.
PUBLISHED_FILTER = {"volume_min": 0.1, "volume_max": 0.9, "max_components": 13, "min_mean_width": 0.05}


def check_noise_level(M_xi) -> float:
    """M_xi must lie in [0, 1): the signal amplitude 1 - M_xi must stay positive."""
    m = v.nonnegative("M_xi", M_xi)
    if not m < 1.0:
        raise InvalidParameterError("M_xi", "in [0, 1) (noise amplitude below the response bound 1)", M_xi)
    return m


@dataclass(frozen=True)
class ExcursionPairs:
    """A batch of (f*, D) pairs on a shared mesh.

    X (B, n, d), y (B, n): the datasets; mesh (m, d) with per-axis coordinates ``axes`` and
    trapezoid ``weights`` (m,); ``signal`` (B, m): the target function on the mesh whose
    excursion set {signal >= t} is estimated; ``truth`` = signal >= t.
    """

    X: np.ndarray
    y: np.ndarray
    mesh: np.ndarray
    axes: tuple
    weights: np.ndarray
    signal: np.ndarray
    t: float
    M_xi: float
    info: dict = field(default_factory=dict)

    @property
    def truth(self) -> np.ndarray:
        return self.signal >= self.t

    def __len__(self) -> int:
        return self.X.shape[0]

    @property
    def n(self) -> int:
        return self.X.shape[1]

    def subset(self, idx) -> ExcursionPairs:
        idx = np.asarray(idx)
        extra = {k: (val[idx] if isinstance(val, np.ndarray) else val.subset(idx))
                 for k, val in self.info.items() if isinstance(val, np.ndarray) or hasattr(val, "subset")}
        info = {**self.info, **extra}
        return replace(self, X=self.X[idx], y=self.y[idx], signal=self.signal[idx], info=info)


def exponential_gp_paths(points, lengthscale: float, rng: np.random.Generator) -> np.ndarray:
    """Exact draws of GP(0, exp(-|x - x'| / lengthscale)) at 1-D points, one path per row.

    ``points`` (B, N): each row is evaluated jointly (duplicates allowed). The exponential kernel
    is a stationary Ornstein-Uhlenbeck (Markov) process, so along sorted points
    f_i = rho_i f_{i-1} + sqrt(1 - rho_i^2) z_i with rho_i = exp(-(x_i - x_{i-1}) / l): O(N) per row.
    """
    rng = v.generator("rng", rng)
    ell = v.positive("lengthscale", lengthscale)
    pts = v.finite_array("points", points, ndim=(1, 2))
    if pts.ndim == 1:
        pts = pts[None]
    order = np.argsort(pts, axis=1, kind="stable")
    xs = np.take_along_axis(pts, order, axis=1)
    rho = np.exp(-np.diff(xs, axis=1) / ell)
    innov = np.sqrt(np.maximum(1.0 - rho * rho, 0.0))
    z = rng.standard_normal(xs.shape)
    f = np.empty_like(xs)
    f[:, 0] = z[:, 0]
    for i in range(1, xs.shape[1]):
        f[:, i] = rho[:, i - 1] * f[:, i - 1] + innov[:, i - 1] * z[:, i]
    out = np.empty_like(f)
    np.put_along_axis(out, order, f, axis=1)
    return out


def _published_accept(signal: np.ndarray, weights: np.ndarray, t: float) -> np.ndarray:
    s = signal >= t
    volume = s @ weights / weights.sum()
    ncomp = s[:, 0].astype(int) + np.sum(s[:, 1:] & ~s[:, :-1], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_width = np.where(ncomp > 0, (s @ weights) / np.maximum(ncomp, 1), 0.0)
    f = PUBLISHED_FILTER
    return ((volume >= f["volume_min"]) & (volume <= f["volume_max"]) & (ncomp <= f["max_components"])
            & (mean_width >= f["min_mean_width"]))


def excursion_pairs_1d(n_pairs: int, n: int, M_xi: float, *, rng: np.random.Generator, mesh_size: int = 800,
                       lengthscale_gen: float = 1.0, t: float = 0.0, target_filter: str = "none",
                       max_attempts: int = 10_000, shared_target: bool = False) -> ExcursionPairs:
    """``n_pairs`` independent 1-D (f*, D) pairs of App. D (see the module docstring).

    ``shared_target=True`` is the published script's design instead (docs/notes/seed000_published_scripts.md, sec. 2.2, D11): ONE target
    f* (drawn jointly on the mesh and every dataset's inputs, rescaled and filtered as a whole) and
    ``n_pairs`` independent datasets of it."""
    if shared_target:
        return _shared_target_pairs(n_pairs, n, M_xi, rng=rng, mesh_size=mesh_size, lengthscale_gen=lengthscale_gen,
                                    t=t, target_filter=target_filter, max_attempts=max_attempts)
    from ..models.domain import Box, trapezoid_weights

    rng = v.generator("rng", rng)
    n_pairs = v.integer("n_pairs", n_pairs, minimum=1)
    n = v.integer("n", n, minimum=1)
    M_xi = check_noise_level(M_xi)
    mesh_size = v.integer("mesh_size", mesh_size, minimum=2)
    t = float(v.finite_array("t", t, ndim=0))
    if abs(t) >= 1.0 - M_xi:
        raise InvalidParameterError("t", f"inside the signal range (-{1 - M_xi:g}, {1 - M_xi:g})", t)
    if target_filter not in TARGET_FILTERS:
        raise InvalidParameterError("target_filter", f"one of {TARGET_FILTERS}", target_filter)
    mesh, axes = Box.unit(1).grid(mesh_size)
    w = trapezoid_weights(axes)
    X = np.sort(rng.uniform(0.0, 1.0, size=(n_pairs, n)), axis=1)
    grid = np.broadcast_to(mesh[:, 0], (n_pairs, mesh_size))

    def draw(rows):
        f = exponential_gp_paths(np.concatenate([grid[rows], X[rows]], axis=1), lengthscale_gen, rng)
        f = (1.0 - M_xi) * f / np.max(np.abs(f), axis=1, keepdims=True)
        return f[:, :mesh_size], f[:, mesh_size:]

    signal, fX = draw(np.arange(n_pairs))
    attempts = np.ones(n_pairs, dtype=int)
    if target_filter == "published":
        bad = np.flatnonzero(~_published_accept(signal, w, t))
        while bad.size:
            if attempts.max() >= max_attempts:
                raise InvalidParameterError("target_filter", f"acceptable within {max_attempts} attempts",
                                            f"{bad.size} pairs still rejected")
            s_new, f_new = draw(bad)
            signal[bad], fX[bad] = s_new, f_new
            attempts[bad] += 1
            bad = bad[~_published_accept(signal[bad], w, t)]
    y = fX + rng.uniform(-M_xi, M_xi, size=fX.shape)
    info = {"generator": "exponential GP (OU), rescaled to sup-norm 1 - M_xi on mesh ∪ X",
            "lengthscale_gen": float(lengthscale_gen), "target_filter": target_filter,
            "attempts": attempts, "f_X": fX}
    return ExcursionPairs(X=X[..., None], y=y, mesh=mesh, axes=axes, weights=w, signal=signal, t=t,
                          M_xi=M_xi, info=info)


def _shared_target_pairs(n_pairs, n, M_xi, *, rng, mesh_size, lengthscale_gen, t, target_filter, max_attempts):
    from ..models.domain import Box, trapezoid_weights

    rng = v.generator("rng", rng)
    n_pairs = v.integer("n_pairs", n_pairs, minimum=1)
    n = v.integer("n", n, minimum=1)
    M_xi = check_noise_level(M_xi)
    if target_filter not in TARGET_FILTERS:
        raise InvalidParameterError("target_filter", f"one of {TARGET_FILTERS}", target_filter)
    mesh, axes = Box.unit(1).grid(v.integer("mesh_size", mesh_size, minimum=2))
    w = trapezoid_weights(axes)
    X = np.sort(rng.uniform(0.0, 1.0, size=(n_pairs, n)), axis=1)
    pts = np.concatenate([mesh[:, 0], X.ravel()])[None]
    for attempt in range(1, max_attempts + 1):  # noqa: B007 (the count is recorded after the loop)
        f = exponential_gp_paths(pts, lengthscale_gen, rng)[0]
        f = (1.0 - M_xi) * f / np.max(np.abs(f))
        signal = f[:mesh_size]
        if target_filter == "none" or _published_accept(signal[None], w, t)[0]:
            break
    else:
        raise InvalidParameterError("target_filter", f"acceptable within {max_attempts} attempts", "rejected")
    fX = f[mesh_size:].reshape(n_pairs, n)
    y = fX + rng.uniform(-M_xi, M_xi, size=fX.shape)
    info = {"generator": "ONE exponential GP (OU) target shared by all datasets (the published script's design)",
            "lengthscale_gen": float(lengthscale_gen), "target_filter": target_filter,
            "attempts": np.full(n_pairs, attempt), "f_X": fX, "shared_target": True}
    return ExcursionPairs(X=X[..., None], y=y, mesh=mesh, axes=axes, weights=w,
                          signal=np.broadcast_to(signal, (n_pairs, mesh_size)).copy(), t=t, M_xi=M_xi, info=info)
