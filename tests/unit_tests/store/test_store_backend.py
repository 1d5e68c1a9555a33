"""The storage backend layer: Chroma and the in-memory backend answer the store's operations alike.

Each contract test runs on both backends and, where it matters, compares the
in-memory answer with Chroma's on the same data.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.errors import BackendError, StoreError, StoreLockedError
from langchain_hindsight.store.backend import Backend, ChromaBackend, InMemoryBackend, Records
from tests.fakes import HashEmbeddings

_META = {"hindsight_namespace": "t", "hindsight_role": "memories"}


def _vectors(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture(params=["chroma", "memory", pytest.param("postgres", marks=pytest.mark.integration)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "postgres":  # the session's embedded server (tests/postgres.py), a fresh database
        from langchain_hindsight.store.backend.postgres import PostgresBackend
        from langchain_hindsight.store.tokens import lexical_scheme

        made: Backend = PostgresBackend(request.getfixturevalue("postgres_url"), lexical=lexical_scheme())
    else:
        made = ChromaBackend.embedded(tmp_path / "db") if request.param == "chroma" else InMemoryBackend()
    yield made
    made.close()


def _fill(col: Records, n: int = 40) -> np.ndarray:
    vectors = _vectors(n)
    col.upsert(
        ids=[f"id{i:02d}" for i in range(n)],
        embeddings=vectors,
        documents=[f"doc {i} {'红色' if i % 3 == 0 else 'blue'}" for i in range(n)],
        metadatas=[
            {"status": "active" if i % 4 else "superseded", "n": i, "task_type": f"t{i % 2}", "merged_from": "[]"}
            for i in range(n)
        ],
    )
    return vectors


def test_collections_are_created_listed_renamed_and_dropped(backend: Backend) -> None:
    assert backend.get_collection("col-a") is None
    col = backend.create_collection("col-a", _META)
    assert col.metadata == _META
    with pytest.raises(StoreError):
        backend.create_collection("col-a", _META)
    assert backend.get_or_create("col-a", {"other": 1}).metadata == _META  # existing: metadata unchanged
    col.modify(name="col-b", metadata={**_META, "x": 1})
    assert backend.get_collection("col-a") is None
    renamed = backend.get_collection("col-b")
    assert renamed is not None
    assert renamed.metadata["x"] == 1
    assert sorted(c.name for c in backend.list_collections()) == ["col-b"]
    backend.delete_collection("col-b")
    assert backend.list_collections() == []


def test_records_get_update_delete_and_count(backend: Backend) -> None:
    col = backend.create_collection("col-c", _META)
    _fill(col)
    assert col.count() == 40
    rows = col.get(ids=["id05", "nope", "id01"], include=["documents", "metadatas"])
    assert sorted(rows["ids"]) == ["id01", "id05"]
    assert rows["embeddings"] is None
    col.update(ids=["id05", "missing"], metadatas=[{"status": "archived"}, {"status": "x"}])
    after = col.get(ids=["id05"], include=["metadatas"])["metadatas"][0]
    assert after["status"] == "archived"
    assert after["n"] == 5
    col.delete(ids=["id05", "id06", "never"])
    assert col.count() == 38
    assert col.exists(["id05", "id07"]) == ["id07"]


@pytest.mark.parametrize(
    ("where", "where_document"),
    [
        ({"status": "active"}, None),
        ({"n": {"$gte": 30}}, None),
        ({"$and": [{"status": "active"}, {"task_type": "t1"}]}, None),
        ({"$or": [{"n": {"$lt": 3}}, {"n": {"$in": [10, 11]}}]}, None),
        ({"status": {"$ne": "active"}}, None),
        ({"merged_from": {"$ne": "[]"}}, None),
        ({"n": {"$nin": [1, 2, 3]}}, {"$contains": "红色"}),
        (None, {"$or": [{"$contains": "doc 1 "}, {"$contains": "doc 2 "}]}),
    ],
)
def test_filters_select_the_same_records_on_both_backends(
    tmp_path: Path, where: dict[str, Any] | None, where_document: dict[str, Any] | None
) -> None:
    chroma = ChromaBackend.embedded(tmp_path / "db")
    try:
        answers = []
        for backend in (chroma, InMemoryBackend()):
            col = backend.create_collection("col-f", _META)
            _fill(col)
            rows = col.get(where=where, where_document=where_document, include=[])
            answers.append(sorted(rows["ids"]))
        assert answers[0] == answers[1]
    finally:
        chroma.close()


def test_nearest_neighbours_match_chroma(tmp_path: Path) -> None:
    chroma = ChromaBackend.embedded(tmp_path / "db")
    try:
        queries = _vectors(5, seed=7)
        answers = []
        for backend in (chroma, InMemoryBackend()):
            col = backend.create_collection("col-q", _META)
            _fill(col)
            res = col.query(query_embeddings=queries, n_results=6, where={"status": "active"})
            answers.append((res["ids"], np.asarray(res["distances"])))
        assert answers[0][0] == answers[1][0]
        assert np.allclose(answers[0][1], answers[1][1], atol=1e-4)
    finally:
        chroma.close()


def test_pages_read_everything_once(backend: Backend) -> None:
    col = backend.create_collection("col-p", _META)
    vectors = _fill(col)
    seen = [i for rows in col.pages(include=["embeddings"], size=7) for i in rows["ids"]]
    assert sorted(seen) == sorted(f"id{i:02d}" for i in range(40))
    got = col.get(ids=["id03"], include=["embeddings"])["embeddings"]
    assert np.allclose(np.asarray(got)[0], vectors[3], atol=1e-6)


def test_the_in_memory_backend_refuses_vectors_of_another_dimension() -> None:
    col = InMemoryBackend().create_collection("col-d", _META)
    col.upsert(ids=["a"], embeddings=[[1.0, 0.0]])
    with pytest.raises(BackendError, match="2-dimensional"):
        col.upsert(ids=["b"], embeddings=[[1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="unsupported where operator"):
        col.get(where={"n": {"$regex": "x"}})


def test_chroma_failures_are_backend_errors_and_bad_arguments_are_not(tmp_path: Path) -> None:
    backend = ChromaBackend.embedded(tmp_path / "db")
    col = backend.create_collection("col-e", _META)
    with pytest.raises(StoreLockedError):
        ChromaBackend.embedded(tmp_path / "db")
    backend.delete_collection("col-e")
    with pytest.raises(BackendError) as info:
        col.count()  # the collection is gone under the handle
    assert info.value.__cause__ is not None
    backend.close()
    reopened = ChromaBackend.embedded(tmp_path / "db")  # the lock was released
    reopened.close()


def test_a_store_on_the_in_memory_backend_lives_as_long_as_the_backend() -> None:
    backend = InMemoryBackend()
    with MemoryStore(backend=backend, embeddings=HashEmbeddings()) as store:
        stored = store.add(MemoryUnit(task_type="data_cleaning", content="读取中文CSV时指定 encoding='utf-8-sig'。"))
        assert not hasattr(store, "client")  # no raw database client on the store, whatever the backend
        assert store.persist_directory is None
    with MemoryStore(backend=backend, embeddings=HashEmbeddings()) as again:
        assert again.get(stored.memory_id).content.startswith("读取中文CSV")
        assert again.lexical_search("utf-8-sig", k=1)[0][0] == stored.memory_id
        assert again.forget(stored.memory_id) == 1  # scrub needs nothing more in memory
        again.scrub()
        assert again.count() == 0


def test_backend_and_client_are_exclusive(tmp_path: Path) -> None:
    from langchain_hindsight import ConfigurationError

    with pytest.raises(ConfigurationError, match="backend"):
        MemoryStore(backend=InMemoryBackend(), client=object(), embeddings=HashEmbeddings())
    with pytest.raises(ConfigurationError, match="backend"):
        MemoryStore(backend="memory", embeddings=HashEmbeddings())  # type: ignore[arg-type]


def test_export_then_import_round_trips_between_backends(tmp_path: Path) -> None:
    import io

    from langchain_hindsight.store.transfer import export_units, read_backup

    source = MemoryStore(backend=InMemoryBackend(), embeddings=HashEmbeddings())
    kept = source.add(MemoryUnit(task_type="weekly_report", content="周报只统计本周一到周日。", tags=["周报"])).unit
    gone = source.add(MemoryUnit(task_type="api_call", content="Retry the flaky geocoding API 3 times.")).unit
    source.archive([gone.memory_id])
    out = io.StringIO()
    assert export_units(source, out, namespaces=source.namespaces()) == 2
    with MemoryStore(tmp_path / "db", embeddings=HashEmbeddings()) as target:
        report = target.import_units(read_backup(out.getvalue().splitlines())[0])
        assert report.imported == 2
        assert target.get(kept.memory_id) == source.get(kept.memory_id)
        assert target.get(gone.memory_id).status == "archived"
        assert target.import_units(read_backup(out.getvalue().splitlines())[0]).unchanged == 2


@pytest.mark.parametrize("n", [0, -1, True, 1.5, "3", None])
def test_a_query_refuses_an_n_results_that_is_not_a_positive_int(n: Any) -> None:
    col = InMemoryBackend().create_collection("col-n", _META)
    _fill(col)
    with pytest.raises(ValueError, match="n_results must be a positive int"):
        col.query(query_embeddings=_vectors(1), n_results=n)


class _BehindIndex:
    """A chromadb collection whose vector index is behind its records for the first ``behind`` queries."""

    name = "team-memories"

    def __init__(self, behind: int) -> None:
        self.behind = behind
        self.queries = 0

    def query(self, **kwargs: Any) -> dict[str, Any]:
        from chromadb.errors import InternalError

        self.queries += 1
        if self.queries <= self.behind:
            raise InternalError("Error executing plan: Internal error: Error finding id")
        return {"ids": [["a"]], "distances": [[0.0]]}


def test_a_query_chroma_answers_with_error_finding_id_is_asked_again(caplog: pytest.LogCaptureFixture) -> None:
    """Chroma's index behind its records (another writer on a shared server) does not fail the query."""
    from langchain_hindsight.store.backend.chroma import QUERY_RETRIES, ChromaRecords

    col = _BehindIndex(behind=2)
    with caplog.at_level("INFO", logger="langchain_hindsight.store.backend.chroma"):
        rows = ChromaRecords(col, on_write=lambda name: None).query(query_embeddings=[[1.0, 0.0]], n_results=1)
    assert rows["ids"] == [["a"]]
    assert col.queries == 3
    assert caplog.text.count("the index is behind its records") == 2
    always = _BehindIndex(behind=10**6)
    with pytest.raises(BackendError, match="Error finding id"):
        ChromaRecords(always, on_write=lambda name: None).query(query_embeddings=[[1.0, 0.0]], n_results=1)
    assert always.queries == QUERY_RETRIES + 1


def test_other_chroma_query_errors_are_not_asked_again() -> None:
    from chromadb.errors import InternalError

    from langchain_hindsight.store.backend.chroma import ChromaRecords

    class Broken(_BehindIndex):
        def query(self, **kwargs: Any) -> dict[str, Any]:
            self.queries += 1
            raise InternalError("Error creating hnsw segment reader: Nothing found on disk")

    col = Broken(behind=0)
    with pytest.raises(BackendError, match="segment reader"):
        ChromaRecords(col, on_write=lambda name: None).query(query_embeddings=[[1.0, 0.0]], n_results=1)
    assert col.queries == 1
