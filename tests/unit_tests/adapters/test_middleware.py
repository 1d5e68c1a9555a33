"""HindsightMiddleware with real create_agent, InMemorySaver, the real store and a scripted model."""

from __future__ import annotations

from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from langchain_hindsight.capture.messages import trajectory_from_messages


@tool
def read_csv(path: str, encoding: str = "utf-8") -> str:
    """Read a CSV file."""
    return f"read {path} with {encoding}: 3 rows"


def test_trajectory_from_messages_outcomes() -> None:
    from langchain_core.messages import AIMessage, ToolMessage

    task = HumanMessage("t")
    calls = AIMessage("", tool_calls=[{"name": "read_csv", "args": {"path": "a"}, "id": "c1"}])
    error = ToolMessage("UnicodeDecodeError: bad byte", tool_call_id="c1", status="error")
    # An answer after a tool error nothing recovered from is a failure now ("did not raise" is not success) ...
    unrecovered = trajectory_from_messages([task, calls, error, AIMessage("fixed")], run_id="r")
    assert unrecovered.outcome == "failure"
    assert unrecovered.final_answer == "fixed"
    assert [s.type for s in unrecovered.steps] == ["tool_call", "error", "final_answer"]
    assert unrecovered.steps[1].tool_name == "read_csv"
    assert unrecovered.steps[1].error_type == "UnicodeDecodeError"
    # ... and a success once a retry of the tool succeeded.
    retry = AIMessage("", tool_calls=[{"name": "read_csv", "args": {"path": "a", "encoding": "gbk"}, "id": "c2"}])
    read = ToolMessage("3 rows", tool_call_id="c2")
    ok = trajectory_from_messages([task, calls, error, retry, read, AIMessage("fixed")], run_id="r")
    assert ok.outcome == "success"
    failed = trajectory_from_messages([task, calls, error], run_id="r")
    assert failed.outcome == "failure"
