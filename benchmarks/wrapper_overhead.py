"""Graph-wrapper overhead: one turn of a checkpointed graph with vs without ``with_hindsight``.

The wrapper's own machinery only: a retriever that returns one fixed memory without embedding
(recall latency is ``recall_latency.py``'s) and no reflection, so what is timed is serving the
block into the input, the ``updates``/``values`` modes the wrapper listens to, scrubbing every
streamed chunk and every checkpoint before the caller's ``InMemorySaver`` stores it, and the
outcome/journal bookkeeping at the end. The graph is a ToolNode loop (count → agent ⇄ tools) on a thread
that already holds ``history`` turns (4 messages each), since the scrub walks the state.
Both arms run interleaved (ABAB...) in one process so machine noise hits both equally.

Usage: .venv/bin/python benchmarks/wrapper_overhead.py [--turns 60] [--histories 0 25 100]
Writes benchmarks/results/wrapper_overhead.json and .md.
"""

from __future__ import annotations

import argparse
import json
import operator
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from benchmarks._stats import summary
from langchain_hindsight import HindsightRetriever, MemoryStore, MemoryUnit, with_hindsight
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.types import ScoredMemory
from tests.fakes import ReactiveToolModel, call

RESULTS = Path(__file__).resolve().parent / "results"


class State(MessagesState):
    n: Annotated[int, operator.add]


@tool
def lookup(city: str) -> str:
    """Weather of a city."""
    return f"{city}: 晴 25 度"


def _respond(messages: list[BaseMessage]) -> Any:
    return f"今天 {messages[-1].content}" if messages[-1].type == "tool" else call("lookup", city="北京")


def _graph() -> Any:
    model = ReactiveToolModel(respond=_respond)
    builder = StateGraph(State)
    builder.add_node("count", lambda state: {"n": 1})
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "count")
    builder.add_edge("count", "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver())


class FixedRetriever(HindsightRetriever):
    """Recall without the embedder: the same stored memory every time."""

    unit: MemoryUnit

    def recall(self, query: str, **kwargs: Any) -> list[ScoredMemory]:
        return [ScoredMemory(memory=self.unit, score=0.9, similarity=0.9)]


def measure(history: int, turns: int, store: MemoryStore) -> dict[str, Any]:
    plain = _graph()
    retriever = FixedRetriever(store=store, unit=store.list_units()[0])
    wrapped = with_hindsight(_graph(), store, retriever=retriever, reflect=False, apply_outcome=False)
    arms = {"plain": plain, "wrapped": wrapped}
    for app in arms.values():  # warm up and build the history
        for i in range(history + 3):
            app.invoke({"messages": [HumanMessage(f"查询北京的天气 {i}")]}, {"configurable": {"thread_id": "t"}})
    timings: dict[str, list[float]] = {name: [] for name in arms}
    for i in range(turns):
        for name, app in arms.items():
            t0 = time.perf_counter()
            app.invoke({"messages": [HumanMessage(f"查询上海的天气 {i}")]}, {"configurable": {"thread_id": "t"}})
            timings[name].append((time.perf_counter() - t0) * 1000)
    p, w = summary(timings["plain"]), summary(timings["wrapped"])
    return {
        "history_turns": history,
        "plain": p,
        "wrapped": w,
        "added_p50_ms": round(w["p50_ms"] - p["p50_ms"], 3),
        "ratio_p50": round(w["p50_ms"] / p["p50_ms"], 3),
        "ratio_p95": round(w["p95_ms"] / p["p95_ms"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--histories", type=int, nargs="+", default=[0, 25, 100])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(tmp, embeddings=LocalEmbeddings()) as store:
        store.add(MemoryUnit(task_type="api_call", content="查询城市天气时先调用 lookup 工具，城市名写中文"))
        rows = [measure(h, args.turns, store) for h in args.histories]
    result = {"machine": platform.platform(), "python": platform.python_version(), "turns": args.turns, "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "wrapper_overhead.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    lines = [
        "# with_hindsight overhead (fixed one-memory recall, no embedding, no reflection)",
        "",
        f"{args.turns} measured turns per arm, interleaved; {platform.platform()}.",
        "",
        "| history (turns) | plain p50 / p95 ms | wrapped p50 / p95 ms | added p50 ms | ratio p50 | ratio p95 |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['history_turns']} | {r['plain']['p50_ms']} / {r['plain']['p95_ms']} | "
        f"{r['wrapped']['p50_ms']} / {r['wrapped']['p95_ms']} | {r['added_p50_ms']} | {r['ratio_p50']} | "
        f"{r['ratio_p95']} |"
        for r in rows
    ]
    (RESULTS / "wrapper_overhead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
