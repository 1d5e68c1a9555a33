"""The derived files of an embedded store directory: where each lives, which the stamp vouches for, their eraser.

:class:`DerivedFiles` is the one reader of a store's derived files, for the live store (its
:class:`~langchain_hindsight.store.replica.replica.Replica`) and for the CLI's quick paths alike
(:meth:`DerivedFiles.closed_store`: ``hindsight stats`` from the summary, ``hindsight search`` from
the snapshots, without opening Chroma). Both take the clean-close stamp's word the same way: a
file is read only if the stamp found at open (or, for a closed store, now, under the lock) vouches
for it. Standard library only at import: ``hindsight stats`` imports no numpy.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from langchain_hindsight.store._directory import DERIVED, SUMMARY_FILE, erase_file, trusted_store
from langchain_hindsight.store.replica.summary import Summary, read_summary

__all__ = ["MIRROR_DIR", "SNAPSHOT_DIR", "DerivedFiles", "drop_snapshot"]

SNAPSHOT_DIR = "lexical"
"""Folder of the lexical index snapshots (one ``<collection>.npz`` per memories collection)."""
MIRROR_DIR = "mirror"
"""Folder of the recall mirror snapshots (one ``<collection>.npz`` per memories collection)."""


def drop_snapshot(path: Path) -> None:
    """Zero-fill and remove the snapshot at ``path`` and any half-written copy of it (absent is fine).

    Raises:
        StoreError: a file exists and could not be erased (it may hold the
            tokens of a memory being forgotten).
    """
    erase_file(path)


class DerivedFiles:
    """The derived files of the store at ``directory``, and which of them the stamp vouches for.

    Args:
        directory: The embedded store's directory.
        trusted: Relative paths the clean-close stamp vouches for (read when the directory was locked).
    """

    def __init__(self, directory: Path, trusted: Collection[str]) -> None:
        self.directory = directory
        self.trusted = frozenset(trusted)

    @classmethod
    @contextmanager
    def closed_store(cls, directory: str | Path) -> Iterator[DerivedFiles]:
        """The derived files of a closed store, read under its lock (taken and released here; the stamp stays).

        Raises:
            StoreLockedError: the store is open in another process (as opening it would).
        """
        path = Path(directory)
        with trusted_store(path) as trusted:
            yield cls(path, trusted)

    # ------------------------------------------------------------------ where
    def lexical_path(self, collection: str) -> Path:
        """Where the lexical index snapshot of the memories collection ``collection`` lives."""
        return self.directory / SNAPSHOT_DIR / f"{collection}.npz"

    def mirror_path(self, collection: str) -> Path:
        """Where the recall mirror snapshot of the memories collection ``collection`` lives."""
        return self.directory / MIRROR_DIR / f"{collection}.npz"

    @property
    def summary_path(self) -> Path:
        """Where the statistics summary lives."""
        return self.directory / SUMMARY_FILE

    def vouched(self, path: Path) -> bool:
        """Whether the stamp vouches for the derived file at ``path``."""
        try:
            return path.relative_to(self.directory).as_posix() in self.trusted
        except ValueError:
            return False

    def unvouched(self) -> list[Path]:
        """Every derived file on disk the stamp does not vouch for (half-written copies included), sorted.

        Such a file is never read, but it may still hold text the data no longer has: a unit forgotten
        while another process (a Chroma server on this directory) held the data.
        """
        found: list[Path] = []
        for name in DERIVED:
            top = self.directory / name
            candidates = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
            for path in candidates:
                kept = path.with_name(path.name.removesuffix(".tmp"))
                if path.name.endswith(".tmp") or not self.vouched(kept):
                    found.append(path)
        if (self.directory / (SUMMARY_FILE + ".tmp")).is_file():
            found.append(self.directory / (SUMMARY_FILE + ".tmp"))
        return sorted(set(found))

    # ------------------------------------------------------------------ what
    def summary(self) -> Summary | None:
        """The statistics summary if the stamp vouches for it and it reads, else ``None`` (count instead)."""
        return read_summary(self.directory) if self.vouched(self.summary_path) else None

    def erase_summary(self) -> None:
        """Erase the statistics summary (absent is fine): it no longer matches the data, and nothing recounted it.

        Raises:
            StoreError: it exists and could not be erased.
        """
        erase_file(self.summary_path)
