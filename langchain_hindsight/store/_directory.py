"""The store directory: its lock, its clean-close stamp and its intent files (standard library and ``filelock`` only).

The only module that names the lock, the stamp and the intent files (:class:`Intent`: a killed process's forget,
scrub or import is finished on reopen); :func:`replace_file` is the store's one atomic, durable file write. The
stamp is the one rule that trusts a derived file: :class:`HeldDirectory` keeps it for a store's session,
:func:`trusted_store` for a process that only reads derived files.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_hindsight.errors import StoreError, StoreLockedError

if TYPE_CHECKING:
    from filelock import BaseFileLock

__all__ = [
    "DATA_FILE",
    "DERIVED",
    "LEGACY_DERIVED",
    "LOCK_FILE",
    "STAMP_FILE",
    "HeldDirectory",
    "Intent",
    "erase_file",
    "file_states",
    "fsync_directory",
    "holds_store",
    "read_stamp",
    "replace_file",
    "trusted_store",
    "zero_tail",
]

logger = logging.getLogger(__name__)

LOCK_FILE = ".hindsight.lock"
"""The directory's single-writer lock (``filelock``)."""
STAMP_FILE = ".hindsight-clean"
"""The clean-close stamp: present only while no process has the store open, after a clean close."""
STAMP_FORMAT = 2
"""2: each derived file's entry also holds the SHA-256 of its bytes (a format-1 stamp trusts nothing)."""
DATA_FILE = "chroma.sqlite3"
"""Chroma's database: every record's document and metadata, and the write log of the vectors."""
DERIVED = ("lexical", "mirror", "counts")
"""The derived data of a store directory (folders: every regular file under them), listed in the stamp."""
LEGACY_DERIVED = ("summary.json",)
"""Derived files of an older format (the statistics before per-namespace counts): never read, erased."""

FileState = tuple[int, int]
"""A file's ``(size, mtime_ns)``."""


def holds_store(directory: str | os.PathLike[str]) -> bool:
    """Whether ``directory`` holds an embedded store (Chroma's database is there from its creation on); read-only."""
    return (Path(directory) / DATA_FILE).is_file()


def _acquire_lock(path: Path) -> BaseFileLock:
    """Create ``path`` and take its single-writer lock (never waits; else :class:`StoreLockedError`)."""
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
        for path in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if path.is_file() and not path.is_symlink() and (state := _state(path)) is not None:
                found[path.relative_to(directory).as_posix()] = state
    return found


def fsync_directory(directory: Path) -> None:
    """Make a rename or a removal in ``directory`` durable (where the platform allows it)."""
    with contextlib.suppress(OSError):  # not supported everywhere (Windows): as durable as the platform makes it
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
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
    fsync_directory(path.parent)


def erase_file(path: Path) -> None:
    """Zero-fill, fsync and remove ``path`` and any half-written copy of it (absent is fine).

    Raises:
        StoreError: a file exists and could not be erased (it may hold the text of a memory being forgotten).
    """
    for target in (path, path.with_name(path.name + ".tmp")):
        try:
            zero_tail(target, 0)
            target.unlink()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise StoreError(f"could not erase {target}: {e}") from e


def zero_tail(path: Path, keep: int) -> None:
    """Overwrite ``path`` with zeros from byte ``keep`` to its end, synced."""
    size = path.stat().st_size
    if size <= keep:
        return
    with path.open("r+b") as fh:
        fh.seek(keep)
        for start in range(keep, size, 1 << 20):
            fh.write(b"\0" * min(size - start, 1 << 20))
        fh.flush()
        os.fsync(fh.fileno())


def read_stamp(directory: Path) -> frozenset[str]:
    """The files the stamp vouches for, if it is valid (each still has its recorded size and mtime); else empty."""
    return frozenset(_vouched(directory))


def _vouched(directory: Path) -> dict[str, str | None]:
    """:func:`read_stamp`'s files, each with the SHA-256 its bytes were just found to have (the data file: ``None``)."""
    try:
        data = json.loads((directory / STAMP_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        logger.debug("unreadable clean-close stamp in %s: ignored", directory)
        return {}
    files = data.get("files") if isinstance(data, dict) and data.get("format") == STAMP_FORMAT else None
    if not isinstance(files, dict) or DATA_FILE not in files:
        return {}
    vouched: dict[str, str | None] = {}
    for rel, recorded in files.items():  # each [size, mtime_ns] or [size, mtime_ns, sha256]
        parts = rel.split("/")  # the data file or a file under a derived path, never outside the directory
        inside = rel == DATA_FILE or (parts[0] in DERIVED and ".." not in parts)
        listed = isinstance(recorded, list) and len(recorded) in (2, 3) and all(type(v) is int for v in recorded[:2])
        if not (inside and listed) or _state(directory / rel) != tuple(recorded[:2]):
            logger.debug("clean-close stamp in %s does not match %s: nothing trusted", directory, rel)
            return {}
        vouched[rel] = recorded[2] if len(recorded) == 3 and isinstance(recorded[2], str) else None
    for rel, digest in vouched.items():  # sizes and times all match: now the (slower) content of derived files
        if rel != DATA_FILE and _digest(directory / rel) != digest:
            logger.warning(
                "derived file %s in %s does not have the content the last clean close recorded: "
                "nothing in the stamp is trusted, derived files are rebuilt from the store",
                rel,
                directory,
            )
            return {}
    return vouched


def _digest(path: Path) -> str | None:
    """The SHA-256 of ``path``'s bytes (hex), or ``None`` when it cannot be read."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


class HeldDirectory:
    """An embedded store directory (``path``, created if missing) held by this process: its lock and the stamp's life.

    Construct it before the database opens (it takes the lock, keeps the files the stamp vouches for in
    :attr:`trusted` and removes the stamp); call :meth:`close` after the database is closed. The holder (the
    embedded Chroma backend) knows no derived file: it only notes each write it makes (:meth:`wrote`), and derived
    files are vouched for only on their owner's word (:meth:`vouch`) given after the last of them.

    Raises:
        StoreLockedError: another process or store object holds the directory.
        OSError: the stamp could not be removed (the lock is released again).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: BaseFileLock | None = _acquire_lock(path)
        try:
            self._vouched = _vouched(path)
            self.trusted = frozenset(self._vouched)
            """Relative paths of the files the previous session's clean close vouched for (empty: none)."""
            self._at_open = file_states(path)
            (path / STAMP_FILE).unlink(missing_ok=True)  # durably: nothing this session writes is vouched for
            fsync_directory(path)
        except BaseException:
            self.release()
            raise
        self._vouched_as_of: int | None = None
        self.writes = 0
        """How many writes the holder has made (each call of a write method counts, even a failed one)."""
        self.written: set[str] | None = set()
        """Names of the collections written (created, changed, renamed or dropped); ``None`` once a write
        of unknown scope (an erase, a recovery) happened: any collection may differ."""

    def wrote(self, collection: str | None) -> None:
        """The holder is about to write ``collection`` (``None``: any collection may change)."""
        self.writes += 1
        if collection is None:
            self.written = None
        elif self.written is not None:
            self.written.add(collection)

    def vouch(self) -> None:
        """The derived files' owner says they match the data now; the stamp lists them if no write follows."""
        self._vouched_as_of = self.writes

    def close(self, *, clean: bool = True) -> None:
        """Write the stamp (when ``clean``: the database closed without error), then release the lock; idempotent.

        The stamp lists ``chroma.sqlite3`` and, when the owner vouched after the holder's last write, each derived
        file trusted at open or changed during the session (so written by it: the lock excluded every other
        process). A stamp that cannot be written is logged: the next open rebuilds.
        """
        if self._lock is None:
            return
        try:
            if clean:
                self._stamp(vouch_derived=self._vouched_as_of == self.writes)
        except OSError:
            logger.warning("could not write the clean-close stamp in %s", self.path, exc_info=True)
        finally:
            self.release()

    def release(self) -> None:
        """Release the lock without writing a stamp (idempotent)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _stamp(self, *, vouch_derived: bool) -> None:
        """Write the stamp: each listed file's ``[size, mtime_ns]``, and a derived file's SHA-256 after them."""
        now = file_states(self.path)
        if DATA_FILE not in now:  # no database (nothing was ever written): nothing to vouch for
            return
        entries: dict[str, list[int | str]] = {}
        for rel, state in sorted(now.items()):
            if rel == DATA_FILE:
                entries[rel] = list(state)
            elif vouch_derived and (rel in self.trusted or self._at_open.get(rel) != state):
                # as it was at open, a file still has the bytes whose digest the open checked: not hashed again
                digest = self._vouched.get(rel) if state == self._at_open.get(rel) else None
                digest = digest or _digest(self.path / rel)
                if digest is not None:  # else gone or unreadable since it was listed: not vouched for
                    entries[rel] = [*state, digest]
        payload = {"format": STAMP_FORMAT, "files": entries}
        replace_file(self.path / STAMP_FILE, json.dumps(payload, ensure_ascii=False).encode("utf-8"))


@contextlib.contextmanager
def trusted_store(directory: str | os.PathLike[str]) -> Iterator[frozenset[str]]:
    """Hold ``directory``'s lock and yield the relative paths its stamp vouches for (empty: none); the stamp stays.

    For a process that only reads derived files (``hindsight stats``): while it holds the lock no other process
    can change them. A directory that does not exist yields an empty set and is not created; one open in another
    process raises :class:`StoreLockedError`, as opening it would.
    """
    path = Path(directory).expanduser().resolve()
    if not path.is_dir():
        yield frozenset()
        return
    lock = _acquire_lock(path)
    try:
        yield read_stamp(path)
    finally:
        lock.release()


class Intent(enum.StrEnum):
    """An intent file (its name): what a killed process left to finish, written durably before the work's first step.

    Erased (with any copy a kill left half-written) once the work is done; one found at open is finished then.
    """

    FORGET = ".hindsight.forget-pending"
    """JSON list of the forgets in progress (written before the first delete)."""
    SCRUB = ".hindsight.scrub-pending"
    """Empty; present while a scrub runs: a reopen scrubs again."""
    IMPORT = ".hindsight.import-pending.jsonl"
    """The units of an import in progress (one JSON line each): a reopen rolls them forward."""

    def write(self, directory: Path, data: bytes = b"") -> None:
        """Durably note the work in ``directory`` (``data``: what finishing it needs), before its first step."""
        replace_file(directory / self.value, data)

    def read(self, directory: Path) -> bytes | None:
        """The note's bytes, or ``None`` when no such work is unfinished in ``directory``.

        A note is written whole and erased from its first byte on: one starting with a zero byte is one a kill cut
        short while it was being erased, after its work was done.
        """
        try:
            data = (directory / self.value).read_bytes()
        except FileNotFoundError:
            return None
        return None if data.startswith(b"\0") else data

    def pending(self, directory: Path) -> bool:
        """Whether such work in ``directory`` is unfinished."""
        return (directory / self.value).exists()

    def clear(self, directory: Path) -> None:
        """The work is finished (or never began): erase its note (else :class:`StoreError`: an import's holds text)."""
        erase_file(directory / self.value)
        fsync_directory(directory)  # the removal durable too: a crash must not bring the note back
