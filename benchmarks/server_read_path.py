"""What a Chroma *server* store and an in-memory store read for recall: the replica against the backend.

Issue 34 gives every store one read path, chosen when it opens. A store on a Chroma server (``chroma run``,
``HttpClient``) and one on the in-memory backend read through the replica (the lexical index and recall mirror
in process; on a server other writers' changes are followed through the namespace's change feed, one small
read before every search). This script measures that path against what each backend could answer itself,
in the same run, on the same memories and query vectors:

* ``replica``: ``store.hybrid_search`` (k=5, the store's one read path; on a server it includes the feed poll);
* ``backend arms``: the dense arm from the backend (one query of ``k`` + 8 with documents and metadata) and the
  lexical matches' records and vectors (one ``get``), i.e. two backend round trips per recall and the lexical
  arm still from an in-process index: the arm-by-arm route the replica replaced;
* ``first recall``: building the replica (one paged read of every active record with its vector).

Vectors are random unit vectors of 384 dimensions (the backends' cost does not depend on their meaning);
texts come from ``_corpora.py``'s ``mixed`` corpus. Writes benchmarks/results/server_read_path.json and .md.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/server_read_path.py [--size 2000] [--queries 100]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from _corpora import CORPORA  # noqa: E402
from _stats import summary  # noqa: E402

from langchain_hindsight.store.backend import InMemoryBackend  # noqa: E402
from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402
from langchain_hindsight.types import MemoryUnit  # noqa: E402
from tests.server import running_chroma_server  # noqa: E402

K = 5
DIM = 384


class RandomEmbeddings(Embeddings):
    """A fixed random unit vector per text (seeded by the text): what a backend stores and compares."""

    def _vector(self, text: str) -> list[float]:
        rng = np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little"))
        v = rng.standard_normal(DIM)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def _timed(fn: Callable[[str], Any], queries: list[str]) -> dict[str, float]:
    for q in queries[:5]:  # warm-up
        fn(q)
    ms = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        ms.append((time.perf_counter() - t0) * 1000)
    return summary(ms)


def measure(store: MemoryStore, queries: list[str]) -> dict[str, Any]:
    """The replica's recall, the first recall (replica built), and the backend's arm-by-arm recall."""
    vectors = {q: store.embeddings.embed_query(q) for q in queries}
    t0 = time.perf_counter()
    store.hybrid_search(queries[0], vectors[queries[0]], k=K)
    first = time.perf_counter() - t0
    col = store.collection(store.namespace)
    assert col is not None

    def backend_arms(q: str) -> None:
        lexical = store.lexical_search(q, k=K)
        col.query(query_embeddings=[vectors[q]], n_results=K + 8, include=["documents", "metadatas", "distances"])
        if lexical:
            col.get(ids=[i for i, _ in lexical], include=["documents", "metadatas", "embeddings"])

    return {
        "read_path": store.read_path,
        "first_recall_s": round(first, 3),
        "replica": _timed(lambda q: store.hybrid_search(q, vectors[q], k=K), queries),
        "backend_arms": _timed(backend_arms, queries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    texts, queries = CORPORA["mixed"](args.size, args.queries)
    units = [MemoryUnit(content=t, task_type="data_cleaning") for t in texts]
    results: dict[str, Any] = {"size": args.size, "queries": len(queries), "note": args.note, "stores": {}}
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore(backend=InMemoryBackend(), embeddings=RandomEmbeddings()) as store:
            store.add_many(units, dedupe=False)
            results["stores"]["in-memory"] = measure(store, queries)
        with (
            running_chroma_server(Path(tmp) / "srv") as server,
            MemoryStore(client=server.client(), embeddings=RandomEmbeddings(), namespace="bench") as store,
        ):
            store.add_many(units, dedupe=False)
            results["stores"]["chroma server"] = measure(store, queries)
    for name, row in results["stores"].items():
        print(name, json.dumps(row), flush=True)
    out = ROOT / "results" / "server_read_path"
    out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(results), encoding="utf-8")


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "# What a Chroma server store and an in-memory store read (benchmarks/server_read_path.py)",
        "",
        f"{results['size']:,} memories, {results['queries']} queries, k={K}, 384-d random unit vectors; same run, "
        "same memories and vectors. Replica: `hybrid_search` on the store's one read path (a server's includes "
        "the change-feed poll). Backend arms: one dense query (k + 8, records included) and one `get` of the "
        "lexical matches with their vectors (the lexical arm from the in-process index). First recall: the "
        f"replica built from the backend. {results['note']}",
        "",
        "| store | read path | replica p50 / p95 | backend arms p50 / p95 | ratio p50 | first recall |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in results["stores"].items():
        rep, arms = row["replica"], row["backend_arms"]
        lines.append(
            f"| {name} | {row['read_path']} | {rep['p50_ms']:.2f} / {rep['p95_ms']:.2f} ms | "
            f"{arms['p50_ms']:.2f} / {arms['p95_ms']:.2f} ms | {rep['p50_ms'] / arms['p50_ms']:.2f}x | "
            f"{row['first_recall_s']:.2f} s |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
