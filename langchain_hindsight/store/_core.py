"""The core of ``MemoryStore``: its shared state, collections and embedder checks, the reader and reads by id."""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_hindsight._checks import check_namespace
from langchain_hindsight.confidence import ConfidencePolicy
from langchain_hindsight.embeddings.identity import EmbedderIdentity, embedder_identity
from langchain_hindsight.errors import (
    AccessDeniedError,
    BackendError,
    ConfigurationError,
    HindsightError,
    InvalidMemoryError,
    MemoryNotFoundError,
    RunNotFoundError,
    StoreClosedError,
    StoreLockedError,
)
from langchain_hindsight.store._codec import unit_from_record
from langchain_hindsight.store._collections import (
    Collection,
    check_embedder,
    open_collection,
    recorded_identity,
    records,
)
from langchain_hindsight.store._naming import ALL_ROLES, ROLES, Role
from langchain_hindsight.store.apply import repair_namespace
from langchain_hindsight.store.backend import Backend
from langchain_hindsight.store.replica import Replica
from langchain_hindsight.store.run_records import RunRecords
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import MemoryUnit
from langchain_hindsight.writes import WriteJudge

__all__ = ["RECHECK_SECONDS", "DatabaseReader", "StoreCore", "backend_errors", "check_ids", "query_index"]

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

RECHECK_SECONDS = 5.0
"""On a backend other processes write, how long a cached vector collection is used before the store checks
that it is still the current one (every write plan checks at once, under the namespace's lock)."""

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

    File-system and SQLite errors outside the backend (snapshots, intent files) count as backend failures too;
    programming errors keep their type. After any failure that may follow a write, the replica is distrusted.
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
            if isinstance(store, StoreCore) and not isinstance(e, _NOTHING_WRITTEN):
                store.distrust_copies()
            if backend and not getattr(e, "store_method", None):
                error = BackendError(f"MemoryStore.{method.__name__} failed in the storage backend: {e}")
                error.store_method = method.__name__  # type: ignore[attr-defined]
                raise error from e
            raise

    return wrapper


class StoreCore:
    """Shared state and internals of ``MemoryStore``; recall reads through :attr:`reader`, chosen once at open."""

    backend: Backend
    embeddings: Embeddings
    namespace: str
    judge: WriteJudge
    conflict_threshold: float | None
    merge_threshold: float | None
    conflict_scope: Literal["task_type", "namespace"]
    policy: ConfidencePolicy
    vocabulary: TaskTypeVocabulary

    def _init_state(self, backend: Backend) -> None:
        self.backend = backend
        self.persist_directory = None if backend.directory is None else backend.directory.path
        self._embedder_checked: set[str] = set()  # names of collections whose embedder identity matched
        self.lock = threading.RLock()
        """The store's re-entrant lock: hold it (``with store.lock:``) across a read-modify-write of several calls."""
        self._collections: dict[tuple[str, Role], Collection] = {}
        self._checked_at: dict[tuple[str, Role], float] = {}  # when a cached collection was last found current
        self._repaired: set[str] = set()
        self._closed = False
        self.replica = Replica(
            backend, collection=self.collection, checked=self._vectors, identity=lambda: self._identity
        )
        """The store's in-process copy of its data and the owner of its derived files (empty on a database)."""
        self.read_path: Literal["database", "replica"] = "database" if backend.lexical is not None else "replica"
        """Where recall reads, chosen once at open: ``"database"`` (Postgres, no copy in process) or ``"replica"``."""
        self.reader: DatabaseReader | Replica = DatabaseReader(self) if self.read_path == "database" else self.replica
        self.run_records = RunRecords(lambda namespace, create: self.collection(namespace, "journal", create=create))
        """The run records of every namespace (the storage under :class:`~langchain_hindsight.journal.RunJournal`)."""

    def atomic(self, namespace: str, plan: Callable[[], _R]) -> _R:
        """Run a read-modify-write ``plan`` on ``namespace`` as one write plan of the store, under :attr:`lock`.

        On a database it is one transaction under the namespace's lock (:meth:`Backend.atomic`), which may be
        re-run after a serialization failure: the plan re-reads what it decides on. The collections it writes
        are created (committed) before it, so none the store holds can vanish with a rolled-back transaction;
        where other processes write, each is first checked to be the current one, under the namespace's lock.
        """
        namespace = self.namespace_or_default(namespace)

        def current_plan() -> _R:
            for role in ROLES:
                self._recheck(namespace, role)
            return plan()

        with self.lock:
            return self.backend.atomic(namespace, plan if self.backend.single_writer else current_plan)

    def collection(self, namespace: str, role: Role = "memories", *, create: bool = False) -> Collection | None:
        """``namespace``'s collection of ``role``, opened (and repaired) once; ``None``: there is none yet.

        ``create``: make it when missing (the write path, outside a plan's transaction). A cached handle on a
        backend other processes write is checked to be the current collection every :data:`RECHECK_SECONDS`.
        """
        self.ensure_open()
        key = (namespace, role)
        due = time.monotonic() - self._checked_at.get(key, 0.0) > RECHECK_SECONDS
        if due and key in self._collections and not self.backend.single_writer:
            self._recheck(namespace, role)
        cached = self._collections.get(key)
        if cached is not None:
            return cached
        col = open_collection(self.backend, namespace, role, create=create, identity=self._identity)
        if col is None:
            return None
        self._collections[key] = col
        self._checked_at[key] = time.monotonic()
        if role in ROLES and namespace not in self._repaired:  # finish the two-step writes a crash interrupted
            self._repaired.add(namespace)
            if touched := repair_namespace(functools.partial(self.collection, namespace), namespace, self.policy):
                current = self.get_many(touched, namespace=namespace)
                gone = sorted(set(touched) - {u.memory_id for u in current})
                self.replica.reindex(namespace, upserts=current, deletes=gone)
        return col

    def collections_of(self, namespace: str, roles: Sequence[Role] = ROLES) -> Iterator[tuple[Role, Collection]]:
        """``(role, collection)`` for each of ``namespace``'s collections of ``roles`` that exists (never created)."""
        for role in roles:
            if (col := self.collection(namespace, role)) is not None:
                yield role, col

    def memories(self, namespace: str) -> Collection | None:
        """``namespace``'s memories collection (never created); ``EmbedderMismatchError`` if another embedder's."""
        return self._vectors(self.collection(namespace))

    def vector_collection(self, namespace: str, role: Role = "memories") -> Collection:
        """The ``role`` collection of ``namespace`` (created if missing), checked to hold this store's vectors."""
        col = self._vectors(self.collection(namespace, role, create=True))
        assert col is not None  # create=True always returns a collection
        return col

    def ensure_open(self) -> None:
        """Raise :class:`StoreClosedError` once the store is closed."""
        if self._closed:
            raise StoreClosedError("this MemoryStore is closed")

    def namespace_or_default(self, namespace: str | None) -> str:
        """``namespace`` checked (a :class:`ConfigurationError` if invalid), or the store's default when ``None``."""
        return self.namespace if namespace is None else check_namespace(namespace)

    def dropped(self, namespace: str) -> None:
        """``namespace``'s collections were dropped: forget their handles, embedder checks, copies, repair state."""
        for key in [k for k in self._collections if k[0] == namespace]:
            self._embedder_checked.discard(self._collections.pop(key).name)
        self.replica.reset(namespace)
        self._repaired.discard(namespace)

    def reopen_collections(self) -> None:
        """The backend rebuilt, dropped or re-embedded collections: each is reopened, and checked, at its next use."""
        self._collections.clear()
        self._embedder_checked.clear()

    def distrust_copies(self) -> None:
        """After a failure that may have stopped a write half-way: the replica distrusts every namespace opened."""
        self.replica.distrust(ns for ns, _ in self._collections)

    def replaced_elsewhere(self, namespace: str) -> bool:
        """Whether another process dropped or replaced ``namespace``'s memories collection (then reopened by name).

        Asked on the database read path only after an empty answer, the one a dropped collection can give.
        """
        cached = self._collections.get((namespace, "memories"))
        if cached is None:
            return False
        for role in ALL_ROLES:
            self._recheck(namespace, role)
        return self._collections.get((namespace, "memories")) is not cached

    def _recheck(self, namespace: str, role: Role) -> None:
        """Forget the cached ``role`` collection of ``namespace`` if another process dropped or replaced it.

        A ``hindsight reembed`` elsewhere switches in a copy with another embedder's vectors, and a forgotten
        namespace written again gets new collections under the old names: dropping the stale handle and its
        embedder check makes the next use open the current collection and check this store's embedder on it.
        """
        key = (namespace, role)
        cached = self._collections.get(key)
        self._checked_at[key] = time.monotonic()
        if cached is None:
            return
        found = self.backend.get_collection(cached.name)
        same_embedder = found is not None and recorded_identity(found) == recorded_identity(cached)
        if found is not None and same_embedder and found.instance == cached.instance:
            return
        if found is None:
            how = "dropped"
        elif same_embedder:
            how = "dropped and created again"
        else:
            how = f"replaced (re-embedded with {recorded_identity(found)})"
        logger.info("the %s collection of namespace %r was %s by another process: reopening", role, namespace, how)
        del self._collections[key]
        self._embedder_checked.discard(cached.name)
        if role in ROLES:  # what the replica holds of the namespace describes the old collection
            self.replica.reset(namespace)
            self._repaired.discard(namespace)

    @property
    def _identity(self) -> EmbedderIdentity:
        return embedder_identity(self.embeddings)

    def _vectors(self, col: Collection | None) -> Collection | None:
        """``col``, once its recorded embedder is this store's (see ``_collections.check_embedder``)."""
        if col is not None and col.name not in self._embedder_checked:
            check_embedder(col, self._identity)
            self._embedder_checked.add(col.name)
        return col

    # ------------------------------------------------------------------ reads by id
    @backend_errors
    def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryUnit:
        """The unit with ``memory_id`` in ``namespace`` (active, superseded or archived).

        Raises:
            MemoryNotFoundError: no such unit in that namespace.
        """
        found = self.get_many([memory_id], namespace=namespace)
        if not found:
            raise MemoryNotFoundError(f"no memory {memory_id!r} in namespace {self.namespace_or_default(namespace)!r}")
        return found[0]

    @backend_errors
    def get_many(self, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
        """The units that exist among ``memory_ids``, in the given order (missing ones skipped)."""
        ids, ns = check_ids(memory_ids), self.namespace_or_default(namespace)
        found: dict[str, MemoryUnit] = {}
        with self.lock:
            for _, col in self.collections_of(ns):
                if missing := [i for i in ids if i not in found]:
                    found.update((u.memory_id, u) for u in records(col, ids=missing))
        return [found[i] for i in ids if i in found]


def query_index(
    store: StoreCore,
    namespace: str,
    vector: Sequence[float],
    n: int,
    include_embeddings: bool,
    where: dict[str, Any] | None = None,
) -> list[tuple[MemoryUnit, float, list[float] | None]]:
    """The ``n`` records of ``namespace`` nearest ``vector`` among those ``where`` selects, from the backend's index."""
    col = store.memories(namespace)
    if col is None:
        return []
    include: list[Any] = ["documents", "metadatas", "distances", *(["embeddings"] if include_embeddings else [])]
    res = col.query(query_embeddings=[list(vector)], n_results=n, where=where, include=include)
    embs = res.get("embeddings") if include_embeddings else None
    hits: list[tuple[MemoryUnit, float, list[float] | None]] = []
    for j, memory_id in enumerate(res["ids"][0]):
        unit = unit_from_record(memory_id, res["documents"][0][j], res["metadatas"][0][j])
        emb = None if embs is None else [float(x) for x in embs[0][j]]
        hits.append((unit, 1.0 - float(res["distances"][0][j]), emb))
    return hits


def nearest_wanted(k: int) -> int:
    """How many nearest records a dense query asks for to serve ``k`` active ones (a few may be inactive)."""
    return k + max(8, k // 2)


def _again_if_empty(
    read: Callable[Concatenate[DatabaseReader, str, _P], _R],
) -> Callable[Concatenate[DatabaseReader, str, _P], _R]:
    """A :class:`DatabaseReader` read that answered nothing, asked again if the collection was replaced elsewhere."""

    @functools.wraps(read)
    def again(reader: DatabaseReader, namespace: str, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        found = read(reader, namespace, *args, **kwargs)
        if found in ([], ({}, {})) and reader.store.replaced_elsewhere(namespace):
            return read(reader, namespace, *args, **kwargs)
        return found

    return again


class DatabaseReader:
    """The read path of a database that answers both arms itself (Postgres): nothing is held in process.

    Each read answers as the ``Replica`` method of the same name; one that answers nothing checks once whether
    another process dropped or replaced the namespace's collection (:meth:`StoreCore.replaced_elsewhere`).
    """

    def __init__(self, store: StoreCore) -> None:
        self.store = store

    def hybrid(
        self, namespace: str, query: str, vector: Sequence[float], k: int, normalize: bool
    ) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]:
        """Both arms in one statement, else (too few of the nearest are active) arm by arm."""
        answered = self._hybrid(namespace, query, vector, k, normalize)
        if answered is not None:
            return answered
        lexical = dict(self.lexical(namespace, query, k, normalize))
        dense = {u.memory_id: (u, sim) for u, sim, _ in self.nearest(namespace, vector, k, False)}
        missing = [i for i in lexical if i not in dense]
        dense.update((u.memory_id, (u, sim)) for u, sim in self.similarities(namespace, vector, missing))
        return dense, lexical

    @_again_if_empty
    def _hybrid(
        self, namespace: str, query: str, vector: Sequence[float], k: int, normalize: bool
    ) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]] | None:
        """``Records.hybrid_query``'s candidates; ``None`` when too few of the nearest records are active."""
        col = self.store.memories(namespace)
        if col is None:
            return {}, {}
        nearest = nearest_wanted(k)
        found = col.hybrid_query(query, vector, k=k, nearest=nearest, normalize=normalize)
        rows = found.records
        active = [(i, d) for i, d in found.nearest if rows[i][1].get("status") == "active"]
        if len(active) < k and len(found.nearest) >= nearest:
            return None
        candidates = {i: (unit_from_record(i, rows[i][0], rows[i][1]), 1.0 - d) for i, d in active[:k]}
        for i, _ in found.lexical:  # lexical matches the dense arm did not return: their similarity
            if i not in candidates and i in rows and rows[i][1].get("status") == "active":
                candidates[i] = (unit_from_record(i, rows[i][0], rows[i][1]), rows[i][2])
        return candidates, dict(found.lexical)

    @_again_if_empty
    def nearest(
        self, namespace: str, vector: Sequence[float], k: int, include_embeddings: bool
    ) -> list[tuple[MemoryUnit, float, list[float] | None]]:
        """The index asked unfiltered for ``k`` plus a margin, inactive records dropped; with the status filter
        only when too few active ones remain.
        """  # noqa: D205
        hits = query_index(self.store, namespace, vector, nearest_wanted(k), include_embeddings)
        active = [h for h in hits if h[0].status == "active"]
        if len(active) >= k or len(hits) < nearest_wanted(k):
            return active[:k]
        return query_index(self.store, namespace, vector, k, include_embeddings, {"status": "active"})

    def similarities(
        self, namespace: str, vector: Sequence[float], memory_ids: Sequence[str]
    ) -> list[tuple[MemoryUnit, float]]:
        """One read of the records and their vectors, one matrix-vector product."""
        col = self.store.memories(namespace)
        if col is None or not memory_ids:
            return []
        rows = col.get(ids=list(memory_ids), include=["documents", "metadatas", "embeddings"])
        embeddings = rows.get("embeddings")
        if embeddings is None or not len(rows["ids"]):
            return []
        sims = np.asarray(embeddings, dtype=np.float64) @ np.asarray(vector, dtype=np.float64)
        found: dict[str, tuple[MemoryUnit, float]] = {}
        for j, memory_id in enumerate(rows["ids"]):
            metadata = rows["metadatas"][j] or {}
            if metadata.get("status") == "active":
                found[memory_id] = (unit_from_record(memory_id, rows["documents"][j], metadata), float(sims[j]))
        return [found[i] for i in memory_ids if i in found]

    @_again_if_empty
    def lexical(self, namespace: str, query: str, k: int, normalize: bool) -> list[tuple[str, float]]:
        """Scored by the database."""
        col = self.store.collection(namespace)
        return col.lexical_search(query, k, normalize=normalize) if col is not None else []
