"""The unit cache: recently recalled units (and their vectors) by namespace and id, and the reads that fill it.

Derived data like the lexical index and the recall mirror, held in memory only (no file). It saves recall
the backend reads of documents, metadata and vectors of candidates seen recently, and is correct only while
every write to the namespace passes the owner (the :class:`~langchain_hindsight.store.replica.Replica`),
which evicts the ids it writes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from langchain_hindsight.store._codec import unit_from_record
from langchain_hindsight.types import MemoryUnit

__all__ = ["UnitCache", "cached_candidates", "cached_hits", "cached_similarities", "nearest_wanted", "similarities"]


def similarities(rows: Any, vector: Sequence[float], ids: Sequence[str]) -> list[tuple[MemoryUnit, float]]:
    """The active units of a ``col.get`` result (with embeddings) and their dot product with ``vector``.

    Order follows ``ids``; missing or inactive ids are skipped. The dot products
    are one matrix-vector product.
    """
    embeddings = rows.get("embeddings")
    if embeddings is None or not len(rows["ids"]):
        return []
    sims = np.asarray(embeddings, dtype=np.float64) @ np.asarray(vector, dtype=np.float64)
    found: dict[str, tuple[MemoryUnit, float]] = {}
    for j, memory_id in enumerate(rows["ids"]):
        if (rows["metadatas"][j] or {}).get("status") != "active":
            continue
        found[memory_id] = (unit_from_record(memory_id, rows["documents"][j], rows["metadatas"][j]), float(sims[j]))
    return [found[i] for i in ids if i in found]


class UnitCache:
    """A bounded LRU of recently recalled units (and their vectors when known), by namespace and id.

    Derived data like the lexical index: it saves recall the Chroma reads of
    documents, metadata and vectors of candidates seen recently. It is only
    correct while every write to the namespace passes the owner, which evicts
    the ids it writes (``MemoryStore`` uses it for an embedded store, whose
    directory lock guarantees a single writer).

    Args:
        size: Units kept (oldest evicted first).
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[str, str], tuple[MemoryUnit, np.ndarray | None]] = OrderedDict()

    def get(self, namespace: str, memory_id: str) -> tuple[MemoryUnit, np.ndarray | None] | None:
        """The cached unit and vector (``None`` if unknown) of ``memory_id``, or ``None`` on a miss."""
        entry = self._entries.get((namespace, memory_id))
        if entry is not None:
            self._entries.move_to_end((namespace, memory_id))
        return entry

    def put(self, unit: MemoryUnit, vector: Any = None) -> None:
        """Remember ``unit`` (and its stored vector, if given)."""
        if self.size <= 0:
            return
        key = (unit.namespace, unit.memory_id)
        if vector is None and key in self._entries:
            vector = self._entries[key][1]
        self._entries[key] = (unit, None if vector is None else np.asarray(vector, dtype=np.float32))
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def evict(self, namespace: str, memory_ids: Iterable[str]) -> None:
        """Forget ``memory_ids`` of ``namespace`` (they were written)."""
        for memory_id in memory_ids:
            self._entries.pop((namespace, memory_id), None)

    def clear(self, namespace: str | None = None) -> None:
        """Forget every unit (of ``namespace`` only, if given)."""
        if namespace is None:
            self._entries.clear()
        else:
            for key in [k for k in self._entries if k[0] == namespace]:
                del self._entries[key]


def cached_hits(cache: UnitCache, namespace: str, col: Any, res: Any) -> list[tuple[MemoryUnit, float, None]]:
    """``(unit, similarity, None)`` for a ``col.query`` result holding ids and distances only.

    Units come from ``cache``; the ones it lacks are read in one ``col.get`` and
    cached. Order follows the result.
    """
    ids: list[str] = list(res["ids"][0])
    missing = [i for i in ids if cache.get(namespace, i) is None]
    if missing:
        rows = col.get(ids=missing, include=["documents", "metadatas"])
        for i, d, m in zip(rows["ids"], rows["documents"] or [], rows["metadatas"] or [], strict=True):
            cache.put(unit_from_record(i, d, m))
    out: list[tuple[MemoryUnit, float, None]] = []
    for memory_id, distance in zip(ids, res["distances"][0], strict=True):
        entry = cache.get(namespace, memory_id)
        if entry is not None:
            out.append((entry[0], 1.0 - float(distance), None))
    return out


def nearest_wanted(k: int) -> int:
    """How many nearest records a dense query asks for to serve ``k`` active ones.

    Some of the nearest may be archived or superseded, so the query asks for a few
    more (at least 8, or half of ``k``); a caller that still finds fewer than ``k``
    active among that many asks again with a status filter.
    """
    return k + max(8, k // 2)


def cached_candidates(
    cache: UnitCache, namespace: str, col: Any, res: Any, vector: Sequence[float], k: int, extra: Sequence[str]
) -> tuple[dict[str, tuple[MemoryUnit, float]], bool]:
    """Hybrid recall's candidates from a ``col.query`` result (ids and distances only) plus ``extra`` ids.

    Units and vectors come from ``cache``; what it lacks among the ``k`` nearest
    and ``extra`` is read in **one** ``col.get`` (documents, metadata and
    vectors) and cached; the query's over-fetched tail only when inactive units
    among the ``k`` nearest leave too few. The dense arm's
    ``k`` best active hits keep their query similarity; the ``extra`` ids found
    nowhere in them (lexical matches) get their dot product with ``vector``.

    Returns:
        The candidates (id → unit, similarity), and whether the dense arm had
        enough active hits (``False``: the caller repeats the query filtered).
    """
    ids: list[str] = list(res["ids"][0])
    hit = set(ids)

    def fetch(wanted: Iterable[str]) -> None:
        need = [
            i
            for i in dict.fromkeys(wanted)
            if (entry := cache.get(namespace, i)) is None or (i not in hit and entry[1] is None)
        ]
        if need:
            rows = col.get(ids=need, include=["documents", "metadatas", "embeddings"])
            embeddings = rows.get("embeddings")
            for j, memory_id in enumerate(rows["ids"]):
                unit = unit_from_record(memory_id, rows["documents"][j], rows["metadatas"][j])
                cache.put(unit, None if embeddings is None else embeddings[j])

    fetch([*ids[:k], *extra])  # the over-fetched tail is read only if inactive units leave too few
    head = [cache.get(namespace, i) for i in ids[:k]]
    if sum(1 for e in head if e is not None and e[0].status == "active") < k:
        fetch(ids[k:])
    out: dict[str, tuple[MemoryUnit, float]] = {}
    for memory_id, distance in zip(ids, res["distances"][0], strict=True):
        entry = cache.get(namespace, memory_id)
        if entry is not None and entry[0].status == "active" and len(out) < k:
            out[memory_id] = (entry[0], 1.0 - float(distance))
    enough = len(out) >= k or len(ids) < nearest_wanted(k)
    rest = [i for i in extra if i not in out]
    for unit, sim in cached_similarities(cache, namespace, col, vector, rest) if rest else []:
        out[unit.memory_id] = (unit, sim)
    return out, enough


def cached_similarities(
    cache: UnitCache, namespace: str, col: Any, vector: Sequence[float], ids: Sequence[str]
) -> list[tuple[MemoryUnit, float]]:
    """Like :func:`similarities` for ``ids``, reading from Chroma only what ``cache`` lacks (then cached)."""
    missing = [i for i in ids if (entry := cache.get(namespace, i)) is None or entry[1] is None]
    if missing:
        rows = col.get(ids=missing, include=["documents", "metadatas", "embeddings"])
        embeddings = rows.get("embeddings")
        for j, memory_id in enumerate(rows["ids"]):
            unit = unit_from_record(memory_id, rows["documents"][j], rows["metadatas"][j])
            cache.put(unit, None if embeddings is None else embeddings[j])
    found = [(i, e) for i in ids if (e := cache.get(namespace, i)) is not None and e[1] is not None]
    found = [(i, e) for i, e in found if e[0].status == "active"]
    if not found:
        return []
    matrix = np.stack([e[1] for _, e in found if e[1] is not None]).astype(np.float64)
    sims = matrix @ np.asarray(vector, dtype=np.float64)
    return [(e[0], float(s)) for (_, e), s in zip(found, sims.tolist(), strict=True)]
