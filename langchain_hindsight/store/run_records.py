"""The run records in the store: each namespace's journal collection, read, written, deleted and scrubbed.

:class:`RunRecords` (``store.run_records``) is the storage under the run journal
(:class:`~langchain_hindsight.journal.RunJournal`, one floor up, which reaches it only through the
store's public API). The store uses it itself when it forgets memories (the journal keeps no trace
of them), counts runs for ``stats``, and exports or imports a backup with the journal. Every record
is the JSON document of a :class:`~langchain_hindsight.runs.RunRecord` with a constant
one-dimensional embedding and filterable metadata (``kind``, ``outcome``, ``task_type``,
``started_at_us``, ``ended_at_us``, ``thread_id``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_hindsight._safety import render_safe
from langchain_hindsight._text import clean_feedback
from langchain_hindsight.runs import FeedbackEffect, RunFeedback, RunKind, RunRecord, UnitState, check_run_id
from langchain_hindsight.store._codec import from_datetime_us, to_datetime_us
from langchain_hindsight.store.backend import Records
from langchain_hindsight.types import Outcome

__all__ = ["JOURNAL_SCHEMA", "OpenJournal", "RunRecords", "erase_comments", "scrub_effects"]

JOURNAL_SCHEMA = 1
_EMBEDDING = [1.0]
"""Records are never searched by similarity: every one gets the same 1-d vector."""
_PAGE = 1000


def erase_comments(entries: list[RunFeedback], contents: Sequence[str]) -> list[RunFeedback]:
    """``entries`` with the comments that became the forgotten units ``contents`` erased."""
    if not contents:
        return entries

    def made(text: str) -> bool:
        core = render_safe(clean_feedback(text) or text)
        return any(core and core in c for c in contents)

    matched = [e for e in entries if e.text and made(e.text)]
    erase = matched or [e for e in entries if e.text]  # unmatched: erase every comment rather than keep one
    return [e.model_copy(update={"text": ""}) if e in erase else e for e in entries]


def _clean_state(state: UnitState | None, gone: set[str]) -> UnitState | None:
    if state is None:
        return None
    return state.model_copy(
        update={
            "supersedes": None if state.supersedes in gone else state.supersedes,
            "merged_from": [i for i in state.merged_from if i not in gone],
        }
    )


def scrub_effects(entries: list[RunFeedback], gone: set[str]) -> list[RunFeedback]:
    """``entries`` without the effects on the forgotten ids ``gone`` (nor any other reference to them)."""

    def clean(e: FeedbackEffect) -> FeedbackEffect:
        reason = e.reason
        for memory_id in gone:
            reason = reason.replace(memory_id, "(a forgotten memory)")
        return e.model_copy(
            update={
                "reason": reason,
                "before": _clean_state(e.before, gone),
                "after": _clean_state(e.after, gone),
                "by": None if e.by in gone else e.by,
            }
        )

    out: list[RunFeedback] = []
    for entry in entries:
        changes: dict[str, Any] = {}
        if entry.effects is not None:
            changes["effects"] = [clean(e) for e in entry.effects if e.memory_id not in gone]
        for name in ("credit_before", "credit_after", "debit_before", "debit_after"):
            credit = getattr(entry, name)
            if credit is not None:
                changes[name] = {k: v for k, v in credit.items() if k not in gone}
        out.append(entry.model_copy(update=changes) if changes else entry)
    return out


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
    """The run records of every namespace's journal collection (storage only: no locking, no validation).

    Args:
        open_collection: Opens a namespace's journal collection (see :data:`OpenJournal`).
    """

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
        found = self.read(namespace, ids=[run_id])
        return found[0] if found else None

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
        clauses: list[dict[str, Any]] = []
        if since is not None:
            clauses.append({"started_at_us": {"$gte": to_datetime_us(since)}})
        if until is not None:
            clauses.append({"started_at_us": {"$lt": to_datetime_us(until)}})
        if outcome is not None:
            clauses.append({"outcome": outcome})
        if kind is not None:
            clauses.append({"kind": kind})
        where = None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}
        offset = 0
        while True:
            page = self.read(namespace, where=where, limit=_PAGE, offset=offset)
            if page:
                yield page
            if len(page) < _PAGE:
                return
            offset += _PAGE

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

        ``feedback`` maps a run id to the contents of forgotten ``user_feedback``
        units made from that run's comments: those comments are erased too (see
        :func:`erase_comments`).
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
            for r in self.read(namespace, where_document=where_document):
                r = changed.get(r.run_id, r)
                changed[r.run_id] = r.model_copy(
                    update={
                        "served": [m for m in r.served if m.memory_id not in gone],
                        "produced": [p for p in r.produced if p not in gone],
                        "feedback": scrub_effects(erase_comments(r.feedback, (feedback or {}).get(r.run_id, ())), gone),
                        "credit": None if r.credit is None else {k: v for k, v in r.credit.items() if k not in gone},
                        "debit": None if r.debit is None else {k: v for k, v in r.debit.items() if k not in gone},
                        "uses": None if r.uses is None else [u for u in r.uses if u.memory_id not in gone],
                    }
                )
        if changed:
            self.write(list(changed.values()))
        return len(changed)
