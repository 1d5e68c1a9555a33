"""``with_hindsight`` keeps LangGraph's semantics: one test per guarantee in docs/adapters.md.

The graph under test has an ``operator.add`` counter, a ToolNode loop, an
``interrupt()`` and a model that streams its answer token by token; each
guarantee is checked against the same graph run without the wrapper.
"""

from __future__ import annotations

import asyncio
import json
import operator
import uuid
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

from langchain_hindsight import MemoryStore, MemoryUnit, RunJournal, with_hindsight
from tests import fakes
from tests.fakes import ReactiveToolModel, call

BLOCK = "[相关经验]"
BLOCK_EN = "[Relevant experience]"
LESSON = "查询城市天气时先调用 lookup 工具，城市名写中文（例如 北京），不要直接凭记忆回答"
TASKS = ["查询北京今天的天气", "查询上海今天的天气", "查询广州今天的天气"]
APPROVAL = "需要审批："


class State(MessagesState):
    n: Annotated[int, operator.add]
    approved: str


class TokenModel(ReactiveToolModel):
    """Streams a final answer word by word (one chunk per word); tool calls as one chunk."""

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        message = self._next_message(messages)
        if message.tool_calls or not isinstance(message.content, str):
            calls = [
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i, "type": "tool_call_chunk"}
                for i, c in enumerate(message.tool_calls)
            ]
            chunks = [AIMessageChunk(content=message.content, id=message.id, tool_call_chunks=calls)]
        else:
            words = message.content.split(" ")
            chunks = [
                AIMessageChunk(content=w + (" " if i < len(words) - 1 else ""), id=message.id)
                for i, w in enumerate(words)
            ]
        for chunk in chunks:
            generation = ChatGenerationChunk(message=chunk)
            if run_manager:
                run_manager.on_llm_new_token(generation.text, chunk=generation)
            yield generation


class Prompts(fakes.Prompts):
    """Every prompt the chat model was sent, and how many experience blocks each held."""

    def blocks(self) -> list[int]:
        return [sum(str(m.content).count(BLOCK) + str(m.content).count(BLOCK_EN) for m in p) for p in self.seen]


@tool
def lookup(city: str) -> str:
    """Today's weather in a city."""
    return f"{city}: 晴 25 度"


def _respond(messages: list[BaseMessage]) -> Any:
    last = messages[-1]
    if last.type == "tool":
        return f"今天 {last.content} 祝 出行 愉快"
    return call("lookup", city="北京")


def _graph(checkpointer: Any = None, respond: Any = _respond) -> Any:
    """count (+1 per turn) → review (interrupts when the task asks for approval) → agent ⇄ tools."""
    model = TokenModel(respond=respond)

    def count(state: State) -> dict[str, Any]:
        return {"n": 1}

    def review(state: State) -> dict[str, Any]:
        task = next(m for m in reversed(state["messages"]) if m.type == "human")
        if APPROVAL in str(task.content):
            return {"approved": str(interrupt("批准这次查询吗？"))}
        return {}

    def agent(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(State)
    builder.add_node("count", count)
    builder.add_node("review", review)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "count")
    builder.add_edge("count", "review")
    builder.add_edge("review", "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver() if checkpointer is None else checkpointer)


def _saved(saver: InMemorySaver) -> str:
    """Everything the saver holds: checkpoints, metadata and pending writes of every thread."""
    return "\n".join(repr((c.checkpoint, c.metadata, c.pending_writes)) for c in saver.list(None))


def _config(thread: str, *handlers: BaseCallbackHandler, **extra: Any) -> Any:
    return {"configurable": {"thread_id": thread, **extra}, "callbacks": list(handlers)}


@pytest.fixture
def lesson(store: MemoryStore) -> MemoryUnit:
    return store.add(MemoryUnit(task_type="api_call", content=LESSON, tags=["weather"]))


def _turn(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def _shape(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.type, str(m.content)) for m in messages]


# ---------------------------------------------------------------------------- reducers
def test_reducers_apply_once_per_step(store: MemoryStore, lesson: MemoryUnit) -> None:
    plain, wrapped = _graph(), with_hindsight(_graph(), store)
    prompts = Prompts()
    counts, plain_counts = [], []
    for task in TASKS:
        out = wrapped.invoke(_turn(task), _config("t", prompts))
        ref = plain.invoke(_turn(task), _config("t"))
        counts.append(out["n"])
        plain_counts.append(ref["n"])
        assert _shape(out["messages"]) == _shape(ref["messages"])  # the ToolNode loop, once, task as sent
    assert counts == plain_counts == [1, 2, 3]
    assert len(out["messages"]) == 12  # 3 turns × (task, tool call, tool result, answer)
    assert prompts.blocks() == [1, 1] * 3  # every model call of every turn saw the block once


# ---------------------------------------------------------------------------- streams
def _messages_chunks(app: Any, config: Any) -> list[tuple[str, str]]:
    return [
        (meta["langgraph_node"], str(chunk.content))
        for chunk, meta in app.stream(_turn(TASKS[0]), config, stream_mode="messages")
    ]


def test_token_stream_is_the_wrapped_graphs(store: MemoryStore, lesson: MemoryUnit) -> None:
    plain, wrapped = _graph(), with_hindsight(_graph(), store)
    ref = _messages_chunks(plain, _config("m"))
    got = _messages_chunks(wrapped, _config("m"))
    assert len(ref) > 5  # the answer really is streamed token by token
    assert got == ref  # same chunks, same inner node names, no extra flag
    assert not any(BLOCK in text for _, text in got)


def test_update_and_value_streams_are_the_wrapped_graphs(store: MemoryStore, lesson: MemoryUnit) -> None:
    plain, wrapped = _graph(), with_hindsight(_graph(), store)
    modes = ["updates", "values", "checkpoints", "tasks", "debug"]
    ref = list(plain.stream(_turn(TASKS[0]), _config("u"), stream_mode=modes))
    got = list(wrapped.stream(_turn(TASKS[0]), _config("u"), stream_mode=modes))
    assert [m for m, _ in got] == [m for m, _ in ref]
    updates = [next(iter(d)) for m, d in got if m == "updates"]
    assert updates == ["count", "review", "agent", "tools", "agent"]
    assert BLOCK not in repr(got)  # not in values, checkpoints, tasks or debug events either
    assert [d["n"] for m, d in got if m == "values"] == [d["n"] for m, d in ref if m == "values"]
    # a single mode keeps LangGraph's single-mode shape
    single = list(with_hindsight(_graph(), store).stream(_turn(TASKS[0]), _config("s"), stream_mode="updates"))
    assert [next(iter(d)) for d in single] == updates


def test_subgraph_and_v2_stream_shapes_pass_through(store: MemoryStore, lesson: MemoryUnit) -> None:
    plain, wrapped = _graph(), with_hindsight(_graph(), store)
    for kwargs in ({"subgraphs": True}, {"version": "v2"}, {"subgraphs": True, "version": "v2"}):
        ref = list(plain.stream(_turn(TASKS[0]), _config(f"p{kwargs}"), stream_mode="updates", **kwargs))
        got = list(wrapped.stream(_turn(TASKS[0]), _config(f"w{kwargs}"), stream_mode="updates", **kwargs))
        assert len(got) == len(ref), kwargs
        assert [type(c) for c in got] == [type(c) for c in ref], kwargs
        assert BLOCK not in repr(got)


def test_invoke_output_shapes_pass_through(store: MemoryStore, lesson: MemoryUnit) -> None:
    plain, wrapped = _graph(), with_hindsight(_graph(), store)
    for app in (plain, wrapped):
        first = app.invoke(_turn(APPROVAL + TASKS[0]), _config("o"), version="v2")
        assert first.value["n"] == 1
        assert [i.value for i in first.interrupts] == ["批准这次查询吗？"]
        done = app.invoke(Command(resume="ok"), _config("o"), version="v2")
        assert done.value["approved"] == "ok"
        assert done.interrupts == ()
        updates = app.invoke(_turn(TASKS[1]), _config("o"), stream_mode="updates")
        assert [next(iter(u)) for u in updates] == ["count", "review", "agent", "tools", "agent"]
        assert BLOCK not in repr(updates)


def test_create_agent_streams_tokens_through_the_wrapper(store: MemoryStore, lesson: MemoryUnit) -> None:
    from langchain.agents import create_agent

    def agent() -> Any:
        return create_agent(TokenModel(respond=_respond), tools=[lookup], checkpointer=InMemorySaver())

    prompts = Prompts()
    ref = list(agent().stream(_turn(TASKS[0]), _config("ca"), stream_mode="messages"))
    got = list(with_hindsight(agent(), store).stream(_turn(TASKS[0]), _config("ca", prompts), stream_mode="messages"))
    assert len(ref) > 5
    assert [(m["langgraph_node"], c.content) for c, m in got] == [(m["langgraph_node"], c.content) for c, m in ref]
    assert prompts.blocks() == [1, 1]


# ---------------------------------------------------------------------------- interrupts
def test_interrupt_is_resumed_through_the_wrapper(store: MemoryStore, lesson: MemoryUnit) -> None:
    journal = RunJournal(store)
    saver = InMemorySaver()
    app = with_hindsight(_graph(saver), store, journal=journal)
    prompts = Prompts()
    run_id = str(uuid.uuid4())
    config = {**_config("i", prompts), "run_id": run_id}
    first = app.invoke(_turn(APPROVAL + TASKS[0]), config)
    assert first["__interrupt__"][0].value == "批准这次查询吗？"
    assert app.get_state(config).next == ("review",)
    assert journal.get(run_id).ended_at is None  # not finished: the task is waiting for the human
    out = app.invoke(Command(resume="批准"), _config("i", prompts))
    assert out["approved"] == "批准"
    assert out["n"] == 1  # the interrupted node re-ran; nothing applied twice
    assert out["messages"][-1].content.startswith("今天 北京")
    assert prompts.blocks() == [1, 1]  # the resumed run's model calls saw the block again
    assert BLOCK not in _saved(saver)
    record = journal.get(run_id)
    assert record.outcome == "success"  # finished once, after the resume, under the first run's id
    assert record.ended_at is not None
    assert record.served_ids == [lesson.memory_id]
    assert store.get(lesson.memory_id).access_count == 1


def test_a_resume_without_the_interrupted_wrapper_recalls_again(store: MemoryStore, lesson: MemoryUnit) -> None:
    """Another wrapper (another process) on the same checkpointer: the task is read back from the state."""
    saver = InMemorySaver()
    with_hindsight(_graph(saver), store).invoke(_turn(APPROVAL + TASKS[1]), _config("r"))
    prompts = Prompts()
    out = with_hindsight(_graph(saver), store).invoke(Command(resume="ok"), _config("r", prompts))
    assert out["approved"] == "ok"
    assert prompts.blocks() == [1, 1]
    assert BLOCK not in _saved(saver)
    assert store.get(lesson.memory_id).access_count == 1  # one outcome for the one task


def test_interrupted_runs_remembered_are_bounded(store: MemoryStore) -> None:
    from langchain_hindsight.adapters._wrapper import _MAX_PENDING
    from langchain_hindsight.types import Served

    wrapping = with_hindsight(_graph(), store).hindsight
    for i in range(_MAX_PENDING + 1):
        wrapping.stash((f"t{i}", ""), Served(run_id=f"r{i}", task="t", namespace="default"), None)
    assert wrapping.unstash(("t0", "")) is None  # the oldest is forgotten (a resume then recalls again)
    remembered = wrapping.unstash((f"t{_MAX_PENDING}", ""))
    assert remembered is not None
    assert remembered[0].run_id == f"r{_MAX_PENDING}"


def test_a_multimodal_task_resumes_without_the_block(store: MemoryStore, lesson: MemoryUnit) -> None:
    """Its block is a separate message, which cannot be put back in place: the rest of the run goes without it."""
    saver = InMemorySaver()
    app = with_hindsight(_graph(saver), store)
    task = HumanMessage([{"type": "text", "text": APPROVAL + TASKS[0]}])
    app.invoke({"messages": [task]}, _config("mm"))
    prompts = Prompts()
    out = app.invoke(Command(resume="ok"), _config("mm", prompts))
    assert out["approved"] == "ok"
    assert prompts.blocks() == [0, 0]
    assert [m.type for m in prompts.seen[0]] == ["human"]  # nothing appended to the conversation
    assert BLOCK not in _saved(saver)


def test_a_static_breakpoint_is_continued_with_none(store: MemoryStore, lesson: MemoryUnit) -> None:
    journal = RunJournal(store)
    saver = InMemorySaver()
    app = with_hindsight(_graph(saver), store, journal=journal)
    prompts = Prompts()
    run_id = str(uuid.uuid4())
    app.invoke(_turn(TASKS[0]), {**_config("b", prompts), "run_id": run_id}, interrupt_before=["tools"])
    assert app.get_state(_config("b")).next == ("tools",)
    assert journal.get(run_id).ended_at is None
    out = app.invoke(None, _config("b", prompts))
    assert out["n"] == 1
    assert prompts.blocks() == [1, 1]
    assert journal.get(run_id).outcome == "success"
    assert BLOCK not in _saved(saver)


def test_a_new_task_replaces_an_interrupted_one(store: MemoryStore, lesson: MemoryUnit) -> None:
    journal = RunJournal(store)
    app = with_hindsight(_graph(), store, journal=journal)
    abandoned = str(uuid.uuid4())
    app.invoke(_turn(APPROVAL + TASKS[0]), {**_config("n"), "run_id": abandoned})
    out = app.invoke(_turn(TASKS[1]), _config("n"))
    assert out["n"] == 2
    assert out["messages"][-1].type == "ai"
    assert journal.get(abandoned).ended_at is None  # never finished: it did not end
    assert store.get(lesson.memory_id).access_count == 1  # only the task that ran to its end


def test_copies_of_the_wrapper_keep_recalling(store: MemoryStore, lesson: MemoryUnit) -> None:
    prompts = Prompts()
    app = with_hindsight(_graph(), store, name="weather").with_config(recursion_limit=20)
    assert app.get_name() == "weather"
    app.invoke(_turn(TASKS[0]), _config("c", prompts))
    assert prompts.blocks() == [1, 1]


class TaskState(TypedDict, total=False):
    question: str
    experience: str
    answer: str
    approved: str
    n: Annotated[int, operator.add]


def test_a_block_key_schema_keeps_the_block_out_of_checkpoints(store: MemoryStore, lesson: MemoryUnit) -> None:
    seen: list[str] = []

    def ask(state: TaskState) -> dict[str, Any]:
        return {"approved": str(interrupt("ok?")), "n": 1}

    def answer(state: TaskState) -> dict[str, Any]:
        seen.append(state.get("experience", ""))
        return {"answer": f"done {state['question']}"}

    builder = StateGraph(TaskState)
    builder.add_node("ask", ask)
    builder.add_node("answer", answer)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "answer")
    saver = InMemorySaver()
    app = with_hindsight(
        builder.compile(checkpointer=saver), store, input_key="question", block_key="experience", output_key="answer"
    )
    app.invoke({"question": TASKS[0]}, _config("k"))
    out = app.invoke(Command(resume="yes"), _config("k"))
    assert out["answer"] == f"done {TASKS[0]}"
    assert out["n"] == 1
    assert seen[0].count(BLOCK) == 1  # the node after the interrupt got the block back
    assert not out.get("experience")
    assert BLOCK not in _saved(saver)
    assert store.get(lesson.memory_id).access_count == 1


# ---------------------------------------------------------------------------- state API
def test_get_state_update_state_and_time_travel_use_the_callers_checkpointer(
    store: MemoryStore, lesson: MemoryUnit
) -> None:
    saver = InMemorySaver()
    graph = _graph(saver)
    app = with_hindsight(graph, store)
    config = _config("s")
    app.invoke(_turn(TASKS[0]), config)
    app.invoke(_turn(TASKS[1]), config)
    state = app.get_state(config)
    assert state.values == graph.get_state(config).values  # one checkpointer, read by both
    assert state.values["n"] == 2
    assert _shape(state.values["messages"])[4] == ("human", TASKS[1])  # the task as the user sent it
    app.update_state(config, {"n": 10})
    assert graph.get_state(config).values["n"] == 12  # update_state goes through the reducer
    history = list(app.get_state_history(config))
    assert history == list(graph.get_state_history(config))
    after_first = next(s for s in history if s.values.get("n") == 1 and not s.next)
    prompts = Prompts()
    forked = app.invoke(_turn(TASKS[2]), {**after_first.config, "callbacks": [prompts]})
    assert forked["n"] == 2  # forked from turn 1, turn 2 is not in this branch
    assert [m.content for m in forked["messages"] if m.type == "human"] == [TASKS[0], TASKS[2]]
    assert prompts.blocks() == [1, 1]
    replay = app.invoke(None, after_first.config)  # replaying a checkpoint is LangGraph's own
    assert replay["n"] == 1
    assert BLOCK not in _saved(saver)


# ---------------------------------------------------------------------------- persistence
@pytest.mark.parametrize(
    ("placement", "locale", "tasks"),
    [("task_message", "zh", TASKS), ("separate_message", "en", ["Check the weather in Beijing today"])],
)
def test_checkpoints_and_outputs_never_hold_the_block(
    store: MemoryStore, lesson: MemoryUnit, placement: Any, locale: Any, tasks: list[str]
) -> None:
    store.add(
        MemoryUnit(task_type="api_call", content="For weather questions call the lookup tool first", tags=["weather"])
    )
    saver = InMemorySaver()
    # persistence, not relevance, is under test: every call must carry a block
    app = with_hindsight(_graph(saver), store, placement=placement, locale=locale, min_relevance=None)
    prompts = Prompts()
    for task in tasks:
        for durability in ("sync", "async", "exit"):
            out = app.invoke(_turn(task), _config(f"d-{durability}", prompts), durability=durability)
            assert BLOCK not in repr(out)
            assert BLOCK_EN not in repr(out)
    assert prompts.blocks()
    assert all(b == 1 for b in prompts.blocks()), prompts.blocks()  # the model did get it, once per call
    saved = _saved(saver)
    assert BLOCK not in saved
    assert BLOCK_EN not in saved
    assert "hindsight-experience-" not in saved


def test_without_a_checkpointer(store: MemoryStore, lesson: MemoryUnit) -> None:
    graph = _graph().copy(update={"checkpointer": None})
    app = with_hindsight(graph, store)
    prompts = Prompts()
    out = app.invoke(_turn(TASKS[0]), {"callbacks": [prompts]})
    assert out["n"] == 1
    assert prompts.blocks() == [1, 1]
    assert BLOCK not in repr(out)
    assert store.get(lesson.memory_id).access_count == 1  # the run was finished


def test_as_a_subgraph_of_a_checkpointed_parent(store: MemoryStore, lesson: MemoryUnit) -> None:
    """The parent lends its checkpointer to the wrapped graph: that one is scrubbed too."""
    inner = with_hindsight(_graph().copy(update={"checkpointer": None}), store)
    parent = StateGraph(State)
    parent.add_node("weather", inner)
    parent.add_edge(START, "weather")
    saver = InMemorySaver()
    app = parent.compile(checkpointer=saver)
    prompts = Prompts()
    out = app.invoke(_turn(TASKS[0]), _config("sub", prompts))
    assert out["n"] == 1
    assert prompts.blocks() == [1, 1]
    assert BLOCK not in repr(out)
    assert BLOCK not in _saved(saver)


def test_a_failing_run_is_not_finished_and_the_next_one_works(store: MemoryStore, lesson: MemoryUnit) -> None:
    journal = RunJournal(store)
    calls = {"n": 0}

    def flaky(messages: list[BaseMessage]) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("model unreachable")
        return _respond(messages)

    app = with_hindsight(_graph(respond=flaky), store, journal=journal)
    failed = str(uuid.uuid4())
    with pytest.raises(ConnectionError):
        app.invoke(_turn(TASKS[0]), {**_config("f"), "run_id": failed})
    assert journal.get(failed).ended_at is None  # an API failure says nothing about the memories
    assert store.get(lesson.memory_id).access_count == 0
    out = app.invoke(_turn(TASKS[1]), _config("f2"))
    assert out["messages"][-1].type == "ai"
    assert store.get(lesson.memory_id).access_count == 1


def test_concurrent_runs_on_one_wrapper(store: MemoryStore, lesson: MemoryUnit) -> None:
    from concurrent.futures import ThreadPoolExecutor

    saver = InMemorySaver()
    app = with_hindsight(_graph(saver), store)
    prompts = Prompts()

    def run(i: int) -> Any:
        return app.invoke(_turn(TASKS[i % 3]), _config(f"c{i}", prompts))

    with ThreadPoolExecutor(max_workers=4) as pool:
        outs = list(pool.map(run, range(8)))
    assert [o["n"] for o in outs] == [1] * 8
    assert [o["messages"][0].content for o in outs] == [TASKS[i % 3] for i in range(8)]
    assert prompts.blocks() == [1] * 16
    assert BLOCK not in _saved(saver)


def test_mid_run_checkpoints_and_values_are_clean_while_the_model_sees_the_block(
    store: MemoryStore, lesson: MemoryUnit
) -> None:
    saver = InMemorySaver()
    app = with_hindsight(_graph(saver), store)
    prompts = Prompts()
    seen: list[int] = []
    for chunk in app.stream(_turn(TASKS[0]), _config("nm", prompts), stream_mode="values", durability="sync"):
        seen.append(str(chunk).count(BLOCK))
        live = saver.get_tuple(_config("nm"))
        assert live is not None
        assert BLOCK not in repr(live.checkpoint)  # already clean while the run is still going
    assert len(seen) == len(list(_graph().stream(_turn(TASKS[0]), _config("nm"), stream_mode="values")))
    assert set(seen) == {0}
    assert prompts.blocks() == [1, 1]  # the running graph's own state kept it


# ---------------------------------------------------------------------------- async
def test_async_invoke_stream_and_resume(store: MemoryStore, lesson: MemoryUnit) -> None:
    saver = InMemorySaver()
    plain, app = _graph(), with_hindsight(_graph(saver), store)
    prompts = Prompts()

    async def main() -> tuple[Any, ...]:
        ref = [c async for c, _ in plain.astream(_turn(TASKS[0]), _config("a"), stream_mode="messages")]
        got = [c async for c, _ in app.astream(_turn(TASKS[0]), _config("a", prompts), stream_mode="messages")]
        again = await app.ainvoke(_turn(TASKS[1]), _config("a", prompts))
        first = await app.ainvoke(_turn(APPROVAL + TASKS[2]), _config("b", prompts))
        resumed = await app.ainvoke(Command(resume="好"), _config("b", prompts))
        return ref, got, again, first, resumed

    ref, got, again, first, resumed = asyncio.run(main())
    assert [c.content for c in got] == [c.content for c in ref]
    assert again["n"] == 2
    assert "__interrupt__" in first
    assert resumed["approved"] == "好"
    assert resumed["n"] == 1
    assert prompts.blocks() == [1, 1] * 3
    assert BLOCK not in _saved(saver)
    assert store.get(lesson.memory_id).access_count == 3


def test_astream_events_carry_the_token_stream(store: MemoryStore, lesson: MemoryUnit) -> None:
    plain, app = _graph(), with_hindsight(_graph(), store)

    async def tokens(graph: Any, thread: str) -> list[str]:
        events = graph.astream_events(_turn(TASKS[0]), _config(thread), version="v2")
        return [str(e["data"]["chunk"].content) async for e in events if e["event"] == "on_chat_model_stream"]

    ref = asyncio.run(tokens(plain, "ev"))
    assert len(ref) > 5
    assert asyncio.run(tokens(app, "ev")) == ref
    assert store.get(lesson.memory_id).access_count == 1


def test_the_journal_records_each_run_and_reflection_learns(store: MemoryStore) -> None:
    journal = RunJournal(store)
    app = with_hindsight(_graph(), store, journal=journal, task_type="api_call")
    run_id = str(uuid.uuid4())
    app.invoke(_turn(TASKS[0]), {**_config("j", user_id="alice"), "run_id": run_id})
    record = journal.get(run_id, namespace="alice")
    assert record.outcome == "success"
    assert record.task == TASKS[0]
    by_context = str(uuid.uuid4())
    app.invoke(_turn(TASKS[1]), {**_config("j2"), "run_id": by_context}, context={"user_id": "bob"})
    assert journal.get(by_context, namespace="bob").task == TASKS[1]  # namespace from the runtime context
