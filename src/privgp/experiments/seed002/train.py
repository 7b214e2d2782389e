"""``privgp experiment seed002-train``: meta-train a DPConvCNP on simulated tasks (seed 002, Alg. 1,
App. E) in resumable chunks.

The run directory holds ``last.pt`` (the full :class:`privgp.nn.train.Trainer` state: model,
optimiser, step, torch.Generator state, best weights, history), ``best.pt`` (the best model by the
fixed validation set, in the format of :func:`privgp.nn.pretrained.load`), ``history.csv``,
``loss.png`` and ``run.json``. Running the same command again continues where it stopped, until
``steps`` are done; ``max_minutes`` bounds one chunk's wall time.

``families`` trains on some of the simulated families only (their default shares renormalised), e.g.
``families=matern32`` for a dedicated sim-to-real model as the paper trains one (App. E.2);
``matern32_noise=0.3,0.8`` sets that simulator's noise range (§5.2 prints U[0.2, 0.6], the default;
App. E.2 prints U[0.3, 0.8]); ``epsilon=1/3,1`` and ``delta=1e-5`` set every task's privacy budget (eps ~
U[epsilon]; §5.1's U[0.9, 4] and 1e-3 by default; the paper's stricter models of Figs. S6-S7 use U[1/3, 1] with
delta = 1e-5 or 1e-3). All are part of the run's schedule: a resumed run keeps the ones it started with and
refuses others.

``device`` runs the network elsewhere (``cuda`` for the paper-width model); ``stream=indexed`` with
``data_workers`` > 0 draws the training batches ahead in that many worker processes (the batches do
not depend on the number of workers; the default ``sequential`` stream is the shipped model's).

A run whose training step (``batch_size``, ``n_target``, ``val_tasks``, ``channels``, ``first_channels``) is estimated
to need more than the package's memory limit (:func:`privgp.nn.train.training_bytes`, 4 GiB) is refused before a
model is built, naming the option that adds most to the estimate.

The reduced CPU model shipped in the package was trained with this experiment (see docs/results.md).
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ... import validation as v
from ..common import import_torch, new_figure, save_figure, write_run_record, write_table


def _simulator(families, matern32_noise, epsilon, delta) -> dict[str, Any]:
    """The TrainConfig fields that ``families``, ``matern32_noise``, ``epsilon`` and ``delta`` set (those given;
    TrainConfig checks the values)."""
    from ...errors import InvalidParameterError
    from ...nn.tasks import FAMILIES
    from ...nn.train import DEFAULT_WEIGHTS

    out: dict[str, Any] = {}
    if families is not None:
        names = [str(f) for f in np.atleast_1d(families)]
        if not names or any(f not in FAMILIES for f in names) or len(set(names)) != len(names):
            raise InvalidParameterError("families", f"distinct names among {', '.join(FAMILIES)}", families)
        out["weights"] = {f: DEFAULT_WEIGHTS[f] for f in names}
    for name, value in (("matern32_noise", matern32_noise), ("epsilon", epsilon), ("delta", delta)):
        if value is not None:
            out[name] = value
    return out


def _configs(quick: bool, seed: int, steps, val_every, val_tasks, batch_size, n_target, channels, first_channels,
             stream, simulator: dict[str, Any]):
    from ...nn.model import ModelConfig
    from ...nn.train import TrainConfig

    if quick:  # a tiny model on a small grid: the CI check that the loss decreases
        mcfg = ModelConfig(window=(-3.0, 3.0), points_per_unit=16, first_channels=8, channels=(16, 16), kernel_size=5)
        tcfg = TrainConfig(steps=steps or 300, batch_size=batch_size or 8, n_context=(16, 64), n_target=n_target or 64,
                           target_range=(-2.0, 2.0), val_tasks=val_tasks or 32, val_every=val_every or 100, seed=seed,
                           stream=stream, **simulator)
    else:
        kw: dict[str, Any] = {}
        if channels is not None:
            kw["channels"] = tuple(np.atleast_1d(channels).astype(int).tolist())
        if first_channels is not None:
            kw["first_channels"] = int(first_channels)
        mcfg = ModelConfig(**kw)
        tcfg = TrainConfig(steps=steps or 20000, batch_size=batch_size or 16, n_target=n_target or 256,
                           val_tasks=val_tasks or 512, val_every=val_every or 1000, seed=seed, stream=stream,
                           **simulator)
    return mcfg, tcfg


#: the options that size a training step (:func:`~privgp.nn.train.training_bytes`)
SIZES = ("batch_size", "n_target", "val_tasks", "channels", "first_channels")


def _check_memory(quick: bool, seed: int, stream: str, simulator: dict[str, Any], **options) -> None:
    """Refuse, before any model or batch is built, a run whose training step is estimated to need more than the
    package's memory limit (:data:`~privgp.mechanisms.interface.DEFAULT_MEMORY_LIMIT`), naming the option given
    (:data:`SIZES`) whose value adds most to the estimate, with its value."""
    from ...mechanisms.interface import DEFAULT_MEMORY_LIMIT
    from ...nn.train import training_bytes

    def need(**changed) -> float:
        return training_bytes(*_configs(quick, seed, **{**options, **changed}, stream=stream, simulator=simulator))

    total = need()
    if total <= DEFAULT_MEMORY_LIMIT:
        return
    given = [k for k in SIZES if options.get(k) is not None]
    driver = max(given, key=lambda k: total - need(**{k: None}), default=None)   # the defaults are admitted
    shown = options[driver] if driver is not None else None
    v.check_memory("training step (batch_size tasks of n_target and context points on the model's grid and "
                   "channels, and the val_tasks validation tasks)", total, DEFAULT_MEMORY_LIMIT,
                   "use a smaller batch_size, n_target, val_tasks or channels", raisable=False,
                   param=driver or "memory",
                   value=None if shown is None else ",".join(map(str, np.atleast_1d(shown).tolist())))


def train(out_dir: Path, *, quick: bool, executor=None, seed: int = 0, steps: int | None = None,
          max_minutes: float | None = None, val_every: int | None = None, val_tasks: int | None = None,
          batch_size: int | None = None, n_target: int | None = None, channels=None, first_channels=None,
          threads: int = 1, progress: bool | str | None = None, device: str = "cpu", stream: str = "sequential",
          data_workers: int = 0, families=None, matern32_noise=None, epsilon=None, delta=None) -> dict:
    """Train (or continue training) a DPConvCNP; see the module docstring. ``threads`` is torch's
    intra-op thread count (1 keeps the run to about one core). ``progress``: as :mod:`privgp.progress` (default: the
    executor's, i.e. ``privgp experiment``'s --progress: a bar on a terminal, lines with --progress, else nothing)."""
    from tqdm.auto import tqdm

    from ...errors import InvalidParameterError
    from ...nn.pretrained import load_checkpoint
    from ...nn.train import BatchPrefetcher, Trainer
    from ...progress import Progress, resolve_mode

    torch = import_torch("privgp experiment seed002-train", threads)
    workers = v.integer("data_workers", data_workers, minimum=0)
    dev = _device(device)
    out_dir = Path(out_dir)
    last = out_dir / "last.pt"
    simulator = _simulator(families, matern32_noise, epsilon, delta)
    mcfg, tcfg = _configs(quick, seed, steps, val_every, val_tasks, batch_size, n_target, channels, first_channels,
                          stream, simulator)
    # before any model or batch is built: batch_size=10**9 tried to allocate 464 GB and ended in a traceback
    # (red team 26)
    _check_memory(quick, seed, stream, simulator, steps=steps, val_every=val_every, val_tasks=val_tasks,
                  batch_size=batch_size, n_target=n_target, channels=channels, first_channels=first_channels)
    if last.exists():
        trainer = Trainer.from_state(load_checkpoint(last), steps=tcfg.steps, device=dev)   # weights only
        for key in simulator:
            if getattr(trainer.cfg, key) != getattr(tcfg, key):
                name = "families" if key == "weights" else key
                raise InvalidParameterError(name, f"the run's own value to resume {last} "
                                            f"({getattr(trainer.cfg, key)})", getattr(tcfg, key))
    else:
        trainer = Trainer(mcfg, tcfg, device=dev)
    cfg = trainer.cfg
    if workers and cfg.stream != "indexed":
        raise InvalidParameterError("data_workers", f"0 unless the run's stream is 'indexed' (it is {cfg.stream!r})",
                                    workers)
    prefetch = BatchPrefetcher(cfg, trainer.step, workers) if workers else None
    deadline = time.monotonic() + 60.0 * max_minutes if max_minutes else math.inf
    t_chunk = time.perf_counter()
    start_step = trainer.step
    recent: list[float] = []
    # the bar was always on, ignoring --progress: a log (stderr not a terminal) got every step's bar redrawn
    mode = resolve_mode(getattr(executor, "progress", None) if progress is None else progress)
    bar = tqdm(total=cfg.steps, initial=trainer.step, desc="seed002-train", disable=mode != "bar", dynamic_ncols=True)
    lines = Progress(cfg.steps - trainer.step, "seed002-train: steps", "lines") if mode == "lines" else None
    try:
        while trainer.step < cfg.steps and time.monotonic() < deadline:
            recent.append(trainer.train_step(next(prefetch) if prefetch is not None else None))
            recent = recent[-100:]
            bar.update(1)
            if lines is not None:
                lines.update(1)
            bar.set_postfix(loss=f"{np.mean(recent):.3f}", best_val=f"{trainer.best_val:.3f}")
            if trainer.step % cfg.val_every == 0 or trainer.step == cfg.steps:
                m, se = trainer.validate()
                trainer.history.append({"step": trainer.step, "train_loss": float(np.mean(recent)), "val_nll": m,
                                        "val_se": se, "seconds": trainer.seconds})
                _save(trainer, out_dir)
    finally:
        bar.close()
        if prefetch is not None:
            prefetch.close()
    if trainer.step != start_step and (not trainer.history or trainer.history[-1]["step"] != trainer.step):
        _save(trainer, out_dir)  # a chunk that stopped between validations still resumes exactly here
    hist = pd.DataFrame(trainer.history)
    if len(hist):
        write_table(hist, out_dir, "history")
        fig, ax = new_figure(figsize=(6, 3.5))
        ax.plot(hist["step"], hist["train_loss"], label="train (mean of last 100 steps)")
        ax.errorbar(hist["step"], hist["val_nll"], yerr=1.96 * hist["val_se"], label="validation (fixed tasks)", marker="o", ms=3)
        ax.set_xlabel("gradient step")
        ax.set_ylabel("NLL per target point")
        ax.legend()
        ax.set_title("DPConvCNP meta-training")
        save_figure(fig, out_dir / "loss.png")
    summary = {"step": trainer.step, "steps": cfg.steps, "done": trainer.step >= cfg.steps,
               "chunk_steps": trainer.step - start_step, "chunk_seconds": round(time.perf_counter() - t_chunk, 1),
               "train_seconds_total": round(trainer.seconds, 1), "best_val_nll": trainer.best_val,
               "best_step": trainer.best_step, "skipped_steps": trainer.skipped,
               "n_parameters": trainer.model.n_parameters(),
               "first_val_nll": trainer.history[0]["val_nll"] if trainer.history else None,
               "last_val_nll": trainer.history[-1]["val_nll"] if trainer.history else None}
    config = {"model": trainer.model_cfg.to_dict(), "train": cfg.to_dict(), "quick": quick, "threads": threads,
              "torch": torch.__version__, "device": str(dev), "data_workers": workers,
              "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"}
    write_run_record(out_dir, "seed002-train", config, summary, seconds=trainer.seconds)
    return summary


def _device(device: str):
    """The torch device named by ``device``, checked before anything is written."""
    import torch

    from ...errors import InvalidParameterError

    try:
        dev = torch.device(str(device))
    except (RuntimeError, TypeError):
        raise InvalidParameterError("device", "a torch device name such as 'cpu' or 'cuda'", device) from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InvalidParameterError("device", "a device this machine has (torch sees no CUDA GPU)", device)
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise InvalidParameterError("device", f"a GPU index below {torch.cuda.device_count()}", device)
    if dev.type not in ("cpu", "cuda"):
        raise InvalidParameterError("device", "'cpu' or 'cuda[:k]'", device)
    return dev


def _save(trainer, out_dir: Path) -> None:
    import torch

    from ...nn.pretrained import export_trained

    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "last.pt.tmp"
    torch.save(trainer.state(), tmp)
    tmp.replace(out_dir / "last.pt")  # atomic: an interrupted save never corrupts the checkpoint
    torch.save(export_trained(trainer), out_dir / "best.pt")
