"""Postgres lexical arm: where its time goes, and how much of it exact top-k pruning (MaxScore) could save.

The lexical arm (``PostgresRecords._lexical_ctes``) reads every posting of every query term, sums each
record's weights and keeps the top ``k`` with ties. MaxScore-style pruning keeps the answer exact while
skipping the commonest terms: a term adds less than ``idf * (k1 + 1)`` to any score, so once the ``k``-th
best score is known, the commonest terms whose bounds sum below it cannot lift a record holding only them
into the top ``k``; only the other terms' postings must be read whole (the skipped terms are then looked up
for the surviving records). This script measures, on a database filled with the ``mixed`` zh/en corpus of
``recall_scale.py`` (what ``postgres_scale.py`` measures recall on):

* the share of each query's postings such pruning must still read whole **with the exact threshold given
  for free** (the true ``k``-th best score: no implementation can do better at term granularity);
* the lexical statement's time, and its parts, interleaved per query: reading the query terms' postings
  alone (``postings``), reading and summing them per record with the top-``k`` cut (``sums``), and the whole
  ``MemoryStore.lexical_search`` (naming the records, normalising).

Vectors are not needed: records are written by ``postgres_scale.bulk_write`` with small random vectors.
Writes benchmarks/results/postgres_lexical_pruning.json and .md.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/postgres_lexical_pruning.py [--size 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from _corpora import CORPORA  # noqa: E402
from _stats import summary  # noqa: E402
from postgres_scale import Server, bulk_write  # noqa: E402
from recall_scale import synthetic_units  # noqa: E402

from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402
from tests.fakes import HashEmbeddings  # noqa: E402

K = 15  # the depth postgres_scale.py asks of the lexical arm (3 x recall's k)
OUT = ROOT / "results"


def fill(url: str, size: int, texts: list[str], batch: int = 2000) -> MemoryStore:
    """A store on ``url`` holding ``texts`` (bulk writes, 8-d random vectors), vacuumed and analysed."""
    store = MemoryStore(database_url=url, embeddings=HashEmbeddings())
    rng = random.Random(size)
    vectors = np.random.default_rng(size).normal(size=(batch, 8)).astype(np.float32)
    for start in range(0, size, batch):
        chunk = texts[start : start + batch]
        bulk_write(store, synthetic_units(chunk, start, rng), vectors[: len(chunk)])
    with psycopg.connect(url, autocommit=True) as conn:  # what autovacuum does within a minute of a bulk load
        for table in ("records", "postings", "lexical_terms"):
            conn.execute(f"VACUUM ANALYZE hindsight.{table}")
    return store


def oracle_share(terms: list[tuple[float, float]], kth: float, k1: float) -> tuple[float, float, int]:
    """Postings read whole by exact term-level pruning given the true ``k``-th score ``kth``: (those postings, all
    postings, terms skipped). ``terms`` are ``(idf, df)``; a term is skipped when its bound and those of every
    commoner term sum below ``kth``.
    """
    reach = 0.0
    read = skipped = 0
    for idf, df in sorted(terms):  # commonest (lowest idf) first
        reach += idf * (k1 + 1.0)
        if reach >= kth:
            read += int(df)
        else:
            skipped += 1
    return read, sum(int(df) for _, df in terms), skipped


def measure(store: MemoryStore, url: str, queries: list[str]) -> dict[str, Any]:
    col = store.collection(store.namespace)
    assert col is not None
    k1 = store.backend.lexical.k1
    parts = {
        "postings": "SELECT count(*) FROM idf i JOIN hindsight.postings m"
        f" ON m.collection_id = {int(col.instance)} AND m.term = i.term",
        "sums": "SELECT count(*), min(score) FROM best",
    }
    ms: dict[str, list[float]] = {name: [] for name in (*parts, "lexical_search")}
    shares: list[float] = []
    read_total = all_total = 0
    skipped: list[int] = []
    n_terms: list[int] = []
    n_postings: list[int] = []
    names = [*parts, "lexical_search"]
    with psycopg.connect(url, autocommit=True) as conn:  # the store lends no connection of its own
        for rep in range(2):  # the first pass warms the caches and lets psycopg prepare the statements
            for n, q in enumerate(queries):
                ctes, params, terms = col._lexical_ctes(q, K, True)
                if not terms:
                    continue
                for name in names[n % len(names) :] + names[: n % len(names)]:
                    t0 = time.perf_counter()
                    if name == "lexical_search":
                        store.lexical_search(q, k=K, normalize=True)
                    else:
                        conn.execute(f"WITH {ctes} {parts[name]}", params).fetchall()
                    if rep:
                        ms[name].append((time.perf_counter() - t0) * 1000)
                if rep:
                    row = conn.execute(
                        f"WITH {ctes} SELECT (SELECT min(score) FROM best),"
                        " (SELECT json_agg(json_build_array(i.idf, d.df)) FROM idf i JOIN df d USING (term))",
                        params,
                    ).fetchone()
                    if row is None or row[0] is None:
                        continue
                    read, total, gone = oracle_share([(float(a), float(b)) for a, b in row[1]], float(row[0]), k1)
                    read_total += read
                    all_total += total
                    shares.append(read / total)
                    skipped.append(gone)
                    n_terms.append(len(row[1]))
                    n_postings.append(total)
    return {
        "queries_scored": len(shares),
        "terms_per_query_p50": statistics.median(n_terms),
        "postings_per_query_p50": statistics.median(n_postings),
        "postings_per_query_p95": sorted(n_postings)[int(0.95 * (len(n_postings) - 1))],
        "oracle_read_share_of_all_postings": round(read_total / all_total, 3),
        "oracle_read_share_p50": round(statistics.median(shares), 3),
        "oracle_terms_skipped_p50": statistics.median(skipped),
        **{name: summary(values) for name, values in ms.items()},
    }


def markdown(r: dict[str, Any]) -> str:
    ms = {name: r[name] for name in ("postings", "sums", "lexical_search")}
    return "\n".join(
        [
            "# Postgres lexical arm: time and the headroom of exact top-k pruning",
            "",
            f"{r['postgres']}; {r['size']:,} memories of the `mixed` zh/en corpus, {r['queries_scored']} queries, "
            f"depth k={K}, normalised; load average {r['load_avg']} (the machine is shared). Median query: "
            f"{r['terms_per_query_p50']:.0f} terms, {r['postings_per_query_p50']:,.0f} postings (p95 "
            f"{r['postings_per_query_p95']:,}).",
            "",
            "Exact term-level pruning (MaxScore) given the true k-th best score for free: it must still read "
            f"{r['oracle_read_share_of_all_postings']:.0%} of all the queries' postings whole (median query "
            f"{r['oracle_read_share_p50']:.0%}, {r['oracle_terms_skipped_p50']:.0f} term(s) skipped), and then "
            "look the skipped terms up for every record that can still reach the cut.",
            "",
            "| part (interleaved per query) | p50 | p95 | mean |",
            "|---|---:|---:|---:|",
            *(
                f"| {label} | {ms[name]['p50_ms']:.1f} ms | {ms[name]['p95_ms']:.1f} ms | {ms[name]['mean_ms']:.1f} ms |"
                for name, label in (
                    ("postings", "read the query terms' postings (count only)"),
                    ("sums", "read them, sum per record, top-k cut with ties"),
                    ("lexical_search", "`MemoryStore.lexical_search` (the statement, naming the records)"),
                )
            ),
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", default="postgres_lexical_pruning")
    args = parser.parse_args()
    server = Server()
    try:
        texts, queries = CORPORA["mixed"](args.size, args.queries)
        t0 = time.perf_counter()
        url = server.database()
        store = fill(url, args.size, texts)
        print(f"filled {args.size:,} in {time.perf_counter() - t0:.0f} s", flush=True)
        load = os.getloadavg()[0]
        try:
            result = measure(store, url, queries)
        finally:
            store.close()
        result.update(
            size=args.size,
            postgres=server.version(),
            load_avg=f"{load:.1f} → {os.getloadavg()[0]:.1f}",
            measured_at=datetime.now(UTC).isoformat(),
        )
    finally:
        server.close()
    OUT.mkdir(exist_ok=True)
    (OUT / f"{args.out}.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    (OUT / f"{args.out}.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
