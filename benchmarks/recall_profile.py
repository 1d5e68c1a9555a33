"""Where one full recall spends its time: a per-stage breakdown and a cProfile summary.

Builds (or reuses, with ``--keep DIR``) one store per corpus (``benchmarks/_corpora.py``)
at ``--size`` memories (embedder and vectors as in ``recall_scale.py``, every query
cache off), then times each stage in its own pass over the same queries
(p50 / p95 of wall time, or with ``--clock cpu`` of the process's CPU time, which a
shared machine disturbs less):

* ``embed``: ``embed_query``;
* ``floor``: embedding + a raw Chroma query (k, documents and metadatas): the
  ``recall_scale.py`` floor;
* ``lexical``: the BM25 arm (``store.lexical_search``, depth 3k, normalised);
* ``chroma_ids``: the raw Chroma query recall issues (ids + distances, depth 3k + 8);
* ``recall``: the full ``recall`` (embedding, both arms, candidate fetch, fusion,
  scoring), on the store's one read path (the replica);
* ``hybrid_warm``: ``store.hybrid_search`` alone;
* ``recall_cold``: a second pass of ``recall`` (the replica keeps no per-query cache).

Then a cProfile of ``--profile-queries`` recalls, sorted by own time.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/recall_profile.py [--size 10000]
     [--corpora common,zh,mixed] [--queries 200] [--keep /tmp/stores] [--no-cprofile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from _corpora import CORPORA  # noqa: E402
from _stats import summary  # noqa: E402
from recall_scale import NOW, TASK_TYPES, TableEmbeddings, default_embedder, synthetic_units, vectors_for  # noqa: E402

from langchain_hindsight.recall.retriever import HindsightRetriever  # noqa: E402
from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402

K = 5
WARMUP = 10


def build(path: Path, corpus: str, size: int, real: object, n_real: int) -> list[str]:
    texts, queries = CORPORA[corpus](size, 300)
    if (path / "chroma.sqlite3").exists():
        return queries
    vecs, _ = vectors_for(texts, real, n_real, seed=size)  # type: ignore[arg-type]
    table = {t: v.tolist() for t, v in zip(texts, vecs, strict=True)}
    rng = random.Random(size)
    with MemoryStore(path, embeddings=TableEmbeddings(table, real)) as store:  # type: ignore[arg-type]
        for start in range(0, size, 5000):
            store.add_many(
                synthetic_units(texts[start : start + 5000], start, rng),
                dedupe=False,
            )
        store.lexical_search("warm up", k=1)
    return queries


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
"""``wall``: elapsed time; ``cpu``: the process's CPU time (all its threads), steadier on a shared machine."""


def timed(fn: Callable[[int, str], Any], queries: list[str], clock: Callable[[], float]) -> dict[str, float]:
    """p50 / p95 of ``fn(n, query)`` over the queries, after ``WARMUP`` untimed calls."""
    ms = []
    for n in range(WARMUP + len(queries)):
        q = queries[n % len(queries)]
        t0 = clock()
        fn(n, q)
        if n >= WARMUP:
            ms.append((clock() - t0) * 1000)
    return summary(ms)


def profile_corpus(path: Path, queries: list[str], real: Any, args: argparse.Namespace) -> None:
    """Print the stage timings and the cProfile summary of one built store."""
    clock = CLOCKS[args.clock]
    with MemoryStore(path, embeddings=real) as store:
        retriever = HindsightRetriever(store=store, k=K, low_similarity_threshold=0.0)
        col = store.collection(store.namespace, create=True)
        depth = 3 * K
        vectors = {q: real.embed_query(q) for q in queries}

        def floor(n: int, q: str) -> None:
            vec = real.embed_query(q)
            col.query(query_embeddings=[vec], n_results=K, include=["documents", "metadatas", "distances"])

        def recall(n: int, q: str) -> None:
            retriever.recall(q, task_type=TASK_TYPES[n % len(TASK_TYPES)], now=NOW)

        cold_ms: list[float] = []

        def cold(n: int, q: str) -> None:  # the replica keeps no per-query cache: a second pass
            t0 = clock()
            recall(n, q)
            cold_ms.append((clock() - t0) * 1000)

        passes: dict[str, Callable[[int, str], Any]] = {
            "embed": lambda n, q: real.embed_query(q),
            "floor": floor,
            "lexical": lambda n, q: store.lexical_search(q, k=depth, normalize=True),
            "chroma_ids": lambda n, q: col.query(
                query_embeddings=[vectors[q]], n_results=depth + 8, include=["distances"]
            ),
            "recall": recall,
            "hybrid_warm": lambda n, q: store.hybrid_search(q, vectors[q], k=depth, normalize=True),
        }
        print(f"== {path.name}: p50 / p95 {args.clock} ms (one pass per stage, {WARMUP} warm-up queries)", flush=True)
        for name, fn in passes.items():
            s = timed(fn, queries, clock)
            print(f"  {name:12s} {s['p50_ms']:7.2f} / {s['p95_ms']:7.2f}", flush=True)
        timed(cold, queries, clock)
        s = summary(cold_ms[WARMUP:])
        print(f"  {'recall_cold':12s} {s['p50_ms']:7.2f} / {s['p95_ms']:7.2f}", flush=True)
        if args.no_cprofile:
            return
        prof = cProfile.Profile()
        prof.enable()
        for n in range(args.profile_queries):
            recall(n, queries[n % len(queries)])
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue(), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--corpora", default="common,zh,mixed")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--real", type=int, default=500, help="texts per corpus embedded for real")
    parser.add_argument("--keep", default="", help="directory to keep (and reuse) the built stores in")
    parser.add_argument("--profile-queries", type=int, default=300)
    parser.add_argument("--no-cprofile", action="store_true")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="wall or process CPU time")
    args = parser.parse_args()
    real = default_embedder()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp())
    for corpus in args.corpora.split(","):
        path = base / f"{corpus}-{args.size}"
        queries = build(path, corpus, args.size, real, args.real)[: args.queries]
        profile_corpus(path, queries, real, args)


if __name__ == "__main__":
    main()
