"""The lexical arm: tokenizer, BM25, consistency with the store, visibility across shared-client stores.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/store/test_lexical.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.store._naming import collection_name
from langchain_hindsight.store.replica.records import Held
from langchain_hindsight.store.tokens import record_texts, unit_text
from langchain_hindsight.writes import LLMWriteJudge
from tests.fakes import judge_model


# ---------------------------------------------------------------- consistency with the store
def ids(store: MemoryStore, query: str, namespace: str | None = None) -> list[str]:
    return [i for i, _ in store.lexical_search(query, k=10, namespace=namespace)]


def test_lexical_index_follows_add_update_supersede_archive_forget(store: MemoryStore) -> None:
    a = store.add(MemoryUnit(task_type="file_operation", content="解压Windows的zip要用gbk解码文件名。")).unit
    assert ids(store, "zip解压乱码") == [a.memory_id]  # built from Chroma on first use
    b = store.add(MemoryUnit(task_type="api_call", content="Stripe POST requests need an Idempotency-Key header.")).unit
    assert ids(store, "stripe idempotency") == [b.memory_id]  # incremental add
    store.update(b.memory_id, content="Slack chat.postMessage needs the channel ID.")
    assert ids(store, "stripe idempotency") == []
    assert ids(store, "slack channel") == [b.memory_id]
    store.archive([a.memory_id])
    assert ids(store, "zip解压乱码") == []
    store.restore([a.memory_id])
    assert ids(store, "zip解压乱码") == [a.memory_id]
    store.forget(a.memory_id)
    assert ids(store, "zip解压乱码") == []  # no stale result after a delete


def test_superseded_unit_leaves_the_lexical_index(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store(conflict_threshold=0.5, merge_threshold=0.99, judge=LLMWriteJudge(judge_model("conflict")))
    old = store.add(MemoryUnit(task_type="code_generation", content="The user prefers Java for backend services.")).unit
    assert ids(store, "backend services") == [old.memory_id]
    new = store.add(
        MemoryUnit(task_type="code_generation", content="The user prefers Python for backend services.")
    ).unit
    assert new.supersedes == old.memory_id
    assert ids(store, "backend services") == [new.memory_id]


def test_lexical_index_is_rebuilt_after_reopen(make_store: Callable[..., MemoryStore]) -> None:
    first = make_store("reopen")
    u = first.add(MemoryUnit(content="BigQuery bills by bytes scanned; filter on the partition column.")).unit
    first.close()
    second = make_store("reopen")
    assert ids(second, "bigquery partition") == [u.memory_id]


# ---------------------------------------------------------------- shared server simulation
@pytest.fixture
def shared(embeddings: LocalEmbeddings) -> Iterator[tuple[MemoryStore, MemoryStore, Callable[[str], MemoryUnit]]]:
    """Two stores on one client, as two processes on one Chroma server; a fresh namespace each test.

    (In-process EphemeralClients share one backend, so namespaces isolate the tests.)
    """
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    ns = f"t-{uuid.uuid4().hex[:8]}"
    a = MemoryStore(client=client, embeddings=embeddings, namespace=ns)
    b = MemoryStore(client=client, embeddings=embeddings, namespace=ns)

    def unit(content: str) -> MemoryUnit:
        return MemoryUnit(content=content, namespace=ns)

    yield a, b, unit
    a.forget(namespace=ns)
    a.close()
    b.close()


def test_other_writers_adds_updates_and_deletes_become_visible(
    shared: tuple[MemoryStore, MemoryStore, Callable[[str], MemoryUnit]],
) -> None:
    a, b, unit = shared
    first = a.add(unit("Elasticsearch queries need a time range on @timestamp.")).unit
    assert ids(b, "elasticsearch timestamp") == [first.memory_id]  # b builds its index now
    second = a.add(unit("Redis: use SCAN instead of KEYS in production.")).unit
    assert ids(b, "redis scan keys") == [second.memory_id]  # a's add reached b's built index
    a.update(second.memory_id, content="Redis keys expire after 24 hours by default here.")
    assert ids(b, "scan") == []
    assert ids(b, "expire redis") == [second.memory_id]
    a.forget(first.memory_id)
    assert ids(b, "elasticsearch timestamp") == []  # no stale result after another writer's delete
    b.add(unit("Typer is the CLI framework of this team."))
    assert len(ids(a, "typer cli framework")) == 1  # and the other way round


def test_reader_too_far_behind_rebuilds(shared: tuple[MemoryStore, MemoryStore, Callable[[str], MemoryUnit]]) -> None:
    a, b, unit = shared
    assert ids(b, "anything") == []  # b's index exists and is empty
    for feed in a.replica.feeds.values():
        feed.log_ids = 2  # a tiny log: b cannot catch up incrementally
    units = [unit(f"Lesson number {i} about kafka partition rebalancing.") for i in range(5)]
    a.add_many(units, dedupe=False)
    assert sorted(ids(b, "kafka rebalancing")) == sorted(u.memory_id for u in units)


def _snapshot(store: MemoryStore) -> Path:
    assert store.persist_directory is not None
    return store.persist_directory / "mirror" / f"{collection_name(store.namespace, 'memories')}.npz"


def test_store_saves_the_index_at_close_and_loads_it_on_reopen(
    make_store: Callable[..., MemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = make_store("snap")
    u = first.add(MemoryUnit(content="BigQuery bills by bytes scanned; filter on the partition column."))
    assert ids(first, "bigquery partition") == [u.memory_id]
    first.close()
    assert _snapshot(first).exists()
    second = make_store("snap")
    monkeypatch.setattr(Held, "build", _no_rebuild)
    assert ids(second, "bigquery partition") == [u.memory_id]  # from the snapshot, no rebuild
    monkeypatch.undo()
    v = second.add(MemoryUnit(content="Kafka consumers rebalance when a partition is added."))
    assert not _snapshot(second).exists()  # a write erases the snapshot: never stale on disk
    assert set(ids(second, "partition")) == {u.memory_id, v.memory_id}
    second.close()
    third = make_store("snap")
    assert set(ids(third, "partition")) == {u.memory_id, v.memory_id}


def test_a_session_that_only_writes_keeps_the_snapshot_current(
    make_store: Callable[..., MemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = make_store("writes")
    u = first.add(MemoryUnit(content="BigQuery bills by bytes scanned; filter on the partition column."))
    ids(first, "bigquery")
    first.close()
    second = make_store("writes")
    v = second.add(MemoryUnit(content="Kafka consumers rebalance when a partition is added."))
    second.forget(u.memory_id)
    assert not _snapshot(second).exists()
    second.close()
    assert _snapshot(second).exists()  # the loaded snapshot took the writes and was saved
    third = make_store("writes")
    monkeypatch.setattr(Held, "build", _no_rebuild)
    assert ids(third, "partition") == [v.memory_id]


def _no_rebuild(*args: object, **kwargs: object) -> Held:
    raise AssertionError("the replica was rebuilt instead of loaded from its snapshots")


def test_a_stale_snapshot_is_detected_and_rebuilt(make_store: Callable[..., MemoryStore]) -> None:
    first = make_store("stale")
    u = first.add(MemoryUnit(content="Elasticsearch queries need a time range on @timestamp."))
    w = first.add(MemoryUnit(content="Another lesson about Redis keys."))
    ids(first, "elasticsearch")
    first.close()
    saved = _snapshot(first).read_bytes()
    # Same record count as the snapshot, but a memory's text changed (e.g. by an older version that keeps no
    # snapshot): the sampled digests differ.
    second = make_store("stale")
    second.update(u.memory_id, content="Redis: use SCAN instead of KEYS in production.")
    second.close()
    _snapshot(first).write_bytes(saved)  # the old snapshot reappears
    third = make_store("stale")
    assert ids(third, "elasticsearch") == []
    assert set(ids(third, "redis keys")) == {u.memory_id, w.memory_id}
    third.close()
    # A different record count.
    fourth = make_store("stale")
    fourth.add(MemoryUnit(content="Elasticsearch scroll contexts expire after a minute."))
    fourth.close()
    _snapshot(first).write_bytes(saved)
    fifth = make_store("stale")
    assert len(ids(fifth, "elasticsearch")) == 1


def test_forget_erases_the_tokens_from_the_snapshot(make_store: Callable[..., MemoryStore]) -> None:
    first = make_store("forget-snap")
    secret = first.add(MemoryUnit(content="The vault passphrase is zqxvplorb 秘钥甲乙丙"))
    first.add(MemoryUnit(content="An ordinary lesson about CSV encodings."))
    ids(first, "csv")
    first.close()
    assert b"zqxvplorb" in _snapshot(first).read_bytes()  # the scan below can fail
    assert "秘钥".encode() in _snapshot(first).read_bytes()
    leftover = _snapshot(first).with_name(_snapshot(first).name + ".tmp")
    leftover.write_bytes(_snapshot(first).read_bytes())  # a save that a crash cut short
    second = make_store("forget-snap")
    second.forget(secret.memory_id)
    assert second.persist_directory is not None
    leftovers = [p for p in second.persist_directory.rglob("*") if p.is_file() and b"zqxvplorb" in p.read_bytes()]
    assert leftovers == []
    assert ids(second, "csv encodings") != []
    second.close()
    for path in second.persist_directory.rglob("*"):
        if path.is_file():
            blob = path.read_bytes()
            assert b"zqxvplorb" not in blob, path
            assert "秘钥".encode() not in blob, path


def test_rebuild_reads_the_same_text_as_the_units_hold(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store("texts")
    unit = store.add(
        MemoryUnit(
            content="读取CSV",
            task_description="导出 weekly numbers",
            tags=["周报", "finance"],
            context={"tools_used": ["pandas.read_csv", "openpyxl"]},
        )
    )
    col = store.collection(store.namespace)
    assert col is not None
    rows = col.get(include=["documents", "metadatas"])
    records = zip(rows["ids"], rows["documents"] or [], rows["metadatas"] or [], strict=True)
    assert dict(record_texts(records)) == {unit.memory_id: unit_text(store.get(unit.memory_id))}
    store.close()
    assert not _snapshot(store).exists()  # no index was built: the next open rebuilds from the records
    again = make_store("texts")
    assert ids(again, "openpyxl 周报 weekly") == [unit.memory_id]
