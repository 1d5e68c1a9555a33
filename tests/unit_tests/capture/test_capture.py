"""TrajectoryRecorder: one trajectory per root run, from real agents, graphs, chains (issue 4, capture)."""

from __future__ import annotations

import asyncio
import logging
import uuid
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware
from langchain_core.messages import AnyMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import ToolException, tool
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from langchain_hindsight import ConfigurationError, Trajectory, TrajectoryRecorder
from langchain_hindsight._text import clip_text
from langchain_hindsight.capture._text import task_from_inputs
from langchain_hindsight.testing import ReactiveToolModel, call, scripted_model
from tests.fakes import GBK_TEXT, read_file


def _tool_errors_to_model() -> ToolErrorMiddleware:
    return ToolErrorMiddleware(lambda e, request: f"{type(e).__name__}: {e}")


def _encoding_script(path: Path) -> list[Any]:
    return [
        call("read_file", path=str(path), encoding="utf-8"),
        call("read_file", path=str(path), encoding="gbk"),
        "文件有2行数据。",
    ]


def _kinds(traj: Trajectory) -> list[str]:
    return [s.type for s in traj.steps]


def _assert_encoding_trajectory(traj: Trajectory, path: Path) -> None:
    assert traj.task == "读取客户.csv并统计行数"
    assert traj.outcome == "success"
    assert _kinds(traj) == ["tool_call", "error", "tool_call", "tool_result", "final_answer"]
    call1, error, call2, result, final = traj.steps
    assert call1.tool_name == error.tool_name == call2.tool_name == result.tool_name == "read_file"
    assert call1.tool_args == {"path": str(path), "encoding": "utf-8"}
    assert error.tool_args == call1.tool_args
    assert error.error_type == "UnicodeDecodeError"
    assert "'utf-8' codec can't decode" in (error.error_message or "")
    assert call2.tool_args == {"path": str(path), "encoding": "gbk"}
    assert result.content == GBK_TEXT
    assert final.content == traj.final_answer == "文件有2行数据。"
    assert all(s.timestamp >= traj.started_at for s in traj.steps)
    assert traj.ended_at is not None
    assert traj.ended_at >= traj.steps[-1].timestamp


# ---------------------------------------------------------------- frameworks


def test_create_agent_real_unicode_error_then_fix(gbk_csv: Path) -> None:
    recorder = TrajectoryRecorder()
    agent = create_agent(scripted_model(*_encoding_script(gbk_csv)), [read_file], middleware=[_tool_errors_to_model()])
    out = agent.invoke({"messages": [("user", "读取客户.csv并统计行数")]}, config={"callbacks": [recorder]})
    assert out["messages"][-1].content == "文件有2行数据。"
    traj = recorder.last_trajectory
    assert traj is not None
    _assert_encoding_trajectory(traj, gbk_csv)
    assert recorder.get(traj.run_id) == traj


async def test_create_agent_async(gbk_csv: Path) -> None:
    recorder = TrajectoryRecorder()
    agent = create_agent(scripted_model(*_encoding_script(gbk_csv)), [read_file], middleware=[_tool_errors_to_model()])
    await agent.ainvoke({"messages": [("user", "读取客户.csv并统计行数")]}, config={"callbacks": [recorder]})
    assert recorder.last_trajectory is not None
    _assert_encoding_trajectory(recorder.last_trajectory, gbk_csv)


def test_create_agent_streamed(gbk_csv: Path) -> None:
    recorder = TrajectoryRecorder()
    agent = create_agent(scripted_model(*_encoding_script(gbk_csv)), [read_file], middleware=[_tool_errors_to_model()])
    for _ in agent.stream(
        {"messages": [("user", "读取客户.csv并统计行数")]}, config={"callbacks": [recorder]}, stream_mode="messages"
    ):
        pass
    assert recorder.last_trajectory is not None
    _assert_encoding_trajectory(recorder.last_trajectory, gbk_csv)


def test_unhandled_tool_error_is_a_failed_run(gbk_csv: Path) -> None:
    recorder = TrajectoryRecorder()
    agent = create_agent(scripted_model(call("read_file", path=str(gbk_csv))), [read_file])
    with pytest.raises(UnicodeDecodeError):
        agent.invoke({"messages": [("user", "读取客户.csv")]}, config={"callbacks": [recorder]})
    traj = recorder.last_trajectory
    assert traj is not None
    assert traj.outcome == "failure"
    assert traj.error is not None
    assert traj.error.startswith("UnicodeDecodeError: ")
    assert _kinds(traj) == ["tool_call", "error"]  # the root error repeats the tool error: recorded once
    assert traj.final_answer is None


def test_create_react_agent_with_handled_errors(gbk_csv: Path) -> None:
    from langgraph.prebuilt import create_react_agent

    recorder = TrajectoryRecorder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of create_agent
        agent = create_react_agent(
            scripted_model(*_encoding_script(gbk_csv)), ToolNode([read_file], handle_tool_errors=True)
        )
    agent.invoke({"messages": [("user", "读取客户.csv并统计行数")]}, config={"callbacks": [recorder]})
    assert recorder.last_trajectory is not None
    _assert_encoding_trajectory(recorder.last_trajectory, gbk_csv)


def test_hand_written_state_graph(gbk_csv: Path) -> None:
    class State(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages]

    model = scripted_model(*_encoding_script(gbk_csv))

    def agent_node(state: State) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(State)
    graph.add_node("agent", agent_node)
    graph.add_node("tools", ToolNode([read_file], handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    recorder = TrajectoryRecorder()
    graph.compile().invoke({"messages": [("user", "读取客户.csv并统计行数")]}, config={"callbacks": [recorder]})
    assert recorder.last_trajectory is not None
    _assert_encoding_trajectory(recorder.last_trajectory, gbk_csv)


def test_classic_agent_executor(gbk_csv: Path) -> None:
    from langchain_classic.agents import AgentExecutor, create_tool_calling_agent

    prompt = ChatPromptTemplate.from_messages([("human", "{input}"), ("placeholder", "{agent_scratchpad}")])
    model = scripted_model(call("read_file", path=str(gbk_csv), encoding="gbk"), "文件有2行数据。")
    executor = AgentExecutor(agent=create_tool_calling_agent(model, [read_file], prompt), tools=[read_file])
    recorder = TrajectoryRecorder()
    out = executor.invoke({"input": "读取客户.csv并统计行数"}, config={"callbacks": [recorder]})
    assert out["output"] == "文件有2行数据。"
    traj = recorder.last_trajectory
    assert traj is not None
    assert traj.task == "读取客户.csv并统计行数"
    assert _kinds(traj) == ["tool_call", "tool_result", "final_answer"]
    assert traj.steps[0].tool_args == {"path": str(gbk_csv), "encoding": "gbk"}
    assert traj.outcome == "success"
    assert traj.final_answer == "文件有2行数据。"


def test_classic_agent_executor_tool_error_is_recorded(gbk_csv: Path) -> None:
    from langchain_classic.agents import AgentExecutor, create_tool_calling_agent

    prompt = ChatPromptTemplate.from_messages([("human", "{input}"), ("placeholder", "{agent_scratchpad}")])
    model = scripted_model(call("read_file", path=str(gbk_csv)), "unused")
    executor = AgentExecutor(agent=create_tool_calling_agent(model, [read_file], prompt), tools=[read_file])
    recorder = TrajectoryRecorder()
    with pytest.raises(UnicodeDecodeError):
        executor.invoke({"input": "读取客户.csv"}, config={"callbacks": [recorder]})
    traj = recorder.last_trajectory
    assert traj is not None
    assert traj.outcome == "failure"
    assert traj.steps[1].error_type == "UnicodeDecodeError"
    assert traj.steps[1].tool_name == "read_file"


def test_handled_tool_exception_shows_as_error_step(tmp_path: Path) -> None:
    @tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        raise ToolException(f"404 for {url}")

    fetch.handle_tool_error = True
    recorder = TrajectoryRecorder()
    agent = create_agent(scripted_model(call("fetch", url="http://x"), "没找到"), [fetch])
    agent.invoke({"messages": [("user", "抓取 http://x")]}, config={"callbacks": [recorder]})
    traj = recorder.last_trajectory
    assert traj is not None
    assert _kinds(traj) == ["tool_call", "error", "final_answer"]
    assert traj.steps[1].error_type == "ToolError"
    assert "404 for http://x" in traj.steps[1].content


def test_lcel_chain_sync_and_async() -> None:
    recorder = TrajectoryRecorder()
    chain = (
        ChatPromptTemplate.from_messages([("human", "把{word}翻译成英文")])
        | scripted_model("hello")
        | StrOutputParser()
    )
    assert chain.invoke({"word": "你好"}, config={"callbacks": [recorder]}) == "hello"
    traj = recorder.last_trajectory
    assert traj is not None
    assert (traj.task, traj.outcome, traj.final_answer, _kinds(traj)) == ("你好", "success", "hello", ["final_answer"])
    chain2 = ChatPromptTemplate.from_messages([("human", "{q}")]) | scripted_model("world") | StrOutputParser()
    asyncio.run(chain2.ainvoke({"q": "say world"}, config={"callbacks": [recorder]}))
    assert recorder.last_trajectory is not None
    assert recorder.last_trajectory.final_answer == "world"
    assert recorder.last_trajectory.task == "say world"
    assert len(recorder.finished_run_ids()) == 2


def test_model_called_directly_is_its_own_root() -> None:
    recorder = TrajectoryRecorder()
    scripted_model("pong").invoke("ping", config={"callbacks": [recorder]})
    traj = recorder.last_trajectory
    assert traj is not None
    assert (traj.task, traj.final_answer, traj.outcome) == ("ping", "pong", "success")


# ---------------------------------------------------------------- concurrency


def _lookup_agent() -> Any:
    @tool
    def lookup(city: str) -> str:
        """Weather of a city."""
        return f"{city}: sunny"

    def respond(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if last.type == "human":
            return call("lookup", city=str(last.content))
        return f"answer for {last.content}"

    return create_agent(ReactiveToolModel(respond=respond), [lookup])


def _check_lookup(traj: Trajectory, city: str) -> None:
    assert traj.task == city
    assert _kinds(traj) == ["tool_call", "tool_result", "final_answer"]
    assert traj.steps[0].tool_args == {"city": city}
    assert traj.steps[1].content == f"{city}: sunny"
    assert traj.final_answer == f"answer for {city}: sunny"


def test_concurrent_threads_never_mix() -> None:
    recorder = TrajectoryRecorder()
    agent = _lookup_agent()
    cities = [f"city{i}" for i in range(8)]
    ids = {c: uuid.uuid4() for c in cities}
    with ThreadPoolExecutor(4) as pool:
        list(
            pool.map(
                lambda c: agent.invoke({"messages": [("user", c)]}, config={"callbacks": [recorder], "run_id": ids[c]}),
                cities,
            )
        )
    for city in cities:
        traj = recorder.get(ids[city])
        assert traj is not None
        _check_lookup(traj, city)


async def test_concurrent_asyncio_gather_never_mix() -> None:
    recorder = TrajectoryRecorder()
    agent = _lookup_agent()
    ids = [uuid.uuid4(), uuid.uuid4()]
    await asyncio.gather(
        agent.ainvoke({"messages": [("user", "北京")]}, config={"callbacks": [recorder], "run_id": ids[0]}),
        agent.ainvoke({"messages": [("user", "上海")]}, config={"callbacks": [recorder], "run_id": ids[1]}),
    )
    for rid, city in zip(ids, ["北京", "上海"], strict=True):
        traj = recorder.get(rid)
        assert traj is not None
        _check_lookup(traj, city)
    assert recorder.live_run_ids() == []


# ---------------------------------------------------------------- working memory, outcome, feedback, retention


def test_live_trajectory_is_readable_during_the_run_and_outcome_can_be_marked() -> None:
    recorder = TrajectoryRecorder()
    run_id = uuid.uuid4()
    seen: list[Trajectory] = []

    @tool
    def peek(note: str) -> str:
        """Read the agent's working memory."""
        live = recorder.get(run_id)
        assert live is not None
        seen.append(live)
        recorder.mark_outcome(run_id, "failure")  # e.g. a checker tool decides the task failed
        return "ok"

    agent = create_agent(scripted_model(call("peek", note="n"), "done"), [peek])
    agent.invoke({"messages": [("user", "task")]}, config={"callbacks": [recorder], "run_id": run_id})
    assert seen[0].outcome == "unknown"
    assert seen[0].ended_at is None
    assert _kinds(seen[0]) == ["tool_call"]
    assert seen[0].steps[0].tool_args == {"note": "n"}
    done = recorder.get(run_id)
    assert done is not None
    assert done.outcome == "failure"
    assert recorder.mark_outcome(run_id, "success").outcome == "success"
    with_feedback = recorder.add_feedback(str(run_id), "不对，应该先检查文件编码")
    assert with_feedback.steps[-1].type == "feedback"
    assert with_feedback.steps[-1].content == "不对，应该先检查文件编码"
    assert recorder.last_trajectory == with_feedback
    assert recorder.release(run_id) is True
    assert recorder.get(run_id) is None
    assert recorder.release(run_id) is False
    with pytest.raises(ConfigurationError):
        recorder.mark_outcome(run_id, "success")
    with pytest.raises(ConfigurationError):
        recorder.mark_outcome(uuid.uuid4(), "great")  # type: ignore[arg-type]


def test_metadata_sets_namespace_and_task_type() -> None:
    recorder = TrajectoryRecorder(namespace="team")
    chain = ChatPromptTemplate.from_messages([("human", "{q}")]) | scripted_model("a", "b")
    chain.invoke(
        {"q": "x"},
        config={"callbacks": [recorder], "metadata": {"hindsight_namespace": "alice", "hindsight_task_type": "翻译"}},
    )
    traj = recorder.last_trajectory
    assert traj is not None
    assert (traj.namespace, traj.task_type) == ("alice", "翻译")
    chain.invoke({"q": "y"}, config={"callbacks": [recorder]})
    assert recorder.last_trajectory is not None
    assert recorder.last_trajectory.namespace == "team"


def test_long_payloads_are_cut_head_and_tail() -> None:
    @tool
    def dump() -> str:
        """Return a big payload."""
        return "HEAD" + "x" * 50_000 + "TAIL"

    recorder = TrajectoryRecorder(max_content_chars=300)
    create_agent(scripted_model(call("dump"), "ok"), [dump]).invoke(
        {"messages": [("user", "dump")]}, config={"callbacks": [recorder]}
    )
    traj = recorder.last_trajectory
    assert traj is not None
    result = traj.steps[1]
    assert result.truncated is True
    assert result.content.startswith("HEAD")
    assert result.content.endswith("TAIL")
    assert "省略49708字符" in result.content  # the cut is recorded: 50008 - 300 characters
    assert len(result.content) < 350


def test_clip_text_keeps_short_text() -> None:
    assert clip_text("abc", 10) == ("abc", False)
    text, cut = clip_text("0123456789" * 10, 30, "|{cut}|")
    assert cut
    assert text == "01234567890123456789|70|0123456789"


def test_task_from_inputs_forms() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    assert task_from_inputs({"messages": [SystemMessage("s"), HumanMessage("任务"), HumanMessage("later")]}) == "任务"
    assert task_from_inputs({"messages": [("system", "s"), ("user", "t1")]}) == "t1"
    assert task_from_inputs({"messages": [{"role": "user", "content": "t2"}]}) == "t2"
    assert task_from_inputs({"input": "t3", "chat_history": []}) == "t3"
    assert task_from_inputs("t4") == "t4"
    assert task_from_inputs([AIMessage("a")]) == ""
    assert task_from_inputs({"n": 1}) == ""


def test_retention_is_bounded() -> None:
    recorder = TrajectoryRecorder(max_finished=2)
    chain = ChatPromptTemplate.from_messages([("human", "{q}")]) | scripted_model("1", "2", "3")
    for q in ("a", "b", "c"):
        chain.invoke({"q": q}, config={"callbacks": [recorder]})
    kept = [recorder.get(r) for r in recorder.finished_run_ids()]
    assert [t.task for t in kept if t is not None] == ["b", "c"]


def test_on_finish_future_releases_the_trajectory() -> None:
    futures: list[Future[list[Any]]] = []

    def on_finish(traj: Trajectory) -> Future[list[Any]]:
        future: Future[list[Any]] = Future()
        futures.append(future)
        return future

    recorder = TrajectoryRecorder(on_finish=on_finish)
    (ChatPromptTemplate.from_messages([("human", "{q}")]) | scripted_model("r")).invoke(
        {"q": "x"}, config={"callbacks": [recorder]}
    )
    assert len(recorder.finished_run_ids()) == 1
    futures[0].set_result([])
    assert recorder.finished_run_ids() == []  # released after reflection
    assert recorder.last_trajectory is not None  # the last one stays readable


def test_recorder_errors_never_reach_the_agent(caplog: pytest.LogCaptureFixture) -> None:
    def broken(traj: Trajectory) -> None:
        raise RuntimeError("hook exploded")

    recorder = TrajectoryRecorder(on_finish=broken)
    chain = ChatPromptTemplate.from_messages([("human", "{q}")]) | scripted_model("1", "2") | StrOutputParser()
    with caplog.at_level(logging.WARNING, logger="langchain_hindsight.capture.recorder"):
        assert chain.invoke({"q": "a"}, config={"callbacks": [recorder]}) == "1"
        assert chain.invoke({"q": "b"}, config={"callbacks": [recorder]}) == "2"
    warnings_ = [r for r in caplog.records if r.name == "langchain_hindsight.capture.recorder"]
    assert len(warnings_) == 1  # logged once, then swallowed quietly
    assert "on_chain_end" in warnings_[0].getMessage()


def test_invalid_options() -> None:
    with pytest.raises(ConfigurationError):
        TrajectoryRecorder(max_finished=0)
    with pytest.raises(ConfigurationError):
        TrajectoryRecorder(max_content_chars=5)
    with pytest.raises(ConfigurationError):
        TrajectoryRecorder(namespace=" ")
    with pytest.raises(ConfigurationError):
        TrajectoryRecorder().add_feedback(uuid.uuid4(), "x")
    with pytest.raises(ConfigurationError):
        TrajectoryRecorder().get("not-a-uuid")
