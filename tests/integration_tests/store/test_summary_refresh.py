"""The statistics summary survives a writing session that held the recall mirror: ``count_by`` from the mirror
equals the plain count, the close rewrites what it can vouch for and drops the rest, never a stale entry.

``hindsight stats`` reads only the counts files, else the store counts."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight.cli import browse
from langchain_hindsight.cli.main import EXIT_OK, main
from langchain_hindsight.errors import BackendError, StoreError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.store import reads as store_reads
from langchain_hindsight.store._directory import read_stamp
from langchain_hindsight.store.backend import ChromaBackend, ChromaRecords
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.store.replica.summary import summary_entry
from langchain_hindsight.types import MemoryUnit
from tests.counts import counts_files, counts_vouched, erase_counts, read_counts, write_counts

TEAM = "团队甲"
NOW = datetime(2026, 11, 1, tzinfo=UTC)
FIELDS = ("status", "task_type", "source")


def _unit(memory_id: str, content: str, **fields: Any) -> MemoryUnit:
    return MemoryUnit(memory_id=memory_id, content=content, created_at=NOW, last_accessed_at=NOW, **fields)


# every status, several sources, task types in and out of the vocabulary (Chinese ones too), a merged unit
UNITS = [
    _unit("m_csv", "读取中文CSV时指定encoding='utf-8-sig'。", task_type="data_cleaning"),
    _unit("m_sql", "查询前先确认表的分区字段。", task_type="database_query", source="rule"),
    _unit("m_week", "Weekly reports cover last week only.", task_type="weekly_report", source="manual"),
    _unit("m_old", "Old API base URL was v1.", task_type="api_call", status="superseded"),
    _unit("m_new", "The API base URL is v2.", task_type="api_call", supersedes="m_old"),
    _unit("m_zh", "周报周一上午十点前提交。", task_type="周报撰写", source="user_feedback"),
    _unit("m_zh_old", "周报周五提交。", task_type="周报撰写", status="superseded", source="user_feedback"),
    _unit("m_gone", "Archive the raw dumps after a month.", task_type="file_operation", status="archived"),
    _unit("m_merged", "Retry HTTP 429 with backoff.", task_type="api_call", merged_from=["m_dup1", "m_dup2"]),
    _unit("m_team", "团队甲的周报周一提交。", namespace=TEAM, source="user_feedback"),
    _unit("m_team2", "团队甲用飞书发通知。", namespace=TEAM, task_type="文件处理"),
    _unit("m_team3", "团队甲旧的通知渠道是邮件。", namespace=TEAM, task_type="文件处理", status="archived"),
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _plain(store: MemoryStore, namespace: str | None = None) -> dict[tuple[str, ...], int]:
    """``count_by`` as it reads without a mirror (every record's metadata from Chroma)."""
    saved = store_reads._count_with_mirror
    try:
        store_reads._count_with_mirror = lambda *a, **k: None
        return store.count_by(*FIELDS, namespace=namespace)
    finally:
        store_reads._count_with_mirror = saved


@pytest.fixture
def store_dir(make_fake_store: Callable[..., MemoryStore], tmp_path: Path) -> Path:
    """A closed store of two namespaces (every status, Chinese task types) with a journalled run and a
    recall mirror snapshot of the default namespace (it was searched)."""
    store = make_fake_store("db")
    store.import_units(UNITS)
    journal = RunJournal(store)
    journal.start("run-1", task="清洗 sales.csv", task_type="data_cleaning")
    journal.finish("run-1", outcome="success")
    store.search("中文CSV", k=2)  # the recall mirror: saved at close
    store.close()
    assert list((tmp_path / "db" / "mirror").glob("*.npz"))
    return tmp_path / "db"


@pytest.fixture
def reopen(fake_embeddings: Embeddings) -> Callable[[Path], MemoryStore]:
    """Opens the store as the agent that wrote it does (its embedder: a mirror of other vectors is not loaded)."""
    return lambda path: MemoryStore(path, embeddings=fake_embeddings)


def _no_plain_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("count_by read every record's metadata")

    monkeypatch.setattr(store_reads, "_value_tuples", refuse)


# ---------------------------------------------------------------- count_by from the mirror


def test_count_by_from_a_loaded_mirror_equals_the_plain_count(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch, reopen: Callable[[Path], MemoryStore]
) -> None:
    with reopen(store_dir) as store:
        want = _plain(store)
        assert ("superseded", "周报撰写", "user_feedback") in want
        assert ("archived", "file_operation", "agent_inference") in want
        assert not store.replica.holds("default")
        _no_plain_read(monkeypatch)
        got = store.count_by(*FIELDS)  # loaded from the trusted snapshot, never built
        assert store.replica.holds("default")
        assert got == want
        assert list(got) == list(want)  # the same order too
        assert store.count_by("status", "run_id") == {("active", ""): 6, ("archived", ""): 1, ("superseded", ""): 2}
        monkeypatch.undo()
        assert store.count_by(*FIELDS, namespace=TEAM) == _plain(store, TEAM)  # no mirror: the plain path
        assert not store.replica.holds(TEAM)


def test_count_by_with_a_mirror_kept_through_writes_equals_the_plain_count(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch, reopen: Callable[[Path], MemoryStore]
) -> None:
    with reopen(store_dir) as store:
        store.search("周报", k=2)
        store.archive(["m_csv"])
        store.restore(["m_gone"])
        store.update("m_sql", task_type="数据查询")
        store.update("m_week", content="Weekly reports cover Monday to Sunday.")
        store.import_units([_unit("m_late", "导入的新经验。", task_type="周报撰写", source="manual")])
        store.discard(["m_merged"])
        _no_plain_read(monkeypatch)
        got = store.count_by(*FIELDS)
        monkeypatch.undo()
        assert got == _plain(store)
        assert sum(got.values()) == 9
        assert got[("archived", "data_cleaning", "agent_inference")] == 1


def test_count_by_does_not_build_a_mirror_nor_trust_an_unvouched_snapshot(
    store_dir: Path, reopen: Callable[[Path], MemoryStore]
) -> None:
    (store_dir / ".hindsight-clean").unlink()  # as a crash leaves it: the snapshot is not vouched for
    with reopen(store_dir) as store:
        assert store.count_by(*FIELDS) == _plain(store)
        assert not store.replica.holds("default")


def test_a_mirror_that_does_not_add_up_is_not_used(store_dir: Path, reopen: Callable[[Path], MemoryStore]) -> None:
    with reopen(store_dir) as store:
        store.search("周报", k=2)
        mirror = store.replica.held_mirror("default", load=False)
        assert mirror is not None
        mirror.discard(["m_csv"])  # a mirror missing an active record (never happens: checked anyway)
        got = store.count_by(*FIELDS)
        assert got == _plain(store)
        assert got[("active", "data_cleaning", "agent_inference")] == 1


# ---------------------------------------------------------------- the summary after a writing session


def _stats(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> str:
    code, out, err = run(capsys, "stats", "--path", str(path), *extra)
    assert code == EXIT_OK, err
    return out


def _quick_only(monkeypatch: pytest.MonkeyPatch) -> list[argparse.Namespace]:
    """Make counting fail loudly: what ``stats`` prints then comes from the summary."""
    calls: list[argparse.Namespace] = []

    def counted(args: argparse.Namespace) -> int:
        calls.append(args)
        return 9

    monkeypatch.setattr(browse, "stats", counted)
    return calls


def _counted_afresh(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> str:
    erase_counts(path)
    return _stats(capsys, path, *extra)


VARIANTS = [("--all",), ("--all", "--json"), (), ("--namespace", TEAM, "--json")]


@pytest.mark.parametrize("variant", VARIANTS, ids=" ".join)
def test_after_a_session_that_recalled_then_wrote_stats_answers_from_the_summary(
    store_dir: Path,
    variant: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reopen: Callable[[Path], MemoryStore],
) -> None:
    before = json.loads(_stats(capsys, store_dir, "--all", "--json"))  # counts; the summary is trusted now
    with reopen(store_dir) as store:
        store.search("周报", k=2)  # as an agent does: recall, then write
        store.add(_unit("m_added", "Check the timezone of every timestamp column.", task_type="data_cleaning"))
        store.archive(["m_week"])
        store.update("m_zh", content="周报周一上午九点前提交。")  # new content: a stale mirror row
        journal = RunJournal(store)
        journal.start("run-2", task="写周报", task_type="weekly_report")
        journal.finish("run-2", outcome="success")
    assert counts_vouched(store_dir, read_stamp(store_dir))
    calls = _quick_only(monkeypatch)
    quick = _stats(capsys, store_dir, *variant)
    assert calls == []
    monkeypatch.undo()
    assert quick == _counted_afresh(capsys, store_dir, *variant)
    after = json.loads(_counted_afresh(capsys, store_dir, "--all", "--json"))
    assert after["default"]["total"] == before["default"]["total"] + 1
    assert after["default"]["runs"] == before["default"]["runs"] + 1 == 2
    assert after["default"]["status"]["archived"] == before["default"]["status"]["archived"] + 1
    assert after[TEAM] == before[TEAM]


def test_a_namespace_written_without_a_mirror_is_dropped_and_counted(
    store_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reopen: Callable[[Path], MemoryStore],
) -> None:
    _stats(capsys, store_dir, "--all")
    with reopen(store_dir) as store:
        store.archive(["m_team2"], namespace=TEAM)  # no mirror of that namespace: not counted at close
    summary = read_counts(store_dir)
    assert summary is not None
    assert counts_vouched(store_dir, read_stamp(store_dir))
    assert list(summary.stats) == ["default"]  # default: not written, its trusted entry kept
    calls = _quick_only(monkeypatch)
    _stats(capsys, store_dir)
    assert calls == []
    assert run(capsys, "stats", "--path", str(store_dir), "--namespace", TEAM)[0] == 9  # counted
    monkeypatch.undo()
    counted = json.loads(_stats(capsys, store_dir, "--namespace", TEAM, "--json"))
    assert counted[TEAM]["status"] == {"active": 1, "archived": 2}


def test_a_session_that_only_journals_refreshes_the_run_count(
    store_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reopen: Callable[[Path], MemoryStore],
) -> None:
    _stats(capsys, store_dir, "--all")
    with reopen(store_dir) as store:  # no recall, no memory written: only run records
        journal = RunJournal(store)
        for run_id, ns in (("run-2", "default"), ("run-3", "default"), ("run-t", TEAM)):
            journal.start(run_id, task="清洗数据", task_type="data_cleaning", namespace=ns)
            journal.finish(run_id, outcome="failure", namespace=ns)
        assert not store.replica.holds("default")
    calls = _quick_only(monkeypatch)
    quick = json.loads(_stats(capsys, store_dir, "--all", "--json"))
    assert calls == []
    assert (quick["default"]["runs"], quick[TEAM]["runs"]) == (3, 1)
    monkeypatch.undo()
    assert quick == json.loads(_counted_afresh(capsys, store_dir, "--all", "--json"))


def test_a_write_that_failed_half_way_leaves_no_refreshed_entry(
    store_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reopen: Callable[[Path], MemoryStore],
) -> None:
    _stats(capsys, store_dir, "--all")
    original = ChromaRecords.upsert

    def half_way(self: ChromaRecords, **kwargs: Any) -> None:
        original(self, **kwargs)
        raise BackendError("chroma upsert failed: disk full")

    with reopen(store_dir) as store:
        store.search("周报", k=2)
        assert store.replica.holds("default")
        monkeypatch.setattr(ChromaRecords, "upsert", half_way)
        with pytest.raises(StoreError):
            store.add(_unit("m_half", "写了一半的经验。", task_type="data_cleaning"))
        monkeypatch.undo()
        store.search("周报", k=2)  # the mirror is rebuilt: exact, yet the session is not trusted
    assert counts_files(store_dir) == []
    assert not set(counts_files(store_dir)) & read_stamp(store_dir)
    assert json.loads(_stats(capsys, store_dir, "--json"))["default"]["total"] == 10


def test_a_namespace_created_in_the_session_is_listed_and_counted(
    store_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reopen: Callable[[Path], MemoryStore],
) -> None:
    _stats(capsys, store_dir, "--all")
    with reopen(store_dir) as store:
        store.search("周报", k=2)
        store.add(_unit("m_default", "Log every retry with its attempt number.", task_type="api_call"))
        store.add(_unit("m_new_ns", "新团队的第一条经验。", namespace="新团队"))
    summary = read_counts(store_dir)
    assert summary is not None
    assert summary.namespaces == sorted(["default", TEAM, "新团队"])
    assert list(summary.stats) == ["default", TEAM]
    calls = _quick_only(monkeypatch)
    assert run(capsys, "stats", "--path", str(store_dir), "--all")[0] == 9  # 新团队 is not in it: counted
    assert len(calls) == 1
    monkeypatch.undo()
    out = json.loads(_stats(capsys, store_dir, "--all", "--json"))
    assert out["新团队"]["total"] == 1
    assert out["default"]["total"] == 10


def test_too_many_records_to_read_drops_the_entry(
    store_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reopen: Callable[[Path], MemoryStore],
) -> None:
    _stats(capsys, store_dir, "--all")
    monkeypatch.setattr(store_reads, "SUMMARY_MAX_READ", 2)  # default holds 3 records that are not active
    with reopen(store_dir) as store:
        store.search("周报", k=2)
        store.archive(["m_csv"])
    summary = read_counts(store_dir)
    assert summary is not None
    assert list(summary.stats) == [TEAM]


def test_a_scrub_keeps_nothing(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _stats(capsys, store_dir, "--all")
    assert counts_files(store_dir)
    assert run(capsys, "forget", "m_sql", "--path", str(store_dir))[0] == EXIT_OK  # an erase: scope not known
    assert counts_files(store_dir) == []


# ---------------------------------------------------------------- the directory's side of the contract


def test_the_stamp_vouches_for_derived_files_only_if_no_write_followed_the_stores_word(tmp_path: Path) -> None:
    entry = summary_entry({("active", "api_call", "manual"): 1}, 0)
    for write_after in (False, True):
        directory = tmp_path / f"db{write_after}"
        backend = ChromaBackend.embedded(directory)
        col = backend.create_collection("col", {"hindsight_role": "memories"})
        col.upsert(ids=["a"], embeddings=[[1.0, 0.0]], documents=["文档"], metadatas=[{"k": 1}])
        assert backend.directory is not None
        assert backend.directory.written == {"col"}
        write_counts(directory, ["default"], {"default": entry})
        backend.directory.vouch()  # what the store's close says
        if write_after:
            col.delete(ids=["a"])
        backend.close()
        assert counts_vouched(directory, read_stamp(directory)) is not write_after


def test_the_backend_names_what_it_wrote(tmp_path: Path) -> None:
    backend = ChromaBackend.embedded(tmp_path / "db")
    try:
        a = backend.create_collection("col-a", {"hindsight_role": "memories"})
        backend.get_or_create("col-b", {"hindsight_role": "memories"})
        a.modify(name="col-c")
        backend.delete_collection("col-b")
        held = backend.directory
        assert held is not None
        assert held.written == {"col-a", "col-b", "col-c"}
        count = held.writes
        backend.erase(None)
        assert held.writes > count
        assert held.written is None
    finally:
        backend.close()


def test_summary_entry_orders_its_mappings_however_the_counts_came() -> None:
    counts = {("active", "b", "rule"): 2, ("superseded", "a", "manual"): 1, ("active", "a", "manual"): 2}
    entry = summary_entry(counts, 3)
    assert entry == summary_entry(dict(reversed(counts.items())), 3)
    assert list(entry["status"]) == ["active", "superseded"]
    assert list(entry["active_by_task_type"].items()) == [("a", 2), ("b", 2)]
    assert list(entry["by_source"].items()) == [("manual", 3), ("rule", 2)]
    assert (entry["total"], entry["runs"]) == (5, 3)


_NO_CHROMA = """
import sys
from langchain_hindsight.cli.main import main
code = main(sys.argv[1:])
print("chromadb imported:", "chromadb" in sys.modules, file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.integration
def test_after_a_writing_session_stats_does_not_import_chromadb(
    store_dir: Path, capsys: pytest.CaptureFixture[str], reopen: Callable[[Path], MemoryStore]
) -> None:
    _stats(capsys, store_dir, "--all")
    with reopen(store_dir) as store:
        store.search("周报", k=2)
        store.archive(["m_week"])
    root = Path(__file__).resolve().parents[3]
    child = subprocess.run(
        [sys.executable, "-c", _NO_CHROMA, "stats", "--path", str(store_dir), "--all"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,
        timeout=300,
        check=False,
    )
    assert child.returncode == EXIT_OK, child.stderr[-2000:]
    assert child.stderr.strip().splitlines()[-1] == "chromadb imported: False"
    assert child.stdout == _counted_afresh(capsys, store_dir, "--all")
