"""The in-process replica of a Postgres store, kept by the database's change feed, across processes.

A writer process and this test's store share one database: every write, supersede, archive,
feedback and forget of the writer is seen by the reader's next recall, on both arms; a writer
SIGKILLed mid-transaction leaves the feed and the replica consistent; a reader further behind than
the kept deletions reads everything again. (Scores equal to the in-memory store: ``test_postgres.py``.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.store.backend.postgres import PostgresBackend
from langchain_hindsight.store.replica.lexical import lexical_scheme
from tests.fakes import NgramEmbeddings
from tests.postgres import backend_calls

pytestmark = pytest.mark.integration

ROOT = str(Path(__file__).resolve().parents[3])

_WORKER = """
import sys, time
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore, MemoryUnit
from tests.fakes import NgramEmbeddings
from tests.postgres import backend_calls
store = MemoryStore(database_url={url!r}, embeddings=NgramEmbeddings())
print("READY", flush=True)
for line in sys.stdin:
    op, _, arg = line.rstrip("\\n").partition(" ")
    if op == "add":
        print(store.add(MemoryUnit(task_type="report", content=arg), dedupe=False).unit.memory_id, flush=True)
    elif op == "supersede":
        old, _, text = arg.partition(" ")
        print(store.supersede(old, MemoryUnit(task_type="report", content=text), reason="test").unit.memory_id,
              flush=True)
    elif op == "archive":
        store.archive([arg]); print("ok", flush=True)
    elif op == "feedback":
        store.record_feedback([arg], success=True); print("ok", flush=True)
    elif op == "forget":
        store.forget(arg); print("ok", flush=True)
    elif op == "hang":  # a write plan that stops mid-transaction, until killed
        def plan():
            col = store._collection(store.namespace)
            col.delete(ids=[arg])
            print("inside", flush=True)
            time.sleep(600)
        store.backend.atomic(store.namespace, plan)
"""


class Worker:
    """A store in another process, driven one command at a time."""

    def __init__(self, url: str) -> None:
        self.child = subprocess.Popen(
            [sys.executable, "-c", _WORKER.format(root=ROOT, url=url)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.read() == "READY"

    def read(self) -> str:
        assert self.child.stdout is not None
        line = self.child.stdout.readline().strip()
        assert line, f"the worker stopped (exit {self.child.poll()})"
        return line

    def __call__(self, op: str, arg: str) -> str:
        assert self.child.stdin is not None
        self.child.stdin.write(f"{op} {arg}\n")
        self.child.stdin.flush()
        return self.read()

    def close(self) -> None:
        if self.child.poll() is None:
            assert self.child.stdin is not None
            self.child.stdin.close()
            self.child.wait(timeout=60)


def _recalled(store: MemoryStore, query: str) -> tuple[list[str], list[str]]:
    """The ids of ``query``'s hybrid candidates and lexical matches (one search, one feed query)."""
    candidates, lexical = store.hybrid_search(query, store.embeddings.embed_query(query), k=3)
    return list(candidates), list(lexical)


def _rev(store: MemoryStore) -> int:
    """The revision of ``store``'s memories collection in the database."""
    name = store._collection(store.namespace).name
    with psycopg.connect(store.backend.client.conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT rev FROM hindsight.collections WHERE name = %s", [name]).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("mirrored", [True, False])
def test_another_process_writes_are_seen_by_the_next_recall(postgres_url: str, mirrored: bool) -> None:
    writer = Worker(postgres_url)
    reader = MemoryStore(database_url=postgres_url, embeddings=NgramEmbeddings())
    reader._replica.warmup.after = 0  # the replica from the first recall (test_postgres_first_recall.py: before)
    if not mirrored:
        reader._replica.max_rows = 0  # the dense arm from the database's index, the lexical arm in process
    try:
        seed = writer("add", "生成销售周报时使用公司统一的周报模板")
        assert _recalled(reader, "销售周报模板") == ([seed], [seed])  # the replica is read whole
        synced = reader._replica.synced[reader.namespace]
        assert (synced.mirror is not None) == mirrored

        added = writer("add", "Weekly sales reports use the company template")
        candidates, lexical = _recalled(reader, "weekly sales reports template")
        assert added in candidates
        assert added in lexical

        newer = writer("supersede", f"{seed} 生成销售周报时使用二〇二六版周报模板")
        candidates, lexical = _recalled(reader, "销售周报模板")
        assert newer in candidates
        assert newer in lexical
        assert seed not in candidates
        assert seed not in lexical

        assert writer("feedback", newer) == "ok"
        assert (
            reader.hybrid_search("销售周报模板", reader.embeddings.embed_query("销售周报模板"), k=3)[0][newer][
                0
            ].access_count
            == 1
        )  # the metadata change is read again

        assert writer("archive", added) == "ok"
        candidates, lexical = _recalled(reader, "weekly sales reports template")
        assert added not in candidates
        assert added not in lexical

        assert writer("forget", newer) == "ok"  # hard delete: never served again once forget returned
        candidates, lexical = _recalled(reader, "销售周报模板")
        assert newer not in candidates
        assert newer not in lexical
        assert newer not in reader._replica.synced[reader.namespace].lexical
        mirror = reader._replica.synced[reader.namespace].mirror
        assert mirror is None or newer not in mirror
        assert all(u.memory_id != newer for u, _, _ in reader.search("二〇二六版周报模板", k=3))
        assert synced is reader._replica.synced[reader.namespace]  # kept in step, never read whole again
    finally:
        writer.close()
        reader.close()


def test_a_writer_killed_mid_transaction_leaves_the_feed_and_the_replica_consistent(postgres_url: str) -> None:
    writer = Worker(postgres_url)
    reader = MemoryStore(database_url=postgres_url, embeddings=NgramEmbeddings())
    try:
        kept = writer("add", "部署前先在测试环境跑一遍迁移脚本")
        assert _recalled(reader, "迁移脚本") == ([kept], [kept])
        before = _rev(reader)
        assert writer("hang", kept) == "inside"  # its delete holds the collection's row lock, uncommitted
        assert _recalled(reader, "迁移脚本") == ([kept], [kept])  # readers do not wait for it
        os.kill(writer.child.pid, signal.SIGKILL)
        writer.child.wait(timeout=60)
        assert _recalled(reader, "迁移脚本") == ([kept], [kept])  # rolled back: nothing changed
        assert _rev(reader) == before  # the revision bump rolled back with it: no gap, no skipped number
        later = reader.add(MemoryUnit(task_type="report", content="Run the migration script on staging first")).unit
        assert _rev(reader) == before + 1  # the next writer takes the lock and counts on
        candidates, lexical = _recalled(reader, "migration script staging")
        assert later.memory_id in candidates
        assert later.memory_id in lexical
    finally:
        if writer.child.poll() is None:
            writer.child.kill()
        reader.close()


def test_a_reader_behind_the_kept_deletions_reads_everything_again(postgres_url: str) -> None:
    embedder = NgramEmbeddings()
    backend = PostgresBackend(postgres_url, lexical=lexical_scheme(), tombstone_revisions=2)
    with (
        MemoryStore(backend=backend, embeddings=embedder) as writer,
        MemoryStore(database_url=postgres_url, embeddings=embedder) as reader,
    ):
        reader._replica.warmup.after = 0  # the replica from the first search
        units = writer.add_many(
            [MemoryUnit(task_type="report", content=f"第{i}条经验：检查编码 lesson {i}") for i in range(6)],
            dedupe=False,
        )
        ids = [r.unit.memory_id for r in units]
        assert {i for i, _ in reader.lexical_search("检查编码 lesson", k=10)} == set(ids)
        old = reader._replica.synced[reader.namespace]
        for memory_id in ids[:4]:  # four deletions, each its own revision: the oldest tombstones are pruned
            writer.forget(memory_id, scrub=False)
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            pruned = conn.execute("SELECT max(pruned_rev) FROM hindsight.collections").fetchone()
        assert pruned is not None
        assert pruned[0] > old.rev
        lexical = reader.lexical_search("检查编码 lesson", k=10)
        assert {i for i, _ in lexical} == set(ids[4:])
        assert reader._replica.synced[reader.namespace] is not old  # read whole again


def test_above_the_mirror_size_a_recall_is_the_feed_query_and_one_statement(postgres_url: str) -> None:
    """Above the mirror's size the lexical arm is the replica's; the dense arm and every candidate's record
    (the dense hits and the lexical matches) come from one statement after the feed query, not one per part."""
    with MemoryStore(database_url=postgres_url, embeddings=NgramEmbeddings()) as store:
        store._replica.max_rows = 0
        store._replica.warmup.after = 0  # the replica from the first search
        texts = [
            "生成销售周报时使用公司统一的周报模板",
            "Weekly sales reports use the company template",
            "部署前先在测试环境跑一遍迁移脚本",
            "Run the migration script on staging first",
            "日志里记录请求编号便于排查",
        ]
        store.add_many([MemoryUnit(task_type="report", content=t) for t in texts], dedupe=False)
        query = "销售周报 template"
        vector = store.embeddings.embed_query(query)
        first = store.hybrid_search(query, vector, k=2)  # reads the replica whole, builds the vector index
        assert store._replica.synced[store.namespace].mirror is None
        store._replica.units.clear()  # nothing decoded yet: every candidate's record must be read
        asked = backend_calls(store)
        candidates, lexical = store.hybrid_search(query, vector, k=2)
        assert asked == ["changes", "dense query"]
        assert set(lexical) <= set(candidates)  # lexical matches carry their similarity, read in the same statement
        assert (list(candidates), lexical) == (list(first[0]), first[1])
        assert [s for _, s in candidates.values()] == [s for _, s in first[0].values()]
