"""The one trajectory builder: raw steps of a live run, and the rule that ends it as a :class:`Trajectory`.

Every source of steps goes through here: ``TrajectoryRecorder`` (callback events),
the agent-message builder (middleware, graph nodes, the wrapper) and the
``AgentExecutor`` steps of the classic memory. Each appends plain tuples
(:data:`Raw`) to a :class:`Live` run and ends it with :func:`conclude`, which
decides the final answer and the outcome the same way for all of them; pydantic
models (:class:`Step`, :class:`Trajectory`) are built only then.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from time import time
from typing import Any
from uuid import UUID

from langchain_hindsight.capture._outcome import OUTCOME_REASON_KEY, gives_up, unrecovered_error
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.types import Outcome, Step, StepType, Trajectory

__all__ = ["Live", "Raw", "conclude", "run_uuid", "snapshot", "to_step", "tool_error_parts"]

logger = logging.getLogger(__name__)

_ERROR_TYPE = re.compile(r"^\s*([A-Z][A-Za-z0-9_.]*(?:Error|Exception|Timeout|Warning))\b")


def tool_error_parts(text: str) -> tuple[str, str]:
    """``(error type, message)`` of a tool error handed back as text (``"ValueError: bad date"``).

    Text that names no error type is a ``ToolError`` with the whole text as message.

    Example:
        >>> tool_error_parts("ValueError: start must be a date"), tool_error_parts("404 for x")
        (('ValueError', 'start must be a date'), ('ToolError', '404 for x'))
    """
    kind = _ERROR_TYPE.match(text)
    if kind is None:
        return "ToolError", text
    return kind.group(1), text[kind.end() :].lstrip(" :") or text


Raw = tuple[StepType, str, float, str | None, dict[str, Any] | None, str | None, str | None, UUID | str | None, bool]
"""A raw step, turned into a :class:`Step` only when a trajectory is read:
``(type, content, timestamp, tool_name, tool_args, error_type, error_message, run_id, truncated)``."""


@dataclass(slots=True)
class Live:
    """A root run in progress: its task, tags and raw steps (and the tool calls still open)."""

    run_id: UUID | str
    task: str
    started: float
    namespace: str
    task_type: str | None
    metadata: dict[str, Any]
    steps: list[Raw] = field(default_factory=list)
    outcome_override: Outcome | None = None
    tools: dict[UUID, tuple[str, dict[str, Any] | None]] = field(default_factory=dict)


Clip = Callable[[str], tuple[str, bool]]
"""Cuts a payload to the builder's limit: ``text -> (text, was_cut)``."""


def conclude(
    live: Live,
    *,
    answer: str | None,
    clip: Clip,
    failure: tuple[str, str, bool] | None = None,
    interrupted: bool = False,
    completed: bool = True,
    ended: float | None = None,
) -> Trajectory:
    """End ``live`` and build its :class:`Trajectory`: the one ending rule for every source of steps.

    * ``failure`` (``(error type, message, was_cut)`` of the error that ended the run):
      an ``error`` step (unless the last step already is that error); outcome ``failure``.
    * ``interrupted`` (a LangGraph interrupt): outcome ``unknown``, ``metadata["interrupted"]``.
    * otherwise the final answer is the last ``thought`` when it is the answer (or no
      answer text is known), else ``answer`` is appended as a ``final_answer`` step; a run
      whose last step is an error and that has no answer is a ``failure``; with an answer,
      or ``completed`` (the run returned normally), ``success``; else ``unknown``.
    * "returned normally" is not yet success (:mod:`~langchain_hindsight.capture._outcome`):
      a final answer that gives up or reports failure, or a last tool error that
      nothing recovered from, makes it a ``failure``; the reason is in
      ``metadata[OUTCOME_REASON_KEY]``, and ``error`` holds the tool error (else the answer).

    ``live.outcome_override`` (``mark_outcome``, an adapter's ``outcome=``) wins over all of these.
    """
    final: str | None = None
    err_text: str | None = None
    steps = live.steps
    if failure is not None:
        etype, message, cut = failure
        err_text = f"{etype}: {message}"
        if not (steps and steps[-1][0] == "error" and steps[-1][5:7] == (etype, message)):
            steps.append(("error", message, time(), None, None, etype, message, live.run_id, cut))
        outcome: Outcome = "failure"
    elif interrupted:
        outcome = "unknown"
        live.metadata["interrupted"] = True
    else:
        last = next((i for i in range(len(steps) - 1, -1, -1) if steps[i][0] != "feedback"), None)
        if last is not None and steps[last][0] == "thought" and (answer is None or steps[last][1] == answer):
            _, text, ts, tool, args, etype_, emsg, rid, cut_ = steps[last]
            steps[last] = ("final_answer", text, ts, tool, args, etype_, emsg, rid, cut_)
            final = text
        elif answer is not None and answer.strip():
            text, cut_ = clip(answer)
            steps.append(("final_answer", text, time(), None, None, None, None, live.run_id, cut_))
            final = text
        if last is not None and steps[last][0] == "error" and final is None:
            outcome = "failure"  # error-terminated: the run ended on an error without an answer
            err_text = f"{steps[last][5]}: {steps[last][6]}"
        else:
            outcome = "success" if completed or final is not None else "unknown"
            if outcome == "success" and live.outcome_override is None:
                outcome, err_text = _not_success(live, final)
    if live.outcome_override is not None:
        outcome = live.outcome_override
    return snapshot(live, outcome=outcome, ended=time() if ended is None else ended, final=final, error=err_text)


def _not_success(live: Live, final: str | None) -> tuple[Outcome, str | None]:
    """``failure`` when the answer gives up or a tool error stayed unrecovered, with its error text.

    The error text is the unrecovered tool error's, else the give-up answer itself.
    """
    reasons: list[str] = []
    error: str | None = None
    gave_up = gives_up(final)
    if gave_up is not None:
        reasons.append(f"final answer gives up: {gave_up.matched}")
    at = unrecovered_error([(raw[0], raw[3]) for raw in live.steps])
    if at is not None:
        raw = live.steps[at]
        error = f"{raw[5] or 'ToolError'}: {raw[6] or raw[1]}"
        reasons.append(f"unrecovered tool error: {error}")
    if not reasons:
        return "success", None
    if error is None:
        error = final  # a give-up alone: the agent's own words are the failure's reason (reflection's avoid rule)
    live.metadata[OUTCOME_REASON_KEY] = "; ".join(reasons)
    logger.info("run %s ended normally but is a failure: %s", live.run_id, live.metadata[OUTCOME_REASON_KEY])
    return "failure", error


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
