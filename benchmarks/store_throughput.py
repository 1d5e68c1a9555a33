"""Store write throughput: batched vs single adds, batched vs single metadata updates.

Every number is measured in one run against a baseline from the same run:
raw Chroma ``collection.add`` with the same precomputed vectors, and one
``record_feedback`` call per id versus one call for all ids.

Run: ``.venv/bin/python benchmarks/store_throughput.py [--n 1000]``
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from _corpus import experiences
from langchain_core.embeddings import Embeddings

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.embeddings.multilingual import default_embeddings

RESULTS = Path(__file__).parent / "results"


class PrecomputedEmbeddings(Embeddings):
    """Returns vectors the default embedder computed once up front, so store overhead is measured without the model."""

    def __init__(self, table: dict[str, list[float]], model: Embeddings) -> None:
        self.table = table
        self.model = model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table.get(text) or self.model.embed_query(text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--updates", type=int, default=200)
    args = parser.parse_args()
    corpus = experiences(args.n)
    model = default_embeddings()
    t0 = time.perf_counter()
    vectors = model.embed_documents([c for _, c in corpus])
    embed_s = time.perf_counter() - t0
    table = {c: v for (_, c), v in zip(corpus, vectors, strict=True)}
    emb = PrecomputedEmbeddings(table, model)
    units = [MemoryUnit(task_type=t, content=c) for t, c in corpus]
    res: dict[str, object] = {"n": args.n, "machine": platform.platform(), "python": platform.python_version()}
    res["embed_docs_per_s"] = args.n / embed_s

    with tempfile.TemporaryDirectory() as tmp:
        import chromadb

        raw = chromadb.PersistentClient(path=f"{tmp}/raw").get_or_create_collection(
            "raw", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
        )
        t0 = time.perf_counter()
        raw.add(
            ids=[u.memory_id for u in units],
            embeddings=vectors,
            documents=[u.content for u in units],
            metadatas=[{"task_type": u.task_type} for u in units],
        )
        raw_s = time.perf_counter() - t0

        with MemoryStore(f"{tmp}/batch", embeddings=emb) as store:
            t0 = time.perf_counter()
            store.add_many(units, dedupe=False)
            batch_nodedupe_s = time.perf_counter() - t0
        with MemoryStore(f"{tmp}/batchd", embeddings=emb) as store:
            t0 = time.perf_counter()
            store.add_many(units, dedupe=True)
            batch_dedupe_s = time.perf_counter() - t0
        with MemoryStore(f"{tmp}/single", embeddings=emb) as store:
            sample = units[: min(200, args.n)]
            t0 = time.perf_counter()
            for u in sample:
                store.add(u)
            single_s = (time.perf_counter() - t0) / len(sample) * args.n
            ids = [u.memory_id for u in sample][: args.updates]
            t0 = time.perf_counter()
            for i in ids:
                store.record_feedback([i], success=True)
            upd_single_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            store.record_feedback(ids, success=True)
            upd_batch_s = time.perf_counter() - t0

    res.update(
        raw_chroma_add_per_s=args.n / raw_s,
        add_many_nodedupe_per_s=args.n / batch_nodedupe_s,
        add_many_dedupe_per_s=args.n / batch_dedupe_s,
        add_single_dedupe_per_s=args.n / single_s,
        ratio_add_many_nodedupe_vs_raw=batch_nodedupe_s / raw_s,
        ratio_add_many_dedupe_vs_raw=batch_dedupe_s / raw_s,
        updates=len(ids),
        feedback_single_per_s=len(ids) / upd_single_s,
        feedback_batched_per_s=len(ids) / upd_batch_s,
        feedback_batched_speedup=upd_single_s / upd_batch_s,
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "store_throughput.json").write_text(json.dumps(res, indent=2) + "\n")
    lines = [
        "# Store throughput",
        "",
        f"{args.n} synthetic agent experiences (benchmarks/_corpus.py); vectors precomputed with the default",
        "embedder so the store's own cost is measured; ratios are against raw Chroma `add` in the same run.",
        "",
        "| operation | items/s | vs baseline |",
        "|---|---:|---:|",
        f"| default embedder (batched, for reference) | {res['embed_docs_per_s']:.0f} | |",
        f"| raw Chroma `collection.add` (baseline) | {res['raw_chroma_add_per_s']:.0f} | 1.0× time |",
        f"| `add_many(dedupe=False)` | {res['add_many_nodedupe_per_s']:.0f} | {res['ratio_add_many_nodedupe_vs_raw']:.1f}× time |",
        f"| `add_many(dedupe=True)` (neighbour query per unit) | {res['add_many_dedupe_per_s']:.0f} | {res['ratio_add_many_dedupe_vs_raw']:.1f}× time |",
        f"| `add` one at a time (dedupe) | {res['add_single_dedupe_per_s']:.0f} | |",
        f"| `record_feedback` one id per call | {res['feedback_single_per_s']:.0f} | 1.0× |",
        f"| `record_feedback` all ids in one call | {res['feedback_batched_per_s']:.0f} | {res['feedback_batched_speedup']:.1f}× faster |",
        "",
    ]
    (RESULTS / "store_throughput.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
