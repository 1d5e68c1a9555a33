"""The store's rooms and who may touch what: read from the source (AST), so a new reach fails here first.

* the backends live in ``store/backend/``, the derived data in ``store/replica/``, each a real package;
* only ``store/replica/`` reads or writes a derived file (lexical and mirror snapshots, the summary);
* only ``store/_directory.py`` names the directory's own files (lock, stamp, intents);
* no mixin: ``MemoryStore`` is not assembled from ``*Mixin`` classes.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from tests import source

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "langchain_hindsight"
STORE = PACKAGE / "store"

DERIVED_FILE_API = frozenset(
    {
        "SNAPSHOT_DIR",
        "MIRROR_DIR",
        "SUMMARY_FILE",
        "DERIVED",
        "snapshot_path",
        "mirror_path",
        "save_snapshot",
        "load_snapshot",
        "save_mirror",
        "load_mirror",
        "drop_snapshot",
        "read_summary",
        "write_summary",
    }
)
"""Names that reach a derived file: where it lives, how it is saved, loaded, erased."""
DIRECTORY_FILES = frozenset(
    {"LOCK_FILE", "STAMP_FILE", "FORGET_INTENT", "SCRUB_MARKER", "IMPORT_PENDING", "read_stamp", "write_stamp"}
)
"""Names of the directory's own files (lock, stamp, intents) and the stamp's raw reads and writes."""


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
        "replica": {"records", "lexical", "files", "feed", "summary", "snapshot", "units", "replica"},
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
            s for s in _string_constants(tree) if s in {"summary.json", "lexical", "mirror"} or s.endswith(".npz")
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
