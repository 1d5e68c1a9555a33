"""The agent-gain benchmark runs offline on the scripted policy, so CI exercises it end to end."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

pytestmark = pytest.mark.slow


def _load() -> ModuleType:
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "agent_gain.py"
    spec = importlib.util.spec_from_file_location("agent_gain", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["agent_gain"] = module
    spec.loader.exec_module(module)
    return module


ag = _load()


def test_policy_reads_its_first_call_from_the_block() -> None:
    block = (
        "[相关经验]\n"
        "1. 使用read_table时，默认参数会失败（UnicodeDecodeError），改为encoding='gbk', sep=';'后成功。"
        "（置信度：0.80）\n"
        "[当前任务]\n统计 /d/sales_2.csv 的销售额合计。"
    )
    call = ag.decide([HumanMessage(block)]).tool_calls[0]
    assert call["args"] == {"path": "/d/sales_2.csv", "encoding": "gbk", "sep": ";"}
    bare = ag.decide([HumanMessage("统计 /d/sales_2.csv 的销售额合计。")]).tool_calls[0]
    assert bare["args"] == {"path": "/d/sales_2.csv"}


def test_policy_follows_the_hint_in_a_tool_error() -> None:
    task = HumanMessage("How many orders did the north region have in 2024-03?")
    first = ag.decide([task])
    error = ToolMessage(
        "HTTP 410: api_version 'v1' is retired; use api_version='v2'",
        tool_call_id=first.tool_calls[0]["id"],
        name="get_orders",
        status="error",
    )
    retry = ag.decide([task, first, error]).tool_calls[0]
    assert retry["args"]["api_version"] == "v2"
    assert isinstance(ag.decide([task, first, error, AIMessage("")]), AIMessage)


@pytest.mark.parametrize("forced", [False, True])
def test_hindsight_removes_repeated_tool_errors(tmp_path: Path, forced: bool) -> None:
    model = ag.scripted_policy(forced=forced)
    options = {"model": model, "forced": forced, "structured_output": True, "tasks_limit": 7}
    without = ag.run_stream(hindsight=False, workdir=tmp_path / "without", **options)
    with_ = ag.run_stream(hindsight=True, workdir=tmp_path / "with", **options)
    assert all(r.success for r in without + with_)
    # without memory every task meets its tool's quirk; with it, only the first of each family does
    assert all(r.tool_errors >= 1 for r in without)
    assert sum(r.tool_errors for r in with_) < sum(r.tool_errors for r in without)
    assert sum(r.model_calls for r in with_) < sum(r.model_calls for r in without)
    assert with_[0].served == 0
    assert with_[-1].served >= 1
