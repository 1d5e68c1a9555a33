"""HindsightMiddleware with real create_agent, InMemorySaver, the real store and a scripted model.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/adapters/test_middleware.py``.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_hindsight import HindsightMiddleware, HindsightRetriever, MemoryStore, MemoryUnit, RunJournal
from langchain_hindsight.capture.messages import BLOCK_ID_PREFIX
from langchain_hindsight.errors import HindsightError, StoreError
from langchain_hindsight.testing import ReactiveToolModel, call
from tests.fakes import Prompts
from tests.unit_tests.adapters.test_middleware import read_csv

BLOCK = "[相关经验]"


LESSON = "读取 ERP 导出的销售 CSV 时，read_csv 需要指定 encoding='gbk' 和 delimiter=';'"


def _respond(messages: list[BaseMessage]) -> Any:
    """One tool call, then an answer: two model calls per task."""
    if messages[-1].type == "tool":
        return f"done: {messages[-1].content}"
    return call("read_csv", path="sales.csv", encoding="gbk")


def _agent(store: MemoryStore, **kwargs: Any) -> Any:
    kwargs.setdefault("reflect", False)
    return create_agent(
        ReactiveToolModel(respond=_respond),
        tools=[read_csv],
        middleware=[HindsightMiddleware(store, **kwargs)],
        checkpointer=InMemorySaver(),
    )


def _count(messages: list[BaseMessage]) -> int:
    return sum(str(m.content).count(BLOCK) for m in messages)


def _checkpoint_text(agent: Any) -> str:
    return "\n".join(repr(c.checkpoint) + repr(c.metadata) for c in agent.checkpointer.list(None))


@pytest.fixture
def lesson_store(store: MemoryStore) -> tuple[MemoryStore, MemoryUnit]:
    unit = store.add(MemoryUnit(task_type="data_cleaning", content=LESSON, tags=["csv", "encoding"])).unit
    return store, unit


def test_block_once_per_model_call_and_never_in_checkpoints(lesson_store: tuple[MemoryStore, MemoryUnit]) -> None:
    store, _ = lesson_store
    agent = _agent(store)
    prompts = Prompts()
    config: Any = {"configurable": {"thread_id": "t1"}, "callbacks": [prompts]}
    out = agent.invoke({"messages": [HumanMessage("统计 sales.csv 的销售额合计")]}, config=config)
    assert len(prompts.seen) == 2  # tool call, then the answer
    assert [_count(p) for p in prompts.seen] == [1, 1]
    assert LESSON.split("，")[0] in prompts.seen[0][0].content
    assert "[当前任务]" in prompts.seen[0][0].content  # seed §4.4 task prompt, in the user turn
    assert all(m.type != "system" or BLOCK not in str(m.content) for p in prompts.seen for m in p)
    assert _count(out["messages"]) == 0
    assert out["messages"][0].content == "统计 sales.csv 的销售额合计"
    assert BLOCK not in _checkpoint_text(agent)

    # Second task on the same thread: recalled again, still once per call, state still clean.
    prompts.seen.clear()
    out = agent.invoke({"messages": [HumanMessage("再统计 sales_feb.csv 的销售额")]}, config=config)
    assert [_count(p) for p in prompts.seen] == [1, 1]
    task_messages = [m for m in prompts.seen[0] if m.type == "human"]
    assert [_count([m]) for m in task_messages] == [0, 1]  # only the current task carries the block
    assert _count(out["messages"]) == 0
    assert BLOCK not in _checkpoint_text(agent)


def test_separate_message_placement_has_a_stable_id(lesson_store: tuple[MemoryStore, MemoryUnit]) -> None:
    store, _ = lesson_store
    agent = _agent(store, placement="separate_message")
    prompts = Prompts()
    task = HumanMessage("统计 sales.csv 的销售额合计", id="task-1")
    agent.invoke({"messages": [task]}, config={"configurable": {"thread_id": "t"}, "callbacks": [prompts]})
    for prompt in prompts.seen:
        assert _count(prompt) == 1
        block = prompt[0]
        assert block.id == BLOCK_ID_PREFIX + "task-1"
        assert prompt[1].content == "统计 sales.csv 的销售额合计"  # the task itself is untouched
    assert BLOCK not in _checkpoint_text(agent)


def test_outcome_credits_served_memories_and_journal_records_the_run(
    lesson_store: tuple[MemoryStore, MemoryUnit],
) -> None:
    store, unit = lesson_store
    journal = RunJournal(store)
    agent = _agent(store, journal=journal)
    run_id = str(uuid.uuid4())
    agent.invoke(
        {"messages": [HumanMessage("统计 sales.csv 的销售额合计")]},
        config={"configurable": {"thread_id": "t"}, "run_id": run_id},
    )
    after = store.get(unit.memory_id)
    assert after.access_count == unit.access_count + 1
    assert after.confidence == pytest.approx(unit.score_confidence + 0.05)
    record = journal.get(run_id)
    assert record.served_ids == [unit.memory_id]
    assert record.outcome == "success"
    assert record.served[0].breakdown  # the score breakdown is kept for explanation


def test_apply_outcome_false_leaves_confidence_alone(lesson_store: tuple[MemoryStore, MemoryUnit]) -> None:
    store, unit = lesson_store
    agent = _agent(store, apply_outcome=False)
    agent.invoke(
        {"messages": [HumanMessage("统计 sales.csv 的销售额合计")]}, config={"configurable": {"thread_id": "t"}}
    )
    assert store.get(unit.memory_id).confidence == unit.confidence


def test_recall_false_injects_nothing(lesson_store: tuple[MemoryStore, MemoryUnit]) -> None:
    store, _ = lesson_store
    agent = _agent(store, recall=False)
    prompts = Prompts()
    agent.invoke(
        {"messages": [HumanMessage("统计 sales.csv 的销售额合计")]},
        config={"configurable": {"thread_id": "t"}, "callbacks": [prompts]},
    )
    assert all(_count(p) == 0 for p in prompts.seen)


def test_namespace_comes_from_configurable_user_id(store: MemoryStore) -> None:
    store.add(MemoryUnit(task_type="data_cleaning", content=LESSON, namespace="alice"))
    agent = _agent(store)
    for user, expected in (("alice", 1), ("bob", 0)):
        prompts = Prompts()
        agent.invoke(
            {"messages": [HumanMessage("统计 sales.csv 的销售额合计")]},
            config={"configurable": {"thread_id": user, "user_id": user}, "callbacks": [prompts]},
        )
        assert [_count(p) for p in prompts.seen] == [expected, expected]


class BrokenRetriever(HindsightRetriever):
    def recall(self, query: str, **kwargs: Any) -> list[Any]:
        raise StoreError("chroma is down")

    def recall_result(self, query: str, **kwargs: Any) -> Any:
        raise StoreError("chroma is down")


def test_recall_failure_never_breaks_the_agent_unless_asked(store: MemoryStore) -> None:
    broken = BrokenRetriever(store=store)
    agent = _agent(store, retriever=broken)
    out = agent.invoke({"messages": [HumanMessage("统计 sales.csv")]}, config={"configurable": {"thread_id": "t"}})
    assert out["messages"][-1].content.startswith("done")
    strict = _agent(store, retriever=broken, on_error="raise")
    with pytest.raises(HindsightError, match="chroma is down"):
        strict.invoke({"messages": [HumanMessage("统计 sales.csv")]}, config={"configurable": {"thread_id": "t"}})


def test_async_agent_injects_once_and_credits(lesson_store: tuple[MemoryStore, MemoryUnit]) -> None:
    store, unit = lesson_store
    agent = _agent(store)
    prompts = Prompts()

    async def main() -> Any:
        return await agent.ainvoke(
            {"messages": [HumanMessage("统计 sales.csv 的销售额合计")]},
            config={"configurable": {"thread_id": "t"}, "callbacks": [prompts]},
        )

    out = asyncio.run(main())
    assert [_count(p) for p in prompts.seen] == [1, 1]
    assert _count(out["messages"]) == 0
    assert store.get(unit.memory_id).access_count == unit.access_count + 1


def test_unknown_placement_is_a_configuration_error(store: MemoryStore) -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.graph import MessagesState, StateGraph

    from langchain_hindsight import ConfigurationError, with_hindsight

    with pytest.raises(ConfigurationError, match="placement"):
        HindsightMiddleware(store, placement="system_prompt")  # type: ignore[arg-type]
    model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.set_entry_point("model")
    with pytest.raises(ConfigurationError, match="placement"):
        with_hindsight(builder.compile(), store, placement="system_prompt")  # type: ignore[arg-type]
