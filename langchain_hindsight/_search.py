"""The store's search helpers: scoring fetched candidates and keeping the lexical index current.

The lexical (BM25) index is derived data: built from Chroma on first use,
updated by the store's own writes, and on a shared server brought up to date
with other writers' changes through the namespace's change feed (see
``_lexical.ChangeFeed``).

An embedded store also keeps a snapshot of each namespace's index in its
directory (``lexical/<collection>.npz``), written when the store closes, so the
next process loads it instead of re-reading and re-tokenising every memory. A
snapshot is used only when it is consistent with Chroma (same record count; a
sample of its memories present, active and with the same indexed text) and is
erased (zero-filled, then removed) as soon as the namespace is written, so a
crash can leave a missing snapshot but never a stale one, and a forgotten
memory's tokens never stay on disk.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langchain_hindsight._codec import unit_from_record
from langchain_hindsight._lexical import ChangeFeed, LexicalIndex, tokenize, unit_text
from langchain_hindsight.errors import HindsightError, StoreError
from langchain_hindsight.types import MemoryUnit

__all__ = [
    "SNAPSHOT_DIR",
    "drop_snapshot",
    "load_snapshot",
    "refresh_lexical",
    "save_snapshot",
    "similarities",
    "snapshot_path",
]

SNAPSHOT_DIR = "lexical"
"""Sub-directory of an embedded store's directory holding the lexical index snapshots."""
_SAMPLE = 16

# Records are logged under the public module's name, as before the split: logging config keeps applying.
logger = logging.getLogger("langchain_hindsight.store")


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


# ---------------------------------------------------------------- snapshots
def snapshot_path(directory: Path, collection_name: str) -> Path:
    """Where the lexical snapshot of the collection ``collection_name`` lives under ``directory``."""
    return directory / SNAPSHOT_DIR / f"{collection_name}.npz"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def save_snapshot(index: LexicalIndex, path: Path, col: Any) -> bool:
    """Write ``index`` to ``path`` with what :func:`load_snapshot` checks; ``False`` if it cannot be saved.

    Only an index built with the default tokenizer is saved. Failures are logged,
    never raised: the snapshot is an optimisation and the next open rebuilds.
    """
    if not isinstance(index, LexicalIndex) or index.tokenizer is not tokenize:
        return False
    try:
        index.compact()
        ids = sorted(index.memory_ids)
        step = max(1, len(ids) // _SAMPLE)
        sample = ids[::step][:_SAMPLE]
        rows = col.get(ids=sample, include=["documents", "metadatas"]) if sample else {"ids": []}
        digests = {
            i: _digest(unit_text(unit_from_record(i, d, m)))
            for i, d, m in zip(rows["ids"], rows.get("documents") or [], rows.get("metadatas") or [], strict=True)
        }
        if len(digests) != len(sample):
            logger.debug("lexical snapshot of %s not saved: the index does not match Chroma", path.name)
            return False
        index.save(path, meta={"count": col.count(), "active": len(index), "sample": digests})
    except Exception:
        logger.warning("could not save the lexical index snapshot %s", path, exc_info=True)
        return False
    return True


def load_snapshot(path: Path, col: Any) -> LexicalIndex | None:
    """The index saved at ``path`` if it is consistent with ``col``, else ``None`` (the caller rebuilds).

    Consistent: the collection holds as many records as when it was saved, and a
    sample of the indexed memories is still there, active, with the same indexed
    text (content, task, tags, tools).
    """
    loaded = LexicalIndex.load(path)
    if loaded is None:
        return None
    index, meta = loaded
    try:
        sample = dict(meta["sample"])
        if (
            int(meta["count"]) != col.count()
            or int(meta["active"]) != len(index)
            or not set(sample) <= index.memory_ids
        ):
            logger.debug("lexical snapshot %s is stale (record count): rebuilding", path.name)
            return None
        if sample:
            rows = col.get(ids=sorted(sample), include=["documents", "metadatas"])
            current = {
                i: unit_from_record(i, d, m)
                for i, d, m in zip(rows["ids"], rows.get("documents") or [], rows.get("metadatas") or [], strict=True)
            }
            if any(
                i not in current or current[i].status != "active" or _digest(unit_text(current[i])) != digest
                for i, digest in sample.items()
            ):
                logger.debug("lexical snapshot %s is stale (sampled memories differ): rebuilding", path.name)
                return None
    except HindsightError:
        return None
    except (KeyError, TypeError, ValueError):
        return None
    return index


def drop_snapshot(path: Path) -> None:
    """Zero-fill and remove the snapshot at ``path`` (absent is fine).

    Raises:
        StoreError: the file exists and could not be erased (it may hold the
            tokens of a memory being forgotten).
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    try:
        with path.open("r+b") as fh:
            remaining = size
            while remaining > 0:
                n = min(remaining, 1 << 20)
                fh.write(b"\0" * n)
                remaining -= n
            fh.flush()
            os.fsync(fh.fileno())
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as e:
        raise StoreError(f"could not erase the lexical index snapshot {path}: {e}") from e


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
