"""A private module (``langchain_hindsight.<pkg>._name``) is imported only from inside ``<pkg>``.

What another package needs of it is public: a name in ``<pkg>``'s ``__init__`` ``__all__`` (through its
lazy map) or a public module of ``<pkg>``. The rule reads every import (module level, inside functions,
under ``if TYPE_CHECKING:``) of the library, the benchmarks and the demo; the tests may reach in. The
package a private module belongs to is the one that holds it, so ``store/forget.py`` may not import
``store.backend._pg_filter`` either. The root's own private modules (``_text``, ``_claims``, ...) are the
library's shared base, below every subpackage, and outside this rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests import source

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "langchain_hindsight"
CALLERS = ("langchain_hindsight", "benchmarks", "hindsight_demo")


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path, tree: ast.Module, me: str) -> list[tuple[int, str]]:
    """Every module (and ``from``-imported name) an import of ``tree`` names, relative forms resolved."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]  # `from pkg import _mod`
    return found


def _private_owner(target: str) -> str | None:
    """The subpackage a private module of ``target`` belongs to (``None``: no private subpackage module)."""
    parts = target.split(".")
    if parts[0] != "langchain_hindsight":
        return None
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i]) if i > 1 else None  # i == 1: the root's private base modules
    return None


def reaches(path: Path, root: Path = ROOT) -> list[str]:
    """``path``'s imports of a subpackage's private module from outside that subpackage."""
    me = _module_name(path, root)
    out = []
    for line, target in _imported(path, source.tree(path), me):
        owner = _private_owner(target)
        if owner is not None and me != owner and not me.startswith(owner + "."):
            out.append(f"{path.relative_to(root)}:{line}: {target}")
    return sorted(set(out))


def test_no_private_module_is_imported_from_outside_its_package() -> None:
    found = [r for folder in CALLERS for p in sorted((ROOT / folder).rglob("*.py")) for r in reaches(p)]
    assert found == []


def test_the_scan_sees_every_form_of_a_reach(tmp_path: Path) -> None:
    lib = tmp_path / "langchain_hindsight"
    (lib / "store" / "backend").mkdir(parents=True)
    (lib / "ui").mkdir()
    ui = lib / "ui" / "views.py"
    ui.write_text(
        "from langchain_hindsight.store._codec import unit_to_metadata\n"
        "from langchain_hindsight.store import _reembed, MemoryStore\n"
        "import langchain_hindsight.lifecycle._merge\n"
        "from ..store._directory import holds_store\n"
        "from langchain_hindsight.store import holds_store\n"  # public: allowed
        "from langchain_hindsight._text import informative\n"  # the root's base: allowed
        "from langchain_hindsight.ui._security import COOKIE\n"  # its own package: allowed
        "def late():\n"
        "    from langchain_hindsight.session._verdict import revert_feedback\n"
    )
    forget = lib / "store" / "forget.py"
    forget.write_text(
        "from langchain_hindsight.store.backend import _pg_filter\nfrom langchain_hindsight.store import _directory\n"
    )
    assert reaches(ui, tmp_path) == [
        "langchain_hindsight/ui/views.py:1: langchain_hindsight.store._codec",
        "langchain_hindsight/ui/views.py:1: langchain_hindsight.store._codec.unit_to_metadata",
        "langchain_hindsight/ui/views.py:2: langchain_hindsight.store._reembed",
        "langchain_hindsight/ui/views.py:3: langchain_hindsight.lifecycle._merge",
        "langchain_hindsight/ui/views.py:4: langchain_hindsight.store._directory",
        "langchain_hindsight/ui/views.py:4: langchain_hindsight.store._directory.holds_store",
        "langchain_hindsight/ui/views.py:9: langchain_hindsight.session._verdict",
        "langchain_hindsight/ui/views.py:9: langchain_hindsight.session._verdict.revert_feedback",
    ]
    reach = "langchain_hindsight/store/forget.py:1: langchain_hindsight.store.backend._pg_filter"
    assert reaches(forget, tmp_path) == [reach]
    bench = tmp_path / "benchmarks" / "maintain.py"
    bench.parent.mkdir()
    bench.write_text("from langchain_hindsight.store._codec import unit_to_metadata\n")
    assert reaches(bench, tmp_path) == [
        "benchmarks/maintain.py:1: langchain_hindsight.store._codec",
        "benchmarks/maintain.py:1: langchain_hindsight.store._codec.unit_to_metadata",
    ]
