"""The PostgreSQL backend: many writer processes on one database, crash safety, hard delete, schema, lexical parity.

The store's own suites (store, journal, forget, counts) also run on Postgres through the backend
fixtures of ``store_backends``; this module covers what only a shared database has. Every test uses the
session's embedded server (tests/postgres.py), so all are integration tests.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import psycopg
import pytest
from langchain_core.embeddings import Embeddings

from benchmarks.supersede_judge import FlatEmbeddings
from langchain_hindsight import Hindsight, HindsightStore, MemoryStore, MemoryUnit
from langchain_hindsight.cli.main import EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK, main
from langchain_hindsight.errors import BackendError, ConfigurationError, DatabaseConnectionError
from langchain_hindsight.store.backend._pg_filter import SqlFilter
from langchain_hindsight.store.backend._pg_schema import SCHEMA_VERSION
from langchain_hindsight.store.backend.inmemory import InMemoryBackend
from langchain_hindsight.store.backend.postgres import (
    _NEAREST_BY_INDEX,
    PostgresBackend,
    PostgresRecords,
    _nearest_sql,
)
from langchain_hindsight.store.tokens import lexical_scheme
from langchain_hindsight.writes import Neighbour, WriteDecision
from tests.fakes import GRANTS_TOML, HashEmbeddings, NgramEmbeddings, child_env
from tests.postgres import PostgresServer, backend_calls
from tests.unit_tests.adapters.basestore_conformance import SCENARIOS, run_scenario
from tests.unit_tests.adapters.test_langgraph_store import reference
from tests.unit_tests.store.test_store_backend import _META, _fill, _vectors

pytestmark = pytest.mark.integration

ROOT = str(Path(__file__).resolve().parents[3])

_WRITER = """
import sys
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore, MemoryUnit
from tests.fakes import HashEmbeddings
store = MemoryStore(database_url={url!r}, embeddings=HashEmbeddings())
print("READY", flush=True)
sys.stdin.readline()  # every writer starts at once
p = {proc}
for start in range(0, 300, 10):
    units = []
    for i in range(start, start + 10):
        if i % 2:
            text = f"writer{{p}} lesson{{i}}: read the csv report with encoding utf-8-sig before cleaning w{{p}}x{{i}}"
        else:
            text = f"进程{{p}}的第{{i}}条经验：清洗销售数据前先检查编码和空值 标记{{p}}号{{i}}"
        units.append(MemoryUnit(task_type="data_cleaning", content=text))
    results = store.add_many(units)
    print("COMMITTED", " ".join(r.memory_id for r in results), flush=True)
store.close()
print("DONE", flush=True)
"""


def _ready(script: str) -> subprocess.Popen[str]:
    """A process running ``script``, once it printed READY (it then waits for "go" on its stdin)."""
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "READY"
    return child


def _released(scripts: list[str]) -> list[subprocess.Popen[str]]:
    """A process for each of ``scripts``, all ready before any is released: their writes interleave."""
    children = [_ready(script) for script in scripts]
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    return children


def _output(child: subprocess.Popen[str]) -> list[str]:
    """``child``'s remaining output lines, once it exited successfully."""
    out, _ = child.communicate(timeout=300)
    assert child.returncode == 0
    return out.splitlines()


def test_three_writer_processes_store_900_units_all_recallable(postgres_url: str) -> None:
    children = _released([_WRITER.format(root=ROOT, url=postgres_url, proc=p) for p in range(3)])
    committed: list[str] = []
    for child in children:
        lines = _output(child)
        assert lines[-1] == "DONE"
        committed += [i for line in lines if line.startswith("COMMITTED") for i in line.split()[1:]]
    assert len(committed) == len(set(committed)) == 900
    with MemoryStore(database_url=postgres_url, embeddings=HashEmbeddings()) as store:
        assert store.count() == 900
        units = store.get_many(committed)
        assert len(units) == 900
        assert all(u.status == "active" for u in units)
        zh = [u for u in units if "经验" in u.content]
        assert len(zh) == 450
        for unit in units:  # every unit is found by both arms, Chinese and English alike
            dense = store.search(unit.content, k=1)
            assert dense[0][0].memory_id == unit.memory_id
            lexical = [i for i, _ in store.lexical_search(unit.content, k=3)]
            assert unit.memory_id in lexical, unit.content


def test_a_write_in_one_store_is_recalled_by_another_at_once(postgres_url: str) -> None:
    embedder = NgramEmbeddings()
    with (
        MemoryStore(database_url=postgres_url, embeddings=embedder) as a,
        MemoryStore(database_url=postgres_url, embeddings=embedder) as b,
    ):
        assert b.lexical_search("周报 模板", k=5) == []
        unit = a.add(MemoryUnit(task_type="report", content="生成销售周报时使用公司统一的周报模板")).unit
        assert [i for i, _ in b.lexical_search("周报 模板", k=5)] == [unit.memory_id]  # no stale index in b
        assert b.search("销售周报模板", k=1)[0][0].memory_id == unit.memory_id
        b.record_feedback([unit.memory_id], success=True)
        assert a.get(unit.memory_id).access_count == 1
        a.forget(unit.memory_id)
        assert b.lexical_search("周报 模板", k=5) == []
        assert b.search("销售周报模板", k=1) == []


def test_concurrent_adds_of_one_statement_merge_into_one_unit(postgres_url: str) -> None:
    stores = [MemoryStore(database_url=postgres_url, embeddings=HashEmbeddings()) for _ in range(4)]
    try:
        barrier = threading.Barrier(len(stores))
        actions: list[str] = []

        def add(store: MemoryStore) -> None:
            barrier.wait()
            actions.append(store.add(MemoryUnit(content="Always back up the database before a migration.")).action)

        threads = [threading.Thread(target=add, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(actions) == ["added", "merged", "merged", "merged"]  # the plans ran one after another
        assert stores[0].count() == 1
    finally:
        for s in stores:
            s.close()


def test_an_add_plans_on_three_round_trips_besides_its_transaction(postgres_url: str) -> None:
    """Under its namespace's lock an add asks whether its id is taken, reads its neighbours and writes: one round trip
    each, besides the transaction's start (with the lock) and its commit. Other writers wait for all of them.
    """
    with MemoryStore(database_url=postgres_url, embeddings=HashEmbeddings()) as store:
        store.add_many([MemoryUnit(content=f"lesson {i}: check the encoding of report {i}") for i in range(8)])
        store.search("encoding", k=1)  # builds the vector index
        calls = backend_calls(store)
        assert store.add(MemoryUnit(content="Always back up the database before a migration.")).action == "added"
        assert calls == ["get", "query", "upsert"]


def test_another_store_writes_the_namespace_while_a_write_judge_is_asked(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A judge other than the rules (a chat model: seconds) is asked before the write plan, so its namespace's lock
    and transaction are not held meanwhile: store B (another process, in effect) adds to the namespace and finishes
    while store A's judge is thinking; A's plan then sees B's unit, asks again and says so.
    """

    def fact(content: str) -> MemoryUnit:
        return MemoryUnit(content=content, task_type="general", kind="fact", source="user_feedback")

    threads: list[threading.Thread] = []
    shown: list[list[str]] = []

    class Judge:
        def judge(self, unit: MemoryUnit, neighbours: Sequence[Neighbour]) -> WriteDecision:
            shown.append([n.unit.content for n in neighbours])
            if not threads:
                threads.append(threading.Thread(target=b.add, args=[fact("Invoices go out on the first workday.")]))
                threads[0].start()
                threads[0].join(timeout=10)  # B would wait here for A's advisory lock if A held it
                assert not threads[0].is_alive(), "store B waited for store A's write judge"
            return WriteDecision("add", reason="kept alongside")

    with (
        MemoryStore(database_url=postgres_url, embeddings=FlatEmbeddings(), judge=Judge()) as a,
        MemoryStore(database_url=postgres_url, embeddings=FlatEmbeddings()) as b,
    ):
        a.add(fact("The weekly report goes to the sales manager."), dedupe=False)
        with caplog.at_level(logging.INFO, logger="langchain_hindsight.store"):
            result = a.add(fact("The weekly report goes to the finance director."))
        threads[0].join()
        assert result.action == "added"
        assert b.count() == 3
    assert len(shown) == 2  # the plan's neighbours include B's unit: another question, asked again inside
    assert "Invoices go out on the first workday." in shown[1]
    assert any("changed since the write judge was asked outside the lock" in m for m in caplog.messages)


_NEAR_DUPLICATES = """
import random, sys
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore, MemoryUnit
from tests.fakes import NgramEmbeddings
STATEMENTS = ("back up the database before a migration", "check the csv encoding before cleaning the sales data",
              "send the weekly report to the manager on friday", "rotate the api keys every quarter",
              "pin dependency versions in production builds", "write a failing test before fixing a bug",
              "迁移之前一定要先备份数据库", "清洗销售数据前先检查编码和空值", "每周五把周报发给经理",
              "每个季度轮换一次接口密钥", "生产环境构建要固定依赖版本", "修复缺陷之前先写一个失败的测试")
def worded(text, p):  # the same statement in writer p's words
    if text.isascii():
        first, rest = text.split(" ", 1)
        head = first.capitalize()
        return (f"{{head}} {{rest}}.", text, f"{{head}}  {{rest}}!", f"{{first.upper()}} {{rest}}")[p]
    return (text, text + "。", text + "！", f"{{text[:2]}}，{{text[2:]}}")[p]
p = {proc}
shared = [("shared", i, worded(text, p)) for i, text in enumerate(STATEMENTS)]
own = [("own", j, f"writer{{p}} lesson{{j}}: read the csv report with encoding utf-8-sig before cleaning w{{p}}x{{j}}")
       for j in range({own})]
writes = shared + own
random.Random(p).shuffle(writes)
store = MemoryStore(database_url={url!r}, embeddings=NgramEmbeddings())
print("READY", flush=True)
sys.stdin.readline()  # every writer starts at once
start = 0
while start < len(writes):
    chunk = writes[start : start + 1 + start % 3]  # add_many of 1, 2 or 3 units, interleaved with the others
    results = store.add_many([MemoryUnit(task_type="ops", content=text) for _, _, text in chunk])
    for (what, i, _), result in zip(chunk, results, strict=True):
        print(what, i, result.action, result.memory_id, flush=True)
    start += len(chunk)
store.close()
print("DONE", flush=True)
"""


def test_writer_processes_on_one_namespace_merge_near_duplicates_and_lose_nothing(postgres_url: str) -> None:
    """Four processes write the same statements (each its own wording) and their own into one namespace at once:
    each statement is stored once, having absorbed the other three writes (its plan saw the unit another
    process had just committed), and every other unit is stored.
    """
    shared, own = 12, 10
    children = _released([_NEAR_DUPLICATES.format(root=ROOT, url=postgres_url, proc=p, own=own) for p in range(4)])
    by_statement: dict[int, list[tuple[str, str]]] = {}
    owned: list[str] = []
    for child in children:
        lines = _output(child)
        assert lines[-1] == "DONE"
        for what, i, action, memory_id in (line.split() for line in lines[:-1]):
            if what == "shared":
                by_statement.setdefault(int(i), []).append((action, memory_id))
            else:
                assert action == "added"
                owned.append(memory_id)
    assert len(owned) == len(set(owned)) == 4 * own
    assert sorted(by_statement) == list(range(shared))
    for results in by_statement.values():  # one writer stored it, the three others merged into that unit
        assert sorted(action for action, _ in results) == ["added", "merged", "merged", "merged"]
        assert len({memory_id for _, memory_id in results}) == 1
    with MemoryStore(database_url=postgres_url, embeddings=NgramEmbeddings()) as store:
        assert store.count() == shared + 4 * own
        kept = store.get_many([results[0][1] for results in by_statement.values()])
        assert [u.evidence for u in kept] == [4] * shared
        assert all(u.status == "active" for u in [*kept, *store.get_many(owned)])
        assert len(store.get_many(owned)) == 4 * own


@pytest.mark.parametrize("normalize", [False, True])
def test_lexical_scores_equal_the_in_process_index(postgres_url: str, normalize: bool) -> None:
    texts = [
        "用pandas读取CSV文件时指定encoding='utf-8-sig'",
        "生成销售周报时使用统一模板",
        "Weekly sales reports use the company template",
        "清洗数据前先检查空值和重复行",
        "Check for duplicate rows before cleaning reports",
        "pandas.read_csv handles large files in chunks",
    ]
    units = [MemoryUnit(task_type="general", content=t, tags=["demo"]) for t in texts]
    embedder = HashEmbeddings()
    with (
        MemoryStore(database_url=postgres_url, embeddings=embedder) as pg,
        MemoryStore(backend=InMemoryBackend(), embeddings=embedder) as mem,
    ):
        pg.add_many(units)
        mem.add_many(units)
        superseded = pg.get_many([units[1].memory_id])[0]
        pg.update(superseded.memory_id, status="superseded")
        mem.update(superseded.memory_id, status="superseded")
        for query in ["销售周报模板", "read csv with pandas", "reports", "检查重复行", "nothing matches this"]:
            got = pg.lexical_search(query, k=4, normalize=normalize)
            want = mem.lexical_search(query, k=4, normalize=normalize)
            assert [i for i, _ in got] == [i for i, _ in want], query
            assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9), query


_HYBRID_TEXTS = [
    "用pandas读取CSV文件时指定encoding='utf-8-sig'",
    "生成销售周报时使用统一模板",
    "Weekly sales reports use the company template",
    "清洗数据前先检查空值和重复行",
    "Check for duplicate rows before cleaning reports",
    "pandas.read_csv handles large files in chunks",
    "部署前先在测试环境跑一遍迁移脚本",
    "Run the migration script on staging before deploying",
    "读取Excel文件时注意合并单元格",
    "Retry flaky network calls with exponential backoff",
    "日志里记录请求编号便于排查",
    "Log the request id so failures can be traced",
    "图表的坐标轴要标注单位",
    "Label chart axes with their units",
]
_HYBRID_QUERIES = [
    "销售周报模板",
    "read csv with pandas",
    "reports",
    "检查重复行",
    "deploy migration",
    "无关的问题 xyz",
]


def _same_hybrid(pg: MemoryStore, mem: MemoryStore, k: int, normalize: bool) -> None:
    """Postgres' one-statement hybrid search gives the in-memory store's candidates, similarities and scores."""
    embedder = pg.embeddings
    for query in _HYBRID_QUERIES:
        vector = embedder.embed_query(query)
        got, got_lexical = pg.hybrid_search(query, vector, k=k, normalize=normalize)
        want, want_lexical = mem.hybrid_search(query, vector, k=k, normalize=normalize)
        assert list(got) == list(want), query
        assert [s for _, s in got.values()] == pytest.approx([s for _, s in want.values()], abs=1e-5), query
        assert [u.content for u, _ in got.values()] == [u.content for u, _ in want.values()], query
        assert list(got_lexical) == list(want_lexical), query
        assert list(got_lexical.values()) == pytest.approx(list(want_lexical.values()), rel=1e-9), query


@pytest.mark.parametrize("normalize", [False, True])
def test_hybrid_search_equals_the_in_memory_store(postgres_url: str, normalize: bool) -> None:
    """Read in one SQL statement, what recall receives is
    the in-memory store's: the same candidates in the same order, the same similarities, the same lexical
    scores — also when most of the nearest records are inactive (the dense arm then asks again with a
    filter) and after deletes.
    """
    units = [MemoryUnit(task_type="general", content=t) for t in _HYBRID_TEXTS]
    embedder = HashEmbeddings()
    with (
        MemoryStore(database_url=postgres_url, embeddings=embedder) as pg,
        MemoryStore(backend=InMemoryBackend(), embeddings=embedder) as mem,
    ):
        for store in (pg, mem):
            store.add_many(units, dedupe=False)
        _same_hybrid(pg, mem, k=3, normalize=normalize)
        for store in (pg, mem):  # most records inactive: too few active among the nearest
            for unit in units[2:12]:
                store.update(unit.memory_id, status="superseded")
            store.delete(units[0].memory_id)
        _same_hybrid(pg, mem, k=2, normalize=normalize)
        _same_hybrid(pg, mem, k=5, normalize=normalize)


def _stats_match(url: str) -> None:
    """``lexical_stats`` holds what counting the records gives, and ``lexical_terms`` what counting the postings
    gives, for every collection (and nothing for a collection or term that has none)."""
    with psycopg.connect(url, autocommit=True) as conn:
        kept = dict(conn.execute("SELECT collection_id, (n, total)::text FROM hindsight.lexical_stats WHERE n <> 0"))
        counted = dict(
            conn.execute(
                "SELECT collection_id, (count(*), sum(lex_len))::text FROM hindsight.records"
                " WHERE lex_len IS NOT NULL GROUP BY collection_id"
            )
        )
        terms = set(conn.execute("SELECT collection_id, term, df FROM hindsight.lexical_terms"))
        counted_terms = set(
            conn.execute("SELECT collection_id, term, count(*) FROM hindsight.postings GROUP BY collection_id, term")
        )
    assert kept == counted
    assert terms == counted_terms
    assert terms


_V3_FEED = (  # what schema version 3 added for an in-process replica since removed; version 4 drops it
    "ALTER TABLE hindsight.collections ADD COLUMN rev bigint NOT NULL DEFAULT 0, ADD COLUMN rev_xact xid8,"
    " ADD COLUMN pruned_rev bigint NOT NULL DEFAULT 0",
    "ALTER TABLE hindsight.records ADD COLUMN rev bigint NOT NULL DEFAULT 0",
    "CREATE TABLE hindsight.tombstones (collection_id bigint, id text, rev bigint, PRIMARY KEY (collection_id, id))",
    "CREATE FUNCTION hindsight.write_rev(cid bigint) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'",
    "CREATE FUNCTION hindsight.record_rev() RETURNS trigger LANGUAGE plpgsql AS"
    " $$ BEGIN NEW.rev := hindsight.write_rev(NEW.collection_id); RETURN NEW; END $$",
    "CREATE FUNCTION hindsight.tombstone() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
    "CREATE TRIGGER records_rev BEFORE INSERT OR UPDATE ON hindsight.records"
    " FOR EACH ROW EXECUTE FUNCTION hindsight.record_rev()",
    "CREATE TRIGGER records_tombstone AFTER DELETE ON hindsight.records"
    " FOR EACH ROW EXECUTE FUNCTION hindsight.tombstone()",
)


@pytest.mark.parametrize("version", [1, 3])
def test_lexical_statistics_follow_every_write(postgres_url: str, version: int) -> None:
    """The corpus size and length and the terms' document frequencies BM25 reads (maintained rows) equal a
    count after adds, updates, supersedes, deletes, forgets, a dropped namespace, and a migration from schema
    version 1 or 3 (whose change feed is dropped).
    """
    embedder = HashEmbeddings()
    with MemoryStore(database_url=postgres_url, embeddings=embedder) as store:
        units = store.add_many([MemoryUnit(task_type="general", content=t) for t in _HYBRID_TEXTS], dedupe=False)
        store.add_many([MemoryUnit(task_type="general", content=t) for t in _HYBRID_TEXTS[:4]], namespace="other")
        _stats_match(postgres_url)
        ids = [r.memory_id for r in units]
        store.update(ids[1], content="生成销售月报时使用新的统一模板和图表")
        store.update(ids[2], status="superseded")
        store.supersede([ids[3]], MemoryUnit(task_type="general", content="清洗数据前先检查空值"), reason="test")
        _stats_match(postgres_url)
        store.delete(ids[4])
        store.forget([ids[5]])
        store.forget(namespace="other")
        _stats_match(postgres_url)
        store.search("sales report template", k=3)  # builds the vector index
        before = store.lexical_search("销售 template", k=5, normalize=True)
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # back to schema version 1 or 3
        conn.execute("DROP TABLE hindsight.lexical_terms")
        conn.execute("DROP FUNCTION hindsight.count_terms() CASCADE")
        conn.execute(
            "CREATE TABLE hindsight.postings_v1 (collection_id bigint NOT NULL, term bigint NOT NULL, id text NOT NULL,"
            " tf integer NOT NULL, len integer NOT NULL, PRIMARY KEY (collection_id, term, id) INCLUDE (tf, len),"
            " FOREIGN KEY (collection_id, id) REFERENCES hindsight.records (collection_id, id) ON DELETE CASCADE)"
        )
        conn.execute(
            "INSERT INTO hindsight.postings_v1 SELECT p.collection_id, p.term, r.id, p.tf, p.len"
            " FROM hindsight.postings p JOIN hindsight.records r ON r.collection_id = p.collection_id AND r.seq = p.seq"
        )
        conn.execute("DROP TABLE hindsight.postings")
        conn.execute("ALTER TABLE hindsight.postings_v1 RENAME TO postings")
        conn.execute("CREATE INDEX postings_record ON hindsight.postings (collection_id, id)")
        conn.execute("DROP INDEX hindsight.records_order")
        conn.execute("CREATE INDEX records_order ON hindsight.records (collection_id, seq)")
        if version == 1:
            conn.execute("DROP TABLE hindsight.lexical_stats")
            conn.execute("DROP FUNCTION hindsight.count_lexical() CASCADE")
            conn.execute("ALTER TABLE hindsight.collections DROP COLUMN indexed")
            conn.execute(
                "CREATE INDEX records_lexical_stats ON hindsight.records (collection_id) INCLUDE (lex_len)"
                " WHERE lex_len IS NOT NULL"
            )
        for statement in _V3_FEED if version == 3 else ():
            conn.execute(statement)
        conn.execute("UPDATE hindsight.meta SET value = %s WHERE key = 'schema_version'", [str(version)])
    with MemoryStore(database_url=postgres_url, embeddings=embedder) as store:
        _stats_match(postgres_url)
        after = store.lexical_search("销售 template", k=5, normalize=True)  # a first search: BM25 in SQL
        assert [i for i, _ in after] == [i for i, _ in before]
        assert [s for _, s in after] == pytest.approx([s for _, s in before], rel=1e-12)  # the sums' order differs
        assert store.search("sales report template", k=1)
        store.add(MemoryUnit(task_type="general", content="Archive the raw exports before cleaning them"))
        _stats_match(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('hindsight.tombstones')").fetchone() == (None,)
        assert (
            conn.execute(
                "SELECT proname FROM pg_proc WHERE pronamespace = 'hindsight'::regnamespace"
                " AND proname IN ('write_rev', 'record_rev', 'tombstone')"
            ).fetchall()
            == []
        )


def _vector_indexes(url: str) -> list[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'hindsight' AND indexname LIKE 'records_hnsw_%'"
        ).fetchall()
    return [r[0] for r in rows]


def test_the_vector_index_is_built_by_the_first_dense_query(postgres_url: str) -> None:
    """A bulk load into a new namespace inserts no graph nodes one by one: the first dense query of the database
    builds the index once; later writes insert into it."""
    embedder = HashEmbeddings()
    with MemoryStore(database_url=postgres_url, embeddings=embedder) as store:
        store.add_many([MemoryUnit(task_type="general", content=t) for t in _HYBRID_TEXTS], dedupe=False)
        assert _vector_indexes(postgres_url) == []
        found = store.search("Label chart axes with their units", k=1)
        assert [u.content for u, _, _ in found] == ["Label chart axes with their units"]
        assert len(_vector_indexes(postgres_url)) == 1
    with MemoryStore(database_url=postgres_url, embeddings=embedder) as other:  # dedupe asks the database's index
        other.add(MemoryUnit(task_type="general", content="Pin dependency versions in the lock file"))
        assert len(_vector_indexes(postgres_url)) == 1
        other.add(MemoryUnit(task_type="general", content="Write the changelog before the release"))
        assert [u.content for u, _, _ in other.search("Pin dependency versions in the lock file", k=1)] == [
            "Pin dependency versions in the lock file"
        ]
        assert len(_vector_indexes(postgres_url)) == 1


def test_a_write_plans_first_dense_query_leaves_the_index_build_to_after_its_commit(postgres_url: str) -> None:
    """A new namespace's second write is the first dense query of its collection, inside a write plan. Building the
    index there would lock the whole records table against every other namespace's writes until the plan commits
    (and two new namespaces doing so at once deadlock): the plan reads its few records without the index, and the
    index is built after the commit."""
    embedder = HashEmbeddings()
    with (
        MemoryStore(database_url=postgres_url, embeddings=embedder, namespace="new") as store,
        MemoryStore(database_url=postgres_url, embeddings=embedder, namespace="other") as other,
    ):
        store.add(MemoryUnit(task_type="general", content="Pin dependency versions in the lock file"))
        other.add(MemoryUnit(task_type="general", content="Write the changelog before the release"))
        col = store.vector_collection("new")
        index = f"records_hnsw_{col.instance}"
        written: list[str] = []

        def plan() -> None:
            found = col.query(query_embeddings=embedder.embed_documents(["Pin dependency versions"]), n_results=1)
            assert found["documents"] == [["Pin dependency versions in the lock file"]]
            unit = MemoryUnit(task_type="general", content="Tag every release in git")
            writer = threading.Thread(target=lambda: written.append(other.add(unit).action))
            writer.start()
            writer.join(timeout=10)
            assert written == ["added"], "another namespace's write waited for this plan"
            assert index not in _vector_indexes(postgres_url)

        store.atomic("new", plan)
        assert index in _vector_indexes(postgres_url)
        assert [u.content for u, _, _ in store.search("Pin dependency versions in the lock file", k=1)] == [
            "Pin dependency versions in the lock file"
        ]


def test_a_filtered_nearest_query_walks_the_vector_index(postgres_url: str) -> None:
    """A write plan's dedupe asks for the nearest active units of a task type: a ``jsonb`` filter the planner
    cannot estimate (it guesses a handful of matches and would sort them all by distance, reading every record
    of the collection). The statement is planned as the HNSW index scan, which filters as it walks the graph."""
    pg = PostgresBackend(postgres_url, lexical=lexical_scheme())
    try:
        col = pg.create_collection("col-plan", _META)
        assert isinstance(col, PostgresRecords)
        _fill(col, n=400)
        where = {"$and": [{"status": "active"}, {"task_type": "t1"}]}
        found = col.query(query_embeddings=_vectors(1, seed=3), n_results=5, where=where)  # builds the index
        assert len(found["ids"][0]) == 5
        f = SqlFilter(psycopg)
        sql = _nearest_sql(int(col.instance), 8, "id", f.where(where))
        with psycopg.connect(postgres_url) as conn, conn.transaction():
            conn.execute(_NEAREST_BY_INDEX)
            params = [str(_vectors(1, seed=3)[0].tolist()), *f.params, 5]
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params).fetchall())
        assert "Index Scan using records_hnsw_" in plan, plan
    finally:
        pg.close()


def test_a_scope_the_budgeted_scan_cannot_fill_gets_its_exact_nearest(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write's dedupe asks for the nearest active units of its scope. The HNSW scan visits at most a budget of
    index entries; a scope it cannot fill by then (a task type with few units, such as a new one) is answered
    exactly from the metadata index: every unit of it, nearest first, and a common scope as before."""
    from langchain_hindsight.store.backend import postgres as pg_module

    pg = PostgresBackend(postgres_url, lexical=lexical_scheme())
    try:
        col = pg.create_collection("col-rare", _META)
        vectors = _vectors(300, seed=5)
        rare = [7, 150, 299]  # three units of their own task type among 300
        col.upsert(
            ids=[f"id{i:03d}" for i in range(300)],
            embeddings=vectors,
            documents=[f"doc {i}" for i in range(300)],
            metadatas=[
                {"status": "active", "task_type": "rare" if i in rare else f"t{i % 2}", "kind": "experience"}
                for i in range(300)
            ],
        )
        probe = _vectors(1, seed=11)
        col.query(query_embeddings=probe, n_results=1)  # builds the index
        monkeypatch.setattr(pg_module, "_SCAN_BUDGET", 2)  # the scan stops long before it meets the rare scope
        where = {"$and": [{"status": "active"}, {"task_type": "rare"}, {"kind": "experience"}]}
        found = col.query(query_embeddings=probe, n_results=5, where=where)
        expected = sorted(rare, key=lambda i: -float(vectors[i] @ probe[0]))
        assert found["ids"][0] == [f"id{i:03d}" for i in expected]
        common = {"$and": [{"status": "active"}, {"task_type": "t0"}, {"kind": "experience"}]}
        monkeypatch.setattr(pg_module, "_SCAN_BUDGET", 1000)
        wide = col.query(query_embeddings=probe, n_results=5, where=common)
        assert len(wide["ids"][0]) == 5
        assert all(int(i[2:]) % 2 == 0 and int(i[2:]) not in rare for i in wide["ids"][0])
    finally:
        pg.close()


_JOURNAL_WRITER = """
import sys
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore
from langchain_hindsight.journal import RunJournal
from tests.fakes import HashEmbeddings
store = MemoryStore(database_url={url!r}, embeddings=HashEmbeddings())
journal = RunJournal(store)
print("READY", flush=True)
sys.stdin.readline()
for i in range({n}):
    journal.add_feedback("run-1", text=f"process {proc} verdict {{i}}", success=bool(i % 2))
    journal.add_produced("run-1", [f"mem_{proc}_{{i}}"])
store.close()
print("DONE", flush=True)
"""


def test_two_processes_updating_one_run_lose_nothing(postgres_url: str) -> None:
    """The journal's read-modify-write updates are write plans (one transaction under the namespace's lock):
    two processes appending verdicts and produced memories to the same run at once keep every one of them.
    """
    from langchain_hindsight.journal import RunJournal

    n = 15
    with MemoryStore(database_url=postgres_url, embeddings=HashEmbeddings()) as store:
        RunJournal(store).start("run-1", task="clean the sales data")
    children = _released([_JOURNAL_WRITER.format(root=ROOT, url=postgres_url, n=n, proc=p) for p in range(2)])
    for child in children:
        assert "DONE" in _output(child)
    with MemoryStore(database_url=postgres_url, embeddings=HashEmbeddings()) as store:
        run = RunJournal(store).get("run-1")
    verdicts = sorted(f"process {p} verdict {i}" for p in range(2) for i in range(n))
    assert sorted(f.text for f in run.feedback) == verdicts
    assert sorted(run.produced) == sorted(f"mem_{p}_{i}" for p in range(2) for i in range(n))
    assert run.task == "clean the sales data"


def test_a_write_plan_reads_its_collections_with_its_lock_and_sees_another_processs_replacement(
    postgres_url: str,
) -> None:
    """A plan's look-ups of the collections the last plan on its key looked up are read with the lock (no round trip
    of their own), as current as the lock: a collection another process dropped and created again since the last
    plan, and one it created, are seen; inside the plan, a write sends later look-ups to the database again.
    """
    scheme = lexical_scheme()
    a = PostgresBackend(postgres_url, lexical=scheme)
    b = PostgresBackend(postgres_url, lexical=scheme)
    try:
        first = a.create_collection("plan_c", {})

        def look() -> tuple[str | None, str | None]:
            found, other = a.get_collection("plan_c"), a.get_collection("plan_d")
            return (found.instance if found else None), (other.instance if other else None)

        assert a.atomic("ns", look) == (first.instance, None)
        b.delete_collection("plan_c")
        again, made = b.create_collection("plan_c", {}), b.create_collection("plan_d", {})
        asked = backend_calls(SimpleNamespace(backend=a))
        assert a.atomic("ns", look) == (again.instance, made.instance)
        assert asked == []  # both answered from the round trip that took the lock

        def write_then_look() -> str | None:
            a.get_collection("plan_c")
            a.delete_collection("plan_d")  # a write: the next look-up reads the database
            return None if a.get_collection("plan_d") is None else "still there"

        assert a.atomic("ns", write_then_look) is None
        assert asked == ["delete_collection", "get_collection"]
    finally:
        a.close()
        b.close()


def test_schema_is_versioned_and_a_newer_one_is_refused(postgres_url: str) -> None:
    with MemoryStore(database_url=postgres_url, embeddings=HashEmbeddings()) as store:
        store.add(MemoryUnit(content="A lesson that survives reopening."))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM hindsight.meta WHERE key = 'schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
        conn.execute("UPDATE hindsight.meta SET value = %s WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    with pytest.raises(BackendError, match="newer"):
        PostgresBackend(postgres_url, lexical=lexical_scheme())
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE hindsight.meta SET value = %s WHERE key = 'schema_version'", [str(SCHEMA_VERSION)])
        conn.execute("UPDATE hindsight.meta SET value = 'old' WHERE key = 'lexical_signature'")
        conn.execute("DELETE FROM hindsight.postings")
        conn.execute("UPDATE hindsight.records SET lex_len = NULL")
    with MemoryStore(database_url=postgres_url, embeddings=HashEmbeddings()) as store:  # terms recomputed
        assert store.count() == 1
        assert len(store.lexical_search("lesson reopening", k=3)) == 1


def test_bad_database_urls_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="postgresql://"):
        MemoryStore(database_url="mysql://nope", embeddings=HashEmbeddings())
    with pytest.raises(ConfigurationError, match="not several"):
        MemoryStore(database_url="postgresql://x/y", backend=InMemoryBackend(), embeddings=HashEmbeddings())
    with pytest.raises(DatabaseConnectionError, match="no server listens on that Unix socket"):
        PostgresBackend("postgresql://nobody@/nowhere?host=/nonexistent", lexical=lexical_scheme(), connect_timeout=1)


def test_a_database_or_user_the_server_lacks_is_named_with_what_to_check(
    postgres_server: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server answers, but has no such database (or role): one typed error, one CLI line, the pool never opened."""
    missing_db = postgres_server.url("no_such_db")
    with pytest.raises(DatabaseConnectionError) as caught:
        MemoryStore(database_url=missing_db, embeddings=HashEmbeddings())
    assert 'database "no_such_db" at /' in str(caught.value)
    assert str(caught.value).endswith("the server has no such database: check its name, or create it (createdb)")
    missing_role = postgres_server.url().replace("postgresql://postgres:", "postgresql://no_such_role:pw", 1)
    with pytest.raises(DatabaseConnectionError, match="no such user: check the user name") as caught:
        MemoryStore(database_url=missing_role, embeddings=HashEmbeddings())
    assert ":pw" not in str(caught.value)
    assert main(["stats", "--database-url", missing_db]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "no such database" in err


def _scan(directory: Path, needle: bytes) -> list[str]:
    """Files under ``directory`` whose bytes contain ``needle``."""
    found = []
    for path in directory.rglob("*"):
        if path.is_file():
            try:
                if needle in path.read_bytes():
                    found.append(str(path.relative_to(directory)))
            except OSError:
                continue
    return found


def test_forget_erases_the_bytes_from_the_data_directory(postgres_server: PostgresServer, postgres_url: str) -> None:
    secret = "zebracorn7731"
    secret_zh = "绝密口令青龙偃月"
    with MemoryStore(database_url=postgres_url, embeddings=HashEmbeddings()) as store:
        keep = store.add(MemoryUnit(content="An unrelated lesson that stays.")).unit
        gone = store.add(MemoryUnit(content=f"The vault code is {secret}; 口令是{secret_zh}")).unit
        with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
            conn.execute("CHECKPOINT")
        assert _scan(postgres_server.data_dir, secret.encode())  # the scan can see it: the test can fail
        assert _scan(postgres_server.data_dir, secret_zh.encode())
        assert store.forget(gone.memory_id) == 1  # scrubs by default: VACUUM FULL, WAL switched and checkpointed
        with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
            conn.execute("CHECKPOINT")
        assert _scan(postgres_server.data_dir, secret.encode()) == []
        assert _scan(postgres_server.data_dir, secret_zh.encode()) == []
        assert store.get(keep.memory_id).content == keep.content


_KILLED = """
import sys
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore, MemoryUnit
from tests.fakes import HashEmbeddings
store = MemoryStore(database_url={url!r}, embeddings=HashEmbeddings())
print("READY", flush=True)
batch = 0
while True:
    batch += 1
    units = [MemoryUnit(task_type="general", content=f"batch {{batch}} unit {{i}} lesson") for i in range(25)]
    results = store.add_many(units)
    print("COMMITTED", " ".join(r.memory_id for r in results), flush=True)
    new = store.supersede([results[0].memory_id], MemoryUnit(task_type="general", content=f"batch {{batch}} fix"),
                          reason="test")
    print("COMMITTED", new.memory_id, flush=True)
"""


def test_sigkill_of_a_writer_mid_transaction_loses_nothing_committed(postgres_url: str) -> None:
    script = _KILLED.format(root=ROOT, url=postgres_url)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "READY"
    committed: list[str] = []
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        line = child.stdout.readline()
        committed += line.split()[1:]
    child.kill()  # SIGKILL, most likely inside a transaction
    rest, _ = child.communicate()
    committed += [i for line in rest.splitlines() if line.startswith("COMMITTED") for i in line.split()[1:]]
    assert len(committed) > 25
    with MemoryStore(database_url=postgres_url, embeddings=HashEmbeddings()) as store:
        found = store.get_many(committed)
        assert len(found) == len(set(committed))  # every acknowledged write is there
        units = store.list_units()
        extra = len(units) - len(set(committed))
        assert extra in (0, 1, 25)  # at most the one plan committed just before the kill, whole
        assert all(u.content for u in units)
        for unit in units:  # a supersede is whole: every successor's predecessor is demoted
            if unit.supersedes:
                assert store.get(unit.supersedes).status == "superseded"


def test_cli_stats_search_export_forget_with_a_database_url(
    postgres_url: str, embeddings: Embeddings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with MemoryStore(database_url=postgres_url, embeddings=embeddings) as store:
        csv = store.add(
            MemoryUnit(task_type="data_cleaning", content="读取中文CSV时用encoding='utf-8-sig'，否则会乱码。")
        )
        store.add(MemoryUnit(task_type="report", content="Weekly reports cover Monday to Sunday."))

    def cli(*argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--database-url", postgres_url])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, err = cli("stats", "--json")
    assert code == EXIT_OK, err
    assert json.loads(out)["default"]["total"] == 2
    code, out, err = cli("search", "读取中文CSV乱码", "--json", "-k", "2")
    assert code == EXIT_OK, err
    assert json.loads(out)[0]["memory"]["memory_id"] == csv.unit.memory_id
    dump = tmp_path / "dump.jsonl"
    code, _, err = cli("export", "--all", "-o", str(dump))
    assert code == EXIT_OK, err
    assert len(dump.read_text(encoding="utf-8").splitlines()) == 2
    code, out, err = cli("forget", csv.unit.memory_id)
    assert (code, out.strip()) == (EXIT_OK, "forgot 1 memories"), err
    code, _, _ = cli("show", csv.unit.memory_id)
    assert code == EXIT_NOT_FOUND


def test_cli_reads_the_database_url_from_the_environment(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with MemoryStore(database_url=postgres_url, embeddings=HashEmbeddings()) as store:
        store.add(MemoryUnit(content="A lesson kept in Postgres."))
    monkeypatch.setenv("HINDSIGHT_DATABASE_URL", postgres_url)
    assert main(["stats", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["default"]["total"] == 1


def test_hindsight_opens_a_database_url(postgres_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with Hindsight(database_url=postgres_url, embeddings=HashEmbeddings()) as hs:
        assert isinstance(hs.store.backend, PostgresBackend)
    monkeypatch.setenv("HINDSIGHT_DATABASE_URL", postgres_url)
    monkeypatch.chdir(tmp_path)
    with Hindsight(embeddings=HashEmbeddings()) as hs:
        assert isinstance(hs.store.backend, PostgresBackend)
    with Hindsight(tmp_path / "here", embeddings=HashEmbeddings()) as hs:  # a directory given wins over the env
        assert not isinstance(hs.store.backend, PostgresBackend)
        assert hs.store.persist_directory == tmp_path / "here"
    with pytest.raises(ConfigurationError, match="at most one"):
        Hindsight(database_url=postgres_url, server="http://localhost:8000")


@asynccontextmanager
async def _mcp_session(url: str, config: Path, principal: str) -> AsyncIterator[Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    args = ["-m", "langchain_hindsight.cli.main", "mcp", "--database-url", url, "--config", str(config)]
    params = StdioServerParameters(command=sys.executable, args=[*args, "--principal", principal], env=child_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _data(result: Any) -> Any:
    assert not result.isError, result.content
    return json.loads(result.content[0].text)


async def test_mcp_serves_two_principals_from_two_processes_at_once(postgres_url: str, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    config = tmp_path / "grants.toml"
    config.write_text(GRANTS_TOML, encoding="utf-8")
    lesson = "读取ERP导出的CSV时要用encoding='gbk'和sep=';'，默认的utf-8会报UnicodeDecodeError。"
    async with (
        _mcp_session(postgres_url, config, "cleaner") as cleaner,
        _mcp_session(postgres_url, config, "analyst") as analyst,
    ):
        shared = _data(await cleaner.call_tool("remember", {"content": lesson, "namespace": "shared"}))
        own = _data(await cleaner.call_tool("remember", {"content": "清洗时把全角数字转成半角。"}))
        recalled = _data(await analyst.call_tool("recall", {"task": "分析ERP导出的CSV的销售额"}))
        ids = [r["memory_id"] for r in recalled["results"]]
        assert shared["memory_id"] in ids  # written by the other process a moment ago
        assert own["memory_id"] not in ids  # the cleaner's own namespace stays private
        refused = await analyst.call_tool("remember", {"content": "y", "namespace": "shared"})
        assert refused.isError
        mine = _data(await analyst.call_tool("remember", {"content": "分析销售额时先按月份汇总再比较。"}))
        assert _data(await cleaner.call_tool("forget", {"memory_id": own["memory_id"]}))["deleted"] == 1
        again = _data(await analyst.call_tool("recall", {"task": "按月份汇总销售额"}))
        assert mine["memory_id"] in [r["memory_id"] for r in again["results"]]


FILTERS = [
    ({"status": "active"}, None),
    ({"n": {"$gte": 30}}, None),
    ({"$and": [{"status": "active"}, {"task_type": "t1"}]}, None),
    ({"$or": [{"n": {"$lt": 3}}, {"n": {"$in": [10, 11]}}]}, None),
    ({"status": {"$ne": "active"}}, None),
    ({"merged_from": {"$ne": "[]"}}, None),
    ({"n": {"$nin": [1, 2, 3]}}, {"$contains": "红色"}),
    ({"n": {"$gt": 5.5}, "status": "superseded"}, None),
    ({"missing": {"$ne": 1}}, None),
    (None, {"$or": [{"$contains": "doc 1 "}, {"$contains": "doc 2 "}]}),
    (None, {"$not_contains": "blue"}),
]


def test_filters_and_nearest_neighbours_match_the_in_memory_backend(postgres_url: str) -> None:
    pg = PostgresBackend(postgres_url, lexical=lexical_scheme())
    try:
        cols = [b.create_collection("col-f", _META) for b in (pg, InMemoryBackend())]
        for col in cols:
            _fill(col)
        for where, where_document in FILTERS:
            got = [sorted(c.get(where=where, where_document=where_document, include=[])["ids"]) for c in cols]
            assert got[0] == got[1], (where, where_document)
        queries = _vectors(5, seed=7)
        for where in (None, {"status": "active"}, {"$and": [{"status": "active"}, {"task_type": "t1"}]}):
            res = [c.query(query_embeddings=queries, n_results=6, where=where) for c in cols]
            assert res[0]["ids"] == res[1]["ids"]
            assert np.allclose(np.asarray(res[0]["distances"]), np.asarray(res[1]["distances"]), atol=1e-4)
        paged = [i for rows in cols[0].pages(include=["embeddings"], size=7) for i in rows["ids"]]
        assert paged == cols[1].get(include=[])["ids"]  # insertion order, like the in-memory backend
    finally:
        pg.close()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_hindsight_store_conformance_on_postgres(name: str, postgres_url: str) -> None:
    """LangGraph's ``BaseStore`` over a Postgres-backed store answers as LangGraph's ``InMemoryStore`` does."""
    expected = asyncio.run(run_scenario(SCENARIOS[name], reference(), use_async=False))
    with MemoryStore(database_url=postgres_url, embeddings=NgramEmbeddings()) as memory:
        got = asyncio.run(run_scenario(SCENARIOS[name], HindsightStore(memory), use_async=False))
    assert got == expected
