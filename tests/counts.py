"""The per-namespace ``counts`` files of a store directory, as tests look at them (what ``summary.json`` was)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_hindsight.store.replica.files import COUNTS_DIR, DerivedFiles
from langchain_hindsight.store.replica.summary import Summary


def counts_files(directory: Path) -> list[str]:
    """The relative paths of the ``counts`` files in ``directory`` (sorted; ``[]``: none)."""
    return sorted(p.relative_to(directory).as_posix() for p in (directory / COUNTS_DIR).glob("*.npz"))


def counts_vouched(directory: Path, stamp: frozenset[str] | Mapping[str, Any]) -> bool:
    """Whether there are ``counts`` files and ``stamp`` (a stamp's files) vouches for every one."""
    files = counts_files(directory)
    return bool(files) and all(rel in stamp for rel in files)


def read_counts(directory: Path) -> Summary | None:
    """The summary the ``counts`` files hold, whatever the stamp says (``None``: none, or they disagree)."""
    return DerivedFiles(directory, counts_files(directory)).summary()


def write_counts(directory: Path, namespaces: Sequence[str], stats: Mapping[str, Mapping[str, Any]]) -> None:
    """Write ``counts`` files as the store's close does."""
    DerivedFiles(directory, ()).write_summary(namespaces, stats)


def erase_counts(directory: Path) -> None:
    """Remove every ``counts`` file (the next ``stats`` counts)."""
    for rel in counts_files(directory):
        (directory / rel).unlink()
