"""The recall engine: the retriever's computation without the LangChain retriever stack, shared by every caller.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/recall/test_recall_engine.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.embeddings.multilingual import ScriptRoutedEmbeddings
from langchain_hindsight.store._directory import STAMP_FILE
from tests.fakes import child_env
from tests.unit_tests.recall.test_recall_engine import NOW, OWN_LESSONS, ROOT

HEAVY = (
    "langchain_core.retrievers",
    "langchain_core.language_models.base",
    "langchain_core.language_models.chat_models",
)


"""What the engine must not pull in: the retriever base class and the chat-model stack (with tracers and
langsmith's run trees, ~0.3 s to import). ``langchain_core.language_models`` itself (a lazy package) and its
``_utils`` are imported by ``langchain_core.embeddings`` through the message translators, so they are not listed."""


_REPORT = """
import sys
code = 0
{body}
heavy = {heavy!r}
print("chromadb:", "chromadb" in sys.modules, file=sys.stderr)
print("heavy:", sorted(m for m in sys.modules if m.startswith(heavy)), file=sys.stderr)
sys.exit(code)
"""


def _run_child(body: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _REPORT.format(body=body, heavy=HEAVY), *args],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=ROOT,
        timeout=300,
        check=False,
    )


@pytest.mark.integration
def test_importing_the_engine_in_a_fresh_interpreter_loads_no_langchain_stack() -> None:
    run = _run_child("import langchain_hindsight.recall.engine")
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stderr.strip().splitlines()[-2:] == ["chromadb: False", "heavy: []"]


@pytest.mark.integration
def test_hindsight_search_loads_neither_the_retriever_nor_chat_models(tmp_path: Path) -> None:
    """The command opens the store (Chroma) and recalls through the engine, never the LangChain retriever stack;
    from the snapshot a clean close left or from the records, it prints the same."""
    path = tmp_path / "db"
    with MemoryStore(path, embeddings=ScriptRoutedEmbeddings()) as store:  # the command line's default embedder
        store.add_many([MemoryUnit(task_type=t, content=c, created_at=NOW) for t, _, c in OWN_LESSONS], dedupe=False)
        store.hybrid_search("warm up", store.embeddings.embed_query("warm up"), k=1)  # so close saves the snapshot
    body = "from langchain_hindsight.cli.main import main\ncode = main(sys.argv[1:])"
    run = _run_child(body, "search", "读取CSV 编码", "--path", str(path))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "utf-8-sig" in run.stdout
    assert run.stderr.strip().splitlines()[-2:] == ["chromadb: True", "heavy: []"]
    (path / STAMP_FILE).unlink()  # nothing vouched for: the mirror and the index are rebuilt from the records
    slow = _run_child(body, "search", "读取CSV 编码", "--path", str(path))
    assert slow.returncode == 0, slow.stderr[-2000:]
    assert slow.stdout == run.stdout
