"""Forget through a Chroma server, then ``scrub()``: no derived file may still hold the text (issue 22).

The path a user follows (the ``scrub()`` docstring says so): an embedded store wrote its
snapshots at close; the directory is later served by ``chroma run --path``; a unit is forgotten through the
server (a ``MemoryStore`` on an ``HttpClient``, or a raw chromadb delete); the server is stopped, the directory
is opened with ``MemoryStore(persist_directory=...)`` and scrubbed there. The reopened store distrusts the
snapshots (the data changed under the stamp); before ``scrub()`` erased what the stamp does not vouch for,
nothing erased them and the forgotten text stayed on disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore
from langchain_hindsight.store._directory import DERIVED
from tests.bytescan import text_hits
from tests.fakes import HashEmbeddings
from tests.integration_tests.store.test_forget import _filler, _needles, _secret_unit
from tests.server import running_chroma_server

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("through", ["store", "raw"])
def test_forget_through_a_server_then_scrub_leaves_no_text_in_any_derived_file(tmp_path: Path, through: str) -> None:
    directory = tmp_path / "db"
    emb = HashEmbeddings()
    with MemoryStore(persist_directory=directory, embeddings=emb, namespace="shared") as store:
        store.add_many(_filler(20), dedupe=False)
        secret = store.add(_secret_unit()).unit
        store.hybrid_search(secret.content, emb.embed_query(secret.content), k=3)  # the recall mirror exists
        assert store.lexical_search("SECRET alpha CONTENT", k=1)[0][0] == secret.memory_id
    derived = {p for p in directory.rglob("*") if p.is_file() and p.relative_to(directory).parts[0] in DERIVED}
    assert {p.parent.name for p in derived} >= {"mirror"}  # the close wrote its snapshot
    assert "content" in text_hits(directory, _needles(secret))

    with running_chroma_server(directory) as server:
        client = server.client()
        if through == "store":
            with MemoryStore(client=client, embeddings=emb, namespace="shared") as remote:
                assert remote.forget(secret.memory_id) == 1
        else:
            deleted = 0
            for col in client.list_collections():
                handle = client.get_collection(col.name)
                if handle.get(ids=[secret.memory_id])["ids"]:
                    handle.delete(ids=[secret.memory_id])
                    deleted += 1
            assert deleted == 1

    with MemoryStore(persist_directory=directory, embeddings=emb, namespace="shared") as store:
        store.scrub()
    leaks = {
        name: [rel for rel in files if Path(rel).parts[0] in DERIVED]
        for name, files in text_hits(directory, _needles(secret)).items()
    }
    assert not any(leaks.values()), leaks
