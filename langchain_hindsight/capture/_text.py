"""Payload helpers of ``TrajectoryRecorder``: text out of LangChain callback payloads.

Pure functions: the task of a root run (:func:`task_from_inputs`), its final
answer (:func:`final_from_outputs`), message and value text, tool arguments
(:func:`parse_args`, :func:`clip_args`) and head-and-tail truncation
(:func:`~langchain_hindsight._text.clip_text`, re-exported here and by ``langchain_hindsight.capture.recorder``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from langchain_hindsight._text import clip_text

__all__ = [
    "as_text",
    "clip_args",
    "final_from_outputs",
    "human_text",
    "is_interrupt",
    "message_text",
    "parse_args",
    "task_from_inputs",
]

_TASK_KEYS = ("input", "question", "query", "task", "prompt", "text")


def message_text(message: BaseMessage) -> str:
    """The text of a message (string content as is, content blocks joined)."""
    return message.content if isinstance(message.content, str) else message.text


def as_text(value: Any) -> str:
    """``value`` as text: strings as is, messages by their text, anything else as JSON (or ``repr``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseMessage):
        return message_text(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def human_text(item: Any) -> str | None:
    """The text of ``item`` if it is a human/user message in any LangChain input form."""
    if isinstance(item, BaseMessage):
        return message_text(item) if item.type == "human" else None
    if isinstance(item, tuple | list) and len(item) == 2 and item[0] in ("human", "user"):
        return as_text(item[1])
    if isinstance(item, Mapping) and item.get("role") in ("human", "user"):
        return as_text(item.get("content", ""))
    if isinstance(item, str):
        return item
    return None


def task_from_inputs(inputs: Any) -> str:
    """The task text of a root run: the first human message, or the input string."""
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, BaseMessage):
        return message_text(inputs)
    to_messages = getattr(inputs, "to_messages", None)
    if callable(to_messages):  # a PromptValue
        inputs = to_messages()
    if isinstance(inputs, Sequence) and not isinstance(inputs, str):
        for item in inputs:
            text = human_text(item)
            if text:
                return text
        return ""
    if isinstance(inputs, Mapping):
        messages = inputs.get("messages")
        if isinstance(messages, Sequence) and not isinstance(messages, str):
            return task_from_inputs(messages)
        for key in _TASK_KEYS:
            if key in inputs:
                return task_from_inputs(inputs[key])
        for value in inputs.values():
            if isinstance(value, str) and value.strip():
                return value
    return ""


def final_from_outputs(outputs: Any) -> str | None:
    """The final answer in a root run's outputs, or ``None`` when they hold none (e.g. a pending tool call)."""
    if isinstance(outputs, str):
        return outputs
    if isinstance(outputs, BaseMessage):
        return message_text(outputs) if outputs.type == "ai" else None
    if isinstance(outputs, Mapping):
        messages = outputs.get("messages")
        if isinstance(messages, Sequence) and messages:
            last = messages[-1]
            if isinstance(last, BaseMessage) and last.type == "ai" and not getattr(last, "tool_calls", None):
                return message_text(last)
            return None
        for key in ("output", "answer", "result", "text"):
            value = outputs.get(key)
            if isinstance(value, str):
                return value
    return None


def is_interrupt(error: BaseException) -> bool:
    """LangGraph's interrupts are control flow, not failures (checked by name: no import of langgraph)."""
    return any(cls.__name__ == "GraphBubbleUp" for cls in type(error).__mro__)


def parse_args(input_str: str) -> dict[str, Any] | str:
    """A tool's input string as a JSON object if it is one, else the string."""
    try:
        value = json.loads(input_str)
    except (TypeError, ValueError):
        return input_str
    return value if isinstance(value, dict) else input_str


def clip_args(args: Any, limit: int, marker: str) -> dict[str, Any] | None:
    """Tool arguments as a dict with string keys, string values longer than ``limit`` clipped.

    A non-mapping ``args`` becomes ``{"input": args}``; ``None`` stays ``None``.
    """
    if args is None:
        return None
    if not isinstance(args, Mapping):
        args = {"input": args}
    out: dict[str, Any] = {}
    for key, value in args.items():
        if isinstance(value, str) and len(value) > limit:
            value = clip_text(value, limit, marker)[0]
        out[str(key)] = value
    return out
