"""One session per task: every adapter journals what it served and produced; conversation feedback; credit once.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/session/test_session.py``.
"""

from __future__ import annotations

import asyncio
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from langchain_hindsight import (
    ConfigurationError,
    Hindsight,
    HindsightMemory,
    MemoryStore,
    MemoryUnit,
    recall_node,
    reflect_node,
)
from langchain_hindsight.adapters.middleware import HindsightMiddleware
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.session import _verdict
from langchain_hindsight.session.config import SessionConfig
from langchain_hindsight.session.loop import HindsightSession
from langchain_hindsight.session.source import SessionOwner, session_for
from langchain_hindsight.testing import ReactiveToolModel
from langchain_hindsight.types import MemoryContext, Trajectory
from tests.fakes import WEEKLY_REPORT_LESSON as LESSON
from tests.fakes import closing_factory, query_sales
from tests.unit_tests.session.test_session import TASK, _model

FOLLOWED = "按第1条经验：周报已生成"
"""An answer that says the agent applied what it was served: a run credits or debits only what it used (issue 33)."""

NATURAL_WEEK = MemoryContext(parameters={"start": "2024-06-03", "end": "2024-06-09"})
"""The lesson's prescription as the retry of ``weekly_report_policy`` passes it: a run that follows it shows it."""


def _add(store: MemoryStore, unit: MemoryUnit) -> MemoryUnit:
    """Store ``unit`` in an empty store (kept as given) and return it, whatever ``add`` returns."""
    store.add(unit)
    return unit


@pytest.fixture
def contradicts(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Script which stored lessons a correction contradicts: these tests are about the flow through the adapters
    (which memory a correction supersedes, credit, journal); the contradiction rules are tested in test_claims."""

    def install(*lessons: str) -> None:
        monkeypatch.setattr(
            _verdict, "relation", lambda claim, memory: "contradicts" if memory in lessons else "unsure"
        )

    return install


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    experience: str
    hindsight_served: dict[str, Any]


def _run_middleware(hs: Hindsight) -> None:
    agent = create_agent(_model(), tools=[query_sales], middleware=[hs.middleware()])
    agent.invoke({"messages": [HumanMessage(TASK)]}, config={"run_id": uuid.uuid4()})


def _run_wrapper(hs: Hindsight) -> None:
    app = hs.wrap(create_agent(_model(), tools=[query_sales]))
    app.invoke({"messages": [HumanMessage(TASK)]}, config={"run_id": uuid.uuid4()})


def _nodes_graph(hs: Hindsight) -> Any:
    inner = create_agent(_model(), tools=[query_sales])

    def agent(state: State) -> dict[str, Any]:
        return {"messages": inner.invoke({"messages": state["messages"]})["messages"]}

    async def aagent(state: State) -> dict[str, Any]:
        return {"messages": (await inner.ainvoke({"messages": state["messages"]}))["messages"]}

    from langchain_core.runnables import RunnableLambda

    builder: StateGraph[Any, Any, Any, Any] = StateGraph(State)
    builder.add_node("recall", recall_node(hs))
    builder.add_node("agent", RunnableLambda(agent, afunc=aagent))
    builder.add_node("reflect", reflect_node(hs))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "agent")
    builder.add_edge("agent", "reflect")
    builder.add_edge("reflect", END)
    return builder.compile()


def _run_nodes(hs: Hindsight) -> None:
    _nodes_graph(hs).invoke({"messages": [HumanMessage(TASK)]})


def _run_callbacks(hs: Hindsight) -> None:
    agent = create_agent(_model(), tools=[query_sales])  # no adapter: capture only
    agent.invoke({"messages": [HumanMessage(TASK)]}, config={"callbacks": hs.callbacks, "run_id": uuid.uuid4()})


def _run_memory(hs: Hindsight) -> None:
    from langchain_classic.agents import AgentExecutor, create_tool_calling_agent
    from langchain_core.prompts import ChatPromptTemplate

    prompt = ChatPromptTemplate.from_messages(
        [("system", "You write reports."), ("human", "{experience}\n{input}"), ("placeholder", "{agent_scratchpad}")]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        executor = AgentExecutor(
            agent=create_tool_calling_agent(_model(), [query_sales], prompt),
            tools=[query_sales],
            memory=HindsightMemory(hs, input_key="input"),
            return_intermediate_steps=True,
        )
        executor.invoke({"input": TASK})


ADAPTERS: dict[str, Callable[[Hindsight], None]] = {
    "middleware": _run_middleware,
    "wrapper": _run_wrapper,
    "nodes": _run_nodes,
    "callbacks": _run_callbacks,
    "memory": _run_memory,
}


@pytest.fixture
def make_hs(tmp_path: Path, embeddings: LocalEmbeddings) -> Iterator[Callable[..., Hindsight]]:
    yield from closing_factory(lambda i, **kwargs: Hindsight(tmp_path / f"db{i}", embeddings=embeddings, **kwargs))


def _only_run(hs: Hindsight) -> RunRecord:
    runs = hs.journal.list_runs()
    assert len(runs) == 1, [r.task for r in runs]
    return runs[0]


@pytest.mark.parametrize("background", [False, True], ids=["inline", "background"])
@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_every_adapter_journals_served_and_produced(
    adapter: str, background: bool, make_hs: Callable[..., Hindsight]
) -> None:
    hs = make_hs(background=background, task_type="weekly_report")
    unit = _add(hs.store, MemoryUnit(task_type="weekly_report", content=LESSON, context=NATURAL_WEEK))
    ADAPTERS[adapter](hs)
    assert hs.flush(timeout=60)
    record = _only_run(hs)
    assert record.task == TASK
    assert record.outcome == "success"
    # callbacks only capture (they run after the task): nothing was served to credit
    assert record.served_ids == ([] if adapter == "callbacks" else [unit.memory_id])
    assert record.produced, f"{adapter}: the journal lost what reflection stored"
    produced = hs.store.get_many(record.produced)
    assert any("2024-06-03" in u.content for u in produced)  # the error → fix lesson of this very run
    if adapter != "callbacks":
        assert record.credit == {unit.memory_id: pytest.approx(0.05)}  # credited once, and recorded


def test_async_nodes_and_facade(make_hs: Callable[..., Hindsight], contradicts: Callable[..., None]) -> None:
    contradicts(LESSON)
    hs = make_hs(task_type="weekly_report")
    unit = _add(hs.store, MemoryUnit(task_type="weekly_report", content=LESSON))
    stored = hs.store.get(unit.memory_id).score_confidence
    graph = _nodes_graph(hs)

    async def main() -> tuple[Any, Any, Any]:
        out = await graph.ainvoke({"messages": [HumanMessage(TASK)]})
        recalled = await hs.arecall(TASK)
        run = hs.journal.list_runs()[0]
        result = await hs.afeedback(run.run_id, success=False, comment="不对，周报只统计本周一到周日")
        return out, recalled, result

    out, recalled, result = asyncio.run(main())
    assert LESSON in out["experience"]
    assert out["hindsight_served"]["memory_ids"] == [unit.memory_id]
    assert unit.memory_id in [r.memory.memory_id for r in recalled]
    record = result.run
    assert record.served_ids == [unit.memory_id]
    assert record.produced
    assert result.created
    assert result.created[0].source == "user_feedback"
    # the success credit was taken back; the correction contradicts the lesson (this week vs last week), so it
    # supersedes it: halved once (issue 20: a correction demotes what it contradicts, not everything served)
    old = hs.store.get(unit.memory_id)
    assert old.status == "superseded"
    assert old.score_confidence == pytest.approx(stored * 0.5)
    assert result.created[0].supersedes == unit.memory_id


def test_async_session_serve_and_finish(make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs(task_type="weekly_report")
    unit = _add(hs.store, MemoryUnit(task_type="weekly_report", content=LESSON))

    async def main() -> tuple[Any, Any]:
        served = await hs.session.aserve(TASK, thread_id="t-async")
        trajectory = Trajectory(run_id=served.run_id, task=TASK, outcome="success", final_answer=FOLLOWED)
        await hs.session.afinish(served, trajectory)
        return served, await hs.journal.aget(served.run_id)

    served, record = asyncio.run(main())
    assert served.memory_ids == (unit.memory_id,)
    assert LESSON in served.block
    assert record.thread_id == "t-async"
    assert record.outcome == "success"
    assert record.credit == {unit.memory_id: pytest.approx(0.05)}


# ---------------------------------------------------------------------------- conversation feedback
WRONG = "周报的数据范围取最近7天的滚动窗口"


CASES = {
    "zh": ("生成本周的销售周报", "不对，周报只统计本周一到周日", "本周一到周日", WRONG),
    "en": (
        "Write this week's sales report",
        "No, the weekly report only covers Monday to Sunday of this week",
        "Monday to Sunday",
        "For the weekly sales report, use a rolling window of the last 7 days.",
    ),
}


CLEANED = {  # what the journal records: the corrected statement without the opening verdict, and what fired
    "zh": ("周报只统计本周一到周日", "opener:不对"),
    "en": ("The weekly report only covers Monday to Sunday of this week", "opener:no"),
}


def _answer(messages: list[BaseMessage]) -> Any:
    return "report done, following experience 1" if messages[-1].type == "human" else "ok"


@pytest.mark.parametrize("lang", list(CASES))
def test_correction_turn_in_a_checkpointed_thread_is_feedback_on_the_previous_run(
    lang: str, make_hs: Callable[..., Hindsight], contradicts: Callable[..., None]
) -> None:
    task, correction, key, lesson = CASES[lang]
    contradicts(lesson)
    hs = make_hs(task_type="weekly_report")
    wrong = _add(hs.store, MemoryUnit(task_type="weekly_report", content=lesson))
    stored = hs.store.get(wrong.memory_id).score_confidence
    agent = create_agent(
        ReactiveToolModel(respond=_answer), tools=[], middleware=[hs.middleware()], checkpointer=InMemorySaver()
    )
    config: dict[str, Any] = {"configurable": {"thread_id": f"thread-{lang}"}}
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    agent.invoke({"messages": [HumanMessage(task)]}, config={**config, "run_id": first})
    assert hs.journal.get(first).credit == {wrong.memory_id: pytest.approx(0.05)}

    agent.invoke({"messages": [HumanMessage(correction)]}, config={**config, "run_id": second})

    previous = hs.journal.get(first)
    assert previous.credit is None  # the success credit was taken back ...
    assert previous.feedback[-1].rejected
    assert (previous.feedback[-1].text, previous.feedback[-1].rule) == CLEANED[lang]
    # ... and nothing compounded: the correction contradicts the rolling window, so it supersedes it (issue 20:
    # only what a correction contradicts is demoted), halving the original confidence, no +0.05 left on it
    now = hs.store.get(wrong.memory_id)
    assert now.status == "superseded"
    assert now.score_confidence == pytest.approx(stored * 0.5)
    created = [u for u in hs.store.list_units() if u.source == "user_feedback"]
    assert len(created) == 1
    assert key in created[0].content
    assert created[0].memory_id in previous.produced
    assert created[0].supersedes == wrong.memory_id
    correcting = hs.journal.get(second)
    assert wrong.memory_id not in correcting.served_ids  # the rejected memory is not served (nor credited) again
    assert correcting.thread_id == f"thread-{lang}"


def test_correction_in_another_thread_or_without_thread_is_a_new_task(make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs(task_type="weekly_report")
    wrong = _add(hs.store, MemoryUnit(task_type="weekly_report", content=WRONG))
    first = hs.session.serve(TASK, thread_id="a")
    hs.session.finish(first, Trajectory(run_id=first.run_id, task=TASK, outcome="success", final_answer=FOLLOWED))
    credited = hs.store.get(wrong.memory_id).score_confidence
    other = hs.session.serve("不对，周报只统计本周一到周日", thread_id="b")
    none = hs.session.serve("不对，周报只统计本周一到周日")
    assert other.corrects is None
    assert none.corrects is None
    assert hs.store.get(wrong.memory_id).score_confidence == credited
    assert hs.journal.get(first.run_id).credit is not None


def test_conversation_feedback_can_be_switched_off(make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs(task_type="weekly_report", conversation_feedback=False)
    first = hs.session.serve(TASK, thread_id="a")
    hs.session.finish(first, Trajectory(run_id=first.run_id, task=TASK, outcome="success", final_answer=FOLLOWED))
    assert hs.session.serve("错了，应该按自然周", thread_id="a").corrects is None


# ---------------------------------------------------------------------------- credit once
def test_finish_credits_once_per_run(make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs(task_type="weekly_report")
    unit = _add(hs.store, MemoryUnit(task_type="weekly_report", content=LESSON))
    served = hs.session.serve(TASK)
    trajectory = Trajectory(run_id=served.run_id, task=TASK, outcome="success", final_answer=FOLLOWED)
    hs.session.finish(served, trajectory)
    hs.session.finish(served, trajectory)  # e.g. an adapter and a callback both ending the run
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(unit.score_confidence + 0.05)


def test_feedback_success_after_apply_outcome_off_credits_once(make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs(task_type="weekly_report")
    unit = _add(hs.store, MemoryUnit(task_type="weekly_report", content=LESSON))
    session = hs.session.derive(apply_outcome=False)
    served = session.serve(TASK)
    session.finish(served, Trajectory(run_id=served.run_id, task=TASK, outcome="success", final_answer=FOLLOWED))
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(unit.score_confidence)
    hs.feedback(served.run_id, success=True)
    hs.feedback(served.run_id, success=True)
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(unit.score_confidence + 0.05)
    hs.feedback(served.run_id, success=False)
    # issue 20: a failure verdict without a comment names nothing wrong: the credit back, then the failure
    # debit (−0.1), no longer a rejection that halves
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(unit.score_confidence - 0.1)


# ---------------------------------------------------------------------------- composition root
def test_serve_options_pass_through(make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs(min_relevance=0.42, k=3)
    assert hs.retriever.min_relevance == pytest.approx(0.42)
    assert hs.middleware().session.retriever.min_relevance == pytest.approx(0.42)
    assert hs.session.derive(min_relevance=0.7).retriever.min_relevance == pytest.approx(0.7)
    assert hs.retriever.min_relevance == pytest.approx(0.42)  # a derived session never changes its parent


def test_task_type_served_is_journaled(make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs()
    served = hs.session.serve(TASK)
    assert served.task_type == "weekly_report"  # inferred from the task text by the retriever
    assert hs.journal.get(served.run_id).task_type == "weekly_report"
    unknown = hs.session.serve("帮我想一个名字")
    assert unknown.task_type == "general"
    off = session_for(hs, recall=False).serve(TASK)
    assert off.task_type == "weekly_report"  # journaled even when nothing is recalled
    fixed = make_hs(task_type="data_cleaning").session.serve(TASK)
    assert fixed.task_type == "data_cleaning"  # a fixed task type wins


def test_hindsight_accepts_a_client(tmp_path: Path, embeddings: LocalEmbeddings) -> None:
    import chromadb

    client = chromadb.PersistentClient(path=str(tmp_path / "shared"))
    with Hindsight(client=client, embeddings=embeddings) as hs:
        unit = _add(hs.store, MemoryUnit(task_type="weekly_report", content=LESSON))
        assert any(c.count() for c in client.list_collections())  # written into the client passed in
    with MemoryStore(client=client, embeddings=embeddings) as store:
        assert store.get(unit.memory_id).content == LESSON


def test_hindsight_server_address_and_exclusive_sources(tmp_path: Path, embeddings: LocalEmbeddings) -> None:
    with pytest.raises(ConfigurationError, match="server"):
        Hindsight(server="ftp://nowhere", embeddings=embeddings)
    with (
        MemoryStore(tmp_path / "db", embeddings=embeddings) as store,
        pytest.raises(ConfigurationError, match="at most one"),
    ):
        Hindsight(server="http://127.0.0.1:1", store=store)


def test_hindsight_server_connects(tmp_path: Path, embeddings: LocalEmbeddings) -> None:
    from tests.server import running_chroma_server

    with (
        running_chroma_server(tmp_path / "srv") as server,
        Hindsight(server=f"http://127.0.0.1:{server.port}", embeddings=embeddings) as hs,
    ):
        unit = _add(hs.store, MemoryUnit(task_type="weekly_report", content=LESSON))
        assert [r.memory.memory_id for r in hs.recall(TASK)][:1] == [unit.memory_id]


def test_session_for_and_options(store: MemoryStore) -> None:
    session = session_for(store, k=2)
    assert isinstance(session, HindsightSession)
    assert session.k == 2
    assert session.journal is not None  # always on
    assert session_for(session) is session
    assert session_for(SessionConfig(store=store)).k == 5
    with pytest.raises(ConfigurationError, match="unknown"):
        session_for(store, journal_off=True)
    with pytest.raises(ConfigurationError):
        session_for(object())
    with pytest.raises(ConfigurationError):
        session_for(store, k=0)
    with pytest.raises(ConfigurationError, match="built"):  # a session receives built parts, it builds none
        HindsightSession(SessionConfig(store=store))


def test_adapters_take_any_session_owner_not_only_the_facade(store: MemoryStore) -> None:
    """Adapters depend on the session: anything with a ``session`` (a SessionOwner) works, e.g. an app's own bundle."""

    class Bundle:
        def __init__(self, session: HindsightSession) -> None:
            self.session = session

    own = session_for(store, k=2)
    bundle: SessionOwner = Bundle(own)
    assert session_for(bundle) is own
    assert session_for(bundle, k=3).k == 3
    assert HindsightMiddleware(bundle).session is own


def test_hindsight_takes_reflection_options(tmp_path: Path, embeddings: LocalEmbeddings) -> None:
    from langchain_hindsight import Reflector
    from langchain_hindsight.testing import scripted_model

    with Hindsight(tmp_path / "a", embeddings=embeddings, model=scripted_model("[]"), structured_output=False) as hs:
        assert hs.reflector.structured_output is False
    with Hindsight(tmp_path / "b", embeddings=embeddings) as first:
        mine = Reflector(store=first.store, locale="en")
        with Hindsight(store=first.store, reflector=mine) as hs:
            assert hs.session.reflector is mine
        with pytest.raises(ConfigurationError, match="either reflector"):
            Hindsight(store=first.store, reflector=mine, model=scripted_model("[]"))


def test_lcel_chain_with_callbacks_journals_and_credits_what_the_retriever_served(
    make_hs: Callable[..., Hindsight],
) -> None:
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    from langchain_hindsight import format_experiences
    from langchain_hindsight.testing import scripted_model

    hs = make_hs(task_type="weekly_report")
    unit = _add(hs.store, MemoryUnit(task_type="weekly_report", content=LESSON, namespace="alice"))
    hs.retriever.invoke(TASK, config={"callbacks": hs.callbacks})  # a retriever on its own is no run
    assert hs.journal.list_runs(namespace="alice") == []
    assert hs.journal.list_runs() == []
    prompt = ChatPromptTemplate.from_messages([("human", "{experience}\n\n[当前任务]\n{task}")])
    chain = (
        {"experience": hs.retriever.bind(namespace="alice") | format_experiences, "task": RunnablePassthrough()}
        | prompt
        | scripted_model(FOLLOWED)
    )
    chain.invoke(TASK, config={"callbacks": hs.callbacks})
    (record,) = hs.journal.list_runs(namespace="alice")  # the run used alice's memories: it is alice's run
    assert record.task == TASK
    assert record.served_ids == [unit.memory_id]
    assert record.outcome == "success"
    assert record.credit == {unit.memory_id: pytest.approx(0.05)}
    assert hs.store.get(unit.memory_id, namespace="alice").score_confidence == pytest.approx(
        unit.score_confidence + 0.05
    )


def test_correction_through_graph_nodes_in_a_checkpointed_thread(
    make_hs: Callable[..., Hindsight], contradicts: Callable[..., None]
) -> None:
    contradicts(WRONG)

    class QA(TypedDict, total=False):
        question: str
        answer: str
        experience: str
        hindsight_served: dict[str, Any]

    hs = make_hs(task_type="weekly_report")
    wrong = _add(hs.store, MemoryUnit(task_type="weekly_report", content=WRONG))
    stored = hs.store.get(wrong.memory_id).score_confidence
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(QA)
    builder.add_node("recall", recall_node(hs, input_key="question"))
    builder.add_node("answer", lambda state: {"answer": FOLLOWED})
    builder.add_node("reflect", reflect_node(hs, input_key="question", output_key="answer"))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "answer")
    builder.add_edge("answer", "reflect")
    builder.add_edge("reflect", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": "nodes"}}
    first = graph.invoke({"question": TASK}, config)["hindsight_served"]["run_id"]
    assert hs.journal.get(first).credit == {wrong.memory_id: pytest.approx(0.05)}
    graph.invoke({"question": "错了，周报只统计本周一到周日"}, config)
    assert hs.journal.get(first).credit is None
    # the correction supersedes the lesson it contradicts: halved once, no longer active (issue 20)
    assert hs.store.get(wrong.memory_id).score_confidence == pytest.approx(stored * 0.5)
    assert hs.store.get(wrong.memory_id).status == "superseded"
    assert [u.source for u in hs.store.list_units(source="user_feedback")] == ["user_feedback"]


def test_store_async_twins(store: MemoryStore) -> None:
    unit = _add(store, MemoryUnit(task_type="weekly_report", content=LESSON))

    async def main() -> tuple[Any, ...]:
        got = await store.aget(unit.memory_id)
        many = await store.aget_many([unit.memory_id])
        credited = await store.arecord_feedback([unit.memory_id], success=True)
        updated = await store.aupdate(unit.memory_id, tags=["weekly"])
        gone = await store.aforget(unit.memory_id)
        return got, many, credited, updated, gone

    got, many, credited, updated, gone = asyncio.run(main())
    assert got.content == LESSON
    assert [u.memory_id for u in many] == [unit.memory_id]
    assert credited[0].score_confidence == pytest.approx(unit.score_confidence + 0.05)
    assert updated.tags == ["weekly"]
    assert gone == 1
    assert store.count() == 0
