"""The derived files of an embedded store directory: one format, one reader, where each lives.

Each is a snapshot of one namespace at ``<kind>/<memories collection>.npz``: ``mirror`` (its recall mirror and
lexical index) or ``counts`` (what ``hindsight stats`` prints, with the store's namespaces). The format is an
uncompressed zip of ``header.json`` (kind, format, collection, the kind's fields) and the arrays as ``<name>.npy``.
An older format (``1``: npz headers and one ``summary.json``; ``2``: a separate ``lexical`` file) is never read:
it is rebuilt, erased, and the next close writes the current one. :class:`DerivedFiles` reads a file only if the
clean-close stamp vouches for it. numpy is imported by the first array read or written: ``stats`` imports none.
"""

from __future__ import annotations

import json
import logging
import os
import zipfile
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from langchain_hindsight.store._directory import DERIVED, LEGACY_DERIVED, erase_file, fsync_directory, trusted_store
from langchain_hindsight.store._naming import collection_name
from langchain_hindsight.store.replica.summary import Summary

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "COUNTS_DIR",
    "SNAPSHOT_FORMAT",
    "DerivedFiles",
    "SnapshotKind",
    "from_json_array",
    "json_array",
    "read_header",
    "read_snapshot",
    "write_snapshot",
]

logger = logging.getLogger(__name__)

SnapshotKind = Literal["mirror", "counts"]
"""The kinds of derived file; each is also the folder its files live in."""
_OLD_LEXICAL = "lexical"
"""Folder of format 2's lexical snapshots (now in the ``mirror`` file): erased with the namespace's snapshot."""
COUNTS_DIR = "counts"
"""Folder of the per-namespace statistics (header only)."""
SNAPSHOT_FORMAT = 3
HEADER = "header.json"


def write_snapshot(
    path: Path, kind: SnapshotKind, fields: Mapping[str, Any], arrays: Mapping[str, np.ndarray] | None = None
) -> None:
    """Write the ``kind`` snapshot at ``path`` (header: ``fields``, kind, format, collection) atomically and durably.

    Raises:
        OSError: the file could not be written (the temporary copy is left for the eraser).
    """
    header = {**fields, "kind": kind, "format": SNAPSHOT_FORMAT, "collection": path.stem}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            archive.writestr(HEADER, json.dumps(header, ensure_ascii=False).encode("utf-8"))
            if arrays:
                from numpy.lib import format as npy

                for name, array in arrays.items():
                    with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                        npy.write_array(member, array, allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_directory(path.parent)


def read_snapshot(
    path: Path, kind: SnapshotKind, arrays: Sequence[str] = ()
) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """The header and named ``arrays`` of the ``kind`` snapshot at ``path``; ``None``: absent, unreadable, or of
    another kind, collection or format (the kind is then rebuilt).
    """  # noqa: D205
    try:
        with zipfile.ZipFile(path) as archive:
            header = json.loads(archive.read(HEADER).decode("utf-8"))
            if not isinstance(header, dict) or header.get("kind") != kind or header.get("collection") != path.stem:
                return None
            if header.get("format") != SNAPSHOT_FORMAT:
                raise ValueError(f"format {header.get('format')!r}, not {SNAPSHOT_FORMAT}")
            loaded = {}
            if arrays:
                from numpy.lib import format as npy

                for name in arrays:
                    with archive.open(f"{name}.npy") as member:
                        loaded[name] = npy.read_array(member, allow_pickle=False)
    except FileNotFoundError:
        return None
    except Exception:  # a damaged or older snapshot is rebuilt, never trusted
        logger.info("%s snapshot %s is not of the current format or unreadable: rebuilt", kind, path, exc_info=True)
        return None
    return header, loaded


def read_header(path: Path, kind: SnapshotKind) -> dict[str, Any] | None:
    """The header of the ``kind`` snapshot at ``path`` (no arrays, no numpy), or ``None``."""
    loaded = read_snapshot(path, kind)
    return None if loaded is None else loaded[0]


def json_array(value: Any) -> np.ndarray:
    """``value`` as the UTF-8 bytes of its JSON, a ``uint8`` array (lists of ids and terms travel so)."""
    import numpy as np

    return np.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)


def from_json_array(array: np.ndarray) -> Any:
    """The value :func:`json_array` wrote."""
    return json.loads(array.tobytes().decode("utf-8"))


class DerivedFiles:
    """The derived files of the embedded store at ``directory``, and the relative paths the stamp vouched for."""

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

    def path(self, kind: SnapshotKind, namespace: str) -> Path:
        """Where ``namespace``'s ``kind`` snapshot lives (named by its memories collection)."""
        return self.directory / kind / f"{collection_name(namespace, 'memories')}.npz"

    def snapshots(self, namespace: str) -> tuple[Path, Path]:
        """Every file that may hold ``namespace``'s ``mirror`` snapshot: the current one and format 2's lexical one."""
        path = self.path("mirror", namespace)
        return path, self.directory / _OLD_LEXICAL / path.name

    def trusted_snapshot(self, namespace: str) -> Path | None:
        """``namespace``'s ``mirror`` snapshot if the stamp vouches for it, else ``None``."""
        path = self.path("mirror", namespace)
        return path if self.vouched(path) else None

    def vouched(self, path: Path) -> bool:
        """Whether the stamp vouches for the derived file at ``path`` (a path under :attr:`directory`)."""
        return path.relative_to(self.directory).as_posix() in self.trusted

    def unvouched(self) -> list[Path]:
        """Every derived file on disk the stamp does not vouch for (half-written and older ones included).

        Never read, it may still hold text the data no longer has (a unit forgotten while a server held the data).
        """
        found = [p for p in (self.directory / name for name in LEGACY_DERIVED) if p.is_file()]
        for name in DERIVED:
            top = self.directory / name
            files = [p for p in top.rglob("*") if p.is_file()] if top.is_dir() else []
            found += [p for p in files if p.name.endswith(".tmp") or not self.vouched(p)]
        return sorted(found)

    # ------------------------------------------------------------------ the counts (what `hindsight stats` prints)
    def _counts_files(self) -> list[Path]:
        top = self.directory / COUNTS_DIR
        return sorted(top.glob("*.npz")) if top.is_dir() else []

    def summary(self) -> Summary | None:
        """The store's counts from its ``counts`` files, if every one is vouched for, reads and lists the same
        namespaces; else ``None``. A namespace of that list without its file is not answered for.
        """  # noqa: D205
        namespaces: list[str] | None = None
        stats: dict[str, dict[str, Any]] = {}
        for path in self._counts_files():
            header = read_header(path, "counts") if self.vouched(path) else None
            if header is None or namespaces not in (None, header["namespaces"]):
                return None
            namespaces = header["namespaces"]
            stats[header["namespace"]] = header["stats"]
        return None if namespaces is None else Summary(namespaces, {ns: stats[ns] for ns in namespaces if ns in stats})

    def write_summary(self, namespaces: Sequence[str], stats: Mapping[str, Mapping[str, Any]]) -> None:
        """Write the ``counts`` file of each namespace of ``stats`` (each lists all ``namespaces``); erase the rest.

        Raises:
            OSError: a file could not be written.
            StoreError: a file could not be erased.
        """
        keep = {self.path("counts", namespace) for namespace in stats}
        for namespace, entry in stats.items():
            fields = {"namespace": namespace, "namespaces": list(namespaces), "stats": dict(entry)}
            write_snapshot(self.path("counts", namespace), "counts", fields)
        self.erase_summary(keep)

    def erase_summary(self, keep: Collection[Path] = ()) -> None:
        """Erase every ``counts`` file but those in ``keep``, and an older ``summary.json`` (absent is fine).

        Raises:
            StoreError: a file exists and could not be erased.
        """
        for path in [*self._counts_files(), *(self.directory / name for name in LEGACY_DERIVED)]:
            if path not in keep:
                erase_file(path)
