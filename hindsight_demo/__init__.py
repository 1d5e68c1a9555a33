"""The offline ``hindsight demo``: a real agent learns a lesson in run 1 and uses it in run 2.

Everything is real except, by default, the language model: real CSV files in a
demo directory (GBK-encoded, ``;``-delimited, as exported by many Chinese ERP
systems), real tools, ``create_agent`` with :class:`HindsightMiddleware`, the
trajectory recorder, rule-based reflection, the Chroma store, hybrid recall and
the injected ``[相关经验]`` block. The default model is a *scripted* policy
(:class:`ScriptedDemoModel`) whose every choice is computed from the messages
it receives, so whether run 2 calls the tool correctly the first time really
depends on the block in its prompt. Name a model (``--model`` or
``HINDSIGHT_MODEL``, with ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``; needs the
``openai`` extra) to run the same demo on any OpenAI-compatible chat model.

Run it with ``hindsight-demo`` or ``python -m hindsight_demo`` (``make demo``).
The package sits beside the library, not inside it: ``langchain_hindsight``
never imports it.

Example:
    .. code-block:: python

        from hindsight_demo import run_demo

        exit_code = run_demo(path="/tmp/hindsight-demo", quiet=True)
"""

from __future__ import annotations

import csv
import io
import os
import re
import sys
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from langchain_hindsight.settings import openai_chat_model

__all__ = [
    "DEMO_FILES",
    "ScriptedDemoModel",
    "decide",
    "demo_tools",
    "experience_block",
    "run_demo",
    "select_model",
    "write_demo_files",
]

# ---------------------------------------------------------------------------- data
_HEADER = ("日期", "门店", "品类", "销售额")
_ROWS: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    "sales_2024_01.csv": (
        ("2024-01-03", "北京朝阳店", "饮料", "1280.50"),
        ("2024-01-05", "上海静安店", "零食", "860.00"),
        ("2024-01-09", "广州天河店", "饮料", "1532.20"),
        ("2024-01-14", "北京朝阳店", "日用品", "412.80"),
        ("2024-01-21", "成都锦江店", "零食", "975.40"),
        ("2024-01-28", "上海静安店", "饮料", "1104.10"),
    ),
    "sales_2024_02.csv": (
        ("2024-02-02", "北京朝阳店", "饮料", "1318.00"),
        ("2024-02-07", "广州天河店", "零食", "702.60"),
        ("2024-02-11", "成都锦江店", "饮料", "1450.90"),
        ("2024-02-16", "上海静安店", "日用品", "388.30"),
        ("2024-02-25", "北京朝阳店", "零食", "930.00"),
    ),
}
DEMO_FILES: tuple[str, ...] = tuple(_ROWS)
"""The CSV files the demo writes: ERP exports in GBK with ``;`` as delimiter."""
_ENCODING = "gbk"
_DELIMITER = ";"

TASKS: tuple[str, str] = (
    "统计 {path} 中的销售额合计，并说明数据有多少行。",
    "统计 {path} 中的销售额合计，并说明数据有多少行。",
)
"""Run 1 and run 2: the same kind of task on two different monthly exports."""

TASKS_EN: tuple[str, str] = (
    "Sum the sales in {path} and say how many rows it has.",
    "Sum the sales in {path} and say how many rows it has.",
)
"""The same two tasks in English (``--locale en``)."""


def write_demo_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Write the demo CSVs (GBK, ``;``-delimited) into ``directory``; return their paths.

    Idempotent: the files are rewritten with the same bytes.
    """
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, rows in _ROWS.items():
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter=_DELIMITER, lineterminator="\n")
        writer.writerow(_HEADER)
        writer.writerows(rows)
        path = root / name
        path.write_bytes(buffer.getvalue().encode(_ENCODING))
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------- tools
_CANDIDATE_DELIMITERS = ",;\t|"


def _inside(root: Path, path: str) -> Path:
    resolved = Path(path).expanduser().resolve()
    if resolved != root and root not in resolved.parents:
        raise ToolException(f"PermissionError: {path} is outside the demo directory {root}")
    if not resolved.is_file():
        raise ToolException(f"FileNotFoundError: no such file: {path}")
    return resolved


def _read_csv(root: Path, path: str, encoding: str = "utf-8", delimiter: str = ",") -> str:
    file = _inside(root, path)
    raw = file.read_bytes()
    try:
        text = raw.decode(encoding)
    except LookupError as e:
        raise ToolException(f"LookupError: unknown encoding {encoding!r}") from e
    except UnicodeDecodeError as e:
        raise ToolException(f"UnicodeDecodeError: {e}. The file is not {encoding}-encoded.") from e
    if len(delimiter) != 1:
        raise ToolException(f"ValueError: delimiter must be one character, got {delimiter!r}")
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if not rows:
        raise ToolException("ValueError: the file is empty")
    header = rows[0]
    if len(header) == 1:
        seen = [d for d in _CANDIDATE_DELIMITERS if d != delimiter and d in header[0]]
        raise ToolException(
            f"ParseError: parsed only one column with delimiter={delimiter!r}; the header contains {seen!r}, "
            "so the delimiter is probably different."
        )
    body = [r for r in rows[1:] if r]
    total = 0.0
    amount = header.index("销售额") if "销售额" in header else len(header) - 1
    for row in body:
        try:
            total += float(row[amount])
        except (ValueError, IndexError) as e:
            raise ToolException(f"ValueError: row {row!r} has no numeric {header[amount]!r}") from e
    return f"读取成功：{len(body)} 行，列 {header}；{header[amount]}合计 {total:.2f}"


def _detect_format(root: Path, path: str) -> str:
    raw = _inside(root, path).read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        encoding, text = "utf-8-sig", raw.decode("utf-8-sig")
    else:
        for encoding in ("utf-8", "gbk"):
            try:
                text = raw.decode(encoding)
                break
            except UnicodeDecodeError:
                continue
        else:
            raise ToolException("UnicodeDecodeError: neither utf-8 nor gbk decodes this file")
    sample = "\n".join(text.splitlines()[:5])
    try:
        delimiter = csv.Sniffer().sniff(sample, delimiters=_CANDIDATE_DELIMITERS).delimiter
    except csv.Error as e:
        raise ToolException(f"csv.Error: could not detect the delimiter: {e}") from e
    return f"encoding={encoding} delimiter='{delimiter}'"


def demo_tools(directory: str | os.PathLike[str]) -> list[BaseTool]:
    r"""The demo's two real tools, restricted to files under ``directory``.

    ``read_csv(path, encoding="utf-8", delimiter=",")`` parses a CSV and sums its
    sales column; ``detect_format(path)`` detects encoding (BOM, utf-8, gbk) and
    delimiter (``csv.Sniffer``). Failures come back to the agent as error
    ``ToolMessage``\\ s, as in a real agent with tool error handling.
    """
    root = Path(directory).expanduser().resolve()

    def read_csv(path: str, encoding: str = "utf-8", delimiter: str = ",") -> str:
        return _read_csv(root, path, encoding, delimiter)

    def detect_format(path: str) -> str:
        return _detect_format(root, path)

    tools: list[BaseTool] = [
        StructuredTool.from_function(
            read_csv,
            name="read_csv",
            description=(
                "Read a CSV file and return its row count, columns and the total of the sales column. "
                "Arguments: path, encoding (default 'utf-8'), delimiter (default ',')."
            ),
            handle_tool_error=True,
        ),
        StructuredTool.from_function(
            detect_format,
            name="detect_format",
            description="Detect a text file's encoding and CSV delimiter. Argument: path.",
            handle_tool_error=True,
        ),
    ]
    return tools


# ---------------------------------------------------------------------------- scripted model
_PATH = re.compile(r"(\S+\.csv)")
_ENCODING_IN = re.compile(r"encoding['\"]?\s*[=:：]\s*['\"]?([A-Za-z][\w-]*)", re.IGNORECASE)
_DELIMITER_IN = re.compile(r"delimiter['\"]?\s*[=:：]\s*['\"]([^'\"\s]|\\t)['\"]", re.IGNORECASE)
_BLOCK_HEADERS = ("[相关经验]", "[Relevant experience]")
_BLOCK_END = ("[当前任务]", "[Current task]")


def _text(message: BaseMessage) -> str:
    return message.text if isinstance(message.text, str) else str(message.content)


def experience_block(messages: Sequence[BaseMessage]) -> str:
    """The ``[相关经验]`` section found in the human messages of a prompt, or ``""``."""
    for message in messages:
        if not isinstance(message, HumanMessage):
            continue
        text = _text(message)
        for header in _BLOCK_HEADERS:
            start = text.find(header)
            if start < 0:
                continue
            block = text[start:]
            for end in _BLOCK_END:
                cut = block.find(end)
                if cut > 0:
                    block = block[:cut]
            return block.strip()
    return ""


def _params(text: str) -> dict[str, str]:
    """``encoding``/``delimiter`` values named in ``text``; the last mention wins.

    A lesson reads "with X it fails …, with Y it works", so the working
    parameters come last; ``None`` (a default that failed) is never taken.
    """
    found: dict[str, str] = {}
    encodings = [m.group(1).lower() for m in _ENCODING_IN.finditer(text) if m.group(1).lower() != "none"]
    if encodings:
        found["encoding"] = encodings[-1]
    delimiters = [m.group(1) for m in _DELIMITER_IN.finditer(text)]
    if delimiters:
        found["delimiter"] = "\t" if delimiters[-1] == "\\t" else delimiters[-1]
    return found


def _task_path(messages: Sequence[BaseMessage]) -> str:
    """The CSV path of the current task: after the block's end marker (either language), never a lesson's."""
    for message in reversed(messages):
        if not isinstance(message, HumanMessage):
            continue
        text = _text(message)
        for end in _BLOCK_END:
            text = text.split(end)[-1]
        if match := _PATH.search(text):
            return match.group(1)
    return ""


def decide(messages: Sequence[BaseMessage]) -> AIMessage:
    """The scripted demo policy: the next ``AIMessage`` given the prompt received.

    1. First call: read the CSV with the parameters an ``[相关经验]`` block in the
       prompt names (``encoding=...``, ``delimiter=...``); without a block, with
       the defaults (utf-8, ``,``).
    2. After a failed ``read_csv``: call ``detect_format``.
    3. After ``detect_format``: read again with what it detected.
    4. After a successful ``read_csv``: answer with the tool's result.
    """
    n = sum(isinstance(m, AIMessage) for m in messages) + 1
    path = _task_path(messages)
    last = messages[-1] if messages else None

    def tool_call(name: str, **args: str) -> AIMessage:
        return AIMessage(content="", tool_calls=[ToolCall(name=name, args=args, id=f"demo_call_{n}", type="tool_call")])

    if not path:
        return AIMessage(content="任务中没有找到 CSV 文件路径。")
    if isinstance(last, ToolMessage):
        if last.name == "read_csv" and last.status != "error":
            return AIMessage(content=f"{path}：{_text(last)}")
        if last.name == "read_csv":
            return tool_call("detect_format", path=path)
        if last.name == "detect_format" and last.status != "error":
            return tool_call("read_csv", path=path, **_params(_text(last)))
        return AIMessage(content=f"无法读取 {path}：{_text(last)}")
    return tool_call("read_csv", path=path, **_params(experience_block(messages)))


class ScriptedDemoModel(BaseChatModel):
    """The demo's offline chat model: :func:`decide` applied to the messages it receives.

    Not an LLM: a fixed policy. It is honest about learning only because its
    first tool call is computed from the ``[相关经验]`` block actually present
    in the prompt (no block, default parameters).
    """

    @property
    def _llm_type(self) -> str:
        return "hindsight-demo-scripted"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Any],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The model itself: the policy knows the demo's two tools."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=decide(messages))])


# ---------------------------------------------------------------------------- prompt capture
class _PromptCapture(BaseCallbackHandler):
    """Keeps the messages every chat-model call really received (from the callback event)."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any) -> Any:
        """Record the prompt of one model call."""
        self.prompts.extend(list(batch) for batch in messages)


# ---------------------------------------------------------------------------- screen
SYSTEM_PROMPT = "你是一个数据助手。用工具读取用户给出的 CSV 文件并回答问题。"
"""The demo agent's system prompt (the block never goes here: a model would take it as a standing instruction)."""

SYSTEM_PROMPT_EN = "You are a data assistant. Use the tools to read the CSV file the user names and answer."
"""The same system prompt in English (``--locale en``)."""

_INSPECT_QUERY = {"zh": "读取销售CSV", "en": "'read the sales CSV'"}

_SCRIPTED_NOTE = (
    "model: scripted offline policy, not an LLM (hindsight_demo.decide). Its first tool call is computed "
    "from the experience block in the prompt it receives; without a block it uses read_csv's defaults.\n"
    "       Use a real model: --model NAME or HINDSIGHT_MODEL=NAME (with OPENAI_API_KEY, OPENAI_BASE_URL)."
)


class _Screen:
    def __init__(self, stream: IO[str], quiet: bool) -> None:
        self.stream = stream
        self.quiet = quiet

    def __call__(self, text: str = "") -> None:
        if not self.quiet:
            self.stream.write(text + "\n")
            self.stream.flush()

    def messages(self, messages: Sequence[BaseMessage], indent: str = "    ") -> None:
        for message in messages:
            body = _text(message).strip().replace("\n", "\n" + indent + "  ")
            self(f"{indent}[{message.type}] {body}")


def _shorten(text: str, limit: int = 110) -> str:
    """``text`` on one screen line: cut at ``limit`` characters, ending with '…' when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe_steps(messages: Sequence[BaseMessage]) -> list[str]:
    lines = []
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            for tc in message.tool_calls:
                args = ", ".join(f"{k}={v!r}" for k, v in tc["args"].items() if k != "path")
                lines.append(f"model → {tc['name']}({args})")
        elif isinstance(message, ToolMessage):
            mark = "✗" if message.status == "error" else "✓"
            lines.append(f"tool  {mark} {_shorten(_text(message))}")
        elif isinstance(message, AIMessage):
            lines.append(f"answer: {_shorten(_text(message))}")
    return lines


@dataclass
class _Run:
    run_id: str
    messages: list[BaseMessage]
    prompts: list[list[BaseMessage]]

    @property
    def model_calls(self) -> int:
        return len(self.prompts)

    @property
    def tool_errors(self) -> int:
        return sum(isinstance(m, ToolMessage) and m.status == "error" for m in self.messages)


def select_model(model: str | BaseChatModel | None = None, base_url: str | None = None) -> tuple[BaseChatModel, bool]:
    """The demo's chat model and whether it is a real LLM.

    ``model`` (or ``HINDSIGHT_MODEL``) names an OpenAI-compatible model served at
    ``base_url`` (or ``OPENAI_BASE_URL``, default OpenAI) with ``OPENAI_API_KEY``
    (:func:`langchain_hindsight.settings.openai_chat_model`); nothing named means
    the offline :class:`ScriptedDemoModel`.

    Raises:
        ConfigurationError: a model is named but there is no key and no base URL.
        ImportError: a model is named and ``langchain-openai`` (the ``openai`` extra) is missing.
    """
    if isinstance(model, BaseChatModel):
        return model, not isinstance(model, ScriptedDemoModel)
    chat = openai_chat_model(model, base_url)
    return (ScriptedDemoModel(), False) if chat is None else (chat, True)


def run_demo(
    *,
    path: str | os.PathLike[str] | None = None,
    model: str | BaseChatModel | None = None,
    base_url: str | None = None,
    quiet: bool = False,
    out: IO[str] | None = None,
    locale: Literal["zh", "en"] = "zh",
) -> int:
    """Run the two-run demo and print what happens; returns the exit code (0).

    Run 1 meets a GBK, ``;``-delimited CSV without experience (learn-only): it
    fails, detects the format, succeeds, and reflection stores the lesson. Run 2,
    a similar file, recalls the lesson; the prompt its model really received is
    printed. Re-running on the same ``path`` adds no duplicate memory (the store
    merges the identical lesson).

    Args:
        path: Demo directory (CSV files and the store); default ``<tmp>/hindsight-demo``
            (not the package's name: such a directory in the working directory would shadow
            an editable install).
        model: A model name (OpenAI-compatible) or a chat model; default scripted, offline.
        base_url: OpenAI-compatible endpoint for a named model.
        quiet: Print nothing.
        out: Where to print (default ``sys.stdout``).
        locale: ``"zh"`` (default) or ``"en"``: the language of the tasks, the system prompt, the lesson and
            the block. Each language has its own namespace (``demo``, ``demo-en``), so each starts from nothing.
    """
    from langchain.agents import create_agent

    from langchain_hindsight.hindsight import Hindsight

    screen = _Screen(out or sys.stdout, quiet)
    root = Path(path) if path is not None else Path(tempfile.gettempdir()) / "hindsight-demo"
    chat, real = select_model(model, base_url)
    files = write_demo_files(root / "data")
    tools = demo_tools(root / "data")
    screen("hindsight demo: an agent learns from run 1 and uses the lesson in run 2")
    screen(f"  data:  {root / 'data'} ({', '.join(DEMO_FILES)}: GBK-encoded, ';'-delimited ERP exports)")
    screen(f"  store: {root / 'memory_db'}")
    screen(f"  model: {getattr(chat, 'model_name', type(chat).__name__)} (real LLM)" if real else "  " + _SCRIPTED_NOTE)
    tasks, system_prompt = (TASKS_EN, SYSTEM_PROMPT_EN) if locale == "en" else (TASKS, SYSTEM_PROMPT)
    namespace = "demo-en" if locale == "en" else "demo"
    with Hindsight(
        root / "memory_db", model=chat if real else None, namespace=namespace, task_type="data_analysis", locale=locale
    ) as hs:
        before = hs.store.count(status="active")
        screen(f"  memories in the store before: {before}")

        def run(index: int, file: Path, *, recall: bool) -> _Run:
            agent = create_agent(
                chat, tools=tools, system_prompt=system_prompt, middleware=[hs.middleware(recall=recall)]
            )
            capture = _PromptCapture()
            run_id = str(uuid.uuid4())
            config: RunnableConfig = {"callbacks": [capture], "run_id": uuid.UUID(run_id)}
            state = agent.invoke({"messages": [HumanMessage(tasks[index].format(path=file))]}, config=config)
            return _Run(run_id, list(state["messages"]), capture.prompts)

        screen()
        screen(f"[run 1] {tasks[0].format(path=files[0].name)}  (no experience injected: learn only)")
        first = run(0, files[0], recall=False)
        for line in _describe_steps(first.messages):
            screen(f"    {line}")
        hs.flush()
        produced = hs.store.get_many(hs.journal.get(first.run_id).produced)
        screen(f"  reflection stored {len(produced)} lesson(s) from run 1:")
        for unit in produced:
            screen(f"    - {unit.content}  (source={unit.source}, confidence={unit.score_confidence:.2f})")

        screen()
        screen(f"[run 2] {tasks[1].format(path=files[1].name)}  (hindsight on)")
        second = run(1, files[1], recall=True)
        screen("  the prompt run 2's model really received on its first call:")
        screen.messages(second.prompts[0] if second.prompts else [])
        for line in _describe_steps(second.messages):
            screen(f"    {line}")
        served = hs.journal.get(second.run_id).served_ids
        screen()
        screen("summary")
        screen(f"  run 1: {first.model_calls} model calls, {first.tool_errors} tool error(s)")
        screen(f"  run 2: {second.model_calls} model calls, {second.tool_errors} tool error(s)")
        for unit in hs.store.get_many(served):
            screen(f"  served memory now: confidence {unit.score_confidence:.2f}, used {unit.access_count} time(s)")
        after = hs.store.count(status="active")
        screen(f"  active memories: {before} before, {after} after (re-running merges identical lessons)")
        screen(f"  store: {root / 'memory_db'}")
        screen(
            f"  inspect: hindsight search --path {root / 'memory_db'} --namespace {namespace} {_INSPECT_QUERY[locale]}"
        )
    return 0
