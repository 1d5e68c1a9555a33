"""The offline demo: real files, tools, agent, store, reflection; the scripted model's honesty.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/demo/test_demo.py``.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from hindsight_demo import run_demo


@pytest.mark.integration
def test_run_demo_learns_in_run_one_and_uses_it_in_run_two(tmp_path: Path) -> None:
    out = io.StringIO()
    assert run_demo(path=tmp_path, out=out) == 0
    text = out.getvalue()
    assert "scripted offline policy" in text
    run2 = text.split("[run 2]")[1]
    prompt = run2.split("model really received")[1].split("model →")[0]
    assert prompt.count("[相关经验]") == 1
    assert "encoding='gbk'" in prompt
    assert "[system]" in prompt
    assert "[相关经验]" not in prompt.split("[human]")[0]  # not in the system prompt
    assert "run 1: 4 model calls, 1 tool error(s)" in text
    assert "run 2: 2 model calls, 0 tool error(s)" in text
    assert "active memories: 0 before, 1 after" in text
    # idempotent: a second run merges the identical lesson
    again = io.StringIO()
    assert run_demo(path=tmp_path, out=again) == 0
    assert "active memories: 1 before, 1 after" in again.getvalue()
    # docs/demo.md shows this output (paths shortened to …/): every line of it is a line the demo printed
    import re

    page = (Path(__file__).resolve().parents[3] / "docs" / "demo.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"```text\n(.*?)```", page, re.S)
    printed = [line.rstrip() for line in text.splitlines()]
    missing = [line for line in shown.splitlines() if line.replace("…/", f"{tmp_path}/data/") not in printed]
    assert missing == []


@pytest.mark.integration
def test_the_demo_in_english_learns_and_recalls_in_english(tmp_path: Path) -> None:
    """--locale en: the tasks, the system prompt, the lesson and the block are English; the loop is the same."""
    out = io.StringIO()
    assert run_demo(path=tmp_path, out=out, locale="en") == 0
    text = out.getvalue()
    assert "[run 1] Sum the sales in sales_2024_01.csv" in text
    lesson = text.split("reflection stored 1 lesson(s) from run 1:")[1].split("\n")[1]
    assert "encoding='gbk'" in lesson
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in lesson), lesson  # an English lesson
    prompt = text.split("model really received")[1].split("model →")[0]
    assert prompt.count("[Relevant experience]") == 1
    assert "[相关经验]" not in text
    assert "run 2: 2 model calls, 0 tool error(s)" in text
    assert "--namespace demo-en" in text
    # the Chinese demo in the same directory keeps its own namespace: its first run still learns from nothing
    zh = io.StringIO()
    assert run_demo(path=tmp_path, out=zh) == 0
    assert "memories in the store before: 0" in zh.getvalue()


@pytest.mark.slow
def test_python_m_hindsight_demo_exits_zero_offline(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hindsight_demo", "--path", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "[相关经验]" in done.stdout.split("[run 2]")[1]
