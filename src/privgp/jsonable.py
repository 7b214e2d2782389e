"""Conversion of results to JSON-ready values (numpy scalars and arrays, +-inf as strings), and the one
comparison of two such values (``privgp verify`` against a rebuilt certificate, ``privgp.release`` against a
rebuilt plan)."""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def to_jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        x = float(obj)
        return x if math.isfinite(x) else ("inf" if x > 0 else "-inf" if x < 0 else "nan")
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def as_written(x: Any) -> Any:
    """``x`` as certificate.json holds it (numpy to Python, +-inf as strings, a JSON round trip)."""
    return json.loads(json.dumps(to_jsonable(x)))


def first_difference(recorded: Any, rebuilt: Any, path: str) -> tuple[str, Any, Any] | None:
    """The first place (dotted path, recorded value, rebuilt value) where two JSON values differ, or
    None. Numbers compare exactly (1 == 1.0; a bool is not a number); a key on one side only differs."""
    if isinstance(rebuilt, dict):
        if not isinstance(recorded, dict):
            return path, recorded, rebuilt
        for k in list(rebuilt) + [k for k in recorded if k not in rebuilt]:
            sub = f"{path}.{k}"
            if k not in recorded:
                return sub, "<missing>", rebuilt[k]
            if k not in rebuilt:
                return sub, recorded[k], "<not a setting of this mechanism>"
            d = first_difference(recorded[k], rebuilt[k], sub)
            if d is not None:
                return d
        return None
    if isinstance(rebuilt, list):
        if not isinstance(recorded, list) or len(recorded) != len(rebuilt):
            return path, recorded, rebuilt
        for i, (a, b) in enumerate(zip(recorded, rebuilt)):
            d = first_difference(a, b, f"{path}[{i}]")
            if d is not None:
                return d
        return None
    if isinstance(rebuilt, bool) or isinstance(recorded, bool):
        return None if (type(recorded) is type(rebuilt) and recorded == rebuilt) else (path, recorded, rebuilt)
    if isinstance(rebuilt, (int, float)) and isinstance(recorded, (int, float)):
        return None if recorded == rebuilt else (path, recorded, rebuilt)
    return None if (type(recorded) is type(rebuilt) and recorded == rebuilt) else (path, recorded, rebuilt)
