"""langchain-tests' standard retriever suite against a temporary local store."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_hindsight import HindsightRetriever, MemoryStore, MemoryUnit
from langchain_hindsight.embeddings.local import LocalEmbeddings

LESSONS = [
    "Read Chinese CSV files with encoding='utf-8-sig'.",
    "Detect the CSV delimiter with csv.Sniffer before reading.",
    "Pass dtype={'id': str} so leading zeros in CSV ids survive.",
    "Weekly reports cover Monday to Sunday of the previous week.",
    "Retry HTTP 429 responses with exponential backoff.",
]


@pytest.fixture(scope="class")
def standard_store(embeddings: LocalEmbeddings) -> Iterator[MemoryStore]:
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(tmp, embeddings=embeddings) as store:
        store.add_many([MemoryUnit(content=c) for c in LESSONS], dedupe=False)
        yield store


@pytest.mark.usefixtures("standard_store")
class TestHindsightRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _bind(self, standard_store: MemoryStore) -> None:
        self._store = standard_store

    @property
    def retriever_constructor(self) -> type[HindsightRetriever]:
        return HindsightRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"store": self._store, "k": 2, "min_relevance": None}  # the suite expects exactly k documents

    @property
    def retriever_query_example(self) -> str:
        return "How do I read a CSV file?"
