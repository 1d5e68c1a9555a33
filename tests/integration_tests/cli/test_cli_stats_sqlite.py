"""``hindsight stats`` answered from Chroma's SQLite file when the counts files cannot answer: the same bytes as
the store's count, nothing written, no chromadb (nor numpy) imported; a guard that fires means the store counts."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from langchain_hindsight.cli import _stats, browse
from langchain_hindsight.cli.main import EXIT_OK, main
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.store._directory import file_states
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit
from tests.counts import counts_files, erase_counts
from tests.fakes import child_env

TEAM = "团队甲"
UNITS = [
    MemoryUnit(memory_id="m_csv", content="读取中文CSV时指定encoding='utf-8-sig'。", task_type="data_cleaning"),
    MemoryUnit(memory_id="m_sql", content="查询前先确认表的分区字段。", task_type="database_query", source="rule"),
    MemoryUnit(memory_id="m_report", content="Weekly reports cover last week only.", task_type="weekly_report"),
    MemoryUnit(memory_id="m_old", content="Old API base URL was v1.", task_type="api_call", source="manual"),
    MemoryUnit(memory_id="m_team", content="团队甲的周报周一提交。", namespace=TEAM, source="user_feedback"),
    MemoryUnit(memory_id="m_team2", content="团队甲用飞书发通知。", namespace=TEAM, task_type="file_operation"),
]
VARIANTS = [(), ("--json",), ("--all",), ("--all", "--json"), ("--namespace", TEAM), ("--namespace", TEAM, "--json")]


@pytest.fixture
def store_dir(make_fake_store: Callable[..., MemoryStore], tmp_path: Path) -> Path:
    """A closed store without counts files: two namespaces, four sources, an archived memory, journalled runs."""
    store = make_fake_store("db")
    store.add_many(UNITS, dedupe=False)
    store.archive(["m_old"])
    journal = RunJournal(store)
    for run_id in ("run-1", "run-2"):
        journal.start(run_id, task="清洗 sales.csv", task_type="data_cleaning")
        journal.finish(run_id, outcome="success")
    store.close()
    path = tmp_path / "db"
    erase_counts(path)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["stats", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _refuse(calls: list[argparse.Namespace]) -> Callable[[argparse.Namespace], int]:
    def stats(args: argparse.Namespace) -> int:
        calls.append(args)
        return 9

    return stats


@pytest.mark.parametrize("variant", VARIANTS, ids=" ".join)
def test_the_file_answer_is_byte_identical_to_the_stores_count(
    store_dir: Path, variant: tuple[str, ...], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ("--path", str(store_dir), *variant)
    before = file_states(store_dir)
    stamp = (store_dir / ".hindsight-clean").read_bytes()
    calls: list[argparse.Namespace] = []
    counting = browse.stats
    monkeypatch.setattr(browse, "stats", _refuse(calls))  # the store must not be opened
    code, from_file, err = run(capsys, *argv)
    assert (code, calls, err) == (EXIT_OK, [], "")
    assert file_states(store_dir) == before  # nothing written: no counts file, the database untouched
    assert (store_dir / ".hindsight-clean").read_bytes() == stamp
    monkeypatch.setattr(browse, "stats", counting)
    monkeypatch.setattr(_stats, "count_closed", lambda *args, **kwargs: None)  # now the store counts
    code, counted, err = run(capsys, *argv)
    assert (code, err) == (EXIT_OK, "")
    assert from_file == counted
    assert counts_files(store_dir)  # the store's close kept what it counted (the one writer)


def test_a_relative_path_is_answered_too(
    store_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[argparse.Namespace] = []
    monkeypatch.setattr(browse, "stats", _refuse(calls))
    monkeypatch.chdir(store_dir.parent)
    code, out, err = run(capsys, "--path", store_dir.name, "--all")
    assert (code, calls, err) == (EXIT_OK, [], "")
    assert out.startswith("namespace default: 4 memories, 2 journalled runs\n")


def test_a_namespace_the_store_lacks_is_reported_by_opening_it(
    store_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variant in (("--namespace", "nobody"), ("--namespace", "nobody", "--all")):
        code, out, err = run(capsys, "--path", str(store_dir), *variant)
        assert (code, out) == (3, "")  # not found, as opening the store says
        assert "no namespace 'nobody'" in err
    code, out, _ = run(capsys, "--path", str(store_dir), "--json")  # the default namespace: counted, empty or not
    assert code == EXIT_OK
    assert '"total": 4' in out


def test_a_guard_that_fires_leaves_the_count_to_the_store(
    store_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a chromadb this reader was not tested with (the guards themselves: tests/integration_tests/store/backend/)
    monkeypatch.setattr("langchain_hindsight.store.backend.chroma_file.TESTED_CHROMADB", frozenset({"0.0.1"}))
    code, out, err = run(capsys, "--path", str(store_dir), "--all", "--json")
    assert (code, err) == (EXIT_OK, "")
    assert counts_files(store_dir)  # the store counted, and its close kept the counts
    monkeypatch.undo()
    erase_counts(store_dir)
    assert run(capsys, "--path", str(store_dir), "--all", "--json")[1] == out


_PROBE = """
import sys
from langchain_hindsight.cli.main import main
code = main(sys.argv[1:])
print("imported:", sorted(m for m in ("chromadb", "numpy", "langchain_core") if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""


def test_the_file_answer_imports_no_chromadb(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    probe = [sys.executable, "-c", _PROBE, "stats", "--path", str(store_dir), "--all"]
    child = subprocess.run(probe, capture_output=True, text=True, env=child_env(), timeout=300, check=False)
    assert child.returncode == EXIT_OK, child.stderr[-2000:]
    assert child.stderr.strip().splitlines()[-1] == "imported: []"
    assert counts_files(store_dir) == []  # answered from the file: nothing written
    code, counted, _ = run(capsys, "--path", str(store_dir), "--all")
    assert code == EXIT_OK
    assert child.stdout == counted
