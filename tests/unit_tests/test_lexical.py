"""The lexical arm: tokenizer, BM25, consistency with the store, visibility across shared-client stores."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import chromadb
import pytest
from chromadb.config import Settings

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight._lexical import ChangeFeed, LexicalIndex, tokenize
from langchain_hindsight.embeddings import LocalEmbeddings
from langchain_hindsight.writes import LLMWriteJudge
from tests.fakes import judge_model


def test_tokenize_chinese_english_and_identifiers() -> None:
    tokens = tokenize("用pandas.read_csv读取周报 Reports")
    assert {"pandas.read_csv", "panda", "read", "csv"} <= set(tokens)
    assert {"读", "取", "读取", "周报", "取周"} <= set(tokens)
    assert "report" in tokens  # light stemming
    assert "的" not in tokenize("周报的范围")
    assert tokenize("The weekly report is for the manager") == ["weekly", "report", "manager"]


def test_bm25_prefers_the_matching_report_type() -> None:
    index = LexicalIndex()
    weekly = MemoryUnit(memory_id="w", task_type="weekly_report", content="周报的数据范围取上周一到周日的自然周。")
    monthly = MemoryUnit(memory_id="m", task_type="monthly_report", content="月报的数据范围是上个自然月。")
    index.upsert([weekly, monthly])
    assert index.search("生成本周周报", 2)[0][0] == "w"
    assert index.search("生成上个月的月报", 2)[0][0] == "m"
    assert index.search("completely unrelated words", 2) == []


def test_normalized_scores_are_low_for_unrelated_queries() -> None:
    index = LexicalIndex()
    index.upsert(
        [
            MemoryUnit(memory_id="a", content="Send an Idempotency-Key header on Stripe POST requests."),
            MemoryUnit(memory_id="b", content="Use multipart upload for large files on S3."),
        ]
    )
    good = index.search("retry Stripe POST requests safely with an idempotency key", 1, normalize=True)
    weak = index.search("plan a hiking trip with a key lime pie", 1, normalize=True)
    assert good[0][0] == "a"
    assert 0.0 < weak[0][1] < good[0][1] <= 1.0


def test_index_drops_inactive_and_deleted_units() -> None:
    index = LexicalIndex()
    u = MemoryUnit(memory_id="x", content="rsync trailing slash copies contents")
    index.upsert([u])
    assert "x" in index
    index.upsert([u.evolve(status="superseded")])
    assert "x" not in index
    assert index.search("rsync", 3) == []
    index.upsert([u])
    index.delete(["x", "never-there"])
    assert len(index) == 0


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
    for feed in a._feeds.values():
        feed.log_ids = 2  # a tiny log: b cannot catch up incrementally
    units = [unit(f"Lesson number {i} about kafka partition rebalancing.") for i in range(5)]
    a.add_many(units, dedupe=False)
    assert sorted(ids(b, "kafka rebalancing")) == sorted(u.memory_id for u in units)


def test_change_feed_poll_reports_changed_ids() -> None:
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    col = client.get_or_create_collection(f"feed-{uuid.uuid4().hex[:8]}", embedding_function=None)
    writer, reader = ChangeFeed(col, log_ids=3), ChangeFeed(col)
    seen = reader.snapshot()
    writer.publish(["a", "b"])
    seen, changed = reader.poll(seen)
    assert changed == {"a", "b"}
    seen, changed = reader.poll(seen)
    assert changed == set()
    writer.publish(["c", "d"])
    writer.publish(["e", "f"])  # the log keeps at most 3 ids: revision 2 is dropped
    _, changed = reader.poll(seen)
    assert changed is None


def test_common_terms_only_rescore_candidates() -> None:
    units = [MemoryUnit(memory_id=f"u{i}", content=f"周报 常见 内容 第{i}条") for i in range(50)]
    units.append(MemoryUnit(memory_id="rare", content="周报 常见 内容 需要 Jira 工时"))
    exact, pruned = LexicalIndex(), LexicalIndex(full_scan_df=5)
    exact.upsert(units)
    pruned.upsert(units)
    query = "周报 Jira 工时"
    assert pruned.search(query, 3)[0] == exact.search(query, 3)[0]
    assert pruned.search(query, 3)[0][0] == "rare"
    assert len(pruned.search(query, 100)) == 1  # the common term added no new candidates
    assert len(exact.search(query, 100)) == 51
    assert len(pruned.search("周报", 100)) == 51  # with no rarer term, the common one is scanned
