"""Run records: what one run was shown, what it produced, how it ended, and what feedback did to memory.

Domain values, like :mod:`~langchain_hindsight.types`: the run journal
(:class:`~langchain_hindsight.journal.RunJournal`) writes them, the store keeps them in each
namespace's journal collection (``store.run_records``, which ``forget`` scrubs and export/import
copy), and the session, the lifecycle's review, ``explain`` and the console read them. Their JSON
(:meth:`RunRecord.to_json`) is what the journal stores.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight._safety import render_safe
from langchain_hindsight._text import clean_feedback
from langchain_hindsight._trust import MemorySource
from langchain_hindsight.errors import ConfigurationError, StoreError
from langchain_hindsight.types import MemoryStatus, MemoryUnit, Outcome, ServedMemory, utcnow

__all__ = [
    "EffectAction",
    "FeedbackEffect",
    "MemoryUse",
    "RunFeedback",
    "RunKind",
    "RunRecord",
    "UnitState",
    "UseVerdict",
    "check_run_id",
]

RunKind = Literal["run", "review"]
"""``run``: one agent task; ``review``: one periodic review pass (see ``Lifecycle.review``)."""


class UnitState(BaseModel):
    """The fields of a memory unit that feedback changes, as they were at one moment (no content: see ``scrub``).

    Example:
        >>> from langchain_hindsight.types import MemoryUnit
        >>> UnitState.of(MemoryUnit(content="x", confidence=0.7)).confidence
        0.7
    """

    model_config = ConfigDict(frozen=True)

    confidence: float | None = None
    status: MemoryStatus = "active"
    access_count: int = 0
    last_accessed_at: datetime | None = None
    created_at: datetime | None = None
    tags: list[str] = Field(default_factory=list)
    supersedes: str | None = None
    merged_from: list[str] = Field(default_factory=list)
    source: MemorySource = "agent_inference"

    @classmethod
    def of(cls, unit: MemoryUnit) -> UnitState:
        """The state of ``unit``."""
        return cls(
            confidence=unit.confidence,
            status=unit.status,
            access_count=unit.access_count,
            last_accessed_at=unit.last_accessed_at,
            created_at=unit.created_at,
            tags=list(unit.tags),
            supersedes=unit.supersedes,
            merged_from=list(unit.merged_from),
            source=unit.source,
        )

    def changes(self) -> dict[str, Any]:
        """The fields as ``MemoryUnit.evolve`` keywords."""
        return {name: getattr(self, name) for name in type(self).model_fields}


EffectAction = Literal["credited", "uncredited", "debited", "superseded", "created", "merged", "archived", "restored"]
"""What a feedback (or its undo) did to one memory.

``credited``: success credit applied; ``uncredited``: the run's credit taken back;
``debited``: the failure debit; ``superseded``: replaced by ``by`` (a correction
that contradicts it); ``created``: a new ``user_feedback`` unit; ``merged``: the
correction restated a stored unit, which absorbed it; ``archived``: an undo took a
created unit out of recall; ``restored``: an undo put a memory back as it was."""


class FeedbackEffect(BaseModel):
    """One memory a feedback (or its undo) changed: how, why, and its state before and after."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    action: EffectAction
    reason: str = ""
    before: UnitState | None = None
    """``None`` for a unit the feedback created."""
    after: UnitState | None = None
    by: str | None = None
    """``superseded``: the id of the unit that superseded it."""


class RunFeedback(BaseModel):
    """A user's verdict on a run, what it did to memory, or the undo of an earlier verdict."""

    model_config = ConfigDict(frozen=True)

    at: datetime = Field(default_factory=utcnow)
    text: str = ""
    success: bool | None = None
    rejected: bool = False
    """The user said the run's result was wrong (``success=False`` or a correcting comment)."""
    kind: Literal["verdict", "undo"] = "verdict"
    effects: list[FeedbackEffect] | None = None
    """Per memory, what the entry did and why; ``None`` for entries journaled before effects were recorded."""
    credit_before: dict[str, float] | None = None
    """The run's ``credit`` before this entry (restored by an undo)."""
    credit_after: dict[str, float] | None = None
    """The run's ``credit`` after this entry."""
    undone_at: datetime | None = None
    """A verdict: when an undo reverted it (``None``: in force)."""
    undoes: int | None = None
    """An undo: the index (in ``RunRecord.feedback``) of the verdict it reverted."""
    rule: str | None = None
    """What recognised a feedback typed in the conversation (the correction detector's rule), else ``None``."""
    debit_before: dict[str, float] | None = None
    """The run's failure ``debit`` before this entry (restored by an undo)."""
    debit_after: dict[str, float] | None = None
    """The run's failure ``debit`` after this entry."""


UseVerdict = Literal["used", "set_aside", "unclear"]
"""What the agent of a run did with a memory it was served (see :mod:`langchain_hindsight.session._use`).

``used``: it followed the memory (its tool calls or answer carry the memory's parameters, tools or statement)
or said it applied it: the run's outcome credits or debits it. ``set_aside``: it said the memory does not
apply: neither credit nor blame. ``unclear``: no sign either way: neither credit nor blame."""


class MemoryUse(BaseModel):
    """Retrieval feedback: what the agent of a run did with one memory it was served, and the evidence."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    verdict: UseVerdict
    evidence: str = ""
    """Why: the tool argument or statement that showed use, or the agent's words setting it aside (its reason)."""


@refuse_unknown_keywords
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
    withheld: list[str] = Field(default_factory=list)
    """Ids that passed the relevance floor but the optional relevance check set aside for this task.

    Not served, so never credited or debited; kept so a reviewer sees what the check hid."""
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
    debit: dict[str, float] | None = None
    """Failure debit the run's outcome applied to the served memories: memory id → (negative) change.

    Kept so an explicit success verdict (``hs.feedback(run_id, success=True)``) takes the automatic
    failure back before crediting; ``None`` when no debit is applied."""
    uses: list[MemoryUse] | None = None
    """What the agent did with each served memory (retrieval feedback), judged when the run ended.

    ``None``: not judged (the run has not ended through the session, or was journaled before uses were)."""

    @property
    def used_ids(self) -> list[str] | None:
        """Ids of the served memories the agent used, best first; ``None`` when the run's uses were not judged."""
        if self.uses is None:
            return None
        used = {u.memory_id for u in self.uses if u.verdict == "used"}
        return [i for i in self.served_ids if i in used]

    @property
    def set_aside_ids(self) -> list[str]:
        """Ids of the served memories the agent said do not apply."""
        return [u.memory_id for u in self.uses or [] if u.verdict == "set_aside"]

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, value: str) -> str:
        if not value or len(value) > 256 or "\x00" in value:
            raise ValueError("run_id must be 1-256 characters")
        return value

    @field_validator("started_at", "ended_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        """Kept in UTC; a time that leaves the calendar once in UTC (year 1 east of it, 9999 west) is refused."""
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        try:
            return value.astimezone(UTC)
        except OverflowError as e:
            raise ValueError(f"{value.isoformat()} is out of range once converted to UTC") from e

    @property
    def served_ids(self) -> list[str]:
        """Ids of the served memories, best first."""
        return [m.memory_id for m in sorted(self.served, key=lambda m: m.rank)]

    @property
    def judged_outcome(self) -> Outcome:
        """How the run ended for a review: the user's newest verdict still in force, else :attr:`outcome`.

        The agent finishing without an error is not the user agreeing: a run the user rejected ("不对，…",
        ``hs.feedback(run_id, success=False)``) is a failure, one the user confirmed a success; an undone
        verdict no longer counts.
        """
        for entry in reversed(self.feedback):
            if entry.kind == "verdict" and entry.undone_at is None and entry.success is not None:
                return "success" if entry.success else "failure"
        return self.outcome

    def forgetting(self, gone: Set[str], comments: Sequence[str] = ()) -> RunRecord:
        """This record without any reference to the forgotten memory ids ``gone`` (what ``forget`` leaves).

        ``comments``: the contents of forgotten ``user_feedback`` units made from this run's comments:
        those comments are erased too (:func:`_erase_comments`).
        """
        return self.model_copy(
            update={
                "served": [m for m in self.served if m.memory_id not in gone],
                "withheld": [i for i in self.withheld if i not in gone],
                "produced": [p for p in self.produced if p not in gone],
                "feedback": _scrub_effects(_erase_comments(self.feedback, comments), gone),
                "credit": None if self.credit is None else {k: v for k, v in self.credit.items() if k not in gone},
                "debit": None if self.debit is None else {k: v for k, v in self.debit.items() if k not in gone},
                "uses": None if self.uses is None else [u for u in self.uses if u.memory_id not in gone],
            }
        )

    def to_json(self) -> str:
        """The record as the JSON document stored in Chroma.

        ``withheld`` is written only when it names an id, so a record without one is byte-for-byte the
        document journals held before the field existed.
        """
        return self.model_dump_json(exclude=None if self.withheld else {"withheld"})

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


def check_run_id(run_id: object) -> None:
    """Refuse a run id that is not a string of 1-256 characters without NUL."""
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


def _clean_state(state: UnitState | None, gone: Set[str]) -> UnitState | None:
    if state is None:
        return None
    return state.model_copy(
        update={
            "supersedes": None if state.supersedes in gone else state.supersedes,
            "merged_from": [i for i in state.merged_from if i not in gone],
        }
    )


def _scrub_effects(entries: list[RunFeedback], gone: Set[str]) -> list[RunFeedback]:
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
