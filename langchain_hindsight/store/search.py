"""The search methods of ``MemoryStore``: the dense arm, the lexical (BM25) arm, and both at once.

Recall reads where the store's :attr:`~StoreCore.read_path`, chosen when it opened, says: a database that
answers both arms itself (Postgres) is asked in one statement per recall; any other backend through the
store's replica (the in-process lexical index and, up to a size, the recall mirror).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

from langchain_hindsight._text import clean_text
from langchain_hindsight.errors import ConfigurationError, StoreError
from langchain_hindsight.store._checks import check_k
from langchain_hindsight.store._codec import unit_from_record
from langchain_hindsight.store._collections import query_hits
from langchain_hindsight.store._core import StoreCore, backend_errors, check_ids
from langchain_hindsight.store.replica.records import Mirror, replica_hybrid
from langchain_hindsight.store.replica.units import (
    cached_candidates,
    cached_hits,
    cached_similarities,
    nearest_wanted,
    similarities,
)
from langchain_hindsight.types import MemoryUnit

__all__ = ["hybrid_search", "lexical_search", "search", "search_by_vector", "similarity_by_ids"]

logger = logging.getLogger(__name__)


def _as_list(vector: Any) -> list[float] | None:
    return None if vector is None else [float(x) for x in vector]


@backend_errors
def search(
    store: StoreCore,
    query: str,
    *,
    k: int = 10,
    namespace: str | None = None,
    include_embeddings: bool = False,
) -> list[tuple[MemoryUnit, float, list[float] | None]]:
    """The body of :meth:`MemoryStore.search` (see there)."""
    _check_query(query, k)
    vector = store.embeddings.embed_query(clean_text(query))
    return search_by_vector(store, vector, k=k, namespace=namespace, include_embeddings=include_embeddings)


@backend_errors
def search_by_vector(
    store: StoreCore,
    vector: Sequence[float],
    *,
    k: int = 10,
    namespace: str | None = None,
    include_embeddings: bool = False,
    where: dict[str, Any] | None = None,
) -> list[tuple[MemoryUnit, float, list[float] | None]]:
    """The body of :meth:`MemoryStore.search_by_vector` (see there)."""
    check_k(k)
    ns = store._ns(namespace)
    with store._lock:
        found = _nearest(store, vector, k, ns, include_embeddings, where)
        if not found and store._replaced_elsewhere(ns):
            found = _nearest(store, vector, k, ns, include_embeddings, where)
    return found


def _nearest(
    store: StoreCore,
    vector: Sequence[float],
    k: int,
    ns: str,
    include_embeddings: bool,
    where: dict[str, Any] | None,
) -> list[tuple[MemoryUnit, float, list[float] | None]]:
    """:func:`search_by_vector` from the recall mirror, else the backend's index (under the store's lock)."""
    include: list[Any] = ["documents", "metadatas", "distances"]
    if include_embeddings:
        include.append("embeddings")
    with store._lock:
        mirror = store._replica.recall_mirror(ns) if where is None else None
        if mirror is not None:
            mirror.check_query(vector)
            nearest = mirror.nearest(vector, k)
            vectors = [_as_list(mirror.vector(i)) if include_embeddings else None for i, _ in nearest]
            return [
                (_mirrored_unit(store, ns, mirror, i), sim, vec) for (i, sim), vec in zip(nearest, vectors, strict=True)
            ]
        col = store._vectors(store._collection(ns, create=False))
        if col is None:
            return []
        if where is None and store._replica.units.size and not include_embeddings:  # cached units
            res = col.query(query_embeddings=[list(vector)], n_results=nearest_wanted(k), include=["distances"])
            hits: list[tuple[MemoryUnit, float, list[float] | None]] = list(
                cached_hits(store._replica.units, ns, col, res)
            )
            active = [h for h in hits if h[0].status == "active"]
            if len(active) >= k or len(hits) < nearest_wanted(k):
                return active[:k]
        elif where is None:
            res = col.query(query_embeddings=[list(vector)], n_results=nearest_wanted(k), include=include)
            hits = query_hits(res, include_embeddings)
            active = [h for h in hits if h[0].status == "active"]
            if len(active) >= k or len(hits) < nearest_wanted(k):
                return active[:k]
        clause: dict[str, Any] = {"status": "active"}
        if where is not None:
            clause = {"$and": [clause, where]}
        res = col.query(query_embeddings=[list(vector)], n_results=k, where=clause, include=include)
    return query_hits(res, include_embeddings)


@backend_errors
def similarity_by_ids(
    store: StoreCore,
    vector: Sequence[float],
    memory_ids: Sequence[str],
    *,
    namespace: str | None = None,
) -> list[tuple[MemoryUnit, float]]:
    """The body of :meth:`MemoryStore.similarity_by_ids` (see there)."""
    ids = check_ids(memory_ids) if memory_ids else []
    if not ids:
        return []
    ns = store._ns(namespace)
    with store._lock:
        mirror = store._replica.recall_mirror(ns)
        if mirror is not None:
            mirror.check_query(vector)
            sims = mirror.similarities(vector, ids)
            return [(_mirrored_unit(store, ns, mirror, i), sims[i]) for i in ids if i in sims]
        col = store._vectors(store._collection(ns, create=False))
        if col is None:
            return []
        if store._replica.units.size:
            return cached_similarities(store._replica.units, ns, col, vector, ids)
        rows = col.get(ids=ids, include=["documents", "metadatas", "embeddings"])
    return similarities(rows, vector, ids)


@backend_errors
def hybrid_search(
    store: StoreCore,
    query: str,
    vector: Sequence[float],
    *,
    k: int = 10,
    namespace: str | None = None,
    normalize: bool = False,
) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]:
    """The body of :meth:`MemoryStore.hybrid_search` (see there), read where :attr:`StoreCore.read_path` says."""
    ns = store._ns(namespace)
    with store._lock:
        if store.read_path == "database":  # both arms and the candidates' records: one statement
            answered = _database_hybrid(store, ns, query, vector, k, normalize)
            if answered == ({}, {}) and store._replaced_elsewhere(ns):
                answered = _database_hybrid(store, ns, query, vector, k, normalize)
            if answered is not None:
                return answered
            return _arm_by_arm(store, ns, query, vector, k, normalize)
        mirror = store._replica.recall_mirror(ns)  # first: a lexical index built now is read from it
        if mirror is not None:  # both arms from memory (StoreSnapshot's path too)
            _check_query(query, k)
            index = store._replica.lexical_index(ns)
            unit_of = functools.partial(_mirrored_unit, store, ns, mirror)
            return replica_hybrid(index, mirror, query, vector, k=k, normalize=normalize, unit_of=unit_of)
        lexical = dict(lexical_search(store, query, k=k, namespace=ns, normalize=normalize))
        col = store._collection(ns, create=False)
        if store._replica.units.size and col is not None:
            res = col.query(query_embeddings=[list(vector)], n_results=nearest_wanted(k), include=["distances"])
            found, enough = cached_candidates(store._replica.units, ns, col, res, vector, k, list(lexical))
            if enough:
                return found, lexical
    return _arm_by_arm(store, ns, query, vector, k, normalize, lexical=lexical)


def _arm_by_arm(
    store: StoreCore,
    ns: str,
    query: str,
    vector: Sequence[float],
    k: int,
    normalize: bool,
    *,
    lexical: dict[str, float] | None = None,
) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]:
    """:func:`hybrid_search` asked arm by arm: the dense arm's ``k`` best and the similarity of each lexical match
    it did not return. ``lexical``: the lexical arm as the replica scored it; ``None``: the database scores it.
    """  # noqa: D205
    if lexical is None:
        lexical = dict(lexical_search(store, query, k=k, namespace=ns, normalize=normalize))
    found = search_by_vector(store, vector, k=k, namespace=ns)
    dense = {u.memory_id: (u, sim) for u, sim, _ in found}
    missing = [i for i in lexical if i not in dense]
    if missing:
        sims = similarity_by_ids(store, vector, missing, namespace=ns)
        dense.update((u.memory_id, (u, sim)) for u, sim in sims)
    return dense, lexical


def _database_hybrid(
    store: StoreCore, ns: str, query: str, vector: Sequence[float], k: int, normalize: bool
) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]] | None:
    """:func:`hybrid_search` from the backend's :meth:`~Records.hybrid_query`, with the same candidates as the arms
    asked one by one; ``None`` when the backend does not answer, or when too few of the nearest records are active
    (the dense arm must then ask again with a filter, as :func:`search_by_vector` does).
    """  # noqa: D205
    col = store._vectors(store._collection(ns, create=False))
    if col is None:
        return {}, {}
    nearest = nearest_wanted(k)
    found = col.hybrid_query(query, vector, k=k, nearest=nearest, normalize=normalize)
    if found is None:
        return None
    active = [(i, d) for i, d in found.nearest if found.records[i][1].get("status") == "active"]
    if len(active) < k and len(found.nearest) >= nearest:
        return None

    def unit_of(memory_id: str) -> MemoryUnit:
        return unit_from_record(memory_id, found.records[memory_id][0], found.records[memory_id][1])

    candidates = {i: (unit_of(i), 1.0 - d) for i, d in active[:k]}
    for i, _ in found.lexical:  # lexical matches the dense arm did not return: their similarity, as similarity_by_ids
        if i not in candidates and i in found.records and found.records[i][1].get("status") == "active":
            candidates[i] = (unit_of(i), found.records[i][2])
    return candidates, dict(found.lexical)


def _mirrored_unit(store: StoreCore, namespace: str, mirror: Mirror, memory_id: str) -> MemoryUnit:
    """A mirrored unit, from the unit cache or rebuilt from its mirrored record (then cached)."""
    entry = store._replica.units.get(namespace, memory_id)
    if entry is not None:
        return entry[0]
    unit = mirror.unit(memory_id)
    if unit is None:  # callers pass ids the mirror just returned
        raise StoreError(f"memory {memory_id!r} is not in the recall mirror of {namespace!r}")
    store._replica.units.put(unit)
    return unit


def _check_query(query: object, k: object) -> None:
    """Refuse a query that is not a string and a ``k`` that is not a positive int (what the lexical arm checks)."""
    if not isinstance(query, str):
        raise ConfigurationError(f"query must be a string, got {type(query).__name__}")
    check_k(k)


@backend_errors
def lexical_search(
    store: StoreCore,
    query: str,
    *,
    k: int = 10,
    namespace: str | None = None,
    normalize: bool = False,
) -> list[tuple[str, float]]:
    """The body of :meth:`MemoryStore.lexical_search` (see there): scored by the database on its read path,
    else by the replica's lexical index.
    """  # noqa: D205
    _check_query(query, k)
    ns = store._ns(namespace)
    with store._lock:
        if store.read_path == "database":
            col = store._collection(ns, create=False)
            found = col.lexical_search(query, k, normalize=normalize) if col is not None else []
            if not found and store._replaced_elsewhere(ns):
                col = store._collection(ns, create=False)
                found = col.lexical_search(query, k, normalize=normalize) if col is not None else []
            if found is not None:
                return found
        return store._replica.lexical_index(ns).search(query, k, normalize=normalize)
