"""Shared CLI helpers: number parsing with clear errors, JSON printing."""
from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from ..jsonable import to_jsonable


def positive_float(text: str) -> float:
    """argparse type: a number > 0; 'inf' allowed."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if math.isnan(x):
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    return x


def nonnegative_int(text: str) -> int:
    """argparse type: an integer >= 0 (seeds)."""
    try:
        x = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if x < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return x


def print_json(obj: Any) -> None:
    json.dump(to_jsonable(obj), sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
