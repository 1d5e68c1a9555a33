"""Embedder identity per store, EmbedderMismatchError, and ``hindsight reembed`` (in place, resumable, no loss).

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/store/test_reembed.py``.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight.cli.main import EXIT_OK, main
from langchain_hindsight.embeddings.identity import EmbedderIdentity
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings, ScriptRoutedEmbeddings
from langchain_hindsight.errors import ConfigurationError, EmbedderMismatchError, EmbeddingError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.store import _reembed
from langchain_hindsight.store._collections import EMBEDDER_DIM_KEY, EMBEDDER_KEY
from langchain_hindsight.store._naming import collection_name
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryContext, MemoryUnit
from tests.fakes import child_env
from tests.unit_tests.store.test_reembed import NoEmbeddings

ZH = {
    "mem_email": "客户甲公司希望通过邮件联系。",
    "mem_phone": "客户乙公司希望通过电话联系。",
    "mem_weekly": "周报只统计本周一到周日的数据，不要包含上周的订单。",
    "mem_csv": "用pandas读取含中文的CSV时要指定encoding='utf-8-sig'，否则表头第一列会带BOM乱码。",
}


EN = {
    "mem_retry": "The API returned 429; retry with exponential backoff (max 3 tries) before failing the task.",
    "mem_sql": "Quote identifiers in generated SQL: table names with spaces break unquoted queries.",
}


WHEN = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


@pytest.fixture(scope="module")
def use(real_models: None) -> MultilingualEmbeddings:
    return MultilingualEmbeddings()


class Failing(Embeddings):
    """Wraps an embedder, claims its identity, and fails after ``calls`` document batches (a crash)."""

    def __init__(self, inner: MultilingualEmbeddings, calls: int) -> None:
        self.inner, self.calls = inner, calls
        self.identity = inner.identity

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.calls <= 0:
            raise RuntimeError("simulated crash")
        self.calls -= 1
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def _units(namespace: str = "default") -> list[MemoryUnit]:
    units = [
        MemoryUnit(
            memory_id=mid,
            content=text,
            task_type="customer_contact" if "客户" in text else "data_cleaning",
            task_description="整理客户联系方式" if "客户" in text else "clean data",
            context=MemoryContext(tools_used=["pandas"], parameters={"encoding": "utf-8-sig"}, input_sample="含中文"),
            confidence=0.8,
            source="user_feedback",
            created_at=WHEN,
            last_accessed_at=WHEN,
            access_count=3,
            tags=["zh", "客户"],
            kind="experience",
            namespace=namespace,
            run_id="run-1",
        )
        for mid, text in {**ZH, **EN}.items()
    ]
    units.append(
        units[0].evolve(memory_id="mem_old_email", status="superseded", content="客户甲公司希望通过传真联系。")
    )
    units[0] = units[0].evolve(supersedes="mem_old_email", merged_from=["mem_x"])
    return units


def _raw(store: MemoryStore) -> dict[str, Any]:
    """Every record (documents and metadata, byte for byte) of every collection, by collection name."""
    out = {}
    for col in store.backend.list_collections():
        rows = col.get(include=["documents", "metadatas"])
        meta = {k: v for k, v in (col.metadata or {}).items() if k not in (EMBEDDER_KEY, EMBEDDER_DIM_KEY)}
        out[col.name] = (
            meta,
            sorted(
                zip(
                    rows["ids"],
                    rows["documents"],
                    [json.dumps(m, sort_keys=True) for m in rows["metadatas"]],
                    strict=True,
                )
            ),
        )
    return out


def _minilm_store(path: Path, embeddings: LocalEmbeddings) -> dict[str, Any]:
    """A MiniLM store with two namespaces, archive, a superseded unit and a journal; its raw records."""
    with MemoryStore(path, embeddings=embeddings) as store:
        store.add_many(_units(), dedupe=False)
        store.add_many(_units("alice"), dedupe=False)
        store.archive(["mem_sql"])
        store.archive(["mem_sql"], namespace="alice")
        RunJournal(store).record(RunRecord(run_id="run-1", task="联系客户甲", served=[], produced=["mem_email"]))
        return _raw(store)


def _identity(store: MemoryStore, namespace: str, role: str) -> EmbedderIdentity:
    col = store.backend.get_collection(collection_name(namespace, role))
    assert col is not None
    meta = col.metadata
    return EmbedderIdentity(meta[EMBEDDER_KEY], meta[EMBEDDER_DIM_KEY])  # type: ignore[arg-type]


def test_every_vector_collection_records_its_embedder(tmp_path: Path, use: MultilingualEmbeddings) -> None:
    with MemoryStore(tmp_path / "db", embeddings=use) as store:
        store.add(MemoryUnit(task_type="crm", content=ZH["mem_email"]))
        store.archive([store.list_units()[0].memory_id])
        for role in ("memories", "archive"):
            assert _identity(store, "default", role) == EmbedderIdentity("use-multilingual-v3", 512)


def test_another_embedder_is_refused_with_a_typed_error_naming_reembed(
    tmp_path: Path, use: MultilingualEmbeddings, embeddings: LocalEmbeddings
) -> None:
    with MemoryStore(tmp_path / "db", embeddings=use) as store:
        store.add(MemoryUnit(task_type="crm", content=ZH["mem_email"]))
    with MemoryStore(tmp_path / "db", embeddings=embeddings) as store:
        with pytest.raises(EmbedderMismatchError, match="hindsight reembed") as info:
            store.search("邮件")
        assert "use-multilingual-v3 (512-d)" in str(info.value)
        assert "all-MiniLM-L6-v2 (384-d)" in str(info.value)
        assert isinstance(info.value, ConfigurationError)
        with pytest.raises(EmbedderMismatchError):
            store.add(MemoryUnit(task_type="crm", content="客户丙公司希望通过短信联系。"))
        assert store.count() == 1  # nothing written


def test_reading_needs_no_embedder(tmp_path: Path, use: MultilingualEmbeddings) -> None:
    with MemoryStore(tmp_path / "db", embeddings=use) as store:
        unit = store.add(MemoryUnit(task_type="crm", content=ZH["mem_email"]))
    with MemoryStore(tmp_path / "db", embeddings=NoEmbeddings()) as store:
        assert store.get(unit.memory_id).content == ZH["mem_email"]
        assert [u.memory_id for u in store.list_units()] == [unit.memory_id]
        assert store.history(unit.memory_id)[0].memory_id == unit.memory_id
        store.record_feedback([unit.memory_id], success=True)  # metadata only: no vectors involved
        assert store.count() == 1


def test_a_store_without_identity_is_taken_as_minilm(
    tmp_path: Path, use: MultilingualEmbeddings, embeddings: LocalEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    with MemoryStore(tmp_path / "db", embeddings=embeddings) as store:
        store.add(MemoryUnit(task_type="crm", content=ZH["mem_email"]))
        for col in store.backend.list_collections():  # what a store made before identities looks like
            col.modify(metadata={k: v for k, v in col.metadata.items() if k not in (EMBEDDER_KEY, EMBEDDER_DIM_KEY)})
    with (
        MemoryStore(tmp_path / "db", embeddings=use) as store,
        pytest.raises(EmbedderMismatchError, match=r"created before.*hindsight reembed"),
    ):
        store.search("邮件")
    with MemoryStore(tmp_path / "db", embeddings=embeddings) as store:
        assert store.search("邮件", k=1)[0][0].content == ZH["mem_email"]
        assert _identity(store, "default", "memories") == EmbedderIdentity("all-MiniLM-L6-v2", 384)
        for col in store.backend.list_collections():
            col.modify(metadata={k: v for k, v in col.metadata.items() if k not in (EMBEDDER_KEY, EMBEDDER_DIM_KEY)})

    class Custom(Embeddings):  # a user's own embedder on a store it may well have written: adopted, logged
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embeddings.embed_documents(texts)

        def embed_query(self, text: str) -> list[float]:
            return embeddings.embed_query(text)

    with caplog.at_level(logging.WARNING), MemoryStore(tmp_path / "db", embeddings=Custom()) as store:
        assert store.search("邮件", k=1)
    assert any("records no embedder" in r.getMessage() for r in caplog.records)


def test_an_empty_collection_adopts_the_new_embedder(
    tmp_path: Path, use: MultilingualEmbeddings, embeddings: LocalEmbeddings
) -> None:
    with MemoryStore(tmp_path / "db", embeddings=embeddings) as store:
        unit = store.add(MemoryUnit(task_type="crm", content=ZH["mem_email"]))
        store.forget(unit.memory_id)
    with MemoryStore(tmp_path / "db", embeddings=use) as store:
        store.add(MemoryUnit(task_type="crm", content=ZH["mem_phone"]))
        assert _identity(store, "default", "memories").name == "use-multilingual-v3"


def test_the_default_embedder_follows_the_store(
    tmp_path: Path, use: MultilingualEmbeddings, embeddings: LocalEmbeddings
) -> None:
    with MemoryStore(tmp_path / "new") as store:  # a new store: the routed default
        assert isinstance(store.embeddings, ScriptRoutedEmbeddings)
        store.add(MemoryUnit(task_type="crm", content=ZH["mem_email"]))
    with MemoryStore(tmp_path / "new") as store:
        assert isinstance(store.embeddings, ScriptRoutedEmbeddings)
    with MemoryStore(tmp_path / "use", embeddings=use) as store:
        store.add(MemoryUnit(task_type="crm", content=ZH["mem_email"]))
    with MemoryStore(tmp_path / "use") as store:  # a store on USE alone keeps it
        assert isinstance(store.embeddings, MultilingualEmbeddings)
    _minilm_store(tmp_path / "old", embeddings)
    with MemoryStore(tmp_path / "old") as store:  # a MiniLM store keeps MiniLM: no forced migration
        assert isinstance(store.embeddings, LocalEmbeddings)
        assert store.search("周报统计哪几天", k=1)[0][0].memory_id == "mem_weekly"
        for col in store.backend.list_collections():  # a store from before identities: MiniLM too
            col.modify(metadata={k: v for k, v in col.metadata.items() if k not in (EMBEDDER_KEY, EMBEDDER_DIM_KEY)})
    with MemoryStore(tmp_path / "old") as store:
        assert isinstance(store.embeddings, LocalEmbeddings)


def test_reembed_round_trip_keeps_every_field_and_recall_works(
    tmp_path: Path, use: MultilingualEmbeddings, embeddings: LocalEmbeddings
) -> None:
    before = _minilm_store(tmp_path / "db", embeddings)
    with MemoryStore(tmp_path / "db", embeddings=use) as store:
        counts = {ns: store.count(namespace=ns) for ns in ("default", "alice")}
        report = store.reembed()
        assert sorted(report.migrated) == sorted(
            (ns, role, n) for ns in ("default", "alice") for role, n in (("memories", 6), ("archive", 1))
        )
        assert report.embedded == 14
        assert _raw(store) == before  # every id, text and metadata field; the journal untouched
        assert {ns: store.count(namespace=ns) for ns in counts} == counts
        for ns in ("default", "alice"):
            for role in ("memories", "archive"):
                assert _identity(store, ns, role) == EmbedderIdentity("use-multilingual-v3", 512)
        # The vectors are the new embedder's, and recall works in both languages and across them.
        hits = store.search("乙公司用什么方式联系", k=1, include_embeddings=True)
        assert hits[0][0].memory_id == "mem_phone"
        np.testing.assert_allclose(hits[0][2], use.embed_documents([ZH["mem_phone"]])[0], atol=1e-5)
        assert store.search("how do I read a Chinese CSV file", k=1, namespace="alice")[0][0].memory_id == "mem_csv"
        assert store.search("接口限流429怎么重试", k=1)[0][0].memory_id == "mem_retry"
        store.restore(["mem_sql"])
        assert store.search("quote table names in SQL", k=1)[0][0].memory_id == "mem_sql"
        assert store.reembed().migrated == []  # idempotent
    with MemoryStore(tmp_path / "db", embeddings=embeddings) as store, pytest.raises(EmbedderMismatchError):
        store.search("邮件")


def test_a_crash_mid_copy_leaves_the_old_store_intact_and_a_rerun_finishes(
    tmp_path: Path, use: MultilingualEmbeddings, embeddings: LocalEmbeddings
) -> None:
    before = _minilm_store(tmp_path / "db", embeddings)
    with (
        MemoryStore(tmp_path / "db", embeddings=Failing(use, calls=2)) as store,
        pytest.raises(RuntimeError, match="simulated crash"),
    ):
        store.reembed(batch_size=2)
    with MemoryStore(tmp_path / "db", embeddings=embeddings) as store:  # the old embedder still works
        assert any(name.endswith("-reembed") for name in _raw(store))  # the partial copy, invisible to the store
        assert {k: v for k, v in _raw(store).items() if not k.endswith("-reembed")} == before
        assert store.search("乙公司用什么方式联系", k=1)[0][0].memory_id in ZH
        store.add(
            MemoryUnit(memory_id="mem_new", task_type="crm", content="客户丁公司希望通过微信联系。"), dedupe=False
        )
        store.forget("mem_weekly")
    with MemoryStore(tmp_path / "db", embeddings=use) as store:
        report = store.reembed(batch_size=2)
        assert report.embedded < report.units  # resumed: the first run's copies were kept
        assert store.get("mem_new").content == "客户丁公司希望通过微信联系。"  # written in between: synced
        assert not store.get_many(["mem_weekly"])  # deleted in between: not resurrected
        assert store.search("丁公司用什么联系", k=1)[0][0].memory_id == "mem_new"
        assert not [c.name for c in store.backend.list_collections() if c.name.endswith("-reembed")]


def test_a_crash_between_drop_and_rename_is_finished_on_open(
    tmp_path: Path, use: MultilingualEmbeddings, embeddings: LocalEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _minilm_store(tmp_path / "db", embeddings)
    real = _reembed.switch_reembed

    def die_after_drop(client: Any, name: str, side: Any) -> Any:
        client.delete_collection(name)
        raise RuntimeError("simulated crash after the drop")

    monkeypatch.setattr(_reembed, "switch_reembed", die_after_drop)
    with MemoryStore(tmp_path / "db", embeddings=use) as store, pytest.raises(RuntimeError, match="after the drop"):
        store.reembed()
    monkeypatch.setattr(_reembed, "switch_reembed", real)
    with MemoryStore(tmp_path / "db", embeddings=use) as store:  # opening finishes the rename
        # namespaces migrate in order: alice's memories died between drop and rename
        assert store.count(namespace="alice") == 7
        assert store.search("乙公司用什么方式联系", k=1, namespace="alice")[0][0].memory_id == "mem_phone"
        with pytest.raises(EmbedderMismatchError):  # default was not reached: still MiniLM
            store.search("乙公司用什么方式联系", k=1)
        store.reembed()
        assert _raw(store) == before


@pytest.mark.slow
def test_a_killed_reembed_loses_nothing(
    tmp_path: Path, use: MultilingualEmbeddings, embeddings: LocalEmbeddings
) -> None:
    before = _minilm_store(tmp_path / "db", embeddings)
    script = textwrap.dedent(
        f"""
        import os, signal
        from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings, ScriptRoutedEmbeddings
        from langchain_hindsight.store.memory_store import MemoryStore
        def progress(stage, done, total):
            if done >= 2:
                os.kill(os.getpid(), signal.SIGKILL)
        store = MemoryStore({str(tmp_path / "db")!r}, embeddings=MultilingualEmbeddings())
        store.reembed(batch_size=1, progress=progress)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], timeout=300, env=child_env())
    assert proc.returncode == -signal.SIGKILL
    with MemoryStore(tmp_path / "db", embeddings=embeddings) as store:
        assert {k: v for k, v in _raw(store).items() if not k.endswith("-reembed")} == before
        assert store.search("周报统计哪几天", k=1)[0][0].memory_id in ZH
    assert main(["reembed", "--path", str(tmp_path / "db")]) == EXIT_OK
    with MemoryStore(tmp_path / "db", embeddings=use) as store:
        assert _raw(store) == before


def test_cli_reembed_reports_progress_and_migrates(
    tmp_path: Path, embeddings: LocalEmbeddings, capsys: pytest.CaptureFixture[str]
) -> None:
    _minilm_store(tmp_path / "db", embeddings)
    path = str(tmp_path / "db")
    assert main(["search", "邮件", "--path", path]) == EXIT_OK  # the store's own embedder (MiniLM) by default
    capsys.readouterr()
    assert main(["reembed", "--path", path, "--json"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert json.loads(out)["units"] == 14
    assert "default/memories: 6/6" in err
    assert main(["search", "乙公司用什么方式联系", "--path", path, "--json"]) == EXIT_OK  # now multilingual
    assert json.loads(capsys.readouterr().out)[0]["memory"]["memory_id"] == "mem_phone"
    assert main(["reembed", "--path", path, "--to", "minilm", "--namespace", "alice"]) == EXIT_OK
    assert "alice/memories: 6 unit(s) re-embedded" in capsys.readouterr().out


def test_reembed_refuses_degenerate_vectors_and_switches_nothing(
    tmp_path: Path, use: MultilingualEmbeddings, embeddings: LocalEmbeddings
) -> None:
    before = _minilm_store(tmp_path / "db", embeddings)

    class Zero(Embeddings):
        identity = EmbedderIdentity("zero", 4)

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[0.0] * 4 for _ in texts]

        def embed_query(self, text: str) -> list[float]:
            return [0.0] * 4

    with MemoryStore(tmp_path / "db", embeddings=Zero()) as store, pytest.raises(EmbeddingError):
        store.reembed()
    with MemoryStore(tmp_path / "db", embeddings=embeddings) as store:
        assert {k: v for k, v in _raw(store).items() if not k.endswith("-reembed")} == before
