"""Static checks that CI runs with the suite: ruff over the whole project, and mypy over the public
API (scope and settings in pyproject.toml: ``[tool.ruff]``, ``[tool.mypy]``)."""
from __future__ import annotations

import ast
import inspect
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import privgp

ROOT = Path(__file__).resolve().parents[1]
MYPY_FILES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path(sys.executable).parent / name)


def _typed_files() -> list[Path]:
    out: list[Path] = []
    for entry in MYPY_FILES:
        p = ROOT / entry
        out += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return out


def test_ruff_finds_nothing():
    res = subprocess.run([_tool("ruff"), "check", "--no-cache", "src", "tests", "benchmarks", "scripts"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_finds_nothing():
    """mypy over the typed scope of pyproject.toml ([tool.mypy] files): function bodies checked,
    partial annotations refused."""
    res = subprocess.run([_tool("mypy"), "--no-incremental", "--cache-dir", "/dev/null"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Success: no issues found" in res.stdout


def _unannotated(path: Path) -> list[str]:
    """Public functions and methods of public classes (module level) lacking a parameter or return
    annotation (self/cls excepted); ``__init__`` and ``__call__`` count as public."""
    missing: list[str] = []

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                walk(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name.startswith("_") and node.name not in ("__init__", "__call__"):
                    continue
                a = node.args
                params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]
                bare = [p.arg for p in params if p.annotation is None and p.arg not in ("self", "cls")]
                if bare or node.returns is None:
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {prefix}{node.name}"
                                   + (f" (parameters {bare})" if bare else "") + (" (return)" if node.returns is None else ""))

    walk(ast.parse(path.read_text()).body, "")
    return missing


def test_public_api_fully_annotated():
    """Every public function and method in the typed scope has complete annotations (mypy's
    disallow_incomplete_defs alone would let a wholly unannotated public function through)."""
    missing = [m for f in _typed_files() for m in _unannotated(f)]
    assert not missing, "\n".join(missing)


def test_package_root_names_are_in_the_typed_scope():
    """The names ``privgp`` exports are defined in modules that mypy checks."""
    typed = {p.resolve() for p in _typed_files()}
    outside = []
    for name in privgp.__all__:
        if name == "__version__":
            continue
        src = Path(inspect.getsourcefile(getattr(privgp, name)) or "").resolve()
        if src not in typed:
            outside.append(f"{name} ({src})")
    assert not outside, "root exports defined outside [tool.mypy] files: " + ", ".join(outside)
