"""The run journal: which memories each run was shown, what it produced, how it ended (to review which memories help).

A consumer of the store, one floor above it: every run is one :class:`~langchain_hindsight.runs.RunRecord`
kept in the namespace's ``journal`` collection of the same backend as the memories (so it works with a
Chroma server or Postgres, and ``store.forget(namespace=...)`` removes it). The journal reaches that
storage only through the store's public API: ``store.run_records``
(:class:`~langchain_hindsight.store.run_records.RunRecords`, which ``store.forget`` also uses to scrub
forgotten ids, so forgetting never reaches up to the journal), ``store.atomic`` for a read-modify-write,
``store.lock``, ``store.namespaces()`` and ``store.vocabulary``.

:meth:`RunJournal.scrub` removes forgotten memory ids from every record. "Which memories shaped
this run, and why were they ranked so" is a question about recall's scores: it is answered by
:func:`langchain_hindsight.recall.explain.explain_run` (``Hindsight.explain``, ``hindsight explain``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from langchain_hindsight._checks import is_int, refuse_unknown_keywords
from langchain_hindsight.errors import ConfigurationError, RunNotFoundError
from langchain_hindsight.runs import FeedbackEffect, MemoryUse, RunFeedback, RunKind, RunRecord
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.store.run_records import RunRecords
from langchain_hindsight.types import Outcome, ScoredMemory, ServedMemory, utcnow

__all__ = ["RunJournal"]


def _when(now: datetime | None, what: str = "now") -> datetime:
    """``now`` as an aware UTC datetime (``None``: the current time); anything else is a :class:`ConfigurationError`."""
    if now is None:
        return utcnow()
    if not isinstance(now, datetime):
        raise ConfigurationError(f"{what} must be a datetime or None, got {type(now).__name__}")
    try:
        return now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    except (OverflowError, ValueError) as e:
        raise ConfigurationError(f"{what} {now.isoformat()} is out of range once converted to UTC") from e


def _changes(value: Mapping[str, float] | None, what: str) -> dict[str, float] | None:
    """A credit or debit (memory id → confidence change) checked: string ids, finite numbers."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{what} must map memory ids to numbers, got {type(value).__name__}")
    out: dict[str, float] = {}
    for k, v in value.items():
        if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ConfigurationError(f"{what} must map memory ids to finite numbers, got {k!r}: {v!r}")
        out[k] = float(v)
    return out


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise ConfigurationError(f"{what} must be a string, got {type(value).__name__}")
    return value


@refuse_unknown_keywords
class RunJournal:
    """Run records stored beside the memories, in the store's Chroma database.

    Instantiate:
        .. code-block:: python

            from langchain_hindsight import MemoryStore, RunJournal

            store = MemoryStore("./memory_db")
            journal = RunJournal(store)
            journal.start("run-1", task="clean sales.csv", served=recalled)  # list[ScoredMemory]
            journal.finish("run-1", outcome="success")
            # why it was shown what it was shown: Hindsight.explain("run-1") (recall/explain.py)

    Records are updated read-modify-write under the store's lock, which is safe
    within one process. Two processes updating the *same* run through a Chroma
    server can lose one of the two updates (each run is normally written by the
    process that ran it).

    Args:
        store: The memory store whose Chroma database holds the journal.
        namespace: Default namespace; ``None`` uses ``store.namespace``.
    """

    def __init__(self, store: MemoryStore, *, namespace: str | None = None) -> None:
        self.store = store
        self.namespace = store.namespace_or_default(namespace)

    # ------------------------------------------------------------------ storage
    @property
    def _records(self) -> RunRecords:
        return self.store.run_records

    def _ns(self, namespace: str | None) -> str:
        return self.namespace if namespace is None else self.store.namespace_or_default(namespace)

    def _write(self, records: Sequence[RunRecord]) -> None:
        self._records.write(records)

    def _find(self, run_id: str, namespace: str | None) -> RunRecord | None:
        """The record of ``run_id`` in ``namespace`` (the journal's own when ``None``) — never another one.

        A run id of another tenant is "not found" here; :meth:`locate` is the one
        explicit cross-namespace lookup.
        """
        return self._records.find(self._ns(namespace), run_id)

    def locate(self, run_id: str) -> list[str]:
        """Namespaces whose journal holds a run with this id (an explicit cross-namespace lookup).

        Every other method looks a run id up in one namespace only (the
        journal's own unless ``namespace=`` is given), so a tenant cannot read
        or change another tenant's run by guessing its id. An operator who
        holds a run id but not its namespace calls this, then passes the
        namespace explicitly.
        """
        found: list[str] = []
        with self.store.lock:
            for ns in self.store.namespaces():
                if self._records.exists(ns, [run_id]):
                    found.append(ns)
        return found

    # ------------------------------------------------------------------ writes
    def record(self, record: RunRecord) -> RunRecord:
        """Store ``record`` as given, replacing any record with the same run id in its namespace."""
        if not isinstance(record, RunRecord):
            raise ConfigurationError(f"record must be a RunRecord, got {type(record).__name__}")
        self.store.namespace_or_default(record.namespace)
        with self.store.lock:
            self._write([record])
        return record

    def start(
        self,
        run_id: str,
        *,
        task: str = "",
        task_type: str | None = None,
        namespace: str | None = None,
        served: Sequence[ScoredMemory] = (),
        withheld: Sequence[str] = (),
        thread_id: str | None = None,
        now: datetime | None = None,
    ) -> RunRecord:
        """Record that a run started and which memories it was served (best first).

        ``withheld``: ids the optional relevance check set aside for this task (not served).
        Starting a run id again replaces the served and withheld lists and keeps what else was recorded.
        """
        ns = self._ns(namespace)
        _text(run_id, "run_id")
        _text(task, "task")
        started = _when(now)
        if isinstance(served, str) or not isinstance(served, Sequence):
            raise ConfigurationError(f"served must be a sequence of ScoredMemory, got {type(served).__name__}")
        shown = [ServedMemory.from_scored(s, rank) for rank, s in enumerate(served, start=1)]
        ids_only = isinstance(withheld, Sequence) and all(isinstance(i, str) for i in withheld)
        if isinstance(withheld, str) or not ids_only:
            raise ConfigurationError("withheld must be a sequence of memory ids")
        changes: dict[str, Any] = {"served": shown, "withheld": list(dict.fromkeys(withheld))}
        if task:
            changes["task"] = task
        if task_type:
            changes["task_type"] = self.store.vocabulary.resolve(task_type)
        if thread_id:
            changes["thread_id"] = thread_id

        def plan() -> RunRecord:
            current = self._find(run_id, ns)
            if current is None:
                current = RunRecord(run_id=run_id, namespace=ns, started_at=started)
            updated = current.model_copy(update=changes)
            self._write([updated])
            return updated

        return self._atomic(ns, plan)

    def _atomic(self, namespace: str, plan: Callable[[], RunRecord]) -> RunRecord:
        """Run a read-modify-write ``plan`` on ``namespace``'s journal as one write plan of the store.

        :meth:`MemoryStore.atomic`: on a database one transaction under the namespace's lock, so two
        processes updating one run (a verdict and an undo, two verdicts) apply one after the other
        and neither is lost; the plan may be re-run after a serialization failure, so it re-reads the record.
        """
        return self.store.atomic(namespace, plan)

    def _change(self, run_id: str, namespace: str | None, **changes: Any) -> RunRecord:
        return self._update(run_id, namespace, lambda _current: changes)

    def _update(
        self, run_id: str, namespace: str | None, changes: Callable[[RunRecord], Mapping[str, Any]]
    ) -> RunRecord:
        """The run's record with ``changes(current record)`` applied, read and written in one write plan."""

        def plan() -> RunRecord:
            current = self._find(run_id, namespace)
            if current is None:
                raise RunNotFoundError(f"no run {run_id!r} in the journal of namespace {self._ns(namespace)!r}")
            updated = RunRecord.model_validate({**current.model_dump(), **changes(current)})
            self._write([updated])
            return updated

        return self._atomic(self._ns(namespace), plan)

    def finish(
        self,
        run_id: str,
        *,
        outcome: Outcome,
        task_type: str | None = None,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> RunRecord:
        """Record how a run ended.

        Raises:
            RunNotFoundError: the run was never started.
        """
        if outcome not in ("success", "failure", "unknown"):
            raise ConfigurationError(f"outcome must be 'success', 'failure' or 'unknown', got {outcome!r}")
        changes: dict[str, Any] = {"outcome": outcome, "ended_at": _when(now)}
        if task_type:
            changes["task_type"] = self.store.vocabulary.resolve(task_type)
        return self._change(run_id, namespace, **changes)

    def add_produced(self, run_id: str, memory_ids: Sequence[str], *, namespace: str | None = None) -> RunRecord:
        """Record the memories reflection stored from this run.

        Raises:
            RunNotFoundError: the run was never started.
        """
        return self._update(
            run_id, namespace, lambda current: {"produced": list(dict.fromkeys([*current.produced, *memory_ids]))}
        )

    def add_feedback(
        self,
        run_id: str,
        *,
        text: str = "",
        success: bool | None = None,
        rejected: bool = False,
        namespace: str | None = None,
        now: datetime | None = None,
        effects: Sequence[FeedbackEffect] | None = None,
        credit_before: Mapping[str, float] | None = None,
        credit_after: Mapping[str, float] | None = None,
        debit_before: Mapping[str, float] | None = None,
        debit_after: Mapping[str, float] | None = None,
        rule: str | None = None,
    ) -> RunRecord:
        """Record a user's verdict on a run, and what it did (``effects``, the credit and debit before and after).

        ``rule``: what recognised it in the conversation, if anything.

        Raises:
            RunNotFoundError: no such run.
        """
        try:
            entry = RunFeedback(
                at=_when(now),
                text=_text(text, "text"),
                success=success,
                rejected=rejected,
                effects=None if effects is None else list(effects),
                credit_before=_changes(credit_before, "credit_before"),
                credit_after=_changes(credit_after, "credit_after"),
                debit_before=_changes(debit_before, "debit_before"),
                debit_after=_changes(debit_after, "debit_after"),
                rule=rule,
            )
        except ValidationError as e:
            raise ConfigurationError(f"invalid feedback entry for run {run_id!r}: {e.errors()[0]['msg']}") from e
        return self._update(run_id, namespace, lambda current: {"feedback": [*current.feedback, entry]})

    def add_undo(
        self,
        run_id: str,
        index: int,
        *,
        effects: Sequence[FeedbackEffect],
        credit: Mapping[str, float] | None,
        debit: Mapping[str, float] | None = None,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> RunRecord:
        """Record that the verdict ``feedback[index]`` was undone: mark it, append the undo entry, set credit and debit.

        Raises:
            RunNotFoundError: no such run.
            ConfigurationError: ``index`` is not a verdict in force.
        """
        when = _when(now)

        def undone(current: RunRecord) -> dict[str, Any]:
            entries = list(current.feedback)
            if not 0 <= index < len(entries) or entries[index].kind != "verdict" or entries[index].undone_at:
                raise ConfigurationError(f"feedback {index} of run {run_id!r} is not a verdict in force")
            entries[index] = entries[index].model_copy(update={"undone_at": when})
            undo = RunFeedback(
                at=when,
                kind="undo",
                undoes=index,
                effects=list(effects),
                credit_before=current.credit,
                credit_after=_changes(credit, "credit"),
                debit_before=current.debit,
                debit_after=_changes(debit, "debit"),
            )
            return {
                "feedback": [*entries, undo],
                "credit": _changes(credit, "credit"),
                "debit": _changes(debit, "debit"),
            }

        return self._update(run_id, namespace, undone)

    def set_credit(self, run_id: str, credit: dict[str, float] | None, *, namespace: str | None = None) -> RunRecord:
        """Record the success credit now applied to the run's served memories (``None``: none applied).

        Raises:
            RunNotFoundError: no such run.
        """
        return self._change(run_id, namespace, credit=_changes(credit, "credit"))

    def set_debit(self, run_id: str, debit: dict[str, float] | None, *, namespace: str | None = None) -> RunRecord:
        """Record the failure debit now applied to the run's served memories (``None``: none applied).

        Raises:
            RunNotFoundError: no such run.
        """
        return self._change(run_id, namespace, debit=_changes(debit, "debit"))

    def set_uses(self, run_id: str, uses: Sequence[MemoryUse], *, namespace: str | None = None) -> RunRecord:
        """Record what the run's agent did with each served memory (retrieval feedback: used, set aside, unclear).

        Raises:
            RunNotFoundError: no such run.
        """
        return self._change(run_id, namespace, uses=list(uses))

    def last_in_thread(
        self, thread_id: str, *, namespace: str | None = None, exclude: Sequence[str] = ()
    ) -> RunRecord | None:
        """The newest finished run of conversation thread ``thread_id`` (``None`` when there is none).

        Args:
            thread_id: The thread (LangGraph ``thread_id``).
            namespace: The namespace whose journal is searched.
            exclude: Run ids to skip (e.g. the run being started).
        """
        runs = self.thread_runs(thread_id, namespace=namespace, exclude=exclude) if thread_id else []
        return runs[0] if runs else None

    def thread_runs(
        self, thread_id: str, *, namespace: str | None = None, exclude: Sequence[str] = ()
    ) -> list[RunRecord]:
        """The finished runs of conversation thread ``thread_id``, newest first.

        Args:
            thread_id: The thread (LangGraph ``thread_id``).
            namespace: The namespace whose journal is searched.
            exclude: Run ids to skip (e.g. the run being started).
        """
        if not thread_id:
            return []
        ns = self._ns(namespace)
        if isinstance(exclude, str) or not isinstance(exclude, Sequence):
            raise ConfigurationError(f"exclude must be a sequence of run ids, got {type(exclude).__name__}")
        skip = set(exclude)
        with self.store.lock:
            runs = [r for r in self._records.finished_in_thread(ns, thread_id) if r.run_id not in skip]
        return sorted(runs, key=lambda r: (r.ended_at or r.started_at, r.started_at), reverse=True)

    def delete(self, run_ids: Sequence[str], *, namespace: str | None = None) -> int:
        """Delete run records; returns how many existed."""
        ns = self._ns(namespace)
        with self.store.lock:
            return self._records.delete(ns, list(run_ids))

    def scrub(
        self,
        memory_ids: Sequence[str] | str,
        *,
        namespace: str | None = None,
        feedback: Mapping[str, Sequence[str]] | None = None,
    ) -> int:
        """Remove forgotten memory ids from every record of the namespace (served, produced).

        Call it when memories are hard-deleted, so the journal keeps no trace of them.
        ``feedback`` maps a run id to the contents of forgotten ``user_feedback``
        units made from that run's comments: the comments they were made from are
        erased from the run's feedback entries too (when no comment can be matched
        to a forgotten unit, every comment of that run is erased).

        Returns:
            How many records changed.
        """
        if isinstance(memory_ids, str):
            ids = [memory_ids]
        elif isinstance(memory_ids, Sequence) and all(isinstance(i, str) for i in memory_ids):
            ids = list(dict.fromkeys(memory_ids))
        else:
            raise ConfigurationError(f"memory_ids must be an id or a sequence of ids, got {type(memory_ids).__name__}")
        ns = self._ns(namespace)
        with self.store.lock:
            return self._records.scrub(ns, ids, feedback)

    # ------------------------------------------------------------------ reads
    def get(self, run_id: str, *, namespace: str | None = None) -> RunRecord:
        """The record of ``run_id`` in ``namespace`` (default: the journal's namespace; never another one).

        Raises:
            RunNotFoundError: no such run.
        """
        with self.store.lock:
            found = self._find(run_id, namespace)
        if found is None:
            raise RunNotFoundError(f"no run {run_id!r} in the journal of namespace {self._ns(namespace)!r}")
        return found

    def iter_runs(
        self,
        *,
        namespace: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        outcome: Outcome | None = None,
        kind: RunKind | None = "run",
    ) -> Iterator[RunRecord]:
        """Records started in ``[since, until)`` (unordered, paged)."""
        ns = self._ns(namespace)
        since = None if since is None else _when(since, "since")
        until = None if until is None else _when(until, "until")
        pages = self._records.pages(ns, since=since, until=until, outcome=outcome, kind=kind)
        while True:
            with self.store.lock:
                page = next(pages, None)
            if page is None:
                return
            yield from page

    def list_runs(
        self,
        *,
        namespace: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        outcome: Outcome | None = None,
        kind: RunKind | None = "run",
        limit: int | None = None,
    ) -> list[RunRecord]:
        """Records started in ``[since, until)``, newest first."""
        runs = sorted(
            self.iter_runs(namespace=namespace, since=since, until=until, outcome=outcome, kind=kind),
            key=lambda r: (r.started_at, r.run_id),
            reverse=True,
        )
        if limit is not None and not is_int(limit, 0):
            raise ConfigurationError(f"limit must be a non-negative int or None, got {limit!r}")
        return runs if limit is None else runs[:limit]

    def last_started_at(self, *, namespace: str | None = None, kind: RunKind = "run") -> datetime | None:
        """When the newest record of ``kind`` started, or ``None`` when there is none."""
        ns = self._ns(namespace)
        with self.store.lock:
            return self._records.last_started_at(ns, kind)

    def count(self, *, namespace: str | None = None) -> int:
        """Number of records in the namespace's journal."""
        with self.store.lock:
            return self._records.count(self._ns(namespace))

    # ------------------------------------------------------------------ async twins (store I/O in a worker thread)
    async def astart(self, run_id: str, **kwargs: Any) -> RunRecord:
        """Async :meth:`start`."""
        return await asyncio.to_thread(lambda: self.start(run_id, **kwargs))

    async def afinish(self, run_id: str, **kwargs: Any) -> RunRecord:
        """Async :meth:`finish`."""
        return await asyncio.to_thread(lambda: self.finish(run_id, **kwargs))

    async def aadd_produced(self, run_id: str, memory_ids: Sequence[str], **kwargs: Any) -> RunRecord:
        """Async :meth:`add_produced`."""
        return await asyncio.to_thread(lambda: self.add_produced(run_id, memory_ids, **kwargs))

    async def aadd_feedback(self, run_id: str, **kwargs: Any) -> RunRecord:
        """Async :meth:`add_feedback`."""
        return await asyncio.to_thread(lambda: self.add_feedback(run_id, **kwargs))

    async def aget(self, run_id: str, *, namespace: str | None = None) -> RunRecord:
        """Async :meth:`get`."""
        return await asyncio.to_thread(lambda: self.get(run_id, namespace=namespace))
