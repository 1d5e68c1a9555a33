"""Scripted chat models to test your own agents offline (no API key, no network).

``GenericFakeChatModel`` replays messages but has no ``bind_tools``, so agents
(``create_agent``, ``create_react_agent``, ``AgentExecutor``) refuse it.
:class:`ScriptedToolModel` adds ``bind_tools`` (returning the model itself, so
the script decides which tools are called) and streams tool calls correctly.

Build one from a compact script with :func:`scripted_model`::

    model = scripted_model(
        call("read_file", path="data.csv", encoding="utf-8"),       # one tool call
        call("read_file", path="data.csv", encoding="gbk"),
        [call("a", x=1), call("b", y=2)],                            # parallel calls
        "The file has 3 rows.",                                      # final answer
    )

Each turn is consumed by one model call. A script that runs out raises
``ScriptExhaustedError`` (a real error the agent sees, not a silent hang).

Example:
    .. code-block:: python

        from langchain.agents import create_agent
        from langchain_hindsight import Hindsight
        from langchain_hindsight.testing import call, scripted_model

        model = scripted_model(call("query_sales", start="2024-06-03"), "周报：销售额 42")
        agent = create_agent(model, tools=[query_sales], middleware=[Hindsight().middleware()])
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field, PrivateAttr

__all__ = [
    "ReactiveToolModel",
    "ScriptExhaustedError",
    "ScriptedToolModel",
    "Turn",
    "call",
    "scripted_model",
    "to_message",
]

_ids = itertools.count(1)


class ScriptExhaustedError(RuntimeError):
    """The model was called more often than the script has turns."""


def call(name: str, /, *, call_id: str | None = None, **args: Any) -> ToolCall:
    """A tool call for a script: ``call("read_file", path="a.csv")``. Ids are generated when omitted."""
    return ToolCall(name=name, args=dict(args), id=call_id or f"call_{next(_ids)}", type="tool_call")


Turn = str | AIMessage | ToolCall | Sequence[ToolCall] | tuple[str, dict[str, Any]]
"""One scripted model turn: final text, an AIMessage, one tool call, or several parallel calls."""


def to_message(turn: Turn) -> AIMessage:
    """Turn a compact script item into an ``AIMessage``.

    ``"text"`` → a final answer; ``call(...)`` or ``("tool", {args})`` → one tool
    call; a list of calls → parallel calls; an ``AIMessage`` passes through.
    """
    if isinstance(turn, AIMessage):
        return turn
    if isinstance(turn, str):
        return AIMessage(content=turn, id=f"ai_{next(_ids)}")
    if isinstance(turn, tuple) and len(turn) == 2 and isinstance(turn[0], str) and isinstance(turn[1], dict):
        return AIMessage(content="", tool_calls=[call(turn[0], **turn[1])], id=f"ai_{next(_ids)}")
    if isinstance(turn, dict):
        return AIMessage(content="", tool_calls=[turn], id=f"ai_{next(_ids)}")
    calls = list(turn)
    if not calls or not all(isinstance(c, dict) and "name" in c for c in calls):
        raise TypeError(f"not a script turn: {turn!r}")
    return AIMessage(content="", tool_calls=calls, id=f"ai_{next(_ids)}")


def _as_chunk(message: AIMessage) -> AIMessageChunk:
    """The whole message as one final stream chunk, tool calls included (the base class drops them)."""
    return AIMessageChunk(
        content=message.content,
        id=message.id,
        additional_kwargs=dict(message.additional_kwargs),
        response_metadata=dict(message.response_metadata),
        tool_call_chunks=[
            {
                "name": tc["name"],
                "args": json.dumps(tc["args"], ensure_ascii=False),
                "id": tc["id"],
                "index": i,
                "type": "tool_call_chunk",
            }
            for i, tc in enumerate(message.tool_calls)
        ],
        chunk_position="last",
    )


class ScriptedToolModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that agents accept: replays scripted ``AIMessage`` turns with tool calls.

    ``bind_tools`` records the bound tool names (``model.bound_tool_names``) and
    returns the model itself, so ``with_structured_output`` also works when a
    scripted turn calls the schema's tool. Calls are serialised with a lock, so
    one model may be shared by threads (turn order then follows call order).
    """

    bound_tool_names: list[str] = Field(default_factory=list)
    calls: int = 0
    """How many model calls were answered."""
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | Any],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Record the tool names and return the model itself (the script decides the calls)."""
        from langchain_core.utils.function_calling import convert_to_openai_tool

        names = []
        for tool in tools:
            try:
                names.append(convert_to_openai_tool(tool)["function"]["name"])
            except (TypeError, ValueError, KeyError):
                names.append(getattr(tool, "name", repr(tool)))
        self.bound_tool_names = names
        return self

    def _next_message(self, messages: list[BaseMessage]) -> AIMessage:
        with self._lock:
            try:
                item = next(self.messages)
            except StopIteration:
                raise ScriptExhaustedError(f"script exhausted after {self.calls} model call(s)") from None
            self.calls += 1
        return to_message(item)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next_message(messages))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        chunk = ChatGenerationChunk(message=_as_chunk(self._next_message(messages)))
        if run_manager:
            run_manager.on_llm_new_token(chunk.text, chunk=chunk)
        yield chunk

    @property
    def _llm_type(self) -> str:
        return "scripted-tool-model"


class ReactiveToolModel(ScriptedToolModel):
    """A tool-calling fake whose answer is computed from the conversation.

    ``respond(messages) -> Turn`` sees the full prompt, so one model can serve
    concurrent runs of different tasks without sharing a script::

        def respond(messages):
            if messages[-1].type == "human":
                return call("lookup", q=messages[-1].content)
            return f"done: {messages[-1].content}"

        model = ReactiveToolModel(respond=respond)
    """

    messages: Iterator[AIMessage | str] = Field(default_factory=lambda: iter(()))
    respond: Callable[[list[BaseMessage]], Turn]

    def _next_message(self, messages: list[BaseMessage]) -> AIMessage:
        with self._lock:
            self.calls += 1
        return to_message(self.respond(messages))


def scripted_model(*turns: Turn) -> ScriptedToolModel:
    """A :class:`ScriptedToolModel` that answers ``turns`` in order (see the module docstring)."""
    return ScriptedToolModel(messages=iter([to_message(t) for t in turns]))
