"""Recall reads from Chroma only what it has not seen, and never serves a unit a write has changed.

Both ways an embedded store serves recall are covered: its recall mirror (every active unit in memory,
see ``store/_mirror.py``) and, for a namespace above the mirror's limit, the unit cache in front of Chroma.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings
from langchain_core.embeddings import Embeddings

from langchain_hindsight import HindsightRetriever, MemoryStore, MemoryUnit
from tests.fakes import HashEmbeddings

NOW = datetime(2026, 11, 1, tzinfo=UTC)


class CountingCollection:
    """Wraps a Chroma collection; counts ``get`` calls and records what each ``query`` included."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.gets = 0
        self.query_includes: list[list[str]] = []

    def get(self, *args: Any, **kwargs: Any) -> Any:
        self.gets += 1
        return self.inner.get(*args, **kwargs)

    def query(self, *args: Any, **kwargs: Any) -> Any:
        self.query_includes.append(list(kwargs.get("include", [])))
        return self.inner.query(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(params=["mirror", "unit-cache"])
def store(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[MemoryStore]:
    with MemoryStore(tmp_path / "db", embeddings=HashEmbeddings(64)) as s:
        if request.param == "unit-cache":
            s.mirror_max_rows = 0  # as for a namespace above the mirror's limit
        yield s


@pytest.fixture
def cache_store(tmp_path: Path) -> Iterator[MemoryStore]:
    """A store whose recall goes through the unit cache (the mirror off, as above its limit)."""
    with MemoryStore(tmp_path / "db", embeddings=HashEmbeddings(64)) as s:
        s.mirror_max_rows = 0
        yield s


def _units(n: int) -> list[MemoryUnit]:
    return [
        MemoryUnit(
            task_type="data_cleaning",
            content=f"读取CSV文件时指定编码 lesson {i} about encoding",
            created_at=NOW,
            last_accessed_at=NOW,
        )
        for i in range(n)
    ]


def _counting(store: MemoryStore) -> CountingCollection:
    key = (store.namespace, "memories")
    wrapped = CountingCollection(store._collections[key])
    store._collections[key] = wrapped
    return wrapped


def _recall(store: MemoryStore, query: str) -> list[tuple[str, float, float]]:
    retriever = HindsightRetriever(store=store, k=5, low_similarity_threshold=0.0)
    return [(s.memory.memory_id, s.score, s.memory.score_confidence) for s in retriever.recall(query, now=NOW)]


def test_a_repeated_recall_reads_nothing_more_and_scores_the_same(cache_store: MemoryStore) -> None:
    store = cache_store
    store.add_many(_units(40), dedupe=False)
    first = _recall(store, "CSV 编码")
    col = _counting(store)
    again = _recall(store, "CSV 编码")
    assert again == first
    assert col.gets == 0  # every candidate's unit and vector came from the cache
    assert col.query_includes == [["distances"]]  # the one Chroma call: nearest ids and distances


def _served(store: MemoryStore, query: str) -> dict[str, MemoryUnit]:
    retriever = HindsightRetriever(store=store, k=20, low_similarity_threshold=0.0)
    return {s.memory.memory_id: s.memory for s in retriever.recall(query, now=NOW)}


def test_a_cold_recall_is_one_query_and_one_get(cache_store: MemoryStore) -> None:
    store = cache_store
    store.add_many(_units(60), dedupe=False)
    warm = _recall(store, "CSV 编码 lesson 7")
    store._replica.units.clear()
    col = _counting(store)
    assert _recall(store, "CSV 编码 lesson 7") == warm
    assert col.gets == 1  # dense hits and lexical-only matches read together
    assert col.query_includes == [["distances"]]


def test_hybrid_search_matches_the_separate_arms(store: MemoryStore) -> None:
    store.add_many(_units(60), dedupe=False)
    vector = store.embeddings.embed_query("CSV 编码 lesson 3")
    dense, lexical = store.hybrid_search("CSV 编码 lesson 3", vector, k=9, normalize=True)
    want = {u.memory_id: (u, sim) for u, sim, _ in store.search_by_vector(vector, k=9)}
    want_lexical = dict(store.lexical_search("CSV 编码 lesson 3", k=9, normalize=True))
    want.update(
        (u.memory_id, (u, sim))
        for u, sim in store.similarity_by_ids(vector, [i for i in want_lexical if i not in want])
    )
    assert lexical == want_lexical
    assert dense.keys() == want.keys()
    for memory_id, (unit, sim) in dense.items():
        assert unit == want[memory_id][0]
        assert sim == pytest.approx(want[memory_id][1], abs=1e-5)


def test_writes_are_never_hidden_by_the_cache(store: MemoryStore) -> None:
    units = store.add_many(_units(12), dedupe=False)
    first = _served(store, "CSV 编码 lesson")
    best = next(iter(first))
    store.record_feedback([best], success=False)
    assert _served(store, "CSV 编码 lesson")[best].score_confidence < first[best].score_confidence
    store.update(best, content="读取CSV文件时 lesson: Slack chat.postMessage needs the channel ID.")
    assert "Slack" in _served(store, "CSV 编码 lesson Slack")[best].content
    store.archive([units[1].memory_id])
    assert units[1].memory_id not in _served(store, "CSV 编码 lesson")
    store.forget(units[2].memory_id)
    assert units[2].memory_id not in _served(store, "CSV 编码 lesson")
    assert set(_served(store, "CSV 编码 lesson")) <= {u.memory_id for u in store.list_units(status="active")}


def test_cached_units_are_the_stored_ones(store: MemoryStore) -> None:
    store.add_many(_units(20), dedupe=False)
    _recall(store, "CSV 编码")
    retriever = HindsightRetriever(store=store, k=10, low_similarity_threshold=0.0)
    for scored in retriever.recall("CSV 编码", now=NOW):
        assert scored.memory == store.get(scored.memory.memory_id)


def test_a_shared_client_never_caches() -> None:
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    with MemoryStore(client=client, embeddings=HashEmbeddings(64), namespace="cache-shared") as a:
        a.add_many(_units(10), dedupe=False)
        _recall(a, "CSV 编码")
        col = _counting(a)
        _recall(a, "CSV 编码")
        assert all("metadatas" in include for include in col.query_includes)  # always read: others may write
        a.forget(namespace="cache-shared")


class NearFar(Embeddings):
    """Texts starting with "near" lie next to every query; others are spread out."""

    def __init__(self) -> None:
        self.anchor = np.eye(64)[0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
            noise = np.random.default_rng(seed).standard_normal(64)
            v = self.anchor + 0.05 * noise if t.startswith("near") else noise
            out.append((v / np.linalg.norm(v)).tolist())
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.anchor.tolist()


@pytest.mark.parametrize("mirror_max_rows", [30_000, 0])
def test_inactive_nearest_units_are_skipped_without_losing_active_ones(tmp_path: Path, mirror_max_rows: int) -> None:
    with MemoryStore(tmp_path / "db", embeddings=NearFar()) as store:
        store.mirror_max_rows = mirror_max_rows
        stored = [
            r.unit
            for r in store.add_many(
                [MemoryUnit(content=f"near lesson {i}", status="superseded") for i in range(20)]
                + [MemoryUnit(content=f"far lesson {i}") for i in range(10)],
                dedupe=False,
            )
        ]
        assert sum(u.status == "superseded" for u in stored) == 20
        vector = store.embeddings.embed_query("anything")
        dense, _ = store.hybrid_search("lesson", vector, k=5)
        active = [u for u in stored if u.status == "active"]
        sims = {u.memory_id: float(np.dot(store.embeddings.embed_documents([u.content])[0], vector)) for u in active}
        nearest = sorted(sims, key=lambda i: -sims[i])[:5]
        assert set(nearest) <= set(dense)
        assert all(unit.status == "active" for unit, _ in dense.values())
