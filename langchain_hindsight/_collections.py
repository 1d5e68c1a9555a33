"""Chroma collections of a namespace: naming, opening, listing, reading records.

Each namespace has one collection per role (memories, archive, journal), named
from the namespace and tagged with it in the collection metadata; opening checks
the tag, so a name collision can never hand one namespace another's units.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from langchain_hindsight._codec import unit_from_record
from langchain_hindsight._lexical import ChangeFeed
from langchain_hindsight.errors import ConfigurationError, HindsightError, StoreError, StoreLockedError
from langchain_hindsight.types import MemoryKind, MemorySource, MemoryStatus, MemoryUnit

if TYPE_CHECKING:
    from filelock import BaseFileLock

__all__ = [
    "ALLOWED",
    "ALL_ROLES",
    "ROLES",
    "Collection",
    "Role",
    "acquire_directory",
    "check_namespace",
    "collection_name",
    "filter_where",
    "namespaces",
    "open_change_feed",
    "open_client",
    "open_collection",
    "query_hits",
    "records",
]

# chromadb's type hints are narrower than what it accepts (plain float lists, nested where
# clauses); collections are handled as ``Any`` and every call is covered by tests.
Collection = Any

Role = Literal["memories", "archive", "journal"]
ROLES: tuple[Role, ...] = ("memories", "archive")
"""Collections that hold memory units (the journal holds run records, see ``journal.py``)."""
ALL_ROLES: tuple[Role, ...] = ("memories", "archive", "journal")
_PREFIXES: dict[str, str] = {"memories": "hs", "archive": "hsarc", "journal": "hsjrn"}
ALLOWED: dict[str, tuple[str, ...]] = {
    "status": get_args(MemoryStatus),
    "kind": get_args(MemoryKind),
    "source": get_args(MemorySource),
}
_LOCK_FILE = ".hindsight.lock"


def collection_name(namespace: str, role: Role) -> str:
    """The Chroma collection name of ``namespace``'s ``role`` collection (slug + digest, collision-safe)."""
    slug = re.sub(r"[^a-z0-9]+", "-", namespace.lower()).strip("-")[:32] or "ns"
    digest = hashlib.sha256(namespace.encode()).hexdigest()[:12]
    return f"{_PREFIXES[role]}-{slug}-{digest}"


def check_namespace(namespace: object) -> str:
    """``namespace`` if it is a valid namespace name, else a :class:`ConfigurationError`."""
    if not isinstance(namespace, str) or not namespace or namespace != namespace.strip() or len(namespace) > 256:
        raise ConfigurationError(f"namespace must be a non-empty string of at most 256 characters, got {namespace!r}")
    if any("\ud800" <= c <= "\udfff" for c in namespace):
        raise ConfigurationError(f"namespace must be valid Unicode text (no lone surrogates), got {namespace!r}")
    return namespace


def acquire_directory(path: Path) -> BaseFileLock:
    """Create ``path`` and take its single-writer lock (never waits)."""
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
    return lock


def open_client(path: Path | None) -> Any:
    """An embedded Chroma client on ``path`` (telemetry off)."""
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def open_collection(client: Any, namespace: str, role: Role, *, create: bool) -> Collection | None:
    """``namespace``'s ``role`` collection; ``None`` if it does not exist and ``create`` is false."""
    name = collection_name(namespace, role)
    try:
        if create:
            col = client.get_or_create_collection(
                name,
                metadata={"hindsight_namespace": namespace, "hindsight_role": role},
                configuration={"hnsw": {"space": "cosine"}},
                embedding_function=None,
            )
        else:
            try:
                col = client.get_collection(name, embedding_function=None)
            except Exception:  # noqa: BLE001 - chroma raises several types for "missing"
                return None
    except HindsightError:
        raise
    except Exception as e:
        raise StoreError(f"could not open collection for namespace {namespace!r}: {e}") from e
    if (col.metadata or {}).get("hindsight_namespace") != namespace:  # isolation: never trust a name alone
        raise StoreError(f"collection {name!r} does not belong to namespace {namespace!r}")
    return col


def open_change_feed(client: Any, namespace: str) -> ChangeFeed:
    """The lexical change feed of ``namespace`` on a shared server (see ``_lexical.ChangeFeed``)."""
    name = "hslex" + collection_name(namespace, "memories")[2:]
    try:
        col = client.get_or_create_collection(
            name,
            metadata={"hindsight_namespace": namespace, "hindsight_role": "lexical_feed"},
            embedding_function=None,
        )
    except Exception as e:
        raise StoreError(f"could not open the change feed of namespace {namespace!r}: {e}") from e
    return ChangeFeed(col)


def namespaces(client: Any) -> list[str]:
    """Every namespace that has a collection on ``client``, sorted."""
    found = set()
    for col in client.list_collections():
        meta = col.metadata or {}
        if meta.get("hindsight_role") in ALL_ROLES and isinstance(meta.get("hindsight_namespace"), str):
            found.add(meta["hindsight_namespace"])
    return sorted(found)


def records(col: Collection, **kwargs: Any) -> list[MemoryUnit]:
    """The units a ``col.get(**kwargs)`` returns."""
    try:
        rows = col.get(include=["documents", "metadatas"], **kwargs)
    except Exception as e:
        raise StoreError(f"chroma get failed: {e}") from e
    return [
        unit_from_record(i, d, m)
        for i, d, m in zip(rows["ids"], rows["documents"] or [], rows["metadatas"] or [], strict=True)
    ]


def query_hits(res: Any, include_embeddings: bool) -> list[tuple[MemoryUnit, float, list[float] | None]]:
    """``(unit, cosine_similarity, embedding)`` for each result of a single-vector ``col.query``."""
    out: list[tuple[MemoryUnit, float, list[float] | None]] = []
    embs = res.get("embeddings")
    for j, memory_id in enumerate(res["ids"][0]):
        unit = unit_from_record(memory_id, res["documents"][0][j], res["metadatas"][0][j])
        emb = [float(x) for x in embs[0][j]] if include_embeddings and embs is not None else None
        out.append((unit, 1.0 - float(res["distances"][0][j]), emb))
    return out


def filter_where(filters: dict[str, object], normalize_task_type: Callable[[str], str]) -> dict[str, Any] | None:
    """The Chroma ``where`` clause for the given field filters (``None`` values are ignored)."""
    clauses: list[dict[str, Any]] = []
    for key, value in filters.items():
        if value is not None:
            if not isinstance(value, str):
                raise ConfigurationError(f"{key} filter must be a string, got {type(value).__name__}")
            if key in ALLOWED and value not in ALLOWED[key]:
                raise ConfigurationError(f"{key} filter must be one of {ALLOWED[key]}, got {value!r}")
            clauses.append({key: normalize_task_type(value) if key == "task_type" else value})
    if len(clauses) == 1:
        return clauses[0]
    if clauses:
        return {"$and": clauses}
    return None
