"""Static checks that CI runs with the suite: ruff over the whole project, and mypy over the whole
package, the public API held to full annotations (settings in pyproject.toml: ``[tool.ruff]``,
``[tool.mypy]`` and its overrides)."""
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
MYPY = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
#: the typed public API: the modules of the [[tool.mypy.overrides]] entry that refuses partial annotations
STRICT_MODULES = [m for o in MYPY.get("overrides", []) if o.get("disallow_incomplete_defs") for m in o["module"]]


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path(sys.executable).parent / name)


def _module_files(module: str) -> list[Path]:
    """The source files of a mypy module pattern (``privgp.x``, or ``privgp.x.*`` for a whole package)."""
    parts = module.split(".")
    if parts[-1] == "*":
        return sorted((ROOT / "src" / Path(*parts[:-1])).rglob("*.py"))
    base = ROOT / "src" / Path(*parts)
    return [base / "__init__.py" if base.is_dir() else base.with_suffix(".py")]


def _typed_files() -> list[Path]:
    return sorted({f for m in STRICT_MODULES for f in _module_files(m)})


def test_mypy_scope_is_the_whole_package():
    """mypy checks every module of the package; the strict list names modules that exist (a module
    moved or renamed must be moved in the list too, or it would silently lose its strict checks)."""
    assert MYPY["files"] == ["src/privgp"] and MYPY.get("check_untyped_defs") is True
    assert STRICT_MODULES, "no [[tool.mypy.overrides]] entry with disallow_incomplete_defs"
    missing = [m for m in STRICT_MODULES if not all(f.is_file() for f in _module_files(m)) or not _module_files(m)]
    assert not missing, missing


def test_ruff_finds_nothing():
    res = subprocess.run([_tool("ruff"), "check", "--no-cache", "src", "tests", "benchmarks", "scripts"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_finds_nothing():
    """mypy over the whole package (pyproject.toml's [tool.mypy]): function bodies checked everywhere,
    partial annotations refused in the typed public API (the override's modules)."""
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
    """Every public function and method of the typed public API has complete annotations (mypy's
    disallow_incomplete_defs alone would let a wholly unannotated public function through)."""
    missing = [m for f in _typed_files() for m in _unannotated(f)]
    assert not missing, "\n".join(missing)


def test_package_root_names_are_in_the_typed_scope():
    """The names ``privgp`` exports are defined in modules of the typed public API."""
    typed = {p.resolve() for p in _typed_files()}
    outside = []
    for name in privgp.__all__:
        if name == "__version__":
            continue
        src = Path(inspect.getsourcefile(getattr(privgp, name)) or "").resolve()
        if src not in typed:
            outside.append(f"{name} ({src})")
    assert not outside, "root exports defined outside the typed modules of [[tool.mypy.overrides]]: " + ", ".join(outside)


def test_the_modules_the_suite_runs_first_exist():
    """tests/conftest.py's RUN_FIRST names test modules by path: a renamed module would silently run last again."""
    from tests.conftest import RUN_FIRST

    assert RUN_FIRST and all((ROOT / name).is_file() for name in RUN_FIRST), RUN_FIRST
