"""The write path's shape, read from the source: a pure planner, one apply step, the store's methods bound to them.

* the planner (``langchain_hindsight/writes.py``) plans without I/O: it imports nothing of the store, no database or
  file client, and no network library;
* ``_store_writes.py``, ``writes.py`` and ``apply.py`` touch no private member of another object (the store's
  state is reached through ``StoreCore``'s public methods);
* ``_store_writes.py`` writes no record itself: every write goes through ``apply.py``;
* ``MemoryStore``'s write methods are the write functions themselves, not a second signature to keep in step.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from langchain_hindsight.store import _store_writes, forget, transfer
from langchain_hindsight.store.memory_store import MemoryStore
from tests import source

PACKAGE = Path(__file__).resolve().parents[3] / "langchain_hindsight"
STORE = PACKAGE / "store"
WRITE_PATH = ("store/_store_writes.py", "writes.py", "store/apply.py")
IO = ("langchain_hindsight.store", "langchain_hindsight.embeddings", "chromadb", "psycopg", "sqlite3", "os", "pathlib")
IO += ("shutil", "socket", "subprocess", "httpx", "requests", "urllib")


def test_the_planner_imports_nothing_that_does_io() -> None:
    tree = source.tree(PACKAGE / "writes.py")
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    assert "langchain_hindsight._claims" in imported  # the walk sees the function-level imports too
    assert sorted(m for m in imported if any(m == x or m.startswith(f"{x}.") for x in IO)) == []


@pytest.mark.parametrize("name", WRITE_PATH)
def test_the_write_path_reaches_no_private_member_of_another_object(name: str) -> None:
    reaches = [
        f"{ast.unparse(node)} (line {node.lineno})"
        for node in ast.walk(source.tree(PACKAGE / name))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id == "self")
    ]
    assert reaches == []


def test_only_the_apply_step_writes_records() -> None:
    writes = [
        f"{ast.unparse(node)} (line {node.lineno})"
        for node in ast.walk(source.tree(STORE / "_store_writes.py"))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in {"upsert", "update", "delete", "modify"}
    ]
    assert writes == []


@pytest.mark.parametrize(
    ("method", "module"),
    [
        *((m, _store_writes) for m in ("add", "add_many", "supersede", "update", "update_many", "record_feedback")),
        *((m, _store_writes) for m in ("share", "archive", "restore", "discard")),
        ("forget", forget),
        ("scrub", forget),
        ("import_units", transfer),
    ],
)
def test_the_store_methods_are_the_write_functions(method: str, module: object) -> None:
    assert inspect.unwrap(getattr(MemoryStore, method)) is inspect.unwrap(getattr(module, method))
    assert getattr(MemoryStore, method).__doc__ == getattr(module, method).__doc__
