"""``hindsight stats`` answered from the store's trusted summary: the same bytes as counting, counted afresh
after any write, no Chroma import, the same error on a locked store.
What the counts files cannot answer, the store counts."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from langchain_hindsight.cli import _stats, browse
from langchain_hindsight.cli.main import EXIT_LOCKED, EXIT_OK, main
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.store._directory import STAMP_FILE, read_stamp
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit
from tests.counts import counts_files, counts_vouched, read_counts

TEAM = "团队甲"
UNITS = [
    MemoryUnit(memory_id="m_csv", content="读取中文CSV时指定encoding='utf-8-sig'。", task_type="data_cleaning"),
    MemoryUnit(memory_id="m_sql", content="查询前先确认表的分区字段。", task_type="database_query", source="rule"),
    MemoryUnit(memory_id="m_report", content="Weekly reports cover last week only.", task_type="weekly_report"),
    MemoryUnit(memory_id="m_old", content="Old API base URL was v1.", task_type="api_call", source="manual"),
    MemoryUnit(memory_id="m_team", content="团队甲的周报周一提交。", namespace=TEAM, source="user_feedback"),
    MemoryUnit(memory_id="m_team2", content="团队甲用飞书发通知。", namespace=TEAM, task_type="file_operation"),
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def store_dir(make_fake_store: Callable[..., MemoryStore], tmp_path: Path) -> Path:
    """A closed store: two namespaces (one Chinese), four sources, an archived memory, a journalled run."""
    store = make_fake_store("db")
    store.add_many(UNITS, dedupe=False)
    store.archive(["m_old"])
    journal = RunJournal(store)
    journal.start("run-1", task="清洗 sales.csv", task_type="data_cleaning")
    journal.finish("run-1", outcome="success")
    store.close()
    return tmp_path / "db"


def _recording(calls: list[argparse.Namespace], code: int) -> Callable[[argparse.Namespace], int]:
    """A stand-in for counting (the slow path): records its calls and returns ``code``."""

    def stats(args: argparse.Namespace) -> int:
        calls.append(args)
        return code

    return stats


VARIANTS = [(), ("--json",), ("--all",), ("--all", "--json"), ("--namespace", TEAM), ("--namespace", TEAM, "--json")]


@pytest.mark.parametrize("variant", VARIANTS, ids=" ".join)
def test_the_quick_answer_is_byte_identical_to_counting(
    store_dir: Path, variant: tuple[str, ...], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ("stats", "--path", str(store_dir), *variant)
    assert counts_files(store_dir) == []
    code, counted, err = run(capsys, *argv)
    assert code == EXIT_OK, err
    assert counts_vouched(store_dir, read_stamp(store_dir))
    calls: list[argparse.Namespace] = []
    monkeypatch.setattr(browse, "stats", _recording(calls, 9))
    code, quick, err = run(capsys, *argv)
    assert (code, calls, err) == (EXIT_OK, [], "")
    assert quick == counted
    if "--json" in variant:
        data = json.loads(quick)
        if "--all" in variant:
            assert list(data) == ["default", TEAM]
            assert data["default"]["status"] == {"active": 3, "archived": 1}
            assert data["default"]["runs"] == 1
        namespace = data.get(TEAM, None)
        if namespace is not None:
            assert namespace["by_source"] == {"user_feedback": 1, "agent_inference": 1}
    elif TEAM in variant:
        assert quick.startswith(f"namespace {TEAM}: 2 memories, 0 journalled runs\n")


def test_the_quick_path_counts_when_the_summary_lacks_a_namespace(
    store_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    p = str(store_dir)
    assert run(capsys, "stats", "--path", p)[0] == EXIT_OK  # counts the default namespace only
    summary = read_counts(store_dir)
    assert summary is not None
    assert summary.namespaces == ["default", TEAM]
    assert list(summary.stats) == ["default"]
    calls: list[argparse.Namespace] = []
    counting = browse.stats
    monkeypatch.setattr(browse, "stats", _recording(calls, 7))
    assert run(capsys, "stats", "--path", p, "--all")[0] == 7  # not answerable: counted
    assert run(capsys, "stats", "--path", p, "--namespace", "nobody")[0] == 7
    assert run(capsys, "stats", "--path", p)[0] == EXIT_OK  # answerable
    assert len(calls) == 2
    monkeypatch.setattr(browse, "stats", counting)
    code, counted, _ = run(capsys, "stats", "--path", p, "--namespace", TEAM, "--json")
    assert code == EXIT_OK
    summary = read_counts(store_dir)
    assert summary is not None
    assert list(summary.stats) == ["default", TEAM]
    assert json.loads(counted)[TEAM]["total"] == 2


def _totals(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    code, out, err = run(capsys, "stats", "--path", str(path), "--all", "--json")
    assert code == EXIT_OK, err
    result: dict[str, Any] = json.loads(out)
    return result


def _forget(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "forget", "m_csv", "--path", str(path))[0] == EXIT_OK


def _restore(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "restore", "m_old", "--path", str(path))[0] == EXIT_OK


def _archive(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MemoryStore(path, embeddings=None) as store:
        store.archive(["m_team2"], namespace=TEAM)


def _forget_namespace(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "forget", "--all", "--namespace", TEAM, "--yes", "--path", str(path))[0] == EXIT_OK


WRITES: dict[str, tuple[Callable[[Path, pytest.CaptureFixture[str]], None], Callable[[dict[str, Any]], Any]]] = {
    "forget": (_forget, lambda s: s["default"]["total"]),
    "restore": (_restore, lambda s: s["default"]["status"]),
    "archive": (_archive, lambda s: s[TEAM]["status"]),
    "forget --all": (_forget_namespace, lambda s: sorted(s)),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_after_any_write_the_next_stats_counts_afresh(
    store_dir: Path, write: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _totals(capsys, store_dir)
    assert _totals(capsys, store_dir) == before  # answered from the summary, which is now trusted
    assert counts_vouched(store_dir, read_stamp(store_dir))
    do, measure = WRITES[write]
    do(store_dir, capsys)
    after = _totals(capsys, store_dir)
    assert measure(after) != measure(before)  # a stale summary would repeat `before`
    expected = {
        "forget": 3,
        "restore": {"active": 4},
        "archive": {"active": 1, "archived": 1},
        "forget --all": ["default"],
    }[write]
    assert measure(after) == expected
    assert _totals(capsys, store_dir) == after


def test_a_locked_store_fails_as_before(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = str(store_dir)
    with MemoryStore(store_dir, embeddings=None):  # no summary yet
        code, _, locked_then = run(capsys, "show", "m_csv", "--path", p)  # the error of opening it
        assert code == EXIT_LOCKED
        assert run(capsys, "stats", "--path", p) == (EXIT_LOCKED, "", locked_then)
    assert run(capsys, "stats", "--path", p)[0] == EXIT_OK  # now with a trusted summary
    assert counts_vouched(store_dir, read_stamp(store_dir))
    with MemoryStore(store_dir, embeddings=None):
        assert run(capsys, "stats", "--path", p) == (EXIT_LOCKED, "", locked_then)
        assert "already open" in locked_then


def test_a_principal_never_reads_the_summary(
    store_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_summary(*args: object) -> None:
        raise AssertionError("the summary was read for a principal")

    monkeypatch.setattr(_stats.DerivedFiles, "closed_store", no_summary)
    code, out, err = run(capsys, "stats", "--path", str(store_dir), "--principal", TEAM, "--json")
    assert code == EXIT_OK, err
    assert list(json.loads(out)) == [TEAM]
    summary = read_counts(store_dir)  # what the store counted, kept by its close (the one writer)
    assert summary is not None
    assert summary.stats == json.loads(out)


def test_a_server_or_a_missing_directory_is_not_answered_quickly(store_dir: Path, tmp_path: Path) -> None:
    args = argparse.Namespace(
        path=str(store_dir),
        server="localhost:1",
        database_url=None,
        principal=None,
        config=None,
        namespace=None,
        all=False,
        json=False,
    )
    assert _stats.quick(args) is None
    args.server, args.path = None, str(tmp_path / "missing")
    assert _stats.quick(args) is None
    assert not (tmp_path / "missing").exists()


_NO_CHROMA = """
import sys
from langchain_hindsight.cli.main import main
code = main(sys.argv[1:])
print("chromadb imported:", "chromadb" in sys.modules, file=sys.stderr)
sys.exit(code)
"""


def _child(*argv: str, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root)}
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "langchain_hindsight.cli.main", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root, timeout=300, check=False)


@pytest.mark.integration
def test_stats_on_a_stamped_store_does_not_import_chromadb(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, counted, err = run(capsys, "stats", "--path", str(store_dir), "--all")  # the store counts, its close keeps
    assert code == EXIT_OK, err
    assert counts_vouched(store_dir, read_stamp(store_dir))
    first = subprocess.CompletedProcess[str]([], EXIT_OK, counted, "")
    again = _child("stats", "--path", str(store_dir), "--all", importtime=True)
    assert again.returncode == EXIT_OK, again.stderr[-2000:]
    assert again.stdout == first.stdout
    assert [line for line in again.stderr.splitlines() if "chromadb" in line] == []
    heavy = ("numpy", "langchain_core", "langchain_hindsight.store.replica.replica")  # the quick path stays small
    assert [line for line in again.stderr.splitlines() if line.split("|")[-1].strip() in heavy] == []
    root = Path(__file__).resolve().parents[3]
    wrapped = subprocess.run(
        [sys.executable, "-c", _NO_CHROMA, "stats", "--path", str(store_dir), "--all"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,
        timeout=300,
        check=False,
    )
    assert wrapped.returncode == EXIT_OK
    assert wrapped.stdout == first.stdout
    assert wrapped.stderr.strip().splitlines()[-1] == "chromadb imported: False"


@pytest.mark.integration
def test_after_an_import_the_next_stats_counts_afresh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``hindsight import`` embeds (the real default model): integration tier."""
    path = tmp_path / "db"

    def jsonl(name: str, units: list[MemoryUnit]) -> str:
        file = tmp_path / name
        file.write_text("".join(json.dumps(u.to_dict(), ensure_ascii=False) + "\n" for u in units), encoding="utf-8")
        return str(file)

    assert run(capsys, "import", jsonl("a.jsonl", UNITS[:2]), "--path", str(path))[0] == EXIT_OK
    before = _totals(capsys, path)
    assert _totals(capsys, path) == before
    assert counts_vouched(path, read_stamp(path))
    assert run(capsys, "import", jsonl("b.jsonl", UNITS[2:]), "--path", str(path))[0] == EXIT_OK
    assert counts_files(path) == []
    after = _totals(capsys, path)
    assert (before["default"]["total"], after["default"]["total"]) == (2, 4)
    assert after[TEAM]["total"] == 2
    assert (path / STAMP_FILE).exists()
