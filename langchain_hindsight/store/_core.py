"""The core of ``MemoryStore``: state, collections, embedder checks, reads by id, and the derived indexes.

:class:`StoreCore` holds what every part of the store shares: the backend, the
open collections, the lexical indexes and their snapshots, the unit cache, the
lock. The public methods live in mixins by concept (``_store_reads``,
``_store_search``, ``_store_writes``, ``_forget``) combined in
:class:`~langchain_hindsight.store.memory_store.MemoryStore`; every one of them
reaches the data through the backend layer (``backend.Backend``).
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

from langchain_core.embeddings import Embeddings

from langchain_hindsight.embeddings.local import EmbedderIdentity, embedder_identity
from langchain_hindsight.errors import (
    AccessDeniedError,
    BackendError,
    ConfigurationError,
    HindsightError,
    InvalidMemoryError,
    MemoryNotFoundError,
    RunNotFoundError,
    StoreClosedError,
    StoreError,
    StoreLockedError,
)
from langchain_hindsight.store._collections import (
    ROLES,
    Collection,
    Role,
    check_embedder,
    check_namespace,
    collection_name,
    open_change_feed,
    open_collection,
    records,
)
from langchain_hindsight.store._feed import ChangeFeed
from langchain_hindsight.store._lexical import LexicalIndex
from langchain_hindsight.store._mirror import (
    MIRROR_MAX_ROWS,
    Mirror,
    build_mirror,
    load_mirror,
    mirror_path,
    refresh_mirror,
    save_mirror,
)
from langchain_hindsight.store._policy import ConfidencePolicy
from langchain_hindsight.store._repair import repair_namespace
from langchain_hindsight.store._runs import RunRecords
from langchain_hindsight.store._search import (
    UnitCache,
    active_texts,
    drop_snapshot,
    load_snapshot,
    record_text,
    refresh_lexical,
    save_snapshot,
    snapshot_path,
)
from langchain_hindsight.store.backend import Backend
from langchain_hindsight.store.writes import WriteJudge
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import MemoryUnit

__all__ = ["StoreCore", "backend_errors", "check_ids"]

logger = logging.getLogger(__name__)

_NOTHING_WRITTEN = (
    ConfigurationError,
    InvalidMemoryError,
    MemoryNotFoundError,
    RunNotFoundError,
    StoreClosedError,
    StoreLockedError,
    AccessDeniedError,
)
"""Errors a store method raises before it writes anything (bad input, unknown ids, closed store)."""

_SnapshotKind = tuple[str, Mapping[str, Any], Callable[[str], Path | None], set[str], Callable[..., bool]]
"""What close saves of one kind of derived index: name, held indexes, snapshot path, fresh set, saver."""

_P = ParamSpec("_P")
_R = TypeVar("_R")


def check_ids(ids: object) -> list[str]:
    """``ids`` (one id or a sequence of ids) as a list without repeats, else a :class:`ConfigurationError`."""
    if isinstance(ids, str) and ids:
        return [ids]
    if (
        isinstance(ids, str | bytes | bytearray)
        or not isinstance(ids, Sequence)
        or not all(isinstance(i, str) and i for i in ids)
    ):
        raise ConfigurationError("ids must be a memory id or a sequence of non-empty memory id strings")
    return list(dict.fromkeys(ids))


def backend_errors(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """A public store method: a backend failure is raised as :class:`BackendError` naming the method.

    File-system and SQLite errors raised outside the backend (snapshots, intent
    files) count as backend failures too; programming errors keep their type.
    After any failure (a write may have stopped half-way) the store's cached units are dropped.
    """

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except Exception as e:
            store = args[0] if args else None
            backend = isinstance(e, BackendError) or (
                isinstance(e, OSError | sqlite3.Error) and not isinstance(e, HindsightError)
            )
            if isinstance(store, StoreCore):
                store._units.clear()
                if not isinstance(e, _NOTHING_WRITTEN):  # a write may have stopped half-way
                    store._distrust_derived()
            if backend and not getattr(e, "store_method", None):
                error = BackendError(f"MemoryStore.{method.__name__} failed in the storage backend: {e}")
                error.store_method = method.__name__  # type: ignore[attr-defined]
                raise error from e
            raise

    return wrapper


class StoreCore:
    """Shared state and internals of ``MemoryStore`` (see the module docstring)."""

    backend: Backend
    embeddings: Embeddings
    namespace: str
    judge: WriteJudge
    conflict_threshold: float | None
    merge_threshold: float | None
    conflict_scope: Literal["task_type", "namespace"]
    policy: ConfidencePolicy
    vocabulary: TaskTypeVocabulary
    persist_directory: Path | None

    def _init_state(self, backend: Backend) -> None:
        self.backend = backend
        self.persist_directory = backend.persist_directory
        self._embedder_checked: set[str] = set()  # names of collections whose embedder identity matched
        self._lock = threading.RLock()
        self._collections: dict[tuple[str, Role], Collection] = {}
        self._lexical: dict[str, LexicalIndex] = {}
        self._feeds: dict[str, ChangeFeed] = {}  # lexical change feeds on a shared server (see _feed)
        self._snapshot_fresh: set[str] = set()  # namespaces whose index equals its snapshot on disk
        self._snapshot_dropped: set[str] = set()  # namespaces whose snapshot this store already erased
        self._open_counts: dict[str, int] = {}  # record count of a namespace with a snapshot, before any write
        # recently recalled units; only with a single writer, whose writes all pass _reindex (which evicts)
        self._units = UnitCache(4096 if backend.single_writer else 0)
        # recall mirrors of an embedded store's namespaces (see _mirror), and their snapshot state
        self._mirrors: dict[str, Mirror] = {}
        self._mirror_fresh: set[str] = set()  # namespaces whose mirror equals its snapshot on disk
        self._mirror_off: set[str] = set()  # namespaces too large to mirror (checked once a session)
        self.mirror_max_rows = MIRROR_MAX_ROWS
        """Largest namespace (active memories) this store mirrors for recall (0: never; see ``_mirror``)."""
        self._repaired: set[str] = set()
        self._write_failed = False  # a write may have stopped half-way: the close refreshes no summary entry
        self._closed = False
        self.run_records = RunRecords(self._journal_collection)
        """The run records of every namespace (storage of :class:`~langchain_hindsight.store.journal.RunJournal`)."""

    # ------------------------------------------------------------------ public plumbing
    @property
    def lock(self) -> threading.RLock:
        """The store's re-entrant lock: hold it (``with store.lock:``) across a read-modify-write of several calls."""
        return self._lock

    @property
    def client(self) -> Any:
        """The backend's database client (the chromadb client; ``None`` for the in-memory backend)."""
        return self.backend.client

    def resolve_namespace(self, namespace: str | None) -> str:
        """``namespace`` checked, or the store's default namespace when ``None``.

        Raises:
            ConfigurationError: not a valid namespace name.
        """
        return self.namespace if namespace is None else check_namespace(namespace)

    _ns = resolve_namespace

    def _atomic(self, namespace: str, plan: Callable[[], _R]) -> _R:
        """Run a write ``plan`` on ``namespace`` through :meth:`Backend.atomic` (one transaction on a database).

        A database backend may re-run ``plan`` after a serialization failure, so a plan
        re-reads what it decides on; the collections a plan writes are created (committed)
        before it, so none the store holds can vanish with a rolled-back transaction.
        """
        return self.backend.atomic(namespace, plan)

    def _ensure_open(self) -> None:
        if self._closed:
            raise StoreClosedError("this MemoryStore is closed")

    # ------------------------------------------------------------------ collections
    def _collection(self, namespace: str, role: Role = "memories", *, create: bool = True) -> Collection | None:
        self._ensure_open()
        key = (namespace, role)
        cached = self._collections.get(key)
        if cached is not None:
            return cached
        col = open_collection(self.backend, namespace, role, create=create, identity=self._identity)
        if col is None:
            return None
        self._collections[key] = col
        paths = [self._snapshot_path(namespace), self._mirror_path(namespace)] if role == "memories" else []
        if namespace not in self._open_counts and any(p is not None and p.exists() for p in paths):
            self._open_counts[namespace] = col.count()  # what the snapshots are checked against at the first write
        if role in ROLES and namespace not in self._repaired:
            self._repaired.add(namespace)
            self._repair(namespace)
        return col

    def _journal_collection(self, namespace: str, create: bool) -> Collection | None:
        return self._collection(namespace, "journal", create=create)

    @property
    def _identity(self) -> EmbedderIdentity:
        return embedder_identity(self.embeddings)

    def _vectors(self, col: Collection | None) -> Collection | None:
        """``col``, once its recorded embedder is this store's (see ``_collections.check_embedder``)."""
        if col is not None and col.name not in self._embedder_checked:
            check_embedder(col, self._identity)
            self._embedder_checked.add(col.name)
        return col

    def _embed_into(self, col: Collection, texts: list[str]) -> list[list[float]]:
        self._vectors(col)
        return self.embeddings.embed_documents(texts)

    def _repair(self, namespace: str) -> None:
        """Finish two-step writes that a crash interrupted (run once per namespace, idempotent).

        A ``pending`` mark found here means a process died between the steps of a
        supersede or a move; the remaining steps are done now (see the ``_repair``
        module). Only marked records are touched, so a unit restored on purpose
        stays restored.
        """
        touched = repair_namespace(functools.partial(self._collection, namespace, create=False), namespace, self.policy)
        if touched:
            current = self._get_many(touched, namespace)
            gone = sorted(set(touched) - {u.memory_id for u in current})
            self._reindex(namespace, upserts=current, deletes=gone)

    # ------------------------------------------------------------------ reads by id
    def _get_many(self, ids: list[str], ns: str) -> list[MemoryUnit]:
        with self._lock:
            found: dict[str, MemoryUnit] = {}
            for role in ROLES:
                col = self._collection(ns, role, create=False)
                if col is None:
                    continue
                missing = [i for i in ids if i not in found]
                if missing:
                    found.update((u.memory_id, u) for u in records(col, ids=missing))
            return [found[i] for i in ids if i in found]

    @backend_errors
    def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryUnit:
        """The unit with ``memory_id`` in ``namespace`` (active, superseded or archived).

        Raises:
            MemoryNotFoundError: no such unit in that namespace.
        """
        found = self.get_many([memory_id], namespace=namespace)
        if not found:
            raise MemoryNotFoundError(f"no memory {memory_id!r} in namespace {self._ns(namespace)!r}")
        return found[0]

    @backend_errors
    def get_many(self, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
        """The units that exist among ``memory_ids``, in the given order (missing ones skipped)."""
        return self._get_many(check_ids(memory_ids), self._ns(namespace))

    # ------------------------------------------------------------------ lexical index upkeep
    def _snapshot_before_write(self, namespace: str, written: list[str]) -> LexicalIndex | None:
        """At the first write, the snapshot as it was before it (checked against the count at open), or ``None``.

        The write is then applied to it and the result saved at close, so a session
        that only writes still leaves a current snapshot.
        """
        path = self._snapshot_path(namespace)
        count = self._open_counts.get(namespace)
        col = self._collections.get((namespace, "memories"))
        if path is None or count is None or col is None or not self._trusted(path, namespace):
            return None
        index = load_snapshot(path, col, count=count, skip=written)
        if index is not None:
            self._lexical[namespace] = index
        return index

    def _trusted(self, path: Path, namespace: str) -> bool:
        """Whether the snapshot at ``path`` may be loaded: vouched for by the clean-close stamp found at open
        (see ``_stamp``: written by a session that closed cleanly, unchanged since) and not erased since.

        A snapshot the stamp does not vouch for (left by a process that died between a write and erasing
        it, or from before stamps existed) is rebuilt from the data instead, however plausible it looks.
        """  # noqa: D205
        if self.persist_directory is None or namespace in self._snapshot_dropped:
            return False
        return path.relative_to(self.persist_directory).as_posix() in self.backend.trusted_files

    def _mirror_before_write(self, namespace: str, written: list[str]) -> Mirror | None:
        """Like :meth:`_snapshot_before_write`, for the recall mirror."""
        path = self._mirror_path(namespace)
        count = self._open_counts.get(namespace)
        col = self._collections.get((namespace, "memories"))
        if path is None or count is None or col is None or not self._trusted(path, namespace):
            return None
        if namespace in self._mirror_off or self.mirror_max_rows <= 0:
            return None
        mirror = load_mirror(path, col, str(self._identity), count=count, skip=written)
        if mirror is not None:
            self._mirrors[namespace] = mirror
        return mirror

    def _drop_snapshot(self, namespace: str) -> None:
        """Erase ``namespace``'s snapshots once they no longer match the data (first write of this store)."""
        self._snapshot_fresh.discard(namespace)
        self._mirror_fresh.discard(namespace)
        if self.persist_directory is not None and namespace not in self._snapshot_dropped:
            for path in (self._snapshot_path(namespace), self._mirror_path(namespace)):
                if path is not None:
                    drop_snapshot(path)
            self._snapshot_dropped.add(namespace)

    def _distrust_derived(self) -> None:
        """After a failure that may have stopped a write half-way: forget the lexical indexes and recall mirrors
        (rebuilt from the data on use) and erase the snapshots of every namespace this store opened, so none
        outlives data it no longer matches.
        """  # noqa: D205
        self._write_failed = True
        self._lexical.clear()
        self._mirrors.clear()
        self._mirror_fresh.clear()
        for namespace in {ns for ns, _ in self._collections}:
            try:
                self._drop_snapshot(namespace)
            except StoreError:
                logger.warning("could not erase the snapshots of %r", namespace, exc_info=True)

    def _change_feed(self, namespace: str) -> ChangeFeed | None:
        """The namespace's change feed, or ``None`` when this store is the only writer."""
        if self.backend.single_writer:
            return None  # the directory lock (or memory) guarantees no other writer
        if self.backend.answers_lexical:
            return None  # the database answers the lexical arm: there is no in-process index to keep in step
        feed = self._feeds.get(namespace)
        if feed is None:
            feed = self._feeds[namespace] = open_change_feed(self.backend, namespace)
        return feed

    def _snapshot_path(self, namespace: str) -> Path | None:
        """Where an embedded store keeps ``namespace``'s lexical snapshot (``None`` without a directory)."""
        if self.persist_directory is None:
            return None
        return snapshot_path(self.persist_directory, collection_name(namespace, "memories"))

    def _mirror_path(self, namespace: str) -> Path | None:
        """Where an embedded store keeps ``namespace``'s recall mirror snapshot (``None`` without a directory)."""
        if self.persist_directory is None:
            return None
        return mirror_path(self.persist_directory, collection_name(namespace, "memories"))

    def _recall_mirror(self, namespace: str) -> Mirror | None:
        """``namespace``'s recall mirror, current (loaded, or built on first use), or ``None`` when it has none.

        Only an embedded store mirrors (it is the only writer of its directory), and only namespaces of at
        most :attr:`mirror_max_rows` records. The embedder check of :meth:`_vectors` runs first, as for any
        search.
        """
        path = self._mirror_path(namespace)
        if path is None or namespace in self._mirror_off or self.mirror_max_rows <= 0:
            return None
        col = self._vectors(self._collection(namespace, create=False))
        if col is None:
            return None
        mirror = self._mirrors.get(namespace)
        identity = str(self._identity)
        if mirror is None and self._trusted(path, namespace):
            mirror = load_mirror(path, col, identity)
            if mirror is not None:
                self._mirror_fresh.add(namespace)
        if mirror is None:
            mirror = build_mirror(col, identity, self._identity.dimension, self.mirror_max_rows)
            if mirror is None:
                self._mirror_off.add(namespace)
                return None
        self._mirrors[namespace] = mirror
        refresh_mirror(mirror, col)
        if len(mirror) > self.mirror_max_rows:  # the namespace grew past the limit: back to Chroma's index
            self._mirrors.pop(namespace)
            self._mirror_fresh.discard(namespace)
            self._mirror_off.add(namespace)
            drop_snapshot(path)
            return None
        return mirror

    def _save_mirror(self, mirror: Mirror, path: Path, col: Collection) -> bool:
        """:func:`save_mirror`, unless writes took the namespace past :attr:`mirror_max_rows` (then erased)."""
        if len(mirror) + len(mirror.stale) > self.mirror_max_rows:
            drop_snapshot(path)
            return False
        return save_mirror(mirror, path, col)

    def _save_snapshots(self) -> None:
        """Save each namespace's lexical index and recall mirror that differ from their snapshots.

        At close; failures are only logged (a snapshot is an optimisation: the next open rebuilds).
        """
        kinds: list[_SnapshotKind] = [
            ("lexical snapshot", self._lexical, self._snapshot_path, self._snapshot_fresh, save_snapshot),
            ("recall mirror", self._mirrors, self._mirror_path, self._mirror_fresh, self._save_mirror),
        ]
        for what, held, path_of, fresh, save in kinds:
            for namespace, derived in held.items():
                path = path_of(namespace)
                if path is None or namespace in fresh:
                    continue
                try:
                    col = self._collection(namespace, create=False)
                except HindsightError:
                    logger.warning("%s of %r not saved", what, namespace, exc_info=True)
                    continue
                if col is not None and save(derived, path, col):
                    fresh.add(namespace)

    def _lexical_index(self, namespace: str) -> LexicalIndex:
        self._ensure_open()
        path = self._snapshot_path(namespace)
        if path is not None and namespace not in self._lexical and self._trusted(path, namespace):
            col = self._collection(namespace, create=False)
            index = load_snapshot(path, col) if col is not None else None
            if index is not None:
                self._lexical[namespace] = index
                self._snapshot_fresh.add(namespace)
                return index
        feed = self._change_feed(namespace)
        mirror = self._mirrors.get(namespace) if feed is None else None

        def scan() -> Any:
            if mirror is not None and not mirror.stale:  # the mirror holds every active record: no second read
                return ((i, record_text(d, m)) for i, d, m in mirror.records())
            return active_texts(self._collection(namespace, create=False))

        index = self._lexical[namespace] = refresh_lexical(
            self._lexical.get(namespace),
            feed,
            namespace,
            fetch=functools.partial(self._get_many, ns=namespace),
            scan=scan,
        )
        return index

    def _reindex(self, namespace: str, upserts: Sequence[MemoryUnit] = (), deletes: Sequence[str] = ()) -> None:
        written = [*(u.memory_id for u in upserts), *deletes]
        index = self._lexical.get(namespace)
        mirror = self._mirrors.get(namespace)
        if mirror is None:
            mirror = self._mirror_before_write(namespace, written)
        if index is None:
            index = self._snapshot_before_write(namespace, written)
        if index is not None:  # not built yet: it will be built from the backend when first searched
            index.delete(deletes)
            index.upsert(upserts)
        if mirror is not None:
            mirror.forget(deletes)
            mirror.apply(upserts)
        self._units.evict(namespace, [*(u.memory_id for u in upserts), *deletes])
        self._drop_snapshot(namespace)
        feed = self._change_feed(namespace)
        if feed is not None:
            try:
                feed.publish([*(u.memory_id for u in upserts), *deletes])
            except StoreError as e:
                raise StoreError(f"could not publish the change to namespace {namespace!r}: {e}") from e
