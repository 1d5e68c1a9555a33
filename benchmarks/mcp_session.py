"""MCP tool calls from LangChain: one persistent session vs a new server per call, in one run.

``langchain-mcp-adapters`` offers two ways to use the ``hindsight mcp`` tools: tools loaded with
``client.get_tools()`` open a new session — for stdio a new ``hindsight mcp`` process, which loads
the store and the embedders — for every call; tools loaded with ``load_mcp_tools(session)``
inside ``async with client.session(...)`` reuse one server. This script times ``recall`` calls
both ways against the same store (stdio transport, a few lessons stored first).

Writes benchmarks/results/mcp_session.{json,md}.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/mcp_session.py [--calls 10] [--per-call 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from langchain_mcp_adapters.client import MultiServerMCPClient  # noqa: E402
from langchain_mcp_adapters.tools import load_mcp_tools  # noqa: E402

GRANTS = """
[principals.bench]
namespace = "bench"
"""
LESSONS = [
    "读取ERP导出的CSV时要用encoding='gbk'和sep=';'，默认的utf-8会报UnicodeDecodeError。",
    "Call get_orders with api_version='v2'; v1 is retired.",
    "周报只统计本周一到周日的数据。",
]


def _client(db: Path, grants: Path) -> MultiServerMCPClient:
    args = ["-m", "langchain_hindsight.cli.main", "mcp", "--path", str(db), "--config", str(grants)]
    env = {**os.environ, "PYTHONPATH": str(ROOT.parent), "HF_HUB_OFFLINE": "1"}
    return MultiServerMCPClient(
        {
            "hindsight": {
                "transport": "stdio",
                "command": sys.executable,
                "args": [*args, "--principal", "bench"],
                "env": env,
            }
        }
    )


async def _run(calls: int, per_call: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        db, grants = Path(tmp) / "db", Path(tmp) / "grants.toml"
        grants.write_text(GRANTS, encoding="utf-8")
        client = _client(db, grants)
        persistent: list[float] = []
        start = time.perf_counter()
        async with client.session("hindsight") as session:
            tools = {t.name: t for t in await load_mcp_tools(session)}
            opened = time.perf_counter() - start
            for lesson in LESSONS:
                await tools["remember"].ainvoke({"content": lesson})
            for i in range(calls):
                t = time.perf_counter()
                await tools["recall"].ainvoke({"task": f"读取销售CSV 第{i}个文件"})
                persistent.append(time.perf_counter() - t)
        fresh: list[float] = []
        tools_each = {t.name: t for t in await client.get_tools()}
        for i in range(per_call):
            t = time.perf_counter()
            await tools_each["recall"].ainvoke({"task": f"读取销售CSV 第{i}个文件"})
            fresh.append(time.perf_counter() - t)
    return {"open_session_s": opened, "persistent_s": persistent, "per_call_session_s": fresh}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--per-call", type=int, default=3)
    args = parser.parse_args()
    raw = asyncio.run(_run(args.calls, args.per_call))
    p_mean = sum(raw["persistent_s"]) / len(raw["persistent_s"])
    f_mean = sum(raw["per_call_session_s"]) / len(raw["per_call_session_s"])
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average": os.getloadavg()[0],
        **raw,
    }
    (ROOT / "results" / "mcp_session.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# MCP tool calls: one session vs a server per call (benchmarks/mcp_session.py)",
        "",
        f"{result['date']}, {result['machine']}, load average {result['load_average']:.1f}; stdio transport, "
        f"`recall` over a store of {len(LESSONS)} lessons.",
        "",
        "| way | calls | mean per call | total |",
        "|---|---|---|---|",
        f"| opening the session (starts the server: store and embedders) | 1 | {raw['open_session_s']:.1f} s | |",
        f"| then calls in that session (`load_mcp_tools(session)`) | {args.calls} | {p_mean * 1000:.0f} ms | "
        f"{sum(raw['persistent_s']):.2f} s |",
        f"| a server per call (`client.get_tools()`) | {args.per_call} | {f_mean:.1f} s | "
        f"{sum(raw['per_call_session_s']):.1f} s |",
        f"| ratio per call (per-call server ÷ session) | | {f_mean / p_mean:.0f}× | |",
        "",
    ]
    (ROOT / "results" / "mcp_session.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
