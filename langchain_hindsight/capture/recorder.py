r"""``TrajectoryRecorder``: one :class:`~langchain_hindsight.types.Trajectory` per root run, from callback events.

Works with anything that emits LangChain callbacks: ``langchain.agents.create_agent``,
``langgraph.prebuilt.create_react_agent``, hand-written ``StateGraph``\\ s, the classic
``AgentExecutor`` and plain LCEL chains, sync and async. Events are keyed by
``run_id``/``parent_run_id``, so concurrent runs sharing one recorder never mix.

What becomes a step (seed §4.3):

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
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from time import time
from typing import Any, TypeVar, cast, get_args
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from langchain_hindsight.capture._steps import Live, Raw, conclude, run_uuid, snapshot, to_step, tool_error_parts
from langchain_hindsight.capture._text import (
    as_text,
    clip_args,
    clip_text,
    final_from_outputs,
    is_interrupt,
    message_text,
    parse_args,
    task_from_inputs,
)
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.prompts import REFLECTION_ZH, ReflectionTemplates
from langchain_hindsight.types import Outcome, Trajectory

__all__ = ["SERVED_KEY", "TrajectoryRecorder", "clip_text"]

logger = logging.getLogger(__name__)

_OUTCOMES = frozenset(get_args(Outcome))
SERVED_KEY = "hindsight_served"
"""Trajectory metadata key listing what a hindsight retriever served during the run
(``[{"memory_id", "score", "similarity", "namespace"}, ...]``, in the order served)."""
_NAMESPACE_KEY = "hindsight_namespace"
_TASK_TYPE_KEY = "hindsight_task_type"

_F = TypeVar("_F", bound=Callable[..., None])


def _guarded(method: _F) -> _F:
    """Run a callback so that it never raises into the agent: the first failure is logged, later ones at debug."""

    @functools.wraps(method)
    def wrapper(self: TrajectoryRecorder, /, *args: Any, **kwargs: Any) -> None:
        try:
            method(self, *args, **kwargs)
        except Exception:  # noqa: BLE001 - the capture path is the one place that swallows (STYLE 9)
            self._failed(method.__name__)

    return cast(_F, wrapper)


class TrajectoryRecorder(BaseCallbackHandler):
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
        on_finish: Called with each finished trajectory (write trigger, seed §2.3),
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

    def __init__(
        self,
        *,
        on_finish: Callable[[Trajectory], object] | None = None,
        max_content_chars: int = 2000,
        max_finished: int = 100,
        max_live: int = 1000,
        namespace: str = "default",
        templates: ReflectionTemplates | None = None,
    ) -> None:
        for name, value in (
            ("max_content_chars", max_content_chars),
            ("max_finished", max_finished),
            ("max_live", max_live),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"{name} must be a positive int, got {value!r}")
        if max_content_chars < 20:
            raise ConfigurationError(f"max_content_chars must be at least 20, got {max_content_chars}")
        if not isinstance(namespace, str) or not namespace.strip():
            raise ConfigurationError("namespace must be a non-empty string")
        if on_finish is not None and not callable(on_finish):
            raise ConfigurationError("on_finish must be callable")
        self.on_finish = on_finish
        self.max_content_chars = max_content_chars
        self.max_finished = max_finished
        self.max_live = max_live
        self.namespace = namespace
        self._marker = (templates or REFLECTION_ZH).truncation_marker
        self._lock = threading.Lock()
        self._root_of: dict[UUID, UUID] = {}
        self._live: OrderedDict[UUID, Live] = OrderedDict()
        self._finished: OrderedDict[UUID, Trajectory] = OrderedDict()
        self._last: Trajectory | None = None
        self._warned = False

    # ------------------------------------------------------------------ public API
    @property
    def last_trajectory(self) -> Trajectory | None:
        """The most recently finished trajectory (with concurrent runs: whichever ended last)."""
        return self._last

    def get(self, run_id: UUID | str) -> Trajectory | None:
        """The trajectory of root run ``run_id``: a snapshot while it runs (working memory), or the finished one."""
        rid = run_uuid(run_id)
        with self._lock:
            live = self._live.get(rid)
            if live is not None:
                return snapshot(live, outcome="unknown", ended=None, final=None, error=None)
            return self._finished.get(rid)

    def live_run_ids(self) -> list[UUID]:
        """Root runs still in progress, oldest first."""
        with self._lock:
            return list(self._live)

    def finished_run_ids(self) -> list[UUID]:
        """Finished runs still retained, oldest first."""
        with self._lock:
            return list(self._finished)

    def mark_outcome(self, run_id: UUID | str, outcome: Outcome) -> Trajectory:
        """Set the outcome explicitly (it wins over the automatic success/failure).

        Call it during the run so that ``on_finish`` sees it, or afterwards to
        correct a retained trajectory before reflecting on it.

        Raises:
            ConfigurationError: unknown outcome or run.
        """
        if outcome not in _OUTCOMES:
            raise ConfigurationError(f"outcome must be one of {sorted(_OUTCOMES)}, got {outcome!r}")
        rid = run_uuid(run_id)
        with self._lock:
            live = self._live.get(rid)
            if live is not None:
                live.outcome_override = outcome
                return snapshot(live, outcome=outcome, ended=None, final=None, error=None)
            done = self._finished.get(rid)
            if done is None:
                raise ConfigurationError(f"no run {rid} in this recorder (never seen, or released)")
            updated = done.model_copy(update={"outcome": outcome})
            self._store_finished(updated)
            return updated

    def add_feedback(self, run_id: UUID | str, text: str) -> Trajectory:
        """Append a user-feedback step (seed §4.3) to a live or retained run; returns the updated trajectory.

        To write the correction to memory immediately, also call
        :meth:`langchain_hindsight.reflection.reflector.Reflector.record_user_feedback`.

        Raises:
            ConfigurationError: empty text or unknown run.
        """
        if not isinstance(text, str) or not text.strip():
            raise ConfigurationError("feedback text must be a non-empty string")
        content, cut = clip_text(text.strip(), self.max_content_chars, self._marker)
        rid = run_uuid(run_id)
        raw: Raw = ("feedback", content, time(), None, None, None, None, None, cut)
        with self._lock:
            live = self._live.get(rid)
            if live is not None:
                live.steps.append(raw)
                return snapshot(live, outcome="unknown", ended=None, final=None, error=None)
            done = self._finished.get(rid)
            if done is None:
                raise ConfigurationError(f"no run {rid} in this recorder (never seen, or released)")
            updated = done.model_copy(update={"steps": [*done.steps, to_step(raw)]})
            self._store_finished(updated)
            return updated

    def release(self, run_id: UUID | str) -> bool:
        """Forget a run (live or finished). Returns whether it was held."""
        rid = run_uuid(run_id)
        with self._lock:
            live = self._live.pop(rid, None)
            if live is not None:
                self._root_of = {k: v for k, v in self._root_of.items() if v != rid}
            return live is not None or self._finished.pop(rid, None) is not None

    # ------------------------------------------------------------------ internals
    def _failed(self, event: str) -> None:
        """Log a callback failure once per recorder (later ones at debug); never raise into the agent."""
        if not self._warned:
            self._warned = True
            logger.warning("TrajectoryRecorder ignored an error in %s; capture may be incomplete", event, exc_info=True)
        else:
            logger.debug("TrajectoryRecorder ignored an error in %s", event, exc_info=True)

    def _clip(self, text: str) -> tuple[str, bool]:
        if len(text) <= self.max_content_chars:
            return text, False
        return clip_text(text, self.max_content_chars, self._marker)

    def _start(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        inputs: Any,
        metadata: dict[str, Any] | None,
    ) -> Live | None:
        """Register a run; a run without a known parent starts a trajectory. Returns its live trajectory."""
        with self._lock:
            root = self._root_of.get(parent_run_id) if parent_run_id is not None else None
            live = None if root is None else self._live.get(root)
            if root is not None and live is not None:
                self._root_of[run_id] = root  # the root's own key (LangChain may pass a caller's str run id)
                return live
        meta = dict(metadata or {})
        namespace = meta.get(_NAMESPACE_KEY)
        task_type = meta.get(_TASK_TYPE_KEY)
        live = Live(
            run_id=run_id,
            task=self._clip(task_from_inputs(inputs).strip())[0],
            started=time(),
            namespace=namespace if isinstance(namespace, str) and namespace.strip() else self.namespace,
            task_type=task_type if isinstance(task_type, str) and task_type.strip() else None,
            metadata={k: v for k, v in meta.items() if isinstance(v, str | int | float | bool)},
        )
        with self._lock:
            self._live[run_id] = live
            self._root_of[run_id] = run_id
            while len(self._live) > self.max_live:
                dropped, _ = self._live.popitem(last=False)
                self._root_of = {k: v for k, v in self._root_of.items() if v != dropped}
                logger.warning(
                    "TrajectoryRecorder dropped unfinished run %s (more than %d live)", dropped, self.max_live
                )
        return live

    def _add(self, run_id: UUID, raw: Raw) -> None:
        with self._lock:
            root = self._root_of.get(run_id)
            live = None if root is None else self._live.get(root)
            if live is not None:
                live.steps.append(raw)

    def _end(self, run_id: UUID, *, outputs: Any = None, error: BaseException | None = None) -> None:
        """A run ended; if it is a root, finish its trajectory."""
        with self._lock:
            root = self._root_of.pop(run_id, None)
            if root is None or root != run_id:
                return
            live = self._live.pop(run_id, None)
        if live is None:
            return
        self._finish(live, outputs, error)

    def _finish(self, live: Live, outputs: Any, error: BaseException | None) -> None:
        interrupted = error is not None and is_interrupt(error)
        failure: tuple[str, str, bool] | None = None
        if error is not None and not interrupted:
            message, cut = self._clip(str(error))
            failure = (type(error).__name__, message, cut)
        answer = final_from_outputs(outputs) if error is None else None
        traj = conclude(live, answer=answer, clip=self._clip, failure=failure, interrupted=interrupted)
        with self._lock:
            self._store_finished(traj)
            self._last = traj
        if self.on_finish is not None:
            result = self.on_finish(traj)
            if isinstance(result, Future):
                result.add_done_callback(functools.partial(self._release_done, run_uuid(live.run_id)))

    def _release_done(self, run_id: UUID, future: Future[Any]) -> None:
        if not future.cancelled() and future.exception() is None:
            with self._lock:
                self._finished.pop(run_id, None)

    def _store_finished(self, traj: Trajectory) -> None:
        rid = UUID(traj.run_id)
        self._finished[rid] = traj
        self._finished.move_to_end(rid)
        while len(self._finished) > self.max_finished:
            self._finished.popitem(last=False)
        if self._last is not None and self._last.run_id == traj.run_id:
            self._last = traj

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
