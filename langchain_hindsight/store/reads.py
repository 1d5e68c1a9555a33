"""The read methods of ``MemoryStore`` (it binds these functions): listing, counting, paging units, history.

Also a namespace's ``hindsight stats`` entry (:func:`statistics`), which the replica's close counts again only
with the recall mirror (:func:`close_replica`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from langchain_hindsight._checks import check_int, is_int
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.store._collections import ALLOWED, filter_where, records, units_of
from langchain_hindsight.store._collections import namespaces as _namespaces
from langchain_hindsight.store._core import StoreCore, backend_errors
from langchain_hindsight.store._naming import ROLES, Role
from langchain_hindsight.store.backend import Records, Rows
from langchain_hindsight.store.replica.summary import SUMMARY_FIELDS, summary_entry
from langchain_hindsight.types import MemoryStatus, MemoryUnit

__all__ = [
    "SUMMARY_MAX_READ",
    "close_replica",
    "count",
    "count_by",
    "history",
    "iter_units",
    "iter_vectors",
    "list_units",
    "namespaces",
    "statistics",
]

logger = logging.getLogger(__name__)

_COUNT_PAGE = 5000
"""Records per backend read when :func:`count_by` reads metadata."""
_MAX_PAGE = 2**31 - 1
"""The largest page a backend read can carry."""

SUMMARY_MAX_READ = 2000
"""The most records the close reads from Chroma to count a written namespace again: its active memories are
counted from the recall mirror (~8 µs each), the others read (~0.14 ms each at 10k memories), so 2000 bound the
close's read to ~0.3 s."""


@backend_errors
def namespaces(store: StoreCore) -> list[str]:
    """Every namespace that has a collection, sorted."""
    with store.lock:
        store.ensure_open()
        return _namespaces(store.backend)


@backend_errors
def list_units(
    store: StoreCore,
    *,
    namespace: str | None = None,
    status: MemoryStatus | None = None,
    task_type: str | None = None,
    kind: str | None = None,
    source: str | None = None,
    limit: int | None = None,
) -> list[MemoryUnit]:
    """Units matching every given filter, newest first. ``status=None`` means all statuses."""
    if limit is not None and not is_int(limit, 0):
        raise ConfigurationError(f"limit must be a non-negative int or None, got {limit!r}")
    units = list(iter_units(store, namespace=namespace, status=status, task_type=task_type, kind=kind, source=source))
    units.sort(key=lambda u: (u.created_at, u.memory_id), reverse=True)
    return units if limit is None else units[:limit]


def iter_units(
    store: StoreCore,
    *,
    namespace: str | None = None,
    status: MemoryStatus | None = None,
    task_type: str | None = None,
    kind: str | None = None,
    source: str | None = None,
    batch_size: int = 1000,
) -> Iterator[MemoryUnit]:
    """Iterate over matching units in pages of ``batch_size`` (unordered)."""
    ns = store.namespace_or_default(namespace)
    filters: dict[str, object] = {"status": status, "task_type": task_type, "kind": kind, "source": source}
    where = filter_where(filters, store.vocabulary.resolve)
    check_int("batch_size", batch_size, 1, _MAX_PAGE)
    for role in _roles_holding(status):
        for rows in _pages(store, ns, role, where, ["documents", "metadatas"], batch_size):
            yield from units_of(rows)


def iter_vectors(
    store: StoreCore, *, namespace: str | None = None, status: MemoryStatus = "active", batch_size: int = 1000
) -> Iterator[tuple[list[MemoryUnit], np.ndarray]]:
    """Units with ``status`` and their stored vectors, in pages of ``batch_size``: ``(units, vectors)``.

    ``vectors`` is a float32 array with one row per unit, as stored (nothing is re-embedded).

    Example:
        >>> for units, vectors in store.iter_vectors(status="active"):  # doctest: +SKIP
        ...     print(len(units), vectors.shape)
    """
    ns = store.namespace_or_default(namespace)
    if status not in ALLOWED["status"]:
        raise ConfigurationError(f"status must be one of {ALLOWED['status']}, got {status!r}")
    check_int("batch_size", batch_size, 1, _MAX_PAGE)
    role: Role = "archive" if status == "archived" else "memories"
    for rows in _pages(store, ns, role, {"status": status}, ["documents", "metadatas", "embeddings"], batch_size):
        yield units_of(rows), np.asarray(rows["embeddings"], dtype=np.float32).reshape(len(rows["ids"]), -1)


def _roles_holding(status: MemoryStatus | None) -> tuple[Role, ...]:
    """The roles whose collections hold units with ``status`` (``None``: any)."""
    return ("archive",) if status == "archived" else ("memories",) if status else ROLES


def _pages(
    store: StoreCore, ns: str, role: Role, where: dict[str, Any] | None, include: list[Any], size: int
) -> Iterator[Rows]:
    """Every non-empty page of ``ns``'s ``role`` records ``where`` selects; the store's lock held for each read."""
    offset = 0
    while True:
        with store.lock:
            col = store.collection(ns, role)
            if col is None:
                return
            rows = col.get(where=where, include=include, limit=size, offset=offset)
        if rows["ids"]:
            yield rows
        if len(rows["ids"]) < size:
            return
        offset += size


@backend_errors
def count_by(store: StoreCore, *fields: str, namespace: str | None = None) -> dict[tuple[str, ...], int]:
    """How many units (every status) have each combination of values of ``fields``.

    Exact, and cheap on large stores: the active units are counted from the namespace's recall mirror when the
    store holds it or a vouched snapshot of it (never built for this); else a field with a known set of values is
    read as one id-only query per value, and only the units outside that set (missing: ``""``) have their metadata
    read. Keys come sorted.

    Example:
        >>> store.count_by("status", "task_type")  # doctest: +SKIP
        {('active', 'weekly_report'): 12, ('superseded', 'weekly_report'): 2}

    Args:
        store: The store (``self``: this is :meth:`MemoryStore.count_by`).
        fields: Among ``status``, ``task_type``, ``kind``, ``source``, ``run_id``.
        namespace: Namespace to count (default: the store's).
    """
    allowed = ("status", "task_type", "kind", "source", "run_id")
    if not fields or any(f not in allowed for f in fields):
        raise ConfigurationError(f"fields must be among {allowed}, got {fields!r}")
    ns = store.namespace_or_default(namespace)
    counts = _count_with_mirror(store, ns, fields)
    if counts is not None:
        return counts
    known = {f: store.vocabulary.labels if f == "task_type" else ALLOWED.get(f, ()) for f in fields}
    tally: Counter[tuple[str, ...]] = Counter()
    with store.lock:
        for _, col in store.collections_of(ns):
            tally.update(_value_tuples(col, fields, known))
    return dict(sorted(tally.items()))


def _count_with_mirror(
    store: StoreCore, ns: str, fields: tuple[str, ...], *, at_close: bool = False
) -> dict[tuple[str, ...], int] | None:
    """:func:`count_by` with the active records from ``ns``'s recall mirror, the others read (metadata only).

    ``None`` without a mirror (``at_close``: held, never loaded), when the others are more than
    :data:`SUMMARY_MAX_READ` at close, or when the counts do not add up.
    """
    with store.lock:
        mirror = store.replica.held_mirror(ns, load=not at_close)
        if mirror is None:
            return None
        col = store.collection(ns)
        archive = store.collection(ns, "archive")
        assert col is not None  # the mirror's collection
        stored = col.count()
        archived = 0 if archive is None else archive.count()
        if at_close and stored - len(mirror) + archived > SUMMARY_MAX_READ:
            return None
        metadatas: list[Mapping[str, Any] | None] = []
        inactive = 0
        for rows in col.pages(include=["metadatas"], where={"status": {"$ne": "active"}}, size=_COUNT_PAGE):
            if any(i in mirror for i in rows["ids"]):
                return None
            metadatas.extend(rows["metadatas"] or [])
            inactive += len(rows["ids"])
        if archive is not None:
            for rows in archive.pages(include=["metadatas"], size=_COUNT_PAGE):
                metadatas.extend(rows["metadatas"] or [])
        if inactive + len(mirror) != stored or len(metadatas) != inactive + archived:
            logger.debug("namespace %r: the recall mirror does not add up to the stored records", ns)
            return None
        metadatas.extend(m for _, _, m in mirror.records())
    return dict(sorted(Counter(tuple(str((m or {}).get(f, "")) for f in fields) for m in metadatas).items()))


def close_replica(store: StoreCore) -> None:
    """At close, before the backend closes: the replica writes its derived files (``Replica.close``)."""

    def entry(ns: str) -> dict[str, Any] | None:
        counts = _count_with_mirror(store, ns, SUMMARY_FIELDS, at_close=True)
        return None if counts is None else summary_entry(counts, store.run_records.count(ns))

    store.replica.close(entry=entry, runs=store.run_records.count)


@backend_errors
def statistics(store: StoreCore, *, namespace: str | None = None) -> dict[str, Any]:
    """What ``hindsight stats`` prints for ``namespace``: counts by status, by task type, by source, and runs.

    Keys: ``total``, ``status``, ``active_by_task_type`` (active memories), ``by_source`` (each mapping most
    common first) and ``runs`` (journalled runs); an embedded store's close may keep it for ``stats``.
    """
    ns = store.namespace_or_default(namespace)
    with store.lock:
        store.ensure_open()
        entry = summary_entry(count_by(store, *SUMMARY_FIELDS, namespace=ns), store.run_records.count(ns))
        store.replica.counted(ns, entry)
        return entry


@backend_errors
def count(store: StoreCore, *, namespace: str | None = None, status: MemoryStatus | None = None) -> int:
    """Number of units in ``namespace`` (all statuses unless ``status`` is given)."""
    if status is not None and status not in ALLOWED["status"]:
        raise ConfigurationError(f"status must be one of {ALLOWED['status']} or None, got {status!r}")
    ns = store.namespace_or_default(namespace)
    with store.lock:
        return sum(
            col.count() if status is None else len(col.get(where={"status": status}, include=[])["ids"])
            for _, col in store.collections_of(ns, _roles_holding(status))
        )


@backend_errors
def history(store: StoreCore, memory_id: str, *, namespace: str | None = None) -> list[MemoryUnit]:
    """The supersedes chain through ``memory_id``, newest first: from its newest successor back to the oldest.

    Raises:
        MemoryNotFoundError: ``memory_id`` does not exist.
    """
    ns = store.namespace_or_default(namespace)
    with store.lock:
        head = store.get(memory_id, namespace=ns)
        seen = {head.memory_id}
        col = store.collection(ns)
        while True:  # walk forward to the newest successor
            nxt = records(col, where={"supersedes": head.memory_id}, limit=1) if col is not None else []
            if not nxt or nxt[0].memory_id in seen:
                break
            head = nxt[0]
            seen.add(head.memory_id)
        chain = [head]
        while chain[-1].supersedes and chain[-1].supersedes not in {u.memory_id for u in chain}:
            older = store.get_many([chain[-1].supersedes], namespace=ns)
            if not older:
                break
            chain.append(older[0])
        return chain


def _value_tuples(col: Records, fields: tuple[str, ...], known: Mapping[str, Sequence[str]]) -> list[tuple[str, ...]]:
    """Each record's values of ``fields`` (``str`` of the stored value, ``""`` when missing), one tuple per record.

    A known value costs one id-only query; the records left over are read with their metadata.
    """
    ids = col.get(include=[])["ids"]
    if not ids:
        return []
    value_of: list[dict[str, str]] = []
    for field in fields:
        got: dict[str, str] = {}
        for value in known[field]:
            got.update(dict.fromkeys(col.get(where={field: value}, include=[])["ids"], value))
        value_of.append(got)
    rest = {i for got in value_of if len(got) < len(ids) for i in ids if i not in got}
    if rest:
        pages: Iterable[Rows] = (
            [col.get(ids=sorted(rest), include=["metadatas"])]
            if len(rest) <= _COUNT_PAGE
            else col.pages(include=["metadatas"], size=_COUNT_PAGE)
        )
        for rows in pages:
            for i, meta in zip(rows["ids"], rows["metadatas"] or [], strict=True):
                for field, got in zip(fields, value_of, strict=True):
                    if i not in got:
                        got[i] = str((meta or {}).get(field, ""))
    # a record deleted by another process between the queries has no value for some field: left out
    return [tuple(got[i] for got in value_of) for i in ids if all(i in got for got in value_of)]
