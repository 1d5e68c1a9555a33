"""``MemoryStore``: the single source of truth for memory units, on Chroma.

Every field of every unit lives in Chroma (see ``_codec``); nothing is kept in
a private dict that a restart would lose. The in-memory lexical index is derived
data, rebuilt from Chroma and updated on every write.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from langchain_core.embeddings import Embeddings

from langchain_hindsight import _scrub
from langchain_hindsight._codec import PENDING_MOVE, PENDING_SUPERSEDE, unit_from_record, unit_to_metadata
from langchain_hindsight._lexical import ChangeFeed, LexicalIndex
from langchain_hindsight._safety import SUSPICIOUS_TAG, clean_text, looks_like_instruction
from langchain_hindsight.errors import (
    ConfigurationError,
    HindsightError,
    InvalidMemoryError,
    MemoryNotFoundError,
    StoreClosedError,
    StoreError,
    StoreLockedError,
)
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import (
    DEFAULT_INITIAL_CONFIDENCE,
    MemoryKind,
    MemorySource,
    MemoryStatus,
    MemoryUnit,
    utcnow,
)

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from filelock import BaseFileLock

# chromadb's type hints are narrower than what it accepts (plain float lists, nested where
# clauses); collections are handled as ``Any`` and every call is covered by tests.
Collection = Any

__all__ = ["ConfidencePolicy", "MemoryStore"]

logger = logging.getLogger(__name__)

Role = Literal["memories", "archive", "journal"]
_ROLES: tuple[Role, ...] = ("memories", "archive")
"""Collections that hold memory units (the journal holds run records, see ``journal.py``)."""
_ALL_ROLES: tuple[Role, ...] = ("memories", "archive", "journal")
_PREFIXES: dict[str, str] = {"memories": "hs", "archive": "hsarc", "journal": "hsjrn"}
_ALLOWED: dict[str, tuple[str, ...]] = {
    "status": get_args(MemoryStatus),
    "kind": get_args(MemoryKind),
    "source": get_args(MemorySource),
}
_LOCK_FILE = ".hindsight.lock"
_NEIGHBOURS = 5
_TRUST_ORDER: tuple[str, ...] = tuple(DEFAULT_INITIAL_CONFIDENCE)
"""Sources, most trusted first (see ``types.MemorySource``)."""
_TRUSTED_SOURCES = frozenset({"user_feedback", "manual"})
"""Sources whose instruction-like wording is legitimate (a user telling the agent what to do)."""

DEFAULT_CONFIDENCE_CEILING: dict[str, float] = {
    "agent_inference": 0.9,
    "rule": 0.9,
    "review": 0.8,
    "tool_output": 0.5,
}
"""Highest confidence a unit may *claim* on arrival, by source; feedback can raise it later."""


def _trust(source: str) -> int:
    """Rank of ``source``: 0 is the most trusted."""
    return _TRUST_ORDER.index(source)


@dataclass(frozen=True, slots=True)
class ConfidencePolicy:
    """How confidence moves (seed §3.1, §3.4, §4.5). Every number is configurable.

    Attributes:
        success_delta: Added on a successful reuse.
        success_cap: Success never raises confidence above this.
        failure_delta: Subtracted when a task that used the memory failed.
        failure_floor: Failure never lowers confidence below this.
        rejection_factor: Multiplier when the user explicitly rejects the memory.
        supersede_factor: Multiplier applied to a unit that a newer one supersedes.
        initial: Initial confidence by source, used when a unit has none.
        ceiling: Highest confidence a unit not yet confirmed by feedback
            (``access_count == 0``) may claim on arrival, by source; sources not
            listed are uncapped. An LLM or a tool cannot make its own output
            outrank corroborated memories by claiming ``confidence=1.0``.
        suspicious_cap: Confidence cap for a unit from an untrusted source whose
            text reads like an instruction or imitates prompt structure (it is
            also tagged ``suspicious``; see ``_safety.looks_like_instruction``).
    """

    success_delta: float = 0.05
    success_cap: float = 0.95
    failure_delta: float = 0.1
    failure_floor: float = 0.1
    rejection_factor: float = 0.5
    supersede_factor: float = 0.5
    initial: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_INITIAL_CONFIDENCE))
    ceiling: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_CONFIDENCE_CEILING))
    suspicious_cap: float = 0.3

    def __post_init__(self) -> None:
        for name in ("success_delta", "success_cap", "failure_delta", "failure_floor", "suspicious_cap"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise ConfigurationError(f"ConfidencePolicy.{name} must be in [0, 1], got {value!r}")
        for name in ("rejection_factor", "supersede_factor"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise ConfigurationError(f"ConfidencePolicy.{name} must be in [0, 1], got {value!r}")
        for name in ("initial", "ceiling"):
            table = getattr(self, name)
            unknown = set(table) - set(DEFAULT_INITIAL_CONFIDENCE)
            if unknown:
                raise ConfigurationError(f"ConfidencePolicy.{name} has unknown sources: {sorted(unknown)}")
            bad = {
                k: v
                for k, v in table.items()
                if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1
            }
            if bad:
                raise ConfigurationError(f"ConfidencePolicy.{name} values must be in [0, 1], got {bad}")

    def apply(self, confidence: float, *, success: bool | None, rejected: bool) -> float:
        """The confidence after one piece of feedback."""
        if rejected:
            confidence *= self.rejection_factor
        elif success is True:
            confidence = max(confidence, min(self.success_cap, confidence + self.success_delta))
        elif success is False:
            confidence = min(confidence, max(self.failure_floor, confidence - self.failure_delta))
        return round(confidence, 6)


_NO_SCRUB = (
    "scrub needs a store that owns an embedded directory (MemoryStore(persist_directory=...)); for a Chroma "
    "server, stop it, open its --path with MemoryStore(persist_directory=...) and call scrub() there"
)


def _collection_name(namespace: str, role: Role) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", namespace.lower()).strip("-")[:32] or "ns"
    digest = hashlib.sha256(namespace.encode()).hexdigest()[:12]
    return f"{_PREFIXES[role]}-{slug}-{digest}"


def _check_unit(value: object, what: str = "unit") -> MemoryUnit:
    if not isinstance(value, MemoryUnit):
        raise ConfigurationError(f"{what} must be a MemoryUnit, got {type(value).__name__}")
    return value


def _check_encodable(unit: MemoryUnit) -> MemoryUnit:
    """Refuse text Chroma cannot store (lone surrogates, e.g. from a JSON escape in LLM output), naming the field."""
    for name, value in unit.to_dict().items():
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidMemoryError(f"invalid memory unit: {name}: is not valid Unicode text ({e.reason})") from e
    return unit


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
                unit = store.add(MemoryUnit(task_type="data_cleaning",
                                            content="Read Chinese CSVs with encoding='utf-8-sig'."))
                store.record_feedback([unit.memory_id], success=True)

    Args:
        persist_directory: Directory of the embedded Chroma database. Ignored
            when ``client`` is given.
        client: A chromadb client to use instead (``HttpClient`` for a server,
            ``EphemeralClient`` for throwaway stores). The store does not close it.
        embeddings: Any LangChain ``Embeddings``; default :class:`LocalEmbeddings`
            (offline all-MiniLM-L6-v2). Must return normalised vectors for the
            thresholds to mean cosine similarity (Chroma uses cosine distance).
        conflict_threshold: Similarity above which a new unit with different
            content supersedes an active one (seed §3.4). ``None`` disables.
        merge_threshold: Similarity at or above which a new unit is merged into
            an existing one instead of stored twice (seed §5.3). ``None`` disables
            (identical content still merges).
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
        self.namespace = MemoryUnit(content="-", namespace=namespace).namespace if namespace else ""
        if not self.namespace:
            raise ConfigurationError("namespace must be a non-empty string")
        self.conflict_threshold = conflict_threshold
        self.merge_threshold = merge_threshold
        self.conflict_scope = conflict_scope
        self.policy = policy or ConfidencePolicy()
        self.vocabulary = vocabulary or TaskTypeVocabulary()
        if embeddings is None:
            from langchain_hindsight.embeddings import LocalEmbeddings

            embeddings = LocalEmbeddings()
        self.embeddings = embeddings
        self._lock = threading.RLock()
        self._collections: dict[tuple[str, Role], Collection] = {}
        self._lexical: dict[str, LexicalIndex] = {}
        self._feeds: dict[str, ChangeFeed] = {}  # lexical change feeds on a shared client (see _lexical)
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
        self._repaired: set[str] = set()
        if self._owns_client:
            try:
                self._finish_interrupted_scrub()
            except BaseException:
                self.close()
                raise

    # ------------------------------------------------------------------ lifecycle
    def _open_client(self) -> Any:
        import chromadb
        from chromadb.config import Settings

        return chromadb.PersistentClient(
            path=str(self.persist_directory), settings=Settings(anonymized_telemetry=False)
        )

    def _acquire_directory(self, path: Path) -> None:
        from filelock import FileLock, Timeout

        path.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(path / _LOCK_FILE), timeout=0, is_singleton=False)
        try:
            lock.acquire()
        except Timeout as e:
            raise StoreLockedError(
                f"the memory store at {path} is already open in another process or MemoryStore object. "
                "An embedded Chroma directory supports one writer: two processes silently lose vectors. "
                f"For several processes, run a Chroma server (`chroma run --path {path} --port 8000`) and "
                "pass client=chromadb.HttpClient(port=8000) to every MemoryStore."
            ) from e
        self._file_lock = lock

    def _release_directory(self) -> None:
        if self._file_lock is not None:
            self._file_lock.release()
            self._file_lock = None

    def close(self) -> None:
        """Release the directory lock and the Chroma client (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._collections.clear()
            self._lexical.clear()
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
        if namespace is None:
            return self.namespace
        if not isinstance(namespace, str) or not namespace or namespace != namespace.strip() or len(namespace) > 256:
            raise ConfigurationError(
                f"namespace must be a non-empty string of at most 256 characters, got {namespace!r}"
            )
        return namespace

    # ------------------------------------------------------------------ collections
    def _collection(self, namespace: str, role: Role = "memories", *, create: bool = True) -> Collection | None:
        self._ensure_open()
        key = (namespace, role)
        cached = self._collections.get(key)
        if cached is not None:
            return cached
        name = _collection_name(namespace, role)
        try:
            if create:
                col = self.client.get_or_create_collection(
                    name,
                    metadata={"hindsight_namespace": namespace, "hindsight_role": role},
                    configuration={"hnsw": {"space": "cosine"}},
                    embedding_function=None,
                )
            else:
                try:
                    col = self.client.get_collection(name, embedding_function=None)
                except Exception:  # noqa: BLE001 - chroma raises several types for "missing"
                    return None
        except HindsightError:
            raise
        except Exception as e:
            raise StoreError(f"could not open collection for namespace {namespace!r}: {e}") from e
        if (col.metadata or {}).get("hindsight_namespace") != namespace:  # isolation: never trust a name alone
            raise StoreError(f"collection {name!r} does not belong to namespace {namespace!r}")
        self._collections[key] = col
        if role in _ROLES and namespace not in self._repaired:
            self._repaired.add(namespace)
            self._repair(namespace)
        return col

    def namespaces(self) -> list[str]:
        """Every namespace that has a collection, sorted."""
        with self._lock:
            self._ensure_open()
            found = set()
            for col in self.client.list_collections():
                meta = col.metadata or {}
                if meta.get("hindsight_role") in _ALL_ROLES and isinstance(meta.get("hindsight_namespace"), str):
                    found.add(meta["hindsight_namespace"])
            return sorted(found)

    def _repair(self, namespace: str) -> None:
        """Finish two-step writes that a crash interrupted (run once per namespace, idempotent).

        A supersede writes the new unit marked ``pending=supersede`` first, demotes
        the old unit second and clears the mark third. A move between memories and
        archive writes the destination copy marked ``pending=move``, deletes the
        source copy second and clears the mark third. A marked record found here
        means a process died in between: the remaining steps are done now. Only
        marked records are touched, so a unit restored on purpose stays restored.
        """
        touched: list[str] = []
        try:
            for role in _ROLES:
                col = self._collection(namespace, role, create=False)
                if col is None:
                    continue
                rows = col.get(where={"pending": {"$in": [PENDING_SUPERSEDE, PENDING_MOVE]}}, include=["metadatas"])
                marks = {i: m or {} for i, m in zip(rows["ids"], rows["metadatas"] or [], strict=True)}
                if not marks:
                    continue
                targets = sorted(
                    {str(m["supersedes"]) for m in marks.values() if m.get("pending") == PENDING_SUPERSEDE} - {""}
                )
                found = self._records(col, ids=targets) if targets else []
                stale = [self._demote(u) for u in found if u.status == "active"]
                if stale:
                    col.update(ids=[u.memory_id for u in stale], metadatas=[unit_to_metadata(u) for u in stale])  # type: ignore[misc]
                moved = [i for i, m in marks.items() if m.get("pending") == PENDING_MOVE]
                other = self._collection(namespace, "archive" if role == "memories" else "memories", create=False)
                if moved and other is not None:
                    other.delete(ids=moved)
                col.update(ids=list(marks), metadatas=[{"pending": ""} for _ in marks])
                touched += [*marks, *(u.memory_id for u in stale)]
                logger.warning("completed %d interrupted write(s) in namespace %r", len(marks), namespace)
        except HindsightError:
            raise
        except Exception as e:
            raise StoreError(f"could not repair namespace {namespace!r}: {e}") from e
        if touched:
            current = self.get_many(touched, namespace=namespace)
            gone = sorted(set(touched) - {u.memory_id for u in current})
            self._reindex(namespace, upserts=current, deletes=gone)

    def _demote(self, unit: MemoryUnit) -> MemoryUnit:
        return unit.evolve(
            status="superseded", confidence=round(unit.score_confidence * self.policy.supersede_factor, 6)
        )

    # ------------------------------------------------------------------ reads
    def _records(self, col: Collection, **kwargs: Any) -> list[MemoryUnit]:
        try:
            rows = col.get(include=["documents", "metadatas"], **kwargs)
        except Exception as e:
            raise StoreError(f"chroma get failed: {e}") from e
        return [
            unit_from_record(i, d, m)
            for i, d, m in zip(rows["ids"], rows["documents"] or [], rows["metadatas"] or [], strict=True)
        ]

    def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryUnit:
        """The unit with ``memory_id`` in ``namespace`` (active, superseded or archived).

        Raises:
            MemoryNotFoundError: no such unit in that namespace.
        """
        found = self.get_many([memory_id], namespace=namespace)
        if not found:
            raise MemoryNotFoundError(f"no memory {memory_id!r} in namespace {self._ns(namespace)!r}")
        return found[0]

    def get_many(self, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
        """The units that exist among ``memory_ids``, in the given order (missing ones skipped)."""
        ids = _check_ids(memory_ids)
        ns = self._ns(namespace)
        with self._lock:
            found: dict[str, MemoryUnit] = {}
            for role in _ROLES:
                col = self._collection(ns, role, create=False)
                if col is None:
                    continue
                missing = [i for i in ids if i not in found]
                if missing:
                    found.update((u.memory_id, u) for u in self._records(col, ids=missing))
            return [found[i] for i in ids if i in found]

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
        clauses: list[dict[str, Any]] = []
        for key, value in (("status", status), ("task_type", task_type), ("kind", kind), ("source", source)):
            if value is not None:
                if not isinstance(value, str):
                    raise ConfigurationError(f"{key} filter must be a string, got {type(value).__name__}")
                if key in _ALLOWED and value not in _ALLOWED[key]:
                    raise ConfigurationError(f"{key} filter must be one of {_ALLOWED[key]}, got {value!r}")
                clauses.append({key: self.vocabulary.normalize(value) if key == "task_type" else value})
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigurationError(f"batch_size must be a positive int, got {batch_size!r}")
        where: dict[str, Any] | None = None
        if len(clauses) == 1:
            where = clauses[0]
        elif clauses:
            where = {"$and": clauses}
        roles: tuple[Role, ...] = ("archive",) if status == "archived" else ("memories",) if status else _ROLES
        for role in roles:
            offset = 0
            while True:
                with self._lock:
                    col = self._collection(ns, role, create=False)
                    if col is None:
                        break
                    page = self._records(col, where=where, limit=batch_size, offset=offset)
                yield from page
                if len(page) < batch_size:
                    break
                offset += batch_size

    def count(self, *, namespace: str | None = None, status: MemoryStatus | None = None) -> int:
        """Number of units in ``namespace`` (all statuses unless ``status`` is given)."""
        if status is not None and status not in _ALLOWED["status"]:
            raise ConfigurationError(f"status must be one of {_ALLOWED['status']} or None, got {status!r}")
        ns = self._ns(namespace)
        with self._lock:
            total = 0
            for role in _ROLES:
                col = self._collection(ns, role, create=False)
                if col is None:
                    continue
                if status is None:
                    total += col.count()
                elif (status == "archived") == (role == "archive"):
                    total += len(col.get(where={"status": status}, include=[])["ids"])
            return total

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
                nxt = self._records(col, where={"supersedes": head.memory_id}, limit=1)
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
            col = self._collection(ns, create=False)
            if col is None:
                return []
            try:
                if where is None:
                    res = col.query(query_embeddings=[list(vector)], n_results=k + max(8, k // 2), include=include)
                    hits = self._hits(res, include_embeddings)
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
        return self._hits(res, include_embeddings)

    @staticmethod
    def _hits(res: Any, include_embeddings: bool) -> list[tuple[MemoryUnit, float, list[float] | None]]:
        out: list[tuple[MemoryUnit, float, list[float] | None]] = []
        embs = res.get("embeddings")
        for j, memory_id in enumerate(res["ids"][0]):
            unit = unit_from_record(memory_id, res["documents"][0][j], res["metadatas"][0][j])
            emb = [float(x) for x in embs[0][j]] if include_embeddings and embs is not None else None
            out.append((unit, 1.0 - float(res["distances"][0][j]), emb))
        return out

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
            col = self._collection(ns, create=False)
            if col is None:
                return []
            try:
                rows = col.get(ids=ids, include=["documents", "metadatas", "embeddings"])
            except Exception as e:
                raise StoreError(f"chroma get failed: {e}") from e
        query = [float(x) for x in vector]
        found: dict[str, tuple[MemoryUnit, float]] = {}
        embeddings = rows.get("embeddings")
        for j, memory_id in enumerate(rows["ids"]):
            unit = unit_from_record(memory_id, rows["documents"][j], rows["metadatas"][j])
            if unit.status != "active" or embeddings is None:
                continue
            found[memory_id] = (unit, sum(a * float(b) for a, b in zip(query, embeddings[j], strict=True)))
        return [found[i] for i in ids if i in found]

    def lexical_search(
        self, query: str, *, k: int = 10, namespace: str | None = None, normalize: bool = False
    ) -> list[tuple[str, float]]:
        """BM25 matches among active units: ``(memory_id, score)``, best first.

        ``normalize=True`` scales scores to [0, 1] by the query's idf mass (see
        :meth:`LexicalIndex.search <langchain_hindsight._lexical.LexicalIndex.search>`).

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

    def _change_feed(self, namespace: str) -> ChangeFeed | None:
        """The namespace's change feed, or ``None`` when this store is the only writer (embedded)."""
        if self._owns_client:
            return None  # the directory lock guarantees no other writer
        feed = self._feeds.get(namespace)
        if feed is None:
            name = "hslex" + _collection_name(namespace, "memories")[2:]
            try:
                col = self.client.get_or_create_collection(
                    name,
                    metadata={"hindsight_namespace": namespace, "hindsight_role": "lexical_feed"},
                    embedding_function=None,
                )
            except Exception as e:
                raise StoreError(f"could not open the change feed of namespace {namespace!r}: {e}") from e
            feed = self._feeds[namespace] = ChangeFeed(col)
        return feed

    def _lexical_index(self, namespace: str) -> LexicalIndex:
        self._ensure_open()
        feed = self._change_feed(namespace)
        index = self._lexical.get(namespace)
        try:
            if index is not None and feed is not None:
                seen, changed = feed.poll(index.seen)
                if changed is None:
                    logger.debug("lexical index of %r is behind other writers: rebuilding", namespace)
                    index = None
                elif changed:
                    units = self.get_many(sorted(changed), namespace=namespace)
                    index.delete(changed)
                    index.upsert(u for u in units if u.status == "active")
                    index.seen = seen
                else:
                    index.seen = seen
            if index is None:
                index = LexicalIndex()
                if feed is not None:
                    index.seen = feed.snapshot()  # before reading: later writes are caught by the next poll
                index.upsert(self.iter_units(namespace=namespace, status="active"))
                self._lexical[namespace] = index
        except HindsightError:
            raise
        except Exception as e:
            raise StoreError(f"lexical index refresh failed: {e}") from e
        return index

    def _reindex(self, namespace: str, upserts: Sequence[MemoryUnit] = (), deletes: Sequence[str] = ()) -> None:
        index = self._lexical.get(namespace)
        if index is not None:  # not built yet: it will be built from Chroma when first searched
            index.delete(deletes)
            index.upsert(upserts)
        feed = self._change_feed(namespace)
        if feed is not None:
            try:
                feed.publish([*(u.memory_id for u in upserts), *deletes])
            except Exception as e:
                raise StoreError(f"could not publish the change to namespace {namespace!r}: {e}") from e

    # ------------------------------------------------------------------ writes
    def _prepare(self, unit: MemoryUnit, namespace: str | None) -> MemoryUnit:
        _check_encodable(_check_unit(unit))
        changes: dict[str, Any] = {"task_type": self.vocabulary.normalize(unit.task_type)}
        if namespace is not None:
            changes["namespace"] = self._ns(namespace)
        elif "namespace" not in unit.model_fields_set:
            # A unit that names no namespace belongs to this store's, never to a shared "default".
            changes["namespace"] = self.namespace
        confidence = unit.score_confidence
        if "confidence" not in unit.model_fields_set and unit.source in self.policy.initial:
            # A unit created without an explicit confidence gets this store's policy default.
            confidence = self.policy.initial[unit.source]
        if unit.access_count == 0 and unit.source in self.policy.ceiling:
            confidence = min(confidence, self.policy.ceiling[unit.source])  # claimed, not yet earned
        if unit.source not in _TRUSTED_SOURCES and looks_like_instruction(f"{unit.content}\n{unit.task_description}"):
            logger.warning(
                "memory %s from %s reads like an instruction: tagged %r", unit.memory_id, unit.source, SUSPICIOUS_TAG
            )
            changes["tags"] = [*unit.tags, SUSPICIOUS_TAG]
            confidence = min(confidence, self.policy.suspicious_cap)
        if confidence != unit.confidence:
            changes["confidence"] = confidence
        return unit.evolve(**changes)

    def add(self, unit: MemoryUnit, *, namespace: str | None = None, dedupe: bool = True) -> MemoryUnit:
        """Store ``unit``; return what is now stored for it.

        With ``dedupe`` (default) a near-identical active unit absorbs it (the
        merged unit is returned), and a similar unit with different content is
        superseded by it (seed §3.4). ``namespace`` overrides ``unit.namespace``.

        Raises:
            ConfigurationError: ``unit`` is not a :class:`MemoryUnit`.
            StoreError: the backend failed; nothing was changed.
        """
        return self.add_many([unit], namespace=namespace, dedupe=dedupe)[0]

    def add_many(
        self, units: Sequence[MemoryUnit], *, namespace: str | None = None, dedupe: bool = True
    ) -> list[MemoryUnit]:
        """Store many units with one batch embedding; results align with ``units``.

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
        results: list[MemoryUnit | None] = [None] * len(prepared)
        with self._lock:
            for ns, idx in by_ns.items():
                stored = self._add_namespace(ns, [prepared[i] for i in idx], [vectors[i] for i in idx], dedupe)
                for i, unit in zip(idx, stored, strict=True):
                    results[i] = unit
        return [r for r in results if r is not None]

    def _add_namespace(
        self, ns: str, units: list[MemoryUnit], vectors: list[list[float]], dedupe: bool
    ) -> list[MemoryUnit]:
        col = self._collection(ns)
        assert col is not None
        new: dict[str, tuple[MemoryUnit, list[float]]] = {}
        changed: dict[str, MemoryUnit] = {}  # existing units to rewrite (merged into / demoted)
        superseding: set[str] = set()  # new units whose predecessor is an already stored unit
        results: list[MemoryUnit] = []
        for unit, vector in zip(units, vectors, strict=True):
            if not dedupe:
                new[unit.memory_id] = (unit, vector)
                results.append(unit)
                continue
            match, similarity = self._nearest(col, unit, vector, new, changed)
            identical = match is not None and " ".join(match.content.split()) == " ".join(unit.content.split())
            duplicate = match is not None and (
                identical or (self.merge_threshold is not None and similarity >= self.merge_threshold)
            )
            conflict = (
                match is not None
                and not duplicate
                and self.conflict_threshold is not None
                and similarity > self.conflict_threshold
            )
            # Provenance: a less trusted unit never replaces a more trusted one (both stay, ranked by
            # source); a more trusted near-duplicate with other wording replaces a less trusted one.
            if match is not None and duplicate and not identical and _trust(unit.source) < _trust(match.source):
                duplicate, conflict = False, True
            if match is not None and conflict and _trust(unit.source) > _trust(match.source):
                conflict = False
            if match is not None and duplicate:
                merged = self._merge(match, unit)
                if match.memory_id in new:
                    new[match.memory_id] = (merged, new[match.memory_id][1])
                else:
                    changed[match.memory_id] = merged
                results.append(merged)
                continue
            if match is not None and conflict:
                unit = unit.evolve(supersedes=match.memory_id)
                demoted = self._demote(match)
                if match.memory_id in new:
                    new[match.memory_id] = (demoted, new[match.memory_id][1])
                else:
                    changed[match.memory_id] = demoted
                    superseding.add(unit.memory_id)
            new[unit.memory_id] = (unit, vector)
            results.append(unit)
        # Final values for units written in this batch (a later unit may have merged into an earlier one).
        results = [new[u.memory_id][0] if u.memory_id in new else changed.get(u.memory_id, u) for u in results]
        try:
            if new:
                ids = list(new)
                batch = self.client.get_max_batch_size()
                for start in range(0, len(ids), batch):
                    chunk = ids[start : start + batch]
                    col.upsert(
                        ids=chunk,
                        embeddings=[new[i][1] for i in chunk],  # type: ignore[arg-type]
                        documents=[new[i][0].content for i in chunk],
                        metadatas=[
                            unit_to_metadata(new[i][0], pending=PENDING_SUPERSEDE if i in superseding else "")
                            for i in chunk
                        ],  # type: ignore[misc]
                    )
            # Second step (merges, demotions); a crash before the marks are cleared is finished by _repair.
            if changed:
                col.update(ids=list(changed), metadatas=[unit_to_metadata(u) for u in changed.values()])  # type: ignore[misc]
            live = [i for i in superseding if i in new]
            if live:
                col.update(ids=live, metadatas=[{"pending": ""} for _ in live])
        except HindsightError:
            raise
        except Exception as e:
            raise StoreError(f"chroma write failed: {e}") from e
        self._reindex(ns, upserts=[*(u for u, _ in new.values()), *changed.values()])
        return results

    def _nearest(
        self,
        col: Collection,
        unit: MemoryUnit,
        vector: list[float],
        pending: dict[str, tuple[MemoryUnit, list[float]]],
        changed: dict[str, MemoryUnit],
    ) -> tuple[MemoryUnit | None, float]:
        """The most similar active unit in scope, among stored and pending ones."""
        clauses: list[dict[str, Any]] = [{"status": "active"}]
        if self.conflict_scope == "task_type":
            clauses += [{"task_type": unit.task_type}, {"kind": unit.kind}]
        best: MemoryUnit | None = None
        best_sim = -1.0
        if col.count():
            res = col.query(
                query_embeddings=[vector],  # type: ignore[arg-type]
                n_results=_NEIGHBOURS,
                where={"$and": clauses} if len(clauses) > 1 else clauses[0],
                include=["documents", "metadatas", "distances"],
            )
            for j, memory_id in enumerate(res["ids"][0]):
                if memory_id == unit.memory_id:
                    continue
                candidate = changed.get(memory_id) or unit_from_record(
                    memory_id,
                    res["documents"][0][j],
                    res["metadatas"][0][j],  # type: ignore[index]
                )
                sim = 1.0 - float(res["distances"][0][j])  # type: ignore[index]
                if candidate.status == "active" and sim > best_sim:
                    best, best_sim = candidate, sim
        for other, other_vec in pending.values():
            if other.status != "active" or other.memory_id == unit.memory_id:
                continue
            if self.conflict_scope == "task_type" and (other.task_type, other.kind) != (unit.task_type, unit.kind):
                continue
            sim = sum(a * b for a, b in zip(vector, other_vec, strict=True))
            if sim > best_sim:
                best, best_sim = other, sim
        return best, best_sim

    def _merge(self, existing: MemoryUnit, incoming: MemoryUnit) -> MemoryUnit:
        if _trust(incoming.source) > _trust(existing.source):
            # A less trusted echo corroborates nothing: record it, change nothing else.
            return existing.evolve(
                merged_from=list(dict.fromkeys([*existing.merged_from, incoming.memory_id, *incoming.merged_from]))
            )
        return existing.evolve(
            confidence=max(existing.score_confidence, incoming.score_confidence),
            access_count=existing.access_count + incoming.access_count,
            tags=[*existing.tags, *incoming.tags],
            last_accessed_at=max(existing.last_accessed_at, incoming.last_accessed_at),
            merged_from=list(dict.fromkeys([*existing.merged_from, incoming.memory_id, *incoming.merged_from])),
            # Provenance: a user's word outranks an inference; never lower it.
            source=min((existing.source, incoming.source), key=list(DEFAULT_INITIAL_CONFIDENCE).index),
        )

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
            source = changes.get("source", current.source)
            if source in _TRUST_ORDER and _trust(source) < _trust(current.source):
                raise ConfigurationError(
                    f"source cannot be raised from {current.source!r} to {source!r}: provenance is fixed when a "
                    "unit is added (add a new unit with the trusted source instead)"
                )
            if "task_type" in changes:
                if not isinstance(changes["task_type"], str):
                    raise ConfigurationError(f"task_type must be a string, got {type(changes['task_type']).__name__}")
                changes["task_type"] = self.vocabulary.normalize(changes["task_type"])
            return self.update_many([current.evolve(**changes)], namespace=ns)[0]

    def update_many(self, units: Sequence[MemoryUnit], *, namespace: str | None = None) -> list[MemoryUnit]:
        """Write new versions of existing units in one batch (re-embedding only changed content).

        Units keep their collection; use :meth:`archive`/:meth:`restore` to change
        between active/superseded and archived.

        Raises:
            MemoryNotFoundError: one of the units does not exist (nothing is written).
        """
        if isinstance(units, MemoryUnit) or not isinstance(units, Sequence):
            raise ConfigurationError("units must be a sequence of MemoryUnit")
        units = [_check_unit(u) for u in units]
        ns = self._ns(namespace)
        if any(u.namespace != ns for u in units):
            raise ConfigurationError(f"every unit must belong to namespace {ns!r}")
        if not units:
            return []
        with self._lock:
            written: list[MemoryUnit] = []
            for role in _ROLES:
                col = self._collection(ns, role, create=False)
                if col is None:
                    continue
                rows = col.get(ids=[u.memory_id for u in units], include=["documents"])
                docs = dict(zip(rows["ids"], rows["documents"] or [], strict=True))
                batch = [u for u in units if u.memory_id in docs]
                if not batch:
                    continue
                if role == "archive" and any(u.status != "archived" for u in batch):
                    raise ConfigurationError("use restore() to bring an archived unit back")
                if role == "memories" and any(u.status == "archived" for u in batch):
                    raise ConfigurationError("use archive() to archive a unit")
                reembed = [u for u in batch if u.content != docs[u.memory_id]]
                try:
                    if reembed:
                        col.update(
                            ids=[u.memory_id for u in reembed],
                            embeddings=self.embeddings.embed_documents([u.content for u in reembed]),  # type: ignore[arg-type]
                            documents=[u.content for u in reembed],
                            metadatas=[unit_to_metadata(u) for u in reembed],  # type: ignore[misc]
                        )
                    same = [u for u in batch if u.content == docs[u.memory_id]]
                    if same:
                        col.update(ids=[u.memory_id for u in same], metadatas=[unit_to_metadata(u) for u in same])  # type: ignore[misc]
                except Exception as e:
                    raise StoreError(f"chroma update failed: {e}") from e
                if role == "memories":
                    self._reindex(ns, upserts=batch)
                written.extend(batch)
            missing = {u.memory_id for u in units} - {u.memory_id for u in written}
            if missing:
                raise MemoryNotFoundError(f"no memory {sorted(missing)[0]!r} in namespace {ns!r}")
            order = {u.memory_id: i for i, u in enumerate(units)}
            return sorted(written, key=lambda u: order[u.memory_id])

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

    def share(
        self, memory_ids: Sequence[str] | str, *, to_namespace: str, namespace: str | None = None
    ) -> list[MemoryUnit]:
        """Copy units into another namespace: the one explicit way a memory crosses namespaces.

        Namespaces never see each other's units; agents share experience by
        copying chosen units into a namespace they all read (e.g. ``"shared"``).
        The copy keeps id, content, provenance and counters, is active, and goes
        through the target's dedup (a near-duplicate there absorbs it). It is
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
            return self.add_many(copies, namespace=dst) if copies else []

    def archive(self, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
        """Move units to the namespace's cold collection (excluded from recall, restorable)."""
        return self._move(_check_ids(memory_ids), self._ns(namespace), "memories", "archive")

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
            rows = src.get(ids=ids, include=["documents", "metadatas", "embeddings"])
            if not rows["ids"]:
                return []
            status: MemoryStatus = "archived" if dst_role == "archive" else "active"
            moved = [
                unit_from_record(i, d, m).evolve(status=status)
                for i, d, m in zip(rows["ids"], rows["documents"] or [], rows["metadatas"] or [], strict=True)
            ]
            dst = self._collection(ns, dst_role)
            assert dst is not None
            try:  # copy first, delete second: _repair completes an interrupted move
                dst.upsert(
                    ids=[u.memory_id for u in moved],
                    embeddings=rows["embeddings"],  # type: ignore[arg-type]
                    documents=[u.content for u in moved],
                    metadatas=[unit_to_metadata(u, pending=PENDING_MOVE) for u in moved],  # type: ignore[misc]
                )
                src.delete(ids=[u.memory_id for u in moved])
                dst.update(ids=[u.memory_id for u in moved], metadatas=[{"pending": ""} for _ in moved])
            except Exception as e:
                raise StoreError(f"chroma move failed: {e}") from e
            if dst_role == "archive":
                self._reindex(ns, deletes=[u.memory_id for u in moved])
            else:
                self._reindex(ns, upserts=moved)
            return moved

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
            raise ConfigurationError(_NO_SCRUB)
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
            return deleted

    delete = forget

    def _drop_namespace(self, ns: str) -> int:
        """Drop every collection that belongs to ``ns`` (any role, leftovers included)."""
        deleted = 0
        for col in self.client.list_collections():
            meta = col.metadata or {}
            if meta.get("hindsight_namespace") != ns or "hindsight_role" not in meta:
                continue
            if meta["hindsight_role"] in _ROLES and not col.name.endswith(_scrub.REBUILD_SUFFIX):
                deleted += col.count()
            self.client.delete_collection(col.name)
        for key in [k for k in self._collections if k[0] == ns]:
            del self._collections[key]
        self._lexical.pop(ns, None)
        self.__dict__.get("_feeds", {}).pop(ns, None)
        self._repaired.discard(ns)
        return deleted

    def _delete_ids(self, ns: str, ids: list[str]) -> tuple[int, list[str]]:
        """Delete ``ids`` and every reference to them; return (count, names of collections touched)."""
        deleted = 0
        touched: list[str] = []
        gone = set(ids)
        for role in _ROLES:
            col = self._collection(ns, role, create=False)
            if col is None:
                continue
            present = col.get(ids=ids, include=[])["ids"]
            if present:
                col.delete(ids=present)
                deleted += len(present)
                touched.append(col.name)
            # References: a successor's ``supersedes`` and a merge's ``merged_from`` name the id.
            referring = self._records(col, where={"supersedes": {"$in": ids}})
            referring += [
                u for u in self._records(col, where={"merged_from": {"$ne": "[]"}}) if gone & set(u.merged_from)
            ]
            cleaned = {
                u.memory_id: u.evolve(
                    supersedes=None if u.supersedes in gone else u.supersedes,
                    merged_from=[m for m in u.merged_from if m not in gone],
                )
                for u in referring
            }
            if cleaned:
                col.update(ids=list(cleaned), metadatas=[unit_to_metadata(u) for u in cleaned.values()])  # type: ignore[misc]
                if col.name not in touched:
                    touched.append(col.name)
                if role == "memories":
                    self._reindex(ns, upserts=list(cleaned.values()))
        self._reindex(ns, deletes=ids)
        journal = self._collection(ns, "journal", create=False)
        if journal is not None:  # the run journal names the ids it served and produced
            from langchain_hindsight.journal import RunJournal

            if RunJournal(self, namespace=ns).scrub(ids, namespace=ns):
                touched.append(journal.name)
        return deleted, touched

    # ------------------------------------------------------------------ physical erasure
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
            raise ConfigurationError(_NO_SCRUB)
        with self._lock:
            self._ensure_open()
            self._scrub(None)

    def _scrub(self, rebuild: list[str] | None) -> None:
        """Rebuild ``rebuild`` (names; ``None``: every hindsight collection), then erase files."""
        assert self.persist_directory is not None
        marker = self.persist_directory / _scrub.SCRUB_MARKER
        try:
            with marker.open("w") as fh:  # durable before any step: a crash resumes on reopen
                os.fsync(fh.fileno())
            if rebuild is None:
                rebuild = [c.name for c in self.client.list_collections() if "hindsight_role" in (c.metadata or {})]
            for name in rebuild:
                _scrub.rebuild_collection(self.client, self.client.get_collection(name, embedding_function=None))
            self._collections.clear()
            self.client.close()
            try:
                removed = _scrub.erase_files(self.persist_directory)
            finally:
                self.client = self._open_client()
            logger.debug(
                "scrubbed %s: rebuilt %d collection(s), removed %d segment dir(s)",
                marker.parent,
                len(rebuild),
                len(removed),
            )
            marker.unlink()
        except HindsightError:
            raise
        except Exception as e:
            raise StoreError(f"scrub of {self.persist_directory} failed: {e}") from e

    def _finish_interrupted_scrub(self) -> None:
        assert self.persist_directory is not None
        try:
            interrupted = _scrub.recover_rebuilds(self.client)
        except Exception as e:
            raise StoreError(f"could not recover an interrupted scrub: {e}") from e
        if interrupted or (self.persist_directory / _scrub.SCRUB_MARKER).exists():
            logger.warning("finishing an interrupted scrub of %s", self.persist_directory)
            self._scrub(None)
