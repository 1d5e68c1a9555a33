"""Capture overhead: a create_agent run with vs without TrajectoryRecorder, and the per-event cost.

Both arms run in the same process, interleaved (ABAB...) so that machine noise hits both
equally. The agent is real (langchain.agents.create_agent with a scripted tool-calling model
and two real tools); only the LLM is scripted, so the measured time is the framework's own
work plus the recorder's: the worst case for relative overhead (a real LLM call takes
hundreds of milliseconds, which the recorder does not touch).

Per-event cost: the recorder's handlers called directly with realistic arguments.

Usage: .venv/bin/python benchmarks/capture_overhead.py [--runs 300]
Writes benchmarks/results/capture_overhead.json and .md.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tools import tool

from langchain_hindsight import TrajectoryRecorder
from langchain_hindsight.testing import call, scripted_model

RESULTS = Path(__file__).resolve().parent / "results"


@tool
def lookup(city: str) -> str:
    """Weather of a city."""
    return f"{city}: sunny, 21°C"


@tool
def convert(celsius: float) -> str:
    """Celsius to Fahrenheit."""
    return f"{celsius * 9 / 5 + 32:.1f}°F"


def _agent() -> Any:
    model = scripted_model(
        call("lookup", city="北京"),
        call("convert", celsius=21),
        [call("lookup", city="上海"), call("lookup", city="广州")],
        "北京 21°C (69.8°F)，上海和广州都晴。",
    )
    return create_agent(model, [lookup, convert])


class _NoOp(BaseCallbackHandler):
    """A handler that does nothing: isolates LangChain's own callback dispatch cost."""

    run_inline = True


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(values_s: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values_s]
    return {"p50_ms": _pct(ms, 0.5), "p95_ms": _pct(ms, 0.95), "mean_ms": statistics.fmean(ms)}


def agent_runs(runs: int) -> dict[str, Any]:
    inputs = {"messages": [("user", "北京天气怎么样？换算成华氏度，再看看上海和广州。")]}
    recorder = TrajectoryRecorder()
    noop = _NoOp()
    for _ in range(10):  # warm-up every arm
        _agent().invoke(inputs)
        _agent().invoke(inputs, config={"callbacks": [noop]})
        _agent().invoke(inputs, config={"callbacks": [recorder]})
    base: list[float] = []
    empty: list[float] = []
    rec: list[float] = []
    steps = 0
    for _ in range(runs):
        agent = _agent()
        t0 = time.perf_counter()
        agent.invoke(inputs)
        base.append(time.perf_counter() - t0)
        agent = _agent()
        t0 = time.perf_counter()
        agent.invoke(inputs, config={"callbacks": [noop]})
        empty.append(time.perf_counter() - t0)
        agent = _agent()
        t0 = time.perf_counter()
        agent.invoke(inputs, config={"callbacks": [recorder]})
        rec.append(time.perf_counter() - t0)
        traj = recorder.last_trajectory
        assert traj is not None
        assert traj.outcome == "success"
        steps = len(traj.steps)
    b, n, r = _summary(base), _summary(empty), _summary(rec)
    return {
        "runs": runs,
        "steps_per_trajectory": steps,
        "without_recorder": b,
        "noop_handler": n,
        "with_recorder": r,
        "ratio_vs_noop_p50": r["p50_ms"] / n["p50_ms"],
        "ratio_vs_noop_p95": r["p95_ms"] / n["p95_ms"],
        "ratio_p50": r["p50_ms"] / b["p50_ms"],
        "ratio_p95": r["p95_ms"] / b["p95_ms"],
        "added_p50_ms": r["p50_ms"] - b["p50_ms"],
    }


def per_event(n: int) -> dict[str, Any]:
    """Microseconds per handler call, measured in batches (one full root run = 1 batch)."""
    recorder = TrajectoryRecorder()
    tool_msg = ToolMessage(content="北京: sunny", tool_call_id="c1", name="lookup")
    result = LLMResult(generations=[[ChatGeneration(message=AIMessage(content="thinking about the weather"))]])
    timings: dict[str, list[float]] = {k: [] for k in ("chain_start", "chain_end", "tool_start", "tool_end", "llm_end")}
    for _ in range(n):
        root = uuid.uuid4()
        recorder.on_chain_start(None, {"messages": [("user", "task")]}, run_id=root, metadata={})
        node, tool_run, llm = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
        t0 = time.perf_counter()
        recorder.on_chain_start(
            None, {"messages": []}, run_id=node, parent_run_id=root, metadata={"langgraph_node": "x"}
        )
        t1 = time.perf_counter()
        recorder.on_chat_model_start(None, [[]], run_id=llm, parent_run_id=node)
        recorder.on_llm_end(result, run_id=llm, parent_run_id=node)
        t2 = time.perf_counter()
        recorder.on_tool_start(
            {"name": "lookup"}, "{'city': '北京'}", run_id=tool_run, parent_run_id=node, inputs={"city": "北京"}
        )
        t3 = time.perf_counter()
        recorder.on_tool_end(tool_msg, run_id=tool_run, parent_run_id=node)
        t4 = time.perf_counter()
        recorder.on_chain_end({"messages": []}, run_id=node, parent_run_id=root)
        t5 = time.perf_counter()
        recorder.on_chain_end({"messages": [AIMessage(content="done")]}, run_id=root)
        timings["chain_start"].append(t1 - t0)
        timings["llm_end"].append((t2 - t1) / 2)  # start + end
        timings["tool_start"].append(t3 - t2)
        timings["tool_end"].append(t4 - t3)
        timings["chain_end"].append(t5 - t4)
    out = {}
    for key, values in timings.items():
        us = [v * 1e6 for v in values]
        out[key] = {"p50_us": _pct(us, 0.5), "p95_us": _pct(us, 0.95)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--events", type=int, default=20000)
    args = parser.parse_args()
    result = {
        "benchmark": "capture_overhead",
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "agent": agent_runs(args.runs),
        "per_event": per_event(args.events),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "capture_overhead.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    a = result["agent"]
    lines = [
        "# Capture overhead (TrajectoryRecorder)",
        "",
        f"create_agent run, scripted model, 4 model turns + 4 tool calls ({a['steps_per_trajectory']} recorded steps),",
        f"{a['runs']} interleaved runs per arm, same process. Python {result['machine']['python']}.",
        "",
        "| arm | p50 ms | p95 ms | mean ms |",
        "|---|---|---|---|",
        *(
            f"| {name} | {a[key]['p50_ms']:.2f} | {a[key]['p95_ms']:.2f} | {a[key]['mean_ms']:.2f} |"
            for name, key in (
                ("no callbacks", "without_recorder"),
                ("no-op handler (dispatch cost only)", "noop_handler"),
                ("TrajectoryRecorder", "with_recorder"),
            )
        ),
        "",
        f"Ratio with/without: p50 {a['ratio_p50']:.3f}, p95 {a['ratio_p95']:.3f} (added p50 {a['added_p50_ms']:.3f} ms"
        " per run; a real LLM call costs hundreds of ms).",
        f"Ratio recorder/no-op handler (the recorder's own work): p50 {a['ratio_vs_noop_p50']:.3f},"
        f" p95 {a['ratio_vs_noop_p95']:.3f}.",
        "",
        "| handler | p50 µs | p95 µs |",
        "|---|---|---|",
        *(f"| {k} | {v['p50_us']:.2f} | {v['p95_us']:.2f} |" for k, v in result["per_event"].items()),
        "",
    ]
    (RESULTS / "capture_overhead.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
