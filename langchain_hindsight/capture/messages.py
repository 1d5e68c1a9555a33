"""Pure helpers shared by the drop-in adapters (middleware, graph nodes, classic memory).

Finding the task in a message list, injecting the ``[相关经验]`` block
ephemerally (on a copy, with stable ids), reading the namespace from a
``RunnableConfig``, and feeding agent messages (or an ``AgentExecutor``'s steps)
to the one trajectory builder (:mod:`langchain_hindsight.capture._steps`).
Nothing here does I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from time import time
from typing import Any, Literal, get_args

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_hindsight._text import clip_text
from langchain_hindsight.capture._steps import Live, conclude, tool_error_parts
from langchain_hindsight.capture._text import message_text
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.types import Outcome, Trajectory

__all__ = [
    "BLOCK_ID_PREFIX",
    "INJECTED_MARKER",
    "RECALL_TURNS",
    "Placement",
    "check_placement",
    "find_task",
    "inject",
    "namespace_from_config",
    "recall_query",
    "task_key",
    "trajectory_from_intermediate_steps",
    "trajectory_from_messages",
]

Placement = Literal["task_message", "separate_message"]
"""Where the block goes in the model's request.

``"task_message"`` (default): the task's own human message is sent as the
task prompt (``[相关经验]`` … ``[当前任务]`` task … closing instruction),
keeping its id. ``"separate_message"``: a separate human message holding only
the block, with a stable id, placed right before the task message.
Both are in the user turn, never in the system prompt: there a model
treats experience as a standing instruction and follows it too strictly.
"""

BLOCK_ID_PREFIX = "hindsight-experience-"
"""Id prefix of an injected separate block message; re-injection replaces, never duplicates."""

INJECTED_MARKER = "hindsight_injected"
"""``additional_kwargs`` marker on a task message that already carries the block."""

RECALL_TURNS = 2
"""How many of the conversation's last human turns the adapters recall with (see :func:`recall_query`)."""


def check_placement(placement: object) -> Placement:
    """``placement`` if it is a :data:`Placement`; else a :class:`ConfigurationError` naming it."""
    if placement not in get_args(Placement):
        raise ConfigurationError(f"placement must be 'task_message' or 'separate_message', got {placement!r}")
    return placement  # type: ignore[return-value]


def find_task(messages: Sequence[BaseMessage]) -> tuple[int, HumanMessage] | None:
    """The last human message that is not an injected block, with its index."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage) and not str(message.id or "").startswith(BLOCK_ID_PREFIX):
            return index, message
    return None


def recall_query(messages: Sequence[BaseMessage], *, turns: int = RECALL_TURNS) -> str:
    """The text the adapters recall with: the last ``turns`` human messages, oldest first, one per line.

    The current task alone (the last human message) is the weakest query a chat gives: a follow-up
    such as ``就下周那个需求评审会，帮我约一下`` or ``Yes, and book the service that's due anyway`` names
    nothing the memory is about, while the turn before it usually does. Measured on the floor
    benchmark's chat transcripts (``benchmarks/floor_calibration.py``, forms ``last turn`` and
    ``user turns``), the user turns joined serve the right memory far more often than the last one,
    at a small cost in silence on unrelated chats. Injected block messages and task messages that
    already carry the block are skipped; assistant turns are left out (they add the assistant's
    words, not the user's subject). The task itself (what is journaled, reflected on and shown in
    the block) stays the last human message.
    """
    texts: list[str] = []
    for message in reversed(messages):
        if len(texts) >= turns:
            break
        if not isinstance(message, HumanMessage) or str(message.id or "").startswith(BLOCK_ID_PREFIX):
            continue
        if message.additional_kwargs.get(INJECTED_MARKER):
            continue
        text = message_text(message).strip()
        if text:
            texts.append(text)
    return "\n".join(reversed(texts))


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
        task_prompt: The task rewritten as the task prompt
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


def namespace_from_config(
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
    max_content_chars: int = 2000,
) -> Trajectory:
    """The trajectory of the current task, rebuilt from an agent's messages.

    The task is the last human message; its steps are the model's text
    (``thought``), the tool calls, tool results and errors
    (``ToolMessage(status="error")``), each with its call's arguments as the
    recorder's steps have them. The run is ended by the same rule as the
    recorder's (:func:`~langchain_hindsight.capture._steps.conclude`): the answer
    is the last AI message when it calls no tool; ``"success"`` with an answer,
    ``"failure"`` when the run ends on an error, when the answer gives up
    (``放弃：多次失败。``, ``I was unable to complete the task``) or when the last tool
    error was never recovered from, else ``"unknown"``. ``outcome`` overrides that.
    Payloads longer than ``max_content_chars`` keep head and tail.
    """
    found = find_task(messages)
    start = found[0] + 1 if found else 0

    def clip(text: str) -> tuple[str, bool]:
        return clip_text(text, max_content_chars)

    live = Live(
        run_id=run_id,
        task=clip(message_text(found[1]))[0] if found else "",
        started=time(),
        namespace=namespace or "default",
        task_type=task_type,
        metadata={},
        outcome_override=outcome,
    )
    calls = _tool_calls(messages[start:])
    for message in messages[start:]:
        now = time()
        if isinstance(message, AIMessage):
            text, cut = clip(message_text(message).strip())
            if text:
                live.steps.append(("thought", text, now, None, None, None, None, message.id, cut))
            for call in message.tool_calls:
                call_args = dict(call["args"])
                content, cut = clip(str(call_args))
                live.steps.append(("tool_call", content, now, call["name"], call_args, None, None, call.get("id"), cut))
        elif isinstance(message, ToolMessage):
            name, args = calls.get(message.tool_call_id, (message.name, None))
            name = message.name or name
            text, cut = clip(message_text(message))
            if message.status == "error":
                etype, detail = tool_error_parts(text)
                live.steps.append(("error", text, now, name, args, etype, detail, message.tool_call_id, cut))
            else:
                live.steps.append(("tool_result", text, now, name, args, None, None, message.tool_call_id, cut))
    last = messages[-1] if len(messages) > start else None
    answer = message_text(last).strip() or None if isinstance(last, AIMessage) and not last.tool_calls else None
    return conclude(live, answer=answer, clip=clip, completed=False)


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
        failed = isinstance(observation, BaseException) or tool_error_parts(text)[0] != "ToolError"
        status = "error" if failed else "success"
        messages.append(ToolMessage(content=text, tool_call_id=call_id, name=tool, status=status))
    if answer:
        messages.append(AIMessage(content=answer))
    return trajectory_from_messages(messages, run_id=run_id, namespace=namespace, task_type=task_type, outcome=outcome)
