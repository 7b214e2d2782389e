"""Shared CLI helpers: argument parsing with clear errors (numbers, boxes, seeds, memory limits, dataset
ids), the randomness record of a release, JSON printing."""
from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

import numpy as np

from ..errors import InvalidParameterError
from ..models.domain import Box


def _parsed(text: str, cast, ok, expected: str):
    """``cast(text)`` if it parses and ``ok`` holds, else the argparse error "expected <expected>, got <text>"."""
    try:
        x = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not ok(x):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return x


def positive_float(text: str) -> float:
    """argparse type: a number, not NaN ('inf' allowed); its range is checked where the value is used (one
    place for each requirement, with the parameter's name)."""
    return _parsed(text, float, lambda x: not math.isnan(x), "a number")


def nonnegative_int(text: str) -> int:
    """argparse type: an integer >= 0 (seeds)."""
    return _parsed(text, int, lambda x: x >= 0, "an integer >= 0")


def grid_points(text: str) -> int:
    """argparse type of --grid: an integer >= 2 (0 or 1 is an error, never replaced by the default)."""
    return _parsed(text, int, lambda x: x >= 2, "an integer >= 2 (grid points along the longest side)")


def print_json(obj: Any) -> None:
    from ..jsonable import to_jsonable

    json.dump(to_jsonable(obj), sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def number_list(text: str) -> float:
    """argparse type: a finite number."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return x


def box_from_values(values, dim: int | None) -> Box:
    """A public box from --box XMIN XMAX [YMIN YMAX] for dim-D data (any dimension when ``dim`` is None)."""
    if dim is None and (len(values) % 2 or not values):
        raise InvalidParameterError("--box", "pairs XMIN XMAX [YMIN YMAX ...]", values)
    if dim is not None and len(values) != 2 * dim:
        hint = (" (for 2-D data give --y-col too)" if dim == 1 and len(values) == 4 else
                " (privgp maps 1-D data along a line or 2-D data over a plane: --x-col and --y-col; more coordinates "
                "are not supported)" if len(values) > 4 else "")
        raise InvalidParameterError("--box", f"{2 * dim} numbers (XMIN XMAX" + (" YMIN YMAX)" if dim == 2 else ")")
                                    + f" for {dim}-D data{hint}", len(values))
    try:
        return Box(tuple(values[0::2]), tuple(values[1::2]))
    except InvalidParameterError as exc:   # the library names the side; the user typed --box
        side = exc.name.replace("domain ", "")
        raise InvalidParameterError("--box", f"{exc.requirement}, on every side ({side} is not)", list(values)) from None


def memory_limit(gib: float) -> float:
    """--memory-limit GIB in bytes."""
    if not (math.isfinite(gib) and gib > 0):
        raise InvalidParameterError("--memory-limit", "a finite number of GiB > 0", gib)
    return gib * 2**30


def randomness(seed):
    """(generator, record): fresh OS entropy without a seed; a fixed seed is for demonstrations and says so."""
    if seed is None:
        from ..mechanisms.release import FRESH_ENTROPY

        return np.random.default_rng(), dict(FRESH_ENTROPY)
    return np.random.default_rng(seed), {
        "source": "fixed seed (demo); the seed is not recorded here",
        "warning": "anyone with the seed can reproduce this release; the privacy guarantee holds only if "
                   "the seed is secret and unguessable. Omit --seed for a real release."}


def dataset_id(name: str) -> str:
    """--dataset-id NAME, checked, in Unicode normal form NFC (its ledger key folds width, case and spacing too:
    :meth:`privgp.ledger.Ledger.named_fingerprint`)."""
    import unicodedata

    name = unicodedata.normalize("NFC", name.strip())
    if not name or len(name) > 200 or not name.isprintable():
        raise InvalidParameterError("--dataset-id", "a printable name of 1 to 200 characters", name)
    return name
