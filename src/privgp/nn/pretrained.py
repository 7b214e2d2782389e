"""The shipped DPConvCNP: a reduced model (UNet 5 x 64) meta-trained on CPU with
``privgp experiment seed002-train`` (command, steps and wall time in docs/results.md, seed 002).

``load()`` returns it ready for ``release``/``predict``; a user gets predictions without training.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import torch

from ..errors import DataError
from .model import DPConvCNP

SHIPPED = "dpconvcnp_small.pt"


def export_trained(trainer) -> dict[str, Any]:
    """The best weights of a :class:`~privgp.nn.train.Trainer` with their configs and training record."""
    best = trainer.best_state if trainer.best_state is not None else trainer.model.state_dict()
    return {"config": trainer.model_cfg.to_dict(), "state_dict": best,
            "training": {"train_config": trainer.cfg.to_dict(), "step": trainer.step, "best_step": trainer.best_step,
                         "best_val_nll": trainer.best_val, "train_seconds": trainer.seconds,
                         "torch": torch.__version__}}


def load(path: str | Path | None = None) -> DPConvCNP:
    """Load a trained DPConvCNP (default: the checkpoint shipped in the package), in eval mode."""
    if path is None:
        ref = resources.files("privgp.nn").joinpath("weights", SHIPPED)
        if not ref.is_file():
            raise DataError(f"the shipped checkpoint weights/{SHIPPED} is missing from the installed package")
        with resources.as_file(ref) as p:
            d = torch.load(p, weights_only=False, map_location="cpu")
    else:
        p = Path(path)
        if not p.is_file():
            raise DataError(f"checkpoint {str(p)!r} does not exist")
        d = torch.load(p, weights_only=False, map_location="cpu")
    if not isinstance(d, dict) or "config" not in d or "state_dict" not in d:
        raise DataError(f"{path or SHIPPED} is not a DPConvCNP checkpoint (needs 'config' and 'state_dict')")
    return DPConvCNP.from_export(d)


def training_record(path: str | Path | None = None) -> dict[str, Any]:
    """The training record stored with a checkpoint (schedule, steps, wall time, best validation NLL)."""
    if path is None:
        ref = resources.files("privgp.nn").joinpath("weights", SHIPPED)
        with resources.as_file(ref) as p:
            return torch.load(p, weights_only=False, map_location="cpu").get("training", {})
    return torch.load(Path(path), weights_only=False, map_location="cpu").get("training", {})
