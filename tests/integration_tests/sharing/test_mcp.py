"""The MCP server, started as a subprocess and driven by the official MCP client (stdio and HTTP)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from langchain_hindsight.sharing.mcp_server import TOOL_NAMES
from tests.fakes import GRANTS_TOML, call, child_env, scripted_model
from tests.server import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
LESSON = "读取ERP导出的CSV时要用encoding='gbk'和sep=';'，默认的utf-8会报UnicodeDecodeError。"
TOKEN = "mcp-test-token-0123456789"


def _args(db: Path, config: Path, principal: str, *extra: str) -> list[str]:
    return [
        "-m",
        "langchain_hindsight.cli.main",
        "mcp",
        "--path",
        str(db),
        "--config",
        str(config),
        "--principal",
        principal,
        *extra,
    ]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "grants.toml"
    path.write_text(GRANTS_TOML, encoding="utf-8")
    return path


@asynccontextmanager
async def stdio_session(db: Path, config: Path, principal: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=_args(db, config, principal), env=child_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def data(result: Any) -> Any:
    assert not result.isError, result.content
    return json.loads(result.content[0].text)


async def test_stdio_round_trip(tmp_path: Path, config: Path) -> None:
    db = tmp_path / "db"
    async with stdio_session(db, config, "cleaner") as session:
        tools = await session.list_tools()
        assert {t.name for t in tools.tools} >= set(TOOL_NAMES)

        unit = data(await session.call_tool("remember", {"content": LESSON, "task_type": "data_cleaning"}))
        recalled = data(await session.call_tool("recall", {"task": "读取一个ERP导出的销售CSV，统计金额"}))
        assert recalled["results"][0]["memory_id"] == unit["memory_id"]
        assert recalled["block"].startswith("[相关经验]")
        assert "gbk" in recalled["block"]

        before = recalled["results"][0]["confidence"]
        changed = data(await session.call_tool("feedback", {"success": True, "run_id": recalled["run_id"]}))
        assert changed["updated"][0]["confidence"] > before

        why = data(await session.call_tool("explain", {"run_id": recalled["run_id"]}))
        assert why["memories"][0]["memory_id"] == unit["memory_id"]

        misspelt = await session.call_tool("recall", {"task": "读取ERP导出的CSV", "kk": 3})
        assert misspelt.isError
        assert "UnknownOptionError: unknown recall tool option 'kk' (did you mean 'k'?)" in misspelt.content[0].text
        unsupported = await session.call_tool("recall", {"task": "读取ERP导出的CSV", "namespace": "analyst"})
        assert unsupported.isError  # not silently answered from the principal's own namespace
        assert "'namespace'" in unsupported.content[0].text

        denied = await session.call_tool("remember", {"content": "x", "namespace": "analyst"})
        assert denied.isError
        assert "AccessDeniedError" in denied.content[0].text
        listing = await session.read_resource("hindsight://memories")  # type: ignore[arg-type]
        assert unit["memory_id"] in listing.contents[0].text  # type: ignore[union-attr]

        assert data(await session.call_tool("forget", {"memory_id": unit["memory_id"]}))["deleted"] == 1
        assert data(await session.call_tool("recall", {"task": "读取ERP导出的CSV"}))["results"] == []
        missing = await session.call_tool("forget", {"memory_id": unit["memory_id"]})
        assert missing.isError


async def test_sharing_between_two_agents_over_mcp(tmp_path: Path, config: Path) -> None:
    db = tmp_path / "db"
    async with stdio_session(db, config, "cleaner") as cleaner:
        shared = data(await cleaner.call_tool("remember", {"content": LESSON, "namespace": "shared"}))
        data(await cleaner.call_tool("remember", {"content": "清洗时把全角数字转成半角。"}))
    async with stdio_session(db, config, "analyst") as analyst:
        recalled = data(await analyst.call_tool("recall", {"task": "分析ERP导出的CSV的销售额"}))
        hits = {r["memory_id"]: r for r in recalled["results"]}
        assert hits[shared["memory_id"]]["shared"] is True
        assert hits[shared["memory_id"]]["namespace"] == "shared"
        assert "（来自：shared）" in recalled["block"]
        assert all(r["namespace"] != "cleaner" for r in recalled["results"])
        refused = await analyst.call_tool("remember", {"content": "y", "namespace": "shared"})
        assert refused.isError
        skipped = data(await analyst.call_tool("feedback", {"success": False, "memory_ids": [shared["memory_id"]]}))
        assert skipped["skipped"] == [shared["memory_id"]]


@pytest.fixture
def http_server(tmp_path: Path, config: Path) -> Iterator[str]:
    port = free_port()
    args = _args(tmp_path / "db", config, "cleaner", "--transport", "http", "--port", str(port))
    env = child_env(HINDSIGHT_MCP_TOKEN=TOKEN)
    proc = subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for_port(proc, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _client() -> Any:
    return create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})


async def test_http_round_trip(http_server: str) -> None:
    async with (
        _client() as client,
        streamable_http_client(http_server, http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert {t.name for t in (await session.list_tools()).tools} >= set(TOOL_NAMES)
        unit = data(
            await session.call_tool("remember", {"content": "Call get_orders with api_version='v2'; v1 is retired."})
        )
        recalled = data(await session.call_tool("recall", {"task": "call get_orders for the north region", "k": 3}))
        assert recalled["results"][0]["memory_id"] == unit["memory_id"]
        denied = await session.call_tool("remember", {"content": "z", "namespace": "analyst"})
        assert denied.isError


async def test_langchain_agent_uses_the_server_tools(tmp_path: Path, config: Path) -> None:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient(
        {
            "hindsight": {
                "transport": "stdio",
                "command": sys.executable,
                "args": _args(tmp_path / "db", config, "cleaner"),
                "env": child_env(),
            }
        }
    )
    tools = await client.get_tools()
    assert {t.name for t in tools} >= set(TOOL_NAMES)
    model = scripted_model(
        call("remember", content=LESSON, task_type="data_cleaning"),
        call("recall", task="读取ERP导出的CSV"),
        "用 encoding='gbk' 和 sep=';' 读取。",
    )
    agent = create_agent(model, tools=tools)
    state = await agent.ainvoke({"messages": [HumanMessage("读取 sales.csv 并记住经验")]})
    result = state["messages"][-2]
    assert result.name == "recall", result
    recalled = json.loads(result.text)
    assert "gbk" in recalled["block"]
    assert recalled["results"][0]["content"] == LESSON


async def test_readme_langchain_example_runs(tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    page = next(p for p in (ROOT / "docs" / "sharing.md", ROOT / "docs" / "readme" / "sharing_mcp.md") if p.exists())
    (code,) = [
        c
        for c in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
        if "MultiServer" in c and '"stdio"' in c
    ]
    assert '"command": "hindsight"' in code
    assert '"openai:gpt-4o-mini"' in code
    monkeypatch.chdir(tmp_path)
    (tmp_path / "grants.toml").write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
    code = code.replace('"command": "hindsight",', '"command": sys.executable, "env": env,')
    code = code.replace('"args": ["mcp",', '"args": ["-m", "langchain_hindsight.cli.main", "mcp",')
    code = code.replace('"openai:gpt-4o-mini"', "model")
    model = scripted_model(call("recall", task="分析销售数据"), "没有相关经验。")
    assert "async with client.session(" in code  # the documented way keeps one server for every call
    code = code.replace("await agent.ainvoke(", "state = await agent.ainvoke(")
    body = (
        "async def _example():\n" + "".join(f"    {line}\n" for line in code.splitlines()) + "    return state, tools\n"
    )
    scope: dict[str, Any] = {"sys": sys, "env": child_env(), "model": model}
    exec(compile(body, str(page), "exec"), scope)
    state, tools = await scope["_example"]()
    assert {t.name for t in tools} == set(TOOL_NAMES)
    assert json.loads(state["messages"][-2].text)["results"] == []


async def test_readme_http_example_runs_with_the_token(http_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    page = ROOT / "docs" / "sharing.md"
    (code,) = [
        c
        for c in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
        if "MultiServer" in c and "streamable_http" in c
    ]
    assert "Authorization" in code
    code = code.replace("http://127.0.0.1:8765/mcp", http_server).replace('"openai:gpt-4o-mini"', "model")
    code = code.replace("await agent.ainvoke(", "state = await agent.ainvoke(")
    body = "async def _example():\n" + "".join(f"    {line}\n" for line in code.splitlines()) + "    return state\n"
    monkeypatch.setenv("HINDSIGHT_MCP_TOKEN", TOKEN)
    model = scripted_model(call("recall", task="分析销售数据"), "没有相关经验。")
    scope: dict[str, Any] = {"model": model}
    exec(compile(body, str(page), "exec"), scope)
    state = await scope["_example"]()
    assert json.loads(state["messages"][-2].text)["results"] == []
    monkeypatch.setenv("HINDSIGHT_MCP_TOKEN", "not-the-token-0123456789")
    with pytest.raises(BaseException) as refused:  # the same client without the right token is refused
        await scope["_example"]()
    assert "401" in _messages(refused.value)


def _messages(error: BaseException) -> str:
    """Every message in ``error`` and the exceptions grouped inside it."""
    inner = error.exceptions if isinstance(error, BaseExceptionGroup) else ()
    return " ".join([str(error), *(_messages(e) for e in inner)])


async def test_a_persistent_session_serves_many_tool_calls_from_one_server(tmp_path: Path, config: Path) -> None:
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools

    db = tmp_path / "db"
    client = MultiServerMCPClient(
        {
            "hindsight": {
                "transport": "stdio",
                "command": sys.executable,
                "args": _args(db, config, "cleaner"),
                "env": child_env(),
            }
        }
    )
    async with client.session("hindsight") as session:
        tools = {t.name: t for t in await load_mcp_tools(session)}
        stored = json.loads(
            (await tools["remember"].ainvoke({"content": LESSON, "task_type": "data_cleaning"}))[0]["text"]
        )
        pids = _server_pids(db)
        for i in range(10):
            out = json.loads((await tools["recall"].ainvoke({"task": f"读取ERP导出的CSV 第{i}个文件"}))[0]["text"])
            assert out["results"][0]["memory_id"] == stored["memory_id"]
            pids |= _server_pids(db)
        assert len(pids) == 1  # one server process answered all eleven calls


def _server_pids(db: Path) -> set[int]:
    """The processes now running ``hindsight mcp`` on ``db`` (from /proc)."""
    pids = set()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue  # the process ended while we looked
        if b"mcp" in argv and str(db).encode() in argv:
            pids.add(int(cmdline.parent.name))
    return pids


def test_sigterm_closes_the_store_and_exits_0_without_a_traceback(tmp_path: Path, config: Path) -> None:
    db = tmp_path / "db"
    port = free_port()
    args = _args(db, config, "cleaner", "--transport", "http", "--port", str(port))
    env = child_env(HINDSIGHT_MCP_TOKEN=TOKEN)
    proc = subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for_port(proc, port)

        async def session_then_disconnect() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            async with (
                _client() as client,
                streamable_http_client(url, http_client=client) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await session.call_tool(
                    "remember", {"content": "Page the orders API with cursor=next; offsets skip rows."}
                )

        import anyio

        anyio.run(session_then_disconnect)  # the client goes away with its event stream open
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = err.decode("utf-8", errors="replace")
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert "ERROR" not in stderr, stderr
    assert "stopped by SIGTERM; the store is closed" in stderr
    assert (db / ".hindsight-clean").is_file()  # the clean-close stamp: the store was closed, not killed


def _wait_for_port(proc: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode() if proc.stderr else "server exited")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError("the server did not start listening")
