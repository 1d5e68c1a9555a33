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
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langchain_hindsight.errors import ConfigurationError, HindsightError, StoreError
from langchain_hindsight.store._codec import unit_from_record
from langchain_hindsight.store._lexical import (
    PRIOR_DOCUMENTS,
    ChangeFeed,
    LexicalIndex,
    indexed_text,
    tokenize,
    tokenizer_signature,
    unit_text,
)
from langchain_hindsight.store.backend import LexicalScheme
from langchain_hindsight.types import MemoryUnit

__all__ = [
    "SNAPSHOT_DIR",
    "UnitCache",
    "active_texts",
    "cached_candidates",
    "cached_hits",
    "cached_similarities",
    "check_k",
    "drop_snapshot",
    "lexical_scheme",
    "load_snapshot",
    "refresh_lexical",
    "save_snapshot",
    "similarities",
    "snapshot_path",
]

_MAX_K = 1 << 30
"""Largest search depth ``k``: the over-fetched query depth (``k`` and half again) must fit a backend's
32-bit count."""


def check_k(k: object) -> None:
    """Refuse a search depth that is not an int in ``[1, 2**30]`` (a store's or a snapshot's search)."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= _MAX_K:
        raise ConfigurationError(f"k must be an int from 1 to {_MAX_K}, got {k!r}")


SNAPSHOT_DIR = "lexical"
"""Sub-directory of an embedded store's directory holding the lexical index snapshots."""
_SAMPLE = 16
_SCAN_PAGE = 5000


def record_text(document: str, metadata: Any) -> str:
    """:func:`~langchain_hindsight.store._lexical.unit_text` of a stored record, without building the unit.

    The metadata was written from a validated unit, so the fields are read as stored.
    """
    tags = json.loads(metadata["tags"])
    tools = json.loads(metadata["context"]).get("tools_used") or []
    return indexed_text(document, metadata["task_description"], tags, tools, metadata["source"])


def active_texts(col: Any) -> Iterator[tuple[str, str]]:
    """``(memory_id, indexed text)`` of every active record of ``col`` (``None``: none), read in pages."""
    if col is None:
        return
    offset = 0
    while True:
        rows = col.get(where={"status": "active"}, include=["documents", "metadatas"], limit=_SCAN_PAGE, offset=offset)
        for memory_id, document, metadata in zip(
            rows["ids"], rows["documents"] or [], rows["metadatas"] or [], strict=True
        ):
            try:
                yield memory_id, record_text(document, metadata)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise StoreError(f"record {memory_id!r} is corrupt: {e}") from e
        if len(rows["ids"]) < _SCAN_PAGE:
            return
        offset += _SCAN_PAGE


logger = logging.getLogger(__name__)


def _record_tokens(document: str | None, metadata: Any) -> list[str] | None:
    """The lexical tokens of a stored *active* unit record (``None``: inactive, or not a unit record)."""
    if not isinstance(metadata, dict) or metadata.get("status") != "active" or document is None:
        return None
    try:
        return tokenize(record_text(document, metadata))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def lexical_scheme() -> LexicalScheme:
    """The store's lexical arm as a backend that answers it itself needs it: tokens, query terms, BM25 constants.

    Scores computed from it equal :class:`LexicalIndex`'s (the same tokenizer, ``k1``, ``b`` and prior).
    """
    defaults = LexicalIndex()
    return LexicalScheme(
        record_tokens=_record_tokens,
        query_terms=tokenize,
        signature=f"{tokenizer_signature()}:{_record_signature()}",
        k1=defaults.k1,
        b=defaults.b,
        prior_documents=PRIOR_DOCUMENTS,
    )


def _record_signature() -> str:
    """Version of what :func:`record_text` indexes (bump ``_RECORD_TEXT_VERSION`` when it changes)."""
    return str(_RECORD_TEXT_VERSION)


_RECORD_TEXT_VERSION = 1


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
    enough = len(out) >= k or len(ids) < k + max(8, k // 2)
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


def load_snapshot(path: Path, col: Any, *, count: int | None = None, skip: Iterable[str] = ()) -> LexicalIndex | None:
    """The index saved at ``path`` if it is consistent with ``col``, else ``None`` (the caller rebuilds).

    Consistent: the collection holds as many records as when it was saved, and a
    sample of the indexed memories is still there, active, with the same indexed
    text (content, task, tags, tools).

    Args:
        path: The snapshot file.
        col: The namespace's memories collection.
        count: The record count to compare with instead of ``col.count()`` (the
            count before a write that has just happened).
        skip: Ids that write changed: not compared with the sample.
    """
    loaded = LexicalIndex.load(path)
    if loaded is None:
        return None
    index, meta = loaded
    try:
        sample = dict(meta["sample"])
        if (
            int(meta["count"]) != (col.count() if count is None else count)
            or int(meta["active"]) != len(index)
            or not set(sample) <= index.memory_ids
        ):
            logger.debug("lexical snapshot %s is stale (record count): rebuilding", path.name)
            return None
        for memory_id in skip:
            sample.pop(memory_id, None)
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
    """Zero-fill and remove the snapshot at ``path`` and any half-written copy of it (absent is fine).

    Raises:
        StoreError: a file exists and could not be erased (it may hold the
            tokens of a memory being forgotten).
    """
    for target in (path, path.with_name(path.name + ".tmp")):
        try:
            size = target.stat().st_size
        except FileNotFoundError:
            continue
        try:
            with target.open("r+b") as fh:
                remaining = size
                while remaining > 0:
                    n = min(remaining, 1 << 20)
                    fh.write(b"\0" * n)
                    remaining -= n
                fh.flush()
                os.fsync(fh.fileno())
            target.unlink()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise StoreError(f"could not erase the lexical index snapshot {target}: {e}") from e


def refresh_lexical(
    index: LexicalIndex | None,
    feed: ChangeFeed | None,
    namespace: str,
    *,
    fetch: Callable[[list[str]], list[MemoryUnit]],
    scan: Callable[[], Iterable[tuple[str, str]]],
) -> LexicalIndex:
    """``index`` brought up to date (or built when missing or too far behind the feed).

    Args:
        index: The namespace's current index, or ``None`` if it was never built.
        feed: The namespace's change feed; ``None`` when this store is the only writer.
        namespace: For messages.
        fetch: The stored units among some ids (missing ones skipped).
        scan: ``(memory_id, indexed text)`` of every active unit of the namespace (see :func:`active_texts`).
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
            index.add_texts(scan())
    except StoreError as e:
        raise type(e)(f"lexical index refresh failed: {e}") from e
    return index
