"""The adapters recall with the conversation's last human turns, not the last message alone.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/adapters/test_recall_query.py``.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_hindsight import HindsightMiddleware, MemoryStore, MemoryUnit
from langchain_hindsight.recall.ranking import FloorRule
from langchain_hindsight.testing import ReactiveToolModel
from tests.fakes import Prompts
from tests.unit_tests.adapters.test_recall_query import FOLLOW_UP

LESSON = "读取 ERP 导出的销售 CSV 时，read_csv 需要指定 encoding='gbk' 和 delimiter=';'"


PER_CANDIDATE = FloorRule(scope="candidate")
"""Each memory judged on the query alone: what the recall query carries decides (the default floor serves a ranking
with any evidence, and an acknowledgement like FOLLOW_UP reaches the lesson with noise-level evidence, issue 33)."""


def _agent(store: MemoryStore) -> Any:
    return create_agent(
        ReactiveToolModel(respond=lambda messages: "ok"),
        middleware=[HindsightMiddleware(store, reflect=False, min_relevance=PER_CANDIDATE)],
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
