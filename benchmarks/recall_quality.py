"""Recall quality of the dense arm, the BM25 arm and fusion variants on a labelled set.

Data: benchmarks/data/recall_memories.jsonl (120 hand-written agent experiences,
60 Chinese + 60 English, 14 task types, with near-miss pairs such as weekly vs
monthly report, MySQL vs PostgreSQL, CSV vs Excel) and
benchmarks/data/recall_queries.jsonl (78 task descriptions with their relevant
memory ids, paraphrased rather than copied, plus 8 queries with no relevant
memory to calibrate a relevance floor).

Every variant runs through the shipped ``HindsightRetriever`` on a real embedded
store with the real MiniLM embedder; only the fusion setting, the BM25 tokenizer
and BM25 parameters change. Two rankings are scored:

* ``relevance``: the fused relevance alone (candidate generation quality);
* ``seed``: the full weighted score with the query's task type (what agents get).

Writes benchmarks/results/recall_quality.json and .md.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/recall_quality.py
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from langchain_hindsight._lexical import LexicalIndex, tokenize  # noqa: E402
from langchain_hindsight.embeddings import LocalEmbeddings  # noqa: E402
from langchain_hindsight.retriever import HindsightRetriever  # noqa: E402
from langchain_hindsight.scoring import ScoringWeights  # noqa: E402
from langchain_hindsight.store import MemoryStore  # noqa: E402
from langchain_hindsight.types import MemoryUnit  # noqa: E402

NOW = datetime(2026, 11, 1, tzinfo=UTC)
RELEVANCE_ONLY = ScoringWeights(similarity=1.0, task_type=0.0, confidence=0.0, access_cap=0.0, source=0.0)
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (ROOT / "data" / name).read_text(encoding="utf-8").splitlines() if line]


# ---------------------------------------------------------------- tokenizer variants
def tok_bigram_only(text: str) -> list[str]:
    """CJK bigrams only (no unigrams); English as the default."""
    out = []
    for t in tokenize(text):
        if _CJK_RUN.fullmatch(t) and len(t) == 1:
            continue
        out.append(t)
    return out


def tok_unigram_only(text: str) -> list[str]:
    return [t for t in tokenize(text) if not (_CJK_RUN.fullmatch(t) and len(t) == 2)]


def _jieba_words(text: str) -> list[str]:
    import rjieba

    words: list[str] = []
    for run in _CJK_RUN.findall(text):
        words.extend(w for w in rjieba.cut(run) if w.strip())
    return words


def tok_jieba(text: str) -> list[str]:
    """rjieba words for Chinese, the default tokenizer for the rest."""
    english = tokenize(_CJK_RUN.sub(" ", text))
    return english + _jieba_words(text)


def tok_jieba_plus_chars(text: str) -> list[str]:
    """rjieba words plus the default CJK unigrams and bigrams."""
    return tokenize(text) + _jieba_words(text)


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "char_uni+bi (default)": tokenize,
    "char_bigram_only": tok_bigram_only,
    "char_unigram_only": tok_unigram_only,
    "rjieba": tok_jieba,
    "rjieba+char_uni+bi": tok_jieba_plus_chars,
}


# ---------------------------------------------------------------- metrics
def metrics(rankings: dict[str, list[str]], queries: list[dict[str, Any]]) -> dict[str, float]:
    rows = [q for q in queries if q["relevant"]]
    out: dict[str, float] = {}
    for k in (1, 3, 5):
        out[f"recall@{k}"] = statistics.fmean(
            len(set(rankings[q["id"]][:k]) & set(q["relevant"])) / min(k, len(q["relevant"])) for q in rows
        )
    rr = []
    for q in rows:
        ranks = [r for r, i in enumerate(rankings[q["id"]][:10], 1) if i in q["relevant"]]
        rr.append(1.0 / ranks[0] if ranks else 0.0)
    out["mrr@10"] = statistics.fmean(rr)
    return out


def near_miss(
    rankings: dict[str, list[str]], queries: list[dict[str, Any]], memories: dict[str, dict[str, Any]]
) -> float:
    """Share of weekly/monthly-report queries whose top result has the query's report type."""
    rows = [q for q in queries if q["task_type"] in ("weekly_report", "monthly_report") and q["relevant"]]
    hits = [bool(rankings[q["id"]]) and memories[rankings[q["id"]][0]]["task_type"] == q["task_type"] for q in rows]
    return sum(hits) / len(rows)


def main() -> None:
    memories = load("recall_memories.jsonl")
    queries = load("recall_queries.jsonl")
    by_id = {m["id"]: m for m in memories}
    embeddings = LocalEmbeddings()
    results: dict[str, Any] = {
        "dataset": {
            "memories": len(memories),
            "queries_with_relevant": sum(1 for q in queries if q["relevant"]),
            "queries_without_relevant": sum(1 for q in queries if not q["relevant"]),
            "languages": sorted({m["lang"] for m in memories}),
        },
        "variants": [],
    }
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(tmp, embeddings=embeddings) as store:
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
        ns = store.namespace

        def set_index(tokenizer: Callable[[str], list[str]], k1: float, b: float) -> None:
            index = LexicalIndex(k1=k1, b=b, tokenizer=tokenizer)
            index.upsert(units)
            store._lexical[ns] = index

        def run(
            name: str,
            fusion: str,
            alpha: float = 0.5,
            tokenizer: str = "char_uni+bi (default)",
            k1: float = 1.2,
            b: float = 0.5,
        ) -> dict[str, Any]:
            set_index(TOKENIZERS[tokenizer], k1, b)
            row: dict[str, Any] = {
                "name": name,
                "fusion": fusion,
                "alpha": alpha,
                "tokenizer": tokenizer,
                "k1": k1,
                "b": b,
            }
            for mode, weights, use_type in (("relevance", RELEVANCE_ONLY, False), ("seed", ScoringWeights(), True)):
                retriever = HindsightRetriever(
                    store=store,
                    k=10,
                    fusion=fusion,
                    fusion_alpha=alpha,  # type: ignore[arg-type]
                    weights=weights,
                    low_similarity_threshold=0.0,
                )
                rankings: dict[str, list[str]] = {}
                top_rel: dict[str, float] = {}
                for q in queries:
                    got = retriever.recall(q["query"], task_type=q["task_type"] if use_type else None, now=NOW)
                    rankings[q["id"]] = [s.memory.memory_id for s in got]
                    top_rel[q["id"]] = got[0].similarity if got else 0.0
                for lang in ("all", "zh", "en"):
                    subset = [q for q in queries if lang == "all" or q["lang"] == lang]
                    for key, value in metrics(rankings, subset).items():
                        row[f"{mode}.{lang}.{key}"] = round(value, 4)
                row[f"{mode}.near_miss_top1"] = round(near_miss(rankings, queries, by_id), 4)
                if mode == "relevance":
                    pos = [
                        top_rel[q["id"]]
                        for q in queries
                        if q["relevant"] and rankings[q["id"]] and rankings[q["id"]][0] in q["relevant"]
                    ]
                    neg = [top_rel[q["id"]] for q in queries if not q["relevant"]]
                    row["top1_relevance_correct_p10"] = round(sorted(pos)[len(pos) // 10], 4)
                    row["top1_relevance_correct_min"] = round(min(pos), 4)
                    row["top1_relevance_negative_max"] = round(max(neg), 4)
                    row["top1_relevance_negative_mean"] = round(statistics.fmean(neg), 4)
            results["variants"].append(row)
            print(
                f"{name:48s} rel MRR {row['relevance.all.mrr@10']:.3f} (zh {row['relevance.zh.mrr@10']:.3f} "
                f"en {row['relevance.en.mrr@10']:.3f})  seed MRR {row['seed.all.mrr@10']:.3f} "
                f"R@5 {row['seed.all.recall@5']:.3f} near-miss {row['seed.near_miss_top1']:.2f}"
            )
            return row

        run("dense only", "dense")
        run("BM25 only", "lexical")
        run("RRF (c=60)", "rrf")
        for alpha in (0.3, 0.4, 0.5, 0.6, 0.7):
            run(f"convex (bm25/best) alpha={alpha}", "convex", alpha)
        for alpha in (0.3, 0.4, 0.5, 0.6, 0.7):
            run(f"convex_idf (bm25/idf mass) alpha={alpha}", "convex_idf", alpha)
        for tok in TOKENIZERS:
            if tok != "char_uni+bi (default)":
                run(f"BM25 only, {tok}", "lexical", tokenizer=tok)
                run(f"convex_idf alpha=0.5, {tok}", "convex_idf", 0.5, tokenizer=tok)
        for k1 in (0.9, 1.2, 1.5, 2.0):
            for b in (0.3, 0.5, 0.75):
                if (k1, b) != (1.2, 0.5):
                    run(f"convex_idf alpha=0.5, k1={k1} b={b}", "convex_idf", 0.5, k1=k1, b=b)

    out = ROOT / "results"
    out.mkdir(exist_ok=True)
    (out / "recall_quality.json").write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
    lines = [
        "# Recall quality (benchmarks/recall_quality.py)",
        "",
        f"Labelled set: {results['dataset']['memories']} memories (60 zh + 60 en, 14 task types, near-miss pairs, 40 hard negatives), "
        f"{results['dataset']['queries_with_relevant']} queries with relevant ids, "
        f"{results['dataset']['queries_without_relevant']} with none. Hand-written for this project (see the data files).",
        "Embedder: packaged all-MiniLM-L6-v2. `relevance` = fused relevance only; `seed` = full weighted score with "
        "the query's task type. near-miss = weekly/monthly queries whose top-1 has the right report type.",
        "",
        "| variant | rel MRR | rel MRR zh | rel MRR en | rel R@5 | seed MRR | seed R@1 | seed R@5 | near-miss top-1 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["variants"]:
        lines.append(
            f"| {r['name']} | {r['relevance.all.mrr@10']:.3f} | {r['relevance.zh.mrr@10']:.3f} | "
            f"{r['relevance.en.mrr@10']:.3f} | {r['relevance.all.recall@5']:.3f} | {r['seed.all.mrr@10']:.3f} | "
            f"{r['seed.all.recall@1']:.3f} | {r['seed.all.recall@5']:.3f} | {r['seed.near_miss_top1']:.2f} |"
        )
    lines += [
        "",
        "Relevance of the top-1 result (relevance mode): correct hits vs queries with no relevant memory",
        "",
        "| variant | correct p10 | correct min | negative mean | negative max |",
        "|---|---|---|---|---|",
    ]
    for r in results["variants"][:13]:
        lines.append(
            f"| {r['name']} | {r['top1_relevance_correct_p10']:.3f} | {r['top1_relevance_correct_min']:.3f} | "
            f"{r['top1_relevance_negative_mean']:.3f} | {r['top1_relevance_negative_max']:.3f} |"
        )
    (out / "recall_quality.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
