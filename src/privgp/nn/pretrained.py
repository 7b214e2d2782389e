"""The shipped DPConvCNP: a reduced model (UNet 5 x 64) meta-trained on CPU with
``privgp experiment seed002-train`` (command, steps and wall time in docs/results.md, seed 002).

``load()`` returns it ready for ``release``/``predict``; a user gets predictions without training.
Every checkpoint is read by :func:`load_checkpoint`, with ``torch.load(..., weights_only=True)``:
tensors and plain containers only (unpickling arbitrary objects could run code from the file); a
checkpoint holding anything else is refused (DataError).
"""
from __future__ import annotations

import pickle
from importlib import resources
from pathlib import Path
from typing import Any

import torch

from ..errors import DataError
from .model import DPConvCNP

SHIPPED = "dpconvcnp_small.pt"


def load_checkpoint(path: str | Path) -> Any:
    """``torch.load`` of weights only (tensors, numbers, strings, lists, dicts; torch's version string is
    allowed too, as older checkpoints hold it): a file that needs any other object is refused."""
    from torch.torch_version import TorchVersion

    try:
        with torch.serialization.safe_globals([TorchVersion]):
            return torch.load(Path(path), weights_only=True, map_location="cpu")
    except (pickle.UnpicklingError, RuntimeError, AttributeError, TypeError, ValueError, EOFError) as exc:
        first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise DataError(f"checkpoint {str(path)!r} cannot be loaded as weights only (tensors and plain containers; "
                        f"privgp never unpickles other objects, which could run code): {first[:200]}") from None


def export_trained(trainer) -> dict[str, Any]:
    """The best weights of a :class:`~privgp.nn.train.Trainer` with their configs and training record."""
    best = trainer.best_state if trainer.best_state is not None else trainer.model.state_dict()
    return {"config": trainer.model_cfg.to_dict(), "state_dict": best,
            "training": {"train_config": trainer.cfg.to_dict(), "step": trainer.step, "best_step": trainer.best_step,
                         "best_val_nll": trainer.best_val, "train_seconds": trainer.seconds,
                         "torch": str(torch.__version__)}}


def load(path: str | Path | None = None) -> DPConvCNP:
    """Load a trained DPConvCNP (default: the checkpoint shipped in the package), in eval mode."""
    if path is None:
        ref = resources.files("privgp.nn").joinpath("weights", SHIPPED)
        if not ref.is_file():
            raise DataError(f"the shipped checkpoint weights/{SHIPPED} is missing from the installed package")
        with resources.as_file(ref) as p:
            d = load_checkpoint(p)
    else:
        p = Path(path)
        if not p.is_file():
            raise DataError(f"checkpoint {str(p)!r} does not exist")
        d = load_checkpoint(p)
    if not isinstance(d, dict) or "config" not in d or "state_dict" not in d:
        raise DataError(f"{path or SHIPPED} is not a DPConvCNP checkpoint (needs 'config' and 'state_dict')")
    return DPConvCNP.from_export(d)


def training_record(path: str | Path | None = None) -> dict[str, Any]:
    """The training record stored with a checkpoint (schedule, steps, wall time, best validation NLL)."""
    if path is None:
        ref = resources.files("privgp.nn").joinpath("weights", SHIPPED)
        with resources.as_file(ref) as p:
            return load_checkpoint(p).get("training", {})
    return load_checkpoint(path).get("training", {})
