"""The unit tier's fake embedders behave as their docstrings say, and a store on them recalls by overlap."""

from __future__ import annotations

import math

import pytest

from langchain_hindsight import MemoryStore, MemoryUnit
from tests.fakes import HashEmbeddings, NgramEmbeddings


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("embedder", [NgramEmbeddings(), HashEmbeddings(), NgramEmbeddings(64), HashEmbeddings(64)])
@pytest.mark.parametrize("text", ["read the CSV with encoding='gbk'", "生成周报时取自然周", "", "!!!", "a"])
def test_vectors_are_unit_length_of_the_declared_dimension(
    embedder: NgramEmbeddings | HashEmbeddings, text: str
) -> None:
    vector = embedder.embed_query(text)
    assert len(vector) == embedder.dimensions
    assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-9)
    assert embedder.embed_documents([text, "other"])[0] == vector  # documents and queries agree


@pytest.mark.parametrize(
    ("query", "near", "far"),
    [
        (
            "read the sales CSV with encoding gbk",
            "Read the ERP sales CSV with encoding='gbk' and delimiter=';'",
            "Retry the flaky geocoding API three times with exponential backoff",
        ),
        ("生成本周的销售周报", "生成周报时，数据范围取上周一到上周日的自然周", "调用天气接口失败时重试三次"),
        ("encodings of csv files", "csv encoding errors", "weekly team meeting notes"),  # shared stems via 3-grams
    ],
)
def test_ngram_similarity_follows_shared_words_and_characters(query: str, near: str, far: str) -> None:
    emb = NgramEmbeddings()
    q, n, f = emb.embed_query(query), emb.embed_query(near), emb.embed_query(far)
    assert _cos(q, n) > 0.3
    assert _cos(q, n) > _cos(q, f) + 0.2
    assert abs(_cos(q, f)) < 0.2


def test_hash_vectors_are_unrelated_and_deterministic() -> None:
    emb = HashEmbeddings()
    a, b = emb.embed_query("read the CSV"), emb.embed_query("read the CSV file")
    assert a == HashEmbeddings().embed_query("read the CSV")
    assert abs(_cos(a, b)) < 0.3  # one word more: an unrelated vector


def test_a_store_on_fake_embeddings_recalls_the_lesson_that_shares_the_words(fake_store: MemoryStore) -> None:
    lessons = [
        MemoryUnit(task_type="data_cleaning", content="Read the ERP sales CSV with encoding='gbk' and delimiter=';'"),
        MemoryUnit(task_type="api_call", content="Retry the flaky geocoding API three times with exponential backoff"),
        MemoryUnit(task_type="weekly_report", content="生成周报时，数据范围取上周一到上周日的自然周"),
    ]
    fake_store.add_many(lessons, dedupe=False)
    assert fake_store.search("which encoding for the sales CSV", k=1)[0][0].content == lessons[0].content
    assert fake_store.search("生成本周的销售周报", k=1)[0][0].content == lessons[2].content
