"""The run records in the store: each namespace's journal collection, read, written, deleted and scrubbed.

:class:`RunRecords` (``store.run_records``) is the storage under the run journal (``journal.RunJournal``, one
floor up); the store uses it itself to forget memories, count runs and export or import a backup. A record is
the JSON document of a :class:`~langchain_hindsight.runs.RunRecord` with a constant vector and filterable metadata.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_hindsight.runs import RunKind, RunRecord, check_run_id
from langchain_hindsight.store._codec import from_datetime_us, to_datetime_us
from langchain_hindsight.store.backend import Records
from langchain_hindsight.types import Outcome

__all__ = ["JOURNAL_SCHEMA", "OpenJournal", "RunRecords"]

JOURNAL_SCHEMA = 1
_EMBEDDING = [1.0]
"""Records are never searched by similarity: every one gets the same 1-d vector."""
_PAGE = 1000


def _metadata(record: RunRecord) -> dict[str, str | int | float | bool]:
    return {
        "schema": JOURNAL_SCHEMA,
        "kind": record.kind,
        "outcome": record.outcome,
        "task_type": record.task_type or "",
        "started_at_us": to_datetime_us(record.started_at),
        "ended_at_us": -1 if record.ended_at is None else to_datetime_us(record.ended_at),
        "n_served": len(record.served),
        "thread_id": record.thread_id or "",
    }


OpenJournal = Callable[[str, bool], Records | None]
"""``(namespace, create) ->`` the namespace's journal collection (``None`` when missing and not created)."""


class RunRecords:
    """The run records of every namespace's journal collection, opened by ``open_collection`` (storage only)."""

    def __init__(self, open_collection: OpenJournal) -> None:
        self._open = open_collection

    def read(self, namespace: str, **kwargs: Any) -> list[RunRecord]:
        """The records a ``get(**kwargs)`` of the namespace's journal returns (none when it has no journal)."""
        col = self._open(namespace, False)
        if col is None:
            return []
        return [RunRecord.from_json(d) for d in col.get(include=["documents"], **kwargs)["documents"] or []]

    def find(self, namespace: str, run_id: str) -> RunRecord | None:
        """The record of ``run_id`` in ``namespace``, or ``None``."""
        check_run_id(run_id)
        return next(iter(self.read(namespace, ids=[run_id])), None)

    def exists(self, namespace: str, run_ids: Sequence[str]) -> list[str]:
        """The ids among ``run_ids`` that have a record in ``namespace``."""
        col = self._open(namespace, False)
        return [] if col is None else col.exists(list(run_ids))

    def write(self, records: Sequence[RunRecord]) -> None:
        """Store ``records`` (each in its own namespace), replacing records with the same run id."""
        by_ns: dict[str, list[RunRecord]] = {}
        for r in records:
            by_ns.setdefault(r.namespace, []).append(r)
        for ns, batch in by_ns.items():
            col = self._open(ns, True)
            assert col is not None  # created on demand
            col.upsert(
                ids=[r.run_id for r in batch],
                embeddings=[_EMBEDDING] * len(batch),
                documents=[r.to_json() for r in batch],
                metadatas=[_metadata(r) for r in batch],
            )

    def delete(self, namespace: str, run_ids: Sequence[str]) -> int:
        """Delete run records; return how many existed."""
        col = self._open(namespace, False)
        if col is None:
            return 0
        present = col.exists(list(run_ids))
        if present:
            col.delete(ids=present)
        return len(present)

    def pages(
        self,
        namespace: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        outcome: Outcome | None = None,
        kind: RunKind | None = None,
    ) -> Iterator[list[RunRecord]]:
        """The records of ``namespace`` started in ``[since, until)``, of that outcome and kind, a page at a time.

        Unordered; ``None`` leaves a condition out.
        """
        clauses: list[dict[str, Any]] = [
            {"started_at_us": {op: to_datetime_us(t)}} for op, t in (("$gte", since), ("$lt", until)) if t is not None
        ]
        clauses += [{key: value} for key, value in (("outcome", outcome), ("kind", kind)) if value is not None]
        where = None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}
        col = self._open(namespace, False)
        for rows in [] if col is None else col.pages(include=["documents"], where=where, size=_PAGE):
            yield [RunRecord.from_json(d) for d in rows["documents"] or []]

    def finished_in_thread(self, namespace: str, thread_id: str) -> list[RunRecord]:
        """The finished runs (kind ``run``) of conversation thread ``thread_id`` in ``namespace`` (unordered)."""
        where = {"$and": [{"thread_id": thread_id}, {"kind": "run"}, {"ended_at_us": {"$gte": 0}}]}
        return self.read(namespace, where=where)

    def last_started_at(self, namespace: str, kind: RunKind) -> datetime | None:
        """When the newest record of ``kind`` started, or ``None``."""
        col = self._open(namespace, False)
        if col is None:
            return None
        rows = col.get(where={"kind": kind}, include=["metadatas"])
        stamps = [int(m["started_at_us"]) for m in rows["metadatas"] or [] if m]
        return from_datetime_us(max(stamps)) if stamps else None

    def count(self, namespace: str) -> int:
        """How many records the namespace's journal holds."""
        col = self._open(namespace, False)
        return 0 if col is None else col.count()

    def scrub(
        self, namespace: str, memory_ids: Sequence[str], feedback: Mapping[str, Sequence[str]] | None = None
    ) -> int:
        """Remove memory ids from every record of ``namespace`` (served, produced); return how many changed.

        ``feedback`` maps a run id to the contents of forgotten ``user_feedback`` units made from that run's
        comments: those comments are erased too (see :meth:`~langchain_hindsight.runs.RunRecord.forgetting`).
        """
        ids = list(dict.fromkeys(memory_ids))
        col = self._open(namespace, False)
        if not ids or col is None:
            return 0
        gone = set(ids)
        changed: dict[str, RunRecord] = {}
        for start in range(0, len(ids), 50):
            chunk = ids[start : start + 50]
            clauses: list[dict[str, Any]] = [{"$contains": i} for i in chunk]
            where_document = clauses[0] if len(clauses) == 1 else {"$or": clauses}
            for r in self.read(namespace, where_document=where_document):  # as stored: found twice, forgotten alike
                changed[r.run_id] = r.forgetting(gone, (feedback or {}).get(r.run_id, ()))
        if changed:
            self.write(list(changed.values()))
        return len(changed)
