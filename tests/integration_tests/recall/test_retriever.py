"""HindsightRetriever: hybrid recall, the seed's weighted score, exclusions, diagnostics, served ids.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/recall/test_retriever.py``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_hindsight import ConfigurationError, HindsightRetriever, MemoryStore, MemoryUnit, ScoringWeights
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.recall.retriever import ServedRecord
from langchain_hindsight.writes import LLMWriteJudge
from tests.fakes import judge_model

NOW = datetime(2026, 6, 1, tzinfo=UTC)


CORPUS = {
    "zh_csv": ("data_cleaning", "用pandas读取含中文的CSV时要指定encoding='utf-8-sig'，否则表头会乱码。"),
    "zh_zip": ("file_operation", "Windows打包的zip文件名是GBK编码，解压时要用gbk解码，否则中文文件名乱码。"),
    "zh_api": ("api_call", "调用天气接口返回429时说明超过限流，需要加指数退避重试。"),
    "zh_sql": ("database_query", "MySQL订单表按create_time范围查询时不要对列用DATE()函数包裹。"),
    "en_csv": ("data_cleaning", "The CRM export uses semicolons as separators; read it with sep=';' and decimal=','."),
    "en_s3": ("api_call", "Uploads to S3 larger than 100 MB need multipart upload via boto3's upload_file."),
    "en_gh": ("api_call", "The GitHub API allows 60 requests per hour without a token; always send the token."),
    "en_sql": ("database_query", "BigQuery bills by bytes scanned: always filter on the partition column."),
}


def at(days_ago: float) -> datetime:
    return NOW - timedelta(days=days_ago)


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory, embeddings: LocalEmbeddings) -> Iterator[MemoryStore]:
    """One read-only store with Chinese and English memories shared by this module's tests."""
    with MemoryStore(tmp_path_factory.mktemp("corpus"), embeddings=embeddings) as store:
        store.add_many(
            [
                MemoryUnit(memory_id=i, task_type=t, content=c, confidence=0.7, created_at=NOW, last_accessed_at=NOW)
                for i, (t, c) in CORPUS.items()
            ],
            dedupe=False,
        )
        yield store


def top_ids(retriever: HindsightRetriever, query: str, **kw: object) -> list[str]:
    return [s.memory.memory_id for s in retriever.recall(query, now=NOW, **kw)]  # type: ignore[arg-type]


# ---------------------------------------------------------------- acceptance
def test_weekly_task_ranks_the_weekly_memory_first(store: MemoryStore) -> None:
    """The article's pitfall (seed §2.4): a monthly-report memory must not win a weekly task."""
    monthly = store.add(
        MemoryUnit(
            task_type="monthly_report",
            confidence=0.8,
            created_at=NOW,
            content="生成报告时数据范围取上个自然月，环比和前一个自然月比较，按部门汇总。",
        )
    ).unit
    weekly = store.add(
        MemoryUnit(
            task_type="weekly_report",
            confidence=0.7,
            created_at=NOW,
            content="生成报告时数据范围取上周一到周日，按项目汇总本周完成和下周计划。",
        )
    ).unit
    retriever = HindsightRetriever(store=store, k=2)
    task = "生成本周的团队报告，汇总数据"
    ranked = retriever.recall(task, task_type="weekly_report", now=NOW)
    assert [s.memory.memory_id for s in ranked] == [weekly.memory_id, monthly.memory_id]
    assert ranked[0].breakdown["task_type"] == 0.2
    assert ranked[1].breakdown["task_type"] == 0.0
    # The free-form label is normalised with the store's vocabulary ("周报" -> weekly_report).
    assert top_ids(HindsightRetriever(store=store, k=1, task_type="周报"), task) == [weekly.memory_id]


def test_chinese_query_finds_the_chinese_memory(corpus_store: MemoryStore) -> None:
    r = HindsightRetriever(store=corpus_store, k=3)
    assert top_ids(r, "用户上传的压缩包解压后中文文件名全是乱码")[0] == "zh_zip"
    assert top_ids(r, "帮我清洗这个CSV，中文表头是乱码")[0] == "zh_csv"
    assert top_ids(r, "天气接口一直返回429")[0] == "zh_api"


def test_english_query_finds_the_english_memory(corpus_store: MemoryStore) -> None:
    r = HindsightRetriever(store=corpus_store, k=3, min_relevance=None)  # ranking only; the floor has its own tests
    assert top_ids(r, "Upload a 2 GB video to our S3 bucket")[0] == "en_s3"
    assert top_ids(r, "List all repositories of our GitHub organisation")[0] == "en_gh"
    assert top_ids(r, "Run a BigQuery query over the events table")[0] == "en_sql"


def test_superseded_and_archived_memories_never_appear(make_store) -> None:  # type: ignore[no-untyped-def]
    store: MemoryStore = make_store(
        conflict_threshold=0.5, merge_threshold=0.99, judge=LLMWriteJudge(judge_model("conflict"))
    )
    old = store.add(MemoryUnit(task_type="code_generation", content="The user prefers Java for backend services.")).unit
    new = store.add(
        MemoryUnit(task_type="code_generation", content="The user prefers Python for backend services.")
    ).unit
    assert new.supersedes == old.memory_id
    other = store.add(MemoryUnit(task_type="code_generation", content="Backend services are deployed with Helm.")).unit
    store.archive([other.memory_id])
    for fusion in ("convex_idf", "convex", "rrf", "dense", "lexical"):
        r = HindsightRetriever(store=store, k=5, fusion=fusion)  # type: ignore[arg-type]
        got = top_ids(r, "Which language does the user prefer for Java backend services?")
        assert got == [new.memory_id], fusion


def test_time_decay_and_confidence_change_the_order(store: MemoryStore) -> None:
    content = "Post the weekly report in the team channel by Friday 4pm."
    fresh = store.add(
        MemoryUnit(memory_id="fresh", content=content, confidence=0.6, created_at=at(1)), dedupe=False
    ).unit
    old = store.add(MemoryUnit(memory_id="old", content=content, confidence=0.6, created_at=at(300)), dedupe=False).unit
    r = HindsightRetriever(store=store, k=2)
    query = "When do I post the weekly report?"
    ranked = r.recall(query, now=NOW)
    assert [s.memory.memory_id for s in ranked] == ["fresh", "old"]
    assert ranked[0].similarity == pytest.approx(ranked[1].similarity)
    assert ranked[1].breakdown["time_factor"] == pytest.approx(max(0.5, 1 - 300 / 365))
    # Raise the old memory's confidence: 0.2 x 0.35 is not enough to beat a 0.82 time factor ...
    store.update(old.memory_id, confidence=0.95)
    assert top_ids(r, query)[0] == "fresh"
    # ... but at the same age, confidence decides.
    store.update(fresh.memory_id, created_at=at(300))
    assert top_ids(r, query) == ["old", "fresh"]


def test_k_is_exact_and_per_call(corpus_store: MemoryStore) -> None:
    r = HindsightRetriever(store=corpus_store, k=3, min_relevance=None)  # without the floor, k is exact
    assert len(r.invoke("csv")) == 3
    assert len(r.invoke("csv", k=1)) == 1
    assert len(r.recall("anything at all", k=len(CORPUS))) == len(CORPUS)
    with pytest.raises(ConfigurationError):
        r.recall("csv", k=0)


def test_documents_carry_id_and_breakdown(corpus_store: MemoryStore) -> None:
    docs = HindsightRetriever(store=corpus_store, k=2, min_relevance=None).invoke("S3 multipart upload")
    assert all(isinstance(d, Document) for d in docs)
    top = docs[0]
    assert top.page_content == CORPUS["en_s3"][1]
    assert top.id == top.metadata["memory_id"] == "en_s3"
    assert top.metadata["task_type"] == "api_call"
    assert top.metadata["confidence"] == 0.7
    assert top.metadata["source"] == "agent_inference"
    assert set(top.metadata["breakdown"]) >= {
        "similarity",
        "task_type",
        "confidence",
        "access",
        "source",
        "time_factor",
        "score",
        "dense",
        "lexical",
    }
    assert top.metadata["score"] >= docs[1].metadata["score"]


def test_min_score_and_min_relevance_filter(corpus_store: MemoryStore) -> None:
    everything = HindsightRetriever(store=corpus_store, k=8, min_relevance=None).recall("S3 multipart upload", now=NOW)
    cut = everything[2].score
    by_score = HindsightRetriever(store=corpus_store, k=8, min_score=cut, min_relevance=None)
    assert len(by_score.recall("S3 multipart upload", now=NOW)) == 3
    relevant = HindsightRetriever(store=corpus_store, k=8, min_relevance=0.3).recall("S3 multipart upload", now=NOW)
    assert [s.memory.memory_id for s in relevant] == ["en_s3"]


def test_namespaces_are_isolated(store: MemoryStore) -> None:
    store.add(MemoryUnit(content="Alice's reports go to the finance team.", namespace="alice"))
    assert HindsightRetriever(store=store, namespace="bob").recall("reports finance") == []
    assert len(HindsightRetriever(store=store, namespace="alice").recall("reports finance")) == 1
    assert len(HindsightRetriever(store=store).recall("reports finance", namespace="alice")) == 1


def test_empty_store_and_blank_query(store: MemoryStore) -> None:
    r = HindsightRetriever(store=store)
    assert r.recall("anything") == []
    store.add(MemoryUnit(content="Something worth remembering."))
    with pytest.raises(ConfigurationError, match="the query is empty"):  # not a silent "no match"
        r.recall("   ")


def test_weights_are_applied(corpus_store: MemoryStore) -> None:
    no_type = ScoringWeights(task_type=0.0)
    s = HindsightRetriever(store=corpus_store, k=1, weights=no_type).recall("csv", task_type="data_cleaning")[0]
    assert s.breakdown["task_type"] == 0.0


# ---------------------------------------------------------------- diagnostics and served ids
def test_low_similarity_warns_once(corpus_store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    # no floor: weak memories get served; "weak" as a number (the default floor only calls a ranking with no
    # evidence at all weak, and these two share a cosine above 0.2 with some memory: issue 33)
    r = HindsightRetriever(store=corpus_store, k=2, min_relevance=None, low_similarity_threshold=0.5)
    with caplog.at_level(logging.WARNING, logger="langchain_hindsight.recall.retriever"):
        r.recall("Explain the offside rule in football")
        r.recall("Suggest a name for my new puppy")
    warnings = [rec for rec in caplog.records if "may not fit" in rec.getMessage()]
    assert len(warnings) == 1
    caplog.clear()
    floored = HindsightRetriever(store=corpus_store, k=2, min_relevance=0.4)
    with caplog.at_level(logging.WARNING, logger="langchain_hindsight.recall.retriever"):
        assert floored.recall("Explain the offside rule in football") == []  # nothing injected: nothing weak
    assert not [rec for rec in caplog.records if "may not fit" in rec.getMessage()]
    with caplog.at_level(logging.WARNING, logger="langchain_hindsight.recall.retriever"):
        HindsightRetriever(store=corpus_store, k=1).recall(CORPUS["en_s3"][1])  # similarity ~1: no warning
    assert not [rec for rec in caplog.records if "may not fit" in rec.getMessage()]


def test_served_records_and_callback(corpus_store: MemoryStore) -> None:
    seen: list[ServedRecord] = []
    r = HindsightRetriever(store=corpus_store, k=2, on_served=seen.append, served_log_size=3)
    docs = r.invoke("S3 multipart upload")
    assert seen[-1].memory_ids == tuple(d.metadata["memory_id"] for d in docs)
    assert seen[-1].query == "S3 multipart upload"
    assert seen[-1].namespace == corpus_store.namespace
    threads = [threading.Thread(target=r.recall, args=(f"query {i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 7
    assert len(r.served()) == 3  # bounded
    assert {rec.query for rec in r.served()} <= {f"query {i}" for i in range(6)}


def test_reads_through_the_store_no_stale_cache(store: MemoryStore) -> None:
    r = HindsightRetriever(store=store, k=3)
    u = store.add(MemoryUnit(content="Quote identifiers in generated SQL; columns are named order and user.")).unit
    assert top_ids(r, "generated SQL identifiers") == [u.memory_id]
    store.update(u.memory_id, confidence=0.2)
    assert r.recall("generated SQL identifiers")[0].memory.confidence == 0.2
    store.forget(u.memory_id)
    assert r.recall("generated SQL identifiers") == []


# ---------------------------------------------------------------- async
class ThreadRecordingEmbeddings(Embeddings):
    """The real embedder, recording which thread embedded each query."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.query_threads: list[int] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.query_threads.append(threading.get_ident())
        return self.inner.embed_query(text)


async def test_async_recall_runs_off_the_event_loop(tmp_path: Path, embeddings: LocalEmbeddings) -> None:
    recording = ThreadRecordingEmbeddings(embeddings)
    with MemoryStore(tmp_path / "db", embeddings=recording) as store:
        await asyncio.to_thread(store.add, MemoryUnit(content="Elasticsearch log queries need a time range."))
        r = HindsightRetriever(store=store, k=1)
        loop_thread = threading.get_ident()
        docs = await r.ainvoke("search elasticsearch logs", k=1)
        memories = await r.arecall("search elasticsearch logs")
        assert docs[0].metadata["memory_id"] == memories[0].memory.memory_id
        assert recording.query_threads
        assert loop_thread not in recording.query_threads


def test_queries_with_lone_surrogates_do_not_crash(store: MemoryStore) -> None:
    store.add(MemoryUnit(task_type="data_cleaning", content="Read Chinese CSV files with encoding='utf-8-sig'."))
    retriever = HindsightRetriever(store=store, k=1)
    assert [d.page_content for d in retriever.invoke("Chinese CSV \ud800 encoding")] == [
        "Read Chinese CSV files with encoding='utf-8-sig'."
    ]
    assert store.search("CSV \udfff", k=1)[0][0].content.startswith("Read Chinese CSV")
