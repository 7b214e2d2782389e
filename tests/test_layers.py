"""The import contract of docs/architecture.md: a module imports only from its own layer or lower ones.

Checked on the source (ast), so that it also covers imports inside functions. ``accounting`` is pure
maths: it may import only the base layer (errors, validation, _version, jsonable).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "privgp"

#: lowest first; a module of layer i may import privgp modules of layers <= i
LAYERS = [
    {"errors", "validation", "_version", "jsonable", "progress", "formatting", "__init__", "__version__"},
    {"accounting"},
    {"domain", "kernels", "nngp", "geo"},
    {"gp"},
    {"sampling"},
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


def top_level(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def imported_tops(path: Path, src: Path = SRC) -> set[tuple[str, int]]:
    """(privgp top-level module, line) for every import of a privgp module in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    pkg_parts = list(path.relative_to(src).parent.parts)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg_parts[: len(pkg_parts) - (node.level - 1)] if node.level > 1 else pkg_parts
                mod = [*base, *(node.module.split(".") if node.module else [])]
                if mod:
                    out.add((mod[0], node.lineno))
                else:  # "from . import x" at the package root
                    out.update((alias.name, node.lineno) for alias in node.names)
            elif node.module and node.module.split(".")[0] == "privgp":
                parts = node.module.split(".")
                if len(parts) > 1:
                    out.add((parts[1], node.lineno))
                else:
                    out.update((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "privgp" and len(parts) > 1:
                    out.add((parts[1], node.lineno))
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
    planted.write_text("from .events import x\ndef f():\n    from ..kernels import make_kernel\n    import privgp.gp\n")
    tops = {t for t, _ in imported_tops(planted, tmp_path / "privgp")}
    assert tops == {"accounting", "kernels", "gp"}
