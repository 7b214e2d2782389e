"""Shared pieces of the seed-003 image experiments: data (digits, or local CIFAR-10 batches),
fixed per-channel normalisation, kernels by name, image grids."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...audit.lood.models import centred_one_hot
from ...datasets.images import ChannelNormaliser, ImageData, balanced_subset, load_cifar10_batches, load_digits_images
from ...errors import InvalidParameterError
from ...models.nngp import NNGP, RBF

DATASETS = ("digits", "cifar10")


def load_images(dataset: str = "digits", *, cifar_dir: str | None = None, classes=None) -> ImageData:
    """``digits`` (scikit-learn, offline) or ``cifar10`` from local python batches in ``cifar_dir``."""
    if dataset == "digits":
        data = load_digits_images()
    elif dataset == "cifar10":
        if not cifar_dir:
            raise InvalidParameterError("cifar_dir", "the folder of local CIFAR-10 python batches for dataset=cifar10",
                                        cifar_dir)
        data = load_cifar10_batches(cifar_dir)
    else:
        raise InvalidParameterError("dataset", f"one of {DATASETS}", dataset)
    return data if classes is None else data.select_classes(classes)


def normaliser(data: ImageData, idx) -> ChannelNormaliser:
    """Per-channel statistics of the records ``idx``, used for both datasets of every pair (the
    reference code's NORM='independent')."""
    return ChannelNormaliser.fit(data.X[np.asarray(idx)], data.channels)


@dataclass(frozen=True)
class TrainingSet:
    """A class-balanced training set of n images (``idx`` into the data), the remaining images ``rest``, the
    normaliser fitted on the training images, the normalised inputs Z and centred one-hot labels Y (C classes)."""

    idx: np.ndarray
    rest: np.ndarray
    normaliser: ChannelNormaliser
    Z: np.ndarray
    Y: np.ndarray
    C: int


def training_set(data: ImageData, n: int, rng: np.random.Generator) -> TrainingSet:
    """The training set of the seed-003 image experiments (sec. 5): balanced over classes, drawn from ``rng``."""
    C = int(data.labels.max()) + 1
    idx = balanced_subset(data.labels, n, rng)
    rest = np.setdiff1d(np.arange(data.X.shape[0]), idx)
    nm = normaliser(data, idx)
    return TrainingSet(idx=idx, rest=rest, normaliser=nm, Z=nm(data.X[idx]), Y=centred_one_hot(data.labels[idx], C), C=C)


def kernel(name: str = "nngp", *, activation: str = "relu", depth: int = 5, w_std: float = 2 ** 0.5,
           b_std: float = 0.0, gamma: float = 1.0):
    if name == "rbf":
        return RBF(gamma)
    if name == "nngp":
        return NNGP(activation, depth, w_std, b_std)
    raise InvalidParameterError("kernel", "one of ('rbf', 'nngp')", name)


def to_display(x: np.ndarray, data: ImageData) -> np.ndarray:
    """An image for imshow: the reference code's clip(x / max(x), 0, 1) in pixel units."""
    img = np.asarray(x, float).reshape(data.shape)
    if img.ndim == 3:
        img = np.moveaxis(img, 0, -1)
    m = img.max()
    return np.clip(img / m if m > 0 else img, 0.0, 1.0)


def show_row(axes, images, data: ImageData, titles=None) -> None:
    for i, (a, x) in enumerate(zip(axes, images)):
        img = to_display(x, data)
        a.imshow(img, cmap="gray" if img.ndim == 2 else None, vmin=0.0, vmax=1.0)
        a.set_xticks([])
        a.set_yticks([])
        if titles is not None:
            a.set_title(titles[i], fontsize=7)
