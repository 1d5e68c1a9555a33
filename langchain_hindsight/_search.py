"""The store's search helpers: scoring fetched candidates and keeping the lexical index current.

The lexical (BM25) index is derived data: built from Chroma on first use,
updated by the store's own writes, and on a shared server brought up to date
with other writers' changes through the namespace's change feed (see
``_lexical.ChangeFeed``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_hindsight._codec import unit_from_record
from langchain_hindsight._lexical import ChangeFeed, LexicalIndex
from langchain_hindsight.errors import HindsightError, StoreError
from langchain_hindsight.types import MemoryUnit

__all__ = ["refresh_lexical", "similarities"]

# Records are logged under the public module's name, as before the split: logging config keeps applying.
logger = logging.getLogger("langchain_hindsight.store")


def similarities(rows: Any, vector: Sequence[float], ids: Sequence[str]) -> list[tuple[MemoryUnit, float]]:
    """The active units of a ``col.get`` result (with embeddings) and their dot product with ``vector``.

    Order follows ``ids``; missing or inactive ids are skipped.
    """
    query = [float(x) for x in vector]
    found: dict[str, tuple[MemoryUnit, float]] = {}
    embeddings = rows.get("embeddings")
    for j, memory_id in enumerate(rows["ids"]):
        unit = unit_from_record(memory_id, rows["documents"][j], rows["metadatas"][j])
        if unit.status != "active" or embeddings is None:
            continue
        found[memory_id] = (unit, sum(a * float(b) for a, b in zip(query, embeddings[j], strict=True)))
    return [found[i] for i in ids if i in found]


def refresh_lexical(
    index: LexicalIndex | None,
    feed: ChangeFeed | None,
    namespace: str,
    *,
    fetch: Callable[[list[str]], list[MemoryUnit]],
    scan: Callable[[], Iterable[MemoryUnit]],
) -> LexicalIndex:
    """``index`` brought up to date (or built when missing or too far behind the feed).

    Args:
        index: The namespace's current index, or ``None`` if it was never built.
        feed: The namespace's change feed; ``None`` when this store is the only writer.
        namespace: For messages.
        fetch: The stored units among some ids (missing ones skipped).
        scan: Every active unit of the namespace.
    """
    try:
        if index is not None and feed is not None:
            seen, changed = feed.poll(index.seen)
            if changed is None:
                logger.debug("lexical index of %r is behind other writers: rebuilding", namespace)
                index = None
            elif changed:
                units = fetch(sorted(changed))
                index.delete(changed)
                index.upsert(u for u in units if u.status == "active")
                index.seen = seen
            else:
                index.seen = seen
        if index is None:
            index = LexicalIndex()
            if feed is not None:
                index.seen = feed.snapshot()  # before reading: later writes are caught by the next poll
            index.upsert(scan())
    except HindsightError:
        raise
    except Exception as e:
        raise StoreError(f"lexical index refresh failed: {e}") from e
    return index
