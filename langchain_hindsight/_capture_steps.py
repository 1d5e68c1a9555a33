"""Per-run state of ``TrajectoryRecorder``: raw steps, live runs, and the trajectories built from them.

The hot path appends plain tuples (:data:`Raw`) to a :class:`Live` run; pydantic
models (:class:`Step`, :class:`Trajectory`) are built only when a trajectory is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.types import Outcome, Step, StepType, Trajectory

__all__ = ["Live", "Raw", "run_uuid", "snapshot", "to_step"]


Raw = tuple[StepType, str, float, str | None, dict[str, Any] | None, str | None, str | None, UUID | None, bool]
"""A raw step, turned into a :class:`Step` only when a trajectory is read:
``(type, content, timestamp, tool_name, tool_args, error_type, error_message, run_id, truncated)``."""


@dataclass(slots=True)
class Live:
    """A root run in progress: its task, tags and raw steps (and the tool calls still open)."""

    run_id: UUID
    task: str
    started: float
    namespace: str
    task_type: str | None
    metadata: dict[str, Any]
    steps: list[Raw] = field(default_factory=list)
    outcome_override: Outcome | None = None
    tools: dict[UUID, tuple[str, dict[str, Any] | None]] = field(default_factory=dict)


def _ts(seconds: float) -> datetime:
    """A ``time()`` value as an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, UTC)


def snapshot(live: Live, *, outcome: Outcome, ended: float | None, final: str | None, error: str | None) -> Trajectory:
    """The :class:`Trajectory` of ``live`` as it stands, with the given ending."""
    return Trajectory(
        run_id=str(live.run_id),
        task=live.task,
        steps=[to_step(raw) for raw in list(live.steps)],
        outcome=outcome,
        final_answer=final,
        error=error,
        started_at=_ts(live.started),
        ended_at=None if ended is None else _ts(ended),
        namespace=live.namespace,
        task_type=live.task_type,
        metadata=dict(live.metadata),
    )


def to_step(raw: Raw) -> Step:
    """The :class:`Step` a raw step describes."""
    kind, content, ts, tool, args, etype, emsg, rid, cut = raw
    return Step(
        type=kind,
        content=content,
        timestamp=_ts(ts),
        tool_name=tool,
        tool_args=args,
        error_type=etype,
        error_message=emsg,
        run_id=None if rid is None else str(rid),
        truncated=cut,
    )


def run_uuid(run_id: UUID | str) -> UUID:
    """``run_id`` as a :class:`UUID` (a :class:`ConfigurationError` if it is not one)."""
    if isinstance(run_id, UUID):
        return run_id
    try:
        return UUID(str(run_id))
    except ValueError as e:
        raise ConfigurationError(f"run_id must be a UUID, got {run_id!r}") from e
