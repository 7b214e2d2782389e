"""Writes format_reference.json: the pixels (sha256 of the decoded RGBA) of tests/cli/picture_cases.py's pictures in
picture formats 1 and 2, drawn by release_figure.py as committed at COMMIT (the last privgp whose current format was
2), in format 3, drawn as committed at COMMITS[3] (the last privgp whose current format was 3), in format 4, drawn
as committed at COMMITS[4] (the last privgp whose current format was 4), and in format 5, drawn as committed at
COMMITS[5] (the last privgp whose current format was 5), so that
tests/cli/test_release_figure_format3.py can check that this privgp still draws them the same (``privgp verify``
redraws an earlier release's picture in its format). Run from the repository root:

    python tests/data/pictures/make_reference.py
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib

COMMIT = "bf2c029109aabd771c862646746435fa3e5e0386"
#: picture format -> the commit that draws it (its last privgp of that format or of a later one that keeps it)
COMMITS = {1: COMMIT, 2: COMMIT, 3: "c33f890378e63f588b9a4b26a80b9c947f250f76",
           4: "67e3aea3bd49348354c5077660e140d8c987f6d8", 5: "8d114800a55043da333731e83ba97214d0a8393c"}
ROOT = Path(__file__).resolve().parents[3]


def module_at(commit: str):
    """privgp.cli.release_figure as committed at ``commit``, imported beside the installed package."""
    source = subprocess.run(["git", "show", f"{commit}:src/privgp/cli/release_figure.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "release_figure_then.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("privgp.cli.release_figure_then", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    sys.path.insert(0, str(ROOT / "tests" / "cli"))
    import picture_cases

    modules = {commit: module_at(commit) for commit in set(COMMITS.values())}
    pictures = {}
    for name, (field, ctx) in picture_cases.cases().items():
        for fmt, commit in COMMITS.items():
            pic = modules[commit].draw(field, ctx, fmt)
            pictures[f"{name}-{fmt}"] = {"size": [pic.width, pic.height],
                                         "pixels_sha256": picture_cases.pixels_sha256(pic.png)}
    out = {"commit": COMMIT, "commits": {str(f): c for f, c in COMMITS.items()}, "matplotlib": matplotlib.__version__,
           "pictures": pictures}
    (Path(__file__).parent / "format_reference.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"written: {len(pictures)} pictures")


if __name__ == "__main__":
    main()
