"""The 2-D synthetic pollution field of seed 000, App. D.1, and its (f*, D) pairs.

h(x) = sum_{j=1}^K a_j exp(-(x - c_j)^T Sigma_j^{-1} (x - c_j) / 2),
Sigma_j = R(phi_j) diag(w_{j,1}^2, w_{j,2}^2) R(phi_j)^T;
g~(x) = 1 / (1 + exp(-gamma (h(x) - b_h))), b_h = the 65% quantile of h on a reference grid;
g = g~ range-normalised to [0, 1] on the reference grid; f*(x) = 2 g(x) - 1 in [-1, 1].
Sensors x_i ~ Unif[0, 1]^2, y_i = (1 - M_xi) f*(x_i) + xi_i, xi_i ~ Unif[-M_xi, M_xi], and the target
is {x : (1 - M_xi) f*(x) >= t}, t = (1 - M_xi)(2q - 1) (q = 1/2 gives t = 0).

The paper does not state the priors of the centres, widths, amplitudes and angles, and the module
that generated its fields was never published (docs/notes/seed000_published_scripts.md, sec. 1.4). Ours, recorded in
every run (:meth:`PlumePrior.to_dict`): c_j ~ Unif[0, 1]^2; w_{j,1} ~ Unif[0.20, 0.35] (the
published script's width range), w_{j,2} = w_{j,1} / rho_j with rho_j ~ Unif[1, 1.4] (its
anisotropy limit); a_j ~ Unif[0.5, 1.5]; phi_j ~ Unif[0, 2 pi]. Values outside the reference
grid's range are clipped into [0, 1], so |y_i| <= 1 = M_Y holds exactly.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from .. import validation as v
from ..errors import InvalidParameterError
from .synthetic import ExcursionPairs, check_noise_level


@dataclass(frozen=True)
class PlumePrior:
    """Priors and shape constants of the plume field (App. D.1; K, gamma, quantile as in the paper)."""

    K: int = 2
    width_min: float = 0.20
    width_max: float = 0.35
    anisotropy_max: float = 1.4
    amplitude_min: float = 0.5
    amplitude_max: float = 1.5
    gamma: float = 5.0
    quantile: float = 0.65
    reference_grid: int = 180

    def __post_init__(self):
        v.integer("K", self.K, minimum=1)
        v.positive("width_min", self.width_min)
        v.greater_than("width_max", self.width_max, self.width_min - 1e-15)
        v.greater_than("anisotropy_max", self.anisotropy_max, 1.0 - 1e-15)
        v.positive("amplitude_min", self.amplitude_min)
        v.greater_than("amplitude_max", self.amplitude_max, self.amplitude_min - 1e-15)
        v.positive("gamma", self.gamma)
        v.probability("quantile", self.quantile)
        v.integer("reference_grid", self.reference_grid, minimum=2)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["priors"] = {"centre": "Unif[0,1]^2", "width_1": f"Unif[{self.width_min}, {self.width_max}]",
                       "width_2": f"width_1 / Unif[1, {self.anisotropy_max}]",
                       "amplitude": f"Unif[{self.amplitude_min}, {self.amplitude_max}]", "angle": "Unif[0, 2 pi]"}
        return d


@dataclass(frozen=True)
class PlumeFields:
    """B sampled fields f* (values in [-1, 1]); call ``values(X)`` with X (m, 2) or (B, m, 2)."""

    centres: np.ndarray      # (B, K, 2)
    precisions: np.ndarray   # (B, K, 2, 2)
    amplitudes: np.ndarray   # (B, K)
    b_h: np.ndarray          # (B,)
    g_min: np.ndarray        # (B,)
    g_max: np.ndarray        # (B,)
    gamma: float

    def __len__(self) -> int:
        return self.centres.shape[0]

    def subset(self, idx) -> PlumeFields:
        idx = np.asarray(idx)
        return replace(self, centres=self.centres[idx], precisions=self.precisions[idx],
                       amplitudes=self.amplitudes[idx], b_h=self.b_h[idx], g_min=self.g_min[idx],
                       g_max=self.g_max[idx])

    def h(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim == 2:
            X = X[None]
        d = X[:, None, :, :] - self.centres[:, :, None, :]             # (B, K, m, 2)
        q = np.einsum("bkmi,bkij,bkmj->bkm", d, self.precisions, d)
        return np.einsum("bk,bkm->bm", self.amplitudes, np.exp(-0.5 * q))

    def _g_tilde(self, X) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.gamma * (self.h(X) - self.b_h[:, None])))

    def values(self, X) -> np.ndarray:
        """f*(x) = 2 g(x) - 1 for every field: shape (B, m)."""
        g = (self._g_tilde(X) - self.g_min[:, None]) / (self.g_max - self.g_min)[:, None]
        return 2.0 * np.clip(g, 0.0, 1.0) - 1.0


def sample_plume_fields(n_fields: int, prior: PlumePrior, rng: np.random.Generator,
                        chunk: int = 100) -> PlumeFields:
    """Draw ``n_fields`` independent fields from the prior (see the module docstring)."""
    rng = v.generator("rng", rng)
    B = v.integer("n_fields", n_fields, minimum=1)
    K = prior.K
    centres = rng.uniform(0.0, 1.0, size=(B, K, 2))
    w1 = rng.uniform(prior.width_min, prior.width_max, size=(B, K))
    w2 = w1 / rng.uniform(1.0, prior.anisotropy_max, size=(B, K))
    amps = rng.uniform(prior.amplitude_min, prior.amplitude_max, size=(B, K))
    phi = rng.uniform(0.0, 2 * np.pi, size=(B, K))
    c, s = np.cos(phi), np.sin(phi)
    R = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)        # (B, K, 2, 2)
    D = np.zeros((B, K, 2, 2))
    D[..., 0, 0], D[..., 1, 1] = 1.0 / w1**2, 1.0 / w2**2
    prec = R @ D @ np.swapaxes(R, -1, -2)
    g = prior.reference_grid
    ax = np.linspace(0.0, 1.0, g)
    ref = np.stack([a.ravel() for a in np.meshgrid(ax, ax, indexing="ij")], -1)
    b_h, g_min, g_max = np.empty(B), np.empty(B), np.empty(B)
    for lo in range(0, B, chunk):
        sl = slice(lo, min(B, lo + chunk))
        part = PlumeFields(centres[sl], prec[sl], amps[sl], np.zeros(sl.stop - lo), np.zeros(sl.stop - lo),
                           np.ones(sl.stop - lo), prior.gamma)
        h = part.h(ref)
        b_h[sl] = np.quantile(h, prior.quantile, axis=1)
        gt = 1.0 / (1.0 + np.exp(-prior.gamma * (h - b_h[sl, None])))
        g_min[sl], g_max[sl] = gt.min(axis=1), gt.max(axis=1)
    return PlumeFields(centres, prec, amps, b_h, g_min, g_max, float(prior.gamma))


def excursion_pairs_2d(n_pairs: int, n: int, M_xi: float, *, rng: np.random.Generator, mesh_size: int = 80,
                       prior: PlumePrior | None = None, q: float = 0.5, lattice: int | None = None) -> ExcursionPairs:
    """``n_pairs`` independent 2-D (f*, D) pairs of App. D.1 on [0, 1]^2 with an m = mesh_size^2 mesh.

    ``lattice=N`` places the sensors uniformly on the lattice {0, 1/N, ..., 1}^2 instead of the
    continuum (so that a fast exact grid sampler applies; the paper samples the continuum).
    """
    from ..models.domain import Box, trapezoid_weights

    rng = v.generator("rng", rng)
    prior = PlumePrior() if prior is None else prior
    n_pairs = v.integer("n_pairs", n_pairs, minimum=1)
    n = v.integer("n", n, minimum=1)
    M_xi = check_noise_level(M_xi)
    q = v.probability("q", q)
    mesh, axes = Box.unit(2).grid(v.integer("mesh_size", mesh_size, minimum=2))
    fields = sample_plume_fields(n_pairs, prior, rng)
    if lattice is None:
        X = rng.uniform(0.0, 1.0, size=(n_pairs, n, 2))
    else:
        N = v.integer("lattice", lattice, minimum=1)
        X = rng.integers(0, N + 1, size=(n_pairs, n, 2)) / N
    amp = 1.0 - M_xi
    fX = amp * fields.values(X)
    y = fX + rng.uniform(-M_xi, M_xi, size=fX.shape)
    signal = amp * fields.values(mesh)
    info = {"generator": "plume field (App. D.1)", "prior": prior.to_dict(), "fields": fields, "q": q,
            "lattice": lattice}
    return ExcursionPairs(X=X, y=y, mesh=mesh, axes=axes, weights=trapezoid_weights(axes), signal=signal,
                          t=amp * (2 * q - 1), M_xi=M_xi, info=info)


def attenuated_signal(pairs: ExcursionPairs, X) -> np.ndarray:
    """(1 - M_xi) f*(X) for the plume pairs (e.g. on a release grid other than the mesh)."""
    fields = pairs.info.get("fields")
    if not isinstance(fields, PlumeFields):
        raise InvalidParameterError("pairs", "plume pairs (from excursion_pairs_2d)", type(fields).__name__)
    return (1.0 - pairs.M_xi) * fields.values(X)
