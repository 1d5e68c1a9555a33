"""The merge pass over stored units (keeps the store from bloating): exact duplicate search and folding.

Only true duplicates fold: units that make the same statement after normalising
case, whitespace and punctuation (:func:`~langchain_hindsight.store._write.statement_key`,
the rule of the write path). The similarity threshold only selects candidates;
two different statements never fold, however close their vectors.

Pure helpers (:func:`duplicate_groups`, :func:`star_clusters`, :func:`fold`) plus
the two store accesses the pass needs (:func:`active_with_vectors`, :func:`delete_folded`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_hindsight._trust import trust_rank
from langchain_hindsight.store._write import statement_key
from langchain_hindsight.types import MemoryUnit

if TYPE_CHECKING:
    import numpy as np

    from langchain_hindsight.store.memory_store import MemoryStore

__all__ = ["active_with_vectors", "delete_folded", "duplicate_groups", "fold", "priority", "star_clusters"]

_READ_BATCH = 5000
_BLOCK_ELEMENTS = 1 << 25
"""Similarity block size in floats (~128 MB)."""


def active_with_vectors(
    store: MemoryStore, ns: str, progress: Callable[[str, int, int], None] | None = None
) -> tuple[list[MemoryUnit], np.ndarray]:
    """Every active unit of ``ns`` with its stored (L2-normalised) vector, read in pages."""
    import numpy as np

    units: list[MemoryUnit] = []
    chunks: list[np.ndarray] = []
    total = store.count(namespace=ns, status="active")
    for page, page_vectors in store.iter_vectors(namespace=ns, status="active", batch_size=_READ_BATCH):
        units.extend(page)
        chunks.append(page_vectors)
        if progress is not None:
            progress("merge read", min(len(units), total), total)
    vectors = np.concatenate(chunks) if chunks else np.zeros((0, 0), dtype=np.float32)
    if len(vectors):
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors /= np.where(norms == 0, 1.0, norms)
    return units, vectors


def priority(unit: MemoryUnit) -> tuple[Any, ...]:
    """Sort key: the unit that should survive a merge comes first (most trusted source, then confidence).

    The survivor's text is what remains, so it must be the most trusted one:
    a merge never pairs one unit's text with another's (more trusted) source.
    """
    return (
        trust_rank(unit.source),
        -unit.score_confidence,
        -unit.access_count,
        unit.created_at,
        unit.memory_id,
    )


def star_clusters(
    units: Sequence[MemoryUnit], vectors: np.ndarray, threshold: float
) -> list[tuple[MemoryUnit, list[MemoryUnit]]]:
    """Greedy star clustering: best unit first, each absorbs its not-yet-absorbed neighbours.

    Every pair is compared exactly (blocked upper-triangle matrix products), so a
    unit is folded only into a keeper it is itself at least ``threshold`` similar to.
    """
    import numpy as np

    order = sorted(range(len(units)), key=lambda i: priority(units[i]))
    x = vectors[np.asarray(order)]
    n = len(order)
    limit = np.float32(threshold - 1e-6)
    neighbours: dict[int, list[int]] = {}
    block = max(1, min(n, _BLOCK_ELEMENTS // max(1, n)))
    for start in range(0, n, block):
        stop = min(n, start + block)
        sims = x[start:stop] @ x[start:].T  # rows start..stop, columns start..n
        rows, cols = np.nonzero(sims >= limit)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            a, b = start + r, start + c
            if b > a:
                neighbours.setdefault(a, []).append(b)
    absorbed: set[int] = set()
    out: list[tuple[MemoryUnit, list[MemoryUnit]]] = []
    for a in range(n):
        if a in absorbed or a not in neighbours:
            continue
        folded = [b for b in sorted(neighbours[a]) if b not in absorbed]
        if folded:
            absorbed.update(folded)
            out.append((units[order[a]], [units[order[b]] for b in folded]))
    return out


def duplicate_groups(units: Sequence[MemoryUnit], *, by_task_type: bool) -> list[list[int]]:
    """Indices of ``units`` grouped by statement (and task type and kind when ``by_task_type``); groups of 2+."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, u in enumerate(units):
        scope = (u.task_type, u.kind) if by_task_type else ()
        groups.setdefault((*scope, statement_key(u.content)), []).append(i)
    return [idx for idx in groups.values() if len(idx) > 1]


def fold(keeper: MemoryUnit, folded: Sequence[MemoryUnit]) -> MemoryUnit:
    """``keeper`` after absorbing ``folded``: max confidence, summed accesses, union of tags, provenance.

    Times are the newest of the group (creation and last access), so recency
    reflects the latest time the lesson was learned.

    A folded id already in ``keeper.merged_from`` (a merge interrupted between
    its write and its delete) adds no access count again.
    """
    known = set(keeper.merged_from)
    merged_from = list(keeper.merged_from)
    access = keeper.access_count
    for u in folded:
        if u.memory_id not in known:
            access += u.access_count
        merged_from.extend([u.memory_id, *u.merged_from])
    group = [keeper, *folded]
    supersedes = keeper.supersedes or next((u.supersedes for u in folded if u.supersedes), None)
    peers = [u for u in group if u.source == keeper.source]  # a less trusted unit lends no confidence
    return keeper.evolve(
        confidence=max(u.score_confidence for u in peers),
        access_count=access,
        tags=[t for u in group for t in u.tags],
        created_at=max(u.created_at for u in group),
        last_accessed_at=max(u.last_accessed_at for u in group),
        merged_from=[i for i in dict.fromkeys(merged_from) if i != keeper.memory_id],
        source=keeper.source,  # the keeper is the most trusted of its cluster (see priority)
        supersedes=supersedes,
    )


def delete_folded(store: MemoryStore, ns: str, ids: list[str]) -> None:
    """Delete merged-away units. Not :meth:`MemoryStore.forget`: their ids stay as provenance."""
    store.discard(ids, namespace=ns)
