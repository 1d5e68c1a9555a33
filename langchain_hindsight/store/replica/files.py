"""The derived files of an embedded store directory: one format, one reader, where each lives, their eraser.

Every derived file is a *snapshot* of one namespace, one of three kinds, each in its own folder and named
after the namespace's memories collection (``<kind>/<collection>.npz``):

* ``lexical``: the BM25 index of the lexical arm (``replica.lexical``);
* ``mirror``: the recall mirror, active units' vectors and records (``replica.records``);
* ``counts``: what ``hindsight stats`` prints for the namespace (``replica.summary``), with the list of
  the store's namespaces when it was written.

One format for all three (:data:`SNAPSHOT_FORMAT`): an uncompressed zip holding ``header.json`` — the
kind, the format, the collection and the kind's fields (the tokenizer signature and BM25 constants, or the
dimension and embedder identity; the counts) — and the kind's arrays as
``<name>.npy`` (none for ``counts``). :func:`write_snapshot` writes one atomically, :func:`read_snapshot`
reads one. A file of an older
format (``1``: each kind's own npz header, and a single ``summary.json``) is never read: the kind is
rebuilt from the backend (the summary counted again) and the next close writes the current format.

:class:`DerivedFiles` is the one reader of a store's derived files, for the live store (its
:class:`~langchain_hindsight.store.replica.replica.Replica`) and for the CLI's quick paths alike
(:meth:`DerivedFiles.closed_store`: ``hindsight stats`` from the counts, ``hindsight search`` from
the snapshots, without opening Chroma). Both take the clean-close stamp's word the same way: a
file is read only if the stamp found at open (or, for a closed store, now, under the lock) vouches
for it. Standard library only at import (numpy is imported by the first array read or written):
``hindsight stats`` imports no numpy.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from langchain_hindsight.store._directory import DERIVED, LEGACY_DERIVED, erase_file, fsync_directory, trusted_store
from langchain_hindsight.store.replica.summary import Summary, valid_entry

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "COUNTS_DIR",
    "MIRROR_DIR",
    "SNAPSHOT_DIR",
    "SNAPSHOT_FORMAT",
    "DerivedFiles",
    "SnapshotKind",
    "drop_snapshot",
    "from_json_array",
    "json_array",
    "read_header",
    "read_snapshot",
    "write_snapshot",
]

logger = logging.getLogger(__name__)

SnapshotKind = Literal["lexical", "mirror", "counts"]
"""The kinds of derived file; each is also the folder its files live in."""
SNAPSHOT_DIR = "lexical"
"""Folder of the lexical index snapshots (one ``<collection>.npz`` per memories collection)."""
MIRROR_DIR = "mirror"
"""Folder of the recall mirror snapshots (one ``<collection>.npz`` per memories collection)."""
COUNTS_DIR = "counts"
"""Folder of the per-namespace statistics (one ``<collection>.npz`` per namespace, header only)."""
SNAPSHOT_FORMAT = 2
"""2: one zip of ``header.json`` and ``.npy`` arrays for every kind. 1 (each kind's own npz header): rebuilt."""
HEADER = "header.json"
_RESERVED = ("kind", "format", "collection")


def write_snapshot(
    path: Path, kind: SnapshotKind, fields: Mapping[str, Any], arrays: Mapping[str, np.ndarray] | None = None
) -> None:
    """Write the snapshot of ``kind`` at ``path`` atomically and durably (a temporary file, fsync, rename).

    The header holds the kind, :data:`SNAPSHOT_FORMAT`, the collection (the file's name, as
    :class:`DerivedFiles` places it) and ``fields``.

    Raises:
        OSError: the file could not be written (the temporary copy is left for the eraser).
        ValueError: ``fields`` names a reserved key.
    """
    if any(key in fields for key in _RESERVED):
        raise ValueError(f"a snapshot's fields cannot name {_RESERVED}")
    header = {"kind": kind, "format": SNAPSHOT_FORMAT, "collection": path.stem, **fields}
    import zipfile

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
    """The header and the named ``arrays`` of the ``kind`` snapshot at ``path``; ``None`` if absent or unusable.

    Unusable: unreadable, or of another kind, collection or format (the kind is then rebuilt). numpy is
    imported only when arrays are asked for (``hindsight stats`` reads headers alone).
    """
    import zipfile

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
    """The header of the ``kind`` snapshot at ``path`` (:func:`read_snapshot` without arrays), or ``None``."""
    loaded = read_snapshot(path, kind)
    return None if loaded is None else loaded[0]


def json_array(value: Any) -> np.ndarray:
    """``value`` as the UTF-8 bytes of its JSON, a ``uint8`` array (lists of ids and terms travel so)."""
    import numpy as np

    return np.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)


def from_json_array(array: np.ndarray) -> Any:
    """The value :func:`json_array` wrote."""
    return json.loads(array.tobytes().decode("utf-8"))


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
    def path(self, kind: SnapshotKind, collection: str) -> Path:
        """Where the ``kind`` snapshot of the memories collection ``collection`` lives."""
        return self.directory / kind / f"{collection}.npz"

    def lexical_path(self, collection: str) -> Path:
        """Where the lexical index snapshot of the memories collection ``collection`` lives."""
        return self.path("lexical", collection)

    def mirror_path(self, collection: str) -> Path:
        """Where the recall mirror snapshot of the memories collection ``collection`` lives."""
        return self.path("mirror", collection)

    def vouched(self, path: Path) -> bool:
        """Whether the stamp vouches for the derived file at ``path``."""
        try:
            return path.relative_to(self.directory).as_posix() in self.trusted
        except ValueError:
            return False

    def unvouched(self) -> list[Path]:
        """Every derived file on disk the stamp does not vouch for (half-written copies and older files included).

        Such a file is never read, but it may still hold text the data no longer has: a unit forgotten
        while another process (a Chroma server on this directory) held the data.
        """
        found: list[Path] = [p for name in LEGACY_DERIVED for p in (self.directory / name,) if p.is_file()]
        for name in DERIVED:
            top = self.directory / name
            for path in sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else []:
                kept = path.with_name(path.name.removesuffix(".tmp"))
                if path.name.endswith(".tmp") or not self.vouched(kept):
                    found.append(path)
        return sorted(set(found))

    # ------------------------------------------------------------------ the counts (what `hindsight stats` prints)
    def _counts_files(self) -> list[Path]:
        top = self.directory / COUNTS_DIR
        return sorted(top.glob("*.npz")) if top.is_dir() else []

    def summary(self) -> Summary | None:
        """The store's counts, from the vouched per-namespace ``counts`` files; ``None`` when they do not answer.

        They answer when every one is vouched for, reads, and lists the same namespaces (the store's, when
        the close wrote them); a namespace of that list without its file is simply not answered for.
        """
        namespaces: list[str] | None = None
        stats: dict[str, dict[str, Any]] = {}
        for path in self._counts_files():
            header = read_header(path, "counts") if self.vouched(path) else None
            if header is None:
                return None
            listed, namespace, entry = header.get("namespaces"), header.get("namespace"), header.get("stats")
            if not isinstance(listed, list) or not all(isinstance(ns, str) for ns in listed):
                return None
            if namespaces is None:
                namespaces = listed
            if listed != namespaces or not isinstance(namespace, str) or not isinstance(entry, dict):
                return None
            if not valid_entry(entry):
                return None
            stats[namespace] = entry
        if namespaces is None:
            return None
        return Summary(namespaces, {ns: stats[ns] for ns in namespaces if ns in stats})

    def write_summary(
        self, namespaces: Sequence[str], stats: Mapping[str, Mapping[str, Any]], collections: Mapping[str, str]
    ) -> None:
        """Write the ``counts`` file of each namespace of ``stats`` and erase every other one.

        Args:
            namespaces: Every namespace of the store (each file lists them).
            stats: What ``hindsight stats`` prints, by namespace.
            collections: The memories collection of each namespace of ``stats`` (the file's name).

        Raises:
            OSError: a file could not be written.
            StoreError: a file could not be erased.
        """
        keep = set()
        for namespace, entry in stats.items():
            path = self.path("counts", collections[namespace])
            fields = {"namespace": namespace, "namespaces": list(namespaces), "stats": dict(entry)}
            write_snapshot(path, "counts", fields)
            keep.add(path)
        for path in self._counts_files():
            if path not in keep:
                erase_file(path)

    def erase_summary(self) -> None:
        """Erase every ``counts`` file (and an older ``summary.json``): they no longer match the data.

        Raises:
            StoreError: a file exists and could not be erased.
        """
        for path in self._counts_files():
            erase_file(path)
        self.erase_legacy()

    def erase_legacy(self) -> None:
        """Erase derived files of an older format that are not per namespace (``summary.json``; absent is fine).

        Raises:
            StoreError: it exists and could not be erased.
        """
        for name in LEGACY_DERIVED:
            erase_file(self.directory / name)
