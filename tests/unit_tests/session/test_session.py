"""One session per task: every adapter journals what it served and produced; conversation feedback; credit once."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langchain_hindsight.session._conversation import CorrectionDetector
from langchain_hindsight.testing import ReactiveToolModel
from langchain_hindsight.types import Trajectory
from tests.fakes import query_sales
from tests.fakes import weekly_report_policy as _respond

TASK = "生成本周的销售周报"


def _model() -> ReactiveToolModel:
    return ReactiveToolModel(respond=_respond)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("不对，周报只统计本周一到周日", True),
        ("错了，应该用 utf-8-sig", True),
        ("不是这样的，先去重", True),
        ("嗯，不对，应该按月", True),
        ("No, weeks start on Monday", True),
        ("That's wrong: use the calendar week", True),
        ("Actually, use gbk", True),
        ("生成本周的销售周报", False),
        ("修复这个错误", False),
        ("No problem, thanks", False),
        ("Now write the monthly report", False),
        ("Nothing else", False),
    ],
)
def test_correction_detector(text: str, expected: bool) -> None:
    assert CorrectionDetector()(text) is expected


# ---------------------------------------------------------------------------- one trajectory builder
def _shape(trajectory: Trajectory) -> list[tuple[str, str | None, Any, str | None]]:
    return [(s.type, s.tool_name, s.tool_args, s.error_type) for s in trajectory.steps]


def test_recorder_messages_and_executor_steps_build_the_same_trajectory() -> None:
    from langchain_core.agents import AgentAction

    from langchain_hindsight import TrajectoryRecorder
    from langchain_hindsight.capture.messages import trajectory_from_intermediate_steps, trajectory_from_messages

    recorder = TrajectoryRecorder()
    agent = create_agent(_model(), tools=[query_sales])
    out = agent.invoke({"messages": [HumanMessage(TASK)]}, config={"callbacks": [recorder]})
    recorded = recorder.last_trajectory
    assert recorded is not None
    rebuilt = trajectory_from_messages(out["messages"], run_id=recorded.run_id)
    executor = trajectory_from_intermediate_steps(
        [
            (AgentAction("query_sales", {"start": "rolling", "end": "today"}, ""), "ValueError: start must be a date"),
            (AgentAction("query_sales", {"start": "2024-06-03", "end": "2024-06-09"}, ""), "sales: 42"),
        ],
        task=TASK,
        answer="周报：销售额 42",
        run_id="r",
    )
    expected = [
        ("tool_call", "query_sales", {"start": "rolling", "end": "today"}, None),
        ("error", "query_sales", {"start": "rolling", "end": "today"}, "ValueError"),
        ("tool_call", "query_sales", {"start": "2024-06-03", "end": "2024-06-09"}, None),
        ("tool_result", "query_sales", {"start": "2024-06-03", "end": "2024-06-09"}, None),
        ("final_answer", None, None, None),
    ]
    for trajectory in (recorded, rebuilt, executor):
        assert _shape(trajectory) == expected
        assert trajectory.outcome == "success"
        assert trajectory.final_answer == "周报：销售额 42"
        assert trajectory.task == TASK


def test_message_builder_ending_rules() -> None:
    from langchain_core.messages import AIMessage, ToolMessage

    from langchain_hindsight.capture.messages import trajectory_from_messages

    pending = [HumanMessage("t"), AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])]
    assert trajectory_from_messages(pending, run_id="r").outcome == "unknown"  # stopped mid-loop
    failed = [*pending, ToolMessage("KeyError: 'x'", tool_call_id="c1", status="error")]
    ended = trajectory_from_messages(failed, run_id="r")
    assert ended.outcome == "failure"
    assert ended.steps[-1].error_type == "KeyError"
    long = trajectory_from_messages([HumanMessage("t"), AIMessage("x" * 5000)], run_id="r", max_content_chars=100)
    assert long.outcome == "success"
    assert long.steps[-1].truncated
    assert len(long.final_answer or "") < 200
    assert trajectory_from_messages(failed, run_id="r", outcome="success").outcome == "success"


def test_the_typed_option_lists_are_the_session_config_options() -> None:
    """``SessionOptions``/``AdapterOptions`` (what type checkers see on the facade) never drift from the config."""
    from langchain_hindsight.session.config import AdapterOptions, SessionConfig, SessionOptions

    assert set(SessionOptions.__annotations__) | set(AdapterOptions.__annotations__) == SessionConfig.option_names()
    assert set(SessionOptions.__optional_keys__) == SessionConfig.option_names()
    assert set(AdapterOptions.__optional_keys__) == SessionConfig.option_names() - {"namespace"}
