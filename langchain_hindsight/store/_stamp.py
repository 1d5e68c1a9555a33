"""The directory lock and the clean-close stamp of an embedded store (standard library and ``filelock`` only).

An embedded store directory holds Chroma's data (``chroma.sqlite3`` and the
vector segments) and files derived from it (:data:`DERIVED`: lexical snapshots,
recall snapshots, the statistics summary). A derived file is worth reading
without opening Chroma only if nothing has changed the data since it was
written, and only the last process that held the directory lock can say so. So:

* a process that opens the store (:class:`CleanClose`, used by the embedded
  Chroma backend) reads the stamp ``.hindsight-clean`` right after taking the
  lock, keeps the set of files it vouches for, and removes it before Chroma
  opens: while the store is open, and after a process that crashed, there is no
  stamp;
* a clean close writes it again (after Chroma's client is closed, since the
  client touches ``chroma.sqlite3`` even in a read-only session): the size and
  modification time of ``chroma.sqlite3`` and of each derived file the session
  inherited as trusted or wrote itself. A file that was neither (left by a
  crashed process, or copied in) is not vouched for;
* a session that wrote anything removes the summary first, unless its owner
  (the store) rewrote it after the session's last write and says so
  (``close(summary_current=True)``; see ``_summary`` for what it refreshes and
  what it drops); the snapshots' owners drop or rewrite them when the data they
  derive from changes;
* a reader that only wants derived files (:func:`trusted_store`) takes the same
  lock, validates the stamp and leaves it in place.

A stamp is valid only if every file it lists still has the recorded size and
modification time; otherwise nothing in it is trusted.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_hindsight.errors import StoreLockedError

if TYPE_CHECKING:
    from filelock import BaseFileLock

__all__ = [
    "DATA_FILE",
    "DERIVED",
    "LOCK_FILE",
    "STAMP_FILE",
    "SUMMARY_FILE",
    "CleanClose",
    "FileState",
    "acquire_directory",
    "file_states",
    "holds_store",
    "read_stamp",
    "remove_stamp",
    "replace_file",
    "trusted_store",
    "write_stamp",
]

logger = logging.getLogger(__name__)

LOCK_FILE = ".hindsight.lock"
"""The directory's single-writer lock (``filelock``)."""
STAMP_FILE = ".hindsight-clean"
"""The clean-close stamp: present only while no process has the store open, after a clean close."""
STAMP_FORMAT = 1
DATA_FILE = "chroma.sqlite3"
"""Chroma's database: every record's document and metadata, and the write log of the vectors."""
SUMMARY_FILE = "summary.json"
"""What ``hindsight stats`` prints, per namespace (see ``_summary``); a writing session rewrites or removes it."""
DERIVED = ("lexical", "mirror", SUMMARY_FILE)
"""The derived data of a store directory (folders: every regular file under them), listed in the stamp."""

FileState = tuple[int, int]
"""A file's ``(size, mtime_ns)``."""


def holds_store(directory: str | os.PathLike[str]) -> bool:
    """Whether ``directory`` holds an embedded store (Chroma's database is there from the store's creation on).

    Read-only: a command that must not create a store asks this before it locks or opens anything.
    """
    return (Path(directory) / DATA_FILE).is_file()


def acquire_directory(path: Path) -> BaseFileLock:
    """Create ``path`` and take its single-writer lock (never waits).

    Raises:
        StoreLockedError: another process or store object holds it.
    """
    from filelock import FileLock, Timeout

    path.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path / LOCK_FILE), timeout=0, is_singleton=False)
    try:
        lock.acquire()
    except Timeout as e:
        raise StoreLockedError(
            f"the memory store at {path} is already open in another process or MemoryStore object. "
            "An embedded Chroma directory supports one writer: two processes silently lose vectors. "
            f"For several processes, run a Chroma server (`chroma run --path {path} --port 8000`) and "
            "pass client=chromadb.HttpClient(port=8000) to every MemoryStore."
        ) from e
    return lock


def _state(path: Path) -> FileState | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def file_states(directory: Path) -> dict[str, FileState]:
    """``(size, mtime_ns)`` of ``chroma.sqlite3`` and of every derived file now in ``directory``, by relative path."""
    found: dict[str, FileState] = {}
    for name in (DATA_FILE, *DERIVED):
        root = directory / name
        if root.is_dir():
            paths = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
        else:
            paths = [root] if root.is_file() and not root.is_symlink() else []
        for path in paths:
            state = _state(path)
            if state is not None:
                found[path.relative_to(directory).as_posix()] = state
    return found


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # not supported here (e.g. Windows): the rename is as durable as the platform makes it
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically and durably (a temporary file, fsync, ``os.replace``)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_directory(path.parent)


def read_stamp(directory: Path) -> frozenset[str]:
    """The files the stamp vouches for, if it is valid (each still has its recorded size and mtime); else empty."""
    try:
        data = json.loads((directory / STAMP_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return frozenset()
    except (OSError, ValueError):
        logger.debug("unreadable clean-close stamp in %s: ignored", directory)
        return frozenset()
    files = data.get("files") if isinstance(data, dict) and data.get("format") == STAMP_FORMAT else None
    if not isinstance(files, dict) or DATA_FILE not in files:
        return frozenset()
    for rel, recorded in files.items():
        if not _listable(rel) or _state(directory / rel) != _as_state(recorded):
            logger.debug("clean-close stamp in %s does not match %s: nothing trusted", directory, rel)
            return frozenset()
    return frozenset(files)


def _as_state(value: object) -> FileState | None:
    if isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value):
        return value[0], value[1]
    return None


def _listable(rel: object) -> bool:
    """``rel`` names the data file or a file under a derived path (never outside the directory)."""
    if not isinstance(rel, str) or rel.startswith("/") or ".." in rel.split("/"):
        return False
    return rel == DATA_FILE or rel.split("/", 1)[0] in DERIVED


def write_stamp(directory: Path, files: Mapping[str, FileState]) -> None:
    """Write the stamp for ``files`` (relative paths to their ``(size, mtime_ns)``), atomically."""
    payload = {"format": STAMP_FORMAT, "files": {rel: list(state) for rel, state in sorted(files.items())}}
    replace_file(directory / STAMP_FILE, json.dumps(payload, ensure_ascii=False).encode("utf-8"))


def remove_stamp(directory: Path) -> None:
    """Remove the stamp (absent is fine), durably: nothing the session writes afterwards can be vouched for."""
    try:
        (directory / STAMP_FILE).unlink()
    except FileNotFoundError:
        return
    _fsync_directory(directory)


class CleanClose:
    """The stamp's life in one session of an embedded store: read and removed at open, written at close.

    Construct it right after the directory lock is taken and before the database
    opens; call :meth:`close` after the database is closed and before the lock is
    released.

    Args:
        directory: The store directory (its lock held by the caller).
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.trusted = read_stamp(directory)
        """Relative paths of the files the previous session's clean close vouched for (empty: none)."""
        self._at_open = file_states(directory)
        remove_stamp(directory)

    def close(self, *, wrote: bool, summary_current: bool = False, vouch_derived: bool = True) -> None:
        """Write the stamp; ``wrote``: the session changed the data, so the summary is removed first.

        The stamp lists ``chroma.sqlite3`` and each derived file that was trusted at
        open or changed during the session (so written by it: the lock excluded
        every other process).

        Args:
            wrote: The session changed the data.
            summary_current: The summary was rewritten after the session's last write and
                matches the data (the store's word): kept even though the session wrote.
            vouch_derived: ``False`` when the session cannot account for its writes (the raw
                client was handed out): the stamp then vouches for ``chroma.sqlite3`` only, so
                every derived file is rebuilt or recounted before it is used again.

        Raises:
            OSError: the summary could not be removed or the stamp written.
        """
        if wrote and not (summary_current and vouch_derived):
            (self.directory / SUMMARY_FILE).unlink(missing_ok=True)
        now = file_states(self.directory)
        if DATA_FILE not in now:  # no database (nothing was ever written): nothing to vouch for
            return
        keep = {
            rel: state
            for rel, state in now.items()
            if rel == DATA_FILE or (vouch_derived and (rel in self.trusted or self._at_open.get(rel) != state))
        }
        write_stamp(self.directory, keep)


@contextmanager
def trusted_store(directory: str | os.PathLike[str]) -> Iterator[frozenset[str]]:
    """Hold ``directory``'s lock and yield the relative paths its stamp vouches for (empty: none); the stamp stays.

    For a process that only reads derived files (``hindsight stats``): while the
    lock is held no other process can open the store, so a file the stamp vouches
    for stays as it was. A directory that does not exist yields an empty set and
    is not created.

    Raises:
        StoreLockedError: the store is open in another process (the same error as opening it).
    """
    path = Path(directory).expanduser().resolve()
    if not path.is_dir():
        yield frozenset()
        return
    lock = acquire_directory(path)
    try:
        yield read_stamp(path)
    finally:
        lock.release()
