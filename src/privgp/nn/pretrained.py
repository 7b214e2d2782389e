"""The shipped DPConvCNP: a reduced model (UNet 5 x 64) meta-trained on CPU with
``privgp experiment seed002-train`` (command, steps and wall time in docs/results.md, seed 002).

``load()`` returns it ready for ``release``/``predict``; a user gets predictions without training.

Where the checkpoint comes from. The file (1.1 MiB) is in the repository and in privgp's sdist, but
not in the wheel: a core install (no torch) cannot use it, so it is not carried by every install.
Its SHA-256 (:data:`SHIPPED_SHA256`) is in the package. :func:`locate` looks, in order, at
``$PRIVGP_NN_WEIGHTS`` (the file or its folder), the package's ``weights/`` folder (a clone or an
editable install) and the user folder :func:`user_dir` (``$XDG_DATA_HOME/privgp/nn``, default
``~/.local/share/privgp/nn``), where :func:`install` puts it, once, from the sdist or from the file
(``python -m privgp.nn.pretrained install privgp-VERSION.tar.gz``); every copy is checked against
the hash before it is loaded. Missing everywhere: a one-line DataError saying how to get it.
Every checkpoint is read by :func:`load_checkpoint`, with ``torch.load(..., weights_only=True)``:
tensors and plain containers only (unpickling arbitrary objects could run code from the file); a
checkpoint holding anything else is refused (DataError).
"""
from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import sys
import tarfile
from pathlib import Path
from typing import Any

import torch

from ..errors import DataError
from .model import DPConvCNP

SHIPPED = "dpconvcnp_small.pt"
#: SHA-256 of the shipped checkpoint (every copy found or installed is checked against it)
SHIPPED_SHA256 = "47853fcd6b3097878966934941a92eed991013b297ef9c6e0e7a3aa866c67a36"
#: the package's own weights folder (holds the checkpoint in a clone or an editable install, not in a wheel)
PACKAGE_WEIGHTS = Path(__file__).resolve().parent / "weights"
ENV = "PRIVGP_NN_WEIGHTS"


def user_dir() -> Path:
    """The user folder :func:`install` writes to: ``$XDG_DATA_HOME/privgp/nn`` (default ``~/.local/share``)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "privgp" / "nn"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _how_to_get() -> str:
    from .._version import __version__

    return (f"the shipped DPConvCNP checkpoint {SHIPPED} is not installed (privgp's wheel leaves it out; it is in the "
            f"sdist): pip download --no-deps --no-binary privgp privgp=={__version__} -d DIR && python -m "
            f"privgp.nn.pretrained install DIR/privgp-{__version__}.tar.gz (or set {ENV}=FILE, or load(PATH) a "
            f"checkpoint of your own: privgp experiment seed002-train)")


def locate() -> Path:
    """The shipped checkpoint's path: ``$PRIVGP_NN_WEIGHTS``, the package's ``weights/`` folder, or
    :func:`user_dir`, in that order; checked against :data:`SHIPPED_SHA256`. DataError (one line,
    saying how to get it) when it is nowhere."""
    env = os.environ.get(ENV)
    places = []
    if env:
        p = Path(env)
        places.append(p / SHIPPED if p.is_dir() else p)
    places += [PACKAGE_WEIGHTS / SHIPPED, user_dir() / SHIPPED]
    for p in places:
        if p.is_file():
            if _sha256(p) != SHIPPED_SHA256:
                raise DataError(f"{str(p)!r} is not the shipped checkpoint {SHIPPED} (SHA-256 differs); "
                                f"install it again or load(PATH) it as a checkpoint of your own")
            return p
    if env:
        raise DataError(f"{ENV}={env!r} does not name {SHIPPED} or a folder holding it")
    raise DataError(_how_to_get())


def install(source: str | Path) -> Path:
    """Put the shipped checkpoint into :func:`user_dir`, from privgp's sdist (``privgp-VERSION.tar.gz``)
    or from the file itself; the copy is checked against :data:`SHIPPED_SHA256`. Returns its path."""
    src = Path(source)
    if not src.is_file():
        raise DataError(f"{str(src)!r} does not exist")
    dest_dir = user_dir()
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp = dest_dir / (SHIPPED + ".part")
    if tarfile.is_tarfile(src):
        with tarfile.open(src) as tf:
            members = [m for m in tf.getmembers() if m.isfile() and m.name.endswith(f"/privgp/nn/weights/{SHIPPED}")]
            if not members:
                raise DataError(f"{str(src)!r} holds no privgp/nn/weights/{SHIPPED} (not a privgp sdist?)")
            reader = tf.extractfile(members[0])
            assert reader is not None
            with reader, open(tmp, "wb") as out:
                shutil.copyfileobj(reader, out)
    else:
        shutil.copyfile(src, tmp)
    if _sha256(tmp) != SHIPPED_SHA256:
        tmp.unlink()
        raise DataError(f"{str(src)!r} does not hold the shipped checkpoint {SHIPPED} (SHA-256 differs)")
    dest = dest_dir / SHIPPED
    os.replace(tmp, dest)
    return dest


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
    """Load a trained DPConvCNP (default: the shipped checkpoint, found by :func:`locate`), in eval mode."""
    if path is None:
        d = load_checkpoint(locate())
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
        return load_checkpoint(locate()).get("training", {})
    return load_checkpoint(path).get("training", {})


def _main(argv: list[str]) -> int:
    """``python -m privgp.nn.pretrained install SOURCE`` | ``where``."""
    if len(argv) == 2 and argv[0] == "install":
        try:
            print(install(argv[1]))
        except DataError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    if argv == ["where"]:
        try:
            print(locate())
        except DataError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    print("usage: python -m privgp.nn.pretrained install SDIST_OR_FILE | where", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
