"""The store's rooms and who may touch what: read from the source (AST), so a new reach fails here first.

* the backends live in ``store/backend/``, the derived data in ``store/replica/``, each a real package;
* only ``store/replica/`` reads or writes a derived file (lexical and mirror snapshots, the summary), and it
  writes them at one moment, the store's close (``Replica.close``); the CLI reaches them only through the
  replica's reader (``DerivedFiles``), the one the live store reads with;
* ``store/backend/`` never names a derived file, the stamp or its word: the backend only holds the directory;
* no public raw database client on the store, nor on a backend;
* only ``store/_directory.py`` names the directory's own files (lock, stamp, intents);
* no mixin: ``MemoryStore`` is not assembled from ``*Mixin`` classes.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

from tests import source

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "langchain_hindsight"
STORE = PACKAGE / "store"

DERIVED_FILE_API = frozenset(
    {
        "COUNTS_DIR",
        "DERIVED",
        "LEGACY_DERIVED",
        "write_summary",
        "erase_summary",
        "write_snapshot",
        "read_snapshot",
        "read_header",
        "trusted_store",
        "read_stamp",
    }
)
"""Names that reach a derived file: where it lives, how it is saved, loaded, erased."""
DIRECTORY_FILES = frozenset({"LOCK_FILE", "STAMP_FILE", "read_stamp"})
"""Names of the directory's own files (lock, stamp) and the stamp's raw read (only HeldDirectory writes it)."""


def _modules(root: Path = PACKAGE) -> dict[str, ast.Module]:
    """Every module under ``root``, parsed once per process (tests/source.py; the trees are only read)."""
    return {p.relative_to(PACKAGE).as_posix(): source.tree(p) for p in root.rglob("*.py")}


def _imported_names(tree: ast.Module) -> set[str]:
    return {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names}


def _string_constants(tree: ast.Module) -> set[str]:
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_the_rooms_exist_as_real_packages() -> None:
    for package, modules in {
        "backend": {"base", "chroma", "inmemory"},
        "replica": {"records", "lexical", "files", "feed", "summary", "replica"},
    }.items():
        folder = STORE / package
        assert {p.stem for p in folder.glob("*.py")} >= {"__init__", *modules}
        mod = importlib.import_module(f"langchain_hindsight.store.{package}")
        assert mod.__all__, f"store/{package}/__init__.py names its public classes"
        for name in mod.__all__:
            assert getattr(mod, name) is not None


def test_only_the_replica_touches_derived_files() -> None:
    reaches = {
        rel: sorted(_imported_names(tree) & DERIVED_FILE_API)
        for rel, tree in _modules().items()
        if not rel.startswith("store/replica/") and rel != "store/_directory.py"
    }
    assert {rel: names for rel, names in reaches.items() if names} == {}
    literals = {
        rel: sorted(
            s
            for s in _string_constants(tree)
            if s in {"summary.json", "lexical", "mirror", "counts"} or s.endswith(".npz")
        )
        for rel, tree in _modules().items()
        if rel.startswith(("store/", "cli/")) and not rel.startswith("store/replica/") and rel != "store/_directory.py"
    }
    assert {rel: names for rel, names in literals.items() if names} == {}


def test_only_the_directory_module_names_the_lock_stamp_and_intents() -> None:
    reaches = {rel: sorted(_imported_names(tree) & DIRECTORY_FILES) for rel, tree in _modules().items()}
    assert {rel: names for rel, names in reaches.items() if names} == {}
    literals = {
        rel: sorted(s for s in _string_constants(tree) if s.startswith(".hindsight"))
        for rel, tree in _modules().items()
        if rel != "store/_directory.py"
    }
    assert {rel: names for rel, names in literals.items() if names} == {}


def test_no_mixin_assembles_the_store() -> None:
    mixins = {
        rel: [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name.endswith("Mixin")]
        for rel, tree in _modules(STORE).items()
    }
    assert {rel: names for rel, names in mixins.items() if names} == {}


DERIVED_WRITERS = frozenset({"write_summary", "erase_summary", "save", "write_snapshot"})
"""What writes or erases a derived file (``save``: ``Mirror.save``/``LexicalIndex.save``, a snapshot)."""


def _calls(tree: ast.AST) -> Iterator[tuple[str, ast.Call]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            yield name, node


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """``(qualified name, node)`` of every function, methods as ``Class.method``."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield f"{node.name}.{item.name}", item


def test_the_summary_has_one_writer_the_replicas_close() -> None:
    writers = {
        (rel, fn)
        for rel, tree in _modules().items()
        for fn, node in _functions(tree)
        for name, _ in _calls(node)
        if name == "write_summary"
    }
    assert writers == {("store/replica/replica.py", "Replica.close")}
    closers = {
        fn
        for fn, node in _functions(_modules()["store/replica/replica.py"])
        for name, call in _calls(node)
        if name == "save"
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "self"
    }
    assert closers == {"Replica.close"}  # the snapshots and the summary are saved from the close only
    replica_close = {
        (rel, fn) for rel, tree in _modules().items() for fn, node in _functions(tree) for name, _ in _calls(node)
        if name == "close_replica"
    }  # fmt: skip
    assert replica_close == {("store/memory_store.py", "MemoryStore.close")}


def test_nothing_outside_the_replica_writes_a_derived_file() -> None:
    found = {
        rel: sorted({name for name, _ in _calls(tree) if name in DERIVED_WRITERS - {"save"}})
        for rel, tree in _modules().items()
        if not rel.startswith("store/replica/")
    }
    assert {rel: names for rel, names in found.items() if names} == {}


def test_the_cli_reads_derived_files_only_through_the_replicas_reader() -> None:
    reaches = {}
    for rel, tree in _modules(PACKAGE / "cli").items():
        names = {
            a.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("langchain_hindsight.store.replica")
            for a in node.names
        }
        if names - {"DerivedFiles"}:  # the reader
            reaches[rel] = sorted(names)
    assert reaches == {}
    used = {rel for rel, tree in _modules(PACKAGE / "cli").items() if "DerivedFiles" in _imported_names(tree)}
    assert used == {"cli/_stats.py"}  # the quick path of hindsight stats


BACKEND_MUST_NOT_NAME = ("summary", "snapshot", "mirror", "stamp", "vouch", "trusted", "derived")


def _identifiers(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.alias):
            names.add(node.name)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_backends_never_name_a_derived_file_nor_the_stamp() -> None:
    named = {
        rel: sorted(
            n
            for n in _identifiers(tree) | _string_constants(tree)
            if any(w in n.lower() for w in BACKEND_MUST_NOT_NAME)
        )
        for rel, tree in _modules(STORE / "backend").items()
    }
    assert {rel: names for rel, names in named.items() if names} == {}
    imported = {
        rel: sorted(_imported_names(tree) & (DERIVED_FILE_API | {"DERIVED", "STAMP_FILE"}))
        for rel, tree in _modules(STORE / "backend").items()
    }
    assert {rel: names for rel, names in imported.items() if names} == {}


def test_no_public_raw_client_on_the_store_nor_the_backends() -> None:
    from langchain_hindsight.store.backend import Backend, ChromaBackend
    from langchain_hindsight.store.backend.postgres import PostgresBackend
    from langchain_hindsight.store.memory_store import MemoryStore

    for cls in (MemoryStore, Backend, ChromaBackend, PostgresBackend):
        assert not hasattr(cls, "client"), cls


def test_the_design_room_table_names_every_store_module_and_only_real_ones() -> None:
    """docs/DESIGN.md's "The rooms" is the newcomer's map of the store: it must match the package, both ways.

    Every module (subpackages' too, by path: ``replica/files.py``) and every subpackage (``replica/``) has a row.
    """
    text = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    section = text.split("\n### The rooms\n", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    named = {name for line in rows for name in re.findall(r"`([\w/]+\.py)`", line.split(" | ")[0])}
    named_rooms = {name.rstrip("/") for line in rows for name in re.findall(r"`(\w+/)`", line.split(" | ")[0])}
    modules = {p.relative_to(STORE).as_posix() for p in STORE.rglob("*.py") if p.name != "__init__.py"}
    rooms = {p.parent.name for p in STORE.glob("*/__init__.py")}
    assert named - modules == set(), "the table names modules that do not exist"
    assert modules - named == set(), "store modules missing from the table"
    assert named_rooms == rooms
