"""The storage page (docs/storage.md): every example runs, and every test file it cites exists."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "storage.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
@pytest.mark.integration
def test_guarantees_examples_run(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType(f"guarantees_example_{index}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(BLOCKS[index], f"docs/storage.md#{index}", "exec"), module.__dict__)


def test_cited_tests_exist() -> None:
    cited = set(re.findall(r"`(test_[a-z_]+\.py)`", DOC.read_text(encoding="utf-8")))
    assert cited
    tests = Path(__file__).resolve().parents[2]
    assert {name for name in cited if not any(tests.rglob(name))} == set()
