"""The core of ``MemoryStore``: state, collections, embedder checks, the reader and reads by id.

:class:`StoreCore` holds what every function of the store shares: the backend, the
open collections, the lock, the run records and the :class:`Reader` recall reads through, chosen
once when the store opens (:attr:`StoreCore.read_path`). The public methods are the functions of
their concept's module (``reads``, ``search``, ``_store_writes``, ``forget``, ``transfer``), bound by
:class:`~langchain_hindsight.store.memory_store.MemoryStore`; every one of them reaches the data
through the backend layer (``backend.Backend``). The read modules use only
the public methods of this class (``tests/unit_tests/store/test_private_access.py``).
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, ParamSpec, Protocol, TypeVar

from langchain_core.embeddings import Embeddings

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
from langchain_hindsight.store._collections import (
    Collection,
    check_embedder,
    open_collection,
    recorded_identity,
    records,
)
from langchain_hindsight.store._naming import ALL_ROLES, ROLES, Role, check_namespace
from langchain_hindsight.store._policy import ConfidencePolicy
from langchain_hindsight.store.apply import repair_namespace
from langchain_hindsight.store.backend import Backend
from langchain_hindsight.store.replica import Replica
from langchain_hindsight.store.run_records import RunRecords
from langchain_hindsight.store.writes import WriteJudge
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import MemoryUnit

__all__ = ["RECHECK_SECONDS", "Reader", "StoreCore", "backend_errors", "check_ids"]

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
            if isinstance(store, StoreCore) and not isinstance(e, _NOTHING_WRITTEN):
                store.distrust_copies()  # a write may have stopped half-way
            if backend and not getattr(e, "store_method", None):
                error = BackendError(f"MemoryStore.{method.__name__} failed in the storage backend: {e}")
                error.store_method = method.__name__  # type: ignore[attr-defined]
                raise error from e
            raise

    return wrapper


class Reader(Protocol):
    """Where recall reads, one per store, chosen when it opens: the database itself (``search.DatabaseReader``,
    Postgres) or the in-process replica (``replica.Replica``, every other backend). Called under the store's
    lock with a checked namespace; each answers as the ``MemoryStore`` method of the same purpose.
    """  # noqa: D205

    def hybrid(
        self, namespace: str, query: str, vector: Sequence[float], k: int, normalize: bool
    ) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]:
        """``MemoryStore.hybrid_search``."""
        ...

    def nearest(
        self, namespace: str, vector: Sequence[float], k: int, include_embeddings: bool
    ) -> list[tuple[MemoryUnit, float, list[float] | None]]:
        """``MemoryStore.search_by_vector`` without a filter."""
        ...

    def similarities(
        self, namespace: str, vector: Sequence[float], memory_ids: Sequence[str]
    ) -> list[tuple[MemoryUnit, float]]:
        """``MemoryStore.similarity_by_ids``."""
        ...

    def lexical(self, namespace: str, query: str, k: int, normalize: bool) -> list[tuple[str, float]]:
        """``MemoryStore.lexical_search``."""
        ...


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
    reader: Reader
    """Where recall reads (see :attr:`read_path`), set when the store opens."""

    def _init_state(self, backend: Backend) -> None:
        self.backend = backend
        self.persist_directory = None if backend.directory is None else backend.directory.path
        self._embedder_checked: set[str] = set()  # names of collections whose embedder identity matched
        self._lock = threading.RLock()
        self._collections: dict[tuple[str, Role], Collection] = {}
        self._checked_at: dict[tuple[str, Role], float] = {}  # when a cached collection was last found current
        self.read_path: Literal["database", "replica"] = "database" if backend.lexical is not None else "replica"
        """Where recall reads, chosen once at open: ``"database"`` (a database that answers both arms itself,
        Postgres: one statement per recall, no copy in process) or ``"replica"`` (the in-process lexical index
        and recall mirror, over any other backend)."""
        self._replica = Replica(
            backend,
            collection=self.collection,
            checked=self._vectors,
            identity=lambda: self._identity,
        )
        self._repaired: set[str] = set()
        self._closed = False
        self.run_records = RunRecords(lambda namespace, create: self.collection(namespace, "journal", create=create))
        """The run records of every namespace (the storage under :class:`~langchain_hindsight.journal.RunJournal`)."""

    # ------------------------------------------------------------------ public plumbing
    @property
    def lock(self) -> threading.RLock:
        """The store's re-entrant lock: hold it (``with store.lock:``) across a read-modify-write of several calls."""
        return self._lock

    def atomic(self, namespace: str, plan: Callable[[], _R]) -> _R:
        """Run a read-modify-write ``plan`` on ``namespace`` as one write plan of the store, under :attr:`lock`.

        On a database it is one transaction under the namespace's lock (:meth:`Backend.atomic`), so two
        processes changing one record apply one after the other and neither change is lost; the plan may be
        re-run after a serialization failure, so it re-reads what it decides on (the run journal's updates).
        The collections a plan writes are created (committed) before it, so none the store holds can vanish
        with a rolled-back transaction; on a backend other processes write, each is checked to be the current
        one first, under the namespace's lock (what the plan reads is what it writes into).
        """
        namespace = self.namespace_or_default(namespace)

        def current_plan() -> _R:
            for role in ROLES:
                self._recheck(namespace, role)
            return plan()

        with self._lock:
            return self.backend.atomic(namespace, plan if self.backend.single_writer else current_plan)

    @property
    def replica(self) -> Replica:
        """The store's in-process copy of its data and the owner of its derived files (empty on a database)."""
        return self._replica

    def collection(self, namespace: str, role: Role = "memories", *, create: bool = False) -> Collection | None:
        """``namespace``'s collection of ``role``, opened (and repaired) once; ``None``: there is none yet.

        ``create``: make it when missing (the write path, outside a plan's transaction). A cached handle on a
        backend other processes write is checked to be the current collection every :data:`RECHECK_SECONDS`.
        """
        self.ensure_open()
        key = (namespace, role)
        if (
            not self.backend.single_writer
            and key in self._collections
            and time.monotonic() - self._checked_at.get(key, 0.0) > RECHECK_SECONDS
        ):
            self._recheck(namespace, role)
        cached = self._collections.get(key)
        if cached is not None:
            return cached
        col = open_collection(self.backend, namespace, role, create=create, identity=self._identity)
        if col is None:
            return None
        self._collections[key] = col
        self._checked_at[key] = time.monotonic()
        if role in ROLES and namespace not in self._repaired:
            self._repaired.add(namespace)
            self._repair(namespace)
        return col

    def memories(self, namespace: str) -> Collection | None:
        """``namespace``'s memories collection once its recorded embedder is this store's (never created).

        Raises:
            EmbedderMismatchError: its vectors were written by another embedder.
        """
        return self._vectors(self.collection(namespace))

    def ensure_open(self) -> None:
        """Raise :class:`StoreClosedError` once the store is closed."""
        if self._closed:
            raise StoreClosedError("this MemoryStore is closed")

    def dropped(self, namespace: str) -> None:
        """``namespace``'s collections were dropped: drop their handles, the replica's copies, repair state."""
        for key in [k for k in self._collections if k[0] == namespace]:
            del self._collections[key]
        self._replica.reset(namespace)
        self._repaired.discard(namespace)

    def reopen_collections(self) -> None:
        """The backend rebuilt, dropped or re-embedded collections: every open handle is dropped, each reopened
        (and its embedder checked again) at its next use.
        """  # noqa: D205
        self._collections.clear()
        self._embedder_checked.clear()

    def distrust_copies(self) -> None:
        """After a failure that may have stopped a write half-way: the replica distrusts every namespace opened."""
        self._replica.distrust(ns for ns, _ in self._collections)

    def namespace_or_default(self, namespace: str | None) -> str:
        """``namespace`` checked, or the store's default namespace when ``None``.

        Raises:
            ConfigurationError: not a valid namespace name.
        """
        return self.namespace if namespace is None else check_namespace(namespace)

    def _recheck(self, namespace: str, role: Role) -> None:
        """Forget the cached ``role`` collection of ``namespace`` if another process dropped or replaced it.

        Only a backend other processes write (a database, a server) can change under the store:
        ``hindsight reembed`` run elsewhere switches a collection for a copy with another
        embedder's vectors, and a forgotten namespace written to again gets new collections under
        the old names. The cached object then names a collection that is gone (its
        :attr:`~langchain_hindsight.store.backend.Records.instance` differs from what the name opens
        now), and its embedder check was made against the old vectors; dropping both makes the next
        use open the current collection and check this store's embedder against it again (a write of
        vectors from the old embedder is then refused with :class:`EmbedderMismatchError`).
        """
        key = (namespace, role)
        cached = self._collections.get(key)
        self._checked_at[key] = time.monotonic()
        if cached is None:
            return
        found = self.backend.get_collection(cached.name)
        if (
            found is not None
            and found.instance == cached.instance
            and recorded_identity(found) == recorded_identity(cached)
        ):
            return
        logger.info(
            "the %s collection of namespace %r was %s by another process: reopening",
            role,
            namespace,
            "dropped"
            if found is None
            else "dropped and created again"
            if recorded_identity(found) == recorded_identity(cached)
            else f"replaced (re-embedded with {recorded_identity(found)})",
        )
        del self._collections[key]
        self._embedder_checked.discard(cached.name)
        if role in ROLES:  # what the replica holds of the namespace describes the old collection
            self._replica.reset(namespace)
            self._repaired.discard(namespace)

    def replaced_elsewhere(self, namespace: str) -> bool:
        """After an empty answer on the database read path: whether another process dropped or replaced the
        namespace's memories collection (it forgot the namespace, or switched in a re-embedded copy), which is
        then opened again by name. A dropped collection's records are gone, so any read of it answers nothing:
        checking only then costs a round trip only when there is nothing to recall.
        """  # noqa: D205
        if self.read_path != "database":
            return False
        cached = self._collections.get((namespace, "memories"))
        if cached is None:
            return False
        for role in ALL_ROLES:  # every cached collection of the namespace is checked now
            self._recheck(namespace, role)
        return self._collections.get((namespace, "memories")) is not cached

    # ------------------------------------------------------------------ collections
    @property
    def _identity(self) -> EmbedderIdentity:
        return embedder_identity(self.embeddings)

    def _vectors(self, col: Collection | None) -> Collection | None:
        """``col``, once its recorded embedder is this store's (see ``_collections.check_embedder``)."""
        if col is not None and col.name not in self._embedder_checked:
            check_embedder(col, self._identity)
            self._embedder_checked.add(col.name)
        return col

    def _repair(self, namespace: str) -> None:
        """Finish two-step writes that a crash interrupted (run once per namespace, idempotent).

        A ``pending`` mark found here means a process died between the steps of a
        supersede or a move; the remaining steps are done now (see the ``apply``
        module). Only marked records are touched, so a unit restored on purpose
        stays restored.
        """
        touched = repair_namespace(functools.partial(self.collection, namespace), namespace, self.policy)
        if touched:
            current = self._get_many(touched, namespace)
            gone = sorted(set(touched) - {u.memory_id for u in current})
            self._replica.reindex(namespace, upserts=current, deletes=gone)

    # ------------------------------------------------------------------ for the write path (``_store_writes``)
    def vector_collection(self, namespace: str, role: Role = "memories") -> Collection:
        """The ``role`` collection of ``namespace`` (created if missing), checked to hold this store's vectors."""
        col = self._vectors(self.collection(namespace, role, create=True))
        assert col is not None  # create=True always returns a collection
        return col

    def reindex(self, namespace: str, *, upserts: Sequence[MemoryUnit] = (), deletes: Sequence[str] = ()) -> None:
        """The write path wrote ``upserts`` and deleted ``deletes`` in ``namespace``: the replica follows."""
        self._replica.reindex(namespace, upserts=upserts, deletes=deletes)

    # ------------------------------------------------------------------ reads by id
    def _get_many(self, ids: list[str], ns: str) -> list[MemoryUnit]:
        with self._lock:
            found: dict[str, MemoryUnit] = {}
            for role in ROLES:
                col = self.collection(ns, role)
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
            raise MemoryNotFoundError(f"no memory {memory_id!r} in namespace {self.namespace_or_default(namespace)!r}")
        return found[0]

    @backend_errors
    def get_many(self, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
        """The units that exist among ``memory_ids``, in the given order (missing ones skipped)."""
        return self._get_many(check_ids(memory_ids), self.namespace_or_default(namespace))
