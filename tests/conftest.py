"""Shared fixtures: the real offline embedder (loaded once) and temporary stores."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.embeddings.multilingual import ScriptRoutedEmbeddings
from langchain_hindsight.store.memory_store import MemoryStore


@pytest.fixture(scope="session")
def embeddings() -> LocalEmbeddings:
    """The real packaged all-MiniLM-L6-v2, shared by the whole session (loads once)."""
    return LocalEmbeddings()


@pytest.fixture(scope="session")
def routed_embeddings(embeddings: LocalEmbeddings) -> ScriptRoutedEmbeddings:
    """The default embedder (MiniLM + USE routed by script), sharing the session's MiniLM."""
    return ScriptRoutedEmbeddings(minilm=embeddings)


@pytest.fixture
def make_store(tmp_path: Path, embeddings: LocalEmbeddings) -> Iterator[Callable[..., MemoryStore]]:
    """Factory for embedded stores in a temporary directory; all are closed afterwards."""
    opened: list[MemoryStore] = []

    def factory(name: str = "db", **kwargs: Any) -> MemoryStore:
        kwargs.setdefault("embeddings", embeddings)
        store = MemoryStore(tmp_path / name, **kwargs)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: Callable[..., MemoryStore]) -> MemoryStore:
    """A fresh embedded store on the real embedder."""
    return make_store()
