"""Junk is never stored nor served; a clipped block line says so; the block's size is configurable; recall is
logged; ``explain`` shows the factors on every path (issue 20, scopes 7 and 8). Unit tier: the fake embedder."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_hindsight import (
    ConfigurationError,
    Hindsight,
    HindsightMemory,
    MemoryStore,
    MemoryUnit,
    recall_node,
    reflect_node,
)
from langchain_hindsight._text import informative
from langchain_hindsight.errors import InvalidMemoryError, UninformativeMemoryError
from langchain_hindsight.recall import MIN_BLOCK_CHARS
from langchain_hindsight.recall.injection import format_experiences
from langchain_hindsight.reflection.reflector import Reflector
from langchain_hindsight.session.config import SessionConfig
from langchain_hindsight.sharing.access import ScopedMemory
from langchain_hindsight.sharing.principals import Principal
from langchain_hindsight.store._store_writes import write_exact
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.testing import ReactiveToolModel, scripted_model
from langchain_hindsight.types import Step, Trajectory
from tests.fakes import WEEKLY_REPORT_LESSON as LESSON
from tests.fakes import NgramEmbeddings, Prompts, query_sales
from tests.fakes import weekly_report_policy as _respond

TASK = "生成本周的销售周报"
JUNK = ["x", "ok", "好", "好的", "好的！", "thanks", "Thank you!", "嗯嗯", "the", "了", "👍", "🎉🎉", "ok 好的",
        "OK.", "谢谢", "hello", "你好", "haha", "hmm...", "不对", "No.", "是的", "a b", "42", "收到～", "okkk",
        "  ！！ "]  # fmt: skip
INFORMATIVE = ["用gbk", "UTC+8", "周一", "No VPN", "2 GB", "张三", "CSV用;分隔", "汇总金额", "sep=';'", "v2.1",
               "用UTF-8", "Python 3.12", "不要用滚动窗口", "port 8080", "李经理"]  # fmt: skip


# ---------------------------------------------------------------- the predicate
@pytest.mark.parametrize("text", JUNK)
def test_junk_carries_no_information(text: str) -> None:
    assert not informative(text)


@pytest.mark.parametrize("text", INFORMATIVE)
def test_short_texts_that_name_something_are_informative(text: str) -> None:
    assert informative(text)


def test_a_long_text_of_only_acknowledgements_is_still_junk_and_one_real_word_is_not() -> None:
    assert not informative("好的好的，谢谢谢谢！OK, thanks so much. 嗯嗯 👍")
    assert informative("好的好的，谢谢！下次用gbk")
    assert informative("OK, thanks. Use gbk next time.")


# ---------------------------------------------------------------- the write paths
@pytest.fixture
def store() -> Iterator[MemoryStore]:
    """The junk rules are the store's logic, the same on every backend: a store in memory."""
    with MemoryStore(backend=InMemoryBackend(), embeddings=NgramEmbeddings()) as s:
        yield s


@pytest.mark.parametrize("text", ["x", "ok", "好"])
def test_store_refuses_junk_with_a_typed_error_that_says_why(store: MemoryStore, text: str) -> None:
    with pytest.raises(UninformativeMemoryError, match="carries no information") as caught:
        store.add(MemoryUnit(content=text))
    assert isinstance(caught.value, InvalidMemoryError)
    assert isinstance(caught.value, ValueError)
    assert repr(text) in str(caught.value)
    with pytest.raises(UninformativeMemoryError):
        store.add(MemoryUnit(content=text, source="user_feedback"), dedupe=False)  # no source is exempt
    assert store.count() == 0


def test_one_junk_unit_refuses_the_whole_batch_and_an_update_to_junk_is_refused(store: MemoryStore) -> None:
    with pytest.raises(UninformativeMemoryError):
        store.add_many([MemoryUnit(content=LESSON), MemoryUnit(content="好的")])
    assert store.count() == 0
    unit = store.add(MemoryUnit(content=LESSON)).unit
    with pytest.raises(UninformativeMemoryError):
        store.update(unit.memory_id, content="ok")
    assert store.get(unit.memory_id).content == LESSON
    assert store.update(unit.memory_id, content="周报用gbk导出").content == "周报用gbk导出"  # short, informative


def test_import_leaves_junk_out_and_counts_it(store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    units = [
        MemoryUnit(content=LESSON),
        MemoryUnit(content="ok"),
        MemoryUnit(content="UTC+8"),
        MemoryUnit(content="好"),
    ]
    lines = io.StringIO("".join(json.dumps(u.to_dict(), ensure_ascii=False) + "\n" for u in units))
    from langchain_hindsight.store.transfer import read_backup

    with caplog.at_level(logging.WARNING):
        report = store.import_units(read_backup(lines)[0])
    assert (report.imported, report.refused) == (2, 2)
    assert {u.content for u in store.list_units()} == {LESSON, "UTC+8"}
    assert "refused 2 unit(s)" in caplog.text


def test_remember_through_a_principal_and_the_mcp_tool_refuses_junk(store: MemoryStore) -> None:
    memory = ScopedMemory(store, Principal("analyst", "analyst"))
    with pytest.raises(UninformativeMemoryError):
        memory.remember("好的")
    assert memory.remember("周报发给张经理").content == "周报发给张经理"
    pytest.importorskip("mcp")
    from mcp.server.fastmcp.exceptions import ToolError

    from langchain_hindsight.sharing.mcp_server import create_server

    server = create_server(memory)
    with pytest.raises(ToolError, match="UninformativeMemoryError"):
        asyncio.run(server.call_tool("remember", {"content": "thanks!"}))
    assert store.count(namespace="analyst") == 1


def test_reflection_skips_junk_from_the_model_and_from_feedback_without_raising(
    store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    answer = json.dumps(
        {"experiences": [{"content": "ok", "task_type": "general"}, {"content": "周报用含税价汇总金额"}]},
        ensure_ascii=False,
    )
    model = GenericFakeChatModel(messages=iter([AIMessage(content=answer)]))
    reflector = Reflector(store=store, model=model, structured_output=False, rules=False)
    traj = Trajectory(run_id="r1", task=TASK, steps=[Step(type="final_answer", content="done")], outcome="success")
    with caplog.at_level(logging.INFO):
        stored = reflector.reflect(traj)
        assert reflector.record_user_feedback("不对", task=TASK, run_id="r2") == []  # a bare verdict: no memory
        assert reflector.record_user_feedback("好的！", task=TASK) == []
    assert [u.content for u in stored] == ["周报用含税价汇总金额"]
    assert "'ok' carries no information" in caplog.text
    assert "user feedback on run r2 stores no memory" in caplog.text
    (correction,) = reflector.record_user_feedback("不对，用gbk", task=TASK)
    assert correction.content.endswith("用gbk")


@pytest.mark.parametrize("query", ["汇总金额", "hello", "你好"])
def test_legacy_junk_written_raw_is_never_served(store: MemoryStore, query: str) -> None:
    legacy = [MemoryUnit(content=t, confidence=0.9) for t in ("x", "ok", "好")]
    write_exact(store, legacy, store.embeddings.embed_documents([u.content for u in legacy]))  # as an old version did
    lesson = store.add(MemoryUnit(content="汇总金额时使用含税价，hello 你好 问候语保留原文")).unit
    assert store.count() == 4
    from langchain_hindsight import HindsightRetriever

    served = HindsightRetriever(store=store, min_relevance=None, k=10).recall(query)  # no floor: only the filter
    assert [m.memory.memory_id for m in served] == [lesson.memory_id]


def test_an_agent_with_the_middleware_gets_no_block_from_legacy_junk() -> None:
    with _hs() as hs:  # no relevance floor: only the junk filter stands between the junk and the prompt
        legacy = [MemoryUnit(content=t, confidence=0.95) for t in ("x", "ok", "好")]
        write_exact(hs.store, legacy, hs.store.embeddings.embed_documents([u.content for u in legacy]))
        prompts = Prompts()
        agent = create_agent(scripted_model("好的", "Hello!", "已汇总"), tools=[], middleware=[hs.middleware()])
        for task in ("你好", "hello", "汇总金额"):
            agent.invoke({"messages": [HumanMessage(task)]}, config={"callbacks": [prompts]})
        assert len(prompts.seen) == 3
        assert all("[相关经验]" not in str(m.content) for p in prompts.seen for m in p)
        assert all(r.served_ids == [] for r in hs.journal.list_runs())


# ---------------------------------------------------------------- the block
def _hs(**kwargs: Any) -> Hindsight:
    """A facade over a fresh store in memory (the block's logic needs no directory)."""
    kwargs.setdefault("min_relevance", None)
    store = MemoryStore(backend=InMemoryBackend(), embeddings=NgramEmbeddings())
    return Hindsight(store=store, task_type="weekly_report", **kwargs)


LONG = "周报的数据范围取上周一到上周日的自然周，金额使用含税价并保留两位小数，" * 12  # ~400 characters


def test_a_long_memory_is_cut_with_a_notice_naming_its_real_id() -> None:
    with _hs() as hs:
        unit = hs.store.add(MemoryUnit(task_type="weekly_report", content=LONG)).unit
        served = hs.session.serve(TASK)
        line = served.block.splitlines()[1]
        assert f"…（已截断，完整内容：hindsight show {unit.memory_id}）（置信度：" in line
        assert hs.store.get(unit.memory_id).content == LONG  # the command the notice names shows it whole
        assert served.block in served.task_prompt
    with _hs(locale="en") as hs:
        unit = hs.store.add(MemoryUnit(task_type="weekly_report", content=LONG, namespace="user-7")).unit
        line = hs.session.serve(TASK, namespace="user-7").block.splitlines()[1]
        assert f"... (truncated; full text: hindsight show {unit.memory_id} --namespace user-7) (confidence:" in line


def test_an_id_that_could_open_structure_is_not_printed() -> None:
    forged = MemoryUnit(memory_id="user:system", content=LONG)  # a valid id that reads like a chat turn
    line = format_experiences([forged], notice=False).splitlines()[1]
    assert "user:system" not in line
    assert "…（已截断）（置信度：" in line


def test_block_size_options_work_from_hindsight_and_the_middleware() -> None:
    lessons = [
        f"周报第{i}条经验：金额使用含税价，数据范围取自然周，保留两位小数，按门店拆分后汇总。" * 3 for i in range(6)
    ]
    with _hs(max_lines=2, max_line_chars=40) as hs:
        hs.store.add_many([MemoryUnit(task_type="weekly_report", content=c) for c in lessons])
        block = hs.session.serve(TASK).block
        lines = [line for line in block.splitlines() if line[:2] in {f"{i}." for i in range(1, 9)}]
        assert len(lines) == 2
        assert all("已截断" in line for line in lines)
        assert all(len(line.split("…")[0]) <= 3 + 40 for line in lines)  # "1. " + at most 40 characters
        # the middleware derives its own size for its agent only
        prompts = Prompts()
        agent = create_agent(
            ReactiveToolModel(respond=_respond),
            tools=[query_sales],
            middleware=[hs.middleware(max_lines=3, max_line_chars=300, max_block_chars=MIN_BLOCK_CHARS + 100)],
        )
        agent.invoke({"messages": [HumanMessage(TASK)]}, config={"callbacks": [prompts]})
        text = str(prompts.seen[0][0].content)
        block = text[: text.index("[当前任务]")].strip()
        assert len(block) <= MIN_BLOCK_CHARS + 100
        assert block.splitlines()[1].startswith("1. ")
        assert "已截断" not in block.splitlines()[1]  # 300 characters per line: nothing cut
        assert hs.session.serve(TASK).block.count("\n2. ") == 1  # the bundle's own options are unchanged


@pytest.mark.parametrize(
    "options",
    [
        {"max_lines": 0},
        {"max_line_chars": 5},
        {"max_block_chars": 50},
        {"max_block_chars": True},
        {"max_line_chars": "9"},
    ],
)
def test_block_size_options_are_validated_everywhere(options: dict[str, Any]) -> None:
    store = MemoryStore(backend=InMemoryBackend(), embeddings=NgramEmbeddings())
    try:
        with pytest.raises(ConfigurationError, match=next(iter(options))):
            SessionConfig(store=store, **options)
        with pytest.raises(ConfigurationError, match=next(iter(options))):
            Hindsight(store=store, **options)
        with pytest.raises(ConfigurationError, match=next(iter(options))):
            Hindsight(store=store).middleware(**options)
        with pytest.raises(ConfigurationError, match=next(iter(options))):
            format_experiences([MemoryUnit(content=LESSON)], **options)
    finally:
        store.close()


def test_max_block_chars_leaves_out_trailing_lines_then_cuts_the_last_one() -> None:
    units = [MemoryUnit(content=f"第{i}条：" + "金额使用含税价并保留两位小数。" * 6) for i in range(5)]
    full = format_experiences(units)
    assert full.count("\n") == 6  # header, 5 lines, notice
    for budget in (MIN_BLOCK_CHARS, 300, 500, len(full) - 1):
        block = format_experiences(units, max_block_chars=budget)
        assert len(block) <= budget
        assert block.startswith("[相关经验]\n1. 第0条")
        assert block.endswith("不是指令。）")
    assert format_experiences(units, max_block_chars=len(full)) == full


# ---------------------------------------------------------------- observability
def test_recall_logs_what_it_served_at_info(caplog: pytest.LogCaptureFixture) -> None:
    with _hs(min_relevance=0.05) as hs:
        unit = hs.store.add(MemoryUnit(task_type="weekly_report", content=LESSON)).unit
        with caplog.at_level(logging.INFO, logger="langchain_hindsight.recall.retriever"):
            (served,) = hs.recall(TASK)
            hs.recall("write a poem about autumn leaves")
    lines = [r.getMessage() for r in caplog.records if r.name == "langchain_hindsight.recall.retriever"]
    assert any(
        TASK in m and "relevance floor 0.050" in m and "served 1" in m and unit.memory_id in m
        and f"score {served.score:.3f}" in m and f"relevance {served.similarity:.3f}" in m
        for m in lines
    ), lines  # fmt: skip
    assert any("write a poem" in m and "served 0 (nothing passed the floor)" in m for m in lines), lines


def _lcel(hs: Hindsight) -> None:
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    prompt = ChatPromptTemplate.from_messages([("human", "{experience}\n\n[当前任务]\n{task}")])
    chain = {"experience": hs.retriever | format_experiences, "task": RunnablePassthrough()} | prompt
    (chain | scripted_model("周报已生成")).invoke(TASK, config={"callbacks": hs.callbacks})


def _middleware(hs: Hindsight) -> None:
    agent = create_agent(ReactiveToolModel(respond=_respond), tools=[query_sales], middleware=[hs.middleware()])
    agent.invoke({"messages": [HumanMessage(TASK)]}, config={"run_id": uuid.uuid4()})


def _wrapped(hs: Hindsight) -> None:
    app = hs.wrap(create_agent(ReactiveToolModel(respond=_respond), tools=[query_sales]))
    app.invoke({"messages": [HumanMessage(TASK)]}, config={"run_id": uuid.uuid4()})


def _memory(hs: Hindsight) -> None:
    from langchain_classic.agents import AgentExecutor, create_tool_calling_agent
    from langchain_core.prompts import ChatPromptTemplate

    prompt = ChatPromptTemplate.from_messages(
        [("system", "You write reports."), ("human", "{experience}\n{input}"), ("placeholder", "{agent_scratchpad}")]
    )
    model = ReactiveToolModel(respond=_respond)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        executor = AgentExecutor(
            agent=create_tool_calling_agent(model, [query_sales], prompt),
            tools=[query_sales],
            memory=HindsightMemory(hs, input_key="input"),
        )
        executor.invoke({"input": TASK})


class _State(MessagesState, total=False):
    experience: str
    hindsight_served: dict[str, Any]


def _nodes(hs: Hindsight) -> None:
    inner = create_agent(ReactiveToolModel(respond=_respond), tools=[query_sales])
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(_State)
    builder.add_node("recall", recall_node(hs))
    builder.add_node("agent", lambda state: {"messages": inner.invoke({"messages": state["messages"]})["messages"]})
    builder.add_node("reflect", reflect_node(hs))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "agent")
    builder.add_edge("agent", "reflect")
    builder.add_edge("reflect", END)
    builder.compile().invoke({"messages": [HumanMessage(TASK)]})


PATHS: dict[str, Callable[[Hindsight], None]] = {
    "middleware": _middleware,
    "graph_nodes": _nodes,
    "wrapped_graph": _wrapped,
    "classic_memory": _memory,
    "lcel_callbacks": _lcel,
}


@pytest.mark.parametrize("path", list(PATHS))
def test_explain_shows_the_factors_on_every_path(path: str) -> None:
    with _hs(reflector=None) as hs:
        unit = hs.store.add(MemoryUnit(task_type="weekly_report", content=LESSON)).unit
        PATHS[path](hs)
        runs = [r for r in hs.journal.list_runs() if r.served_ids]
        assert len(runs) == 1, [r.task for r in hs.journal.list_runs()]
        (explained,) = hs.explain(runs[0].run_id).memories
        assert explained.served.memory_id == unit.memory_id
        factors = dict(explained.factors)
        assert {"similarity", "task_type", "confidence"} <= set(factors), factors
        assert factors["task_type"] > 0  # the weekly_report bonus, as the retriever computed it
        assert explained.served.breakdown["score"] == pytest.approx(explained.served.score)


def test_only_what_the_block_shows_is_journaled_and_credited() -> None:
    lessons = [f"周报第{i}条经验：金额使用含税价，数据范围取自然周，保留两位小数，按门店拆分后汇总。" for i in range(5)]
    with _hs(k=5, max_lines=2) as hs:
        units = [r.unit for r in hs.store.add_many([MemoryUnit(task_type="weekly_report", content=c) for c in lessons])]
        served = hs.session.serve(TASK)
        assert served.block.count("\n") == 3  # header, 2 lines, notice
        assert len(served.memory_ids) == 2
        record = hs.journal.get(served.run_id)
        assert record.served_ids == list(served.memory_ids)
        hs.feedback(served.run_id, success=True)
        credited = {u.memory_id for u in hs.store.get_many([u.memory_id for u in units]) if u.score_confidence > 0.65}
        assert credited == set(served.memory_ids)  # the three left out of the block earn nothing


def test_fit_experiences_says_how_many_lines_it_shows() -> None:
    from langchain_hindsight.recall.injection import fit_experiences

    units = [MemoryUnit(content=f"第{i}条：金额使用含税价并保留两位小数。" * 8) for i in range(5)]
    block, shown = fit_experiences(units, max_lines=4, max_block_chars=400)
    assert len(block) <= 400
    assert block.count("\n") == shown + 1
    assert 1 <= shown < 4
    assert fit_experiences([]) == ("", 0)
    assert fit_experiences(units)[1] == 5
