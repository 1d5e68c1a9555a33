"""A Postgres store reads recall from the database, the path chosen when it opens, across processes.

A writer process and this test's store share one database: every write, supersede, archive,
feedback and forget of the writer is seen by the reader's next recall, on both arms; a writer
SIGKILLed mid-transaction leaves recall consistent; and a recall is one statement, with nothing
read from or kept in an in-process copy. (Scores equal to the in-memory store: ``test_postgres.py``.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.store._core import DatabaseReader
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
            col = store.collection(store.namespace, create=True)
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
    """The ids of ``query``'s hybrid candidates and lexical matches (one search, one statement)."""
    candidates, lexical = store.hybrid_search(query, store.embeddings.embed_query(query), k=3)
    return list(candidates), list(lexical)


def test_another_process_writes_are_seen_by_the_next_recall(postgres_url: str) -> None:
    writer = Worker(postgres_url)
    reader = MemoryStore(database_url=postgres_url, embeddings=NgramEmbeddings())
    try:
        seed = writer("add", "生成销售周报时使用公司统一的周报模板")
        assert _recalled(reader, "销售周报模板") == ([seed], [seed])

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
        assert all(u.memory_id != newer for u, _, _ in reader.search("二〇二六版周报模板", k=3))
        assert newer not in dict(reader.lexical_search("二〇二六版周报模板", k=3))
    finally:
        writer.close()
        reader.close()


def test_a_writer_killed_mid_transaction_leaves_recall_consistent(postgres_url: str) -> None:
    writer = Worker(postgres_url)
    reader = MemoryStore(database_url=postgres_url, embeddings=NgramEmbeddings())
    try:
        kept = writer("add", "部署前先在测试环境跑一遍迁移脚本")
        assert _recalled(reader, "迁移脚本") == ([kept], [kept])
        assert writer("hang", kept) == "inside"  # its delete is uncommitted
        assert _recalled(reader, "迁移脚本") == ([kept], [kept])  # readers do not wait for it
        os.kill(writer.child.pid, signal.SIGKILL)
        writer.child.wait(timeout=60)
        assert _recalled(reader, "迁移脚本") == ([kept], [kept])  # rolled back: nothing changed
        later = reader.add(MemoryUnit(task_type="report", content="Run the migration script on staging first")).unit
        candidates, lexical = _recalled(reader, "migration script staging")
        assert later.memory_id in candidates
        assert later.memory_id in lexical
    finally:
        if writer.child.poll() is None:
            writer.child.kill()
        reader.close()


def test_recall_takes_the_database_path_chosen_at_open(postgres_url: str) -> None:
    """A Postgres store's path is the database, chosen when it opens: a recall is one statement (both arms
    and every candidate's record), a lexical search one more, and nothing in process is read or kept."""
    with MemoryStore(database_url=postgres_url, embeddings=NgramEmbeddings()) as store:
        assert store.read_path == "database"
        assert isinstance(store.reader, DatabaseReader)

        def refused(*args: object, **kwargs: object) -> None:
            raise AssertionError("a Postgres recall read the in-process replica")

        for name in ("hybrid", "nearest", "similarities", "lexical", "current"):
            setattr(store.replica, name, refused)
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
        first = store.hybrid_search(query, vector, k=2)  # builds the vector index
        asked = backend_calls(store)
        candidates, lexical = store.hybrid_search(query, vector, k=2)
        assert asked == ["hybrid query"]
        assert set(lexical) <= set(candidates)  # lexical matches carry their similarity, read in the same statement
        assert (list(candidates), lexical) == (list(first[0]), first[1])
        assert store.lexical_search(query, k=2) == list(lexical.items())
        assert asked == ["hybrid query", "lexical search"]
        assert not store.replica.holds(store.namespace)
