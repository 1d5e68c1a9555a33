"""The randomized write sequences of ``tests/unit_tests/store/test_store_model.py`` on the other backends.

An embedded Chroma directory, reopened at random, so recall reads from the snapshot its last close saved. And two
store objects, as two processes would, sharing one Postgres database or one Chroma server: each step writes
through one of them, chosen at random, and the checks read through both, so whatever one store wrote is what the
other one lists and recalls, never a stale copy.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from langchain_hindsight.store.memory_store import MemoryStore
from tests.fakes import NgramEmbeddings
from tests.postgres import PostgresServer
from tests.server import running_chroma_server
from tests.unit_tests.store.test_store_model import Opener, StoreModel, run

pytestmark = pytest.mark.integration


def test_random_writes_on_embedded_chroma(tmp_path: Path) -> None:
    directories = itertools.count()

    def opens() -> Opener:  # a directory of its own for each sequence
        path, embeddings = tmp_path / f"db{next(directories)}", NgramEmbeddings()
        return lambda: MemoryStore(path, embeddings=embeddings)

    run(StoreModel, opens, examples=15, steps=30)


class SharedModel(StoreModel):
    """Writes through ``store``, one of two on the same data; checks through both."""

    def __init__(self) -> None:
        super().__init__()
        self.other = self.opener()

    def teardown(self) -> None:
        super().teardown()
        self.other.close()

    @rule(swap=st.booleans())
    def switch(self, swap: bool) -> None:
        if swap:
            self.store, self.other = self.other, self.store

    @rule()
    def reopen(self) -> None:  # both, as a restarted pair of processes
        self.store.close()
        self.other.close()
        self.store, self.other = self.opener(), self.opener()

    @invariant()
    def the_other_store_reads_the_same(self) -> None:
        self.store, self.other = self.other, self.store
        try:
            self.nothing_written_is_lost()
            self.recall_reads_what_is_stored()
        finally:
            self.store, self.other = self.other, self.store


def test_two_stores_on_one_postgres_database(postgres_server: PostgresServer) -> None:
    databases: list[str] = []

    def opens() -> Opener:  # a fresh database for each sequence, which both of its stores open
        databases.append(url := postgres_server.create_database())
        embeddings = NgramEmbeddings()
        return lambda: MemoryStore(database_url=url, embeddings=embeddings)

    try:
        run(SharedModel, opens, examples=10, steps=25)
    finally:
        for url in databases:
            postgres_server.drop_database(url)


def test_two_stores_on_one_chroma_server(tmp_path: Path) -> None:
    with running_chroma_server(tmp_path / "server") as server:
        sequences = itertools.count()

        def opens() -> Opener:  # a namespace of its own for each sequence
            namespace, embeddings = f"seq{next(sequences)}", NgramEmbeddings()
            return lambda: MemoryStore(client=server.client(), embeddings=embeddings, namespace=namespace)

        run(SharedModel, opens, examples=6, steps=20)
