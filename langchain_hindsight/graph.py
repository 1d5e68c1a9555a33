"""LangGraph adapters: ``with_hindsight`` wraps a compiled graph; ``recall_node``/``reflect_node`` are nodes.

``with_hindsight(graph, store)`` returns a copy of your compiled graph (see
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
from typing import TYPE_CHECKING, Any, TypeGuard

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from langchain_hindsight._adapters import (
    Placement,
    check_placement,
    find_task,
    message_text,
    resolve_namespace,
    trajectory_from_messages,
)
from langchain_hindsight._loop import ErrorPolicy, HindsightLoop, Served, new_run_id
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.prompts import Locale
from langchain_hindsight.types import Outcome, Step, Trajectory

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from langchain_hindsight.journal import RunJournal
    from langchain_hindsight.reflection import BackgroundReflector, Reflector
    from langchain_hindsight.retriever import HindsightRetriever
    from langchain_hindsight.store import MemoryStore

__all__ = ["recall_node", "reflect_node", "with_hindsight"]

StateNode = Callable[[dict[str, Any], RunnableConfig], dict[str, Any]]
"""A LangGraph node: ``(state, config) -> update``."""

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
        "memory_ids": served.memory_ids,
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
    return Trajectory(
        run_id=served.run_id,
        task=served.task,
        steps=steps,
        outcome=decided or ("success" if final else "unknown"),
        final_answer=final,
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
def recall_node(
    store: MemoryStore,
    *,
    retriever: HindsightRetriever | None = None,
    journal: RunJournal | None = None,
    k: int = 5,
    task_type: str | None = None,
    namespace: str | None = None,
    namespace_key: str | None = "user_id",
    input_key: str = "messages",
    block_key: str = "experience",
    served_key: str | None = "hindsight_served",
    locale: Locale = "zh",
    max_lines: int = 8,
    on_error: ErrorPolicy = "log",
) -> StateNode:
    """A node that recalls experience for the task in ``state[input_key]``.

    It returns ``{block_key: "[相关经验] 1. ..."}`` (``""`` when nothing is
    relevant) for your prompt to use, and ``{served_key: {...}}`` (run id,
    namespace, served memory ids) for :func:`reflect_node`. Keys missing from
    your state schema are ignored by LangGraph, so add ``experience: str`` and
    ``hindsight_served: dict`` to the state you want them in.

    Example:
        .. code-block:: python

            builder.add_node("recall", recall_node(store, input_key="question"))
            builder.add_edge(START, "recall")

    Args:
        store: The memory store.
        retriever: Custom recall component.
        journal: Optional ``RunJournal``.
        k: Experiences recalled.
        task_type: Task type to prefer.
        namespace: Fixed namespace or template (``"user-{user_id}"``).
        namespace_key: ``config["configurable"]`` key naming the namespace.
        input_key: Where the task is: a string, or a list of messages (the last
            human message is the task).
        block_key: Where the block is written.
        served_key: Where the served record is written; ``None`` writes none.
        locale: ``"zh"`` or ``"en"``.
        max_lines: At most this many block lines.
        on_error: ``"log"`` (recall failure → empty block) or ``"raise"``.
    """
    loop = HindsightLoop(
        store,
        retriever=retriever,
        journal=journal,
        k=k,
        task_type=task_type,
        locale=locale,
        max_lines=max_lines,
        reflect=False,
        on_error=on_error,
    )

    def hindsight_recall(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        task = _task_text(state, input_key)
        ns = resolve_namespace(config, explicit=namespace, key=namespace_key)
        served = loop.serve(task, namespace=ns, run_id=_run_id(config))
        update: dict[str, Any] = {block_key: served.block}
        if served_key is not None:
            update[served_key] = _served_record(served)
        return update

    return hindsight_recall


def reflect_node(
    store: MemoryStore,
    *,
    reflector: Reflector | BackgroundReflector | None = None,
    journal: RunJournal | None = None,
    task_type: str | None = None,
    namespace: str | None = None,
    namespace_key: str | None = "user_id",
    input_key: str = "messages",
    output_key: str | None = None,
    served_key: str | None = "hindsight_served",
    outcome: OutcomeFn | None = None,
    apply_outcome: bool = True,
    locale: Locale = "zh",
    on_error: ErrorPolicy = "log",
) -> StateNode:
    """A node that learns from the finished task and credits the memories it was served.

    The trajectory is rebuilt from ``state[input_key]`` when it holds messages
    (tool calls, tool errors, the answer); otherwise from the task string and
    ``state[output_key]``. The outcome is ``outcome(state)`` when given, else
    inferred (an answer → success, ending on an error → failure). The node
    returns ``{}``: it never changes the state, and with ``on_error="log"`` a
    failed reflection never breaks the graph.

    Example:
        .. code-block:: python

            builder.add_node("reflect", reflect_node(store, input_key="question", output_key="answer"))
            builder.add_edge("answer", "reflect")

    Args:
        store: The memory store.
        reflector: ``Reflector`` or ``BackgroundReflector``; default rule-based.
        journal: Optional ``RunJournal``.
        task_type: Task type label for reflections.
        namespace: Fixed namespace or template; default from the served record or config.
        namespace_key: ``config["configurable"]`` key naming the namespace.
        input_key: Where the task (string or messages) is.
        output_key: Where the answer is, for string-based states.
        served_key: Where :func:`recall_node` wrote its served record.
        outcome: Decides the outcome from the final state.
        apply_outcome: Credit/penalise the served memories (seed §4.5).
        locale: ``"zh"`` or ``"en"``.
        on_error: ``"log"`` or ``"raise"``.
    """
    loop = HindsightLoop(
        store,
        reflector=reflector,
        journal=journal,
        task_type=task_type,
        locale=locale,
        recall=False,
        apply_outcome=apply_outcome,
        on_error=on_error,
    )

    def hindsight_reflect(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        record = state.get(served_key) if served_key is not None else None
        if isinstance(record, Mapping) and record:
            served, ids = _served_from_record(record)
        else:
            served, ids = Served(run_id=_run_id(config) or new_run_id(), task="", namespace=""), []
        if not served.namespace:
            served.namespace = loop.namespace(resolve_namespace(config, explicit=namespace, key=namespace_key))
        if not served.task:
            served.task = _task_text(state, input_key)
        if ids:
            served.memories = _placeholders(store, ids, served.namespace)
        trajectory = _final_trajectory(
            state, input_key=input_key, output_key=output_key, served=served, outcome=outcome
        )
        loop.finish(served, trajectory)
        return {}

    return hindsight_reflect


def _placeholders(store: MemoryStore, ids: list[str], namespace: str) -> list[Any]:
    """The served memories as ``ScoredMemory`` values (score unknown here: 0) so the loop can credit them."""
    from langchain_hindsight.types import ScoredMemory

    return [ScoredMemory(memory=u, score=0.0, similarity=0.0) for u in store.get_many(ids, namespace=namespace)]


# ---------------------------------------------------------------------------- wrapper
def with_hindsight(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    store: MemoryStore,
    *,
    retriever: HindsightRetriever | None = None,
    reflector: Reflector | BackgroundReflector | None = None,
    journal: RunJournal | None = None,
    k: int = 5,
    task_type: str | None = None,
    namespace: str | None = None,
    namespace_key: str | None = "user_id",
    input_key: str = "messages",
    block_key: str | None = None,
    output_key: str | None = None,
    outcome: OutcomeFn | None = None,
    placement: Placement = "task_message",
    locale: Locale = "zh",
    max_lines: int = 8,
    recall: bool = True,
    reflect: bool = True,
    apply_outcome: bool = True,
    on_error: ErrorPolicy = "log",
    name: str | None = None,
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
      :class:`~langchain_hindsight.middleware.HindsightMiddleware`), so every
      model call of the run sees it. The message is put back as it was in
      every checkpoint written to your checkpointer and in what the graph
      returns and streams: the block is never persisted.
    * Other schemas: give ``block_key``; the block is written there in the
      run's input, and emptied in checkpoints and outputs the same way.
    * When the run ends, the outcome is applied to the served memories, the
      journal records the run and reflection learns from the final state. A
      run that stops on an interrupt is finished when it is resumed.

    Example:
        .. code-block:: python

            from langchain_hindsight import MemoryStore, with_hindsight

            app = with_hindsight(my_graph, MemoryStore("./memory_db"))
            app.invoke({"messages": [("user", "清洗 data.csv")]},
                       config={"configurable": {"user_id": "alice", "thread_id": "1"}})

    Args:
        graph: A compiled ``StateGraph`` (``builder.compile()`` or ``create_agent(...)``).
        store: The memory store.
        retriever: Custom recall component.
        reflector: ``Reflector`` or ``BackgroundReflector``; default rule-based.
        journal: Optional ``RunJournal``.
        k: Experiences recalled per task.
        task_type: Task type to prefer in recall and label reflections.
        namespace: Fixed namespace or template filled from ``config["configurable"]``.
        namespace_key: ``config["configurable"]`` key naming the namespace (else the
            same attribute or key of the run's ``context=``).
        input_key: Where the task is (messages or a string).
        block_key: Write the block into this state key instead of injecting it.
        output_key: Where the answer is, for string-based states.
        outcome: Decides the outcome from the final state (default: inferred).
        placement: ``"task_message"`` or ``"separate_message"`` (message graphs).
        locale: ``"zh"`` or ``"en"``.
        max_lines: At most this many block lines.
        recall: ``False`` learns without injecting.
        reflect: ``False`` never reflects.
        apply_outcome: Credit/penalise the served memories after each run.
        on_error: ``"log"`` (default; recall/reflection failures never break the graph) or ``"raise"``.
        name: Name of the returned graph (default: ``graph``'s name).

    Raises:
        ConfigurationError: ``graph`` is not a compiled ``StateGraph``.
    """
    from langgraph.graph.state import CompiledStateGraph

    from langchain_hindsight._wrapper import wrap_graph

    if not isinstance(graph, CompiledStateGraph):
        raise ConfigurationError("with_hindsight needs a compiled StateGraph (builder.compile() or create_agent(...))")
    check_placement(placement)
    loop = HindsightLoop(
        store,
        retriever=retriever,
        reflector=reflector,
        journal=journal,
        k=k,
        task_type=task_type,
        locale=locale,
        max_lines=max_lines,
        recall=recall,
        reflect=reflect,
        apply_outcome=apply_outcome,
        on_error=on_error,
    )

    def namespace_of(config: Mapping[str, Any] | None, context: Any) -> str | None:
        return resolve_namespace(config, explicit=namespace, key=namespace_key, context=context)

    wrapped = wrap_graph(
        graph,
        loop,
        resolve_namespace=namespace_of,
        input_key=input_key,
        block_key=block_key,
        output_key=output_key,
        outcome=outcome,
        placement=placement,
    )
    return wrapped.copy(update={"name": name}) if name is not None else wrapped
