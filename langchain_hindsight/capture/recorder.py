r"""``TrajectoryRecorder``: one :class:`~langchain_hindsight.types.Trajectory` per root run, from callback events.

Works with anything that emits LangChain callbacks: ``langchain.agents.create_agent``,
``langgraph.prebuilt.create_react_agent``, hand-written ``StateGraph``\\ s, the classic
``AgentExecutor`` and plain LCEL chains, sync and async. Events are keyed by
``run_id``/``parent_run_id``, so concurrent runs sharing one recorder never mix.

What becomes a step:

========================  =====================================================
event                     step
========================  =====================================================
model output with text    ``thought`` (the last one becomes ``final_answer``)
tool start                ``tool_call`` (tool name, structured args)
tool end                  ``tool_result`` (``error`` if a ``ToolMessage`` has
                          ``status="error"``)
tool / model error        ``error`` (error type and message)
root error                ``error``; the outcome is ``failure``
``add_feedback``          ``feedback``
========================  =====================================================

The hot path does no I/O and builds no pydantic models: an event appends a tuple
under a lock (a few microseconds, see ``benchmarks/capture_overhead.py``). A
callback failure is logged once and swallowed; it never reaches the agent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from time import time
from typing import Any, TypeVar, cast
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight.capture._runs import RunRegistry
from langchain_hindsight.capture._steps import Raw, tool_error_parts
from langchain_hindsight.capture._text import as_text, clip_args, message_text, parse_args

__all__ = ["SERVED_KEY", "TrajectoryRecorder"]


SERVED_KEY = "hindsight_served"
"""Trajectory metadata key listing what a hindsight retriever served during the run
(``[{"memory_id", "score", "similarity", "namespace", "breakdown", "query_task_type"}, ...]``,
in the order served; ``breakdown`` is the score's per-factor contributions, so the journal can
explain an LCEL run like an adapter's)."""

_F = TypeVar("_F", bound=Callable[..., None])


def _numbers(value: object) -> dict[str, float]:
    """A served document's score breakdown as plain ``{factor: float}`` (anything else left out)."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): float(v) for k, v in value.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def _guarded(method: _F) -> _F:
    """Run a callback so that it never raises into the agent: the first failure is logged, later ones at debug."""

    @functools.wraps(method)
    def wrapper(self: TrajectoryRecorder, /, *args: Any, **kwargs: Any) -> None:
        try:
            method(self, *args, **kwargs)
        except Exception:  # noqa: BLE001 - the capture path is the one place that swallows (STYLE 9)
            self._failed(method.__name__)

    return cast(_F, wrapper)


@refuse_unknown_keywords
class TrajectoryRecorder(RunRegistry, BaseCallbackHandler):
    """Records what an agent run did, as a :class:`Trajectory` per root run.

    Pass it as a callback; read the result when the run ends:

    Example:
        .. code-block:: python

            from langchain_hindsight import TrajectoryRecorder

            recorder = TrajectoryRecorder()
            agent.invoke({"messages": [("user", "清洗 data.csv")]}, config={"callbacks": [recorder]})
            traj = recorder.last_trajectory          # task, steps, outcome, final answer

    A root run is one without a parent (``invoke`` on the outermost runnable).
    Tag a run with ``config={"metadata": {"hindsight_namespace": "alice",
    "hindsight_task_type": "data_cleaning"}}`` to set the trajectory's namespace and
    task type, and with ``config={"run_id": uuid}`` to know its id in advance.

    Args:
        on_finish: Called with each finished trajectory (the moment to write memories),
            e.g. ``BackgroundReflector.submit``. It runs inside the callback, so it
            must be quick. If it returns a ``Future``, the trajectory is released
            from the recorder when that future completes without error.
        max_content_chars: Longest step content kept; longer payloads keep their
            head and tail with the cut recorded in the text and ``Step.truncated``.
        max_finished: How many finished trajectories are kept (oldest dropped).
        max_live: How many unfinished runs are tracked (a stream abandoned
            mid-way never ends; the oldest is dropped beyond this).
        namespace: Namespace of trajectories whose run metadata names none.
        templates: Strings used for the truncation marker.
    """

    run_inline: bool = True  # no I/O here: run in the event loop, in event order, without a thread hop
    raise_error: bool = False

    # ------------------------------------------------------------------ callback events
    @property
    def ignore_retriever(self) -> bool:
        """Retriever events are seen: what a hindsight retriever served inside a run is recorded."""
        return False

    @property
    def ignore_retry(self) -> bool:
        """Retries are seen as repeated tool or model events."""
        return True

    @property
    def ignore_custom_event(self) -> bool:
        """Custom events carry no agent step."""
        return True

    @_guarded
    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: dict[str, Any] | Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Register the run; a root run starts a trajectory with the task from its input."""
        self._start(run_id, parent_run_id, inputs, metadata)

    @_guarded
    def on_chain_end(
        self, outputs: dict[str, Any] | Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """Finish the trajectory when the root run ends."""
        self._end(run_id, outputs=outputs)

    @_guarded
    def on_chain_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """A root error ends the trajectory as a failure; inner chain errors surface as tool or root errors."""
        self._end(run_id, error=error)

    @_guarded
    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Register a retriever call inside a run (a retriever invoked on its own starts no trajectory)."""
        if parent_run_id is not None:
            self._start(run_id, parent_run_id, query, metadata)

    @_guarded
    def on_retriever_end(
        self, documents: Sequence[Document], *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """Memories a hindsight retriever served (documents carrying ``memory_id``) go to ``metadata[SERVED_KEY]``."""
        served = [
            {
                "memory_id": str(d.metadata["memory_id"]),
                "score": float(d.metadata.get("score") or 0.0),
                "similarity": float(d.metadata.get("similarity") or 0.0),
                "namespace": str(d.metadata.get("namespace") or ""),
                "breakdown": _numbers(d.metadata.get("breakdown")),
                "query_task_type": d.metadata.get("query_task_type"),
            }
            for d in documents
            if isinstance(d.metadata.get("memory_id"), str)
        ]
        with self._lock:
            root = self._root_of.pop(run_id, None)
            live = None if root is None else self._live.get(root)
            if live is not None and served:
                known = {item["memory_id"] for item in live.metadata.get(SERVED_KEY, [])}
                fresh = [item for item in served if item["memory_id"] not in known]
                live.metadata[SERVED_KEY] = [*live.metadata.get(SERVED_KEY, []), *fresh]

    @_guarded
    def on_retriever_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """A failed retrieval serves nothing."""
        with self._lock:
            self._root_of.pop(run_id, None)

    @_guarded
    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Register the model call (a model invoked on its own is a root run)."""
        self._start(run_id, parent_run_id, messages[0] if messages else "", metadata)

    @_guarded
    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Register a completion-model call."""
        self._start(run_id, parent_run_id, prompts[0] if prompts else "", metadata)

    @_guarded
    def on_llm_end(
        self, response: LLMResult, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """Model text becomes a ``thought`` (tool calls are recorded when the tools start)."""
        generation = response.generations[0][0] if response.generations and response.generations[0] else None
        if generation is not None:
            text = message_text(generation.message) if isinstance(generation, ChatGeneration) else generation.text
            if text.strip():
                content, cut = self._clip(text.strip())
                self._add(run_id, ("thought", content, time(), None, None, None, None, run_id, cut))
        self._end(run_id, outputs=generation.text if generation is not None else None)

    @_guarded
    def on_llm_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """A model error becomes an ``error`` step."""
        message, cut = self._clip(str(error))
        self._add(run_id, ("error", message, time(), None, None, type(error).__name__, message, run_id, cut))
        self._end(run_id, error=error)

    @_guarded
    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A ``tool_call`` step with the tool name and structured args (from ``inputs=``)."""
        live = self._start(run_id, parent_run_id, input_str, metadata)
        if live is None:
            return
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        args = clip_args(inputs if inputs is not None else parse_args(input_str), self.max_content_chars, self._marker)
        with self._lock:
            live.tools[run_id] = (name, args)
            live.steps.append(("tool_call", "", time(), name, args, None, None, run_id, False))

    @_guarded
    def on_tool_end(self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        """A ``tool_result`` step (``error`` when LangGraph reports ``ToolMessage(status="error")``)."""
        with self._lock:
            root = self._root_of.get(run_id)
            live = None if root is None else self._live.get(root)
            name, args = live.tools.pop(run_id, ("tool", None)) if live is not None else ("tool", None)
        if live is not None:
            content, cut = self._clip(as_text(output))
            if getattr(output, "status", None) == "error":
                etype, detail = tool_error_parts(content)
                raw: Raw = ("error", content, time(), name, args, etype, detail, run_id, cut)
            else:
                raw = ("tool_result", content, time(), name, args, None, None, run_id, cut)
            self._add(run_id, raw)
        self._end(run_id, outputs=output)

    @_guarded
    def on_tool_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """An ``error`` step with the tool, its args and the error type/message (handled or not)."""
        with self._lock:
            root = self._root_of.get(run_id)
            live = None if root is None else self._live.get(root)
            name, args = live.tools.pop(run_id, ("tool", None)) if live is not None else ("tool", None)
        message, cut = self._clip(str(error))
        self._add(run_id, ("error", message, time(), name, args, type(error).__name__, message, run_id, cut))
        self._end(run_id, error=error)
