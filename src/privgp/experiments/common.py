"""Helpers shared by experiments: run records, tables (Markdown + CSV), figures (PNG)."""
from __future__ import annotations

import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from .. import validation as v
from ..jsonable import to_jsonable


def versions() -> dict[str, str]:
    import matplotlib
    import scipy

    return {"privgp": __version__, "python": sys.version.split()[0], "numpy": np.__version__,
            "scipy": scipy.__version__, "matplotlib": matplotlib.__version__,
            "platform": platform.platform()}


def command_line() -> str:
    """The command that is running, as a user would type it (``privgp ...`` for the CLI). Its relative paths
    (``--out``, ``--set checkpoint=...``) are kept as typed, relative to the folder it ran in (the repository root
    for the committed runs, as docs/results.md says): making them absolute would record the machine's own folders
    in a file meant to be published."""
    argv = list(sys.argv)
    if argv and (Path(argv[0]).name == "privgp" or argv[0].endswith(("privgp/cli/main.py", "privgp.cli.main"))):
        argv[0] = "privgp"
    elif argv:
        argv = [Path(sys.executable).name] + argv
    return " ".join(shlex.quote(a) for a in argv)


def source_commit() -> str | None:
    """The git commit of the code that ran: $PRIVGP_COMMIT, else ``git rev-parse HEAD`` where the package
    lives (None outside a git checkout; ``+dirty`` when it has uncommitted changes)."""
    if os.environ.get("PRIVGP_COMMIT"):
        return os.environ["PRIVGP_COMMIT"]
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--", str(here.parent)],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def write_run_record(out_dir: Path, name: str, config: dict[str, Any], summary: dict[str, Any] | None = None,
                     seconds: float | None = None) -> Path:
    rec = {"experiment": name, "command": command_line(), "commit": source_commit(), "config": config,
           "versions": versions(), "machine": {"cpus": os.cpu_count(), "load_average": list(os.getloadavg())},
           "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "seconds": seconds, "summary": summary or {}}
    path = Path(out_dir) / "run.json"
    path.write_text(json.dumps(to_jsonable(rec), indent=2) + "\n")
    return path


def write_table(df, out_dir: Path, stem: str, *, floatfmt: str = ".4g", upper: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """Write a pandas DataFrame as ``stem.csv`` and ``stem.md``; ``upper``: as :func:`markdown_table`."""
    out_dir = Path(out_dir)
    csv = out_dir / f"{stem}.csv"
    md = out_dir / f"{stem}.md"
    df.to_csv(csv, index=False)
    md.write_text(markdown_table(df, floatfmt=floatfmt, upper=upper) + "\n")
    return csv, md


#: the words of a column name that make its numbers an epsilon bound (printed rounded up), and those that make them
#: a lower bound or a measured value (rounded down, or to nearest)
_EPS_WORDS = {"epsilon", "eps", "rdp", "delta", "sensitivity"}   # "Delta_n": a sensitivity bound (red team 18d)
_LOWER_WORDS = {"lower", "lb"}
_MEASURED_WORDS = {"exact", "found", "empirical", "ratio", "over", "reduction"}


def _rounding(column: object) -> str:
    """How a table column's floats are rounded: "up" for an epsilon or RDP bound (red team 25: fig1.md printed 133
    of 250 certified epsilons below the CSV's, e.g. 4.575e+10 for 45753879214.45), "down" for a lower bound,
    "nearest" otherwise (and for exact or measured values)."""
    words = set(re.split(r"[^a-z0-9]+", str(column).lower()))   # "eps*" is eps (red team 18d: 917.835 read 917.8)
    if not words & _EPS_WORDS or words & _MEASURED_WORDS:
        return "nearest"
    return "down" if words & _LOWER_WORDS else "up"


def markdown_table(df, floatfmt: str = ".4g", upper: tuple[str, ...] = ()) -> str:
    """``df`` as a Markdown table; a "|" inside a cell (e.g. "|y| <= M_Y") is escaped, so columns stay aligned. Floats
    in ``floatfmt``'s significant digits, bounds rounded to their safe side (:func:`_rounding`; ``upper`` names the
    other certified upper bounds, a GDP mu or a sensitivity bound, which the column's words do not tell: red team 26,
    dpsetconv_profile.md printed mu_bound 0.388401248 as 0.388401)."""
    from ..formatting import format_lower, format_upper

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    spec = re.fullmatch(r"\.(\d+)g", floatfmt)   # significant digits: bounds can be rounded to their side
    digits = int(spec.group(1)) if spec else None
    unknown = set(upper) - set(map(str, df.columns))
    if unknown:   # a renamed column would silently fall back to rounding to nearest
        raise ValueError(f"markdown_table: upper names columns the table does not have: {sorted(unknown)}")
    rounding = ["nearest" if digits is None else "up" if str(c) in upper else _rounding(c) for c in df.columns]
    cols = [cell(str(c)) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in df.iterrows():
        cells = []
        for val, how in zip(row, rounding):
            if isinstance(val, (float, np.floating)):
                x = float(val)
                if how != "nearest" and digits is not None and math.isfinite(x) and x != 0:
                    cells.append((format_upper if how == "up" else format_lower)(x, digits))
                else:
                    cells.append(format(x, floatfmt))
            else:
                cells.append(cell(str(val)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def save_figure(fig, path: Path, dpi: int = 130) -> Path:
    import matplotlib.pyplot as plt

    path = Path(path)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return path


def new_figure(*args, **kwargs):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


def import_torch(feature: str, threads: int | None = None):
    """torch, for an experiment that needs the ``nn`` extra (``feature`` names it in the one-line error a
    missing torch gives: :class:`~privgp.errors.MissingExtraError`); ``threads``: torch's intra-op threads."""
    try:
        import torch
    except ImportError:
        from ..errors import MissingExtraError

        raise MissingExtraError(feature, "torch", "nn") from None
    if threads is not None:
        # more threads than cores is refused before torch starts them: threads=100000 broke the next BLAS load
        # (scipy's import failed with a traceback)
        most = 4 * (os.cpu_count() or 1)
        n = v.integer("threads", threads, minimum=1)
        if n > most:
            from ..errors import InvalidParameterError

            raise InvalidParameterError("threads", f"an integer from 1 to {most} (4 per core of this machine)", threads)
        torch.set_num_threads(n)
    return torch


def as_tuple(values) -> tuple:
    """A scalar or a sequence of column values as a tuple (a single CLI value is one column)."""
    return tuple(np.atleast_1d(np.asarray(values)).tolist())
