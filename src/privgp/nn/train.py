"""Meta-training of the DPConvCNP (Alg. 1; App. E): Adam 3e-4 on the NLL per target point of simulated
tasks with the DP mechanism inside the forward pass, a fixed validation set, the best model kept.

:class:`Trainer` holds the whole resumable state (model, optimiser, step, the training
``torch.Generator``'s state, best validation loss and weights, history); it writes no files -- the
``seed002-train`` experiment saves :meth:`Trainer.state` as checkpoints and resumes from them.

Two data streams (``TrainConfig.stream``): ``"sequential"`` (the default; the shipped model's) draws
every training batch and every mechanism noise from one ``torch.Generator`` in turn;
``"indexed"`` draws the batch of step ``i`` from its own generator seeded by ``(seed, i)``
(:func:`batch_seed`), so batches can be drawn ahead in worker processes (:class:`BatchPrefetcher`)
with results that do not depend on the number of workers; the noise still comes from the one
generator. Tasks and noise are always drawn on the CPU in float64; ``device`` only says where the
network runs (a GPU for the paper-width model).
"""
from __future__ import annotations

import math
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from .. import validation as v
from ..errors import InvalidParameterError
from .model import DPConvCNP, ModelConfig, gaussian_nll
from .tasks import DELTA, EPSILON_RANGE, MATERN32_NOISE_STD, TaskBatch, TaskSampler, TaskSpec, default_specs, sample_batch_bytes

DEFAULT_WEIGHTS = {"eq": 0.4, "matern32": 0.2, "sawtooth": 0.4}
STREAMS = ("sequential", "indexed")


@dataclass(frozen=True)
class TrainConfig:
    """Training schedule (paper: 409,600 steps of batch 16, 512 targets in [-6, 6], 2,048 validation
    tasks; the defaults are the reduced CPU schedule). ``weights``: the families trained on and their
    shares of the batches; ``matern32_noise``: the Matérn-3/2 simulator's noise range (§5.2's by default);
    ``epsilon``, ``delta``: the privacy budgets of every simulated task (eps ~ U[epsilon], §5.1's
    U[0.9, 4] and delta = 1e-3 by default; the paper's Figs. S6-S7 models use U[1/3, 1] and 1e-5)."""

    steps: int = 20000
    batch_size: int = 16
    n_context: tuple[int, int] = (1, 512)
    n_target: int = 256
    target_range: tuple[float, float] = (-3.0, 3.0)
    lr: float = 3e-4
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    val_tasks: int = 512
    val_every: int = 1000
    seed: int = 0
    stream: str = "sequential"
    matern32_noise: tuple[float, float] = MATERN32_NOISE_STD
    epsilon: tuple[float, float] = EPSILON_RANGE
    delta: float = DELTA

    def __post_init__(self):
        v.integer("steps", self.steps, minimum=0)
        v.integer("batch_size", self.batch_size, minimum=1)
        v.integer("n_target", self.n_target, minimum=1)
        v.positive("lr", self.lr)
        v.integer("val_tasks", self.val_tasks, minimum=1)
        v.integer("val_every", self.val_every, minimum=1)
        object.__setattr__(self, "n_context", tuple(int(a) for a in self.n_context))
        object.__setattr__(self, "target_range", tuple(float(a) for a in self.target_range))
        for name in ("matern32_noise", "epsilon"):
            object.__setattr__(self, name, _positive_range(name, getattr(self, name)))
        v.probability("delta", self.delta)
        object.__setattr__(self, "delta", float(self.delta))
        if self.stream not in STREAMS:
            raise InvalidParameterError("stream", f"one of {STREAMS}", self.stream)
        if set(self.weights) - set(DEFAULT_WEIGHTS):
            raise InvalidParameterError("weights", f"keys among {sorted(DEFAULT_WEIGHTS)}", self.weights)

    def specs(self) -> dict[str, TaskSpec]:
        return {k: replace(spec, epsilon=self.epsilon, delta=self.delta)
                for k, spec in default_specs(self.target_range, self.matern32_noise).items()}

    def to_dict(self) -> dict[str, Any]:
        """The schedule as JSON types; the simulator settings added later (``matern32_noise``, ``epsilon``,
        ``delta``) only where they are not the default, so the records of earlier runs stay the same."""
        d = asdict(self)
        d["n_context"], d["target_range"] = list(self.n_context), list(self.target_range)
        for name, default in LATER_DEFAULTS.items():
            if getattr(self, name) == default:
                del d[name]
            elif isinstance(default, tuple):
                d[name] = list(getattr(self, name))
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        later = {name: tuple(d[name]) if isinstance(default, tuple) else d[name]
                 for name, default in LATER_DEFAULTS.items() if name in d}
        return cls(**{**d, "n_context": tuple(d["n_context"]), "target_range": tuple(d["target_range"]), **later})

    def sampler(self) -> TaskSampler:
        return TaskSampler(self.specs(), self.weights, batch_size=self.batch_size, n_context=self.n_context,
                           n_target=self.n_target)


#: the schedule's simulator settings added after the shipped model was trained, with their defaults
LATER_DEFAULTS: dict[str, Any] = {"matern32_noise": MATERN32_NOISE_STD, "epsilon": EPSILON_RANGE, "delta": DELTA}


def _positive_range(name: str, value) -> tuple[float, float]:
    """``value`` as a range (lo, hi) with 0 < lo <= hi < inf (a bound may be a fraction such as "1/3"), or a
    clear error naming ``name``."""
    try:
        r = tuple(float(Fraction(a)) if isinstance(a, str) else float(a) for a in np.atleast_1d(value))
    except (TypeError, ValueError, ZeroDivisionError):
        r = ()
    if len(r) != 2 or not 0 < r[0] <= r[1] or not np.isfinite(r[1]):
        raise InvalidParameterError(name, "a range (lo, hi) with 0 < lo <= hi", value)
    return r


def batch_seed(seed: int, step: int) -> int:
    """The seed of the training batch drawn before step ``step + 1`` in the ``"indexed"`` stream."""
    return int(np.random.SeedSequence([int(seed), 3, int(step)]).generate_state(1, np.uint64)[0])


def indexed_batch(sampler: TaskSampler, seed: int, step: int) -> TaskBatch:
    """Batch ``step`` of the ``"indexed"`` stream (the same in any process)."""
    return sampler.sample(torch.Generator().manual_seed(batch_seed(seed, step)))


def _draw_in_worker(sampler: TaskSampler, seed: int, step: int) -> TaskBatch:
    torch.set_num_threads(1)   # a worker is one core; the pool is the parallelism
    return indexed_batch(sampler, seed, step)


class BatchPrefetcher:
    """The ``"indexed"`` stream's batches for steps ``start, start + 1, ...`` drawn ahead by ``workers``
    processes (spawned, so a parent that holds a GPU is never forked), ``depth`` batches in flight.
    The batches equal :func:`indexed_batch`'s, whatever the number of workers."""

    def __init__(self, cfg: TrainConfig, start: int, workers: int, depth: int | None = None):
        if cfg.stream != "indexed":
            raise InvalidParameterError("stream", "'indexed' to draw batches in worker processes", cfg.stream)
        import multiprocessing

        self.cfg, self.next_step = cfg, int(start)
        self.sampler = cfg.sampler()
        self.depth = v.integer("depth", depth if depth is not None else 4 * workers, minimum=1)
        self.pool = ProcessPoolExecutor(v.integer("workers", workers, minimum=1),
                                        mp_context=multiprocessing.get_context("spawn"))
        self.pending: deque = deque()

    def __next__(self) -> TaskBatch:
        while len(self.pending) < self.depth:
            self.pending.append(self.pool.submit(_draw_in_worker, self.sampler, self.cfg.seed,
                                                 self.next_step + len(self.pending)))
        self.next_step += 1
        return self.pending.popleft().result()

    def close(self) -> None:
        for f in self.pending:
            f.cancel()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> BatchPrefetcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _on(device: torch.device, b: TaskBatch) -> tuple[torch.Tensor, ...]:
    """A batch's (xc, yc, xt, yt, mu) on ``device``."""
    return tuple(t.to(device) for t in (b.xc, b.yc, b.xt, b.yt, b.mu))


def validation_nll(model: DPConvCNP, batches: list[TaskBatch], seed: int) -> np.ndarray:
    """Per-task NLL per target point of ``model`` (in eval mode, on its own device) on fixed validation
    batches, the mechanism's noise from a generator seeded ``seed + 2`` (common random numbers)."""
    device = next(model.parameters()).device
    g = torch.Generator().manual_seed(seed + 2)
    model.eval()
    per_task = []
    with torch.no_grad():
        for b in batches:
            xc, yc, xt, yt, mu = _on(device, b)
            mean, std = model(xc, yc, xt, mu, g)
            per_task.append(gaussian_nll(yt, mean, std).mean(dim=1))
    return torch.cat(per_task).double().cpu().numpy()


def training_bytes(model_cfg: Any, cfg: TrainConfig) -> float:
    """A generous estimate of a training run's peak memory beyond the process's own (torch, the code): per task of a
    step, the encoder's and decoder's RBF weights (grid x (largest context + targets), float64, forward and backward)
    and the UNet's activations (grid x channels, float32, with their gradients), doubled (measured at the defaults:
    about 4-10 MB per task against this estimate's 27.6 MB; 30 MB against 111 MB with 4,000 targets); the UNet's
    weights with their gradients and Adam's two moments; drawing a batch (:func:`~privgp.nn.tasks.sample_batch_bytes`,
    whose (B, M, M) Gram matrices dominate for many targets); and the validation tasks, kept all the run. Counted
    together though they do not all live at once. Public settings only: checked before a model is built (a
    :class:`BatchPrefetcher`'s worker processes each draw batches of their own, not counted here)."""
    G = int(model_cfg.grid_size)
    widths = (int(model_cfg.first_channels), *map(int, model_cfg.channels))
    points = int(cfg.n_context[1]) + int(cfg.n_target)
    per_task = 2.0 * (8.0 * G * points * 6 + 4.0 * G * sum(widths) * 12)
    weights = 16.0 * int(model_cfg.kernel_size) * sum(a * b for a, b in zip(widths, widths[1:])) * 2
    val_tasks = math.ceil(int(cfg.val_tasks) / int(cfg.batch_size)) * int(cfg.batch_size)
    validation = 2.0 * 4.0 * points * 2 * val_tasks   # (xc, yc, xt, yt) in float32, with room for their copies
    return cfg.batch_size * per_task + weights + sample_batch_bytes(cfg.batch_size, points) + validation


class Trainer:
    """Resumable meta-training state. Seeds: training tasks and noise from ``seed``; the validation
    tasks from ``seed + 1`` (fixed); validation noise from ``seed + 2``, re-seeded at every validation
    (common random numbers, so validation losses are comparable across steps). ``device``: where the
    network runs (parameters initialised on the CPU, then moved); the generators stay on the CPU."""

    def __init__(self, model_cfg: ModelConfig, cfg: TrainConfig, *, device: str | torch.device = "cpu"):
        self.model_cfg, self.cfg = model_cfg, cfg
        self.device = torch.device(device)
        torch.manual_seed(cfg.seed)  # parameter initialisation
        self.model = DPConvCNP(model_cfg).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.generator = torch.Generator().manual_seed(cfg.seed)
        self.sampler = cfg.sampler()
        self.step = 0
        self.skipped = 0
        self.seconds = 0.0
        self.best_val = math.inf
        self.best_step = -1
        self.best_state: dict[str, torch.Tensor] | None = None
        self.history: list[dict[str, float]] = []
        self._val: list[TaskBatch] | None = None

    # -- data -------------------------------------------------------------------------------------
    def validation_batches(self) -> list[TaskBatch]:
        if self._val is None:
            g = torch.Generator().manual_seed(self.cfg.seed + 1)
            n_batches = max(1, math.ceil(self.cfg.val_tasks / self.cfg.batch_size))
            self._val = [self.sampler.sample(g) for _ in range(n_batches)]
        return self._val

    def next_batch(self) -> TaskBatch:
        """The batch of the next step: drawn from the one generator (``"sequential"``) or from step's own
        (``"indexed"``, :func:`indexed_batch`)."""
        if self.cfg.stream == "indexed":
            return indexed_batch(self.sampler, self.cfg.seed, self.step)
        return self.sampler.sample(self.generator)

    # -- optimisation -----------------------------------------------------------------------------
    def train_step(self, batch: TaskBatch | None = None) -> float:
        """One Adam step on the next batch (``batch``: that batch, drawn ahead by a
        :class:`BatchPrefetcher`); a non-finite loss skips the step (counted in ``skipped``)."""
        t0 = time.perf_counter()
        self.model.train()
        if batch is not None and self.cfg.stream != "indexed":
            raise InvalidParameterError("batch", "given only in the 'indexed' stream", self.cfg.stream)
        xc, yc, xt, yt, mu = _on(self.device, batch if batch is not None else self.next_batch())
        loss = self.model.loss(xc, yc, xt, yt, mu, self.generator)
        value = float(loss.detach())
        self.optimizer.zero_grad(set_to_none=True)
        if math.isfinite(value):
            loss.backward()
            grads_ok = all(p.grad is None or bool(torch.isfinite(p.grad).all()) for p in self.model.parameters())
            if grads_ok:
                self.optimizer.step()
            else:
                self.skipped += 1
        else:
            self.skipped += 1
        self.step += 1
        self.seconds += time.perf_counter() - t0
        return value

    def validate(self) -> tuple[float, float]:
        """Mean validation NLL per target point and its standard error over the fixed tasks."""
        t0 = time.perf_counter()
        nll = validation_nll(self.model, self.validation_batches(), self.cfg.seed)
        m, se = float(nll.mean()), float(nll.std(ddof=1) / np.sqrt(len(nll))) if len(nll) > 1 else 0.0
        if m < self.best_val:
            self.best_val, self.best_step = m, self.step
            self.best_state = {k: t.detach().to("cpu", copy=True) for k, t in self.model.state_dict().items()}
        self.seconds += time.perf_counter() - t0
        return m, se

    def best_model(self) -> DPConvCNP:
        """The best weights in a model on the CPU, in eval mode."""
        model = DPConvCNP(self.model_cfg)
        model.load_state_dict(self.best_state if self.best_state is not None else self.model.state_dict())
        model.eval()
        return model

    # -- persistence ------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"model_config": self.model_cfg.to_dict(), "train_config": self.cfg.to_dict(),
                "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "generator": self.generator.get_state(), "step": self.step, "skipped": self.skipped,
                "seconds": self.seconds, "best_val": self.best_val, "best_step": self.best_step,
                "best_state": self.best_state, "history": list(self.history)}

    @classmethod
    def from_state(cls, state: dict[str, Any], *, device: str | torch.device = "cpu", **overrides) -> Trainer:
        """Rebuild a trainer where it stopped (on ``device``); ``overrides`` may change only ``steps``
        of the schedule."""
        if set(overrides) - {"steps"}:
            raise InvalidParameterError("overrides", "only 'steps' (the schedule is fixed once started)", sorted(overrides))
        cfg = TrainConfig.from_dict({**state["train_config"], **overrides})
        tr = cls(ModelConfig.from_dict(state["model_config"]), cfg, device=device)
        tr.model.load_state_dict(state["model"])
        tr.optimizer.load_state_dict(state["optimizer"])
        tr.generator.set_state(state["generator"])
        for k in ("step", "skipped", "seconds", "best_val", "best_step", "best_state", "history"):
            setattr(tr, k, state[k])
        return tr
