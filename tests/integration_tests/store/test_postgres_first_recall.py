"""A process's first recalls on Postgres: answered by the database until the replica is read, in a thread.

What a short process (a CLI call, a serverless worker) gets: its first recall reads the candidates, not
the namespace (no change-feed query); the same results as the replica gives; its own writes at once;
the replica read in the background after ``replica_after`` recalls, brought up to date past another
process's concurrent writes before it answers; ``close()`` joins the thread. (The equivalence on the
comparison corpora of ``test_postgres.py`` runs there, modes ``first`` and ``first-hnsw``.)
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.recall.retriever import HindsightRetriever
from langchain_hindsight.store.backend.postgres import REPLICA_AFTER, PostgresBackend
from langchain_hindsight.store.replica.lexical import lexical_scheme
from tests.fakes import HashEmbeddings, NgramEmbeddings
from tests.postgres import backend_calls

pytestmark = pytest.mark.integration

ROOT = str(Path(__file__).resolve().parents[3])

_TOPICS = [
    ("销售周报", "weekly sales report"),
    ("迁移脚本", "migration script"),
    ("空值检查", "null value check"),
    ("请求编号", "request id logging"),
    ("坐标轴单位", "chart axis units"),
    ("重试退避", "retry with backoff"),
]


def _texts(n: int) -> list[str]:
    """``n`` distinct zh/en lessons over a few topics (near neighbours, shared terms: ties and close calls)."""
    out = []
    for i in range(n):
        zh, en = _TOPICS[i % len(_TOPICS)]
        out.append(f"{zh}第{i}条经验：{en} lesson {i}" if i % 2 else f"Lesson {i} on {en}: {zh}要先核对 {i % 7}")
    return out


_QUERIES = ["销售周报模板", "migration script staging", "空值", "request id", "chart axis 单位", "无关 xyz", "lesson 7"]


def _store(url: str, after: int, embedder: Embeddings | None = None) -> MemoryStore:
    """A store whose backend it owns (closed with it) with ``replica_after=after``."""
    store = MemoryStore(
        backend=PostgresBackend(url, lexical=lexical_scheme(), replica_after=after),
        embeddings=embedder or NgramEmbeddings(),
    )
    store._owns_backend = True
    return store


def _reads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("hindsight-replica-read")]


def test_the_first_recall_reads_the_candidates_not_the_namespace(postgres_url: str) -> None:
    with _store(postgres_url, 0) as writer:
        writer.add_many([MemoryUnit(task_type="report", content=t) for t in _texts(60)], dedupe=False)
    store = _store(postgres_url, REPLICA_AFTER)
    try:
        asked = backend_calls(store)
        vector = store.embeddings.embed_query("销售周报模板")
        candidates, lexical = store.hybrid_search("销售周报模板", vector, k=3)
        assert candidates
        assert lexical
        opening = ("get_collection", "get")  # the collection opened and its embedder checked, as by any first search
        assert [a for a in asked if a not in opening] == ["count", "hybrid query"]  # not "changes": no namespace read
        asked.clear()
        store.hybrid_search("migration script", store.embeddings.embed_query("migration script"), k=3)
        assert asked == ["hybrid query"]  # later ones: one statement each
        assert store._replica.synced == {}
        assert _reads() == []  # no thread before the count is reached
    finally:
        store.close()


@pytest.mark.parametrize("max_rows", [None, 10])
def test_the_database_answers_what_the_replica_answers(postgres_url: str, max_rows: int | None) -> None:
    """Candidates in the same order, similarities, lexical scores: the replica's (with its mirror: an exact dense
    arm; above the mirror's size, ``max_rows``: the index, on both sides), on 120 memories with lexical ties,
    inactive ones and deletes.

    The vectors have no exact ties: where two similarities are equal in exact arithmetic, the float32 sums of
    numpy and of pgvector (which differ by ~1e-7) may order them differently.
    """
    embedder = HashEmbeddings()
    with _store(postgres_url, 0, embedder) as writer:
        units = writer.add_many([MemoryUnit(task_type="report", content=t) for t in _texts(120)], dedupe=False)
        for r in units[::9]:
            writer.update(r.memory_id, status="superseded")
        writer.forget([r.memory_id for r in units[5::11]])
    with _store(postgres_url, 0, embedder) as replica, _store(postgres_url, 1000, embedder) as first:
        for store in (replica, first):
            if max_rows is not None:
                store._replica.max_rows = max_rows
        for query in _QUERIES:
            vector = replica.embeddings.embed_query(query)
            for k, normalize in ((3, False), (8, True)):
                want, want_lexical = replica.hybrid_search(query, vector, k=k, normalize=normalize)
                got, got_lexical = first.hybrid_search(query, vector, k=k, normalize=normalize)
                assert list(got) == list(want), query
                assert [s for _, s in got.values()] == pytest.approx([s for _, s in want.values()], abs=1e-5)
                assert [u.content for u, _ in got.values()] == [u.content for u, _ in want.values()]
                assert list(got_lexical) == list(want_lexical), query
                assert list(got_lexical.values()) == pytest.approx(list(want_lexical.values()), rel=1e-9)
                got_bm25, want_bm25 = first.lexical_search(query, k=k), replica.lexical_search(query, k=k)
                assert [i for i, _ in got_bm25] == [i for i, _ in want_bm25], query
                assert [s for _, s in got_bm25] == pytest.approx([s for _, s in want_bm25], rel=1e-9), query
        assert replica.namespace in replica._replica.synced
        assert first._replica.synced == {}  # every answer above came from the database


def test_a_write_is_recalled_by_the_next_recall(postgres_url: str) -> None:
    with _store(postgres_url, REPLICA_AFTER) as store:
        store.add_many([MemoryUnit(task_type="report", content=t) for t in _texts(20)], dedupe=False)
        query = "部署前先在测试环境跑一遍迁移脚本"
        vector = store.embeddings.embed_query(query)
        new = store.add(MemoryUnit(task_type="report", content=query), dedupe=False).unit.memory_id
        candidates, lexical = store.hybrid_search(query, vector, k=3)
        assert next(iter(candidates)) == new
        assert next(iter(lexical)) == new
        store.forget(new)
        candidates, lexical = store.hybrid_search(query, vector, k=3)
        assert new not in candidates
        assert new not in lexical
        assert store._replica.synced == {}


_WRITER = """
import sys
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore, MemoryUnit
from tests.fakes import HashEmbeddings, NgramEmbeddings
from tests.postgres import backend_calls
store = MemoryStore(database_url={url!r}, embeddings=NgramEmbeddings())
print("READY", flush=True)
sys.stdin.readline()
ids = []
for i in range(40):
    ids.append(store.add(MemoryUnit(task_type="report", content=f"并发写入第{{i}}条：check the encoding {{i}}"),
                         dedupe=False).unit.memory_id)
    if i % 4 == 3:
        store.forget(ids[i - 1])
store.close()
print("DONE", flush=True)
"""


def test_the_background_read_catches_up_with_a_concurrent_writer(postgres_url: str, caplog: Any) -> None:
    """Another process adds and forgets while this one recalls and reads its replica in a thread: once taken in,
    the replica holds exactly the active memories, and recall answers what a replica read now answers."""
    with _store(postgres_url, 0) as seed:
        seed.add_many([MemoryUnit(task_type="report", content=t) for t in _texts(400)], dedupe=False)
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER.format(root=ROOT, url=postgres_url)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdin is not None
    assert child.stdout.readline().strip() == "READY"
    caplog.set_level(logging.DEBUG, logger="langchain_hindsight")
    store = _store(postgres_url, 2)
    try:
        query = "check the encoding 并发写入"
        vector = store.embeddings.embed_query(query)
        child.stdin.write("go\n")
        child.stdin.flush()
        for _ in range(2):
            store.hybrid_search(query, vector, k=5)  # answered by the database; the second starts the read
        reading = store._replica.warmup._readings[store.namespace]
        assert reading.done.wait(60)
        out, _ = child.communicate(timeout=120)
        assert "DONE" in out
        got = store.hybrid_search(query, vector, k=5)  # takes the read in, syncs past the writer's commits
        held = store._replica.synced[store.namespace]
        assert held.mirror is not None
        with _store(postgres_url, 0) as now:
            want = now.hybrid_search(query, vector, k=5)
            active = {u.memory_id for u in now.iter_units(status="active")}
        assert (list(got[0]), got[1]) == (list(want[0]), want[1])
        assert len(active) == 400 + 40 - 10
        assert len(held.lexical) == len(active)
        assert all(i in held.lexical for i in active)
        assert {i for i, _, _ in held.mirror.records()} == active
        messages = [r.getMessage() for r in caplog.records]
        assert any("answered by the database" in m for m in messages)
        assert any("read in the background" in m for m in messages)
        assert any("answered by the replica" in m for m in messages)
    finally:
        if child.poll() is None:
            child.kill()
        store.close()
    assert _reads() == []


def test_close_stops_and_joins_a_running_read(postgres_url: str) -> None:
    with _store(postgres_url, 0) as seed:
        seed.add_many([MemoryUnit(task_type="report", content=t) for t in _texts(300)], dedupe=False)
    before = set(threading.enumerate())
    store = _store(postgres_url, 1)
    query = "销售周报"
    store.hybrid_search(query, store.embeddings.embed_query(query), k=3)  # starts the read at once
    reading = store._replica.warmup._readings[store.namespace]
    assert reading.thread is not None
    assert reading.thread.ident is not None  # started (it may have finished already: 300 records)
    store.close()
    assert not reading.thread.is_alive()
    assert _reads() == []
    assert set(threading.enumerate()) <= before  # the pool's threads went with the backend too


def test_the_async_recall_reads_the_database_first_then_the_replica(postgres_url: str) -> None:
    embedder = HashEmbeddings()  # no tied similarities (see test_the_database_answers_what_the_replica_answers)
    with _store(postgres_url, 0, embedder) as seed:
        seed.add_many([MemoryUnit(task_type="report", content=t) for t in _texts(50)], dedupe=False)
    with _store(postgres_url, 2, embedder) as store:
        retriever = HindsightRetriever(store=store, k=3, low_similarity_threshold=0.0)

        async def recall_three() -> list[list[str]]:
            return [[m.memory.memory_id for m in await retriever.arecall("销售周报模板")] for _ in range(3)]

        first = asyncio.run(recall_three())  # the second starts the read; the third may already take it in
        reading = store._replica.warmup._readings.get(store.namespace)
        assert reading is not None or store.namespace in store._replica.synced
        if reading is not None:
            assert reading.done.wait(60)
        later = asyncio.run(recall_three())
        assert store.namespace in store._replica.synced
        assert first[0]
        assert first == later  # the same memories, before and after the replica answers


def test_replica_after_is_checked() -> None:
    from langchain_hindsight.errors import ConfigurationError

    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ConfigurationError):
            PostgresBackend("postgresql://nobody@nowhere/x", lexical=lexical_scheme(), replica_after=bad)  # type: ignore[arg-type]
