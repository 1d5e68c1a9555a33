"""Store fixtures on both storage backends (embedded Chroma and in memory), for the store's own tests.

Import the fixtures a test module needs (``from tests.unit_tests.store.store_backends import store_factory``
registers ``make_store``):
``make_store`` and ``hash_store`` are parametrised over both backends; ``make_chroma_store`` is for what
only Chroma has (a directory, its lock, bytes on disk, a fresh process).
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

BACKENDS = ["chroma", "memory"]


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


@pytest.fixture(name="make_store", params=BACKENDS)
def store_factory(
    request: pytest.FixtureRequest, make_chroma_store: Callable[..., MemoryStore], embeddings: Embeddings
) -> Iterator[Callable[..., MemoryStore]]:
    """Stores on either backend (the real embedder); in memory, the same name reopens the same data."""
    if request.param == "chroma":
        yield make_chroma_store
        return
    opened: list[MemoryStore] = []
    yield _memory_factory(embeddings, opened)
    for store in opened:
        store.close()


@pytest.fixture(name="hash_store", params=BACKENDS)
def fake_embedding_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    """A store on fast fake embeddings, on either backend."""
    if request.param == "chroma":
        store = MemoryStore(tmp_path / "db", embeddings=HashEmbeddings())
    else:
        store = MemoryStore(backend=InMemoryBackend(), embeddings=HashEmbeddings())
    with store:
        yield store
