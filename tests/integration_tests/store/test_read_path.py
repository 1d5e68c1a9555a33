"""One read path per store, chosen when it opens, and it never serves a unit a write has changed.

Every backend but a database reads through the store's replica (lexical index + recall mirror, in process):
embedded Chroma, a shared Chroma client (as a server: other writers are followed through the change feed)
and the in-memory backend. The route a recall takes is the one chosen at open: the replica answers, the
database reader is never asked, and a repeated recall reads nothing from the backend's memories collection.
(Postgres, the database read path: ``test_postgres_read_path.py``.)
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings
from langchain_core.embeddings import Embeddings

from langchain_hindsight import HindsightRetriever, MemoryStore, MemoryUnit
from langchain_hindsight.store._core import DatabaseReader
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.store.replica import Replica
from tests.fakes import HashEmbeddings
from tests.integration_tests.store._reads import NOW, counting, lessons

KINDS = ["embedded", "shared-client", "in-memory"]


def _open(kind: str, tmp_path: Path, embeddings: Embeddings | None = None, client: Any = None) -> MemoryStore:
    embeddings = embeddings or HashEmbeddings(64)
    if kind == "embedded":
        return MemoryStore(tmp_path / "db", embeddings=embeddings)
    if kind == "in-memory":
        return MemoryStore(backend=InMemoryBackend(), embeddings=embeddings)
    client = client or chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    return MemoryStore(client=client, embeddings=embeddings, namespace=f"route-{uuid.uuid4().hex[:8]}")


@pytest.fixture(params=KINDS)
def store(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[MemoryStore]:
    with _open(request.param, tmp_path) as s:
        yield s
        if request.param == "shared-client":
            s.forget(namespace=s.namespace)


def _recall(store: MemoryStore, query: str) -> list[tuple[str, float, float]]:
    retriever = HindsightRetriever(store=store, k=5, low_similarity_threshold=0.0)
    return [(s.memory.memory_id, s.score, s.memory.score_confidence) for s in retriever.recall(query, now=NOW)]


def test_recall_takes_the_route_chosen_at_open(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    assert store.read_path == "replica"
    assert isinstance(store.reader, Replica)
    assert store.reader is store.replica

    def refused(*args: object, **kwargs: object) -> Any:
        raise AssertionError("a store that opened on the replica read path asked the database reader")

    for name in ("hybrid", "nearest", "similarities", "lexical"):
        monkeypatch.setattr(DatabaseReader, name, refused)
    asked: list[str] = []
    for name in ("hybrid", "nearest", "similarities", "lexical"):
        method = getattr(store.reader, name)
        monkeypatch.setattr(store.reader, name, lambda *a, _m=method, _n=name, **k: asked.append(_n) or _m(*a, **k))
    store.add_many(lessons(40), dedupe=False)
    first = _recall(store, "CSV 编码")
    col = counting(store)
    again = _recall(store, "CSV 编码")
    vector = store.embeddings.embed_query("CSV 编码 lesson 3")
    store.search_by_vector(vector, k=3)
    store.similarity_by_ids(vector, [i for i, _, _ in first[:2]])
    store.lexical_search("CSV", k=3)
    assert again == first
    assert col.calls == []  # every arm and every candidate from the replica, not the backend's collection
    assert set(asked) == {"hybrid", "nearest", "similarities", "lexical"}


def _served(store: MemoryStore, query: str) -> dict[str, MemoryUnit]:
    retriever = HindsightRetriever(store=store, k=20, low_similarity_threshold=0.0)
    return {s.memory.memory_id: s.memory for s in retriever.recall(query, now=NOW)}


def test_hybrid_search_matches_the_separate_arms(store: MemoryStore) -> None:
    store.add_many(lessons(60), dedupe=False)
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
    units = store.add_many(lessons(12), dedupe=False)
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


def test_recalled_units_are_the_stored_ones(store: MemoryStore) -> None:
    store.add_many(lessons(20), dedupe=False)
    _recall(store, "CSV 编码")
    retriever = HindsightRetriever(store=store, k=10, low_similarity_threshold=0.0)
    for scored in retriever.recall("CSV 编码", now=NOW):
        assert scored.memory == store.get(scored.memory.memory_id)


def test_two_stores_on_one_shared_client_never_serve_stale_data(tmp_path: Path) -> None:
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    namespace = f"shared-{uuid.uuid4().hex[:8]}"
    with (
        MemoryStore(client=client, embeddings=HashEmbeddings(64), namespace=namespace) as a,
        MemoryStore(client=client, embeddings=HashEmbeddings(64), namespace=namespace) as b,
    ):
        units = [r.unit for r in a.add_many(lessons(10), dedupe=False)]
        assert set(_served(b, "CSV 编码 lesson")) == {u.memory_id for u in units}  # b builds its replica now
        best = units[0].memory_id
        before = _served(b, "CSV 编码 lesson")[best].score_confidence
        a.record_feedback([best], success=False)
        assert _served(b, "CSV 编码 lesson")[best].score_confidence < before  # a's write reached b's replica
        a.update(best, content="读取CSV文件时 lesson: Slack chat.postMessage needs the channel ID.")
        assert "Slack" in _served(b, "CSV 编码 lesson Slack")[best].content
        vector = b.embeddings.embed_query("Slack chat.postMessage needs the channel ID.")
        ((_, sim),) = b.similarity_by_ids(vector, [best])  # the new content's vector, read again by b
        assert sim == pytest.approx(float(np.dot(a.embeddings.embed_documents([a.get(best).content])[0], vector)))
        a.archive([units[1].memory_id])
        a.forget(units[2].memory_id)
        served = set(_served(b, "CSV 编码 lesson"))
        assert units[1].memory_id not in served
        assert units[2].memory_id not in served
        a.forget(namespace=namespace)


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


@pytest.mark.parametrize("kind", KINDS)
def test_inactive_nearest_units_are_skipped_without_losing_active_ones(tmp_path: Path, kind: str) -> None:
    with _open(kind, tmp_path, NearFar()) as store:
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
