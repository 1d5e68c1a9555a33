"""A namespace's replica kept by a database's change feed: many writers, many machines, read in process.

A database backend (:attr:`~langchain_hindsight.store.backend.Backend.feeds_changes`, Postgres)
numbers the writes of each collection: every transaction that writes records bumps the
collection's revision under its row lock, so revisions follow commit order; each record carries
the revision that last wrote it and a delete leaves a tombstone (see ``backend/postgres.py`` and
docs/DESIGN.md). A :class:`SyncedNamespace` holds what recall reads — the lexical index of the
active memories and, up to a size, their recall mirror — as of one revision, and
:func:`sync_namespace` brings it to the database's latest revision with one query: the records
written and the ids deleted since (only they are read). The store calls it before every search,
so a search sees every write committed before it began, in any process: a forgotten unit is gone
from the replica, an archived or superseded one has left it, a changed one is read again.

A replica older than the deletions the database keeps (or a new one) is read whole, in the same
one-snapshot query.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from langchain_hindsight.errors import StoreError
from langchain_hindsight.store.backend import Changes, Records, Rows
from langchain_hindsight.store.replica.lexical import LexicalIndex, record_text
from langchain_hindsight.store.replica.records import Mirror, record_bytes

__all__ = ["SyncedNamespace", "read_namespace", "sync_namespace"]

logger = logging.getLogger(__name__)


@dataclass
class SyncedNamespace:
    """What recall reads of one namespace, as of the collection's revision :attr:`rev`.

    Attributes:
        rev: The revision every change up to which is reflected here.
        lexical: The BM25 index of the active memories.
        mirror: Their recall mirror (vectors and records), or ``None`` above the size limit
            (recall then asks the database's vector index for the dense arm) or before the first vector.
        mirrored: Whether the changes are read with their vectors, for the mirror.
        identity: The embedder identity recorded in the mirror.
        changed: The ids the last sync found written or deleted (``None``: it read everything).
    """

    rev: int
    lexical: LexicalIndex
    mirror: Mirror | None
    mirrored: bool
    identity: str
    changed: list[str] | None = None


def sync_namespace(
    held: SyncedNamespace | None, col: Records, *, identity: str, dimension: int | None, max_rows: int
) -> SyncedNamespace | None:
    """``held`` brought to the collection's latest revision, or read whole when there is none or it is too old.

    ``None`` when ``col`` no longer exists (another process dropped it, see :attr:`Changes.dropped`):
    the caller opens the collection by its name again and reads that one whole.

    Args:
        held: The namespace's replica, or ``None``.
        col: Its memories collection (a backend that feeds changes).
        identity: The store's embedder identity (recorded in the mirror).
        dimension: The length of its vectors (``None``: that of the first one read).
        max_rows: The most active memories mirrored (above it: no mirror, the lexical index only).

    Raises:
        StoreError: the feed could not be read, or a record is corrupt.
    """
    if held is not None:
        changes = _changes(col, held.rev, embeddings=held.mirrored)
        if changes.dropped:
            return None
        if changes.rows is not None:
            _apply(held, changes, max_rows)
            held.changed = [*changes.deleted, *changes.rows["ids"]]
            return held
        logger.info("replica of %r is older than the deletions the database keeps: reading it again", col.name)
    return read_namespace(col, identity=identity, dimension=dimension, max_rows=max_rows)


def read_namespace(
    col: Records,
    *,
    identity: str,
    dimension: int | None,
    max_rows: int,
    stopped: Callable[[], bool] = lambda: False,
) -> SyncedNamespace | None:
    """The namespace's replica read whole, as of the collection's latest revision (one snapshot query).

    ``None`` when ``col`` no longer exists (see :func:`sync_namespace`) or when ``stopped()`` turned true
    (asked between slices of :data:`_SLICE` records: a read in the background ends early when its store closes).

    Raises:
        StoreError: the feed could not be read, or a record is corrupt.
    """
    mirrored = max_rows > 0 and col.count() <= max_rows
    changes = _changes(col, None, embeddings=mirrored)
    if changes.dropped or stopped():
        return None
    mirror = Mirror(dimension, identity) if mirrored and dimension is not None else None
    fresh = SyncedNamespace(changes.rev, LexicalIndex(), mirror, mirrored, identity)
    rows = changes.rows
    total = 0 if rows is None else len(rows["ids"])
    for start in range(0, max(total, 1), _SLICE):
        if start and stopped():
            return None
        _apply(fresh, Changes(changes.rev, _rows_slice(rows, start, start + _SLICE), []), max_rows)
    return fresh


_SLICE = 2000
"""Records applied between two looks at ``stopped`` in :func:`read_namespace` (~0.1 s of work)."""


def _rows_slice(rows: Rows | None, start: int, end: int) -> Rows | None:
    """Records ``start`` to ``end`` of ``rows``."""
    if rows is None:
        return None
    return {key: None if value is None else value[start:end] for key, value in rows.items()}


def _changes(col: Records, since: int | None, *, embeddings: bool) -> Changes:
    changes = col.changes(since, embeddings=embeddings)
    if changes is None:
        raise StoreError(f"collection {col.name!r} does not feed its changes")
    return changes


def _apply(replica: SyncedNamespace, changes: Changes, max_rows: int) -> None:
    """Apply ``changes`` (deletions first: a record in ``rows`` exists now, whatever was deleted before)."""
    rows = changes.rows
    if rows is None:
        raise StoreError("no changes to apply")  # pragma: no cover - sync_namespace reads again instead
    embeddings = rows.get("embeddings")
    if replica.mirror is None and replica.mirrored and embeddings is not None and len(embeddings):
        replica.mirror = Mirror(len(embeddings[0]), replica.identity)
    mirror = replica.mirror
    replica.lexical.delete(changes.deleted)
    if mirror is not None:
        mirror.forget(changes.deleted)
    active: list[tuple[str, str]] = []
    gone: list[str] = []
    for j, memory_id in enumerate(rows["ids"]):
        document = (rows["documents"] or [])[j]
        metadata = (rows["metadatas"] or [])[j] or {}
        if metadata.get("status") != "active" or document is None:
            gone.append(memory_id)
            continue
        try:
            active.append((memory_id, record_text(document, metadata)))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise StoreError(f"record {memory_id!r} is corrupt: {e}") from e
        if mirror is not None and embeddings is not None:
            mirror.put(memory_id, embeddings[j], record_bytes(document, metadata))
    replica.lexical.delete(gone)
    replica.lexical.add_texts(active)
    if mirror is not None:
        mirror.forget(gone)
        if len(mirror) > max_rows:  # grew past the limit: the dense arm goes back to the database's index
            replica.mirror = None
            replica.mirrored = False
    replica.rev = changes.rev
