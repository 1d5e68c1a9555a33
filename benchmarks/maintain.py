"""``Lifecycle.maintain`` (decay + archive + merge) at 10k and 100k memories.

How the corpus is made (embedding 100k texts with MiniLM takes ~9 minutes on 2 cores, so only
the seeds are embedded for real):

* 600 real seed experiences (``_corpus.experiences``, Chinese and English) are embedded with the
  packaged all-MiniLM-L6-v2;
* each memory's vector is ``normalise(0.75 * seed_a + 0.25 * seed_b + noise)`` with two random seeds
  and Gaussian noise (sigma 0.02 per dimension), which keeps MiniLM's pairwise similarity structure
  (most pairs far apart, topical neighbours at 0.6-0.9);
* 3% of the memories are planted near-duplicates of another memory of the same task type
  (``normalise(v + noise)``, similarity ~0.97) — the work the merge pass must find;
* task types follow a skewed (Zipf-like) distribution over 10 labels; last access is 0-400 days ago
  (exponential, mean 60), confidence ``0.1 + 0.85 * Beta(4, 2)``.

Units are written straight into the namespace's Chroma collection with their vectors (as a bulk
import does). Measured in the same run:

* ``maintain`` first run (does the real work) and steady state (repeated runs on the maintained
  store: p50/p95 over the repeats);
* baseline A: a raw Chroma full scan of the collection (ids, documents, metadata, embeddings in pages)
  — the floor for any pass that looks at every memory;
* baseline B: the naive merge search, one ``collection.query`` per memory, timed on a sample of 300
  and extrapolated to N (labelled as an extrapolation).

Run: ``.venv/bin/python benchmarks/maintain.py [--sizes 10000 100000] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from _corpus import TASKS as CORPUS_TASKS
from _corpus import experiences

from langchain_hindsight import Lifecycle, MemoryStore, MemoryUnit
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.store import unit_to_metadata

RESULTS = Path(__file__).parent / "results"
NOW = datetime(2026, 11, 1, tzinfo=UTC)
TASKS = [*CORPUS_TASKS, "web_search", "summarization"]  # a longer tail for the skewed distribution


class NoEmbeddings(LocalEmbeddings):
    """Maintenance never embeds; fail loudly if it tries."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise AssertionError("maintain must not embed")

    def embed_query(self, text: str) -> list[float]:
        raise AssertionError("maintain must not embed")


def synthesise(n: int, seeds: np.ndarray, rng: np.random.Generator) -> tuple[list[MemoryUnit], np.ndarray, int]:
    dim = seeds.shape[1]
    a = rng.integers(0, len(seeds), n)
    b = rng.integers(0, len(seeds), n)
    vectors = 0.75 * seeds[a] + 0.25 * seeds[b] + rng.normal(0, 0.02, (n, dim))
    zipf = 1 / np.arange(1, len(TASKS) + 1)
    task_idx = rng.choice(len(TASKS), n, p=zipf / zipf.sum())
    planted = int(n * 0.03)
    dup_of = rng.choice(n - planted, planted, replace=False)
    for k, j in enumerate(dup_of):
        i = n - planted + k
        vectors[i] = vectors[j] + rng.normal(0, 0.008, dim)
        task_idx[i] = task_idx[j]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    idle = np.minimum(rng.exponential(60, n), 400)
    age = idle + rng.uniform(0, 200, n)
    conf = 0.1 + 0.85 * rng.beta(4, 2, n)
    units = [
        MemoryUnit(
            memory_id=f"mem_{i:07d}",
            task_type=TASKS[task_idx[i]],
            content=f"synthetic experience {i} (seed {a[i]}/{b[i]})",
            confidence=round(float(conf[i]), 4),
            created_at=NOW - timedelta(days=float(age[i])),
            last_accessed_at=NOW - timedelta(days=float(idle[i])),
            access_count=int(rng.poisson(1.5)),
        )
        for i in range(n)
    ]
    return units, vectors.astype(np.float32), planted


def load(store: MemoryStore, units: list[MemoryUnit], vectors: np.ndarray) -> float:
    col = store.collection(store.namespace, create=True)
    batch = store.backend.max_batch_size
    start = time.perf_counter()
    for s in range(0, len(units), batch):
        chunk = units[s : s + batch]
        col.upsert(
            ids=[u.memory_id for u in chunk],
            embeddings=vectors[s : s + batch],
            documents=[u.content for u in chunk],
            metadatas=[unit_to_metadata(u) for u in chunk],
        )
    return time.perf_counter() - start


def full_scan(store: MemoryStore) -> float:
    col = store.collection(store.namespace, create=True)
    start = time.perf_counter()
    offset = 0
    while True:
        rows = col.get(include=["documents", "metadatas", "embeddings"], limit=5000, offset=offset)
        if len(rows["ids"]) < 5000:
            break
        offset += 5000
    return time.perf_counter() - start


def naive_merge_estimate(store: MemoryStore, vectors: np.ndarray, sample: int = 300) -> float:
    col = store.collection(store.namespace, create=True)
    idx = np.random.default_rng(1).choice(len(vectors), min(sample, len(vectors)), replace=False)
    start = time.perf_counter()
    for i in idx:
        col.query(query_embeddings=[vectors[i]], n_results=5, include=["distances"])
    return (time.perf_counter() - start) / len(idx) * len(vectors)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run_size(n: int, seeds: np.ndarray, repeats: int) -> dict[str, object]:
    rng = np.random.default_rng(n)
    units, vectors, planted = synthesise(n, seeds, rng)
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(tmp, embeddings=NoEmbeddings()) as store:
        load_s = load(store, units, vectors)
        print(f"[{n}] loaded in {load_s:.1f}s", file=sys.stderr)
        scan = [full_scan(store) for _ in range(repeats)]
        naive = naive_merge_estimate(store, vectors)
        lc = Lifecycle(store)
        t = time.perf_counter()
        first = lc.maintain(now=NOW)
        first_s = time.perf_counter() - t
        print(f"[{n}] first maintain {first_s:.1f}s", file=sys.stderr)
        steady: list[float] = []
        stages: dict[str, list[float]] = {"decay": [], "archive": [], "merge": []}
        for _ in range(repeats):
            t = time.perf_counter()
            again = lc.maintain(now=NOW)
            steady.append(time.perf_counter() - t)
            assert (again.decay.decayed, len(again.archive.archived), again.merge.removed) == (0, 0, 0)
        for _ in range(repeats):
            for name, fn in (
                ("decay", lambda: lc.decay(now=NOW)),
                ("archive", lambda: lc.archive_stale(now=NOW)),
                ("merge", lc.merge_duplicates),
            ):
                t = time.perf_counter()
                fn()
                stages[name].append(time.perf_counter() - t)
        remaining = store.count()
    scan_p50 = statistics.median(scan)
    return {
        "n": n,
        "planted_duplicates": planted,
        "load_s": round(load_s, 2),
        "first_run": {
            "seconds": round(first_s, 2),
            "decayed": first.decay.decayed,
            "archived": len(first.archive.archived),
            "merged_groups": len(first.merge.merged),
            "removed_by_merge": first.merge.removed,
            "units_after": remaining,
        },
        "steady_state_s": {"p50": round(statistics.median(steady), 3), "p95": round(pct(steady, 0.95), 3)},
        "stage_steady_s": {
            k: {"p50": round(statistics.median(v), 3), "p95": round(pct(v, 0.95), 3)} for k, v in stages.items()
        },
        "baseline_full_scan_s": {"p50": round(scan_p50, 3), "p95": round(pct(scan, 0.95), 3)},
        "baseline_naive_merge_s_extrapolated": round(naive, 1),
        "ratio_steady_vs_full_scan": round(statistics.median(steady) / scan_p50, 2),
        "ratio_merge_vs_naive_merge": round(statistics.median(stages["merge"]) / naive, 3),
        "repeats": repeats,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=600)
    args = parser.parse_args()

    texts = [t for _, t in experiences(args.seeds, seed=11)]
    t = time.perf_counter()
    seeds = np.asarray(LocalEmbeddings().embed_documents(texts), dtype=np.float32)
    embed_s = time.perf_counter() - t
    results = [run_size(n, seeds, args.repeats) for n in args.sizes]
    payload = {
        "benchmark": "maintain",
        "machine": {"python": platform.python_version(), "processor": platform.processor(), "cpus": 2},
        "seed_texts_embedded": len(texts),
        "seed_embedding_s": round(embed_s, 2),
        "results": results,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "maintain.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# maintain (decay + archive + merge)",
        "",
        f"Vectors synthesised from {len(texts)} MiniLM-embedded seed experiences (see benchmarks/maintain.py); "
        "3% planted near-duplicates. Times in seconds, 2-core CPU.",
        "",
        "| N | first run | steady p50 | steady p95 | decay p50 | archive p50 | merge p50 | full scan p50 (baseline) "
        "| steady / scan | naive merge (extrapolated) | merge / naive | decayed | archived | merged away (planted) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        f = r["first_run"]
        s = r["stage_steady_s"]
        lines.append(
            f"| {r['n']:,} | {f['seconds']} | {r['steady_state_s']['p50']} | {r['steady_state_s']['p95']} "
            f"| {s['decay']['p50']} | {s['archive']['p50']} | {s['merge']['p50']} | {r['baseline_full_scan_s']['p50']} "
            f"| {r['ratio_steady_vs_full_scan']} | {r['baseline_naive_merge_s_extrapolated']} "
            f"| {r['ratio_merge_vs_naive_merge']} | {f['decayed']} | {f['archived']} "
            f"| {f['removed_by_merge']} ({r['planted_duplicates']}) |"
        )
    (RESULTS / "maintain.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
