"""JSON out of model answers: the one reader used by reflection, the review, the write judge and the feedback model.

Models wrap JSON in prose or fenced blocks, answer "空"/"none" for nothing, and
get cut off at their token limit. :func:`parse_json_text` finds the value in
all of these (keeping the complete items of a truncated list);
:func:`json_items` reads the list of items out of the shapes models answer with.
:func:`structured_runnable` asks a model for a schema by function calling where it can,
and :func:`response_payload` takes the JSON out of whatever came back.
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import Runnable

__all__ = ["json_items", "parse_json_text", "response_payload", "response_text", "structured_runnable"]

logger = logging.getLogger(__name__)

_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
_EMPTY_ANSWERS = frozenset({"", "空", "无", "[]", "{}", "none", "null", "nothing", "empty", "n/a"})
_MAX_DECODE_ATTEMPTS = 50
_ITEM_KEYS = ("experiences", "memories", "items", "results")


def _json_candidates(text: str) -> list[str]:
    stripped = text.strip()
    return [stripped, *(m.strip() for m in _FENCE.findall(stripped))]


def parse_json_text(text: str) -> tuple[Any, bool]:
    r"""JSON from model text: the whole text, a fenced block, or the first JSON value in it.

    Returns ``(value, ok)``. An answer meaning "nothing" (``"空"``, ``"none"``, ``"[]"``)
    is ``([], True)``. Complete items are salvaged from truncated output
    (``ok`` is then True and the value a list of the complete objects that have a ``content``).

    Example:
        >>> parse_json_text('Sure!\\n```json\\n{"experiences": []}\\n```')
        ({'experiences': []}, True)
        >>> parse_json_text('[{"content": "a"}, {"content": "b"}, {"cont')
        ([{'content': 'a'}, {'content': 'b'}], True)
        >>> parse_json_text("no JSON here")
        (None, False)
    """
    for candidate in _json_candidates(text):
        if candidate.lower() in _EMPTY_ANSWERS:
            return [], True
        try:
            return json.loads(candidate), True
        except (ValueError, RecursionError):  # RecursionError: absurdly nested JSON
            continue
    decoder = json.JSONDecoder()
    stripped = text.strip()
    starts = [i for i, ch in enumerate(stripped) if ch in "{["][:_MAX_DECODE_ATTEMPTS]
    first = _decode_at(decoder, stripped, starts[0]) if starts else None
    if first is not None:
        return first, True
    salvaged: list[Any] = []
    pos = 0
    for _ in range(_MAX_DECODE_ATTEMPTS):  # truncated output: keep the complete item objects
        start = stripped.find("{", pos)
        if start < 0:
            break
        try:
            value, end = decoder.raw_decode(stripped, start)
        except (ValueError, RecursionError):  # RecursionError: absurdly nested JSON
            pos = start + 1
            continue
        if isinstance(value, dict) and "content" in value:
            salvaged.append(value)
        pos = end
    if salvaged:
        return salvaged, True
    for start in starts[1:]:
        value = _decode_at(decoder, stripped, start)
        if value is not None:
            return value, True
    return None, False


def _decode_at(decoder: json.JSONDecoder, text: str, start: int) -> Any:
    """The non-empty JSON object or array starting at ``start``, else ``None``."""
    try:
        value, _ = decoder.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict | list) and value else None


def json_items(payload: Any) -> list[Any] | None:
    """The list of items in a parsed payload (``None``: not a recognisable shape).

    A bare list; an object with an ``experiences`` (or ``memories``, ``items``,
    ``results``) list; a single object with a ``content`` (one item; empty
    content means none); an empty object (none).

    Example:
        >>> json_items({"experiences": [{"content": "x"}]})
        [{'content': 'x'}]
        >>> json_items({"content": ""}), json_items("text")
        ([], None)
    """
    if payload is None:
        return None
    if isinstance(payload, list):
        return payload
    if isinstance(payload, dict):
        for key in _ITEM_KEYS:
            if key in payload:
                value = payload[key]
                return value if isinstance(value, list) else [] if value in (None, "", {}) else None
        if "content" in payload:  # the single-object shape; empty content means "nothing"
            return [payload] if payload.get("content") else []
        return [] if not payload else None
    return None


def structured_runnable(
    model: BaseChatModel, schema: type[BaseModel], *, structured: bool = True
) -> Runnable[Any, Any]:
    """``model`` asked for ``schema`` by function calling, else ``model`` itself.

    The raw message is kept beside the parsed result, so an answer that fails validation can still be
    read. ``model`` itself when ``structured`` is false or the model has no structured output:
    its answer is then JSON text, which :func:`response_payload` reads as well.
    """
    if structured:
        try:
            return model.with_structured_output(schema, include_raw=True, method="function_calling")
        except (NotImplementedError, TypeError, ValueError):
            logger.debug("%s has no structured output; parsing JSON text", type(model).__name__)
    return model


def response_text(response: Any) -> Any:
    """The text of a model answer (a message, a string, or a :func:`structured_runnable` result); else ``response``."""
    if isinstance(response, dict) and "raw" in response:
        response = response["raw"]
    content = getattr(response, "content", response)
    return content if isinstance(content, str) else getattr(response, "text", content)


def response_payload(response: Any) -> tuple[Any, bool]:
    """The JSON payload of a model answer, as ``(value, ok)`` like :func:`parse_json_text`.

    In order: the validated schema object of a :func:`structured_runnable` result; the
    first tool call's arguments; the first invalid tool call's arguments (cut off at
    ``max_tokens``, say), salvaged by :func:`parse_json_text`; JSON in the message text.
    """
    if isinstance(response, dict) and "raw" in response:
        parsed = response.get("parsed")
        if isinstance(parsed, BaseModel):
            return parsed.model_dump(), True
        response = response["raw"]
    if isinstance(response, AIMessage) and response.tool_calls:
        return response.tool_calls[0]["args"], True
    if isinstance(response, AIMessage) and response.invalid_tool_calls:
        return parse_json_text(response.invalid_tool_calls[0].get("args") or "")
    if isinstance(response, BaseMessage | str):
        return parse_json_text(response_text(response))
    return None, False
