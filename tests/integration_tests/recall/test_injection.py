"""The [相关经验] block and task prompt (seed §3.3, §4.4, pitfalls 2 and 4), conflicts, README examples.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/recall/test_injection.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest


# ---------------------------------------------------------------- README section
@pytest.mark.integration
def test_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (Path(__file__).parents[3] / "docs/recall.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert blocks
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "docs/recall.md", "exec"), namespace)
    store = namespace.get("store")
    if store is not None:
        store.close()  # type: ignore[attr-defined]
