"""Pure helpers shared by the drop-in adapters (middleware, graph nodes, classic memory).

Finding the task in a message list, injecting the ``[相关经验]`` block
ephemerally (on a copy, with stable ids), reading the namespace from a
``RunnableConfig``, and rebuilding a :class:`Trajectory` from agent messages.
Nothing here does I/O.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.types import Outcome, Step, Trajectory

__all__ = [
    "BLOCK_ID_PREFIX",
    "INJECTED_MARKER",
    "Placement",
    "check_placement",
    "find_task",
    "inject",
    "message_text",
    "resolve_namespace",
    "task_key",
    "trajectory_from_intermediate_steps",
    "trajectory_from_messages",
]

Placement = Literal["task_message", "separate_message"]
"""Where the block goes in the model's request.

``"task_message"`` (default): the task's own human message is sent as the seed's
task prompt (``[相关经验]`` … ``[当前任务]`` task … closing instruction, seed §4.4),
keeping its id. ``"separate_message"``: a separate human message holding only
the block, with a stable id, placed right before the task message.
Both are in the user turn, never in the system prompt (seed pitfall 4).
"""

BLOCK_ID_PREFIX = "hindsight-experience-"
"""Id prefix of an injected separate block message; re-injection replaces, never duplicates."""

INJECTED_MARKER = "hindsight_injected"
"""``additional_kwargs`` marker on a task message that already carries the block."""


def check_placement(placement: object) -> Placement:
    """``placement`` if it is a :data:`Placement`; else a :class:`ConfigurationError` naming it."""
    if placement not in get_args(Placement):
        raise ConfigurationError(f"placement must be 'task_message' or 'separate_message', got {placement!r}")
    return placement  # type: ignore[return-value]


def message_text(message: BaseMessage) -> str:
    """The plain text of a message (text blocks joined for multimodal content)."""
    return message.text if isinstance(message.text, str) else str(message.content)


def find_task(messages: Sequence[BaseMessage]) -> tuple[int, HumanMessage] | None:
    """The last human message that is not an injected block, with its index."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage) and not str(message.id or "").startswith(BLOCK_ID_PREFIX):
            return index, message
    return None


def task_key(message: BaseMessage, *, scope: str = "") -> str:
    """A stable key for one task: the message id, else a hash of its text (per ``scope``)."""
    if message.id:
        return f"{scope}:{message.id}"
    return f"{scope}:sha1:{hashlib.sha1(message_text(message).encode()).hexdigest()}"


def inject(
    messages: Sequence[BaseMessage],
    *,
    block: str,
    task_prompt: str,
    placement: Placement = "task_message",
) -> list[BaseMessage]:
    """A copy of ``messages`` with the experience block placed at the current task.

    Idempotent: an earlier injected block message is dropped first and a task
    message that already carries the block is left alone, so the block appears
    once whatever was in ``messages``. ``messages`` itself is never modified.

    Args:
        messages: The conversation (the state's messages, without system prompt).
        block: The ``[相关经验]`` block (``format_experiences``); empty means no-op.
        task_prompt: The task rewritten as the seed's task prompt
            (``build_task_prompt``), used by ``placement="task_message"``.
        placement: See :data:`Placement`.
    """
    check_placement(placement)
    out = [m for m in messages if not str(m.id or "").startswith(BLOCK_ID_PREFIX)]
    found = find_task(out)
    if not block or found is None:
        return out
    index, task = found
    if task.additional_kwargs.get(INJECTED_MARKER):
        return out
    if placement == "task_message" and isinstance(task.content, str):
        out[index] = task.model_copy(
            update={"content": task_prompt, "additional_kwargs": {**task.additional_kwargs, INJECTED_MARKER: True}}
        )
        return out
    block_id = BLOCK_ID_PREFIX + (task.id or hashlib.sha1(message_text(task).encode()).hexdigest()[:16])
    out.insert(index, HumanMessage(content=block, id=block_id))
    return out


def resolve_namespace(
    config: Mapping[str, Any] | None,
    *,
    explicit: str | None = None,
    key: str | None = "user_id",
    context: Any = None,
) -> str | None:
    """The namespace for one run: ``explicit``, else ``config["configurable"][key]``, else ``context.key``.

    ``None`` means "the store's default namespace". Templates such as
    ``"team-{org_id}"`` in ``explicit`` are filled from ``config["configurable"]``.

    Raises:
        ConfigurationError: a template names a key the config does not carry.
    """
    configurable: Mapping[str, Any] = (config or {}).get("configurable") or {}
    if explicit is not None:
        if "{" not in explicit:
            return explicit
        try:
            return explicit.format_map(dict(configurable))
        except KeyError as e:
            raise ConfigurationError(
                f"namespace template {explicit!r} needs config['configurable'][{e.args[0]!r}]"
            ) from e
    if key is None:
        return None
    value = configurable.get(key)
    if value is None and context is not None:
        value = context.get(key) if isinstance(context, Mapping) else getattr(context, key, None)
    if value is None or value == "":
        return None
    return str(value)


_ERROR_TYPE = re.compile(r"^\s*([A-Z][A-Za-z0-9_.]*(?:Error|Exception|Timeout|Warning))\b")


def _tool_calls(messages: Sequence[BaseMessage]) -> dict[str, tuple[str, dict[str, Any]]]:
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("id"):
                    calls[str(call["id"])] = (call["name"], dict(call["args"]))
    return calls


def trajectory_from_messages(
    messages: Sequence[BaseMessage],
    *,
    run_id: str,
    namespace: str | None = None,
    task_type: str | None = None,
    outcome: Outcome | None = None,
) -> Trajectory:
    """The trajectory of the current task, rebuilt from an agent's messages.

    The task is the last human message; its steps are the tool calls, tool
    results and errors (``ToolMessage(status="error")``), each with its call's
    arguments as the recorder's steps have them, and the final answer after it.
    Without ``outcome``: ``"success"`` when the run ends with an answer (an AI
    message without tool calls), ``"failure"`` when it ends on an error, else
    ``"unknown"``.
    """
    found = find_task(messages)
    start = found[0] + 1 if found else 0
    task = message_text(found[1]) if found else ""
    calls = _tool_calls(messages[start:])
    steps: list[Step] = []
    final: str | None = None
    for message in messages[start:]:
        if isinstance(message, AIMessage):
            text = message_text(message).strip()
            if message.tool_calls:
                if text:
                    steps.append(Step(type="thought", content=text))
                steps.extend(
                    Step(
                        type="tool_call",
                        tool_name=call["name"],
                        tool_args=dict(call["args"]),
                        content=str(call["args"]),
                        run_id=call.get("id"),
                    )
                    for call in message.tool_calls
                )
            elif text:
                final = text
                steps.append(Step(type="final_answer", content=text))
        elif isinstance(message, ToolMessage):
            text = message_text(message)
            name, args = calls.get(message.tool_call_id, (message.name, None))
            name = message.name or name
            if message.status == "error":
                kind = _ERROR_TYPE.match(text)
                detail = text[kind.end() :].lstrip(" :") if kind else text
                steps.append(
                    Step(
                        type="error",
                        tool_name=name,
                        tool_args=args,
                        content=text,
                        error_type=kind.group(1) if kind else None,
                        error_message=detail or text,
                        run_id=message.tool_call_id,
                    )
                )
            else:
                steps.append(
                    Step(type="tool_result", tool_name=name, tool_args=args, content=text, run_id=message.tool_call_id)
                )
    if outcome is None:
        last = messages[-1] if len(messages) > start else None
        if isinstance(last, AIMessage) and not last.tool_calls and final is not None:
            outcome = "success"
        elif steps and steps[-1].type == "error":
            outcome = "failure"
        else:
            outcome = "unknown"
    return Trajectory(
        run_id=run_id,
        task=task,
        steps=steps,
        outcome=outcome,
        final_answer=final,
        namespace=namespace or "default",
        task_type=task_type,
    )


def trajectory_from_intermediate_steps(
    intermediate_steps: Sequence[Any],
    *,
    task: str,
    answer: str,
    run_id: str,
    namespace: str | None = None,
    task_type: str | None = None,
    outcome: Outcome | None = None,
) -> Trajectory:
    """The trajectory of a classic ``AgentExecutor`` run, as AI/tool messages through :func:`trajectory_from_messages`.

    ``intermediate_steps`` are the executor's ``(AgentAction, observation)`` pairs
    (``return_intermediate_steps=True``); ``answer`` is its output. An observation
    that reads as an error (``"ValueError: ..."``, what ``handle_tool_error=True``
    hands back) is an ``error`` step. Without
    ``outcome``: ``"success"`` with an answer, else ``"unknown"`` — the same rules as
    for an agent's messages, because it *is* the same builder.
    """
    messages: list[BaseMessage] = [HumanMessage(content=task)]
    for index, item in enumerate(intermediate_steps):
        if not isinstance(item, tuple | list) or len(item) != 2:
            continue
        action, observation = item
        tool = str(getattr(action, "tool", None) or "tool")
        tool_input = getattr(action, "tool_input", None)
        args = dict(tool_input) if isinstance(tool_input, Mapping) else {"input": tool_input}
        call_id = f"step-{index}"
        messages.append(AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": call_id}]))
        text = str(observation)
        status = "error" if isinstance(observation, BaseException) or _ERROR_TYPE.match(text) else "success"
        messages.append(ToolMessage(content=text, tool_call_id=call_id, name=tool, status=status))
    if answer:
        messages.append(AIMessage(content=answer))
    return trajectory_from_messages(messages, run_id=run_id, namespace=namespace, task_type=task_type, outcome=outcome)
