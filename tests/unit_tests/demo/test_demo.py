"""The offline demo: real files, tools, agent, store, reflection; the scripted model's honesty."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

import langchain_hindsight
from hindsight_demo import decide, demo_tools, select_model, write_demo_files
from hindsight_demo.cli import main as demo_main
from langchain_hindsight.errors import ConfigurationError
from tests import source


def test_demo_files_are_gbk_semicolon_and_tools_really_parse_them(tmp_path: Path) -> None:
    paths = write_demo_files(tmp_path)
    raw = paths[0].read_bytes()
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    assert raw.decode("gbk").splitlines()[0] == "日期;门店;品类;销售额"
    read_csv, detect_format = demo_tools(tmp_path)
    bad = read_csv.invoke({"path": str(paths[0])})
    assert bad.startswith("UnicodeDecodeError")  # handled tool error, as the agent sees it
    wrong_delimiter = read_csv.invoke({"path": str(paths[0]), "encoding": "gbk"})
    assert wrong_delimiter.startswith("ParseError")
    assert detect_format.invoke({"path": str(paths[0])}) == "encoding=gbk delimiter=';'"
    ok = read_csv.invoke({"path": str(paths[0]), "encoding": "gbk", "delimiter": ";"})
    assert "6 行" in ok
    assert "6165.00" in ok
    outside = read_csv.invoke({"path": str(tmp_path.parent / "x.csv")})
    assert outside.startswith("PermissionError")


def test_scripted_policy_depends_on_the_prompt_it_receives() -> None:
    task = "统计 /d/sales.csv 中的销售额合计"
    plain = decide([HumanMessage(task)])
    assert plain.tool_calls[0]["args"] == {"path": "/d/sales.csv"}
    lesson = (
        "[相关经验]\n1. 使用read_csv时，encoding=None会失败，改为encoding='gbk', delimiter=';'后成功。（置信度：0.70）"
    )
    informed = decide([HumanMessage(f"{lesson}\n\n[当前任务]\n{task}")])
    assert informed.tool_calls[0]["args"] == {"path": "/d/sales.csv", "encoding": "gbk", "delimiter": ";"}
    other = decide([HumanMessage(f"[相关经验]\n1. 用 encoding='utf-8-sig' 读取（置信度：0.9）\n\n[当前任务]\n{task}")])
    assert other.tool_calls[0]["args"]["encoding"] == "utf-8-sig"
    # after an error it detects the format, then uses what the tool reported
    call = plain.tool_calls[0]
    error = ToolMessage("UnicodeDecodeError: ...", tool_call_id=call["id"], name="read_csv", status="error")
    detect = decide([HumanMessage(task), plain, error])
    assert detect.tool_calls[0]["name"] == "detect_format"
    found = ToolMessage("encoding=gbk delimiter=';'", tool_call_id="x", name="detect_format")
    retry = decide([HumanMessage(task), plain, error, detect, found])
    assert retry.tool_calls[0]["args"] == {"path": "/d/sales.csv", "encoding": "gbk", "delimiter": ";"}
    done = ToolMessage("读取成功：6 行", tool_call_id="y", name="read_csv")
    assert isinstance(decide([HumanMessage(task), retry, done]), AIMessage)


def test_model_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    model, real = select_model()
    assert not real
    assert type(model).__name__ == "ScriptedDemoModel"
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        select_model("gpt-4o-mini")
    chat, real = select_model("qwen2.5", base_url="http://127.0.0.1:9/v1")  # never called here
    assert real
    assert type(chat).__name__ == "ChatOpenAI"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("HINDSIGHT_MODEL", "gpt-4o-mini")
    chat, real = select_model()
    assert real
    assert getattr(chat, "model_name", None) == "gpt-4o-mini"


def test_demo_cli_reports_a_missing_key_before_writing_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert demo_main(["--path", str(tmp_path), "--model", "gpt-4o-mini"]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_library_never_imports_the_demo() -> None:
    package = Path(langchain_hindsight.__file__).parent
    importers = []
    for path in package.rglob("*.py"):
        for node in source.nodes(path):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "hindsight_demo" or n.startswith("hindsight_demo.") for n in names):
                importers.append(f"{path.relative_to(package)}:{node.lineno}")
    assert importers == []
    assert any(package.rglob("*.py")), "the scan must see the package"


def test_hindsight_demo_command_runs_the_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    import langchain_hindsight.cli.main as cli
    import langchain_hindsight.cli.serve as serve  # where `hindsight demo` looks the entry point up

    seen: list[list[str]] = []

    def fake_entry_points(**selector: str) -> list[EntryPoint]:
        assert selector == {"group": "console_scripts", "name": "hindsight-demo"}
        return [EntryPoint(name="hindsight-demo", value="hindsight_demo.cli:main", group="console_scripts")]

    monkeypatch.setattr(serve, "entry_points", fake_entry_points)
    monkeypatch.setattr("hindsight_demo.cli.main", lambda argv: seen.append(list(argv)) or 0)
    assert cli.main(["demo", "--path", "/tmp/x", "--quiet"]) == 0
    assert seen == [["--path", "/tmp/x", "--quiet"]]
    assert cli.main(["demo", "--locale", "en"]) == 0
    assert seen[-1] == ["--locale", "en"]


def test_hindsight_demo_takes_the_language(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, object]] = []
    monkeypatch.setattr("hindsight_demo.cli.run_demo", lambda **kw: calls.append(kw) or 0)
    assert demo_main(["--locale", "en", "--quiet"]) == 0
    assert demo_main([]) == 0
    assert [c["locale"] for c in calls] == ["en", "zh"]


def test_a_shortened_step_line_says_so() -> None:
    """A tool message cut to fit the screen ends with '…', so the reader knows the sentence goes on."""
    from hindsight_demo import _describe_steps

    long = "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xc8 in position 0: invalid continuation byte. " * 2
    (cut, whole) = _describe_steps(
        [ToolMessage(long, tool_call_id="1", status="error"), ToolMessage("读取成功：6 行", tool_call_id="2")]
    )
    assert cut.startswith("tool  ✗ UnicodeDecodeError")
    assert cut.endswith("…")
    assert len(cut) <= len("tool  ✗ ") + 110
    assert whole == "tool  ✓ 读取成功：6 行"


def test_demo_help_says_where_it_writes() -> None:
    from hindsight_demo.cli import build_parser

    text = " ".join(build_parser().format_help().split())
    assert "hindsight-demo, reused by every run" in text
    assert "--quiet print nothing" in text


def test_the_scripted_policy_reads_the_path_from_the_current_task_in_either_language() -> None:
    """The lesson in the block names '*.csv' too: the file to read is the one under [当前任务] / [Current task]."""
    for header, current in (("[相关经验]", "[当前任务]"), ("[Relevant experience]", "[Current task]")):
        prompt = (
            f"{header}\n1. With read_csv, encoding='gbk', delimiter=';' works (task: Sum the sales in *.csv).\n\n"
            f"{current}\nSum the sales in /data/sales_2024_02.csv and say how many rows it has."
        )
        (tool_call,) = decide([HumanMessage(prompt)]).tool_calls
        assert tool_call["args"] == {"path": "/data/sales_2024_02.csv", "encoding": "gbk", "delimiter": ";"}
