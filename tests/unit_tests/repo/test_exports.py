"""Where a name is imported from, read from the source (AST), so a new re-export fails here first.

* a module's ``__all__`` names only what it defines;
* ``from langchain_hindsight.x.y import N`` (or its relative form) names the module that defines ``N``,
  or a package ``__init__``: only an ``__init__`` re-exports (in the library, the benchmarks, the demo
  and the tests);
* every package ``__init__`` names its public names in ``__all__``, each resolves, and importing a
  subpackage loads none of its modules (they are imported on first use);
* the lazy maps of the ``__init__`` files point at the module that defines each name.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from tests import source

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "langchain_hindsight"
CALLERS = ("benchmarks", "hindsight_demo", "tests")
"""Code outside the library whose imports of it follow the same rule."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _library() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _tree(path: Path) -> ast.Module:
    return source.tree(path)  # parsed once per process, shared with the suite's other source rules


def _is_package(module: str) -> bool:
    return _library()[module].name == "__init__.py"


@cache
def _defined(module: str) -> frozenset[str]:
    """Names a module binds itself at its top level (also under ``if``/``try``), imports excluded."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                visit(node.orelse)
                visit(node.finalbody)
                for handler in node.handlers:
                    visit(handler.body)

    visit(_tree(_library()[module]).body)
    return frozenset(names)


def _all(module: str) -> list[str]:
    for node in _tree(_library()[module]).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            assert isinstance(node.value, ast.List | ast.Tuple)
            return [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
    return []


def _target(path: Path, node: ast.ImportFrom) -> str | None:
    """The absolute module an ``import from`` names (relative forms resolved inside the library)."""
    if node.level == 0:
        return node.module
    if not path.is_relative_to(PACKAGE):
        return None
    base = _module_name(path).split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _import_froms(body: list[ast.stmt] | list[ast.excepthandler]) -> Iterator[ast.ImportFrom]:
    """Every ``import from`` statement, at any depth (statements only: an import is never an expression)."""
    for node in body:
        if isinstance(node, ast.ImportFrom):
            yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                yield from _import_froms(inner)


def _re_exported_imports(path: Path) -> list[str]:
    if not path.is_relative_to(PACKAGE) and "langchain_hindsight" not in path.read_text(encoding="utf-8"):
        return []
    found = []
    for node in _import_froms(_tree(path).body):
        target = _target(path, node)
        if target is None or target not in _library() or _is_package(target):
            continue
        found += [f"{alias.name} from {target}" for alias in node.names if alias.name not in _defined(target)]
    return found


@pytest.mark.parametrize("module", [m for m in _library() if not _is_package(m)])
def test_a_module_exports_only_what_it_defines(module: str) -> None:
    assert sorted(set(_all(module)) - _defined(module)) == []


def test_names_are_imported_from_the_module_that_defines_them() -> None:
    files = [*PACKAGE.rglob("*.py"), *(p for folder in CALLERS for p in (ROOT / folder).rglob("*.py"))]
    reaches = {str(p.relative_to(ROOT)): _re_exported_imports(p) for p in files}
    assert {path: names for path, names in reaches.items() if names} == {}


def test_the_scan_sees_a_re_export(tmp_path: Path) -> None:
    caller = tmp_path / "caller.py"
    caller.write_text(
        "from langchain_hindsight.recall.fusion import fuse, query_script\n"
        "from langchain_hindsight.recall import query_script\n"
    )
    assert _re_exported_imports(caller) == ["query_script from langchain_hindsight.recall.fusion"]


PACKAGES = sorted(m for m in _library() if _is_package(m))


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_init_names_its_public_names(package: str) -> None:
    module = importlib.import_module(package)
    names = module.__all__
    assert names, f"{package}/__init__.py defines __all__"
    assert len(set(names)) == len(names)
    submodules = {p.stem for p in _library()[package].parent.iterdir() if p.suffix == ".py" or p.is_dir()}
    assert set(names) & submodules == set(), "a public name that is also a module's name is ambiguous"
    for name in names:
        assert getattr(module, name) is not None
    assert set(names) <= set(dir(module))


def _lazy_maps(package: str) -> dict[str, str]:
    """``name -> defining module`` from an ``__init__``'s ``_EXPORTS`` (and the root's ``_ALSO_IMPORTABLE``)."""
    module = importlib.import_module(package)
    merged: dict[str, str] = {}
    for table in ("_EXPORTS", "_ALSO_IMPORTABLE"):
        for name, where in getattr(module, table, {}).items():
            if where.startswith("."):
                where = package + where
            elif not where.startswith("langchain_hindsight"):
                where = f"{package}.{where}"
            merged[name] = where
    return merged


@pytest.mark.parametrize("package", PACKAGES)
def test_lazy_maps_point_at_the_defining_module(package: str) -> None:
    wrong = {
        name: where
        for name, where in _lazy_maps(package).items()
        if not (_is_package(where) or name in _defined(where))
    }
    assert wrong == {}


def test_importing_a_subpackage_loads_none_of_its_modules() -> None:
    """A subpackage's ``__init__`` imports, when run, only what defers its names (``if TYPE_CHECKING:`` aside)."""
    deferring = {"__future__", "typing", "importlib", "langchain_hindsight._lazy"}
    eager = {}
    for package in (m for m in PACKAGES if m.count(".") == 1):
        path = _library()[package]
        runtime = [
            n for n in _tree(path).body if not (isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
        ]
        imported = {a.name for n in runtime if isinstance(n, ast.Import) for a in n.names}
        imported |= {_target(path, n) or "" for n in runtime if isinstance(n, ast.ImportFrom)}
        eager[package] = sorted(imported - deferring)
    assert {package: names for package, names in eager.items() if names} == {}
