"""The search methods of ``MemoryStore``: the dense arm, the lexical (BM25) arm, and both at once.

Recall reads through the store's :attr:`~StoreCore.reader`, chosen once when it opened (one path per store,
``StoreCore.read_path``): :class:`DatabaseReader` for a database that answers both arms itself (Postgres: one
statement per recall), the in-process replica (``replica.Replica``: lexical index + recall mirror) for every
other backend. Only a filtered dense search (``where``) asks the backend's index directly, on every backend.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from langchain_hindsight._checks import check_query
from langchain_hindsight._text import clean_text
from langchain_hindsight.store._checks import check_k, check_vector
from langchain_hindsight.store._codec import unit_from_record
from langchain_hindsight.store._collections import query_hits
from langchain_hindsight.store._core import StoreCore, backend_errors, check_ids
from langchain_hindsight.types import MemoryUnit

__all__ = [
    "DatabaseReader",
    "hybrid_search",
    "lexical_search",
    "nearest_wanted",
    "search",
    "search_by_vector",
    "similarity_by_ids",
]

logger = logging.getLogger(__name__)


@backend_errors
def search(
    store: StoreCore,
    query: str,
    *,
    k: int = 10,
    namespace: str | None = None,
    include_embeddings: bool = False,
) -> list[tuple[MemoryUnit, float, list[float] | None]]:
    """Dense nearest neighbours among *active* units: ``(unit, cosine_similarity, embedding)``.

    Raises:
        ConfigurationError: ``query`` is blank (it has no words to match).
    """
    check_query("MemoryStore.search", query)
    check_k(k)
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
    """Like :meth:`search` with a precomputed query vector.

    Without ``where``, the store's reader answers (the in-process replica, or
    a database queried for ``k`` plus a margin of which the inactive are
    dropped); a ``where`` filter is a filtered query of the backend's index.
    """
    check_vector("MemoryStore.search_by_vector", vector)
    check_k(k)
    ns = store.namespace_or_default(namespace)
    with store.lock:
        if where is None:
            return store.reader.nearest(ns, vector, k, include_embeddings)
        return _filtered(store, ns, vector, k, include_embeddings, {"$and": [{"status": "active"}, where]})


def _filtered(
    store: StoreCore, ns: str, vector: Sequence[float], k: int, include_embeddings: bool, where: dict[str, Any]
) -> list[tuple[MemoryUnit, float, list[float] | None]]:
    """The ``k`` records of ``ns`` nearest ``vector`` among those ``where`` selects, from the backend's index."""
    col = store.memories(ns)
    if col is None:
        return []
    include: list[Any] = ["documents", "metadatas", "distances", *(["embeddings"] if include_embeddings else [])]
    res = col.query(query_embeddings=[list(vector)], n_results=k, where=where, include=include)
    return query_hits(res, include_embeddings)


@backend_errors
def similarity_by_ids(
    store: StoreCore,
    vector: Sequence[float],
    memory_ids: Sequence[str],
    *,
    namespace: str | None = None,
) -> list[tuple[MemoryUnit, float]]:
    """The *active* units among ``memory_ids`` with their cosine similarity to ``vector``.

    Used by hybrid recall for candidates found only by the lexical arm, so
    every candidate is scored on the same dense similarity. Order follows
    ``memory_ids``; missing or inactive ids are skipped.
    """
    check_vector("MemoryStore.similarity_by_ids", vector)
    ids = check_ids(memory_ids) if memory_ids else []
    if not ids:
        return []
    ns = store.namespace_or_default(namespace)
    with store.lock:
        return store.reader.similarities(ns, vector, ids)


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
    """Both arms of hybrid recall at once: the dense and lexical candidates, each with its cosine similarity.

    Equivalent to :meth:`search_by_vector` (``k``), :meth:`lexical_search`
    (``k``) and :meth:`similarity_by_ids` for the lexical matches the dense
    arm did not return, read where the store reads (one path per store): a
    database in one statement, any other backend from the in-process replica.

    Args:
        store: The store (``self``: this is :meth:`MemoryStore.hybrid_search`).
        query: The query text (lexical arm).
        vector: Its embedding (dense arm).
        k: Depth of each arm.
        namespace: Namespace to search (default: the store's).
        normalize: Lexical scores as a share of the query's idf mass (see :meth:`lexical_search`).

    Returns:
        ``(candidates, lexical)``: every candidate's ``(unit, cosine_similarity)``
        by id, and the lexical arm's BM25 score by id.

    Raises:
        ConfigurationError: ``query`` is blank (it has no words to match).
    """
    check_query("MemoryStore.hybrid_search", query)
    check_vector("MemoryStore.hybrid_search", vector)
    check_k(k)
    ns = store.namespace_or_default(namespace)
    with store.lock:
        return store.reader.hybrid(ns, query, vector, k, normalize)


@backend_errors
def lexical_search(
    store: StoreCore,
    query: str,
    *,
    k: int = 10,
    namespace: str | None = None,
    normalize: bool = False,
) -> list[tuple[str, float]]:
    """BM25 matches among active units: ``(memory_id, score)``, best first.

    ``normalize=True`` scales scores to [0, 1] by the query's idf mass (see
    :meth:`LexicalIndex.search <langchain_hindsight.store.replica.lexical.LexicalIndex.search>`).

    The index is built from the backend on first use and kept in step with this
    store's writes; with a shared client (``HttpClient``), other stores'
    writes are picked up through the namespace's change feed on every call.

    Raises:
        ConfigurationError: ``query`` is blank (it has no words to match).
    """
    check_query("MemoryStore.lexical_search", query)
    check_k(k)
    ns = store.namespace_or_default(namespace)
    with store.lock:
        return store.reader.lexical(ns, query, k, normalize)


def nearest_wanted(k: int) -> int:
    """How many nearest records a dense query asks for to serve ``k`` active ones.

    Some of the nearest may be archived or superseded, so the query asks for a few
    more (at least 8, or half of ``k``); a caller that still finds fewer than ``k``
    active among that many asks again with a status filter.
    """
    return k + max(8, k // 2)


class DatabaseReader:
    """The read path of a database that answers both arms itself (Postgres): nothing is held in process.

    A hybrid recall is one statement (``Records.hybrid_query``). A read that answers nothing checks once
    whether another process dropped or replaced the namespace's collection (``StoreCore.replaced_elsewhere``)
    and asks again.

    Args:
        store: The store it reads for (its collections, through public methods only).
    """

    def __init__(self, store: StoreCore) -> None:
        self.store = store

    def hybrid(
        self, namespace: str, query: str, vector: Sequence[float], k: int, normalize: bool
    ) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]:
        """:meth:`Reader.hybrid`: one statement, else (too few of the nearest active) arm by arm."""
        answered = self._hybrid(namespace, query, vector, k, normalize)
        if answered == ({}, {}) and self.store.replaced_elsewhere(namespace):
            answered = self._hybrid(namespace, query, vector, k, normalize)
        if answered is not None:
            return answered
        lexical = dict(self.lexical(namespace, query, k, normalize))
        dense = {u.memory_id: (u, sim) for u, sim, _ in self.nearest(namespace, vector, k, False)}
        missing = [i for i in lexical if i not in dense]
        dense.update((u.memory_id, (u, sim)) for u, sim in self.similarities(namespace, vector, missing))
        return dense, lexical

    def _hybrid(
        self, namespace: str, query: str, vector: Sequence[float], k: int, normalize: bool
    ) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]] | None:
        """The backend's :meth:`~Records.hybrid_query`, with the same candidates as the arms asked one by one;
        ``None`` when too few of the nearest records are active (the dense arm must then ask with a filter).
        """  # noqa: D205
        col = self.store.memories(namespace)
        if col is None:
            return {}, {}
        nearest = nearest_wanted(k)
        found = col.hybrid_query(query, vector, k=k, nearest=nearest, normalize=normalize)
        active = [(i, d) for i, d in found.nearest if found.records[i][1].get("status") == "active"]
        if len(active) < k and len(found.nearest) >= nearest:
            return None

        def unit_of(memory_id: str) -> MemoryUnit:
            return unit_from_record(memory_id, found.records[memory_id][0], found.records[memory_id][1])

        candidates = {i: (unit_of(i), 1.0 - d) for i, d in active[:k]}
        for i, _ in found.lexical:  # lexical matches the dense arm did not return: their similarity
            if i not in candidates and i in found.records and found.records[i][1].get("status") == "active":
                candidates[i] = (unit_of(i), found.records[i][2])
        return candidates, dict(found.lexical)

    def nearest(
        self, namespace: str, vector: Sequence[float], k: int, include_embeddings: bool
    ) -> list[tuple[MemoryUnit, float, list[float] | None]]:
        """:meth:`Reader.nearest`: the index queried unfiltered for ``k`` plus a margin, inactive records dropped;
        with the status filter only when too few active ones remain.
        """  # noqa: D205
        found = self._nearest(namespace, vector, k, include_embeddings)
        if not found and self.store.replaced_elsewhere(namespace):
            found = self._nearest(namespace, vector, k, include_embeddings)
        return found

    def _nearest(
        self, namespace: str, vector: Sequence[float], k: int, include_embeddings: bool
    ) -> list[tuple[MemoryUnit, float, list[float] | None]]:
        col = self.store.memories(namespace)
        if col is None:
            return []
        include: list[Any] = ["documents", "metadatas", "distances", *(["embeddings"] if include_embeddings else [])]
        res = col.query(query_embeddings=[list(vector)], n_results=nearest_wanted(k), include=include)
        hits = query_hits(res, include_embeddings)
        active = [h for h in hits if h[0].status == "active"]
        if len(active) >= k or len(hits) < nearest_wanted(k):
            return active[:k]
        return _filtered(self.store, namespace, vector, k, include_embeddings, {"status": "active"})

    def similarities(
        self, namespace: str, vector: Sequence[float], memory_ids: Sequence[str]
    ) -> list[tuple[MemoryUnit, float]]:
        """:meth:`Reader.similarities`: one read of the records and their vectors, one matrix-vector product."""
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

    def lexical(self, namespace: str, query: str, k: int, normalize: bool) -> list[tuple[str, float]]:
        """:meth:`Reader.lexical`: scored by the database."""
        col = self.store.collection(namespace)
        found = col.lexical_search(query, k, normalize=normalize) if col is not None else []
        if not found and self.store.replaced_elsewhere(namespace):
            col = self.store.collection(namespace)
            found = col.lexical_search(query, k, normalize=normalize) if col is not None else []
        return found
