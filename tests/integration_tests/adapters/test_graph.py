"""with_hindsight / recall_node / reflect_node on real LangGraph graphs with InMemorySaver."""

from __future__ import annotations

import asyncio
import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_hindsight import (
    MemoryStore,
    MemoryUnit,
    Reflector,
    RunJournal,
    Trajectory,
    recall_node,
    reflect_node,
    with_hindsight,
)
from langchain_hindsight.errors import ReflectionError
from langchain_hindsight.testing import ReactiveToolModel, call
from tests.fakes import Prompts

BLOCK = "[相关经验]"
LESSON = "读取 ERP 导出的销售 CSV 时，read_csv 需要指定 encoding='gbk' 和 delimiter=';'"


def _count(messages: list[BaseMessage]) -> int:
    return sum(str(m.content).count(BLOCK) for m in messages)


def _all_checkpoints(saver: InMemorySaver) -> str:
    return "\n".join(repr(c.checkpoint) for c in saver.list(None))


@pytest.fixture
def lesson(store: MemoryStore) -> MemoryUnit:
    return store.add(MemoryUnit(task_type="data_cleaning", content=LESSON, tags=["csv"])).unit


def _chat_graph() -> Any:
    """A hand-written message graph: one node calling a chat model."""
    model = ReactiveToolModel(respond=lambda messages: f"answered {len(messages)} messages")

    def chatbot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("chatbot", chatbot)
    builder.add_edge(START, "chatbot")
    builder.add_edge("chatbot", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_with_hindsight_injects_ephemerally_in_a_message_graph(store: MemoryStore, lesson: MemoryUnit) -> None:
    graph = _chat_graph()
    app = with_hindsight(graph, store, reflect=False)
    prompts = Prompts()
    config: Any = {"configurable": {"thread_id": "1"}, "callbacks": [prompts]}
    task = HumanMessage("统计 sales.csv 的销售额合计", id="task-1")
    out = app.invoke({"messages": [task]}, config=config)
    assert [_count(p) for p in prompts.seen] == [1]
    assert out["messages"][0].content == task.content  # the task comes back as it was
    assert out["messages"][-1].content == "answered 1 messages"
    assert _count(out["messages"]) == 0
    assert BLOCK not in _all_checkpoints(app.checkpointer)
    # a second turn on the thread: the history is kept, the block is fresh and single
    prompts.seen.clear()
    out = app.invoke({"messages": [HumanMessage("再统计 sales_feb.csv")]}, config=config)
    assert [_count(p) for p in prompts.seen] == [1]
    assert [m.type for m in out["messages"]] == ["human", "ai", "human", "ai"]
    assert BLOCK not in _all_checkpoints(app.checkpointer)
    assert store.get(lesson.memory_id).access_count == 2  # credited after each run


def test_with_hindsight_wraps_create_agent_and_learns(store: MemoryStore) -> None:
    @tool
    def read_csv(path: str, encoding: str = "utf-8") -> str:
        """Read a CSV file."""
        if encoding != "gbk":
            raise ToolException("UnicodeDecodeError: not utf-8")
        return "3 rows"

    read_csv.handle_tool_error = True

    def respond(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if last.type == "tool":
            return call("read_csv", path="a.csv", encoding="gbk") if "Error" in str(last.content) else "3 rows"
        return call("read_csv", path="a.csv")

    agent = create_agent(ReactiveToolModel(respond=respond), tools=[read_csv], checkpointer=InMemorySaver())
    journal = RunJournal(store)
    app = with_hindsight(agent, store, journal=journal, task_type="data_cleaning")
    run_id = str(uuid.uuid4())
    app.invoke(
        {"messages": [HumanMessage("清洗 a.csv")]},
        config={"configurable": {"thread_id": "t", "user_id": "alice"}, "run_id": run_id},
    )
    record = journal.get(run_id, namespace="alice")
    assert record.outcome == "success"
    assert record.produced, "the error→fix rule should have produced a lesson"
    lesson = store.get(record.produced[0], namespace="alice")
    assert "gbk" in lesson.content
    assert lesson.task_type == "data_cleaning"
    assert store.count(namespace="default") == 0  # the namespace came from config["configurable"]["user_id"]


class TaskState(TypedDict, total=False):
    question: str
    experience: str
    answer: str
    log: Annotated[list[str], operator.add]


def test_with_hindsight_writes_the_block_into_a_key_for_other_schemas(store: MemoryStore, lesson: MemoryUnit) -> None:
    seen: list[str] = []

    def answer(state: TaskState) -> dict[str, Any]:
        seen.append(state.get("experience", ""))
        return {"answer": f"done {state['question']}"}

    builder = StateGraph(TaskState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    app = with_hindsight(
        builder.compile(), store, input_key="question", block_key="experience", output_key="answer", reflect=False
    )
    out = app.invoke({"question": "统计 sales.csv 的销售额"})
    assert seen[0].startswith(BLOCK)
    assert seen[0].count(BLOCK) == 1
    assert out["answer"] == "done 统计 sales.csv 的销售额"
    assert store.get(lesson.memory_id).access_count == 1  # "success": an answer was produced


def test_with_hindsight_async(store: MemoryStore, lesson: MemoryUnit) -> None:
    app = with_hindsight(_chat_graph(), store, reflect=False)
    prompts = Prompts()

    async def main() -> Any:
        return await app.ainvoke(
            {"messages": [HumanMessage("统计 sales.csv 的销售额合计")]},
            config={"configurable": {"thread_id": "a"}, "callbacks": [prompts]},
        )

    out = asyncio.run(main())
    assert [_count(p) for p in prompts.seen] == [1]
    assert _count(out["messages"]) == 0


class NodeState(TypedDict, total=False):
    question: str
    experience: str
    answer: str
    hindsight_served: dict[str, Any]


def _node_graph(store: MemoryStore, reflector: Any = None, on_error: Any = "log") -> Any:
    def answer(state: NodeState) -> dict[str, Any]:
        # says it applied the lesson (issue 33: a run credits only what it used)
        return {
            "answer": f"{state['question']} -> following experience 1, used {state['experience'].count(BLOCK)} block(s)"
        }

    builder = StateGraph(NodeState)
    builder.add_node("recall", recall_node(store, input_key="question"))
    builder.add_node("answer", answer)
    builder.add_node(
        "reflect",
        reflect_node(store, input_key="question", output_key="answer", reflector=reflector, on_error=on_error),
    )
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "answer")
    builder.add_edge("answer", "reflect")
    builder.add_edge("reflect", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_recall_and_reflect_nodes_in_a_user_graph(store: MemoryStore, lesson: MemoryUnit) -> None:
    app = _node_graph(store)
    out = app.invoke({"question": "统计 sales.csv 的销售额"}, config={"configurable": {"thread_id": "n"}})
    assert out["answer"].endswith("used 1 block(s)")
    assert out["hindsight_served"]["memory_ids"] == [lesson.memory_id]
    after = store.get(lesson.memory_id)
    assert after.access_count == 1
    assert after.confidence == pytest.approx(lesson.score_confidence + 0.05)


class ExplodingReflector(Reflector):
    def reflect(self, traj: Trajectory) -> list[MemoryUnit]:
        raise ReflectionError("model unreachable")


def test_reflection_errors_never_break_the_graph_unless_asked(store: MemoryStore, lesson: MemoryUnit) -> None:
    broken = ExplodingReflector(store=store)
    out = _node_graph(store, reflector=broken).invoke(
        {"question": "统计 sales.csv"}, config={"configurable": {"thread_id": "x"}}
    )
    assert out["answer"].startswith("统计 sales.csv")
    with pytest.raises(ReflectionError, match="model unreachable"):
        _node_graph(store, reflector=broken, on_error="raise").invoke(
            {"question": "统计 sales.csv"}, config={"configurable": {"thread_id": "y"}}
        )


def test_with_hindsight_rejects_a_plain_runnable(store: MemoryStore) -> None:
    from langchain_core.runnables import RunnableLambda

    from langchain_hindsight.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="compiled StateGraph"):
        with_hindsight(RunnableLambda(lambda x: x), store)  # type: ignore[arg-type]
