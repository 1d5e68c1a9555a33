"""Counting from Chroma's SQLite file equals the store's own count, and every guard falls back to it.

Differential: over stores with several namespaces (one Chinese), archived, superseded, merged, shared,
forgotten and discarded units, a rejected write, runs in the journal, and records written through the
backend after the store closed (int, float and bool values, a missing task type), ``count_closed`` gives
exactly ``MemoryStore.count_by`` and the journal's run count for every namespace. Each guard is made to
fire on a copy of such a store; ``count_closed`` then answers ``None`` (logged), and ``hindsight stats``
still prints what the store counts.
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from langchain_hindsight.cli.main import EXIT_ERROR, EXIT_OK, main
from langchain_hindsight.errors import InvalidMemoryError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.store._directory import FORGET_INTENT, SCRUB_MARKER, file_states
from langchain_hindsight.store._naming import REEMBED_COMPLETE, REEMBED_OF, REEMBED_SUFFIX, collection_name
from langchain_hindsight.store.backend import REBUILD_SUFFIX, ChromaBackend, chroma_file
from langchain_hindsight.store.backend.chroma_file import count_closed
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.store.replica.summary import SUMMARY_FIELDS
from langchain_hindsight.types import MemoryUnit
from tests.fakes import NgramEmbeddings

TEAM = "团队甲"
OPS = "Ops Team 2"
UNITS = [
    MemoryUnit(memory_id="m_csv", content="读取中文CSV时指定encoding='utf-8-sig'。", task_type="data_cleaning"),
    MemoryUnit(memory_id="m_sql", content="查询前先确认表的分区字段。", task_type="database_query", source="rule"),
    MemoryUnit(memory_id="m_week", content="Weekly reports cover last week only.", task_type="weekly_report"),
    MemoryUnit(memory_id="m_old", content="Old API base URL was v1.", task_type="api_call"),
    MemoryUnit(memory_id="m_arc", content="Archive raw dumps after a month.", task_type="file_operation"),
    MemoryUnit(memory_id="m_gone", content="The staging password rotates weekly.", task_type="api_call"),
    MemoryUnit(memory_id="m_dup", content="Retry HTTP 429 with exponential backoff.", task_type="api_call"),
    MemoryUnit(memory_id="m_zh", content="周报周一上午十点前提交。", task_type="周报撰写", source="user_feedback"),
    MemoryUnit(memory_id="m_team", content="团队甲的周报周一提交。", namespace=TEAM, source="user_feedback"),
    MemoryUnit(memory_id="m_team2", content="团队甲用飞书发通知。", namespace=TEAM, task_type="文件处理"),
    MemoryUnit(memory_id="m_ops", content="Page the on-call engineer for sev1 only.", namespace=OPS, kind="fact"),
]
DIRECT = {  # written through the backend after the store closed: values of every type, a missing field
    "m_csv": {"task_type": 7},
    "m_sql": {"source": 1.5},
    "m_week": {"task_type": True},
    "m_zh": {"status": "active", "task_type": ""},
}


def _journal(store: MemoryStore, namespace: str, runs: int) -> None:
    journal = RunJournal(store, namespace=namespace)
    for i in range(runs):
        journal.start(f"run-{namespace}-{i}", task="清洗 sales.csv", task_type="data_cleaning")
        journal.finish(f"run-{namespace}-{i}", outcome="success" if i % 2 else "failure")


def build(path: Path, embeddings: NgramEmbeddings) -> None:
    """A closed store with every kind of unit the store writes, then records written behind its back."""
    with MemoryStore(path, embeddings=embeddings) as store:
        store.add_many(UNITS, dedupe=False)
        assert (
            store.add(MemoryUnit(content="Retry HTTP 429 with exponential backoff!", task_type="api_call")).action
            == "merged"
        )
        store.supersede(["m_old"], MemoryUnit(content="The API base URL is v2.", task_type="api_call"), reason="fix")
        store.archive(["m_arc"])
        store.forget(["m_gone"])
        store.share(["m_csv"], to_namespace=OPS)
        store.discard(["m_team2"], namespace=TEAM)
        with pytest.raises(InvalidMemoryError):
            store.add(MemoryUnit(content="ok"))  # rejected: nothing written
        store.update("m_dup", task_type="http")
        _journal(store, "default", 3)
        _journal(store, OPS, 1)
    backend = ChromaBackend.embedded(path)
    try:
        col = backend.get_collection(collection_name("default", "memories"))
        assert col is not None
        col.update(ids=list(DIRECT), metadatas=list(DIRECT.values()))
        vector = embeddings.embed_query("a record without a task type")
        col.upsert(ids=["bare"], embeddings=[vector], documents=["bare"], metadatas=[{"status": "active"}])
    finally:
        backend.close()


def expected(path: Path, embeddings: NgramEmbeddings) -> tuple[list[str], dict[str, Any], dict[str, int]]:
    """What the store counts: its namespaces, ``count_by(*SUMMARY_FIELDS)`` and the runs of each."""
    with MemoryStore(path, embeddings=embeddings) as store:
        namespaces = store.namespaces()
        counts = {ns: store.count_by(*SUMMARY_FIELDS, namespace=ns) for ns in namespaces}
        runs = {ns: store.statistics(namespace=ns)["runs"] for ns in namespaces}
    return namespaces, counts, runs


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chroma_file") / "db"
    build(path, NgramEmbeddings())
    return path


@pytest.fixture
def store_copy(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "db"
    shutil.copytree(built, copy)
    return copy


def test_counting_from_the_file_equals_the_stores_count(store_copy: Path) -> None:
    before = file_states(store_copy)
    counted = count_closed(store_copy, SUMMARY_FIELDS)
    assert counted is not None
    assert file_states(store_copy) == before  # nothing written
    namespaces, counts, runs = expected(store_copy, NgramEmbeddings())
    assert counted.namespaces == namespaces == ["Ops Team 2", "default", TEAM]
    assert counted.counts == counts
    assert counted.runs == runs == {"default": 3, OPS: 1, TEAM: 0}
    default = counted.counts["default"]
    assert default[("active", "7", "agent_inference")] == 1  # int, float, bool: str() of the stored value
    assert default[("active", "database_query", "1.5")] == 1
    assert default[("active", "True", "agent_inference")] == 1
    assert default[("active", "", "")] == 1  # the bare record: missing values count as ""
    assert ("superseded", "api_call", "agent_inference") in default
    assert ("archived", "file_operation", "agent_inference") in default
    assert count_closed(store_copy, SUMMARY_FIELDS, ["default", "nobody"]) == type(counted)(
        counted.namespaces, {"default": counts["default"], "nobody": {}}, {"default": 3, "nobody": 0}
    )


def _stats(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, str]:
    code = main(["stats", "--path", str(path), "--all", "--json"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    return code, out


def _store_says(path: Path) -> dict[str, Any]:
    with MemoryStore(path, embeddings=NgramEmbeddings()) as store:
        return {ns: store.statistics(namespace=ns) for ns in store.namespaces()}


def _sql(path: Path, *statements: str, params: tuple[Any, ...] = ()) -> None:
    con = sqlite3.connect(path / "chroma.sqlite3")
    try:
        for statement in statements:
            con.execute(statement, params)
        con.commit()
    finally:
        con.close()


def _unapplied_log_row(path: Path) -> None:
    """A write Chroma logged and did not apply to the collection's metadata segment (a crash between the two)."""
    con = sqlite3.connect(path / "chroma.sqlite3")
    try:
        ((cid,),) = con.execute(
            "SELECT id FROM collections WHERE name = ?", (collection_name("default", "memories"),)
        ).fetchall()
        ((seq,),) = con.execute(
            "SELECT MAX(m.seq_id) FROM max_seq_id m JOIN segments s ON s.id = m.segment_id WHERE s.collection = ?",
            (cid,),
        ).fetchall()
        con.execute(
            "INSERT INTO embeddings_queue (seq_id, operation, topic, id, vector, encoding, metadata) "
            "VALUES (?, 3, ?, 'm_csv', NULL, NULL, NULL)",
            (seq + 1, f"persistent://default/default/{cid}"),
        )
        con.commit()
    finally:
        con.close()


def _pending_mark(path: Path) -> None:
    backend = ChromaBackend.embedded(path)
    try:
        col = backend.get_collection(collection_name(TEAM, "memories"))
        assert col is not None
        col.update(ids=["m_team"], metadatas=[{"pending": "supersede"}])  # a two-step write killed midway
    finally:
        backend.close()


def _list_value(path: Path) -> None:
    backend = ChromaBackend.embedded(path)
    try:
        col = backend.get_collection(collection_name("default", "memories"))
        assert col is not None
        col.update(ids=["m_dup"], metadatas=[{"task_type": ["http", "api_call"]}])  # Chroma keeps lists apart
    finally:
        backend.close()


def _side_collection(suffix: str, metadata: dict[str, Any]) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        backend = ChromaBackend.embedded(path)
        try:
            name = collection_name("default", "memories")
            backend.create_collection(name + suffix, {"hindsight_namespace": "default", **metadata})
        finally:
            backend.close()

    return make


def _forget_intent(path: Path) -> None:
    (path / FORGET_INTENT).write_text(json.dumps([{"namespace": TEAM, "ids": ["m_team"]}]), encoding="utf-8")


def _unknown_migration(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    def make(path: Path) -> None:  # a Chroma whose schema this reader does not know: one migration more
        monkeypatch.setattr(
            chroma_file, "KNOWN_MIGRATIONS", chroma_file.KNOWN_MIGRATIONS - {max(chroma_file.KNOWN_MIGRATIONS)}
        )

    return make


GUARDS: dict[str, tuple[str, Callable[[pytest.MonkeyPatch], Callable[[Path], None]]]] = {
    "an unapplied log row": ("not yet applied", lambda mp: _unapplied_log_row),
    "a pending mark": ("two-step write mark", lambda mp: _pending_mark),
    "a list value": ("a list under 'task_type'", lambda mp: _list_value),
    "a forget intent": (FORGET_INTENT, lambda mp: _forget_intent),
    "a scrub marker": (SCRUB_MARKER, lambda mp: lambda p: (p / SCRUB_MARKER).touch()),
    "an interrupted re-embedding": (
        "re-embedding",
        lambda mp: _side_collection(
            REEMBED_SUFFIX, {"hindsight_role": "reembed", REEMBED_OF: "memories", REEMBED_COMPLETE: False}
        ),
    ),
    "an interrupted scrub rebuild": (
        "rebuild",
        lambda mp: _side_collection(REBUILD_SUFFIX, {"hindsight_role": "memories"}),
    ),
    "an unknown migration": ("migrations differ", _unknown_migration),
    "another chromadb version": (
        "not a version",
        lambda mp: lambda p: mp.setattr(chroma_file, "TESTED_CHROMADB", frozenset({"0.0.1"})),
    ),
}


@pytest.mark.parametrize("guard", list(GUARDS))
def test_each_guard_falls_back_to_the_stores_count(
    guard: str,
    store_copy: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reason, make = GUARDS[guard]
    assert count_closed(store_copy, SUMMARY_FIELDS) is not None
    make(monkeypatch)(store_copy)
    with caplog.at_level(logging.DEBUG, logger=chroma_file.__name__):
        assert count_closed(store_copy, SUMMARY_FIELDS) is None
    assert reason in caplog.text
    _, printed = _stats(capsys, store_copy)  # the store counts (and finishes what the guard saw)
    assert json.loads(printed) == _store_says(store_copy)


def test_a_collection_tagged_with_another_namespace_is_refused_as_the_store_refuses_it(
    store_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = ChromaBackend.embedded(store_copy)
    try:  # the canonical name of namespace "intruder", tagged as "default"'s
        backend.create_collection(
            collection_name("intruder", "journal"), {"hindsight_namespace": "default", "hindsight_role": "journal"}
        )
    finally:
        backend.close()
    assert count_closed(store_copy, SUMMARY_FIELDS, ["intruder"]) is None
    assert count_closed(store_copy, SUMMARY_FIELDS, ["default"]) is not None
    code = main(["stats", "--path", str(store_copy), "--namespace", "intruder"])
    _, err = capsys.readouterr()
    assert code != EXIT_OK  # not a namespace of the store: opening it says so
    assert "intruder" in err


def test_an_unreadable_file_falls_back(store_copy: Path, caplog: pytest.LogCaptureFixture) -> None:
    (store_copy / "chroma.sqlite3").write_bytes(b"not a database" * 100)
    with caplog.at_level(logging.DEBUG, logger=chroma_file.__name__):
        assert count_closed(store_copy, SUMMARY_FIELDS) is None
    assert "could not be read" in caplog.text
    assert main(["stats", "--path", str(store_copy)]) == EXIT_ERROR
