"""No store module reaches into another object's private attributes: the store's parts talk through public methods.

Read from the source (``tests/source.py``): in ``langchain_hindsight/store``, ``x._name`` is allowed only when ``x``
is ``self`` or ``cls``, or when the access sits inside a class that defines ``_name`` itself (a method reading a
private attribute of another instance of its own class, as ``LexicalIndex.load`` fills the index it built).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests import source

ROOT = Path(__file__).resolve().parents[3]
STORE = ROOT / "langchain_hindsight" / "store"

ALLOWED_MODULES: frozenset[str] = frozenset()
"""Module files (relative to ``store/``) not yet held to the rule; every other store module is."""


def _defined_privates(cls: ast.ClassDef) -> set[str]:
    """The private names a class defines: methods and class attributes, and ``self._x`` it assigns."""
    names: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("_"):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr.startswith("_"):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id.startswith("_"):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _reaches(tree: ast.Module) -> list[str]:
    """Each ``x._name`` in ``tree`` that the rule forbids, as ``line: source``."""
    found: list[str] = []

    def visit(node: ast.AST, own: frozenset[str]) -> None:
        if isinstance(node, ast.ClassDef):
            own = own | _defined_privates(node)
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            and node.attr not in own
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        for child in ast.iter_child_nodes(node):
            visit(child, own)

    visit(tree, frozenset())
    return found


def test_no_store_module_reads_another_objects_private_attributes() -> None:
    reaches = {
        path.relative_to(STORE).as_posix(): found
        for path in sorted(STORE.rglob("*.py"))
        if path.relative_to(STORE).as_posix() not in ALLOWED_MODULES and (found := _reaches(source.tree(path)))
    }
    assert reaches == {}, "use (or add) a public method of the object instead"


def test_the_allow_list_names_real_modules_that_still_need_it() -> None:
    """An entry is dropped once its module is gone or keeps the rule (the list only shrinks)."""
    for name in sorted(ALLOWED_MODULES):
        path = STORE / name
        if path.exists():
            assert _reaches(source.tree(path)), f"{name} keeps the rule now: remove it from ALLOWED_MODULES"


def test_the_rule_catches_a_reach_and_allows_a_classs_own_privates() -> None:
    tree = ast.parse(
        "class A:\n"
        "    def __init__(self):\n"
        "        self._x = 1\n"
        "    def same(self, other):\n"
        "        return other._x\n"
        "def outside(store):\n"
        "    return store._x, store.x, self_like._y\n"
    )
    assert _reaches(tree) == ["7: store._x", "7: self_like._y"]
