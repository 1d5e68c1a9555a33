"""The lexical arm: tokenizer, BM25, consistency with the store, visibility across shared-client stores."""

from __future__ import annotations

import heapq
import math
import random
import uuid
from collections import Counter
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings

from langchain_hindsight import MemoryUnit
from langchain_hindsight.store.replica.feed import ChangeFeed
from langchain_hindsight.store.replica.files import read_header
from langchain_hindsight.store.replica.lexical import LexicalIndex
from langchain_hindsight.store.replica.records import Held, Mirror, record_bytes
from langchain_hindsight.store.tokens import PRIOR_DOCUMENTS, tokenize


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


def _reference_bm25(
    docs: dict[str, str], query: str, k: int, *, k1: float = 1.2, b: float = 0.5, normalize: bool = False
) -> list[tuple[str, float]]:
    """The pure-Python BM25 the lexical arm used before it was vectorised (walks every posting).

    A normalised search counts :data:`PRIOR_DOCUMENTS` more documents in its idf, as the arm does.
    """
    postings: dict[str, dict[str, int]] = {}
    lengths = {}
    for memory_id, text in docs.items():
        counts = Counter(tokenize(text))
        for term, tf in counts.items():
            postings.setdefault(term, {})[memory_id] = tf
        lengths[memory_id] = sum(counts.values())
    n = len(lengths)
    avg = sum(lengths.values()) / n or 1.0

    corpus = n + PRIOR_DOCUMENTS if normalize else n

    def idf(df: int) -> float:
        return math.log(1.0 + (corpus - df + 0.5) / (df + 0.5))

    mass = 0.0
    matched = []
    for term in set(tokenize(query)):
        posting = postings.get(term)
        mass += idf(len(posting) if posting else 0)
        if posting:
            matched.append((len(posting), term, posting))
    matched.sort(key=lambda m: (m[0], m[1]))
    scores: dict[str, float] = {}
    for df, _, posting in matched:
        for memory_id, tf in posting.items():
            norm = k1 * (1.0 - b + b * lengths[memory_id] / avg)
            scores[memory_id] = scores.get(memory_id, 0.0) + idf(df) * tf * (k1 + 1.0) / (tf + norm)
    best = heapq.nsmallest(k, scores.items(), key=lambda item: (-item[1], item[0]))
    return [(i, min(1.0, s / mass)) for i, s in best] if normalize and mass > 0 else best


_WORDS = [
    "数据",
    "失败",
    "编码",
    "读取",
    "文件",
    "接口",
    "超时",
    "重试",
    "周报",
    "月报",
    "乱码",
    "pandas.read_csv",
    "retry",
    "timeout",
    "reports",
    "encoding",
    "header",
]
_QUERIES = [
    "数据 失败",
    "pandas csv encoding",
    "周报超时重试",
    "words nobody wrote",
    "读取文件 timeout",
    "数据",
    "乱码",
]


def _common_vocabulary_units(n: int, seed: int = 3) -> list[MemoryUnit]:
    rng = random.Random(seed)
    return [
        MemoryUnit(memory_id=f"m{i:04d}", content=" ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 12))))
        for i in range(n)
    ]


@pytest.mark.parametrize(
    "n",
    [pytest.param(300, id="300"), pytest.param(1500, id="1500", marks=pytest.mark.integration)],  # the sweep
)
def test_vectorised_bm25_has_the_same_ranking_and_scores_as_the_reference(n: int) -> None:
    units = _common_vocabulary_units(n)
    index = LexicalIndex()
    index.upsert(units)
    index.delete([u.memory_id for u in units[::5]])  # tombstones
    index.upsert([u.evolve(content=u.content + " 新增 内容") for u in units[::10]])  # re-adds into the delta
    live = {u.memory_id: u.content for u in units}
    for u in units[::5]:
        del live[u.memory_id]
    for u in units[::10]:
        live[u.memory_id] = u.content + " 新增 内容"
    for compacted in (False, True):
        if compacted:
            index.compact()
        for query in _QUERIES:
            for normalize in (False, True):
                got = index.search(query, 20, normalize=normalize)
                want = _reference_bm25(live, query, 20, normalize=normalize)
                assert [i for i, _ in got] == [i for i, _ in want], query
                assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12, abs=0.0)
    assert len(index) == len(live)


def test_common_terms_are_scored_exactly_for_every_memory() -> None:
    units = [MemoryUnit(memory_id=f"u{i}", content=f"周报 常见 内容 第{i}条") for i in range(50)]
    units.append(MemoryUnit(memory_id="rare", content="周报 常见 内容 需要 Jira 工时"))
    index = LexicalIndex()
    index.upsert(units)
    assert index.search("周报 Jira 工时", 3)[0][0] == "rare"
    assert len(index.search("周报 Jira 工时", 100)) == 51  # a term in every memory still scores them all
    top = index.search("周报", 5)
    assert [i for i, _ in top] == sorted(i for i, _ in top)  # equal scores: ties broken by id


def test_compaction_removes_every_trace_of_deleted_units() -> None:
    index = LexicalIndex()
    index.upsert([MemoryUnit(memory_id="keep", content="rsync copies"), MemoryUnit(memory_id="gone", content="zqxv")])
    index.delete(["gone"])
    index.compact()
    assert index.memory_ids == {"keep"}
    assert index.search("zqxv", 5) == []
    assert "zqxv" not in index._vocab  # the term only the deleted unit had is gone too


def test_snapshot_round_trip_and_damaged_files(tmp_path: Path) -> None:
    """The index is saved in its namespace's snapshot on the mirror's rows (``Held``), whatever its own order."""
    units = _common_vocabulary_units(400)
    index = LexicalIndex()
    index.upsert(units)
    index.delete([units[0].memory_id])
    mirror = Mirror(1, "fake (1-d)")
    for u in reversed(units[1:]):  # the mirror's rows in another order than the index's
        mirror.put(u.memory_id, [1.0], record_bytes(u.content, {"status": "active"}))
    path = tmp_path / "snap.npz"
    Held(index, mirror).save(path)
    loaded = Held.load(path, "fake (1-d)")
    assert loaded is not None
    again = loaded.index
    header = read_header(path, "mirror")
    assert header is not None
    assert (header["kind"], header["collection"]) == ("mirror", "snap")
    for query in _QUERIES:
        assert again.search(query, 10, normalize=True) == index.search(query, 10, normalize=True)
    again.upsert([MemoryUnit(memory_id="new", content="周报 乱码 zqxv")])  # a loaded index keeps updating
    assert again.search("zqxv", 1)[0][0] == "new"
    path.write_bytes(b"not a snapshot")
    assert Held.load(path, "fake (1-d)") is None
    assert Held.load(tmp_path / "missing.npz", "fake (1-d)") is None


def test_the_mirrors_metadata_match_equals_decoding_every_record() -> None:
    """``Mirror.nearest`` matches a metadata pair in a row's JSON bytes: never inside the document or
    another value (their quotes are escaped), never a value that only starts the same; the same answer as decoding
    every record, on random rows with the hard cases mixed in."""
    rng = random.Random(7)
    task_types = ["data", "data_cleaning", "数据清洗", 'say "hi"', "back\\slash", ""]
    kinds = ["lesson", "fact"]
    tricky = [
        'the metadata said "task_type":"data" once',
        '{"kind":"fact","task_type":"数据清洗"}',
        "task_type data kind fact",
        "读取CSV时先指定编码",
    ]
    mirror = Mirror(3, "fake (3-d)")
    for i in range(400):
        vec = [rng.uniform(-1, 1) for _ in range(3)]
        norm = math.sqrt(sum(x * x for x in vec))
        meta = {"task_type": rng.choice(task_types), "kind": rng.choice(kinds), "status": "active", "n": i}
        if rng.random() < 0.2:
            meta["note"] = rng.choice(tricky)  # a value holding another pair's text
        mirror.put(f"m{i:03d}", [x / norm for x in vec], record_bytes(rng.choice(tricky), meta))
    mirror.discard([f"m{i:03d}" for i in range(0, 400, 9)])
    query = [0.6, -0.8, 0.0]
    for task_type in [*task_types, "dat", "cleaning"]:
        for kind in kinds:
            expected = sorted(
                (
                    (memory_id, sum(a * b for a, b in zip(mirror.vector(memory_id) or [], query, strict=True)))
                    for memory_id, _doc, meta in mirror.records()
                    if meta["task_type"] == task_type and meta["kind"] == kind
                ),
                key=lambda item: (-item[1], item[0]),
            )
            found = mirror.nearest(query, 400, {"task_type": task_type, "kind": kind})  # every match, ranked
            assert found[:5] == mirror.nearest(query, 5, {"task_type": task_type, "kind": kind})
            assert [m for m, _ in found] == [m for m, _ in expected], (task_type, kind)
            assert [s for _, s in found] == pytest.approx([s for _, s in expected], abs=1e-6)
    assert mirror.nearest(query, 5, {"task_type": "dat", "kind": "fact"}) == []
