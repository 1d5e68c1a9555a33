"""The run journal: which memories each run was shown, what it produced, how it ended (seed §6).

Every run is one :class:`RunRecord` stored in the namespace's ``journal``
collection of the same Chroma database as the memories (so it works with a
Chroma server, and ``store.forget(namespace=...)`` removes it). A record is a
JSON document with a constant one-dimensional embedding and filterable
metadata (``kind``, ``outcome``, ``task_type``, ``started_at_us``).

:meth:`RunJournal.explain` answers "which memories shaped this run, and why
were they ranked so"; :meth:`RunJournal.scrub` removes forgotten memory ids
from every record.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from langchain_hindsight._safety import render_safe
from langchain_hindsight._text import clean_feedback
from langchain_hindsight.errors import ConfigurationError, RunNotFoundError, StoreError
from langchain_hindsight.store._codec import from_datetime_us, to_datetime_us
from langchain_hindsight.types import MemoryStatus, MemoryUnit, Outcome, ScoredMemory, ServedMemory, utcnow

if TYPE_CHECKING:
    from langchain_hindsight.store.memory_store import MemoryStore

__all__ = [
    "ExplainedMemory",
    "RunExplanation",
    "RunFeedback",
    "RunJournal",
    "RunKind",
    "RunRecord",
    "ServedMemory",
]

RunKind = Literal["run", "review"]
"""``run``: one agent task; ``review``: one periodic review pass (see ``Lifecycle.review``)."""

JOURNAL_SCHEMA = 1
_EMBEDDING = [1.0]
"""Records are never searched by similarity: every one gets the same 1-d vector."""
_PAGE = 1000


class RunFeedback(BaseModel):
    """A user's verdict on a run."""

    model_config = ConfigDict(frozen=True)

    at: datetime = Field(default_factory=utcnow)
    text: str = ""
    success: bool | None = None
    rejected: bool = False
    """The user said the served memories were wrong."""


class RunRecord(BaseModel):
    """What one run was shown, what it produced and how it ended.

    Example:
        >>> r = RunRecord(run_id="run-1", task="clean sales.csv", task_type="data_cleaning")
        >>> r.outcome, r.served_ids
        ('unknown', [])
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    kind: RunKind = "run"
    task: str = ""
    task_type: str | None = None
    namespace: str = "default"
    outcome: Outcome = "unknown"
    started_at: datetime = Field(default_factory=utcnow)
    ended_at: datetime | None = None
    served: list[ServedMemory] = Field(default_factory=list)
    produced: list[str] = Field(default_factory=list)
    """Ids of the memories reflection (or review) stored from this run."""
    feedback: list[RunFeedback] = Field(default_factory=list)
    thread_id: str | None = None
    """The conversation thread the run belongs to (LangGraph ``thread_id``), when known."""
    credit: dict[str, float] | None = None
    """Success credit currently applied to the served memories: memory id → confidence change.

    ``None``: no credit is applied (never credited, or the credit was undone by a
    rejection). Kept so a later rejection reverses exactly what was credited,
    and a second success verdict does not credit again."""

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, value: str) -> str:
        if not value or len(value) > 256 or "\x00" in value:
            raise ValueError("run_id must be 1-256 characters")
        return value

    @property
    def served_ids(self) -> list[str]:
        """Ids of the served memories, best first."""
        return [m.memory_id for m in sorted(self.served, key=lambda m: m.rank)]

    def to_json(self) -> str:
        """The record as the JSON document stored in Chroma."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str) -> RunRecord:
        """Inverse of :meth:`to_json`.

        Raises:
            StoreError: the document is not a run record.
        """
        try:
            return cls.model_validate_json(text)
        except ValidationError as e:
            raise StoreError(f"corrupt run record: {e}") from e


class ExplainedMemory(BaseModel):
    """One served memory, its ranking numbers and what became of it."""

    model_config = ConfigDict(frozen=True)

    served: ServedMemory
    status: MemoryStatus | Literal["forgotten"]
    """Current status; ``forgotten`` when the memory no longer exists (deleted or merged away)."""
    unit: MemoryUnit | None = None
    """The memory as it is now (``None`` when forgotten)."""
    factors: list[tuple[str, float]] = Field(default_factory=list)
    """The additive score factors, largest contribution first."""

    @property
    def main_factor(self) -> str | None:
        """The factor that contributed most to the score."""
        return self.factors[0][0] if self.factors else None


class RunExplanation(BaseModel):
    """Which memories shaped a run and why they were ranked so (see :meth:`RunJournal.explain`)."""

    model_config = ConfigDict(frozen=True)

    record: RunRecord
    memories: list[ExplainedMemory] = Field(default_factory=list)
    """Served memories in rank order."""
    produced: list[tuple[str, MemoryUnit | None]] = Field(default_factory=list)
    """Produced memory ids with the unit as it is now (``None`` when it no longer exists)."""


def _check_run_id(run_id: object) -> None:
    if not isinstance(run_id, str) or not run_id or len(run_id) > 256 or "\x00" in run_id:
        raise ConfigurationError(f"run_id must be a string of 1-256 characters without NUL, got {run_id!r}")


def _erase_comments(entries: list[RunFeedback], contents: Sequence[str]) -> list[RunFeedback]:
    """``entries`` with the comments that became the forgotten units ``contents`` erased."""
    if not contents:
        return entries

    def made(text: str) -> bool:
        core = render_safe(clean_feedback(text) or text)
        return any(core and core in c for c in contents)

    matched = [e for e in entries if e.text and made(e.text)]
    erase = matched or [e for e in entries if e.text]  # unmatched: erase every comment rather than keep one
    return [e.model_copy(update={"text": ""}) if e in erase else e for e in entries]


_FACTORS = ("similarity", "task_type", "confidence", "access", "source")


def _factors(breakdown: dict[str, float]) -> list[tuple[str, float]]:
    found = [(k, float(breakdown[k])) for k in _FACTORS if k in breakdown]
    return sorted(found, key=lambda kv: kv[1], reverse=True)


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


class RunJournal:
    """Run records stored beside the memories, in the store's Chroma database.

    Instantiate:
        .. code-block:: python

            from langchain_hindsight import MemoryStore, RunJournal

            store = MemoryStore("./memory_db")
            journal = RunJournal(store)
            journal.start("run-1", task="clean sales.csv", served=recalled)  # list[ScoredMemory]
            journal.finish("run-1", outcome="success")
            print(journal.explain("run-1").memories[0].main_factor)

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
        self.namespace = store._ns(namespace)

    # ------------------------------------------------------------------ storage
    def _ns(self, namespace: str | None) -> str:
        return self.namespace if namespace is None else self.store._ns(namespace)

    def _col(self, namespace: str, *, create: bool) -> Any:
        return self.store._collection(namespace, "journal", create=create)

    def _read(self, col: Any, **kwargs: Any) -> list[RunRecord]:
        try:
            rows = col.get(include=["documents"], **kwargs)
        except Exception as e:
            raise StoreError(f"chroma get failed: {e}") from e
        return [RunRecord.from_json(d) for d in rows["documents"] or []]

    def _write(self, records: Sequence[RunRecord]) -> None:
        by_ns: dict[str, list[RunRecord]] = {}
        for r in records:
            by_ns.setdefault(r.namespace, []).append(r)
        for ns, batch in by_ns.items():
            col = self._col(ns, create=True)
            try:
                col.upsert(
                    ids=[r.run_id for r in batch],
                    embeddings=[_EMBEDDING] * len(batch),
                    documents=[r.to_json() for r in batch],
                    metadatas=[_metadata(r) for r in batch],
                )
            except Exception as e:
                raise StoreError(f"chroma write of run records failed: {e}") from e

    def _find(self, run_id: str, namespace: str | None) -> RunRecord | None:
        """The record of ``run_id`` in ``namespace`` (the journal's own when ``None``) — never another one.

        A run id of another tenant is "not found" here; :meth:`locate` is the one
        explicit cross-namespace lookup.
        """
        _check_run_id(run_id)
        col = self._col(self._ns(namespace), create=False)
        if col is None:
            return None
        found = self._read(col, ids=[run_id])
        return found[0] if found else None

    def locate(self, run_id: str) -> list[str]:
        """Namespaces whose journal holds a run with this id (an explicit cross-namespace lookup).

        Every other method looks a run id up in one namespace only (the
        journal's own unless ``namespace=`` is given), so a tenant cannot read
        or change another tenant's run by guessing its id. An operator who
        holds a run id but not its namespace calls this, then passes the
        namespace explicitly.
        """
        found: list[str] = []
        with self.store._lock:
            for ns in self.store.namespaces():
                col = self._col(ns, create=False)
                if col is not None and col.get(ids=[run_id], include=[])["ids"]:
                    found.append(ns)
        return found

    # ------------------------------------------------------------------ writes
    def record(self, record: RunRecord) -> RunRecord:
        """Store ``record`` as given, replacing any record with the same run id in its namespace."""
        if not isinstance(record, RunRecord):
            raise ConfigurationError(f"record must be a RunRecord, got {type(record).__name__}")
        self.store._ns(record.namespace)
        with self.store._lock:
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
        thread_id: str | None = None,
        now: datetime | None = None,
    ) -> RunRecord:
        """Record that a run started and which memories it was served (best first).

        Starting a run id again replaces the served list and keeps what else was recorded.
        """
        ns = self._ns(namespace)
        shown = [ServedMemory.from_scored(s, rank) for rank, s in enumerate(served, start=1)]
        with self.store._lock:
            current = self._find(run_id, ns)
            if current is None:
                current = RunRecord(run_id=run_id, namespace=ns, started_at=now or utcnow())
            changes: dict[str, Any] = {"served": shown}
            if task:
                changes["task"] = task
            if task_type:
                changes["task_type"] = self.store.vocabulary.normalize(task_type)
            if thread_id:
                changes["thread_id"] = thread_id
            updated = current.model_copy(update=changes)
            self._write([updated])
            return updated

    def _change(self, run_id: str, namespace: str | None, **changes: Any) -> RunRecord:
        with self.store._lock:
            current = self._find(run_id, namespace)
            if current is None:
                raise RunNotFoundError(f"no run {run_id!r} in the journal of namespace {self._ns(namespace)!r}")
            updated = RunRecord.model_validate({**current.model_dump(), **changes})
            self._write([updated])
            return updated

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
        changes: dict[str, Any] = {"outcome": outcome, "ended_at": now or utcnow()}
        if task_type:
            changes["task_type"] = self.store.vocabulary.normalize(task_type)
        return self._change(run_id, namespace, **changes)

    def add_produced(self, run_id: str, memory_ids: Sequence[str], *, namespace: str | None = None) -> RunRecord:
        """Record the memories reflection stored from this run.

        Raises:
            RunNotFoundError: the run was never started.
        """
        with self.store._lock:
            current = self._find(run_id, namespace)
            if current is None:
                raise RunNotFoundError(f"no run {run_id!r} in the journal of namespace {self._ns(namespace)!r}")
            produced = list(dict.fromkeys([*current.produced, *memory_ids]))
            return self._change(run_id, current.namespace, produced=produced)

    def add_feedback(
        self,
        run_id: str,
        *,
        text: str = "",
        success: bool | None = None,
        rejected: bool = False,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> RunRecord:
        """Record a user's verdict on a run.

        Raises:
            RunNotFoundError: no such run.
        """
        entry = RunFeedback(at=now or utcnow(), text=text, success=success, rejected=rejected)
        with self.store._lock:
            current = self._find(run_id, namespace)
            if current is None:
                raise RunNotFoundError(f"no run {run_id!r} in the journal of namespace {self._ns(namespace)!r}")
            return self._change(run_id, current.namespace, feedback=[*current.feedback, entry])

    def set_credit(self, run_id: str, credit: dict[str, float] | None, *, namespace: str | None = None) -> RunRecord:
        """Record the success credit now applied to the run's served memories (``None``: none applied).

        Raises:
            RunNotFoundError: no such run.
        """
        value = None if credit is None else {str(k): float(v) for k, v in credit.items()}
        return self._change(run_id, namespace, credit=value)

    def last_in_thread(
        self, thread_id: str, *, namespace: str | None = None, exclude: Sequence[str] = ()
    ) -> RunRecord | None:
        """The newest finished run of conversation thread ``thread_id`` (``None`` when there is none).

        Args:
            thread_id: The thread (LangGraph ``thread_id``).
            namespace: The namespace whose journal is searched.
            exclude: Run ids to skip (e.g. the run being started).
        """
        if not thread_id:
            return None
        ns = self._ns(namespace)
        skip = set(exclude)
        with self.store._lock:
            col = self._col(ns, create=False)
            if col is None:
                return None
            where = {"$and": [{"thread_id": thread_id}, {"kind": "run"}, {"ended_at_us": {"$gte": 0}}]}
            runs = [r for r in self._read(col, where=where) if r.run_id not in skip]
        return max(runs, key=lambda r: (r.ended_at or r.started_at, r.started_at), default=None)

    def delete(self, run_ids: Sequence[str], *, namespace: str | None = None) -> int:
        """Delete run records; returns how many existed."""
        ns = self._ns(namespace)
        with self.store._lock:
            col = self._col(ns, create=False)
            if col is None:
                return 0
            present = col.get(ids=list(run_ids), include=[])["ids"]
            if present:
                col.delete(ids=present)
            return len(present)

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
        ids = [memory_ids] if isinstance(memory_ids, str) else list(dict.fromkeys(memory_ids))
        if not ids:
            return 0
        gone = set(ids)
        ns = self._ns(namespace)
        with self.store._lock:
            col = self._col(ns, create=False)
            if col is None:
                return 0
            changed: dict[str, RunRecord] = {}
            for start in range(0, len(ids), 50):
                chunk = ids[start : start + 50]
                clauses: list[dict[str, Any]] = [{"$contains": i} for i in chunk]
                where_document = clauses[0] if len(clauses) == 1 else {"$or": clauses}
                for r in self._read(col, where_document=where_document):
                    r = changed.get(r.run_id, r)
                    changed[r.run_id] = r.model_copy(
                        update={
                            "served": [m for m in r.served if m.memory_id not in gone],
                            "produced": [p for p in r.produced if p not in gone],
                            "feedback": _erase_comments(r.feedback, (feedback or {}).get(r.run_id, ())),
                        }
                    )
            if changed:
                self._write(list(changed.values()))
            return len(changed)

    # ------------------------------------------------------------------ reads
    def get(self, run_id: str, *, namespace: str | None = None) -> RunRecord:
        """The record of ``run_id`` in ``namespace`` (default: the journal's namespace; never another one).

        Raises:
            RunNotFoundError: no such run.
        """
        with self.store._lock:
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
            with self.store._lock:
                col = self._col(ns, create=False)
                if col is None:
                    return
                page = self._read(col, where=where, limit=_PAGE, offset=offset)
            yield from page
            if len(page) < _PAGE:
                return
            offset += _PAGE

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
        return runs if limit is None else runs[:limit]

    def last_started_at(self, *, namespace: str | None = None, kind: RunKind = "run") -> datetime | None:
        """When the newest record of ``kind`` started, or ``None`` when there is none."""
        ns = self._ns(namespace)
        with self.store._lock:
            col = self._col(ns, create=False)
            if col is None:
                return None
            rows = col.get(where={"kind": kind}, include=["metadatas"])
        stamps = [int(m["started_at_us"]) for m in rows["metadatas"] or [] if m]
        return from_datetime_us(max(stamps)) if stamps else None

    def count(self, *, namespace: str | None = None) -> int:
        """Number of records in the namespace's journal."""
        with self.store._lock:
            col = self._col(self._ns(namespace), create=False)
            return 0 if col is None else int(col.count())

    def explain(self, run_id: str, *, namespace: str | None = None) -> RunExplanation:
        """Which memories shaped this run, and why they were ranked so.

        Each served memory comes with its score, the additive factors sorted by
        contribution, and its current state (confidence now, status, or
        ``forgotten``); produced memories are resolved the same way.

        Raises:
            RunNotFoundError: no such run.
        """
        record = self.get(run_id, namespace=namespace)
        ids = [*record.served_ids, *record.produced]
        units = {u.memory_id: u for u in self.store.get_many(ids, namespace=record.namespace)} if ids else {}
        memories = [
            ExplainedMemory(
                served=m,
                status=units[m.memory_id].status if m.memory_id in units else "forgotten",
                unit=units.get(m.memory_id),
                factors=_factors(m.breakdown),
            )
            for m in sorted(record.served, key=lambda m: m.rank)
        ]
        return RunExplanation(record=record, memories=memories, produced=[(i, units.get(i)) for i in record.produced])

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

    async def aexplain(self, run_id: str, *, namespace: str | None = None) -> RunExplanation:
        """Async :meth:`explain`."""
        return await asyncio.to_thread(lambda: self.explain(run_id, namespace=namespace))
