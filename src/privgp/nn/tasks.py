"""Simulated meta-learning tasks of seed 002 (App. E), drawn with a seeded ``torch.Generator``.

Families (one family and one context size N per batch, as in the authors' code; eps per task):

* ``eq``: GP with k = s_v^2 exp(-(x - x')^2 / (2 l^2)) + s_n^2, s_v = 1, s_n = 0.2 (repo values; the
  paper does not print them); l fixed or ~ U[l_lo, l_hi].
* ``matern32``: GP with a Matérn-3/2 kernel, s_v = 1, l ~ U[0.5, 2], s_n ~ U[0.2, 0.6] (§5.2; App. E.2
  says U[0.3, 0.8]: the default follows the main text, ``default_specs(matern32_noise=MATERN32_NOISE_STD_E2)``
  the appendix).
* ``sawtooth``: f(x) = (2/pi) sum_{m=1}^{2} sin(2 m pi (d x / tau + phi)) / m with d uniform on {-1, 1},
  phi ~ U[0, 1] (the repo's phase: a true shift; the paper writes + phi per harmonic), 1/tau fixed or
  ~ U[0.2, 1.25], plus N(0, 0.2^2) noise (repo level).

Privacy budgets: eps ~ U[0.9, 4] per task, delta = 1e-3 (§5.1), mu = gdp_mu(eps, delta) (Eq. 5).
The kernel profiles are those of :mod:`privgp.models.kernels` (one home for each formula).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from .. import validation as v
from ..accounting.gaussian import gdp_mu
from ..errors import InvalidParameterError
from ..models.kernels import Matern32, SquaredExponential

FAMILIES = ("eq", "matern32", "sawtooth")
SIGNAL_STD = 1.0
EQ_NOISE_STD = 0.2
SAWTOOTH_NOISE_STD = 0.2
EPSILON_RANGE = (0.9, 4.0)             # eps ~ U[0.9, 4] per task, §5.1
DELTA = 1e-3                           # §5.1
MATERN32_NOISE_STD = (0.2, 0.6)       # the sim-to-real simulator's s_n range, §5.2
MATERN32_NOISE_STD_E2 = (0.3, 0.8)    # the same range as App. E.2 prints it
SAMPLE_JITTER = 1e-8  # added to the (noise-free part of the) data-generating Gram matrix; float64


@dataclass(frozen=True)
class TaskSpec:
    """How to simulate one family's tasks. A range (lo, hi) is sampled uniformly per task; lo == hi fixes it."""

    family: str = "eq"
    lengthscale: tuple[float, float] = (0.25, 2.0)     # eq (§5.1) / matern32 (0.5, 2.0)
    noise_std: tuple[float, float] = (EQ_NOISE_STD, EQ_NOISE_STD)
    frequency: tuple[float, float] = (0.2, 1.25)       # sawtooth 1 / tau
    context_range: tuple[float, float] = (-2.0, 2.0)
    target_range: tuple[float, float] = (-2.0, 2.0)
    epsilon: tuple[float, float] = EPSILON_RANGE
    delta: float = DELTA

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise InvalidParameterError("family", f"one of {FAMILIES}", self.family)
        for name in ("lengthscale", "noise_std", "frequency", "context_range", "target_range", "epsilon"):
            lo, hi = (float(a) for a in getattr(self, name))
            if not hi >= lo:
                raise InvalidParameterError(name, "a range (lo, hi) with hi >= lo", getattr(self, name))
            object.__setattr__(self, name, (lo, hi))
        for name in ("lengthscale", "noise_std", "frequency", "epsilon"):
            v.positive(f"{name}[0]", getattr(self, name)[0])
        v.probability("delta", self.delta)

    def fixed(self, **kw) -> TaskSpec:
        """A copy with the named parameters fixed to a value (e.g. ``lengthscale=0.71, epsilon=1.0``)."""
        ranges: dict[str, Any] = {k: (float(x), float(x)) if not isinstance(x, tuple) else x for k, x in kw.items()}
        return replace(self, **ranges)


def default_specs(target_range: tuple[float, float] = (-2.0, 2.0),
                  matern32_noise: tuple[float, float] = MATERN32_NOISE_STD) -> dict[str, TaskSpec]:
    """The three training families with the paper's ranges (amortised over l, tau and eps). EQ and
    sawtooth: contexts in [-2, 2], targets in ``target_range`` (App. E.1); Matérn-3/2 (the sim-to-real
    simulator, App. E.2): contexts and targets in [-1, 1], noise s_n ~ U[``matern32_noise``]."""
    return {
        "eq": TaskSpec("eq", lengthscale=(0.25, 2.0), target_range=target_range),
        "matern32": TaskSpec("matern32", lengthscale=(0.5, 2.0), noise_std=matern32_noise, context_range=(-1.0, 1.0),
                             target_range=(-1.0, 1.0)),
        "sawtooth": TaskSpec("sawtooth", noise_std=(SAWTOOTH_NOISE_STD, SAWTOOTH_NOISE_STD), target_range=target_range),
    }


@dataclass(frozen=True)
class TaskBatch:
    """B tasks with N contexts and T targets each; float32 tensors except ``mu`` (float32 too)."""

    xc: torch.Tensor
    yc: torch.Tensor
    xt: torch.Tensor
    yt: torch.Tensor
    epsilon: torch.Tensor
    delta: float
    mu: torch.Tensor
    family: str
    params: dict[str, np.ndarray] = field(default_factory=dict)  # per-task generative parameters

    def __len__(self) -> int:
        return self.xc.shape[0]


def _uniform(lo: float, hi: float, n: int, g: torch.Generator) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(n, dtype=torch.float64, generator=g)


#: float64 (B, M, M) arrays alive at once while a batch of GP tasks is drawn (the distances, numpy's temporaries of
#: the kernel's profile, the Gram matrix and its Cholesky factor): measured 3.05 (EQ) and 5.00 (Matérn-3/2)
GP_DRAW_COPIES = 6


def sample_batch_bytes(batch_size: int, n_points: int) -> float:
    """A safe over-estimate of the peak memory of :func:`sample_batch` for ``batch_size`` tasks of ``n_points``
    contexts and targets together: the GP families' exact draw holds :data:`GP_DRAW_COPIES` float64 (B, M, M) arrays
    (the sawtooth's draw needs far less). Public settings only: checked before anything is drawn."""
    return GP_DRAW_COPIES * 8.0 * float(batch_size) * float(n_points) ** 2


def _gp_outputs(kernel_cls, x: torch.Tensor, lengthscales: torch.Tensor, noise_std: torch.Tensor,
                g: torch.Generator) -> torch.Tensor:
    """One exact draw of y = f(x) + noise per task: x (B, M) float64 -> (B, M) (batched Cholesky)."""
    xs = x.numpy()
    dist = np.abs(xs[:, :, None] - xs[:, None, :]) / lengthscales.numpy()[:, None, None]
    K = torch.from_numpy(kernel_cls().profile(dist)) * SIGNAL_STD**2
    K.diagonal(dim1=-2, dim2=-1).add_(SAMPLE_JITTER)
    L = torch.linalg.cholesky(K)
    f = (L @ torch.randn(x.shape[0], x.shape[1], 1, dtype=torch.float64, generator=g))[..., 0]
    return f + noise_std[:, None] * torch.randn(x.shape, dtype=torch.float64, generator=g)


def sawtooth(x: torch.Tensor, frequency: torch.Tensor, direction: torch.Tensor, phase: torch.Tensor,
             terms: int = 2) -> torch.Tensor:
    """The sawtooth's Fourier series truncated to ``terms`` harmonics (App. E.1; phase as a shift)."""
    u = direction[:, None] * frequency[:, None] * x + phase[:, None]
    series = torch.zeros_like(u)
    for m in range(1, terms + 1):
        series = series + torch.sin(2 * m * math.pi * u) / m
    return (2 / math.pi) * series


def sample_batch(spec: TaskSpec, batch_size: int, n_context: int, n_target: int,
                 generator: torch.Generator) -> TaskBatch:
    """Draw ``batch_size`` tasks of ``spec``'s family with ``n_context`` contexts and ``n_target`` targets."""
    B = v.integer("batch_size", batch_size, minimum=1)
    N = v.integer("n_context", n_context, minimum=1)
    T = v.integer("n_target", n_target, minimum=1)
    if not isinstance(generator, torch.Generator):
        raise InvalidParameterError("generator", "a torch.Generator", type(generator).__name__)
    g = generator
    xc = _uniform(*spec.context_range, B * N, g).reshape(B, N)
    xt = _uniform(*spec.target_range, B * T, g).reshape(B, T)
    x = torch.cat([xc, xt], dim=1)
    params: dict[str, Any] = {}
    if spec.family in ("eq", "matern32"):
        ls = _uniform(*spec.lengthscale, B, g)
        sn = _uniform(*spec.noise_std, B, g)
        y = _gp_outputs(SquaredExponential if spec.family == "eq" else Matern32, x, ls, sn, g)
        params = {"lengthscale": ls.numpy(), "noise_std": sn.numpy()}
    else:
        fr = _uniform(*spec.frequency, B, g)
        direction = torch.where(torch.rand(B, generator=g) < 0.5, -1.0, 1.0).double()
        phase = torch.rand(B, dtype=torch.float64, generator=g)
        sn = _uniform(*spec.noise_std, B, g)
        y = sawtooth(x, fr, direction, phase) + sn[:, None] * torch.randn(x.shape, dtype=torch.float64, generator=g)
        params = {"frequency": fr.numpy(), "direction": direction.numpy(), "phase": phase.numpy(), "noise_std": sn.numpy()}
    eps = _uniform(*spec.epsilon, B, g)
    mu = torch.from_numpy(np.asarray(gdp_mu(eps.numpy(), spec.delta), dtype=float))
    f32 = torch.float32
    return TaskBatch(xc=xc.to(f32), yc=y[:, :N].to(f32), xt=xt.to(f32), yt=y[:, N:].to(f32), epsilon=eps.to(f32),
                     delta=spec.delta, mu=mu.to(f32), family=spec.family, params=params)


class TaskSampler:
    """Training batches from a mixture of families: per batch a family (by ``weights``) and
    N ~ U{n_min..n_max} (shared by the batch, as in the authors' code); eps per task."""

    def __init__(self, specs: dict[str, TaskSpec], weights: dict[str, float], *, batch_size: int = 16,
                 n_context: tuple[int, int] = (1, 512), n_target: int = 512):
        if set(weights) - set(specs):
            raise InvalidParameterError("weights", f"keys among {sorted(specs)}", sorted(weights))
        self.specs = specs
        self.names = sorted(weights)
        w = np.array([float(weights[k]) for k in self.names])
        if np.any(w < 0) or not w.sum() > 0:
            raise InvalidParameterError("weights", "non-negative with a positive sum", weights)
        self.cum = torch.as_tensor(np.cumsum(w / w.sum()))
        self.batch_size = batch_size
        self.n_context = (v.integer("n_min", n_context[0], minimum=1), v.integer("n_max", n_context[1], minimum=1))
        self.n_target = n_target

    def sample(self, generator: torch.Generator) -> TaskBatch:
        u = torch.rand(1, dtype=torch.float64, generator=generator)
        fam = self.names[min(int(torch.searchsorted(self.cum, u)), len(self.names) - 1)]
        n = int(torch.randint(self.n_context[0], self.n_context[1] + 1, (1,), generator=generator))
        return sample_batch(self.specs[fam], self.batch_size, n, self.n_target, generator)
