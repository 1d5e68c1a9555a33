"""``MemoryStore``: the single source of truth for memory units, on a storage backend (Chroma by default).

Its public methods are the functions of their concept's module bound as methods, over the state of
``_core.StoreCore`` (docs/DESIGN.md, "The rooms").
"""

from __future__ import annotations

import asyncio
import functools
import os
import warnings
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from langchain_hindsight._checks import check_number, refuse_unknown_keywords
from langchain_hindsight.confidence import ConfidencePolicy
from langchain_hindsight.embeddings.multilingual import default_embeddings
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.store import _reembed
from langchain_hindsight.store import _store_writes as _write_ops
from langchain_hindsight.store import forget as _forget_ops
from langchain_hindsight.store import reads as _read_ops
from langchain_hindsight.store import search as _search_ops
from langchain_hindsight.store import transfer as _transfer_ops
from langchain_hindsight.store._collections import recorded_embedder
from langchain_hindsight.store._core import StoreCore
from langchain_hindsight.store.backend import Backend, ChromaBackend
from langchain_hindsight.store.tokens import lexical_scheme
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import DEFAULT_NAMESPACE, MemoryUnit
from langchain_hindsight.writes import MERGE_THRESHOLD, RuleWriteJudge, WriteJudge

__all__ = ["MemoryStore"]


@refuse_unknown_keywords
class MemoryStore(StoreCore):
    """Durable memory units in Chroma, with dedup, conflicts and feedback.

    Setup:
        Embedded (default): one process owns ``persist_directory`` and holds a
        lock on it. Shared: ``database_url="postgresql://..."`` (Postgres with
        pgvector; many writers on many hosts), or run ``chroma run --path DIR --port 8000``
        and pass ``client=chromadb.HttpClient(port=8000)`` from any number of processes.
        In memory (tests, throwaway stores): ``backend=InMemoryBackend()``.

    Instantiate:
        .. code-block:: python

            from langchain_hindsight import MemoryStore, MemoryUnit

            with MemoryStore(persist_directory="./memory_db") as store:
                result = store.add(MemoryUnit(task_type="data_cleaning",
                                              content="Read Chinese CSVs with encoding='utf-8-sig'."))
                store.record_feedback([result.memory_id], success=True)

    Args:
        persist_directory: Directory of the embedded Chroma database. Ignored
            when ``client`` or ``backend`` is given.
        client: A chromadb client to use instead (``HttpClient`` for a server,
            ``EphemeralClient`` for throwaway stores). The store does not close it.
        backend: A storage backend to use instead (:mod:`langchain_hindsight.store.backend`):
            ``InMemoryBackend()`` for fast tests and throwaway stores, ``ChromaBackend.embedded(path)`` /
            ``ChromaBackend.server(host, port)``. The store does not close it.
        database_url: A PostgreSQL database (``postgresql://user:pass@host/db``, with pgvector) to use
            instead: any number of processes and hosts may write it, and every recall reads what any of them
            committed. Needs the ``postgres`` extra; the store opens and closes its connection pool. A server
            that cannot be reached or refuses the login raises ``DatabaseConnectionError`` within five seconds
            (a ``connect_timeout`` in the URL sets another), naming host, port, database and user.
        embeddings: Any LangChain ``Embeddings``, returning normalised vectors (the thresholds are cosine
            similarities). Default: the embedder the store records if it is one of this package's (an
            existing MiniLM store keeps :class:`LocalEmbeddings`), else
            :class:`~langchain_hindsight.embeddings.multilingual.ScriptRoutedEmbeddings` (offline; Chinese,
            English and across). Using the store's vectors with another embedder than the one it records
            raises :class:`EmbedderMismatchError` (migrate with :meth:`reembed`); reading units needs none.
        conflict_threshold: Similarity above which an active unit in scope is
            a *candidate* conflict: the nearest such units go to ``judge``, which
            decides add / duplicate / update / conflict. ``None``: no judge is
            asked (only the same statement merges).
        merge_threshold: Similarity at or above which the judge may call a differently worded unit a
            duplicate (merge); default :data:`~langchain_hindsight.writes.MERGE_THRESHOLD` (0.95, the
            lifecycle's too). ``None``: only the same statement (after normalising case, whitespace and
            punctuation) merges, as it always does; similarity alone never merges or supersedes.
        judge: Decides what a unit with similar neighbours is (:mod:`langchain_hindsight.writes`).
            Default :class:`~langchain_hindsight.writes.RuleWriteJudge`: keep both active, so recency and
            the conflict note decide at recall; ``LLMWriteJudge(model)`` asks a chat model once per such write.
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
        client: Any = None,
        backend: Backend | None = None,
        database_url: str | None = None,
        embeddings: Embeddings | None = None,
        conflict_threshold: float | None = 0.85,
        merge_threshold: float | None = MERGE_THRESHOLD,
        conflict_scope: Literal["task_type", "namespace"] = "task_type",
        policy: ConfidencePolicy | None = None,
        vocabulary: TaskTypeVocabulary | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        judge: WriteJudge | None = None,
    ) -> None:
        for name, value in (("conflict_threshold", conflict_threshold), ("merge_threshold", merge_threshold)):
            if value is not None:
                check_number(name, value, 0.0, 1.0, open_low=True)
        if conflict_threshold is not None and merge_threshold is not None and merge_threshold < conflict_threshold:
            raise ConfigurationError("merge_threshold must be >= conflict_threshold")
        if conflict_scope not in ("task_type", "namespace"):
            raise ConfigurationError(f"conflict_scope must be 'task_type' or 'namespace', got {conflict_scope!r}")
        if embeddings is not None and not isinstance(embeddings, Embeddings):
            raise ConfigurationError("embeddings must be a langchain_core.embeddings.Embeddings instance")
        if judge is not None and not isinstance(judge, WriteJudge):
            raise ConfigurationError(
                "judge must have a judge(unit, neighbours) method (see langchain_hindsight.writes)"
            )
        if backend is not None and (client is not None or not isinstance(backend, Backend)):
            raise ConfigurationError("backend must be a langchain_hindsight.store.backend.base.Backend, without client")
        if database_url is not None and (backend is not None or client is not None):
            raise ConfigurationError("give database_url, client or backend, not several")
        self.judge = judge or RuleWriteJudge()
        self.namespace = MemoryUnit(content="-", namespace=namespace).namespace if namespace else ""
        if not self.namespace:
            raise ConfigurationError("namespace must be a non-empty string")
        self.conflict_threshold = conflict_threshold
        self.merge_threshold = merge_threshold
        self.conflict_scope = conflict_scope
        self.policy = policy or ConfidencePolicy()
        self.vocabulary = vocabulary or TaskTypeVocabulary()
        self._owns_backend = backend is None and client is None
        if database_url is not None:
            if not isinstance(database_url, str) or not database_url.strip():
                raise ConfigurationError(f"database_url must be a postgresql:// URL, got {database_url!r}")
            from langchain_hindsight.store.backend.postgres import PostgresBackend  # psycopg is imported only now

            backend = PostgresBackend(database_url.strip(), lexical=lexical_scheme())
        elif client is not None:
            backend = ChromaBackend(client)
        elif backend is None:
            if persist_directory is None:
                raise ConfigurationError("give persist_directory, client or backend")
            backend = ChromaBackend.embedded(persist_directory)
        self._init_state(backend)
        if embeddings is None:  # the built-in embedder the store records; a new store gets the routed default
            embeddings = default_embeddings(recorded_embedder(backend, self.namespace))
        self.embeddings = embeddings
        try:
            _transfer_ops.finish_interrupted_import(self)  # rolled forward from its pending file (a directory only)
            _forget_ops.finish_interrupted_scrub(self)  # a directory's intent files, a database's erase note
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Release the directory lock and the backend this store opened (idempotent)."""
        with self.lock:
            if self._closed:
                return
            _read_ops.close_replica(self)  # last: a write after it leaves the derived files unvouched
            self._closed = True
            self._collections.clear()
            self.replica.clear()
            if self._owns_backend:
                self.backend.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ public methods, defined in their modules
    search = _search_ops.search
    search_by_vector = _search_ops.search_by_vector
    similarity_by_ids = _search_ops.similarity_by_ids
    hybrid_search = _search_ops.hybrid_search
    lexical_search = _search_ops.lexical_search
    namespaces = _read_ops.namespaces
    list_units = _read_ops.list_units
    iter_units = _read_ops.iter_units
    iter_vectors = _read_ops.iter_vectors
    count_by = _read_ops.count_by
    statistics = _read_ops.statistics
    count = _read_ops.count
    history = _read_ops.history

    add = _write_ops.add
    add_many = _write_ops.add_many
    supersede = _write_ops.supersede
    update = _write_ops.update
    update_many = _write_ops.update_many
    record_feedback = _write_ops.record_feedback
    share = _write_ops.share
    archive = _write_ops.archive
    restore = _write_ops.restore
    discard = _write_ops.discard
    forget = _forget_ops.forget
    scrub = _forget_ops.scrub
    import_units = _transfer_ops.import_units
    reembed = _reembed.reembed

    def delete(
        self, memory_id: str | Sequence[str] | None = None, *, namespace: str | None = None, scrub: bool | None = None
    ) -> int:
        """Deprecated alias of :meth:`forget` (removed in 0.2): warns, then forgets exactly as :meth:`forget`.

        A LangGraph store's ``delete(namespace, key)`` (:class:`~langchain_hindsight.HindsightStore`) means
        something else.
        """
        warnings.warn(
            "MemoryStore.delete is deprecated and will be removed in 0.2: call MemoryStore.forget",
            DeprecationWarning,
            stacklevel=3,  # the caller's line: above this method and the keyword check's wrapper (_checks)
        )
        return self.forget(memory_id, namespace=namespace, scrub=scrub)

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
