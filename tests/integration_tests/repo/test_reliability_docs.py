"""The storage page (docs/storage.md): every example runs, and every test file it cites exists.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/repo/test_reliability_docs.py``.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from tests.unit_tests.repo.test_reliability_docs import DOC

BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
@pytest.mark.integration
def test_guarantees_examples_run(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType(f"guarantees_example_{index}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(BLOCKS[index], f"docs/storage.md#{index}", "exec"), module.__dict__)
