"""Recall latency at 1k / 10k / 100k memories next to a raw Chroma query on the same data.

Corpus: embedding 100k texts with the default embedder takes far too long on 2 cores, so the
corpus vectors are synthesised: ~2,000 real sentences (the labelled memories
plus sentences composed from realistic agent-experience fragments, Chinese and
English) are embedded for real with ``MemoryStore()``'s default embedder; every further memory
is a normalised noisy mix of two real vectors (0.7·a + 0.3·b + N(0, 0.02²) per
dimension, renormalised) whose text is the two source texts' fragments joined,
so the lexical arm indexes realistic text too. Queries (the labelled queries,
cycled) are embedded for real on every call (query cache disabled).

Measured per size, same store, same run:
* ``chroma``: raw ``collection.query`` with a precomputed vector (n_results=k);
* ``embed+chroma``: query embedding + raw Chroma query (the baseline a plain
  vector-store retriever pays);
* ``recall``: ``HindsightRetriever.recall`` (embedding + dense arm with 3k
  over-fetch + BM25 arm + id lookup + scoring), k=5.

Writes benchmarks/results/recall_latency.json and .md.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/recall_latency.py [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import json
import random
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

from _stats import summary  # noqa: E402

from langchain_hindsight.recall.retriever import HindsightRetriever  # noqa: E402
from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402
from langchain_hindsight.types import MemoryUnit  # noqa: E402

K = 5
QUERIES_PER_SIZE = 300
WARMUP = 20
TASK_TYPES = [
    "data_cleaning",
    "data_analysis",
    "weekly_report",
    "monthly_report",
    "code_generation",
    "api_call",
    "web_search",
    "file_operation",
    "database_query",
    "document_writing",
]
ZH_SUBJECT = [
    "读取CSV文件时",
    "调用支付接口时",
    "生成周报时",
    "生成月报时",
    "查询MySQL订单表时",
    "解压zip文件时",
    "写爬虫时",
    "分析留存率时",
    "导出大表时",
    "翻译说明书时",
    "清洗手机号时",
    "调用大模型接口时",
]
ZH_ADVICE = [
    "要先指定编码为utf-8-sig",
    "需要加指数退避重试",
    "数据范围取上周一到周日",
    "先按主键分批读取",
    "不要对索引列使用函数",
    "先用Sniffer检测分隔符",
    "要设置超时和User-Agent",
    "先刷新token再请求",
    "分母用当日新增用户数",
    "术语要对照术语表",
    "先去掉+86前缀",
    "长文本要先按token切分",
]
ZH_REASON = [
    "否则会乱码。",
    "否则会返回429。",
    "否则会内存溢出。",
    "否则结果会错位。",
    "用户上次因此返工。",
    "否则会被拒绝访问。",
    "否则统计口径不一致。",
    "否则会超时。",
]
EN_SUBJECT = [
    "When reading the CRM export",
    "When calling the Stripe API",
    "For the weekly report",
    "For the monthly business review",
    "When querying BigQuery",
    "When uploading to S3",
    "When writing React components",
    "When analysing churn",
    "When posting to Slack",
    "When parsing log timestamps",
    "When cleaning phone numbers",
    "When querying Elasticsearch",
]
EN_ADVICE = [
    "use sep=';' and decimal=','",
    "send an Idempotency-Key header",
    "cover the previous ISO week",
    "filter on the partition column",
    "use multipart upload",
    "type every prop",
    "exclude trial users",
    "look up the channel ID first",
    "pass dayfirst=True",
    "normalise to E.164",
    "add a time range filter",
    "batch requests in groups of 100",
]
EN_REASON = [
    "or the numbers come out as text.",
    "or retries charge twice.",
    "as the manager asked.",
    "or the query times out.",
    "or costs explode.",
    "or the request is rejected.",
    "because the user corrected this once.",
    "or the counts double.",
]


def real_texts(rng: random.Random, n: int) -> list[str]:
    memories = [json.loads(line)["content"] for line in (ROOT / "data/recall_memories.jsonl").read_text().splitlines()]
    texts = list(memories)
    seen = set(texts)
    while len(texts) < n:
        if rng.random() < 0.5:
            t = rng.choice(ZH_SUBJECT) + "，" + rng.choice(ZH_ADVICE) + "，" + rng.choice(ZH_REASON)
        else:
            t = f"{rng.choice(EN_SUBJECT)}, {rng.choice(EN_ADVICE)}, {rng.choice(EN_REASON)}"
        t += f" (case {len(texts)})"
        if t not in seen:
            seen.add(t)
            texts.append(t)
    return texts


class TableEmbeddings(Embeddings):
    """Documents: precomputed vectors looked up by text. Queries: the real model."""

    def __init__(self, table: dict[str, list[float]], real: Embeddings) -> None:
        self.table = table
        self.real = real

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.real.embed_query(text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--real", type=int, default=2000)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(7)
    np_rng = np.random.default_rng(7)
    from recall_scale import default_embedder

    real = default_embedder()  # MemoryStore()'s default, query cache off: every query is embedded for real
    t0 = time.perf_counter()
    base_texts = real_texts(rng, args.real)
    base_vecs = np.asarray(real.embed_documents(base_texts), dtype=np.float32)
    embed_seconds = time.perf_counter() - t0
    queries = [json.loads(line)["query"] for line in (ROOT / "data/recall_queries.jsonl").read_text().splitlines()]
    now = datetime(2026, 11, 1, tzinfo=UTC)
    results: dict[str, Any] = {
        "machine": {"cpus": 2, "python": sys.version.split()[0]},
        "corpus": {
            "real_embedded_texts": len(base_texts),
            "real_embedding_seconds": round(embed_seconds, 1),
            "synthetic_mix": "normalise(0.7*a + 0.3*b + N(0, 0.02^2)); text = fragments of a and b",
        },
        "k": K,
        "queries_per_size": QUERIES_PER_SIZE,
        "sizes": {},
    }
    for size in sizes:
        texts: list[str] = []
        vecs: list[np.ndarray] = []
        for i in range(size):
            if i < len(base_texts):
                texts.append(base_texts[i])
                vecs.append(base_vecs[i])
                continue
            a, b = rng.randrange(len(base_texts)), rng.randrange(len(base_texts))
            v = 0.7 * base_vecs[a] + 0.3 * base_vecs[b] + np_rng.normal(0, 0.02, base_vecs.shape[1])
            vecs.append((v / np.linalg.norm(v)).astype(np.float32))
            texts.append(f"{base_texts[a][:60]} {base_texts[b][-40:]} #{i}")
        table = {t: v.tolist() for t, v in zip(texts, vecs, strict=True)}
        with tempfile.TemporaryDirectory() as tmp, MemoryStore(tmp, embeddings=TableEmbeddings(table, real)) as store:
            t0 = time.perf_counter()
            batch = 5000
            for start in range(0, size, batch):
                store.add_many(
                    [
                        MemoryUnit(
                            content=t,
                            task_type=TASK_TYPES[(start + j) % len(TASK_TYPES)],
                            confidence=round(0.4 + 0.5 * rng.random(), 2),
                            created_at=now,
                            last_accessed_at=now,
                        )
                        for j, t in enumerate(texts[start : start + batch])
                    ],
                    dedupe=False,
                )
            load_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            store.lexical_search("warm up the index", k=1)
            index_s = time.perf_counter() - t0
            col = store.collection(store.namespace, create=True)
            retriever = HindsightRetriever(store=store, k=K, low_similarity_threshold=0.0)
            timings: dict[str, list[float]] = {
                "chroma": [],
                "embed+chroma": [],
                "recall": [],
                "embed": [],
                "dense_arm": [],
                "lexical_arm": [],
            }
            for n in range(WARMUP + QUERIES_PER_SIZE):
                q = queries[n % len(queries)]
                task_type = TASK_TYPES[n % len(TASK_TYPES)]
                t0 = time.perf_counter()
                vec = real.embed_query(q)
                t1 = time.perf_counter()
                col.query(query_embeddings=[vec], n_results=K, include=["documents", "metadatas", "distances"])
                t2 = time.perf_counter()
                store.search_by_vector(vec, k=3 * K)
                t3 = time.perf_counter()
                store.lexical_search(q, k=3 * K, normalize=True)
                t4 = time.perf_counter()
                retriever.recall(q, task_type=task_type, now=now)
                t5 = time.perf_counter()
                if n >= WARMUP:
                    timings["embed"].append((t1 - t0) * 1000)
                    timings["chroma"].append((t2 - t1) * 1000)
                    timings["embed+chroma"].append((t2 - t0) * 1000)
                    timings["dense_arm"].append((t3 - t2) * 1000)
                    timings["lexical_arm"].append((t4 - t3) * 1000)
                    timings["recall"].append((t5 - t4) * 1000)
            row = {name: summary(ms) for name, ms in timings.items()}
            row["load_seconds"] = round(load_s, 1)
            row["lexical_index_build_seconds"] = round(index_s, 2)
            row["ratio_recall_vs_embed+chroma_p50"] = round(row["recall"]["p50_ms"] / row["embed+chroma"]["p50_ms"], 2)
            row["ratio_recall_vs_embed+chroma_p95"] = round(row["recall"]["p95_ms"] / row["embed+chroma"]["p95_ms"], 2)
            row["ratio_recall_vs_chroma_p50"] = round(row["recall"]["p50_ms"] / row["chroma"]["p50_ms"], 1)
            results["sizes"][str(size)] = row
            print(
                f"{size:>7}: recall p50 {row['recall']['p50_ms']:.1f} p95 {row['recall']['p95_ms']:.1f} ms | "
                f"embed+chroma p50 {row['embed+chroma']['p50_ms']:.1f} p95 {row['embed+chroma']['p95_ms']:.1f} | "
                f"chroma p50 {row['chroma']['p50_ms']:.2f} | lexical p50 {row['lexical_arm']['p50_ms']:.2f} "
                f"p95 {row['lexical_arm']['p95_ms']:.2f} | load {load_s:.0f}s",
                flush=True,
            )
    out = ROOT / "results"
    out.mkdir(exist_ok=True)
    (out / "recall_latency.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    lines = [
        "# Recall latency (benchmarks/recall_latency.py)",
        "",
        f"2-core CPU, k={K}, {QUERIES_PER_SIZE} queries per size after {WARMUP} warm-up queries, query embedding "
        f"for real on every call ({getattr(real, 'identity', type(real).__name__)}, cache off). Corpus vectors: "
        f"{len(base_texts)} real embeddings of zh/en agent-experience sentences, the rest normalised noisy "
        "mixes of two real vectors (see the module docstring).",
        "",
        "| memories | recall p50 | recall p95 | embed+chroma p50 | embed+chroma p95 | ratio p50 | ratio p95 "
        "| chroma only p50 | embed p50 | dense arm p50 | lexical arm p50 / p95 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size, r in results["sizes"].items():
        lines.append(
            f"| {int(size):,} | {r['recall']['p50_ms']:.1f} ms | {r['recall']['p95_ms']:.1f} ms | "
            f"{r['embed+chroma']['p50_ms']:.1f} ms | {r['embed+chroma']['p95_ms']:.1f} ms | "
            f"{r['ratio_recall_vs_embed+chroma_p50']}x | {r['ratio_recall_vs_embed+chroma_p95']}x | "
            f"{r['chroma']['p50_ms']:.2f} ms | {r['embed']['p50_ms']:.1f} ms | {r['dense_arm']['p50_ms']:.2f} ms | "
            f"{r['lexical_arm']['p50_ms']:.2f} / {r['lexical_arm']['p95_ms']:.2f} ms |"
        )
    (out / "recall_latency.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
