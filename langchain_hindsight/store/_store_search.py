"""The search methods of ``MemoryStore``: the dense arm, the lexical (BM25) arm, and both at once."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from langchain_hindsight._safety import clean_text
from langchain_hindsight.errors import ConfigurationError, StoreError
from langchain_hindsight.store._collections import query_hits
from langchain_hindsight.store._core import StoreCore, backend_errors, check_ids
from langchain_hindsight.store._mirror import Mirror, mirror_candidates
from langchain_hindsight.store._search import (
    cached_candidates,
    cached_hits,
    cached_similarities,
    check_k,
    similarities,
)
from langchain_hindsight.types import MemoryUnit

__all__ = ["SearchMixin"]


def _as_list(vector: Any) -> list[float] | None:
    return None if vector is None else [float(x) for x in vector]


class SearchMixin(StoreCore):
    """Dense, lexical and hybrid search (part of :class:`~langchain_hindsight.store.memory_store.MemoryStore`)."""

    @backend_errors
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
        check_k(k)
        vector = self.embeddings.embed_query(clean_text(query))
        return self.search_by_vector(vector, k=k, namespace=namespace, include_embeddings=include_embeddings)

    @backend_errors
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
        check_k(k)
        ns = self._ns(namespace)
        include: list[Any] = ["documents", "metadatas", "distances"]
        if include_embeddings:
            include.append("embeddings")
        with self._lock:
            mirror = self._recall_mirror(ns) if where is None else None
            if mirror is not None:
                mirror.check_query(vector)
                nearest = mirror.nearest(vector, k)
                vectors = [_as_list(mirror.vector(i)) if include_embeddings else None for i, _ in nearest]
                return [
                    (self._mirrored_unit(ns, mirror, i), sim, vec)
                    for (i, sim), vec in zip(nearest, vectors, strict=True)
                ]
            col = self._vectors(self._collection(ns, create=False))
            if col is None:
                return []
            if where is None and self._units.size and not include_embeddings:  # units from the cache
                res = col.query(query_embeddings=[list(vector)], n_results=k + max(8, k // 2), include=["distances"])
                hits: list[tuple[MemoryUnit, float, list[float] | None]] = list(cached_hits(self._units, ns, col, res))
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
        return query_hits(res, include_embeddings)

    @backend_errors
    def similarity_by_ids(
        self, vector: Sequence[float], memory_ids: Sequence[str], *, namespace: str | None = None
    ) -> list[tuple[MemoryUnit, float]]:
        """The *active* units among ``memory_ids`` with their cosine similarity to ``vector``.

        Used by hybrid recall for candidates found only by the lexical arm, so
        every candidate is scored on the same dense similarity. Order follows
        ``memory_ids``; missing or inactive ids are skipped.
        """
        ids = check_ids(memory_ids) if memory_ids else []
        if not ids:
            return []
        ns = self._ns(namespace)
        with self._lock:
            mirror = self._recall_mirror(ns)
            if mirror is not None:
                mirror.check_query(vector)
                sims = mirror.similarities(vector, ids)
                return [(self._mirrored_unit(ns, mirror, i), sims[i]) for i in ids if i in sims]
            col = self._vectors(self._collection(ns, create=False))
            if col is None:
                return []
            if self._units.size:
                return cached_similarities(self._units, ns, col, vector, ids)
            rows = col.get(ids=ids, include=["documents", "metadatas", "embeddings"])
        return similarities(rows, vector, ids)

    @backend_errors
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
        ns = self._ns(namespace)
        with self._lock:
            mirror = self._recall_mirror(ns)  # first: a lexical index built now is read from it
            lexical = dict(self.lexical_search(query, k=k, namespace=ns, normalize=normalize))
            if mirror is not None:
                unit_of = functools.partial(self._mirrored_unit, ns, mirror)
                return mirror_candidates(mirror, vector, lexical, k, unit_of), lexical
            col = self._collection(ns, create=False)
            if self._units.size and col is not None:
                n = k + max(8, k // 2)
                res = col.query(query_embeddings=[list(vector)], n_results=n, include=["distances"])
                found, enough = cached_candidates(self._units, ns, col, res, vector, k, list(lexical))
                if enough:
                    return found, lexical
        dense = {u.memory_id: (u, sim) for u, sim, _ in self.search_by_vector(vector, k=k, namespace=ns)}
        missing = [i for i in lexical if i not in dense]
        if missing:
            dense.update((u.memory_id, (u, sim)) for u, sim in self.similarity_by_ids(vector, missing, namespace=ns))
        return dense, lexical

    def _mirrored_unit(self, namespace: str, mirror: Mirror, memory_id: str) -> MemoryUnit:
        """A mirrored unit, from the unit cache or rebuilt from its mirrored record (then cached)."""
        entry = self._units.get(namespace, memory_id)
        if entry is not None:
            return entry[0]
        unit = mirror.unit(memory_id)
        if unit is None:  # callers pass ids the mirror just returned
            raise StoreError(f"memory {memory_id!r} is not in the recall mirror of {namespace!r}")
        self._units.put(unit)
        return unit

    @backend_errors
    def lexical_search(
        self, query: str, *, k: int = 10, namespace: str | None = None, normalize: bool = False
    ) -> list[tuple[str, float]]:
        """BM25 matches among active units: ``(memory_id, score)``, best first.

        ``normalize=True`` scales scores to [0, 1] by the query's idf mass (see
        :meth:`LexicalIndex.search <langchain_hindsight.store._lexical.LexicalIndex.search>`).

        The index is built from the backend on first use and kept in step with this
        store's writes; with a shared client (``HttpClient``), other stores'
        writes are picked up through the namespace's change feed on every call.
        """
        if not isinstance(query, str):
            raise ConfigurationError(f"query must be a string, got {type(query).__name__}")
        check_k(k)
        ns = self._ns(namespace)
        with self._lock:
            if self.backend.answers_lexical:  # the database scores the lexical arm: no in-process index
                col = self._collection(ns, create=False)
                found = col.lexical_search(query, k, normalize=normalize) if col is not None else []
                if found is not None:
                    return found
            return self._lexical_index(ns).search(query, k, normalize=normalize)
