"""The DP-SVGP baseline of seed 002 (paper §5 "DP-SGD baseline", App. D): a sparse variational GP
(Titsias 2009; Eqs. 61-63) whose variational parameters {m, S, z} and hyperparameters are fitted on
each private context set by DP-SGD (Abadi et al. 2016), with the noise multiplier from Opacus's PRV
accountant and the DP-SGD settings and initial hyperparameters tuned by Optuna (Table S1).

Implementation notes (choices where the paper is silent, see docs/results.md, seed 002):

* The SVGP is gpytorch's parametrisation: whitened ``VariationalStrategy`` with a Cholesky
  variational distribution, initialised at the prior (m = 0, S = K_zz, App. D), M inducing inputs
  initialised on a grid over the public context window (the authors' code). The per-example
  objective is ell_n = -E_q[log N(y_n | f(x_n), s_n^2)] + KL[q(u) || p(u)] / N, whose mean over the
  data is -ELBO / N (Eq. 63). It is written here in closed form, batched over tasks and examples,
  because DP-SGD needs per-example gradients of many tasks at once: gpytorch's kernels cannot be
  vmapped (``torch.equal`` has no batching rule) and Opacus's per-sample hooks do not cover GP
  modules; the per-example gradients come from replicating the parameters per example (one
  backward pass). A test checks the closed form against gpytorch's ``VariationalELBO`` and predictive.
* DP-SGD as Opacus defines it: Poisson sampling with rate q = B / N, per-example clipping to norm
  C_max over all parameters of the model, Gaussian noise of std sigma * C_max on the sum, division by
  the expected batch size q N, then Adam. steps = round(epochs / q). sigma comes from Opacus's
  ``get_noise_multiplier(..., accountant="prv")`` for the task's (eps, delta).
* Neighbouring relation: Opacus accounts for add/remove-one neighbours with Poisson subsampling;
  the DPConvCNP (and the rest of privgp) uses replace-one with a public N. Replace-one is implied by
  two add/remove steps, so an (eps, delta) add/remove guarantee gives at most (2 eps, (1 + e^eps) delta)
  for replace-one (group privacy). The comparison at equal nominal (eps, delta) follows the paper
  and is, if anything, in the DP-SVGP's favour.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import torch

from .. import validation as v
from ..errors import InvalidParameterError

KERNELS = ("eq", "matern32", "periodic")
JITTER = 1e-5

# Table S1 of the paper (ranges searched by Bayesian optimisation); M from the authors' configs.
TABLE_S1 = {
    "max_grad_norm": (1.0, 20.0),
    "epochs": (200, 1000),
    "batch_size": (10, 128),
    "lr": (0.001, 0.02),
    "lengthscale": (0.1, 2.5),
    "period": (0.25, 4.0),
    "scale": (0.5, 2.0),
    "noise": (0.05, 0.25),
    "n_inducing": (5, 20),
}


@dataclass(frozen=True)
class DpsvgpSettings:
    """DP-SGD settings and initial model hyperparameters (Table S1). ``scale`` and ``noise`` are
    standard deviations (kernel amplitude and observation noise)."""

    kernel: str = "eq"
    max_grad_norm: float = 5.0
    epochs: int = 200
    batch_size: int = 64
    lr: float = 0.01
    lengthscale: float = 0.5
    period: float = 1.0
    scale: float = 1.0
    noise: float = 0.1
    n_inducing: int = 10
    inducing_range: tuple[float, float] = (-2.0, 2.0)

    def __post_init__(self):
        if self.kernel not in KERNELS:
            raise InvalidParameterError("kernel", f"one of {KERNELS}", self.kernel)
        for name in ("max_grad_norm", "lr", "lengthscale", "period", "scale", "noise"):
            v.positive(name, getattr(self, name))
        v.integer("epochs", self.epochs, minimum=1)
        v.integer("batch_size", self.batch_size, minimum=1)
        v.integer("n_inducing", self.n_inducing, minimum=1)
        object.__setattr__(self, "inducing_range", tuple(float(a) for a in self.inducing_range))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["inducing_range"] = list(self.inducing_range)
        return d

    def sample_rate(self, n: int) -> float:
        return min(1.0, self.batch_size / n)

    def steps(self, n: int) -> int:
        return max(1, int(round(self.epochs / self.sample_rate(n))))


@lru_cache(maxsize=4096)
def noise_multiplier(epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    """Opacus's PRV-accountant noise multiplier for DP-SGD with Poisson rate q and ``steps`` steps
    to be (eps, delta)-DP under add/remove-one neighbours."""
    import warnings

    from opacus.accountants.utils import get_noise_multiplier

    with warnings.catch_warnings():  # the PRV code's harmless log(0) warnings at its grid ends
        warnings.simplefilter("ignore")
        return float(get_noise_multiplier(target_epsilon=float(epsilon), target_delta=float(delta),
                                          sample_rate=float(sample_rate), steps=int(steps), accountant="prv"))


# ----------------------------------------------------------------------------------------------
# the SVGP in closed form, batched over any leading axes (tasks, or tasks x examples)
# ----------------------------------------------------------------------------------------------
def kernel_matrix(kind: str, a: torch.Tensor, b: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
    """s^2 k(a_i, b_j) for a (..., I), b (..., J), parameters of shape (...): EQ exp(-d^2 / (2 l^2));
    Matérn-3/2 (1 + sqrt3 d / l) exp(-sqrt3 d / l); periodic exp(-2 sin^2(pi d / period) / l)
    (gpytorch's RBFKernel, MaternKernel(nu=1.5), PeriodicKernel -- whose l is not squared -- each in
    a ScaleKernel)."""
    d = a[..., :, None] - b[..., None, :]
    ls = p["log_lengthscale"].exp()[..., None, None]
    s2 = (2 * p["log_scale"]).exp()[..., None, None]
    if kind == "eq":
        k = torch.exp(-0.5 * (d / ls) ** 2)
    elif kind == "matern32":
        r = math.sqrt(3.0) * torch.sqrt(d * d + 1e-12) / ls
        k = (1 + r) * torch.exp(-r)
    else:
        period = p["log_period"].exp()[..., None, None]
        k = torch.exp(-2.0 * torch.sin(math.pi * d / period) ** 2 / ls)
    return s2 * k


def _variational_chol(p):
    raw = p["chol_raw"]
    return torch.tril(raw, -1) + torch.diag_embed(torch.exp(torch.diagonal(raw, dim1=-2, dim2=-1)))


def marginals(kind: str, p: dict[str, torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """q(f(x)) marginal means and variances, x (..., n) (whitened SVGP: u = L_zz v, q(v) = N(m, S S^T))."""
    z = p["z"]
    M = z.shape[-1]
    Kzz = kernel_matrix(kind, z, z, p) + JITTER * torch.eye(M, dtype=z.dtype)
    Lz = torch.linalg.cholesky(Kzz)
    A = torch.linalg.solve_triangular(Lz, kernel_matrix(kind, z, x, p), upper=False)  # (..., M, n)
    S = _variational_chol(p)
    mean = (A * p["m"][..., :, None]).sum(-2)
    kxx = (2 * p["log_scale"]).exp()[..., None]
    var = kxx - (A * A).sum(-2) + ((S.transpose(-1, -2) @ A) ** 2).sum(-2)
    return mean, torch.clamp(var, min=1e-10)


def kl_divergence(p) -> torch.Tensor:
    """KL[N(m, S S^T) || N(0, I)] in the whitened space (= KL[q(u) || p(u)]), shape (...)."""
    S = _variational_chol(p)
    M = S.shape[-1]
    return 0.5 * ((S * S).sum((-1, -2)) + (p["m"] ** 2).sum(-1) - M
                  - 2 * torch.log(torch.diagonal(S, dim1=-2, dim2=-1)).sum(-1))


def expected_loglik(kind, p, x, y):
    """E_q[log N(y | f(x), s_n^2)] elementwise, x, y (..., n)."""
    mean, var = marginals(kind, p, x)
    s2 = (2 * p["log_noise"]).exp()[..., None]
    return -0.5 * torch.log(2 * math.pi * s2) - 0.5 * ((y - mean) ** 2 + var) / s2


def elbo(kind, p, x, y) -> torch.Tensor:
    """Eq. 63 per task: x, y (..., n) -> (...)."""
    return expected_loglik(kind, p, x, y).sum(-1) - kl_divergence(p)


def per_example_grads(kind: str, p: dict[str, torch.Tensor], names, x: torch.Tensor, y: torch.Tensor,
                      n: int) -> dict[str, torch.Tensor]:
    """Gradients of ell_n = -E_q log p(y_n | f(x_n)) + KL / N for every (task, example): x, y (T, K);
    each parameter is replicated per example (the expanded-weights trick) and one backward pass
    returns all per-example gradients, shape (T, K, ...)."""
    T, K = x.shape
    rep = {k: t[:, None].expand(T, K, *t.shape[1:]).clone().requires_grad_(k in names) for k, t in p.items()}
    loss = (-expected_loglik(kind, rep, x[..., None], y[..., None])[..., 0] + kl_divergence(rep) / n).sum()
    grads = torch.autograd.grad(loss, [rep[k] for k in names])
    return dict(zip(names, grads))


def dp_sgd_gradient(grads: dict[str, torch.Tensor], valid: torch.Tensor, max_grad_norm: float,
                    noise_multiplier: torch.Tensor, expected_batch_size: float,
                    generator: torch.Generator) -> dict[str, torch.Tensor]:
    """One DP-SGD gradient per task, as Opacus's DPOptimizer forms it: per-example gradients (T, K, ...)
    clipped to total norm ``max_grad_norm`` over all parameters (factor min(1, C / (norm + 1e-6))),
    summed over the sampled examples (``valid``), plus N(0, (sigma C)^2) noise per coordinate, divided
    by the expected batch size q N. ``noise_multiplier`` is (T,)."""
    names = list(grads)
    T, K = valid.shape
    sq = grads[names[0]].reshape(T, K, -1).pow(2).sum(-1)
    for k in names[1:]:
        sq = sq + grads[k].reshape(T, K, -1).pow(2).sum(-1)
    factor = torch.clamp(max_grad_norm / (sq.sqrt() + 1e-6), max=1.0) * valid
    out = {}
    for k in names:
        g = grads[k]
        summed = (factor.reshape(T, K, *([1] * (g.dim() - 2))) * g).sum(1)
        noise = torch.randn(summed.shape, generator=generator, dtype=summed.dtype)
        std = (noise_multiplier * max_grad_norm).reshape(T, *([1] * (summed.dim() - 1)))
        out[k] = (summed + std * noise) / expected_batch_size
    return out


def init_params(settings: DpsvgpSettings, n_tasks: int) -> dict[str, torch.Tensor]:
    """Prior initialisation (m = 0, whitened S = I i.e. S = K_zz), z on a grid over the public window."""
    M = settings.n_inducing
    f64 = torch.float64
    z = torch.linspace(*settings.inducing_range, M, dtype=f64)
    one = torch.ones(n_tasks, dtype=f64)
    return {"z": z.expand(n_tasks, M).clone(), "m": torch.zeros(n_tasks, M, dtype=f64),
            "chol_raw": torch.zeros(n_tasks, M, M, dtype=f64),
            "log_lengthscale": one * math.log(settings.lengthscale), "log_scale": one * math.log(settings.scale),
            "log_noise": one * math.log(settings.noise), "log_period": one * math.log(settings.period)}


@dataclass(frozen=True)
class DpsvgpFit:
    """Fitted parameters of T tasks (each fitted by DP-SGD on its own context set)."""

    settings: DpsvgpSettings
    params: dict[str, torch.Tensor]
    noise_multipliers: np.ndarray
    steps: int
    sample_rate: float

    def predict(self, xt) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and std of y at xt (T, n_t): sqrt(var_q(f) + s_n^2) (the authors' code)."""
        xt = torch.as_tensor(np.asarray(xt, dtype=float))
        kind = self.settings.kernel
        with torch.no_grad():
            mean, var = marginals(kind, self.params, xt)
            s2 = (2 * self.params["log_noise"]).exp()[:, None]
        return mean.numpy(), torch.sqrt(var + s2).numpy()

    def elbo(self, xc, yc) -> np.ndarray:
        kind = self.settings.kernel
        with torch.no_grad():
            return elbo(kind, self.params, torch.as_tensor(np.asarray(xc, float)),
                        torch.as_tensor(np.asarray(yc, float))).numpy()


def fit(xc, yc, epsilon, delta: float, settings: DpsvgpSettings, generator: torch.Generator) -> DpsvgpFit:
    """DP-SGD fit of one SVGP per task. xc, yc: (T, N) (private context sets, equal N); epsilon: a
    scalar or (T,) (each task's budget), delta a scalar. The noise multiplier of each task is chosen
    before any private data are read; every example's gradient is clipped before it is summed."""
    if not isinstance(generator, torch.Generator):
        raise InvalidParameterError("generator", "a torch.Generator", type(generator).__name__)
    X = torch.as_tensor(v.finite_array("xc", xc, ndim=2), dtype=torch.float64)
    Y = torch.as_tensor(v.finite_array("yc", yc, ndim=2), dtype=torch.float64)
    if X.shape != Y.shape:
        raise InvalidParameterError("yc", f"of shape {tuple(X.shape)} (one response per input)", tuple(Y.shape))
    T, N = X.shape
    eps = np.broadcast_to(np.asarray(epsilon, dtype=float), (T,))
    for e in np.unique(eps):
        v.positive("epsilon", e)
    delta = v.probability("delta", delta)
    q, steps = settings.sample_rate(N), settings.steps(N)
    sigma = np.array([noise_multiplier(float(e), delta, q, steps) for e in eps])
    sig_t = torch.as_tensor(sigma, dtype=torch.float64)
    C = settings.max_grad_norm
    kind = settings.kernel
    params = init_params(settings, T)
    trainable = [k for k in params if k != "log_period" or kind == "periodic"]
    for k in trainable:
        params[k].requires_grad_(True)
    opt = torch.optim.Adam([params[k] for k in trainable], lr=settings.lr)
    expected_batch = q * N
    for _ in range(steps):
        # Poisson sampling: each example independently with probability q
        chosen = torch.rand(T, N, generator=generator, dtype=torch.float64) < q
        counts = chosen.sum(1)
        K = max(int(counts.max()), 1)
        order = torch.argsort((~chosen).to(torch.int8), dim=1, stable=True)[:, :K]
        valid = torch.arange(K)[None, :] < counts[:, None]
        xb, yb = torch.gather(X, 1, order), torch.gather(Y, 1, order)
        grads = per_example_grads(kind, {k: t.detach() for k, t in params.items()}, trainable, xb, yb, N)
        noisy = dp_sgd_gradient(grads, valid, C, sig_t, expected_batch, generator)
        opt.zero_grad(set_to_none=True)
        for k in trainable:
            params[k].grad = noisy[k]
        opt.step()
    return DpsvgpFit(settings=settings, params={k: t.detach() for k, t in params.items()}, noise_multipliers=sigma,
                     steps=steps, sample_rate=q)


def tune(kernel: str, xc, yc, epsilon, delta: float, *, n_trials: int, seed: int,
         fixed: dict | None = None, inducing_range: tuple[float, float] = (-2.0, 2.0)):
    """Optuna (TPE, seeded) search over Table S1's ranges maximising the sum of the ELBOs (Eq. 63) of
    DP-SGD fits on simulated context sets (App. D). ``fixed`` pins some settings (e.g. epochs) to cut
    the cost. Returns (best settings, list of trial records)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    fixed = dict(fixed or {})
    n_trials = v.integer("n_trials", n_trials, minimum=1)

    def settings_of(trial) -> DpsvgpSettings:
        kw: dict[str, Any] = {"kernel": kernel, "inducing_range": inducing_range}
        for name, (lo, hi) in TABLE_S1.items():
            if name == "period" and kernel != "periodic":
                continue
            if name in fixed:
                kw[name] = fixed[name]
            elif name in ("epochs", "batch_size", "n_inducing"):
                kw[name] = trial.suggest_int(name, int(lo), int(hi))
            elif name == "lr":
                kw[name] = trial.suggest_float(name, lo, hi, log=True)
            else:
                kw[name] = trial.suggest_float(name, lo, hi)
        return DpsvgpSettings(**kw)

    records = []

    def objective(trial) -> float:
        s = settings_of(trial)
        f = fit(xc, yc, epsilon, delta, s, torch.Generator().manual_seed(seed + 1000 + trial.number))
        total = float(np.sum(f.elbo(xc, yc)))
        records.append({"trial": trial.number, **s.to_dict(), "sum_elbo": total})
        return total if math.isfinite(total) else -1e30

    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(objective, n_trials=n_trials)
    return settings_of(optuna.trial.FixedTrial({**study.best_params})), records
