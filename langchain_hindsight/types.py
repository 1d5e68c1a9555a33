"""Domain values: memory units, trajectories and scored recall results.

All values are pydantic models. :class:`MemoryUnit` is frozen: change one with
:meth:`MemoryUnit.evolve`, which validates again.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from langchain_hindsight._checks import closest_name, refuse_unknown_keywords, refuse_unknown_method_keywords
from langchain_hindsight._trust import DEFAULT_INITIAL_CONFIDENCE, MemorySource
from langchain_hindsight.errors import InvalidMemoryError

__all__ = [
    "DEFAULT_NAMESPACE",
    "MAX_ACCESS_COUNT",
    "MAX_CONTENT_CHARS",
    "MAX_TAGS",
    "MemoryContext",
    "MemoryKind",
    "MemoryStatus",
    "MemoryUnit",
    "Outcome",
    "ScoredMemory",
    "Served",
    "ServedMemory",
    "Step",
    "StepType",
    "TaskTypeSource",
    "Trajectory",
    "new_memory_id",
    "utcnow",
]

MemoryKind = Literal["experience", "fact", "entity"]
"""What a unit holds: an experience (a lesson from hindsight, the core), a fact, or an entity."""

MemoryStatus = Literal["active", "superseded", "archived"]

TaskTypeSource = Literal["fixed", "inferred", "model"]
"""Where a recall's task type came from: the caller (``task_type=`` on the call or
the retriever), the keyword rules (:func:`~langchain_hindsight.taxonomy.infer_task_type`),
or the optional model classifier."""

StepType = Literal["thought", "tool_call", "tool_result", "error", "final_answer", "feedback"]
Outcome = Literal["success", "failure", "unknown"]

MAX_CONTENT_CHARS = 4000
"""Longest accepted ``content``. Experiences are short (one line each in the block)."""

MAX_ACCESS_COUNT = 10**9
"""Largest accepted ``access_count``: a unit claiming more could overflow the store's integer metadata."""
MAX_TAGS = 256
"""Most tags a unit may carry (each at most 64 characters; longer ones are dropped). Checked in linear time."""
DEFAULT_NAMESPACE = "default"
"""The namespace of a store, a unit and a run that name none (a value, not a "not given" marker)."""

_NAMESPACE_MAX = 256
_TAG_MAX = 64


def utcnow() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


def new_memory_id() -> str:
    """A fresh, collision-free memory id such as ``mem_3f9a0c...``."""
    return f"mem_{uuid.uuid4().hex}"


def _as_utc(value: Any, field: str) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as e:
            raise InvalidMemoryError(f"{field}: {value!r} is not an ISO-8601 timestamp") from e
    if not isinstance(value, datetime):
        raise InvalidMemoryError(f"{field}: expected a datetime or ISO string, got {type(value).__name__}")
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError as e:  # year 1 east of UTC, year 9999 west of it
        raise InvalidMemoryError(f"{field}: {value.isoformat()} is out of range once converted to UTC") from e


MAX_NESTING = 32
"""Deepest nesting of lists/dicts accepted in ``context.parameters`` (checked without recursion)."""


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _check_json(value: Any, field: str) -> Any:
    if _depth_exceeds(value, MAX_NESTING):
        raise InvalidMemoryError(f"{field}: nested deeper than {MAX_NESTING} levels")
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidMemoryError(f"{field}: must be JSON-serialisable ({e})") from e
    return value


@refuse_unknown_method_keywords
class MemoryContext(BaseModel):
    """Structured detail behind an experience (its ``context``: tools, parameters, error types)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tools_used: list[str] = Field(default_factory=list)
    """Tools the experience is about, e.g. ``["pandas.read_csv"]``."""
    parameters: dict[str, Any] = Field(default_factory=dict)
    """Key parameters, e.g. ``{"encoding": "utf-8-sig"}``. JSON-serialisable."""
    input_sample: str = ""
    output_sample: str = ""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise InvalidMemoryError(_describe(e, type(self))) from e

    @field_validator("tools_used")
    @classmethod
    def _tools(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(t.strip() for t in value if t.strip()))

    @field_validator("parameters")
    @classmethod
    def _params(cls, value: dict[str, Any]) -> dict[str, Any]:
        return dict(_check_json(value, "context.parameters"))


@refuse_unknown_method_keywords
class MemoryUnit(BaseModel):
    """One piece of long-term memory: a lesson with its context, confidence, source and history.

    Example:
        >>> u = MemoryUnit(task_type="data_cleaning",
        ...                content="Read Chinese CSVs with encoding='utf-8-sig'.")
        >>> u.status, u.source, u.confidence
        ('active', 'agent_inference', 0.65)

    Raises:
        InvalidMemoryError: a field has a wrong type or value; the message names it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    memory_id: str = Field(default_factory=new_memory_id)
    task_type: str = "general"
    task_description: str = ""
    content: str
    context: MemoryContext = Field(default_factory=MemoryContext)
    confidence: float | None = None
    """In [0, 1]. ``None`` means "the default for ``source``", filled in on construction."""
    source: MemorySource = "agent_inference"
    created_at: datetime = Field(default_factory=utcnow)
    last_accessed_at: datetime = Field(default_factory=utcnow)
    access_count: int = 0
    tags: list[str] = Field(default_factory=list)
    supersedes: str | None = None
    """The id of the unit this one replaced (the old one is kept as ``superseded``)."""
    kind: MemoryKind = "experience"
    status: MemoryStatus = "active"
    namespace: str = DEFAULT_NAMESPACE
    merged_from: list[str] = Field(default_factory=list)
    """Ids of near-duplicates folded into this unit (provenance of merges)."""
    evidence: int = 1
    """How many times this lesson was learned; merges add up (the same lesson from five files: 5)."""
    run_id: str | None = None
    """The run whose reflection produced this unit, if any."""
    decayed_through: datetime | None = None
    """Idle time up to this instant is already charged to ``confidence`` by decay (``None``: never decayed)."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise InvalidMemoryError(_describe(e, type(self))) from e

    @field_validator("memory_id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_\-.:]{1,128}", value):
            raise ValueError("must be 1-128 characters of letters, digits, _ - . :")
        return value

    @field_validator("task_type")
    @classmethod
    def _task_type(cls, value: str) -> str:
        value = value.strip()
        if not value or len(value) > 128:
            raise ValueError("must be a non-empty label of at most 128 characters")
        return value

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("must not be empty")
        if len(value) > MAX_CONTENT_CHARS:
            raise ValueError(f"is {len(value)} characters; at most {MAX_CONTENT_CHARS} are allowed")
        if "\x00" in value:
            raise ValueError("must not contain NUL characters")
        if re.search("[\ud800-\udfff]", value):  # e.g. a bad \ud800 escape in LLM JSON: not storable text
            raise ValueError("must not contain lone surrogates (invalid Unicode)")
        return value

    @field_validator("confidence")
    @classmethod
    def _confidence(cls, value: float | None) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"must be a number in [0, 1], got {value!r}")
        return float(value)

    @field_validator("created_at", "last_accessed_at", mode="before")
    @classmethod
    def _timestamps(cls, value: Any) -> datetime:
        return _as_utc(value, "timestamp")

    @field_validator("decayed_through", mode="before")
    @classmethod
    def _decayed_through(cls, value: Any) -> datetime | None:
        return None if value is None else _as_utc(value, "decayed_through")

    @field_validator("access_count")
    @classmethod
    def _access(cls, value: int) -> int:
        if value < 0 or value > MAX_ACCESS_COUNT:
            raise ValueError(f"must be in [0, {MAX_ACCESS_COUNT}], got {value!r}")
        return value

    @field_validator("evidence")
    @classmethod
    def _evidence(cls, value: int) -> int:
        if isinstance(value, bool) or value < 1 or value > MAX_ACCESS_COUNT:
            raise ValueError(f"must be in [1, {MAX_ACCESS_COUNT}], got {value!r}")
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        if len(value) > 4 * MAX_TAGS:
            raise ValueError(f"has {len(value)} tags; at most {MAX_TAGS} are allowed")
        seen: dict[str, None] = {}  # insertion-ordered set: linear in the number of tags
        for tag in value:
            tag = tag.strip().lower()
            if tag and len(tag) <= _TAG_MAX:
                seen[tag] = None
        if len(seen) > MAX_TAGS:
            raise ValueError(f"has {len(seen)} distinct tags; at most {MAX_TAGS} are allowed")
        return list(seen)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not value or len(value) > _NAMESPACE_MAX or value != value.strip() or "\x00" in value:
            raise ValueError(f"must be 1-{_NAMESPACE_MAX} characters without surrounding spaces")
        if re.search("[\ud800-\udfff]", value):
            raise ValueError("must not contain lone surrogates (invalid Unicode)")
        return value

    def model_post_init(self, __context: Any) -> None:
        """Fill ``confidence`` from the source's default when none was given."""
        if self.confidence is None:
            # Frozen model: set the derived default once, during construction.
            object.__setattr__(self, "confidence", DEFAULT_INITIAL_CONFIDENCE[self.source])

    @property
    def score_confidence(self) -> float:
        """``confidence`` as a float (always set after construction)."""
        return float(self.confidence if self.confidence is not None else 0.0)

    def evolve(self, **changes: Any) -> MemoryUnit:
        """A validated copy with ``changes`` applied.

        Raises:
            InvalidMemoryError: the result would be invalid.
        """
        data = self.model_dump()
        data.update(changes)  # a name no field has is refused by the model, naming the field it likely misspells
        return MemoryUnit(**data)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (timestamps as ISO strings)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryUnit:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, dict):
            raise InvalidMemoryError(f"expected a dict, got {type(data).__name__}")
        return cls(**data)


def _describe(error: ValidationError, model: type[BaseModel]) -> str:
    """One line naming each bad field; a field no model has (``contnet=``) names the one it most likely misspells."""
    parts = []
    for item in error.errors():
        loc = ".".join(str(p) for p in item["loc"]) or "value"
        msg = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            meant = closest_name(str(item["loc"][-1]), _fields_at(model, item["loc"][:-1]))
            msg = f"unknown field (did you mean {meant!r}?)" if meant else "unknown field"
        parts.append(f"{loc}: {msg}")
    return "invalid memory unit: " + "; ".join(parts)


def _fields_at(model: type[BaseModel], path: tuple[int | str, ...]) -> list[str]:
    """The field names of the (nested) model at ``path`` (``("context",)`` → :class:`MemoryContext`'s)."""
    for name in path:
        info = model.model_fields.get(str(name))
        inner = info.annotation if info is not None else None
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            return []
        model = inner
    return list(model.model_fields)


@refuse_unknown_keywords
class Step(BaseModel):
    """One event in a trajectory."""

    model_config = ConfigDict(frozen=True)

    type: StepType
    content: str = ""
    timestamp: datetime = Field(default_factory=utcnow)
    tool_name: str | None = None
    tool_args: dict[str, Any] | None = None
    error_type: str | None = None
    error_message: str | None = None
    run_id: str | None = None
    truncated: bool = False
    """True when ``content`` was cut (head + tail kept)."""


@refuse_unknown_keywords
class Trajectory(BaseModel):
    """Everything one task run did, built by :class:`TrajectoryRecorder`."""

    run_id: str
    task: str = ""
    steps: list[Step] = Field(default_factory=list)
    outcome: Outcome = "unknown"
    final_answer: str | None = None
    error: str | None = None
    started_at: datetime = Field(default_factory=utcnow)
    ended_at: datetime | None = None
    namespace: str = DEFAULT_NAMESPACE
    task_type: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


@refuse_unknown_keywords
class ScoredMemory(BaseModel):
    """A recalled memory with its weighted score and per-factor breakdown."""

    model_config = ConfigDict(frozen=True)

    memory: MemoryUnit
    score: float
    similarity: float
    breakdown: dict[str, float] = Field(default_factory=dict)
    query_task_type: str | None = None
    """The task type the recall scored against (given or inferred from the query), for journals."""


class ServedMemory(BaseModel):
    """One memory a run was shown, with the numbers that ranked it (one line of the ``[相关经验]`` block)."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    rank: int
    """1 = first line of the ``[相关经验]`` block."""
    score: float
    similarity: float
    confidence: float
    """The memory's confidence when it was shown."""
    breakdown: dict[str, float] = Field(default_factory=dict)
    """Per-factor contributions (``similarity``, ``task_type``, ``confidence``, ``access``, ``source``, ...)."""

    @classmethod
    def from_scored(cls, scored: ScoredMemory, rank: int) -> ServedMemory:
        """The entry for one recalled memory shown at ``rank``."""
        return cls(
            memory_id=scored.memory.memory_id,
            rank=rank,
            score=float(scored.score),
            similarity=float(scored.similarity),
            confidence=scored.memory.score_confidence,
            breakdown={k: float(v) for k, v in scored.breakdown.items()},
        )


class Served(BaseModel):
    """What was served for one task: the recalled memories, the task type they were scored for, and the block.

    The one record of a serving, from the bare retriever (``HindsightRetriever.served()``
    and its ``on_served`` hook: ``run_id`` is empty) up to the session and every
    adapter (which fill in the run, the thread, the rendered block and task prompt).
    The journal keeps each served memory as a :class:`ServedMemory`.

    Example:
        >>> s = Served(task="生成本周的销售周报", namespace="default")
        >>> s.memory_ids, s.query, s.block
        ((), '生成本周的销售周报', '')
    """

    run_id: str = ""
    """The run it was served to (``""`` for a retriever called on its own)."""
    task: str
    """The task text (the retriever's query)."""
    namespace: str
    memories: list[ScoredMemory] = Field(default_factory=list)
    """Best first."""
    task_type: str | None = None
    """The task type the memories were scored for (the fixed one, else inferred from the task text)."""
    task_type_source: TaskTypeSource | None = None
    """Where ``task_type`` came from (``None`` when no recall ran)."""
    withheld: list[str] = Field(default_factory=list)
    """Ids that passed the relevance floor but the optional relevance check set aside (not served)."""
    at: datetime = Field(default_factory=utcnow)
    block: str = ""
    """The ``[相关经验]`` block, or ``""`` when nothing relevant was recalled."""
    task_prompt: str = ""
    """The task as the task prompt (block + ``[当前任务]`` + instruction), or the task itself."""
    thread_id: str | None = None
    """The conversation thread, when the adapter knows it."""
    corrects: str | None = None
    """Run id of the previous run in the thread that this turn corrected (feedback from the conversation)."""

    @property
    def memory_ids(self) -> tuple[str, ...]:
        """Ids of the served memories, best first."""
        return tuple(m.memory.memory_id for m in self.memories)

    @property
    def query(self) -> str:
        """The task text, as the retriever's query."""
        return self.task
