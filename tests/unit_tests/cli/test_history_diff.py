"""``hindsight history`` shows what changed between versions: a word-level diff, wrapped, never cut (issue 33, point 7).

It used to clip each version at 50 columns, so the article's Java → Python chain printed neither
"Java" nor "Python".
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore, MemoryUnit
from tests.unit_tests.cli.test_cli import run

JAVA_ZH = "用户是一名后端工程师，日常工作以微服务开发为主，团队的技术栈要求统一，用户偏好使用Java编写所有后端服务代码"
PY_ZH = "用户是一名后端工程师，日常工作以微服务开发为主，团队的技术栈要求统一，用户偏好使用Python编写所有后端服务代码"
JAVA_EN = (
    "The user is a backend engineer whose daily work is mostly microservices; the team wants one stack, "
    "and the user prefers to write every backend service in Java"
)
PY_EN = JAVA_EN.replace("in Java", "in Python, with type hints")


def _cols(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


@pytest.mark.parametrize(("old", "new"), [(JAVA_ZH, PY_ZH), (JAVA_EN, PY_EN)], ids=["zh", "en"])
def test_history_prints_both_versions_and_the_change(
    make_fake_store: Callable[..., MemoryStore],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    old: str,
    new: str,
) -> None:
    store = make_fake_store("db")
    store.add(MemoryUnit(memory_id="mem_java", content=old, source="user_feedback"))
    store.supersede("mem_java", MemoryUnit(memory_id="mem_py", content=new, source="user_feedback"), reason="changed")
    path = str(tmp_path / "db")
    store.close()
    monkeypatch.setenv("COLUMNS", "60")
    code, out, err = run(capsys, "history", "mem_java", "--path", path)
    assert code == 0, err
    assert "Java" in out
    assert "Python" in out
    assert "[-Java-]{+Python" in out.replace("\n  ", "")  # the change, marked word by word
    assert "…" not in out  # nothing is cut
    assert all(_cols(line) <= 60 for line in out.splitlines()[3:]), out  # the versions are wrapped to the terminal
    printed = "".join("".join(out.split()))
    assert "".join(old.split()) in printed  # the first version whole
