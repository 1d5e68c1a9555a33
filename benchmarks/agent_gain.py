"""Agent gain: a stream of related tool-using tasks, with and without hindsight.

Twelve tasks in Chinese and English over three tool families, each with a quirk an
agent only discovers by failing once:

* ``read_table``: ERP exports are GBK-encoded and ``;``-separated (the defaults fail);
* ``get_orders``: ``api_version='v1'`` is retired, the error says to use ``'v2'``;
* ``search_tickets``: ``page_size`` above 50 is refused, the error says which value works.

Each task runs through ``langchain.agents.create_agent`` twice, in two fresh stores:
once without hindsight, once with ``Hindsight(...).middleware()`` (recall before the
task, capture and reflection after it). Per task the benchmark reports model calls,
tool errors, whether the answer is right (checked against the data it generated)
and how many memories were served.

Offline (the default) the model is a scripted policy whose every choice is computed
from the messages it receives: its first call uses the arguments named in the
``[相关经验]`` block of its prompt, otherwise the tool's defaults; after an error it
follows the hint in the error or detects the format. So any gain it shows is caused
by what recall put in its prompt. Name a real model to run the same stream on any
OpenAI-compatible endpoint::

    python benchmarks/agent_gain.py --model qwen2.5-7b-instruct --base-url http://127.0.0.1:8080/v1 \
        --forced-tool --no-structured-output

``--forced-tool`` adds a ``final_answer`` tool and forces a tool call on every turn
(llama.cpp's server returns ``tool_calls`` only when a tool is forced);
``--no-structured-output`` makes reflection ask for plain JSON text instead of a
forced extraction tool.

Results: ``benchmarks/results/agent_gain.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from langchain_hindsight.testing import ReactiveToolModel

RESULTS = Path(__file__).resolve().parent / "results"
SYSTEM_PROMPT = (
    "You are a data assistant. Use the tools to answer. Give the final number in your answer. "
    "你是一个数据助手，用工具完成任务，回答里给出最终数字。"
)

# ---------------------------------------------------------------------------- environment
_REGIONS = ("north", "south", "east", "west")
_TOPICS = ("退款", "登录失败", "发票", "refund", "login", "invoice")


def _orders(region: str, month: str) -> int:
    """Deterministic order counts, so answers can be checked."""
    return 40 + (sum(map(ord, region + month)) * 7) % 160


def _tickets(topic: str) -> int:
    return 3 + (sum(map(ord, topic)) * 13) % 90


@dataclass
class Environment:
    """The files and services the tasks use (all local, all real)."""

    root: Path
    sales: dict[str, float] = field(default_factory=dict)

    def write_table(self, name: str, rows: Sequence[tuple[str, str, float]]) -> Path:
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter=";", lineterminator="\n")
        writer.writerow(("日期", "门店", "销售额"))
        writer.writerows((d, s, f"{v:.2f}") for d, s, v in rows)
        path = self.root / name
        path.write_bytes(buffer.getvalue().encode("gbk"))
        self.sales[str(path)] = round(sum(v for _, _, v in rows), 2)
        return path


def _check_path(root: Path, path: str) -> Path:
    resolved = Path(path).expanduser().resolve()
    if root not in resolved.parents or not resolved.is_file():
        raise ToolException(f"FileNotFoundError: no such file under the data directory: {path}")
    return resolved


def make_tools(env: Environment) -> list[BaseTool]:
    """The three tool families plus ``sniff`` (format detection)."""
    root = env.root.resolve()

    def read_table(path: str, encoding: str = "utf-8", sep: str = ",") -> str:
        raw = _check_path(root, path).read_bytes()
        try:
            text = raw.decode(encoding)
        except (LookupError, UnicodeDecodeError) as e:
            raise ToolException(f"UnicodeDecodeError: the file is not {encoding}-encoded ({type(e).__name__})") from e
        rows = list(csv.reader(io.StringIO(text), delimiter=sep))
        if not rows or len(rows[0]) < 2:
            raise ToolException(f"ParseError: only one column with sep={sep!r}; the separator is probably different")
        total = sum(float(r[-1]) for r in rows[1:] if r)
        return f"{len(rows) - 1} rows; 销售额 total {total:.2f}"

    def sniff(path: str) -> str:
        raw = _check_path(root, path).read_bytes()
        for encoding in ("utf-8", "gbk"):
            try:
                text = raw.decode(encoding)
                break
            except UnicodeDecodeError:
                continue
        else:
            raise ToolException("UnicodeDecodeError: neither utf-8 nor gbk")
        sep = csv.Sniffer().sniff(text.splitlines()[0], delimiters=",;\t|").delimiter
        return f"encoding='{encoding}' sep='{sep}'"

    def get_orders(region: str, month: str, api_version: str = "v1") -> str:
        if api_version != "v2":
            raise ToolException(f"HTTP 410: api_version {api_version!r} is retired; use api_version='v2'")
        if region not in _REGIONS:
            raise ToolException(f"HTTP 404: unknown region {region!r}")
        return f"region={region} month={month} orders={_orders(region, month)}"

    def search_tickets(topic: str, page_size: int = 100) -> str:
        if page_size > 50:
            raise ToolException(f"参数错误：page_size={page_size} 超过上限，请使用 page_size=50")
        return f"topic={topic} tickets={_tickets(topic)}"

    def tool(fn: Callable[..., str], description: str) -> BaseTool:
        return StructuredTool.from_function(fn, name=fn.__name__, description=description, handle_tool_error=True)

    return [
        tool(read_table, "Read a CSV table and total its last column. Args: path, encoding='utf-8', sep=','."),
        tool(sniff, "Detect a CSV file's encoding and separator. Arg: path."),
        tool(get_orders, "Number of orders of a region in a month (YYYY-MM). Args: region, month, api_version='v1'."),
        tool(search_tickets, "Count support tickets about a topic. Args: topic, page_size=100."),
    ]


@dataclass(frozen=True)
class Task:
    """One task of the stream and how to check its answer."""

    lang: str
    text: str
    expected: str


def make_tasks(env: Environment) -> list[Task]:
    """Twelve related tasks, interleaved, in both languages (3 cross-language)."""
    tables = [
        env.write_table(
            f"sales_{i}.csv",
            [
                (f"2024-0{i}-{d:02d}", store, 100.0 * i + d * 3.5)
                for d, store in ((3, "北京店"), (9, "上海店"), (17, "广州店"))
            ],
        )
        for i in range(1, 6)
    ]

    def table(i: int, lang: str) -> Task:
        path = tables[i]
        text = f"统计 {path} 的销售额合计。" if lang == "zh" else f"What is the total of 销售额 in {path}?"
        return Task(lang, text, f"{env.sales[str(path)]:.2f}")

    def orders(region: str, month: str, lang: str) -> Task:
        text = (
            f"How many orders did the {region} region have in {month}?"
            if lang == "en"
            else f"查询 {region} 区域 {month} 的订单数。"
        )
        return Task(lang, text, str(_orders(region, month)))

    def tickets(topic: str, lang: str) -> Task:
        text = f"查找关于“{topic}”的工单有多少。" if lang == "zh" else f"How many tickets are about “{topic}”?"
        return Task(lang, text, str(_tickets(topic)))

    return [
        table(0, "zh"),
        orders("north", "2024-03", "en"),
        tickets("退款", "zh"),
        table(1, "zh"),
        orders("south", "2024-04", "en"),
        tickets("登录失败", "zh"),
        table(2, "en"),
        orders("east", "2024-05", "zh"),
        tickets("refund", "en"),
        table(3, "zh"),
        orders("west", "2024-06", "en"),
        tickets("发票", "zh"),
    ]


# ---------------------------------------------------------------------------- scripted policy
_PATH = re.compile(r"(\S+\.csv)")
_REGION = re.compile(r"\b(" + "|".join(_REGIONS) + r")\b")
_MONTH = re.compile(r"\b(\d{4}-\d{2})\b")
_TOPIC = re.compile(r"“([^”]+)”")
_IDENT = r"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)"  # ASCII only: "改为encoding" must yield "encoding"
_HINT = re.compile(r"(?:use|请使用)\s+" + _IDENT + r"\s*=\s*'?([\w.-]+)'?", re.IGNORECASE)
_KV = re.compile(_IDENT + r"\s*=\s*(?:'([^']*)'|\"([^\"]*)\"|(\d+))")
_BLOCK_HEADERS = ("[相关经验]", "[Relevant experience]")
_BLOCK_END = ("[当前任务]", "[Current task]")
_PARAMS = {"read_table": ("encoding", "sep"), "get_orders": ("api_version",), "search_tickets": ("page_size",)}


def _text(message: BaseMessage) -> str:
    return message.text if isinstance(message.text, str) else str(message.content)


def _block(messages: Sequence[BaseMessage]) -> str:
    for message in messages:
        if isinstance(message, HumanMessage):
            text = _text(message)
            for header in _BLOCK_HEADERS:
                if (start := text.find(header)) >= 0:
                    block = text[start:]
                    for end in _BLOCK_END:
                        if (cut := block.find(end)) > 0:
                            block = block[:cut]
                    return block
    return ""


def _task(messages: Sequence[BaseMessage]) -> str:
    for message in messages:
        if isinstance(message, HumanMessage):
            text = _text(message)
            for end in _BLOCK_END:
                if end in text:
                    text = text.split(end, 1)[1]
            return text
    return ""


def _learned(block: str, tool: str) -> dict[str, Any]:
    """Arguments of ``tool`` named in the experience block, per line; the last mention on a line wins.

    A lesson reads "with X it fails …, with Y it works", so the working value comes last.
    """
    found: dict[str, Any] = {}
    for line in block.splitlines():
        if tool not in line:
            continue
        for match in _KV.finditer(line):
            key = match.group(1)
            if key in _PARAMS[tool]:
                value = next(g for g in match.groups()[1:] if g is not None)
                found[key] = int(value) if value.isdigit() else value
    return found


def decide(messages: Sequence[BaseMessage], *, forced: bool = False) -> AIMessage:
    """The scripted policy: the next message given the prompt received (see the module docstring)."""
    task = _task(messages)
    n = sum(isinstance(m, AIMessage) for m in messages) + 1

    def call(name: str, **args: Any) -> AIMessage:
        return AIMessage(content="", tool_calls=[ToolCall(name=name, args=args, id=f"call_{n}", type="tool_call")])

    def answer(text: str) -> AIMessage:
        return call("final_answer", answer=text) if forced else AIMessage(content=text)

    if m := _PATH.search(task):
        tool, args = "read_table", {"path": m.group(1)}
    elif (r := _REGION.search(task)) and (mo := _MONTH.search(task)):
        tool, args = "get_orders", {"region": r.group(1), "month": mo.group(1)}
    elif t := _TOPIC.search(task):
        tool, args = "search_tickets", {"topic": t.group(1)}
    else:
        return answer("I cannot tell which tool this task needs.")
    last = messages[-1] if messages else None
    if isinstance(last, ToolMessage):
        result = _text(last)
        if last.status != "error" and last.name == tool:
            return answer(result)
        if last.name == "sniff" and last.status != "error":
            return call(tool, **args, **{k: v for k, v in _KV_pairs(result).items() if k in _PARAMS[tool]})
        previous = _last_args(messages, tool)
        if hints := {k: (int(v) if v.isdigit() else v) for k, v in _HINT.findall(result) if k in _PARAMS[tool]}:
            return call(tool, **{**previous, **hints})
        if tool == "read_table" and last.name == tool:
            return call("sniff", path=args["path"])
        return answer(f"failed: {result}")
    return call(tool, **args, **_learned(_block(messages), tool))


def _KV_pairs(text: str) -> dict[str, Any]:  # noqa: N802 - mirrors _KV
    return {m.group(1): next(g for g in m.groups()[1:] if g is not None) for m in _KV.finditer(text)}


def _last_args(messages: Sequence[BaseMessage], tool: str) -> dict[str, Any]:
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            for tc in message.tool_calls:
                if tc["name"] == tool:
                    return dict(tc["args"])
    return {}


def scripted_policy(*, forced: bool = False) -> ReactiveToolModel:
    """Offline chat model: :func:`decide` applied to the prompt it receives (not an LLM)."""
    return ReactiveToolModel(respond=lambda messages: decide(messages, forced=forced))


# ---------------------------------------------------------------------------- forced-tool mode
def final_answer(answer: str) -> str:
    """Give the final answer to the user."""
    return answer


class ForceToolChoice(AgentMiddleware):  # type: ignore[type-arg]
    """Force a tool call on every model turn (llama.cpp returns tool calls only then)."""

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        return handler(request.override(tool_choice="any"))


class _CountCalls(BaseCallbackHandler):
    def __init__(self) -> None:
        self.calls = 0

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.calls += 1


# ---------------------------------------------------------------------------- runner
@dataclass
class TaskResult:
    index: int
    lang: str
    model_calls: int
    tool_errors: int
    success: bool
    served: int
    seconds: float


def _final_text(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and message.name == "final_answer":
            return _text(message)
        if isinstance(message, AIMessage) and not message.tool_calls:
            return _text(message)
    return ""


def run_stream(
    *,
    hindsight: bool,
    workdir: Path,
    model: BaseChatModel,
    forced: bool,
    structured_output: bool,
    tasks_limit: int | None = None,
) -> list[TaskResult]:
    """Run the task stream once; ``hindsight`` switches recall + reflection on."""
    from langchain_hindsight import Hindsight

    env = Environment(workdir / "data")
    env.root.mkdir(parents=True, exist_ok=True)
    tasks = make_tasks(env)[:tasks_limit]
    tools = make_tools(env)
    if forced:
        tools.append(StructuredTool.from_function(final_answer, return_direct=True))
    extra: list[Any] = [ForceToolChoice()] if forced else []
    results: list[TaskResult] = []
    hs = (
        Hindsight(
            workdir / "memory_db",
            namespace="agent_gain",
            model=model if _is_real(model) else None,
            structured_output=structured_output,
        )
        if hindsight
        else None
    )
    try:
        for i, task in enumerate(tasks):
            middleware = [*extra, hs.middleware()] if hs is not None else extra
            agent = create_agent(model, tools=tools, system_prompt=SYSTEM_PROMPT, middleware=middleware)
            counter = _CountCalls()
            run_id = uuid.uuid4()
            start = time.perf_counter()
            config: RunnableConfig = {"callbacks": [counter], "recursion_limit": 25, "run_id": run_id}
            state = agent.invoke({"messages": [HumanMessage(task.text)]}, config=config)
            seconds = time.perf_counter() - start
            messages = list(state["messages"])
            served = 0
            if hs is not None:
                hs.flush()
                served = len(hs.journal.get(str(run_id)).served_ids)
            results.append(
                TaskResult(
                    index=i + 1,
                    lang=task.lang,
                    model_calls=counter.calls,
                    tool_errors=sum(isinstance(m, ToolMessage) and m.status == "error" for m in messages),
                    success=task.expected in _final_text(messages),
                    served=served,
                    seconds=round(seconds, 3),
                )
            )
    finally:
        if hs is not None:
            hs.close()
    return results


def _is_real(model: BaseChatModel) -> bool:
    return not isinstance(model, ReactiveToolModel)


def summarize(without: list[TaskResult], with_: list[TaskResult]) -> dict[str, Any]:
    def totals(rows: list[TaskResult]) -> dict[str, int]:
        return {
            "model_calls": sum(r.model_calls for r in rows),
            "tool_errors": sum(r.tool_errors for r in rows),
            "successes": sum(r.success for r in rows),
        }

    return {"without": totals(without), "with": totals(with_), "tasks": len(with_)}


def render(report: dict[str, Any]) -> str:
    lines = [
        "# Agent gain: the same task stream without and with hindsight",
        "",
        f"Model: {report['model']}; forced tool: {report['forced_tool']}; tasks: {report['summary']['tasks']}.",
        "",
        "| task | lang | calls w/o | calls with | tool errors w/o | tool errors with | success w/o | success with | served |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for a, b in zip(report["without"], report["with"], strict=True):
        lines.append(
            f"| {a['index']} | {a['lang']} | {a['model_calls']} | {b['model_calls']} | {a['tool_errors']} | "
            f"{b['tool_errors']} | {a['success']} | {b['success']} | {b['served']} |"
        )
    s = report["summary"]
    lines += [
        "",
        f"Totals: model calls {s['without']['model_calls']} → {s['with']['model_calls']}, tool errors "
        f"{s['without']['tool_errors']} → {s['with']['tool_errors']}, successes {s['without']['successes']} → "
        f"{s['with']['successes']} of {s['tasks']}.",
    ]
    return "\n".join(lines) + "\n"


def select_model(name: str | None, base_url: str | None, *, forced: bool = False) -> BaseChatModel:
    if not name:
        return scripted_policy(forced=forced)
    from hindsight_demo import select_model as demo_select

    return demo_select(name, base_url)[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", help="OpenAI-compatible model name (default: the offline scripted policy)")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. a local llama.cpp server")
    parser.add_argument("--forced-tool", action="store_true", help="add final_answer and force a tool call every turn")
    parser.add_argument("--no-structured-output", action="store_true", help="reflection asks for JSON text")
    parser.add_argument("--tasks", type=int, default=None, help="run only the first N tasks")
    parser.add_argument("--no-write", action="store_true", help="do not write benchmarks/results")
    args = parser.parse_args(argv)
    model = select_model(args.model, args.base_url, forced=args.forced_tool)
    runs: dict[str, list[TaskResult]] = {}
    for arm, on in (("without", False), ("with", True)):
        with tempfile.TemporaryDirectory(prefix=f"agent_gain_{arm}_") as tmp:
            runs[arm] = run_stream(
                hindsight=on,
                workdir=Path(tmp),
                model=model,
                forced=args.forced_tool,
                structured_output=not args.no_structured_output,
                tasks_limit=args.tasks,
            )
    report = {
        "model": args.model or "scripted policy (offline, not an LLM)",
        "forced_tool": args.forced_tool,
        "without": [asdict(r) for r in runs["without"]],
        "with": [asdict(r) for r in runs["with"]],
        "summary": summarize(runs["without"], runs["with"]),
    }
    text = render(report)
    sys.stdout.write(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "agent_gain.json").write_text(
            json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (RESULTS / "agent_gain.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
