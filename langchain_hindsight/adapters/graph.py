"""LangGraph adapters: ``with_hindsight`` wraps a compiled graph; ``recall_node``/``reflect_node`` are nodes.

``with_hindsight(graph, hs)`` (what ``hs.wrap(graph)`` calls) returns a copy of your compiled graph (see
``_wrapper.HindsightGraph``) that recalls before each task and reflects after
it, with LangGraph's semantics unchanged: reducers, streams, interrupts and
the state API are LangGraph's own. The ``[相关经验]`` block is injected into
the task message of the run's input (or a state key you name) and kept out of
every checkpoint and output. The namespace comes from
``config["configurable"]`` (e.g. ``user_id``).

``recall_node`` and ``reflect_node`` are plain callables for your own
``StateGraph``: the first writes the block (and what it served) into state
keys, the second reflects on the run and credits the served memories.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeGuard, Unpack

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.graph.state import CompiledStateGraph

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight.adapters._wrapper import wrap_graph
from langchain_hindsight.capture import OUTCOME_REASON_KEY, answer_outcome, message_text
from langchain_hindsight.capture.messages import (
    Placement,
    check_placement,
    find_task,
    recall_query,
    trajectory_from_messages,
)
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.session.config import AdapterOptions, new_run_id
from langchain_hindsight.session.source import SessionSource, session_for
from langchain_hindsight.types import Outcome, Served, Step, Trajectory

__all__ = ["recall_node", "reflect_node", "with_hindsight"]

StateNode = Runnable[dict[str, Any], dict[str, Any]]
"""A LangGraph node: a runnable from state to a state update (sync ``invoke`` and async ``ainvoke``)."""

OutcomeFn = Callable[[Mapping[str, Any]], Outcome]
"""Decides a run's outcome from the final state (``"success"``, ``"failure"`` or ``"unknown"``)."""


# ---------------------------------------------------------------------------- pure helpers
def _is_messages(value: object) -> TypeGuard[list[BaseMessage]]:
    return isinstance(value, list) and all(isinstance(m, BaseMessage) for m in value)


def _task_text(state: Mapping[str, Any], input_key: str) -> str:
    if input_key not in state:
        raise ConfigurationError(f"the state has no key {input_key!r} to read the task from (input_key)")
    value = state[input_key]
    if _is_messages(value):
        found = find_task(value)
        return message_text(found[1]) if found else ""
    return value if isinstance(value, str) else str(value)


def _served_record(served: Served) -> dict[str, Any]:
    return {
        "run_id": served.run_id,
        "namespace": served.namespace,
        "task": served.task,
        "memory_ids": list(served.memory_ids),
    }


def _served_from_record(record: Mapping[str, Any]) -> tuple[Served, list[str]]:
    served = Served(
        run_id=str(record.get("run_id") or new_run_id()),
        task=str(record.get("task") or ""),
        namespace=str(record.get("namespace") or ""),
    )
    return served, [str(i) for i in record.get("memory_ids") or []]


def _final_trajectory(
    state: Mapping[str, Any],
    *,
    input_key: str,
    output_key: str | None,
    served: Served,
    outcome: OutcomeFn | None,
) -> Trajectory:
    value = state.get(input_key)
    decided = outcome(state) if outcome is not None else None
    if _is_messages(value):
        return trajectory_from_messages(value, run_id=served.run_id, namespace=served.namespace, outcome=decided)
    steps: list[Step] = []
    final = None
    if output_key is not None and state.get(output_key) not in (None, ""):
        final = str(state[output_key])
        steps.append(Step(type="final_answer", content=final))
    by_answer, why = answer_outcome(final)
    return Trajectory(
        run_id=served.run_id,
        task=served.task,
        steps=steps,
        outcome=decided or by_answer,
        final_answer=final,
        metadata={OUTCOME_REASON_KEY: why} if why and decided is None else {},
        namespace=served.namespace,
    )


def _run_id(config: RunnableConfig | None) -> str | None:
    from langgraph.config import get_config

    try:
        current = get_config()
    except RuntimeError:
        current = config or {}
    runtime = (current.get("configurable") or {}).get("__pregel_runtime")
    info = getattr(runtime, "execution_info", None)
    value = getattr(info, "run_id", None)
    return str(value) if value else None


# ---------------------------------------------------------------------------- nodes
def _thread_id(config: RunnableConfig | None) -> str | None:
    value = ((config or {}).get("configurable") or {}).get("thread_id")
    return str(value) if value not in (None, "") else None


@refuse_unknown_keywords
def recall_node(
    hindsight: SessionSource,
    *,
    namespace: str | None = None,
    input_key: str = "messages",
    block_key: str = "experience",
    served_key: str | None = "hindsight_served",
    name: str = "hindsight_recall",
    **options: Unpack[AdapterOptions],
) -> StateNode:
    """A node that recalls experience for the task in ``state[input_key]`` (sync and async).

    It returns ``{block_key: "[相关经验] 1. ..."}`` (``""`` when nothing is
    relevant) for your prompt to use, and ``{served_key: {...}}`` (run id,
    namespace, served memory ids) for :func:`reflect_node`. Keys missing from
    your state schema are ignored by LangGraph, so add ``experience: str`` and
    ``hindsight_served: dict`` to the state you want them in. The run is
    journaled; in a thread (``config["configurable"]["thread_id"]``) a turn that
    corrects the previous answer is feedback on the previous run.

    Example:
        .. code-block:: python

            hs = Hindsight(persist_directory="./memory_db")
            builder.add_node("recall", recall_node(hs, input_key="question"))
            builder.add_edge(START, "recall")

    Args:
        hindsight: A :class:`~langchain_hindsight.Hindsight`, its ``session``, or a bare store.
        namespace: Fixed namespace or template (``"user-{user_id}"``); default from
            ``config["configurable"][namespace_key]``.
        input_key: Where the task is: a string, or a list of messages (the last
            human message is the task; recall searches with the last two human turns,
            :func:`~langchain_hindsight.capture.messages.recall_query`).
        block_key: Where the block is written.
        served_key: Where the served record is written; ``None`` writes none.
        name: The node's runnable name.
        **options: :class:`~langchain_hindsight.session.config.SessionConfig` options changed for this node.
    """
    session = session_for(hindsight, **options)

    def prepare(state: dict[str, Any], config: RunnableConfig) -> tuple[str, str, str | None, str | None, str | None]:
        task = _task_text(state, input_key)
        value = state[input_key]
        query = recall_query(value) if _is_messages(value) else None
        return task, session.namespace_for_run(config, explicit=namespace), _run_id(config), _thread_id(config), query

    def update(served: Served) -> dict[str, Any]:
        out: dict[str, Any] = {block_key: served.block}
        if served_key is not None:
            out[served_key] = _served_record(served)
        return out

    def hindsight_recall(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        task, ns, run_id, thread_id, query = prepare(state, config)
        return update(session.serve(task, namespace=ns, run_id=run_id, thread_id=thread_id, query=query))

    async def ahindsight_recall(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        task, ns, run_id, thread_id, query = prepare(state, config)
        return update(await session.aserve(task, namespace=ns, run_id=run_id, thread_id=thread_id, query=query))

    return RunnableLambda(hindsight_recall, afunc=ahindsight_recall, name=name)


@refuse_unknown_keywords
def reflect_node(
    hindsight: SessionSource,
    *,
    namespace: str | None = None,
    input_key: str = "messages",
    output_key: str | None = None,
    served_key: str | None = "hindsight_served",
    outcome: OutcomeFn | None = None,
    name: str = "hindsight_reflect",
    **options: Unpack[AdapterOptions],
) -> StateNode:
    """A node that learns from the finished task and credits the memories it was served (sync and async).

    The trajectory is rebuilt from ``state[input_key]`` when it holds messages
    (tool calls, tool errors, the answer); otherwise from the task string and
    ``state[output_key]``. The outcome is ``outcome(state)`` when given, else
    inferred (an answer → success, ending on an error → failure). The memories
    credited are those the journal recorded as served to the run. The node
    returns ``{}``: it never changes the state, and with ``on_error="log"`` a
    failed reflection never breaks the graph.

    Example:
        .. code-block:: python

            builder.add_node("reflect", reflect_node(hs, input_key="question", output_key="answer"))
            builder.add_edge("answer", "reflect")

    Args:
        hindsight: A :class:`~langchain_hindsight.Hindsight`, its ``session``, or a bare store.
        namespace: Fixed namespace or template; default from the served record or config.
        input_key: Where the task (string or messages) is.
        output_key: Where the answer is, for string-based states.
        served_key: Where :func:`recall_node` wrote its served record.
        outcome: Decides the outcome from the final state.
        name: The node's runnable name.
        **options: :class:`~langchain_hindsight.session.config.SessionConfig` options changed for this node.
    """
    session = session_for(hindsight, **options)

    def prepare(state: dict[str, Any], config: RunnableConfig) -> tuple[Served, Trajectory]:
        record = state.get(served_key) if served_key is not None else None
        if isinstance(record, Mapping) and record:
            served, _ = _served_from_record(record)
        else:
            served = Served(run_id=_run_id(config) or new_run_id(), task="", namespace="")
        served.thread_id = _thread_id(config)
        if not served.namespace:
            served.namespace = session.namespace_for_run(config, explicit=namespace)
        if not served.task:
            served.task = _task_text(state, input_key)
        trajectory = _final_trajectory(
            state, input_key=input_key, output_key=output_key, served=served, outcome=outcome
        )
        return served, trajectory

    def hindsight_reflect(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        session.finish(*prepare(state, config))
        return {}

    async def ahindsight_reflect(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        await session.afinish(*prepare(state, config))
        return {}

    return RunnableLambda(hindsight_reflect, afunc=ahindsight_reflect, name=name)


# ---------------------------------------------------------------------------- wrapper
@refuse_unknown_keywords
def with_hindsight(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    hindsight: SessionSource,
    *,
    namespace: str | None = None,
    input_key: str = "messages",
    block_key: str | None = None,
    output_key: str | None = None,
    outcome: OutcomeFn | None = None,
    placement: Placement = "task_message",
    name: str | None = None,
    **options: Unpack[AdapterOptions],
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Your compiled graph, recalling experience before each task and learning after it.

    The result is a copy of ``graph`` (same nodes, reducers, checkpointer,
    store), so it keeps LangGraph's semantics: reducers apply once per step,
    ``stream`` yields your graph's own chunks and node names (token streaming
    included), an ``interrupt()`` is resumed with ``Command(resume=...)``, and
    ``get_state``/``update_state``/``get_state_history`` read and write your
    checkpointer. What it adds, per run whose input carries a new task:

    * Message state (``state[input_key]`` holds messages, no ``block_key``):
      the ``[相关经验]`` block is injected into the task's human message in the
      run's input (``placement`` as in
      :class:`~langchain_hindsight.adapters.middleware.HindsightMiddleware`), so every
      model call of the run sees it. The message is put back as it was in
      every checkpoint written to your checkpointer and in what the graph
      returns and streams: the block is never persisted.
    * Other schemas: give ``block_key``; the block is written there in the
      run's input, and emptied in checkpoints and outputs the same way.
    * When the run ends, the session applies the outcome to the served
      memories, journals the run and reflects on the final state. A run that
      stops on an interrupt is finished when it is resumed.

    Example:
        .. code-block:: python

            hs = Hindsight(persist_directory="./memory_db")
            app = hs.wrap(my_graph)            # with_hindsight(my_graph, hs)
            app.invoke({"messages": [("user", "清洗 data.csv")]},
                       config={"configurable": {"user_id": "alice", "thread_id": "1"}})

    Args:
        graph: A compiled ``StateGraph`` (``builder.compile()`` or ``create_agent(...)``).
        hindsight: A :class:`~langchain_hindsight.Hindsight`, its ``session``, or a bare store.
        namespace: Fixed namespace or template filled from ``config["configurable"]``;
            default from ``config["configurable"][namespace_key]`` or the run's ``context=``.
        input_key: Where the task is (messages or a string).
        block_key: Write the block into this state key instead of injecting it.
        output_key: Where the answer is, for string-based states.
        outcome: Decides the outcome from the final state (default: inferred).
        placement: ``"task_message"`` or ``"separate_message"`` (message graphs).
        name: Name of the returned graph (default: ``graph``'s name).
        **options: :class:`~langchain_hindsight.session.config.SessionConfig` options changed for this graph.

    Raises:
        ConfigurationError: ``graph`` is not a compiled ``StateGraph``, or an unknown option.
    """
    if not isinstance(graph, CompiledStateGraph):
        raise ConfigurationError("with_hindsight needs a compiled StateGraph (builder.compile() or create_agent(...))")
    check_placement(placement)
    session = session_for(hindsight, **options)

    def namespace_of(config: Mapping[str, Any] | None, context: Any) -> str | None:
        return session.namespace_for_run(config, explicit=namespace, context=context)

    wrapped = wrap_graph(
        graph,
        session,
        namespace_of=namespace_of,
        input_key=input_key,
        block_key=block_key,
        output_key=output_key,
        outcome=outcome,
        placement=placement,
    )
    return wrapped.copy(update={"name": name}) if name is not None else wrapped
