"""The adapters recall with the conversation's last human turns, not the last message alone."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_hindsight import HindsightMiddleware, MemoryStore, MemoryUnit
from langchain_hindsight.capture.messages import BLOCK_ID_PREFIX, INJECTED_MARKER, recall_query
from langchain_hindsight.testing import ReactiveToolModel
from tests.fakes import Prompts

LESSON = "读取 ERP 导出的销售 CSV 时，read_csv 需要指定 encoding='gbk' 和 delimiter=';'"
FOLLOW_UP = "好的，那就按这个来吧"


def test_the_last_two_human_turns_oldest_first() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("第一轮的话题"),
        AIMessage("好的"),
        HumanMessage("读取 ERP 导出的销售 CSV"),
        AIMessage("需要我做什么？"),
        ToolMessage("ok", tool_call_id="1"),
        HumanMessage(FOLLOW_UP),
    ]
    assert recall_query(messages) == f"读取 ERP 导出的销售 CSV\n{FOLLOW_UP}"
    assert recall_query(messages, turns=1) == FOLLOW_UP
    assert recall_query([HumanMessage("只有一句")]) == "只有一句"
    assert recall_query([AIMessage("no human")]) == ""


def test_injected_blocks_and_blank_turns_are_skipped() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("earlier task"),
        HumanMessage("[相关经验]\n1. x", id=BLOCK_ID_PREFIX + "abc"),
        HumanMessage("[相关经验] … [当前任务] old", additional_kwargs={INJECTED_MARKER: True}),
        HumanMessage("   "),
        HumanMessage("current task"),
    ]
    assert recall_query(messages) == "earlier task\ncurrent task"


def _agent(store: MemoryStore) -> Any:
    return create_agent(
        ReactiveToolModel(respond=lambda messages: "ok"),
        middleware=[HindsightMiddleware(store, reflect=False)],
        checkpointer=InMemorySaver(),
    )


def test_a_follow_up_in_a_thread_is_served_what_the_turn_before_it_names(store: MemoryStore) -> None:
    """The follow-up alone names nothing the lesson is about; with the turn before it, the lesson is served."""
    store.add(MemoryUnit(task_type="data_cleaning", content=LESSON, tags=["csv", "encoding"]))
    alone = _agent(store)
    prompts = Prompts()
    alone.invoke(
        {"messages": [HumanMessage(FOLLOW_UP)]}, config={"configurable": {"thread_id": "a"}, "callbacks": [prompts]}
    )
    assert "[相关经验]" not in str(prompts.seen[0][-1].content)

    agent = _agent(store)
    config: Any = {"configurable": {"thread_id": "b"}, "callbacks": [prompts]}
    agent.invoke({"messages": [HumanMessage("帮我读取 ERP 导出的销售 CSV 文件")]}, config=config)
    prompts.seen.clear()
    agent.invoke({"messages": [HumanMessage(FOLLOW_UP)]}, config=config)
    task = [m for m in prompts.seen[0] if m.type == "human"][-1]
    assert "[相关经验]" in str(task.content)
    assert "gbk" in str(task.content)
    assert FOLLOW_UP in str(task.content)  # the task itself is still the last turn
