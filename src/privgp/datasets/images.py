"""Small image datasets for seed 003 (LOOD): scikit-learn's digits (shipped, offline) and CIFAR-10
from local python-pickle batches when a user has them (nothing is downloaded).

Images are flat float vectors in raw pixel units (digits: 8 x 8 in [0, 16]; CIFAR-10: 3 x 32 x 32
channel-major in [0, 255], the pickle layout). :class:`ChannelNormaliser` standardises each channel
with fixed statistics (the reference code's ``NORM='independent'``: the same statistics for D and
D', so that the preprocessing does not depend on the differing record).
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import validation as v
from ..errors import DataError, InvalidParameterError


@dataclass(frozen=True)
class ImageData:
    X: np.ndarray            # (N, d) raw pixels
    labels: np.ndarray       # (N,) int
    shape: tuple[int, ...]   # image shape for display: (H, W) or (C, H, W)
    pixel_range: tuple[float, float]
    name: str

    @property
    def channels(self) -> int:
        return 1 if len(self.shape) == 2 else self.shape[0]

    def select_classes(self, classes) -> ImageData:
        """Only the given classes, relabelled 0..k-1 in the given order."""
        classes = [int(c) for c in np.atleast_1d(classes)]
        present = set(np.unique(self.labels).tolist())
        if not classes or any(c not in present for c in classes) or len(set(classes)) != len(classes):
            raise InvalidParameterError("classes", f"distinct labels among {sorted(present)}", classes)
        keep = np.isin(self.labels, classes)
        relabel = {c: i for i, c in enumerate(classes)}
        return ImageData(self.X[keep], np.array([relabel[c] for c in self.labels[keep]]), self.shape,
                         self.pixel_range, f"{self.name}[{','.join(map(str, classes))}]")


def load_digits_images() -> ImageData:
    """scikit-learn's 1797 handwritten digits, 8 x 8 pixels in [0, 16], 10 classes."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return ImageData(d.data.astype(float), d.target.astype(int), (8, 8), (0.0, 16.0), "digits")


#: What a CIFAR-10 python batch may name (numpy arrays and scalars, and the latin-1 bytes of a protocol-2 pickle);
#: numpy 1 wrote ``numpy.core``, numpy 2 writes ``numpy._core``.
_BATCH_GLOBALS = {(core, name) for core in ("numpy.core.multiarray", "numpy._core.multiarray")
                  for name in ("_reconstruct", "scalar")} | {
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy", "uint8"), ("_codecs", "encode")}


class _BatchUnpickler(pickle.Unpickler):
    """An unpickler that builds only the arrays, numbers, strings, lists and dicts of a CIFAR-10 batch: a pickle
    may otherwise call any importable function while it is read (a planted ``data_batch_1`` would run code)."""

    def find_class(self, module: str, name: str):
        if (module, name) not in _BATCH_GLOBALS:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which a CIFAR-10 batch does not hold "
                                         "(only numpy arrays, numbers, strings, lists and dicts are read)")
        rest = module.split(".", 2)[-1]
        modules = (f"numpy._core.{rest}", f"numpy.core.{rest}") if module.startswith("numpy.") and "core" in module else (module,)
        for where in modules:   # numpy 2's home first (its numpy.core warns), numpy 1's next
            try:
                return super().find_class(where, name)
            except (ImportError, AttributeError):
                continue
        raise pickle.UnpicklingError(f"{module}.{name} is not importable here")


def load_cifar10_batches(directory, *, include_test: bool = False) -> ImageData:
    """CIFAR-10 from local python-pickle batches (``data_batch_1`` .. ``data_batch_5`` and, with
    ``include_test``, ``test_batch``) in ``directory``, as distributed at cs.toronto.edu/~kriz.

    The batches are read by a restricted unpickler: numpy arrays, numbers, strings, lists and dicts only; a file
    that names anything else (a function to call, a class to build) is refused before it runs."""
    root = Path(directory)
    if not root.is_dir():
        raise DataError(f"CIFAR-10 folder not found: {root}")
    names = sorted(p.name for p in root.glob("data_batch_*")) + (["test_batch"] if include_test else [])
    if not names:
        raise DataError(f"no CIFAR-10 python batches (data_batch_*) in {root}")
    xs, ys = [], []
    for name in names:
        try:
            with open(root / name, "rb") as fh:
                batch = _BatchUnpickler(fh, encoding="bytes").load()
            x = np.asarray(batch[b"data"], dtype=float)
            y = np.asarray(batch[b"labels"], dtype=int)
        except (OSError, pickle.UnpicklingError, KeyError, EOFError, TypeError, ValueError, IndexError) as exc:
            raise DataError(f"cannot read CIFAR-10 batch {root / name}: {exc}") from None
        if x.ndim != 2 or x.shape[1] != 3072 or y.shape != (x.shape[0],):
            raise DataError(f"CIFAR-10 batch {root / name} has data of shape {x.shape}, expected (N, 3072)")
        xs.append(x)
        ys.append(y)
    return ImageData(np.vstack(xs), np.concatenate(ys), (3, 32, 32), (0.0, 255.0), "cifar10")


def balanced_subset(labels, size: int, rng: np.random.Generator, *, exclude=None) -> np.ndarray:
    """Indices of a class-balanced random subset (sizes differ by at most one between classes)."""
    rng = v.generator("rng", rng)
    labels = np.asarray(labels)
    size = v.integer("size", size, minimum=1)
    avail = np.ones(labels.size, bool)
    if exclude is not None:
        avail[np.asarray(exclude, dtype=int)] = False
    classes = np.unique(labels)
    per = [size // classes.size + (1 if i < size % classes.size else 0) for i in range(classes.size)]
    out = []
    for c, m in zip(rng.permutation(classes), per):
        pool = np.flatnonzero(avail & (labels == c))
        if pool.size < m:
            raise InvalidParameterError("size", f"at most the available records per class ({pool.size} of class {c})", size)
        out.append(rng.choice(pool, size=m, replace=False))
    return np.sort(np.concatenate(out))


@dataclass(frozen=True)
class ChannelNormaliser:
    """x -> (x - mean_c) / std_c per channel (channel-major flat images)."""

    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def fit(cls, X, channels: int) -> ChannelNormaliser:
        X = v.finite_array("X", X, ndim=2)
        per = X.reshape(X.shape[0], channels, -1)
        mean, std = per.mean(axis=(0, 2)), per.std(axis=(0, 2))
        if np.any(std <= 0):
            raise InvalidParameterError("X", "non-constant in every channel", std)
        return cls(mean, std)

    def _expand(self, a, d):
        return np.repeat(a, d // a.size)

    def __call__(self, X) -> np.ndarray:
        X = np.asarray(X, float)
        d = X.shape[-1]
        return (X - self._expand(self.mean, d)) / self._expand(self.std, d)

    def inverse(self, Z) -> np.ndarray:
        Z = np.asarray(Z, float)
        d = Z.shape[-1]
        return Z * self._expand(self.std, d) + self._expand(self.mean, d)
