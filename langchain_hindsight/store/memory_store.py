"""``MemoryStore``: the single source of truth for memory units, on a storage backend (Chroma by default).

Every field of every unit lives in the backend (see ``_codec``); nothing is kept
in a private dict that a restart would lose. The in-memory lexical index is
derived data, rebuilt from the backend and updated on every write.

The store reaches its data only through the backend layer (``backend.Backend``:
``chroma.ChromaBackend``, embedded or server; ``inmemory.InMemoryBackend``). The
class is assembled from mixins by concept: ``_core`` (state, collections,
lexical upkeep), ``_store_reads``, ``_store_search``, ``_store_writes``, ``_transfer``
and ``_forget``; the mechanics live in ``_collections`` (naming, opening, reading),
``_write`` (dedupe/merge/supersede planning), ``_repair`` (two-step writes),
``_search`` (caches, snapshots), ``_runs`` (run records) and ``_policy``
(:class:`ConfidencePolicy`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from langchain_hindsight.embeddings.multilingual import default_embeddings
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.store._collections import check_namespace, recorded_embedder
from langchain_hindsight.store._core import backend_errors
from langchain_hindsight.store._forget import ForgetMixin
from langchain_hindsight.store._mirror import MIRROR_MAX_ROWS
from langchain_hindsight.store._policy import (  # noqa: F401 - the first two are re-exported
    DEFAULT_CONFIDENCE_CEILING,
    ConfidencePolicy,
    fresh_ids_for_taken,
)
from langchain_hindsight.store._reembed import ReembedReport, reembed_collections
from langchain_hindsight.store._search import lexical_scheme
from langchain_hindsight.store._store_reads import ReadMixin
from langchain_hindsight.store._store_search import SearchMixin
from langchain_hindsight.store._transfer import TransferMixin
from langchain_hindsight.store.backend import Backend, ChromaBackend
from langchain_hindsight.store.backend.postgres import PostgresBackend
from langchain_hindsight.store.writes import RuleWriteJudge, WriteJudge
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import MemoryUnit

__all__ = ["ConfidencePolicy", "MemoryStore"]

logger = logging.getLogger(__name__)


def _postgres_backend(database_url: str) -> Backend:
    """A :class:`~langchain_hindsight.store.backend.postgres.PostgresBackend` on ``database_url`` (store tokenizer)."""
    if not isinstance(database_url, str) or not database_url.strip():
        raise ConfigurationError(f"database_url must be a postgresql:// URL, got {database_url!r}")
    return PostgresBackend(database_url.strip(), lexical=lexical_scheme())  # psycopg is imported only now


class MemoryStore(ForgetMixin, TransferMixin, SearchMixin, ReadMixin):
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
        backend: A storage backend to use instead (see :mod:`langchain_hindsight.store.backend.base`):
            ``InMemoryBackend()`` (:mod:`langchain_hindsight.store.backend.inmemory`) for fast tests and
            throwaway stores, ``ChromaBackend.embedded(path)`` / ``ChromaBackend.server(host, port)``.
            The store does not close it.
        database_url: A PostgreSQL database (``postgresql://user:pass@host/db``, with pgvector) to
            use instead: any number of processes and hosts may write it at once, and every recall
            reads what any of them committed (see :mod:`langchain_hindsight.store.backend.postgres`). Needs
            the ``postgres`` extra. The store opens and closes its connection pool.
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
        mirror_max_rows: An embedded store serves recall for a namespace of at
            most this many memories from its recall mirror (every active unit's
            vector and record in memory, ~4.5 KB a memory with the default
            embedder: an exact dense arm and no Chroma read per query); a larger
            namespace queries Chroma's index. ``0`` turns the mirror off.
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
        merge_threshold: float | None = 0.95,
        conflict_scope: Literal["task_type", "namespace"] = "task_type",
        policy: ConfidencePolicy | None = None,
        vocabulary: TaskTypeVocabulary | None = None,
        namespace: str = "default",
        judge: WriteJudge | None = None,
        mirror_max_rows: int = MIRROR_MAX_ROWS,
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
        if isinstance(mirror_max_rows, bool) or not isinstance(mirror_max_rows, int) or mirror_max_rows < 0:
            raise ConfigurationError(f"mirror_max_rows must be an int >= 0, got {mirror_max_rows!r}")
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
            backend = _postgres_backend(database_url)
        elif backend is None:
            if client is not None:
                backend = ChromaBackend(client)
            elif persist_directory is None:
                raise ConfigurationError("give persist_directory, client or backend")
            else:
                backend = ChromaBackend.embedded(persist_directory)
        self._init_state(backend)
        self.mirror_max_rows = mirror_max_rows
        if embeddings is None:  # the built-in embedder the store records; a new store gets the routed default
            embeddings = default_embeddings(recorded_embedder(backend, self.namespace))
        self.embeddings = embeddings
        if self.persist_directory is not None:
            try:
                self._finish_interrupted_import()  # an import killed midway is rolled forward from its pending file
                self._finish_interrupted_scrub()
            except BaseException:
                self.close()
                raise

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Release the directory lock and the backend this store opened (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._save_snapshots()
            self._refresh_summary()  # last: a write after it would make the close remove the summary
            self._closed = True
            self._collections.clear()
            self._lexical.clear()
            self._mirrors.clear()
            self._units.clear()
            if self._owns_backend:
                self.backend.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ migration
    @backend_errors
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
        with self._lock:
            self._ensure_open()
            names = self.namespaces() if namespaces is None else [check_namespace(n) for n in namespaces]
            for name in names:  # new vectors: the cached and mirrored ones are the old embedder's
                self._drop_snapshot(name)
                self._mirrors.pop(name, None)
                self._units.clear(name)
            self._collections.clear()
            self._embedder_checked.clear()
            try:
                report = reembed_collections(
                    self.backend, self.embeddings, names, batch_size=batch_size, progress=progress
                )
            finally:
                self._collections.clear()
                self._embedder_checked.clear()
            if report.migrated and self.backend.can_erase:
                self._scrub(None)
            return report

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
