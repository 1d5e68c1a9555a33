r"""Reflection rules that need no LLM (they complement the LLM; failures are lessons too).

Pure functions from a :class:`Trajectory` to candidate :class:`MemoryUnit`\\ s:

* error → fix: a tool call that failed and then succeeded with changed arguments;
* instability: a tool that needed ``retry_threshold`` or more attempts, when its errors look
  transient (a timeout, a reset connection, a rate limit, a 5xx) or the same arguments later
  worked; a deterministic error (a missing file, a missing key, a refused permission, a 404)
  repeated is not instability (at most an avoid lesson, when the run failed);
* avoid: a failed task, with the failure reason;
* user feedback: an explicit correction, as a high-trust unit.

A rule lesson states what generalises: the tool, the argument values that failed and
the ones that worked, the error with the parts that only identify this run masked
(file names, paths, ids, positions: see :func:`~langchain_hindsight._statements.generalise`),
and the task it was learned on masked the same way. The run's own values stay in the
unit's ``context`` (``parameters["arguments"]``: the call as made; ``input_sample``: the
error as raised) and ``task_description``. So the same lesson learned on five files is
one statement, which the store merges (its ``evidence`` counts the learnings).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from langchain_hindsight._safety import SUSPICIOUS_TAG, looks_like_instruction, render_safe
from langchain_hindsight._statements import generalise
from langchain_hindsight._text import clean_feedback, clip_text
from langchain_hindsight._trust import TRUSTED_SOURCES, MemorySource
from langchain_hindsight.errors import InvalidMemoryError
from langchain_hindsight.prompts import ReflectionTemplates
from langchain_hindsight.types import MemoryContext, MemoryUnit, Step, Trajectory

__all__ = ["RuleSettings", "apply_rules", "feedback_unit", "format_args", "json_safe", "looks_transient"]

logger = logging.getLogger(__name__)

_VALUE_CHARS = 80
_ERROR_CHARS = 160
_SAMPLE_CHARS = 200
_TASK_CHARS = 120
_LESSON_TASK_CHARS = 60


@dataclass(frozen=True, slots=True)
class RuleSettings:
    """What the rules need besides the trajectory."""

    templates: ReflectionTemplates
    task_type: str
    namespace: str
    retry_threshold: int = 3


def json_safe(params: dict[str, Any] | None) -> dict[str, Any]:
    """``params`` without the values that are not JSON-serialisable (never stringified: no degraded writes)."""
    out: dict[str, Any] = {}
    for key, value in (params or {}).items():
        try:
            json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            logger.debug("dropping non-JSON parameter %r from a memory context", key)
            continue
        out[str(key)] = value
    return out


def format_args(args: dict[str, Any]) -> str:
    """``encoding='utf-8', sep=';'`` — Python-literal style, each value clipped."""
    parts = []
    for key, value in args.items():
        text = repr(value)
        parts.append(f"{key}={clip_text(text, _VALUE_CHARS, '…')[0]}")
    return ", ".join(parts)


_TRANSIENT = re.compile(
    r"time(?:d)?[\s_-]?out|deadline exceeded|connection(?:\s*(?:error|reset|refused|aborted|closed|lost|dropped))"
    r"|reset by peer|broken pipe|temporar(?:ily unavailable|y failure)|unavailable|try again|retry later"
    r"|rate[\s_-]?limit|throttl"
    r"|too many requests|overloaded|server error|bad gateway|gateway timeout|network (?:error|is unreachable)"
    r"|\b(?:http|status|code|error)\s*[:=]?\s*(?:429|5\d\d)\b"
    r"|\b(?:429|5\d\d)\s+(?:internal|server|service|gateway|too many)"
    r"|超时|连接(?:被)?(?:重置|拒绝|中断|断开|失败)|网络(?:错误|异常|不可用)|限流|频率限制|请求过(?:多|于频繁)"
    r"|服务(?:暂时)?不可用|服务器(?:错误|繁忙|内部错误)|稍后(?:再)?重试|网关(?:超时|错误)",
    re.IGNORECASE,
)
"""Error types and messages of failures that may pass on their own (zh and en); anything else is deterministic."""


def looks_transient(step: Step) -> bool:
    """The error of ``step`` may pass on its own (a timeout, a reset connection, a rate limit, a 5xx...).

    A missing file, a missing key, a refused permission or a 404 are deterministic:
    calling again with the same arguments fails the same way.

    Example:
        >>> looks_transient(Step(type="error", error_type="ReadTimeout", error_message="read timed out"))
        True
        >>> looks_transient(Step(type="error", error_type="HTTPError", error_message="503 Service Unavailable"))
        True
        >>> looks_transient(Step(type="error", error_type="FileNotFoundError", error_message="No such file: 'a.csv'"))
        False
    """
    text = f"{step.error_type or ''} {step.error_message or step.content or ''}"
    return bool(_TRANSIENT.search(text))


def _raw_error(step: Step) -> str:
    message = " ".join((step.error_message or step.content or "").split())
    return f"{step.error_type}: {message}" if step.error_type else message


def _error_text(step: Step) -> str:
    """The error as a lesson states it: run-specific parts masked, clipped."""
    return clip_text(generalise(_raw_error(step)), _ERROR_CHARS, "…")[0]


def _task_text(task: str, limit: int) -> str:
    """The task as a lesson names it: run-specific parts masked, clipped (``-`` when there is none)."""
    return clip_text(generalise(" ".join(task.split())), limit, "…")[0] or "-"


def _generic_args(args: dict[str, Any]) -> str:
    """:func:`format_args` with the run-specific parts of string values masked (numbers are kept)."""
    return format_args({k: generalise(v) if isinstance(v, str) else v for k, v in args.items()})


def _unit(
    content: str,
    settings: RuleSettings,
    traj: Trajectory,
    *,
    source: MemorySource = "rule",
    tools: Iterable[str] = (),
    params: dict[str, Any] | None = None,
    output_sample: str = "",
    input_sample: str = "",
    tags: Iterable[str] = (),
    tool_text: str = "",
) -> MemoryUnit | None:
    """One rule-made unit.

    ``tool_text`` is the part of ``content`` a tool supplied (an error message):
    a lesson that embeds it keeps tool-output trust (``source="tool_output"``),
    whichever rule produced it, so a tool cannot launder its text into a
    trusted lesson. Instruction-like raw text is tagged ``suspicious`` before it
    is neutralised for storage, so the store still caps it.
    """
    if tool_text.strip() and source == "rule":
        source = "tool_output"
    tags = [t.lower() for t in tags if t]
    if source not in TRUSTED_SOURCES and looks_like_instruction(content):
        tags.append(SUSPICIOUS_TAG)
    try:
        return MemoryUnit(
            task_type=settings.task_type,
            task_description=clip_text(traj.task, 500, "…")[0],
            content=render_safe(content),
            context=MemoryContext(
                tools_used=[t for t in tools if t],
                parameters=json_safe(params),
                input_sample=clip_text(input_sample, _SAMPLE_CHARS, "…")[0],
                output_sample=clip_text(output_sample, _SAMPLE_CHARS, "…")[0],
            ),
            source=source,
            tags=tags,
            namespace=settings.namespace,
            run_id=traj.run_id,
        )
    except InvalidMemoryError as e:
        logger.warning("reflection rule produced an invalid unit for run %s, skipped: %s", traj.run_id, e)
        return None


def _changed(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]


def _error_fix(traj: Trajectory, settings: RuleSettings) -> list[MemoryUnit]:
    """An error followed by a success of the same tool with changed arguments."""
    t = settings.templates
    units: list[MemoryUnit] = []
    seen: set[str] = set()
    steps = traj.steps
    for i, ok in enumerate(steps):
        if ok.type != "tool_result" or not ok.tool_name or ok.tool_args is None:
            continue
        errors: list[Step] = []
        for prev in reversed(steps[:i]):
            if prev.tool_name != ok.tool_name:
                continue
            if prev.type == "tool_result":
                break  # only errors since the previous success of this tool
            if prev.type == "error" and prev.tool_args is not None and prev.tool_args != ok.tool_args:
                errors.append(prev)
        if not errors:
            continue
        errors.reverse()
        keys = list(dict.fromkeys(k for e in errors for k in _changed(e.tool_args or {}, ok.tool_args)))
        failed = list(
            dict.fromkeys(
                format_args({k: (e.tool_args or {})[k] for k in keys if k in (e.tool_args or {})}) or t.default_args
                for e in errors
            )
        )
        fixed = {k: ok.tool_args.get(k) for k in keys}
        content = t.rule_error_fix.format(
            tool=ok.tool_name,
            failed=t.list_separator.join(failed),
            error=_error_text(errors[-1]),
            fixed=format_args(fixed),
            task=_task_text(traj.task, _LESSON_TASK_CHARS),
        )
        if content in seen:
            continue
        seen.add(content)
        params = {
            **fixed,
            "failed_parameters": [{k: (e.tool_args or {}).get(k) for k in keys} for e in errors],
            "arguments": dict(ok.tool_args),  # the call as made (file names, ids): this run's, not the lesson's
        }
        unit = _unit(
            content,
            settings,
            traj,
            tools=[ok.tool_name],
            params=params,
            output_sample=ok.content,
            input_sample=_raw_error(errors[-1]),
            tags=[ok.tool_name, *(e.error_type or "" for e in errors), *keys],
            tool_text=" ".join(e.error_message or e.content or "" for e in errors),
        )
        if unit is not None:
            units.append(unit)
    return units


def _instability(traj: Trajectory, settings: RuleSettings) -> list[MemoryUnit]:
    """A tool that needed ``retry_threshold`` or more attempts (errors since its last success), if it is unstable.

    Unstable means the errors may pass on their own (:func:`looks_transient`) or the
    same arguments later worked; a deterministic error repeated (a missing file three
    times) says nothing about the tool's stability and makes no instability lesson.
    """
    t = settings.templates
    streak: dict[str, list[Step]] = {}
    found: list[tuple[str, int, Step, bool]] = []
    for step in traj.steps:
        if not step.tool_name:
            continue
        if step.type == "error":
            streak.setdefault(step.tool_name, []).append(step)
        elif step.type == "tool_result":
            errors = streak.pop(step.tool_name, [])
            if errors and len(errors) + 1 >= settings.retry_threshold:
                shown = _unstable(errors, step.tool_args)
                if shown is not None:
                    found.append((step.tool_name, len(errors) + 1, shown, True))
                else:
                    logger.debug("%s: %d deterministic errors, not instability", step.tool_name, len(errors))
    for tool, errors in streak.items():
        if len(errors) >= settings.retry_threshold:
            shown = _unstable(errors, None)
            if shown is not None:
                found.append((tool, len(errors), shown, False))
    units = []
    for tool, attempts, last_error, fixed in found:
        template = t.rule_unstable_fixed if fixed else t.rule_unstable_failed
        content = template.format(tool=tool, attempts=attempts, error=_error_text(last_error))
        unit = _unit(
            content,
            settings,
            traj,
            tools=[tool],
            params={"attempts": attempts},
            input_sample=_raw_error(last_error),
            tags=[tool, "unstable", "retry", last_error.error_type or ""],
            tool_text=last_error.error_message or last_error.content or "",
        )
        if unit is not None:
            units.append(unit)
    return units


def _unstable(errors: list[Step], worked: dict[str, Any] | None) -> Step | None:
    """The error that shows ``errors`` are instability (the last transient one, or one whose arguments later worked)."""
    transient = [e for e in errors if looks_transient(e)]
    if transient:
        return transient[-1]
    same = [e for e in errors if worked is not None and e.tool_args == worked]
    return same[-1] if same else None


def _avoid(traj: Trajectory, settings: RuleSettings) -> list[MemoryUnit]:
    """A failed task becomes an "avoid" experience with the failure reason (a failure is worth remembering)."""
    if traj.outcome != "failure":
        return []
    t = settings.templates
    last_error = next((s for s in reversed(traj.steps) if s.type == "error"), None)
    tool_text = ""
    raw = ""
    if traj.error:
        raw = tool_text = " ".join(traj.error.split())
        reason = clip_text(generalise(raw), _ERROR_CHARS, "…")[0]
    elif last_error is not None:
        raw = _raw_error(last_error)
        reason = _error_text(last_error)
        tool_text = last_error.error_message or last_error.content or ""
    else:
        reason = t.rule_unknown_reason
    culprit = next((s for s in reversed(traj.steps) if s.type == "error" and s.tool_name), None)
    culprit = culprit or next((s for s in reversed(traj.steps) if s.type == "tool_call" and s.tool_name), None)
    action = ""
    params: dict[str, Any] = {}
    if culprit is not None and culprit.tool_name:
        params = dict(culprit.tool_args or {})
        action = t.rule_avoid_action.format(tool=culprit.tool_name, args=_generic_args(params) or "-")
    content = t.rule_avoid.format(task=_task_text(traj.task, _TASK_CHARS), reason=reason, action=action)
    tool = culprit.tool_name if culprit is not None and culprit.tool_name else ""
    error_type = last_error.error_type if last_error is not None and last_error.error_type else ""
    unit = _unit(
        content,
        settings,
        traj,
        tools=[tool],
        params={"avoid": params} if params else {},
        input_sample=raw,
        tags=["avoid", "failure", tool, error_type],
        tool_text=tool_text,
    )
    return [unit] if unit is not None else []


def feedback_unit(
    text: str,
    *,
    templates: ReflectionTemplates,
    task: str,
    task_type: str,
    namespace: str,
    run_id: str | None,
) -> MemoryUnit | None:
    """A ``user_feedback`` unit from an explicit correction (``None`` for an acknowledgement)."""
    correction = clean_feedback(text)
    if correction is None:
        return None
    short_task = clip_text(" ".join(task.split()), _TASK_CHARS, "…")[0]
    template = templates.rule_user_feedback if short_task else templates.rule_user_feedback_no_task
    content = template.format(task=short_task, text=correction)
    try:
        return MemoryUnit(
            task_type=task_type,
            task_description=clip_text(task, 500, "…")[0],
            content=render_safe(content),
            source="user_feedback",
            tags=["user_feedback", "correction"],
            namespace=namespace,
            run_id=run_id,
        )
    except InvalidMemoryError as e:
        logger.warning("user feedback could not become a memory unit, skipped: %s", e)
        return None


def apply_rules(traj: Trajectory, settings: RuleSettings) -> list[MemoryUnit]:
    """Every rule-made candidate for ``traj`` (error→fix, instability, avoid, user feedback)."""
    units = [*_error_fix(traj, settings), *_instability(traj, settings), *_avoid(traj, settings)]
    for step in traj.steps:
        if step.type == "feedback":
            unit = feedback_unit(
                step.content,
                templates=settings.templates,
                task=traj.task,
                task_type=settings.task_type,
                namespace=settings.namespace,
                run_id=traj.run_id,
            )
            if unit is not None:
                units.append(unit)
    return units
