"""The graph wrapper behind ``with_hindsight``: the caller's own compiled graph, plus recall and reflection.

:class:`HindsightGraph` is a copy of the caller's ``CompiledStateGraph`` (same
nodes, channels, reducers, store) whose ``stream``/``astream`` — and therefore
``invoke``/``ainvoke``/``stream_events`` — serve the ``[相关经验]`` block into
the run's input before LangGraph runs it, and hand the finished run to the
session (outcome, journal, reflection) afterwards. Everything else
(``get_state``, ``update_state``, ``get_state_history``, ``Command(resume=…)``,
time travel, subgraphs, streaming) is LangGraph's own code on the same graph,
so reducers apply once per step and streams carry the inner node names.

The block lives only in memory: it is injected into the task message of this
run's input, and ``_scrubbing.ScrubbingSaver`` (wrapping the caller's checkpointer)
puts the original task message back — or drops the separate block message —
in every checkpoint and pending write before they reach the caller's saver.
The same scrub is applied to what the wrapper returns and streams.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

from langchain_core.messages import BaseMessage, HumanMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from langchain_hindsight.adapters._scrubbing import Scrubber, ScrubbingSaver
from langchain_hindsight.capture import OUTCOME_REASON_KEY, answer_outcome, message_text
from langchain_hindsight.capture.messages import Placement, find_task, inject, trajectory_from_messages
from langchain_hindsight.types import Outcome, Served, Step, Trajectory

if TYPE_CHECKING:
    from langchain_hindsight.session.loop import HindsightSession

__all__ = ["HindsightGraph", "Wrapping", "wrap_graph"]

logger = logging.getLogger(__name__)

OutcomeFn = Callable[[Mapping[str, Any]], Outcome]
"""Decides a run's outcome from the final state (``"success"``, ``"failure"`` or ``"unknown"``)."""

_TASK_ID_KEY = "__pregel_task_id"
"""``config["configurable"]`` key LangGraph sets when a graph runs as a node of another graph."""

_LENT_SAVER_KEY = "__pregel_checkpointer"
"""``config["configurable"]`` key through which a parent graph lends its checkpointer to a subgraph."""

_INTERRUPT_KEY = "__interrupt__"
"""Key of the ``updates`` chunk LangGraph emits when a run stops on an interrupt."""

_MAX_PENDING = 1024
"""At most this many interrupted runs remembered per wrapper (oldest forgotten first; see ``_resume``)."""


# ---------------------------------------------------------------------------- options
@dataclasses.dataclass(frozen=True)
class Wrapping:
    """What ``with_hindsight`` was asked to do; shared by every copy of one wrapper."""

    loop: HindsightSession
    scrubber: Scrubber
    input_key: str
    block_key: str | None
    output_key: str | None
    outcome: OutcomeFn | None
    placement: Placement
    namespace_of: Callable[[Mapping[str, Any] | None, Any], str | None]
    """``(config, runtime context) -> namespace``."""
    pending: OrderedDict[tuple[str, str], tuple[Served, BaseMessage | None]] = dataclasses.field(
        default_factory=OrderedDict, compare=False
    )
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, compare=False)

    def stash(self, key: tuple[str, str], served: Served, original: BaseMessage | None) -> None:
        """Remember an interrupted run's served record until the thread is resumed."""
        with self.lock:
            self.pending[key] = (served, original)
            self.pending.move_to_end(key)
            while len(self.pending) > _MAX_PENDING:
                (thread, _), _ = self.pending.popitem(last=False)
                logger.debug("thread %s: forgot its interrupted run; a resume will recall again", thread)

    def unstash(self, key: tuple[str, str]) -> tuple[Served, BaseMessage | None] | None:
        """The served record of the run interrupted on this thread, if this wrapper remembers one."""
        with self.lock:
            return self.pending.pop(key, None)


def _thread_key(config: RunnableConfig | None) -> tuple[str, str] | None:
    configurable = (config or {}).get("configurable") or {}
    thread = configurable.get("thread_id")
    if thread is None:
        return None
    return str(thread), str(configurable.get("checkpoint_ns") or "")


def _is_messages(value: object) -> TypeGuard[list[BaseMessage]]:
    return isinstance(value, list) and all(isinstance(m, BaseMessage) for m in value)


# ---------------------------------------------------------------------------- one run
@dataclasses.dataclass
class _Run:
    """One wrapped run: what was served, what the graph gets, what it ended with."""

    wrapping: Wrapping
    served: Served | None
    input: Any
    original: BaseMessage | None = None
    key: tuple[str, str] | None = None
    last_values: Mapping[str, Any] | None = None
    interrupted: bool = False
    checkpointed: bool = False
    fresh: bool = False
    """The run's input starts a new task (else it continues an interrupted one)."""
    block: str | None = None
    """The block written into ``block_key`` for this run (``block_key`` schemas only)."""

    def observe(self, mode: str, data: Any) -> None:
        """Note the root graph's latest values and whether it stopped on an interrupt."""
        if mode == "values" and isinstance(data, Mapping):
            self.last_values = data
        elif mode == "updates" and isinstance(data, Mapping) and _INTERRUPT_KEY in data:
            self.interrupted = True

    def release(self) -> None:
        """Stop recognising this run's injected task message (or block)."""
        if self.block is not None:
            self.wrapping.scrubber.release_block(self.block)
        elif self.original is not None:
            self.wrapping.scrubber.release(self.original)

    def trajectory(self) -> Trajectory:
        assert self.served is not None
        w = self.wrapping
        state = w.scrubber.scrub_channels(self.last_values or {})
        decided = w.outcome(state) if w.outcome is not None else None
        value = state.get(w.input_key)
        if w.block_key is None and _is_messages(value):
            return trajectory_from_messages(
                value, run_id=self.served.run_id, namespace=self.served.namespace, outcome=decided
            )
        steps: list[Step] = []
        final = None
        if w.output_key is not None and state.get(w.output_key) not in (None, ""):
            final = str(state[w.output_key])
            steps.append(Step(type="final_answer", content=final))
        by_answer, why = answer_outcome(final)
        return Trajectory(
            run_id=self.served.run_id,
            task=self.served.task,
            steps=steps,
            outcome=decided or by_answer,
            final_answer=final,
            metadata={OUTCOME_REASON_KEY: why} if why and decided is None else {},
            namespace=self.served.namespace,
        )

    def ended(self) -> Served | None:
        """The served record to finish now, or ``None`` (stashed until the interrupt is resumed)."""
        if self.served is None:
            return None
        if self.interrupted and self.checkpointed and self.key is not None:
            self.wrapping.stash(self.key, self.served, self.original)
            return None
        return self.served


def _task_of(wrapping: Wrapping, input: Any) -> tuple[Any, BaseMessage] | None:
    """(input with message ids assigned, the task message) when ``input`` starts a new task."""
    if not isinstance(input, Mapping) or wrapping.input_key not in input:
        return None
    value = input[wrapping.input_key]
    if wrapping.block_key is not None:
        return (dict(input), HumanMessage(str(value))) if value not in (None, "") else None
    try:
        messages = convert_to_messages(value if isinstance(value, list) else [value])
    except (ValueError, NotImplementedError, TypeError):
        return None
    messages = [m if m.id else m.model_copy(update={"id": str(uuid.uuid4())}) for m in messages]
    found = find_task(messages)
    if found is None:
        return None
    return {**input, wrapping.input_key: messages}, found[1]


def _injected(wrapping: Wrapping, run: _Run, messages: list[BaseMessage]) -> list[BaseMessage]:
    assert run.served is not None
    return inject(messages, block=run.served.block, task_prompt=run.served.task_prompt, placement=wrapping.placement)


# ---------------------------------------------------------------------------- the graph
class HindsightGraph(CompiledStateGraph[Any, Any, Any, Any]):
    """A copy of a compiled graph that recalls before each task and reflects after it.

    Built by :func:`~langchain_hindsight.adapters.graph.with_hindsight`; every method
    other than ``stream``/``astream`` is LangGraph's own.
    """

    def __init__(self, *, hindsight: Wrapping, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hindsight = hindsight

    # ------------------------------------------------------------------ run setup
    def _open(self, input: Any, config: RunnableConfig | None, context: Any) -> _Run:
        w = self.hindsight
        run = self._start(input, config)
        if run.original is not None and run.served is None:  # a new task, or an interrupted one read back
            ns = w.namespace_of(config, context)
            run.served = w.loop.serve(message_text(run.original), namespace=ns, **_ids(config))
        elif run.served is None and self._resumes_unknown(input, config):
            run.original = self._interrupted_task(self.get_state(config or {}).values)
            if run.original is not None:
                ns = w.namespace_of(config, context)
                run.served = w.loop.serve(message_text(run.original), namespace=ns, **_ids(config))
        return self._place(run)

    async def _aopen(self, input: Any, config: RunnableConfig | None, context: Any) -> _Run:
        w = self.hindsight
        run = self._start(input, config)
        if run.original is not None and run.served is None:
            ns = w.namespace_of(config, context)
            run.served = await w.loop.aserve(message_text(run.original), namespace=ns, **_ids(config))
        elif run.served is None and self._resumes_unknown(input, config):
            run.original = self._interrupted_task((await self.aget_state(config or {})).values)
            if run.original is not None:
                ns = w.namespace_of(config, context)
                run.served = await w.loop.aserve(message_text(run.original), namespace=ns, **_ids(config))
        return self._place(run)

    def _start(self, input: Any, config: RunnableConfig | None) -> _Run:
        """A new task's run (not served yet), an interrupted run this wrapper remembers, or a plain run."""
        w = self.hindsight
        checkpointed = isinstance(self.checkpointer, BaseCheckpointSaver)
        key = _thread_key(config)
        task = _task_of(w, input)
        if task is not None:
            prepared, message = task
            if key is not None and w.unstash(key) is not None:
                logger.debug("thread %s: a new task replaces the interrupted one; it will not be finished", key[0])
            return _Run(w, None, prepared, original=message, key=key, checkpointed=checkpointed, fresh=True)
        configurable = (config or {}).get("configurable") or {}
        if input is None and configurable.get("checkpoint_id"):  # replaying history is not a continuation
            return _Run(w, None, input, key=key, checkpointed=checkpointed)
        pending = w.unstash(key) if key is not None and checkpointed else None
        if pending is None:
            return _Run(w, None, input, key=key, checkpointed=checkpointed)
        served, original = pending
        return _Run(w, served, input, original=original, key=key, checkpointed=checkpointed)

    def _resumes_unknown(self, input: Any, config: RunnableConfig | None) -> bool:
        """``Command(resume=...)`` on a thread whose interrupted run this wrapper did not start."""
        checkpointed = isinstance(self.checkpointer, BaseCheckpointSaver)
        return (
            isinstance(input, Command) and input.resume is not None and checkpointed and _thread_key(config) is not None
        )

    def _interrupted_task(self, values: Mapping[str, Any]) -> BaseMessage | None:
        """The task message of a checkpointed state (the last human message, or the task string)."""
        w = self.hindsight
        value = values.get(w.input_key)
        if value in (None, ""):
            return None
        if w.block_key is not None:
            return HumanMessage(str(value))
        if not _is_messages(value):
            return None
        found = find_task(value)
        return found[1] if found is not None else None

    def _place(self, run: _Run) -> _Run:
        """Put the served block into the run's input (registering the original task message)."""
        w = self.hindsight
        served, original = run.served, run.original
        if served is None or original is None or not served.block:
            return run
        if run.fresh:
            if w.block_key is not None:
                run.block = served.block
                w.scrubber.register_block(served.block)
                run.input = {**run.input, w.block_key: served.block}
            else:
                w.scrubber.register(original)
                run.input = {**run.input, w.input_key: _injected(w, run, run.input[w.input_key])}
            return run
        # a resumed run: the checkpoint holds the task without the block; put it back for the rest of the run
        command = Command() if run.input is None else run.input  # None continues a static breakpoint
        if not isinstance(command, Command) or command.update is not None or command.graph is not None:
            return run
        if w.block_key is not None:
            run.block = served.block
            w.scrubber.register_block(served.block)
            run.input = dataclasses.replace(command, update={w.block_key: served.block})
        elif w.placement == "task_message" and isinstance(original.content, str):  # replaced in place (same id)
            w.scrubber.register(original)
            run.input = dataclasses.replace(command, update={w.input_key: _injected(w, run, [original])})
        return run

    def _finish(self, run: _Run) -> None:
        served = run.ended()
        if served is not None:
            self.hindsight.loop.finish(served, run.trajectory())

    async def _afinish(self, run: _Run) -> None:
        served = run.ended()
        if served is not None:
            await self.hindsight.loop.afinish(served, run.trajectory())

    def _scrubbed_config(self, config: RunnableConfig | None) -> RunnableConfig | None:
        """``config`` whose lent checkpointer (this graph running as a parent's node) is scrubbed too."""
        configurable = (config or {}).get("configurable") or {}
        lent = configurable.get(_LENT_SAVER_KEY)
        if config is None or not isinstance(lent, BaseCheckpointSaver):
            return config
        if isinstance(lent, ScrubbingSaver) and lent.scrubber is self.hindsight.scrubber:
            return config
        scrubbed = ScrubbingSaver(lent, self.hindsight.scrubber)
        return {**config, "configurable": {**configurable, _LENT_SAVER_KEY: scrubbed}}

    def _modes(self, stream_mode: Any, config: RunnableConfig | None) -> tuple[list[str], bool]:
        if stream_mode is None:
            configurable = (config or {}).get("configurable") or {}
            stream_mode = "values" if _TASK_ID_KEY in configurable else self.stream_mode
        if isinstance(stream_mode, str):
            return [stream_mode], True
        return list(stream_mode), False

    # ------------------------------------------------------------------ streams
    def stream(  # type: ignore[override]
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: Any = None,
        subgraphs: bool = False,
        version: Literal["v1", "v2"] = "v1",
        **kwargs: Any,
    ) -> Iterator[Any]:
        """LangGraph's ``stream`` with the block served into this run's input and reflection after it."""
        requested, single = self._modes(stream_mode, config)
        config = self._scrubbed_config(config)
        run = self._open(input, config, kwargs.get("context"))
        shape = _Shape(requested, single, subgraphs, version)
        try:
            for chunk in super().stream(run.input, config, **shape.options(kwargs)):
                out = shape.take(chunk, run, self.hindsight.scrubber)
                if out is not _SKIP:
                    yield out
        finally:
            run.release()
        self._finish(run)

    async def astream(  # type: ignore[override]
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: Any = None,
        subgraphs: bool = False,
        version: Literal["v1", "v2"] = "v1",
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """Async :meth:`stream`."""
        requested, single = self._modes(stream_mode, config)
        config = self._scrubbed_config(config)
        run = await self._aopen(input, config, kwargs.get("context"))
        shape = _Shape(requested, single, subgraphs, version)
        try:
            async for chunk in super().astream(run.input, config, **shape.options(kwargs)):
                out = shape.take(chunk, run, self.hindsight.scrubber)
                if out is not _SKIP:
                    yield out
        finally:
            run.release()
        await self._afinish(run)


_SKIP = object()


class _Shape:
    """Adds the ``updates``/``values`` modes the wrapper needs and gives the caller exactly what it asked for."""

    def __init__(self, requested: list[str], single: bool, subgraphs: bool, version: str) -> None:
        self.extra = [m for m in ("updates", "values") if m not in requested]
        self.modes = requested + self.extra
        self.single = single
        self.subgraphs = subgraphs
        self.v2 = version == "v2"

        self.version = version

    def options(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Keyword arguments for LangGraph's own ``stream``."""
        return {**kwargs, "stream_mode": self.modes, "subgraphs": self.subgraphs, "version": self.version}

    def take(self, chunk: Any, run: _Run, scrubber: Scrubber) -> Any:
        """The chunk the caller asked for (scrubbed), or ``_SKIP`` for a mode only the wrapper wanted."""
        if self.v2:
            mode, ns, data = chunk["type"], tuple(chunk.get("ns") or ()), chunk["data"]
        elif self.subgraphs:
            ns, mode, data = chunk
        else:
            ns, (mode, data) = (), chunk
        if ns == ():
            run.observe(mode, data)
        if mode in self.extra:
            return _SKIP
        if mode != "custom":
            data = scrubber.scrub(data)
        if self.v2:
            return {**chunk, "data": data} if data is not chunk["data"] else chunk
        if self.single:
            return (ns, data) if self.subgraphs else data
        return (ns, mode, data) if self.subgraphs else (mode, data)


def _ids(config: RunnableConfig | None) -> dict[str, str | None]:
    """The run id and thread id a run is served under (the thread lets the session see corrections)."""
    key = _thread_key(config)
    return {"run_id": _run_id(config), "thread_id": key[0] if key is not None else None}


def _run_id(config: RunnableConfig | None) -> str | None:
    value = (config or {}).get("run_id")
    return str(value) if value else None


def wrap_graph(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    loop: HindsightSession,
    *,
    namespace_of: Callable[[Mapping[str, Any] | None, Any], str | None],
    input_key: str = "messages",
    block_key: str | None = None,
    output_key: str | None = None,
    outcome: OutcomeFn | None = None,
    placement: Placement = "task_message",
) -> HindsightGraph:
    """A :class:`HindsightGraph` over ``graph`` whose checkpointer (when it is a saver) is scrubbed.

    Args:
        graph: The caller's compiled graph (left unchanged).
        loop: The session that serves and finishes each task.
        namespace_of: ``(config, runtime context) -> namespace``.
        input_key: Where the task is (messages or a string).
        block_key: Write the block into this state key instead of injecting it.
        output_key: Where the answer is, for string-based states.
        outcome: Decides the outcome from the final state.
        placement: Where the block goes in a message state.
    """
    scrubber = Scrubber(block_key=block_key)
    wrapping = Wrapping(
        loop=loop,
        scrubber=scrubber,
        input_key=input_key,
        block_key=block_key,
        output_key=output_key,
        outcome=outcome,
        placement=placement,
        namespace_of=namespace_of,
    )
    attrs = {k: v for k, v in graph.__dict__.items() if k != "__orig_class__"}
    if isinstance(graph.checkpointer, BaseCheckpointSaver):
        attrs["checkpointer"] = ScrubbingSaver(graph.checkpointer, scrubber)
    cls: type[HindsightGraph] = HindsightGraph
    if type(graph) is not CompiledStateGraph:
        cls = type(f"Hindsight{type(graph).__name__}", (HindsightGraph, type(graph)), {})
    return cls(hindsight=wrapping, **attrs)
