"""The import contract of docs/architecture.md: a module imports only from its own layer or lower ones.

Checked on the source (ast), so that it also covers imports inside functions. ``accounting`` is pure
maths: it may import only the base layer (errors, validation, _version, jsonable). The unit of a layer
is a top-level module or package of privgp, except in the models package, whose subpackages are layered
among themselves (domain, kernels, nngp < gp < sampling).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "privgp"

#: lowest first; a module of layer i may import privgp modules of layers <= i
LAYERS = [
    {"errors", "validation", "_version", "jsonable", "progress", "formatting", "portable", "blas_threads", "__init__",
     "__version__"},
    {"accounting"},
    {"models", "models.domain", "models.kernels", "models.nngp", "geo"},
    {"models.gp"},
    {"models.sampling"},
    {"datasets"},
    {"ledger"},
    {"mechanisms"},
    {"audit"},
    {"tasks"},
    {"parallel"},
    {"nn"},
    {"experiments"},
    {"cli", "publish"},   # publish: the release writers for Python users, shared with the command
]
#: accounting is pure maths: only the base layer below it
ACCOUNTING_MAY_IMPORT = LAYERS[0] | {"accounting"}


def layer_of(top: str) -> int:
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"privgp.{top} is in no layer of tests/test_layers.py: add it (and to docs/architecture.md)")


def unit(parts: list[str]) -> str:
    """The layer unit of a module given by its parts below privgp (``["models", "gp", "posterior"]``)."""
    parts = [p.removesuffix(".py") for p in parts]
    if parts[0] == "models" and len(parts) > 1 and parts[1] != "__init__":
        return f"models.{parts[1]}"
    return parts[0]


def top_level(path: Path) -> str:
    return unit(list(path.relative_to(SRC).parts))


def imported_tops(path: Path, src: Path = SRC) -> set[tuple[str, int]]:
    """(privgp layer unit, line) for every import of a privgp module in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    pkg_parts = list(path.relative_to(src).parent.parts)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg_parts[: len(pkg_parts) - (node.level - 1)] if node.level > 1 else pkg_parts
                mod = [*base, *(node.module.split(".") if node.module else [])]
            elif node.module and node.module.split(".")[0] == "privgp":
                mod = node.module.split(".")[1:]
            else:
                continue
            if mod and not (mod == ["models"]):
                out.add((unit(mod), node.lineno))
            else:  # "from privgp import x", "from . import x" at the root, "from privgp.models import gp"
                out.update((unit([*mod, alias.name]), node.lineno) for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "privgp" and len(parts) > 1:
                    out.add((unit(parts[1:]), node.lineno))
    return out


MODULES = sorted(p for p in SRC.rglob("*.py") if p.name != "__init__.py" or p.parent != SRC)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_imports_a_higher_layer(path):
    me = top_level(path)
    mine = layer_of(me)
    for top, line in imported_tops(path):
        if me == "accounting":
            assert top in ACCOUNTING_MAY_IMPORT, f"{path.relative_to(SRC)}:{line} accounting imports privgp.{top}"
        else:
            assert layer_of(top) <= mine, (f"{path.relative_to(SRC)}:{line} ({LAYERS[mine]}) imports privgp.{top} "
                                           f"from a higher layer ({LAYERS[layer_of(top)]})")


def test_the_checker_sees_relative_and_absolute_imports(tmp_path):
    """The contract test itself can fail: a planted upward import is found."""
    tops = {t for t, _ in imported_tops(SRC / "accounting" / "rdp.py")}
    assert "errors" in tops
    planted = tmp_path / "privgp" / "accounting" / "planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text("from .events import x\ndef f():\n    from ..models.kernels import make_kernel\n"
                       "    import privgp.models.gp\n    from ..models import sampling\n")
    tops = {t for t, _ in imported_tops(planted, tmp_path / "privgp")}
    assert tops == {"accounting", "models.kernels", "models.gp", "models.sampling"}
