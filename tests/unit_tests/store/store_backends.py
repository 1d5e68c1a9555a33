"""Store fixtures on every storage backend (embedded Chroma, in memory, PostgreSQL), for the store's own tests.

Import the fixtures a test module needs (``from tests.unit_tests.store.store_backends import store_factory``
registers ``make_store``):
``make_store`` and ``hash_store`` are parametrised over the backends; ``make_chroma_store`` is for what
only Chroma has (a directory, its lock, bytes on disk, a fresh process). The Postgres cases start the
session's embedded server (tests/postgres.py), so they are integration tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight import MemoryStore
from langchain_hindsight.store.backend import InMemoryBackend
from tests.fakes import HashEmbeddings
from tests.postgres import PostgresServer

BACKENDS = ["chroma", "memory", pytest.param("postgres", marks=pytest.mark.integration)]


@pytest.fixture(name="make_chroma_store")
def chroma_store_factory(tmp_path: Path, embeddings: Embeddings) -> Iterator[Callable[..., MemoryStore]]:
    """Embedded Chroma stores in a temporary directory on the real embedder (closed afterwards)."""
    opened: list[MemoryStore] = []

    def factory(name: str = "db", **kwargs: Any) -> MemoryStore:
        kwargs.setdefault("embeddings", embeddings)
        opened.append(MemoryStore(tmp_path / name, **kwargs))
        return opened[-1]

    yield factory
    for store in opened:
        store.close()


def _memory_factory(embeddings: Embeddings, opened: list[MemoryStore]) -> Callable[..., MemoryStore]:
    backends: dict[str, InMemoryBackend] = {}

    def factory(name: str = "db", **kwargs: Any) -> MemoryStore:
        kwargs.setdefault("embeddings", embeddings)
        opened.append(MemoryStore(backend=backends.setdefault(name, InMemoryBackend()), **kwargs))
        return opened[-1]

    return factory


def _postgres_factory(
    server: PostgresServer, embeddings: Embeddings, opened: list[MemoryStore], databases: dict[str, str]
) -> Callable[..., MemoryStore]:
    def factory(name: str = "db", **kwargs: Any) -> MemoryStore:
        kwargs.setdefault("embeddings", embeddings)
        if name not in databases:
            databases[name] = server.create_database()
        opened.append(MemoryStore(database_url=databases[name], **kwargs))
        return opened[-1]

    return factory


def _close(opened: list[MemoryStore], server: PostgresServer | None, databases: dict[str, str]) -> None:
    for store in opened:
        store.close()
    for url in databases.values():
        assert server is not None
        server.drop_database(url)


@pytest.fixture(name="make_store", params=BACKENDS)
def store_factory(
    request: pytest.FixtureRequest, tmp_path: Path, embeddings: Embeddings
) -> Iterator[Callable[..., MemoryStore]]:
    """Stores on each backend (the real embedder); in memory and Postgres, the same name reopens the same data."""
    if request.param == "chroma":
        yield request.getfixturevalue("make_chroma_store")
        return
    opened: list[MemoryStore] = []
    databases: dict[str, str] = {}
    server: PostgresServer | None = None
    if request.param == "postgres":
        server = request.getfixturevalue("postgres_server")
        yield _postgres_factory(server, embeddings, opened, databases)
    else:
        yield _memory_factory(embeddings, opened)
    _close(opened, server, databases)


@pytest.fixture(name="hash_store", params=BACKENDS)
def fake_embedding_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    """A store on fast fake embeddings, on either backend."""
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        with MemoryStore(database_url=url, embeddings=HashEmbeddings()) as store:
            yield store
        return
    if request.param == "chroma":
        store = MemoryStore(tmp_path / "db", embeddings=HashEmbeddings())
    else:
        store = MemoryStore(backend=InMemoryBackend(), embeddings=HashEmbeddings())
    with store:
        yield store
