"""A namespace another process forgot and wrote to again: a long-lived store reopens it, never reads the old one.

Two stores share one database (Postgres) or one Chroma server, as two processes would. Store A has
opened the namespace's collections and recalled from them; store B forgets the whole namespace (its
collections are dropped) and writes a new lesson (new collections under the same names). A's next
recall must serve B's lesson, and A's next write must land where B reads. Before, A kept its cached
collections because the new ones record the same embedder: on Postgres it recalled nothing from then
on, and on a server it read and wrote a dropped collection until restarted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.store import _core
from tests.fakes import NgramEmbeddings
from tests.server import running_chroma_server

pytestmark = pytest.mark.integration

NAMESPACE = "recreated"


def _ids(store: MemoryStore, query: str) -> list[str]:
    return [u.memory_id for u, _, _ in store.search(query, k=3)]


def _forgotten_and_written_again(a: MemoryStore, b: MemoryStore) -> None:
    first = a.add(MemoryUnit(task_type="report", content="生成销售周报时使用公司统一的周报模板")).unit.memory_id
    assert _ids(a, "销售周报模板") == [first]  # A holds the namespace's collections (and its replica)

    assert b.forget(namespace=NAMESPACE) == 1
    second = b.add(MemoryUnit(task_type="report", content="周报模板改为二〇二六版")).unit.memory_id

    assert _ids(a, "周报模板") == [second]
    third = a.add(MemoryUnit(task_type="report", content="Weekly reports use the 2026 template")).unit.memory_id
    assert third in _ids(b, "weekly reports template")
    assert a.count() == b.count() == 2


def test_postgres_a_forgotten_namespace_written_again_elsewhere_is_reopened_at_once(postgres_url: str) -> None:
    def store() -> MemoryStore:
        return MemoryStore(database_url=postgres_url, embeddings=NgramEmbeddings(), namespace=NAMESPACE)

    a, b = store(), store()
    try:
        _forgotten_and_written_again(a, b)  # the change feed reports the dropped collection: no waiting
    finally:
        a.close()
        b.close()


@contextmanager
def _server_stores(tmp_path: Path) -> Iterator[Callable[[], MemoryStore]]:
    opened: list[MemoryStore] = []
    with running_chroma_server(tmp_path / "db") as server:

        def store() -> MemoryStore:
            opened.append(MemoryStore(client=server.client(), embeddings=NgramEmbeddings(), namespace=NAMESPACE))
            return opened[-1]

        try:
            yield store
        finally:
            for s in opened:
                s.close()


def test_server_a_forgotten_namespace_written_again_elsewhere_is_reopened_at_the_next_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_core, "RECHECK_SECONDS", 0.0)  # the periodic check of cached collections, every use
    with _server_stores(tmp_path) as store:
        _forgotten_and_written_again(store(), store())
