"""``MemoryStore``: the single source of truth for memory units, on Chroma.

Every field of every unit lives in Chroma (see ``_codec``); nothing is kept in
a private dict that a restart would lose. The in-memory lexical index is derived
data, rebuilt from Chroma and updated on every write.

This module is the public surface (argument checks, locking, caches); the
mechanics live in private modules by concept: ``_collections`` (naming, opening,
reading), ``_write`` (prepare, dedupe/merge/supersede planning, provenance),
``_repair`` (two-step writes and crash repair), ``_search`` (lexical index upkeep),
``_forget`` (hard delete and scrub) and ``_policy`` (:class:`ConfidencePolicy`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

from langchain_core.embeddings import Embeddings

from langchain_hindsight._safety import clean_text
from langchain_hindsight.embeddings.local import EmbedderIdentity, embedder_identity
from langchain_hindsight.errors import (
    ConfigurationError,
    HindsightError,
    MemoryNotFoundError,
    StoreClosedError,
    StoreError,
)
from langchain_hindsight.store import _forget, _scrub
from langchain_hindsight.store._collections import (
    ALLOWED,
    ROLES,
    Collection,
    Role,
    acquire_directory,
    check_embedder,
    check_namespace,
    collection_name,
    filter_where,
    open_change_feed,
    open_client,
    open_collection,
    query_hits,
    recorded_embedder,
    records,
)
from langchain_hindsight.store._collections import namespaces as _namespaces
from langchain_hindsight.store._lexical import ChangeFeed, LexicalIndex
from langchain_hindsight.store._policy import (  # noqa: F401 - the first two are re-exported
    DEFAULT_CONFIDENCE_CEILING,
    ConfidencePolicy,
    fresh_ids_for_taken,
)
from langchain_hindsight.store._repair import move_units, repair_namespace
from langchain_hindsight.store._search import (
    UnitCache,
    active_texts,
    cached_candidates,
    cached_hits,
    cached_similarities,
    drop_snapshot,
    load_snapshot,
    refresh_lexical,
    save_snapshot,
    similarities,
    snapshot_path,
)
from langchain_hindsight.store._write import (
    check_source_change,
    check_unit,
    plan_add,
    prepare,
    query_neighbours,
    write_plan,
    write_updates,
)
from langchain_hindsight.store.writes import RuleWriteJudge, WriteJudge, WriteResult
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import MemoryStatus, MemoryUnit, utcnow

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from filelock import BaseFileLock

    from langchain_hindsight.store._reembed import ReembedReport

__all__ = ["ConfidencePolicy", "MemoryStore"]

logger = logging.getLogger(__name__)


def _check_ids(ids: object) -> list[str]:
    if isinstance(ids, str) and ids:
        return [ids]
    if (
        isinstance(ids, str | bytes | bytearray)
        or not isinstance(ids, Sequence)
        or not all(isinstance(i, str) and i for i in ids)
    ):
        raise ConfigurationError("ids must be a memory id or a sequence of non-empty memory id strings")
    return list(dict.fromkeys(ids))


def _forget_cached_units(args: tuple[Any, ...]) -> None:
    """After a failed call (a write may have stopped half-way), drop the store's cached units."""
    store = args[0] if args else None
    if isinstance(store, MemoryStore):
        store._units.clear()


_COUNT_PAGE = 5000
"""Records per Chroma read in :meth:`MemoryStore.count_by`."""

_P = ParamSpec("_P")
_R = TypeVar("_R")


@functools.cache
def _backend_exceptions() -> tuple[type[BaseException], ...]:
    """What Chroma (embedded or over HTTP) raises when storage fails; resolved lazily."""
    import sqlite3

    import httpx
    from chromadb.errors import ChromaError

    return (ChromaError, sqlite3.Error, OSError, httpx.HTTPError)


def _backend_errors(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Re-raise storage-backend failures from a public method as :class:`StoreError` (chained)."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except HindsightError:
            _forget_cached_units(args)
            raise
        except Exception as e:
            _forget_cached_units(args)
            if isinstance(e, _backend_exceptions()):
                raise StoreError(f"MemoryStore.{method.__name__} failed in the storage backend: {e}") from e
            raise

    return wrapper


class MemoryStore:
    """Durable memory units in Chroma, with dedup, conflicts and feedback.

    Setup:
        Embedded (default): one process owns ``persist_directory`` and holds a
        lock on it. Shared: run ``chroma run --path DIR --port 8000`` and pass
        ``client=chromadb.HttpClient(port=8000)`` from any number of processes.

    Instantiate:
        .. code-block:: python

            from langchain_hindsight import MemoryStore, MemoryUnit

            with MemoryStore(persist_directory="./memory_db") as store:
                result = store.add(MemoryUnit(task_type="data_cleaning",
                                              content="Read Chinese CSVs with encoding='utf-8-sig'."))
                store.record_feedback([result.memory_id], success=True)

    Args:
        persist_directory: Directory of the embedded Chroma database. Ignored
            when ``client`` is given.
        client: A chromadb client to use instead (``HttpClient`` for a server,
            ``EphemeralClient`` for throwaway stores). The store does not close it.
        embeddings: Any LangChain ``Embeddings``. Default: the embedder the
            store records if it is one of this package's (an existing MiniLM
            store keeps :class:`LocalEmbeddings`), else
            :class:`~langchain_hindsight.embeddings.multilingual.ScriptRoutedEmbeddings`
            (offline; Chinese, English and across). Must return normalised vectors for the
            thresholds to mean cosine similarity (Chroma uses cosine distance).
            The store records the embedder's identity; using the store's vectors
            with another embedder raises :class:`EmbedderMismatchError` (migrate
            with ``hindsight reembed``). Reading units needs no matching embedder.
        conflict_threshold: Similarity above which an active unit in scope is
            a *candidate* conflict: the nearest such units go to ``judge``, which
            decides add / duplicate / update / conflict. ``None``: no judge is
            asked (only the same statement merges).
        merge_threshold: Similarity at or above which the judge may call a
            differently worded unit a duplicate (merge). ``None``: only the same
            statement merges. The same statement (after normalising case,
            whitespace and punctuation) always merges; different statements
            never merge or supersede on similarity alone.
        judge: Decides what a unit with similar neighbours is (see
            :mod:`langchain_hindsight.store.writes`). Default
            :class:`~langchain_hindsight.store.writes.RuleWriteJudge`: keep both active,
            so recency and the conflict note decide at recall;
            ``LLMWriteJudge(model)`` asks a chat model once per such write.
        conflict_scope: ``"task_type"`` (default) compares a new unit only with
            units of the same task type and kind, so a weekly-report lesson never
            supersedes a monthly-report one; ``"namespace"`` compares with all.
        policy: Confidence policy (feedback deltas, initial confidence by source).
        vocabulary: Task-type vocabulary used to normalise ``task_type`` on write.
        namespace: Default namespace for calls that do not name one.
    """

    def __init__(
        self,
        persist_directory: str | os.PathLike[str] | None = "./memory_db",
        *,
        client: ClientAPI | None = None,
        embeddings: Embeddings | None = None,
        conflict_threshold: float | None = 0.85,
        merge_threshold: float | None = 0.95,
        conflict_scope: Literal["task_type", "namespace"] = "task_type",
        policy: ConfidencePolicy | None = None,
        vocabulary: TaskTypeVocabulary | None = None,
        namespace: str = "default",
        judge: WriteJudge | None = None,
    ) -> None:
        for name, value in (("conflict_threshold", conflict_threshold), ("merge_threshold", merge_threshold)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value <= 1.0
            ):
                raise ConfigurationError(f"{name} must be in (0, 1] or None, got {value!r}")
        if conflict_threshold is not None and merge_threshold is not None and merge_threshold < conflict_threshold:
            raise ConfigurationError("merge_threshold must be >= conflict_threshold")
        if conflict_scope not in ("task_type", "namespace"):
            raise ConfigurationError(f"conflict_scope must be 'task_type' or 'namespace', got {conflict_scope!r}")
        if embeddings is not None and not isinstance(embeddings, Embeddings):
            raise ConfigurationError("embeddings must be a langchain_core.embeddings.Embeddings instance")
        if judge is not None and not isinstance(judge, WriteJudge):
            raise ConfigurationError(
                "judge must have a judge(unit, neighbours) method (see langchain_hindsight.store.writes)"
            )
        self.judge: WriteJudge = judge or RuleWriteJudge()
        self.namespace = MemoryUnit(content="-", namespace=namespace).namespace if namespace else ""
        if not self.namespace:
            raise ConfigurationError("namespace must be a non-empty string")
        self.conflict_threshold = conflict_threshold
        self.merge_threshold = merge_threshold
        self.conflict_scope = conflict_scope
        self.policy = policy or ConfidencePolicy()
        self.vocabulary = vocabulary or TaskTypeVocabulary()
        self._embedder_checked: set[str] = set()  # names of collections whose embedder identity matched
        self._lock = threading.RLock()
        self._collections: dict[tuple[str, Role], Collection] = {}
        self._lexical: dict[str, LexicalIndex] = {}
        self._feeds: dict[str, ChangeFeed] = {}  # lexical change feeds on a shared client (see _lexical)
        self._snapshot_fresh: set[str] = set()  # namespaces whose index equals its snapshot on disk
        self._snapshot_dropped: set[str] = set()  # namespaces whose snapshot this store already erased
        self._open_counts: dict[str, int] = {}  # record count of a namespace with a snapshot, before any write
        # recently recalled units; only for an embedded store, whose writes all pass _reindex (which evicts)
        self._units = UnitCache(4096 if client is None else 0)
        self._file_lock: BaseFileLock | None = None
        self._owns_client = client is None
        self._closed = False
        self.persist_directory: Path | None = None
        if client is None:
            if persist_directory is None:
                raise ConfigurationError("give persist_directory or client")
            self.persist_directory = Path(persist_directory).expanduser().resolve()
            self._acquire_directory(self.persist_directory)
            try:
                client = self._open_client()
            except Exception as e:
                self._release_directory()
                raise StoreError(f"could not open Chroma at {self.persist_directory}: {e}") from e
        self.client: Any = client
        if embeddings is None:  # the built-in embedder the store records; a new store gets the routed default
            from langchain_hindsight.embeddings.multilingual import default_embeddings

            embeddings = default_embeddings(recorded_embedder(client, self.namespace))
        self.embeddings: Embeddings = embeddings
        self._repaired: set[str] = set()
        if self._owns_client:
            try:
                self._finish_interrupted_scrub()
            except BaseException:
                self.close()
                raise

    # ------------------------------------------------------------------ lifecycle
    def _open_client(self) -> Any:
        return open_client(self.persist_directory)

    def _acquire_directory(self, path: Path) -> None:
        self._file_lock = acquire_directory(path)

    def _release_directory(self) -> None:
        if self._file_lock is not None:
            self._file_lock.release()
            self._file_lock = None

    def close(self) -> None:
        """Release the directory lock and the Chroma client (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._save_lexical_snapshots()
            self._closed = True
            self._collections.clear()
            self._lexical.clear()
            self._units.clear()
            if self._owns_client:
                try:
                    self.client.close()
                except Exception:
                    logger.debug("chroma client close failed", exc_info=True)
                if self.persist_directory is not None:
                    try:  # hnswlib writes uninitialised heap bytes into unused slots: zero them
                        _scrub.wipe_unused_index_space(self.persist_directory)
                    except OSError:
                        logger.warning("could not wipe unused index space in %s", self.persist_directory, exc_info=True)
            self._release_directory()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_open(self) -> None:
        if self._closed:
            raise StoreClosedError("this MemoryStore is closed")

    def _ns(self, namespace: str | None) -> str:
        return self.namespace if namespace is None else check_namespace(namespace)

    # ------------------------------------------------------------------ collections
    def _collection(self, namespace: str, role: Role = "memories", *, create: bool = True) -> Collection | None:
        self._ensure_open()
        key = (namespace, role)
        cached = self._collections.get(key)
        if cached is not None:
            return cached
        col = open_collection(self.client, namespace, role, create=create, identity=self._identity)
        if col is None:
            return None
        self._collections[key] = col
        path = self._snapshot_path(namespace) if role == "memories" else None
        if path is not None and namespace not in self._open_counts and path.exists():
            self._open_counts[namespace] = col.count()  # what the snapshot is checked against at the first write
        if role in ROLES and namespace not in self._repaired:
            self._repaired.add(namespace)
            self._repair(namespace)
        return col

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

    @_backend_errors
    def namespaces(self) -> list[str]:
        """Every namespace that has a collection, sorted."""
        with self._lock:
            self._ensure_open()
            return _namespaces(self.client)

    def _repair(self, namespace: str) -> None:
        """Finish two-step writes that a crash interrupted (run once per namespace, idempotent).

        A ``pending`` mark found here means a process died between the steps of a
        supersede or a move; the remaining steps are done now (see the ``_repair``
        module). Only marked records are touched, so a unit restored on purpose
        stays restored.
        """
        touched = repair_namespace(functools.partial(self._collection, namespace, create=False), namespace, self.policy)
        if touched:
            current = self.get_many(touched, namespace=namespace)
            gone = sorted(set(touched) - {u.memory_id for u in current})
            self._reindex(namespace, upserts=current, deletes=gone)

    # ------------------------------------------------------------------ reads
    @_backend_errors
    def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryUnit:
        """The unit with ``memory_id`` in ``namespace`` (active, superseded or archived).

        Raises:
            MemoryNotFoundError: no such unit in that namespace.
        """
        found = self.get_many([memory_id], namespace=namespace)
        if not found:
            raise MemoryNotFoundError(f"no memory {memory_id!r} in namespace {self._ns(namespace)!r}")
        return found[0]

    @_backend_errors
    def get_many(self, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
        """The units that exist among ``memory_ids``, in the given order (missing ones skipped)."""
        ids = _check_ids(memory_ids)
        ns = self._ns(namespace)
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

    @_backend_errors
    def list_units(
        self,
        *,
        namespace: str | None = None,
        status: MemoryStatus | None = None,
        task_type: str | None = None,
        kind: str | None = None,
        source: str | None = None,
        limit: int | None = None,
    ) -> list[MemoryUnit]:
        """Units matching every given filter, newest first. ``status=None`` means all statuses."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ConfigurationError(f"limit must be a non-negative int or None, got {limit!r}")
        units = list(self.iter_units(namespace=namespace, status=status, task_type=task_type, kind=kind, source=source))
        units.sort(key=lambda u: (u.created_at, u.memory_id), reverse=True)
        return units if limit is None else units[:limit]

    def iter_units(
        self,
        *,
        namespace: str | None = None,
        status: MemoryStatus | None = None,
        task_type: str | None = None,
        kind: str | None = None,
        source: str | None = None,
        batch_size: int = 1000,
    ) -> Iterator[MemoryUnit]:
        """Iterate over matching units in pages of ``batch_size`` (unordered)."""
        ns = self._ns(namespace)
        filters: dict[str, object] = {"status": status, "task_type": task_type, "kind": kind, "source": source}
        where = filter_where(filters, self.vocabulary.normalize)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigurationError(f"batch_size must be a positive int, got {batch_size!r}")
        roles: tuple[Role, ...] = ("archive",) if status == "archived" else ("memories",) if status else ROLES
        for role in roles:
            offset = 0
            while True:
                with self._lock:
                    col = self._collection(ns, role, create=False)
                    if col is None:
                        break
                    page = records(col, where=where, limit=batch_size, offset=offset)
                yield from page
                if len(page) < batch_size:
                    break
                offset += batch_size

    @_backend_errors
    def count_by(self, *fields: str, namespace: str | None = None) -> dict[tuple[str, ...], int]:
        """How many units (every status) have each combination of values of ``fields``.

        Reads metadata only (no unit is built), so it stays fast on large stores.

        Example:
            >>> store.count_by("status", "task_type")  # doctest: +SKIP
            {('active', 'weekly_report'): 12, ('superseded', 'weekly_report'): 2}

        Args:
            fields: Among ``status``, ``task_type``, ``kind``, ``source``, ``run_id``.
            namespace: Namespace to count (default: the store's).
        """
        allowed = ("status", "task_type", "kind", "source", "run_id")
        if not fields or any(f not in allowed for f in fields):
            raise ConfigurationError(f"fields must be among {allowed}, got {fields!r}")
        ns = self._ns(namespace)
        counts: dict[tuple[str, ...], int] = {}
        for role in ROLES:
            offset = 0
            while True:
                with self._lock:
                    col = self._collection(ns, role, create=False)
                    if col is None:
                        break
                    page = col.get(include=["metadatas"], limit=_COUNT_PAGE, offset=offset)["metadatas"] or []
                for meta in page:
                    key = tuple(str((meta or {}).get(f, "")) for f in fields)
                    counts[key] = counts.get(key, 0) + 1
                if len(page) < _COUNT_PAGE:
                    break
                offset += _COUNT_PAGE
        return counts

    @_backend_errors
    def count(self, *, namespace: str | None = None, status: MemoryStatus | None = None) -> int:
        """Number of units in ``namespace`` (all statuses unless ``status`` is given)."""
        if status is not None and status not in ALLOWED["status"]:
            raise ConfigurationError(f"status must be one of {ALLOWED['status']} or None, got {status!r}")
        ns = self._ns(namespace)
        with self._lock:
            total = 0
            for role in ROLES:
                col = self._collection(ns, role, create=False)
                if col is None:
                    continue
                if status is None:
                    total += col.count()
                elif (status == "archived") == (role == "archive"):
                    total += len(col.get(where={"status": status}, include=[])["ids"])
            return total

    @_backend_errors
    def history(self, memory_id: str, *, namespace: str | None = None) -> list[MemoryUnit]:
        """The supersedes chain through ``memory_id``, newest first.

        Starts at the newest unit that (transitively) supersedes ``memory_id`` and
        follows ``supersedes`` back to the oldest ancestor.

        Raises:
            MemoryNotFoundError: ``memory_id`` does not exist.
        """
        ns = self._ns(namespace)
        with self._lock:
            head = self.get(memory_id, namespace=ns)
            seen = {head.memory_id}
            col = self._collection(ns)
            assert col is not None
            while True:  # walk forward to the newest successor
                nxt = records(col, where={"supersedes": head.memory_id}, limit=1)
                if not nxt or nxt[0].memory_id in seen:
                    break
                head = nxt[0]
                seen.add(head.memory_id)
            chain = [head]
            while chain[-1].supersedes and chain[-1].supersedes not in {u.memory_id for u in chain}:
                older = self.get_many([chain[-1].supersedes], namespace=ns)
                if not older:
                    break
                chain.append(older[0])
            return chain

    # ------------------------------------------------------------------ search (dense + lexical arms)
    @_backend_errors
    def search(
        self,
        query: str,
        *,
        k: int = 10,
        namespace: str | None = None,
        include_embeddings: bool = False,
    ) -> list[tuple[MemoryUnit, float, list[float] | None]]:
        """Dense nearest neighbours among *active* units: ``(unit, cosine_similarity, embedding)``."""
        if not isinstance(query, str):
            raise ConfigurationError(f"query must be a string, got {type(query).__name__}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigurationError(f"k must be a positive int, got {k!r}")
        vector = self.embeddings.embed_query(clean_text(query))
        return self.search_by_vector(vector, k=k, namespace=namespace, include_embeddings=include_embeddings)

    @_backend_errors
    def search_by_vector(
        self,
        vector: Sequence[float],
        *,
        k: int = 10,
        namespace: str | None = None,
        include_embeddings: bool = False,
        where: dict[str, Any] | None = None,
    ) -> list[tuple[MemoryUnit, float, list[float] | None]]:
        """Like :meth:`search` with a precomputed query vector.

        Without ``where``, Chroma is queried *unfiltered* for ``k`` plus a margin
        and inactive units are dropped: a ``where`` filter makes Chroma scan
        instead of using its index (~40x slower at 100k). Only when too few active
        units remain does it repeat the query with the status filter.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigurationError(f"k must be a positive int, got {k!r}")
        ns = self._ns(namespace)
        include: list[Any] = ["documents", "metadatas", "distances"]
        if include_embeddings:
            include.append("embeddings")
        with self._lock:
            col = self._vectors(self._collection(ns, create=False))
            if col is None:
                return []
            try:
                if where is None and self._units.size and not include_embeddings:  # units from the cache
                    res = col.query(
                        query_embeddings=[list(vector)], n_results=k + max(8, k // 2), include=["distances"]
                    )
                    hits: list[tuple[MemoryUnit, float, list[float] | None]] = list(
                        cached_hits(self._units, ns, col, res)
                    )
                    active = [h for h in hits if h[0].status == "active"]
                    if len(active) >= k or len(hits) < k + max(8, k // 2):
                        return active[:k]
                elif where is None:
                    res = col.query(query_embeddings=[list(vector)], n_results=k + max(8, k // 2), include=include)
                    hits = query_hits(res, include_embeddings)
                    active = [h for h in hits if h[0].status == "active"]
                    if len(active) >= k or len(hits) < k + max(8, k // 2):
                        return active[:k]
                clause: dict[str, Any] = {"status": "active"}
                if where is not None:
                    clause = {"$and": [clause, where]}
                res = col.query(query_embeddings=[list(vector)], n_results=k, where=clause, include=include)
            except HindsightError:
                raise
            except Exception as e:
                raise StoreError(f"chroma query failed: {e}") from e
        return query_hits(res, include_embeddings)

    @_backend_errors
    def similarity_by_ids(
        self, vector: Sequence[float], memory_ids: Sequence[str], *, namespace: str | None = None
    ) -> list[tuple[MemoryUnit, float]]:
        """The *active* units among ``memory_ids`` with their cosine similarity to ``vector``.

        Used by hybrid recall for candidates found only by the lexical arm, so
        every candidate is scored on the same dense similarity. Order follows
        ``memory_ids``; missing or inactive ids are skipped.
        """
        ids = _check_ids(memory_ids) if memory_ids else []
        if not ids:
            return []
        ns = self._ns(namespace)
        with self._lock:
            col = self._vectors(self._collection(ns, create=False))
            if col is None:
                return []
            try:
                if self._units.size:
                    return cached_similarities(self._units, ns, col, vector, ids)
                rows = col.get(ids=ids, include=["documents", "metadatas", "embeddings"])
            except HindsightError:
                raise
            except Exception as e:
                raise StoreError(f"chroma get failed: {e}") from e
        return similarities(rows, vector, ids)

    @_backend_errors
    def hybrid_search(
        self,
        query: str,
        vector: Sequence[float],
        *,
        k: int = 10,
        namespace: str | None = None,
        normalize: bool = False,
    ) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]:
        """Both arms of hybrid recall at once: the dense and lexical candidates, each with its cosine similarity.

        Equivalent to :meth:`search_by_vector` (``k``), :meth:`lexical_search`
        (``k``) and :meth:`similarity_by_ids` for the lexical matches the dense
        arm did not return, in fewer round trips: an embedded store asks Chroma
        one query for ids and distances, and reads only the units and vectors it
        has not cached, in one ``get``.

        Args:
            query: The query text (lexical arm).
            vector: Its embedding (dense arm).
            k: Depth of each arm.
            namespace: Namespace to search (default: the store's).
            normalize: Lexical scores as a share of the query's idf mass (see :meth:`lexical_search`).

        Returns:
            ``(candidates, lexical)``: every candidate's ``(unit, cosine_similarity)``
            by id, and the lexical arm's BM25 score by id.
        """
        lexical = dict(self.lexical_search(query, k=k, namespace=namespace, normalize=normalize))
        ns = self._ns(namespace)
        with self._lock:
            col = self._collection(ns, create=False)
            if self._units.size and col is not None:
                n = k + max(8, k // 2)
                try:
                    res = col.query(query_embeddings=[list(vector)], n_results=n, include=["distances"])
                except Exception as e:
                    raise StoreError(f"chroma query failed: {e}") from e
                found, enough = cached_candidates(self._units, ns, col, res, vector, k, list(lexical))
                if enough:
                    return found, lexical
        dense = {u.memory_id: (u, sim) for u, sim, _ in self.search_by_vector(vector, k=k, namespace=ns)}
        missing = [i for i in lexical if i not in dense]
        if missing:
            dense.update((u.memory_id, (u, sim)) for u, sim in self.similarity_by_ids(vector, missing, namespace=ns))
        return dense, lexical

    @_backend_errors
    def lexical_search(
        self, query: str, *, k: int = 10, namespace: str | None = None, normalize: bool = False
    ) -> list[tuple[str, float]]:
        """BM25 matches among active units: ``(memory_id, score)``, best first.

        ``normalize=True`` scales scores to [0, 1] by the query's idf mass (see
        :meth:`LexicalIndex.search <langchain_hindsight.store._lexical.LexicalIndex.search>`).

        The index is built from Chroma on first use and kept in step with this
        store's writes; with a shared client (``HttpClient``), other stores'
        writes are picked up through the namespace's change feed on every call.
        """
        if not isinstance(query, str):
            raise ConfigurationError(f"query must be a string, got {type(query).__name__}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigurationError(f"k must be a positive int, got {k!r}")
        ns = self._ns(namespace)
        with self._lock:
            return self._lexical_index(ns).search(query, k, normalize=normalize)

    def _snapshot_before_write(self, namespace: str, written: list[str]) -> LexicalIndex | None:
        """At the first write, the snapshot as it was before it (checked against the count at open), or ``None``.

        The write is then applied to it and the result saved at close, so a session
        that only writes still leaves a current snapshot.
        """
        path = self._snapshot_path(namespace)
        count = self._open_counts.get(namespace)
        col = self._collections.get((namespace, "memories"))
        if path is None or count is None or col is None or namespace in self._snapshot_dropped:
            return None
        index = load_snapshot(path, col, count=count, skip=written)
        if index is not None:
            self._lexical[namespace] = index
        return index

    def _drop_snapshot(self, namespace: str) -> None:
        """Erase ``namespace``'s snapshot once it no longer matches Chroma (first write of this store)."""
        self._snapshot_fresh.discard(namespace)
        path = self._snapshot_path(namespace)
        if path is not None and namespace not in self._snapshot_dropped:
            drop_snapshot(path)
            self._snapshot_dropped.add(namespace)

    def _change_feed(self, namespace: str) -> ChangeFeed | None:
        """The namespace's change feed, or ``None`` when this store is the only writer (embedded)."""
        if self._owns_client:
            return None  # the directory lock guarantees no other writer
        feed = self._feeds.get(namespace)
        if feed is None:
            feed = self._feeds[namespace] = open_change_feed(self.client, namespace)
        return feed

    def _snapshot_path(self, namespace: str) -> Path | None:
        """Where an embedded store keeps ``namespace``'s lexical snapshot (``None`` on a shared client)."""
        if not self._owns_client or self.persist_directory is None:
            return None
        return snapshot_path(self.persist_directory, collection_name(namespace, "memories"))

    def _save_lexical_snapshots(self) -> None:
        """Save each namespace's index that differs from its snapshot (at close; failures only logged)."""
        for namespace, index in self._lexical.items():
            path = self._snapshot_path(namespace)
            if path is None or namespace in self._snapshot_fresh:
                continue
            try:
                col = self._collection(namespace, create=False)
            except HindsightError:
                logger.warning("lexical snapshot of %r not saved", namespace, exc_info=True)
                continue
            if col is not None and save_snapshot(index, path, col):
                self._snapshot_fresh.add(namespace)

    def _lexical_index(self, namespace: str) -> LexicalIndex:
        self._ensure_open()
        path = self._snapshot_path(namespace)
        if path is not None and namespace not in self._lexical and namespace not in self._snapshot_dropped:
            col = self._collection(namespace, create=False)
            index = load_snapshot(path, col) if col is not None else None
            if index is not None:
                self._lexical[namespace] = index
                self._snapshot_fresh.add(namespace)
                return index
        feed = self._change_feed(namespace)
        index = self._lexical[namespace] = refresh_lexical(
            self._lexical.get(namespace),
            feed,
            namespace,
            fetch=functools.partial(self.get_many, namespace=namespace),
            scan=lambda: active_texts(self._collection(namespace, create=False)),
        )
        return index

    def _reindex(self, namespace: str, upserts: Sequence[MemoryUnit] = (), deletes: Sequence[str] = ()) -> None:
        index = self._lexical.get(namespace)
        if index is None:
            index = self._snapshot_before_write(namespace, [*(u.memory_id for u in upserts), *deletes])
        if index is not None:  # not built yet: it will be built from Chroma when first searched
            index.delete(deletes)
            index.upsert(upserts)
        self._units.evict(namespace, [*(u.memory_id for u in upserts), *deletes])
        self._drop_snapshot(namespace)
        feed = self._change_feed(namespace)
        if feed is not None:
            try:
                feed.publish([*(u.memory_id for u in upserts), *deletes])
            except Exception as e:
                raise StoreError(f"could not publish the change to namespace {namespace!r}: {e}") from e

    # ------------------------------------------------------------------ writes
    def _prepare(self, unit: MemoryUnit, namespace: str | None) -> MemoryUnit:
        return prepare(
            unit, namespace, default_namespace=self.namespace, vocabulary=self.vocabulary, policy=self.policy
        )

    def add(self, unit: MemoryUnit, *, namespace: str | None = None, dedupe: bool = True) -> WriteResult:
        """Store ``unit``; return what the write did (:class:`~langchain_hindsight.store.writes.WriteResult`).

        With ``dedupe`` (default): an active unit in scope that makes the same
        statement (after normalising case, whitespace and punctuation) absorbs it
        (``"merged"``; ``result.unit`` is that unit, keeping the newest time).
        A different statement is never merged on similarity alone: when active
        units are more than ``conflict_threshold`` similar, the store's ``judge``
        decides; the default keeps both (``"added"``, ``related_ids`` naming the
        similar units), an LLM judge may also merge a reworded duplicate or
        supersede an outdated unit (``"superseded"``). ``namespace`` overrides
        ``unit.namespace``. Each write is logged at INFO.

        Example:
            >>> store.add(MemoryUnit(content="客户甲公司希望通过邮件联系。")).action  # doctest: +SKIP
            'added'

        Raises:
            ConfigurationError: ``unit`` is not a :class:`MemoryUnit`.
            StoreError: the backend failed; nothing was changed.
        """
        return self.add_many([unit], namespace=namespace, dedupe=dedupe)[0]

    @_backend_errors
    def add_many(
        self, units: Sequence[MemoryUnit], *, namespace: str | None = None, dedupe: bool = True
    ) -> list[WriteResult]:
        """Store many units with one batch embedding; one :class:`WriteResult` per unit, aligned with ``units``.

        A unit may merge into, or supersede, an earlier unit of the same batch.
        ``dedupe=False`` stores every unit as given (bulk import); an id that
        already exists is then overwritten.
        """
        if isinstance(units, MemoryUnit) or not isinstance(units, Sequence):
            raise ConfigurationError("units must be a sequence of MemoryUnit")
        if not isinstance(dedupe, bool):
            raise ConfigurationError(f"dedupe must be a bool, got {dedupe!r}")
        prepared = [self._prepare(u, namespace) for u in units]
        if not prepared:
            return []
        by_ns: dict[str, list[int]] = {}
        for i, u in enumerate(prepared):
            by_ns.setdefault(u.namespace, []).append(i)
        vectors = self.embeddings.embed_documents([u.content for u in prepared])
        if len(vectors) != len(prepared):
            raise StoreError("the embedder returned a different number of vectors than texts")
        results: list[WriteResult | None] = [None] * len(prepared)
        with self._lock:
            for ns, idx in by_ns.items():
                stored = self._add_namespace(ns, [prepared[i] for i in idx], [vectors[i] for i in idx], dedupe)
                for i, result in zip(idx, stored, strict=True):
                    results[i] = result
        return [r for r in results if r is not None]

    def _add_namespace(
        self, ns: str, units: list[MemoryUnit], vectors: list[list[float]], dedupe: bool
    ) -> list[WriteResult]:
        col = self._vectors(self._collection(ns))
        assert col is not None
        ids = [u.memory_id for u in units]
        taken = set(col.get(ids=ids, include=[])["ids"])  # add never overwrites a stored id (either collection)
        archive = self._collection(ns, "archive", create=False)
        if archive is not None:
            taken |= set(archive.get(ids=ids, include=[])["ids"])
        units = fresh_ids_for_taken(units, taken)
        plan = plan_add(
            units,
            vectors,
            dedupe=dedupe,
            neighbours=functools.partial(query_neighbours, col, scope=self.conflict_scope),
            merge_threshold=self.merge_threshold,
            conflict_threshold=self.conflict_threshold,
            scope=self.conflict_scope,
            policy=self.policy,
            judge=self.judge,
        )
        write_plan(col, plan, self.client)
        self._reindex(ns, upserts=[*(u for u, _ in plan.new.values()), *plan.changed.values()])
        for unit, result in zip(units, plan.results, strict=True):
            if result.action == "added":
                what = f"added as {result.memory_id}"
            elif result.action == "merged":
                what = f"merged into {result.memory_id}"
            else:
                what = f"superseded {', '.join(result.related_ids)}; stored as {result.memory_id}"
            logger.info("write %s in %r: %s (%s)", unit.memory_id, ns, what, result.reason)
        return plan.results

    @_backend_errors
    def update(self, memory_id: str, /, *, namespace: str | None = None, **changes: Any) -> MemoryUnit:
        """Change fields of a stored unit; return the stored result.

        Metadata changes are written without re-embedding; a ``content`` change
        re-embeds. ``memory_id`` and ``namespace`` cannot change.

        Raises:
            MemoryNotFoundError: no such unit.
            InvalidMemoryError: the changed unit would be invalid (nothing is written).
        """
        if {"memory_id", "namespace"} & set(changes):
            raise ConfigurationError("memory_id and namespace cannot be changed; add a new unit instead")
        ns = self._ns(namespace)
        with self._lock:
            current = self.get(memory_id, namespace=ns)
            check_source_change(current, changes.get("source", current.source))
            if "task_type" in changes:
                if not isinstance(changes["task_type"], str):
                    raise ConfigurationError(f"task_type must be a string, got {type(changes['task_type']).__name__}")
                changes["task_type"] = self.vocabulary.normalize(changes["task_type"])
            return self.update_many([current.evolve(**changes)], namespace=ns)[0]

    @_backend_errors
    def update_many(self, units: Sequence[MemoryUnit], *, namespace: str | None = None) -> list[MemoryUnit]:
        """Write new versions of existing units in one batch (re-embedding only changed content).

        Units keep their collection; use :meth:`archive`/:meth:`restore` to change
        between active/superseded and archived.

        Raises:
            MemoryNotFoundError: one of the units does not exist (nothing is written).
        """
        if isinstance(units, MemoryUnit) or not isinstance(units, Sequence):
            raise ConfigurationError("units must be a sequence of MemoryUnit")
        units = [check_unit(u) for u in units]
        ns = self._ns(namespace)
        if any(u.namespace != ns for u in units):
            raise ConfigurationError(f"every unit must belong to namespace {ns!r}")
        if not units:
            return []
        with self._lock:
            written: list[MemoryUnit] = []
            for role in ROLES:
                col = self._collection(ns, role, create=False)
                if col is None:
                    continue
                batch = write_updates(col, role, units, functools.partial(self._embed_into, col))
                if not batch:
                    continue
                if role == "memories":
                    self._reindex(ns, upserts=batch)
                written.extend(batch)
            missing = {u.memory_id for u in units} - {u.memory_id for u in written}
            if missing:
                raise MemoryNotFoundError(f"no memory {sorted(missing)[0]!r} in namespace {ns!r}")
            order = {u.memory_id: i for i, u in enumerate(units)}
            return sorted(written, key=lambda u: order[u.memory_id])

    @_backend_errors
    def record_feedback(
        self,
        memory_ids: Sequence[str] | str,
        *,
        success: bool | None = None,
        rejected: bool = False,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> list[MemoryUnit]:
        """Apply the outcome of a task that used these memories (seed §4.5).

        ``success=True``: access count +1, last access now, confidence
        +``success_delta`` (capped). ``success=False``: access +1, confidence
        −``failure_delta`` (floored). ``rejected=True`` (the user said the memory
        is wrong): confidence × ``rejection_factor``. ``success=None``: only the
        access is recorded. Ids that no longer exist are skipped with a warning.

        Returns:
            The updated units.
        """
        ids = _check_ids(memory_ids)
        if success is not None and not isinstance(success, bool):
            raise ConfigurationError(f"success must be True, False or None, got {success!r}")
        if not isinstance(rejected, bool):
            raise ConfigurationError(f"rejected must be a bool, got {rejected!r}")
        if now is not None and not isinstance(now, datetime):
            raise ConfigurationError(f"now must be a datetime or None, got {type(now).__name__}")
        when = utcnow() if now is None else now if now.tzinfo else now.replace(tzinfo=UTC)
        ns = self._ns(namespace)
        with self._lock:
            current = self.get_many(ids, namespace=ns)
            if len(current) != len(ids):
                gone = sorted(set(ids) - {u.memory_id for u in current})
                logger.warning("feedback skipped for %d unknown memory id(s): %s", len(gone), gone[:5])
            updated = [
                u.evolve(
                    access_count=u.access_count + 1,
                    last_accessed_at=max(u.last_accessed_at, when),
                    confidence=self.policy.apply(u.score_confidence, success=success, rejected=rejected),
                )
                for u in current
            ]
            return self.update_many(updated, namespace=ns)

    @_backend_errors
    def share(
        self, memory_ids: Sequence[str] | str, *, to_namespace: str, namespace: str | None = None
    ) -> list[MemoryUnit]:
        """Copy units into another namespace: the one explicit way a memory crosses namespaces.

        Namespaces never see each other's units; agents share experience by
        copying chosen units into a namespace they all read (e.g. ``"shared"``).
        The copy keeps id, content, provenance and counters, is active, and goes
        through the target's write rules (the same statement there absorbs it). It is
        independent afterwards: forgetting the original does not forget the copy
        (``forget(memory_id, namespace=to_namespace)`` does).

        Example:
            >>> store.share([unit.memory_id], namespace="alice", to_namespace="shared")  # doctest: +SKIP

        Returns:
            What is now stored in ``to_namespace`` for each unit found (missing ids are skipped).

        Raises:
            ConfigurationError: ``to_namespace`` equals the source namespace or is invalid.
        """
        ids = _check_ids(memory_ids)
        src = self._ns(namespace)
        dst = self._ns(to_namespace)
        if src == dst:
            raise ConfigurationError(f"to_namespace must differ from the source namespace {src!r}")
        with self._lock:
            copies = [
                u.evolve(namespace=dst, status="active", supersedes=None, merged_from=[])
                for u in self.get_many(ids, namespace=src)
            ]
            return [r.unit for r in self.add_many(copies, namespace=dst)] if copies else []

    @_backend_errors
    def archive(self, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
        """Move units to the namespace's cold collection (excluded from recall, restorable)."""
        return self._move(_check_ids(memory_ids), self._ns(namespace), "memories", "archive")

    @_backend_errors
    def restore(self, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
        """Bring archived units back as active units."""
        return self._move(_check_ids(memory_ids), self._ns(namespace), "archive", "memories")

    def _move(self, ids: list[str], ns: str, src_role: Role, dst_role: Role) -> list[MemoryUnit]:
        if not ids:
            return []
        with self._lock:
            src = self._collection(ns, src_role, create=False)
            if src is None:
                return []
            status: MemoryStatus = "archived" if dst_role == "archive" else "active"
            moved = move_units(src, functools.partial(self._collection, ns, dst_role), ids, status)
            if not moved:
                return []
            if dst_role == "archive":
                self._reindex(ns, deletes=[u.memory_id for u in moved])
            else:
                self._reindex(ns, upserts=moved)
            return moved

    @_backend_errors
    def forget(
        self,
        memory_id: str | Sequence[str] | None = None,
        *,
        namespace: str | None = None,
        scrub: bool | None = None,
    ) -> int:
        """Hard-delete units (every copy, archive included), or a whole namespace.

        ``forget("mem_...")`` deletes those ids in ``namespace``: the record
        (vector, document, metadata) in memories and archive, the lexical index
        entry, and every reference to the id in other units (``supersedes``,
        ``merged_from``) and in the run journal. ``forget(namespace="alice")``
        deletes every collection of that namespace.

        With ``scrub`` (the default for an embedded store) the bytes are then
        physically erased from the directory (see :meth:`scrub`); a Chroma API
        delete alone leaves them in ``chroma.sqlite3`` and the HNSW files.

        Example:
            >>> n = store.forget(unit.memory_id)  # doctest: +SKIP

        Args:
            memory_id: One id or a sequence of ids; ``None`` with an explicit
                ``namespace`` forgets the whole namespace.
            namespace: Namespace to delete from (default: the store's).
            scrub: ``None``: scrub when the store owns an embedded directory.
                ``False``: defer (call :meth:`scrub` later, e.g. after a batch).

        Returns:
            How many units were deleted.

        Raises:
            ConfigurationError: bad arguments, or ``scrub=True`` on a store that
                does not own its directory (server or injected client).
        """
        if scrub is not None and not isinstance(scrub, bool):
            raise ConfigurationError(f"scrub must be True, False or None, got {scrub!r}")
        if scrub and not self._owns_client:
            raise ConfigurationError(_forget.NO_SCRUB)
        do_scrub = self._owns_client if scrub is None else scrub
        ns = self._ns(namespace)
        ids = None if memory_id is None else _check_ids(memory_id)
        if ids is None and namespace is None:
            raise ConfigurationError("forget() needs a memory id or an explicit namespace")
        if ids == []:
            return 0
        with self._lock:
            self._ensure_open()
            rebuild: list[str] = []
            _forget.record_intent(self, ns, ids, do_scrub)  # durable before the first delete; finished on reopen
            try:
                try:
                    if ids is None:
                        deleted = self._drop_namespace(ns)
                    else:
                        deleted, rebuild = self._delete_ids(ns, ids)
                except HindsightError:
                    raise
                except Exception as e:
                    raise StoreError(f"chroma delete failed: {e}") from e
                if do_scrub and (deleted or rebuild):
                    self._scrub(rebuild)
            finally:
                _forget.clear_intent(self)  # done, or failed with an error the caller receives
            return deleted

    delete = forget

    def _drop_namespace(self, ns: str) -> int:
        """Drop every collection that belongs to ``ns`` (any role, leftovers included)."""
        deleted = _forget.drop_collections(self.client, ns)
        for key in [k for k in self._collections if k[0] == ns]:
            del self._collections[key]
        self._lexical.pop(ns, None)
        self._open_counts.pop(ns, None)
        self._units.clear(ns)
        self._snapshot_dropped.discard(ns)
        self._drop_snapshot(ns)
        self._feeds.pop(ns, None)
        self._repaired.discard(ns)
        return deleted

    def _delete_ids(self, ns: str, ids: list[str]) -> tuple[int, list[str]]:
        """Delete ``ids`` and every reference to them; return (count, names of collections touched)."""
        return _forget.delete_ids(self, ns, ids)

    # ------------------------------------------------------------------ migration
    @_backend_errors
    def reembed(
        self,
        *,
        namespaces: Sequence[str] | None = None,
        batch_size: int = 64,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> ReembedReport:
        """Re-embed every unit with this store's embedder, in place (what ``hindsight reembed`` runs).

        Use it after changing a store's embedder (the store then raises
        :class:`EmbedderMismatchError` until this is done). Each memories and
        archive collection is copied with new vectors from the stored text
        (every field kept), verified, then switched; a crash leaves the old
        collection intact and a re-run finishes the job (see ``_reembed``). An
        embedded store is then scrubbed, so the old vectors leave the disk.
        Nothing else may write to the store meanwhile.

        Args:
            namespaces: Namespaces to migrate (default: every namespace).
            batch_size: Texts per embedding call.
            progress: Called as ``progress("namespace/role", done, total)``.
        """
        from langchain_hindsight.store._reembed import reembed_collections

        with self._lock:
            self._ensure_open()
            names = self.namespaces() if namespaces is None else [check_namespace(n) for n in namespaces]
            self._collections.clear()
            self._embedder_checked.clear()
            try:
                report = reembed_collections(
                    self.client, self.embeddings, names, batch_size=batch_size, progress=progress
                )
            finally:
                self._collections.clear()
                self._embedder_checked.clear()
            if report.migrated and self._owns_client and self.persist_directory is not None:
                self._scrub(None)
            return report

    # ------------------------------------------------------------------ physical erasure
    @_backend_errors
    def scrub(self) -> None:
        """Physically erase every deleted record from the store's directory.

        Rebuilds every collection from its live records (dropping the HNSW files
        that still hold deleted vectors), merges the full-text index, rewrites
        ``chroma.sqlite3`` with ``VACUUM`` under ``secure_delete`` and removes
        orphaned segment files. Costs a full copy of the store; :meth:`forget`
        does it for the collections it touched unless told ``scrub=False``.
        Resumable: a crash mid-way is finished when the directory is reopened.

        Example:
            >>> store.forget(ids, scrub=False); store.scrub()  # doctest: +SKIP

        Raises:
            ConfigurationError: the store does not own an embedded directory. For
                a Chroma server, stop it, open the directory with
                ``MemoryStore(persist_directory=...)`` and scrub there.
            StoreError: the backend failed.
        """
        if not self._owns_client:
            raise ConfigurationError(_forget.NO_SCRUB)
        with self._lock:
            self._ensure_open()
            self._scrub(None)

    def _scrub(self, rebuild: list[str] | None) -> None:
        """Rebuild ``rebuild`` (names; ``None``: every hindsight collection), then erase files."""
        _forget.scrub(self, rebuild)

    def _finish_interrupted_scrub(self) -> None:
        from langchain_hindsight.store._transfer import finish_interrupted_import

        finish_interrupted_import(self)  # an import killed midway is rolled forward from its pending file
        _forget.finish_interrupted_scrub(self)

    # ------------------------------------------------------------------ async twins (store I/O off the event loop)
    async def aget(self, memory_id: str, *, namespace: str | None = None) -> MemoryUnit:
        """Async :meth:`get` (runs in a worker thread)."""
        return await asyncio.to_thread(self.get, memory_id, namespace=namespace)

    async def aget_many(self, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
        """Async :meth:`get_many` (runs in a worker thread)."""
        return await asyncio.to_thread(self.get_many, memory_ids, namespace=namespace)

    async def aupdate(self, memory_id: str, /, *, namespace: str | None = None, **changes: Any) -> MemoryUnit:
        """Async :meth:`update` (runs in a worker thread)."""
        return await asyncio.to_thread(functools.partial(self.update, memory_id, namespace=namespace, **changes))

    async def arecord_feedback(self, memory_ids: Sequence[str] | str, **kwargs: Any) -> list[MemoryUnit]:
        """Async :meth:`record_feedback` (runs in a worker thread)."""
        return await asyncio.to_thread(functools.partial(self.record_feedback, memory_ids, **kwargs))

    async def aforget(self, memory_id: str | Sequence[str] | None = None, **kwargs: Any) -> int:
        """Async :meth:`forget` (runs in a worker thread)."""
        return await asyncio.to_thread(functools.partial(self.forget, memory_id, **kwargs))
