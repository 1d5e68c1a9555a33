"""Recall latency as memory grows, on corpora that cannot flatter the lexical arm.

For each corpus (``benchmarks/_corpora.py``: ``common`` — every query term in
>= 30 % of the memories; ``zh`` — Chinese-heavy; ``mixed`` — the friendly
zh/en corpus of ``recall_latency.py``) and each size, in the same run:

* ``floor``: query embedding + a raw Chroma ``query`` (n_results=k, documents
  and metadatas included): what a plain vector-store retriever pays;
* ``recall``: ``HindsightRetriever.recall`` (embedding, both arms, scoring), k=5,
  on the store's one read path (``path``: ``replica``, the lexical index and the
  recall mirror in process, exact dense arm, every candidate in memory, whatever
  the size);
* ``recall_cold``: the same in a second pass (kept for older result files: the
  replica keeps no per-query cache, so both passes take the same path);
* ``replica MB``: what the namespace's replica adds to the process (RSS growth of
  the first recall of a fresh store without snapshots: the mirror's vectors and
  records and the lexical index);
* ``lexical``: the BM25 arm alone (``store.lexical_search``, depth 3k);
* add throughput (``add_many(dedupe=False)``, embeddings precomputed, so it is
  the store's own cost) and the real embedder's throughput on the base texts;
* store open: ``MemoryStore(...)``, then its first lexical search (index from
  its snapshot), then its first hybrid search (the mirror from its snapshot, or
  Chroma's index loaded); and the first hybrid search with both snapshots
  removed (full rebuild);
* CLI wall time of ``hindsight stats`` and ``hindsight search`` (fresh processes).

The embedder is whatever ``MemoryStore()`` defaults to, with every query cache
off, its parts' included (every query is embedded for real, for the floor and
for recall).
Embedding 100k texts on 2 cores takes far too long, so ``--real`` texts per
corpus are embedded for real and every further memory gets a normalised noisy
mix of two real vectors (its own text is indexed lexically).

With ``--quality``, the MRR of the labelled set (``benchmarks/data``) is
measured with the shipped lexical index and with the pre-vectorisation
pure-Python BM25 (``_bm25_reference.py``) in the same run, and both indexes'
query time on the common and zh corpora at 10k (CPU time, no Chroma).

Writes benchmarks/results/recall_scale.json and .md (``--out NAME`` changes the name).

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/recall_scale.py [--sizes 1000,10000,100000]
     [--corpora common,zh,mixed] [--queries 300] [--quick] [--quality] [--no-cli]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from _corpora import CORPORA, min_query_term_share  # noqa: E402
from _stats import summary  # noqa: E402

from langchain_hindsight.recall.retriever import HindsightRetriever  # noqa: E402
from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402
from langchain_hindsight.types import MemoryUnit  # noqa: E402

K = 5
WARMUP = 10
TASK_TYPES = ["data_cleaning", "data_analysis", "weekly_report", "api_call", "file_operation", "database_query"]
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def synthetic_units(texts: list[str], start: int, rng: random.Random) -> list[MemoryUnit]:
    """Units for ``texts`` (the corpus slice starting at ``start``): task types in turn, random confidence."""
    return [
        MemoryUnit(
            content=t,
            task_type=TASK_TYPES[(start + j) % len(TASK_TYPES)],
            confidence=round(0.4 + 0.5 * rng.random(), 2),
            created_at=NOW,
            last_accessed_at=NOW,
        )
        for j, t in enumerate(texts)
    ]


TARGETS = {
    "10k_recall_p95_ms": 25.0,
    "10k_recall_p50_vs_floor": 1.5,
    "100k_recall_p95_ms": 40.0,
    "100k_open_s": 2.0,
    "10k_cli_stats_s": 1.0,
    "10k_cli_search_s": 2.0,  # since search opens the store (1.5 s while it had a quick path)
}


class TableEmbeddings(Embeddings):
    """Documents: precomputed vectors looked up by text. Queries: the real embedder."""

    def __init__(self, table: dict[str, list[float]], real: Embeddings) -> None:
        self.table = table
        self.real = real

    @property
    def identity(self) -> Any:
        """The real embedder's identity, so the store opens later with the default embedder."""
        return getattr(self.real, "identity", None)

    @property
    def fusion_weights(self) -> Any:
        """The real embedder's fusion weights, so recall fuses as it would with the default embedder."""
        return getattr(self.real, "fusion_weights", None)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.real.embed_query(text)


def default_embedder() -> Embeddings:
    """``MemoryStore()``'s default embedder, every query cache off (its own and its parts')."""
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(tmp) as probe:
        emb = probe.embeddings
    for part in (emb, *(getattr(emb, name, None) for name in ("minilm", "use"))):
        if part is not None and hasattr(part, "query_cache_size"):
            part.query_cache_size = 0
    return emb


def vectors_for(texts: list[str], real: Embeddings, n_real: int, seed: int) -> tuple[np.ndarray, float]:
    """Real vectors for the first ``n_real`` texts, noisy mixes for the rest; and the real embedding rate."""
    rng = np.random.default_rng(seed)
    base_n = min(n_real, len(texts))
    t0 = time.perf_counter()
    base = np.asarray(real.embed_documents(texts[:base_n]), dtype=np.float32)
    rate = base_n / (time.perf_counter() - t0)
    if len(texts) == base_n:
        return base, rate
    a = rng.integers(0, base_n, len(texts) - base_n)
    b = rng.integers(0, base_n, len(texts) - base_n)
    mix = 0.7 * base[a] + 0.3 * base[b] + rng.normal(0, 0.02, (len(a), base.shape[1])).astype(np.float32)
    mix /= np.linalg.norm(mix, axis=1, keepdims=True)
    return np.concatenate([base, mix.astype(np.float32)]), rate


def cli_seconds(path: Path, argv: list[str], runs: int) -> dict[str, Any]:
    """Median wall time of ``hindsight <argv> --path path`` in fresh processes."""
    env = dict(os.environ, PYTHONPATH=str(ROOT.parent), HF_HUB_OFFLINE="1")
    times = []
    code = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "langchain_hindsight.cli.main", *argv, "--path", str(path)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        times.append(time.perf_counter() - t0)
        code = code or proc.returncode
        if proc.returncode:
            print(f"  cli {argv[0]} failed: {proc.stderr.strip()[-300:]}", flush=True)
    rest = times[1:] or times
    return {
        "first_s": round(times[0], 3),
        "rest_median_s": round(statistics.median(rest), 3),
        "median_s": round(statistics.median(times), 3),
        "min_s": round(min(times), 3),
        "exit": code,
    }


def _rss_mb() -> float:
    """This process's resident set size now, in MB (Linux ``/proc``; 0 elsewhere)."""
    try:
        status = Path("/proc/self/status").read_text(encoding="utf-8")
    except OSError:
        return 0.0
    line = next((x for x in status.splitlines() if x.startswith("VmRSS:")), "VmRSS: 0 kB")
    return int(line.split()[1]) / 1024


def run_size(corpus: str, size: int, real: Embeddings, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    texts, queries = CORPORA[corpus](size, args.queries)
    vecs, embed_rate = vectors_for(texts, real, args.real, seed=size)
    table = {t: v.tolist() for t, v in zip(texts, vecs, strict=True)}
    emb = TableEmbeddings(table, real)
    rng = random.Random(size)
    path = tmp / f"{corpus}-{size}"
    row: dict[str, Any] = {
        "min_query_term_share": round(min_query_term_share(texts, queries), 3),
        "real_embed_texts_per_s": round(embed_rate, 1),
    }
    with MemoryStore(path, embeddings=emb) as store:
        t0 = time.perf_counter()
        for start in range(0, size, args.batch):
            store.add_many(
                synthetic_units(texts[start : start + args.batch], start, rng),
                dedupe=False,
            )
        add_s = time.perf_counter() - t0
        row["add_units_per_s"] = round(size / add_s, 1)
        t0 = time.perf_counter()
        store.lexical_search("warm up", k=1)
        row["lexical_build_s"] = round(time.perf_counter() - t0, 3)
        col = store.collection(store.namespace)
        assert col is not None
        retriever = HindsightRetriever(store=store, k=K, low_similarity_threshold=0.0)
        timings: dict[str, list[float]] = {
            "embed": [],
            "chroma": [],
            "floor": [],
            "lexical": [],
            "recall": [],
            "recall_cold": [],
        }
        # first pass: the floor, the lexical arm and recall, query by query
        for n in range(WARMUP + len(queries)):
            q = queries[n % len(queries)]
            t0 = time.perf_counter()
            vec = real.embed_query(q)
            t1 = time.perf_counter()
            col.query(query_embeddings=[vec], n_results=K, include=["documents", "metadatas", "distances"])
            t2 = time.perf_counter()
            store.lexical_search(q, k=3 * K, normalize=True)
            t3 = time.perf_counter()
            retriever.recall(q, task_type=TASK_TYPES[n % len(TASK_TYPES)], now=NOW)
            t4 = time.perf_counter()
            if n >= WARMUP:
                timings["embed"].append((t1 - t0) * 1000)
                timings["chroma"].append((t2 - t1) * 1000)
                timings["floor"].append((t2 - t0) * 1000)
                timings["lexical"].append((t3 - t2) * 1000)
                timings["recall"].append((t4 - t3) * 1000)
        # a second pass (the replica keeps no per-query cache: the same path)
        for n in range(WARMUP + len(queries)):
            q = queries[n % len(queries)]
            t0 = time.perf_counter()
            retriever.recall(q, task_type=TASK_TYPES[n % len(TASK_TYPES)], now=NOW)
            t1 = time.perf_counter()
            if n >= WARMUP:
                timings["recall_cold"].append((t1 - t0) * 1000)
        row["path"] = store.read_path
    first_vector = real.embed_query(queries[0])
    row.update({name: summary(ms) for name, ms in timings.items()})
    row["ratio_recall_vs_floor_p50"] = round(row["recall"]["p50_ms"] / row["floor"]["p50_ms"], 2)
    row["ratio_recall_vs_floor_p95"] = round(row["recall"]["p95_ms"] / row["floor"]["p95_ms"], 2)
    row["ratio_recall_cold_vs_floor_p50"] = round(row["recall_cold"]["p50_ms"] / row["floor"]["p50_ms"], 2)
    # open: constructor + first search (snapshot written at the close above), then without the snapshot
    opens, rebuilds = [], []
    for _ in range(args.open_runs):
        t0 = time.perf_counter()
        with MemoryStore(path, embeddings=emb) as store:
            t1 = time.perf_counter()
            store.lexical_search(queries[0], k=3 * K, normalize=True)
            t2 = time.perf_counter()
            store.hybrid_search(queries[0], first_vector, k=3 * K, normalize=True)
            t3 = time.perf_counter()
        opens.append((t1 - t0, t2 - t0, t3 - t0))
    row["open_constructor_s"] = round(min(o[0] for o in opens), 3)
    row["open_first_search_s"] = round(min(o[1] for o in opens), 3)
    row["open_first_recall_s"] = round(min(o[2] for o in opens), 3)
    snapshot_dirs = [d for d in (path / "lexical", path / "mirror") if d.exists()]
    if snapshot_dirs:
        for snapshot_dir in snapshot_dirs:
            shutil.rmtree(snapshot_dir)
        t0 = time.perf_counter()
        with MemoryStore(path, embeddings=emb) as store:
            rss = _rss_mb()
            store.hybrid_search(queries[0], first_vector, k=3 * K, normalize=True)
            rebuilds.append(time.perf_counter() - t0)
            row["replica_mb"] = round(_rss_mb() - rss, 1)
        row["open_rebuild_first_search_s"] = round(rebuilds[0], 3)
    if not args.no_cli:
        row["cli_stats"] = cli_seconds(path, ["stats"], args.cli_runs)
        row["cli_search"] = cli_seconds(path, ["search", queries[0]], args.cli_runs)
    shutil.rmtree(path, ignore_errors=True)
    return row


def quality() -> dict[str, Any]:
    """MRR@10 of the labelled set with the shipped index and with the pre-vectorisation BM25, the latter with the
    shipped index's prior pseudo-documents (the same scores, so the same ranking) and without them (as it was).
    """
    from _bm25_reference import ReferenceIndex

    from langchain_hindsight.store.replica.lexical import LexicalIndex
    from langchain_hindsight.store.tokens import PRIOR_DOCUMENTS

    def load(name: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (ROOT / "data" / name).read_text(encoding="utf-8").splitlines()]

    memories, queries = load("recall_memories.jsonl"), load("recall_queries.jsonl")
    labelled = [q for q in queries if q["relevant"]]
    out: dict[str, Any] = {"queries": len(labelled)}
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(tmp) as store:
        units = [
            MemoryUnit(
                memory_id=m["id"],
                task_type=m["task_type"],
                task_description=m["task_description"],
                content=m["content"],
                tags=m["tags"],
                confidence=0.7,
                created_at=NOW,
                last_accessed_at=NOW,
            )
            for m in memories
        ]
        store.add_many(units, dedupe=False)
        indexes = (
            ("reference_python_bm25", ReferenceIndex(prior_documents=PRIOR_DOCUMENTS)),
            ("reference_without_prior", ReferenceIndex()),
            ("vectorised_bm25", LexicalIndex()),
        )
        for name, index in indexes:
            index.upsert(units)
            held = store.replica.current(store.namespace)
            assert held is not None
            held.index = index  # type: ignore[assignment]
            retriever = HindsightRetriever(store=store, k=10, low_similarity_threshold=0.0)
            rr = []
            for q in labelled:
                got = [s.memory.memory_id for s in retriever.recall(q["query"], now=NOW)]
                ranks = [r for r, i in enumerate(got, 1) if i in q["relevant"]]
                rr.append(1.0 / ranks[0] if ranks else 0.0)
            out[name] = {"mrr@10": round(statistics.fmean(rr), 4)}
    out["same"] = out["reference_python_bm25"] == out["vectorised_bm25"]
    return out


def lexical_versus_reference(n: int, n_queries: int = 100) -> dict[str, Any]:
    """CPU ms per lexical query (k=15, normalised) of the pre-vectorisation BM25 and the shipped one, same corpus."""
    from _bm25_reference import ReferenceIndex

    from langchain_hindsight.store.replica.lexical import LexicalIndex
    from langchain_hindsight.store.tokens import PRIOR_DOCUMENTS

    out: dict[str, Any] = {"memories": n}
    for corpus in ("common", "zh"):
        texts, queries = CORPORA[corpus](n, n_queries)
        units = [MemoryUnit(memory_id=f"m{i:06d}", content=t) for i, t in enumerate(texts)]
        reference = ReferenceIndex(prior_documents=PRIOR_DOCUMENTS)
        for name, index in (("reference_python_bm25", reference), ("vectorised_bm25", LexicalIndex())):
            index.upsert(units)
            ms = []
            for q in queries:
                t0 = time.process_time()
                index.search(q, 3 * K, normalize=True)
                ms.append((time.process_time() - t0) * 1000)
            out.setdefault(corpus, {})[name] = summary(ms)
    return out


def _seconds(value: float | None) -> str:
    """A measured duration, or a dash when the result file predates the measurement."""
    return "–" if value is None else f"{value:.2f} s"


def _cli(row: dict[str, Any], key: str) -> str:
    """One CLI timing of a row (older result files lack the first/rest split)."""
    return f"{row.get(key, row['median_s']):.2f}"


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Recall latency as memory grows (benchmarks/recall_scale.py)",
        "",
        f"{results['machine']}. k={K}; {results['queries']} queries per size after {WARMUP} warm-up queries; "
        f"embedder: {results['embedder']} (every query cache off, so recall and the floor both embed each "
        "query). Floor = query embedding + raw Chroma query (same run). Recall: the store's one read path; "
        "cold recall: a second pass (the same path: no per-query cache). Corpora: see benchmarks/_corpora.py. Targets (10k): recall p95 <= 25 ms, p50 <= 1.5x floor; "
        "(100k): p95 <= 40 ms, open <= 2 s; CLI at 10k: stats <= 1 s, search <= 2 s. "
        "Query-term share: the smallest share of memories holding a query term (the common corpus guarantees "
        ">= 30 %; the others have query words no memory holds, so 0 %). Path: the store's read path (`replica`: "
        "lexical index and recall mirror in process at every size; older rows: `mirror` / `chroma`). "
        "Replica MB: RSS growth of a fresh store's first recall without snapshots. Open: MemoryStore(), + its first lexical search "
        "(index from its snapshot), + its first hybrid search (the mirror from its snapshot, or Chroma's index "
        "loaded); rebuild: the first hybrid search without the snapshots. CLI: median wall time of "
        f"{results.get('cli_runs', 3)} fresh processes right after the store's last session, model load included for "
        "search; stats: the first run (it counts unless the last session left a current summary, then saves "
        "one) and the median of the rest (answered from the summary); search opens the store (its snapshots loaded when the last "
        "close left trusted ones).",
        "",
        "| corpus | memories | path | min query-term share | recall p50 / p95 | floor p50 / p95 | ratio p50 / p95 "
        "| cold recall p50 / p95 (ratio p50) | lexical p50 / p95 | add units/s | open (+first lexical search / +first recall) | rebuild "
        "| replica MB | cli stats (first, then) / search |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for corpus, sizes in results["corpora"].items():
        for size, r in sizes.items():
            cli = (
                f"{_cli(r['cli_stats'], 'first_s')} then {_cli(r['cli_stats'], 'rest_median_s')} / "
                f"{_cli(r['cli_search'], 'median_s')} s"
                if "cli_stats" in r
                else "-"
            )
            lines.append(
                f"| {corpus} | {int(size):,} | {r.get('path', 'chroma')} | {r['min_query_term_share']:.0%} | "
                f"{r['recall']['p50_ms']:.1f} / {r['recall']['p95_ms']:.1f} ms | "
                f"{r['floor']['p50_ms']:.1f} / {r['floor']['p95_ms']:.1f} ms | "
                f"{r['ratio_recall_vs_floor_p50']}x / {r['ratio_recall_vs_floor_p95']}x | "
                f"{r['recall_cold']['p50_ms']:.1f} / {r['recall_cold']['p95_ms']:.1f} ms "
                f"({r['ratio_recall_cold_vs_floor_p50']}x) | {r['lexical']['p50_ms']:.2f} / {r['lexical']['p95_ms']:.2f} ms | {r['add_units_per_s']:,.0f} | "
                f"{r['open_constructor_s']:.2f} s (+{r['open_first_search_s']:.2f} / "
                f"+{_seconds(r.get('open_first_recall_s'))}) | "
                f"{r.get('open_rebuild_first_search_s', float('nan')):.2f} s | {r.get('replica_mb', '–')} | {cli} |"
            )
    if "quality" in results:
        qual = results["quality"]
        lines += [
            "",
            f"Ranking check ({qual['queries']} labelled queries, benchmarks/data, full recall k=10): MRR@10 "
            f"{qual['vectorised_bm25']['mrr@10']:.4f} with the vectorised BM25 vs "
            f"{qual['reference_python_bm25']['mrr@10']:.4f} with the pre-vectorisation pure-Python BM25 "
            f"({'identical' if qual['same'] else 'DIFFERENT'}); "
            f"{qual['reference_without_prior']['mrr@10']:.4f} without the prior pseudo-documents of a normalised "
            "search's idf.",
        ]
    if "lexical_vs_reference" in results:
        lex = results["lexical_vs_reference"]
        parts = [
            f"{corpus}: {lex[corpus]['reference_python_bm25']['p50_ms']:.2f} / "
            f"{lex[corpus]['reference_python_bm25']['p95_ms']:.2f} ms before, "
            f"{lex[corpus]['vectorised_bm25']['p50_ms']:.2f} / {lex[corpus]['vectorised_bm25']['p95_ms']:.2f} ms now"
            for corpus in ("common", "zh")
        ]
        lines += [
            "",
            f"Lexical arm alone at {lex['memories']:,} memories (CPU time per query, p50 / p95): "
            + "; ".join(parts)
            + ".",
        ]
    if "load_average" in results:
        load = results["load_average"]
        lines += [
            "",
            f"Load average (1, 5, 15 min) on {results['machine'].split('-')[0]} CPUs: "
            f"{', '.join(map(str, load['start']))} at the start, {', '.join(map(str, load['end']))} at the end.",
        ]
    if results.get("note"):
        lines += ["", results["note"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--corpora", default="common,zh,mixed")
    parser.add_argument("--queries", type=int, default=300, help="timed queries per size")
    parser.add_argument("--real", type=int, default=2000, help="texts per corpus embedded for real")
    parser.add_argument("--batch", type=int, default=5000, help="units per add_many call")
    parser.add_argument("--open-runs", type=int, default=3)
    parser.add_argument("--cli-runs", type=int, default=3)
    parser.add_argument("--no-cli", action="store_true", help="skip the CLI wall-time runs")
    parser.add_argument("--quality", action="store_true", help="also compare MRR with the reference BM25")
    parser.add_argument("--quick", action="store_true", help="1k only, 60 queries, 300 real texts, 1 CLI run")
    parser.add_argument("--note", default="", help="a line added to the report (e.g. 'machine shared')")
    parser.add_argument("--out", default="recall_scale", help="results file name (without extension)")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.queries, args.real, args.open_runs, args.cli_runs = "1000", 60, 300, 1, 1
    real = default_embedder()
    load_start = os.getloadavg()
    results: dict[str, Any] = {
        "machine": f"{os.cpu_count()}-core CPU, Python {sys.version.split()[0]}",
        "embedder": str(getattr(real, "identity", type(real).__name__)),
        "queries": args.queries,
        "cli_runs": args.cli_runs,
        "real_texts": args.real,
        "note": args.note,
        "targets": TARGETS,
        "corpora": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for corpus in args.corpora.split(","):
            for size in (int(s) for s in args.sizes.split(",")):
                row = run_size(corpus, size, real, args, Path(tmp))
                results["corpora"].setdefault(corpus, {})[str(size)] = row
                print(
                    f"{corpus:>6} {size:>7}: recall p50 {row['recall']['p50_ms']:.1f} p95 {row['recall']['p95_ms']:.1f}"
                    f" | floor p50 {row['floor']['p50_ms']:.1f} | ratio {row['ratio_recall_vs_floor_p50']}x | "
                    f"cold p50 {row['recall_cold']['p50_ms']:.1f} p95 {row['recall_cold']['p95_ms']:.1f} | "
                    f"lexical p50 {row['lexical']['p50_ms']:.2f} p95 {row['lexical']['p95_ms']:.2f} | "
                    f"share {row['min_query_term_share']:.0%} | add {row['add_units_per_s']:.0f}/s | "
                    f"open {row['open_first_search_s']:.2f}s rebuild {row.get('open_rebuild_first_search_s', 0):.2f}s"
                    + (
                        f" | cli stats {row['cli_stats']['median_s']:.2f}s search {row['cli_search']['median_s']:.2f}s"
                        if "cli_stats" in row
                        else ""
                    ),
                    flush=True,
                )
    if args.quality:
        results["quality"] = quality()
        print("quality:", json.dumps(results["quality"]), flush=True)
        results["lexical_vs_reference"] = lexical_versus_reference(10_000 if not args.quick else 1000)
        print("lexical vs reference:", json.dumps(results["lexical_vs_reference"]), flush=True)
    results["load_average"] = {
        "start": [round(x, 2) for x in load_start],
        "end": [round(x, 2) for x in os.getloadavg()],
    }
    out = ROOT / "results"
    out.mkdir(exist_ok=True)
    (out / f"{args.out}.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / f"{args.out}.md").write_text(markdown(results), encoding="utf-8")


if __name__ == "__main__":
    main()
