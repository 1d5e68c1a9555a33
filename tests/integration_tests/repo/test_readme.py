"""README.md and docs/*.md cannot drift: their examples run, their numbers come from the benchmarks.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/repo/test_readme.py``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest

from tests.unit_tests.repo.test_readme import PAGES, ROOT, Block, _page_id, blocks

RUNNABLE_PAGES = [page for page in PAGES if any(b.runnable for b in blocks(page))]


# ------------------------------------------------------------------------------- examples run
def _run_bash(block: Block, cwd: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    for line in block.code.splitlines():
        argv = shlex.split(line, comments=True)
        if not argv:
            continue
        assert argv[0] == "hindsight", f"{block.label}: a runnable bash block runs `hindsight` commands only"
        command = [sys.executable, "-m", "langchain_hindsight.cli", *argv[1:]]
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, f"{block.label}: `{line.strip()}` exited {done.returncode}\n{done.stderr}"


@pytest.mark.slow  # the real embedders, several stores and `hindsight` child processes
@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=_page_id)
def test_runnable_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    module = types.ModuleType(f"docs_{page.stem.lower()}")  # typing resolves hints through sys.modules
    monkeypatch.setitem(sys.modules, module.__name__, module)
    ran = 0
    for block in blocks(page):
        if not block.runnable:
            continue
        assert block.lang in {"python", "bash"}, f"{block.label}: only python and bash blocks can be runnable"
        if block.lang == "python":
            printed = io.StringIO()
            with warnings.catch_warnings(), contextlib.redirect_stdout(printed):
                warnings.simplefilter("ignore", DeprecationWarning)
                exec(compile(block.code, block.label, "exec"), module.__dict__)
            for expected in re.findall(r"# → (.*)$", block.code, re.M):
                assert expected.strip() in printed.getvalue(), f"{block.label}: did not print {expected!r}"
        else:
            _run_bash(block, tmp_path)
        ran += 1
    assert ran


# ------------------------------------------------------------------ commands and variables
@pytest.mark.slow  # a child process
def test_every_cli_subcommand_is_documented() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "langchain_hindsight.cli", "--help"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    (choices,) = set(re.findall(r"\{([\w,-]+)\}", done.stdout))
    cli = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    undocumented = [name for name in choices.split(",") if f"hindsight {name}" not in cli]
    assert len(choices.split(",")) >= 10
    assert undocumented == []
