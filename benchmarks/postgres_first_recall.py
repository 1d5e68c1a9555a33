"""The Postgres store's first recall in a fresh process, and a longer process's recalls: today vs new, one run.

One database of ``--size`` memories (the ``mixed`` zh/en corpus, 896-d ``NgramEmbeddings`` vectors, so the
replica holds as many bytes as with the default embedder; written by backend bulk writes, then ``VACUUM
ANALYZE`` and the HNSW index built, as ``postgres_scale.py`` does). Each measurement is a fresh Python
process that opens ``MemoryStore`` on it and recalls through ``HindsightRetriever.recall`` (k=5):

* ``replica first`` (``replica_after=0``): what every process did before: the first search reads the
  namespace's replica whole (lexical index, vectors, records), then every recall reads it;
* ``database first`` (the default ``replica_after``): the first recalls are answered by the database in one
  statement (exact dense arm for a namespace the replica would mirror), and the one that reaches the count
  starts reading the replica in a thread; recall reads the replica once that read is taken in;
* ``database first, read after 1``: the same, the read started by the first recall (option "lazily in the
  background after the first recall");
* ``sql`` (``replica=False``): the database answers every recall.

Scenario ``one recall`` (a CLI call, a serverless invocation): open, one recall, close; ``--runs`` processes
per mode, the modes alternating. Scenario ``N recalls`` (a long-lived worker): ``--recalls`` recalls in one
process per mode; each recall's wall time and which path answered it. Both report wall time and the
process's CPU time (user + sys, every thread: the background read included) from after the imports to after
``close()``; the database server's CPU is not in it (it runs on this machine too). Then the answers: for
``--compare`` queries, the candidates ``hybrid_search`` gives from the database and from a read replica.

Writes benchmarks/results/postgres_first_recall.json and .md.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/postgres_first_recall.py [--size 10000] [--runs 5] [--recalls 300]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from _corpora import CORPORA  # noqa: E402
from postgres_scale import Server, bulk_write  # noqa: E402
from recall_scale import synthetic_units  # noqa: E402

from langchain_hindsight.store.backend.postgres import REPLICA_AFTER, PostgresBackend  # noqa: E402
from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402
from langchain_hindsight.store.replica.lexical import lexical_scheme  # noqa: E402
from tests.fakes import NgramEmbeddings  # noqa: E402

K = 5
DIM = 896
OUT = ROOT / "results"
MODES = {
    "replica first": {"replica": True, "replica_after": 0},
    "database first": {"replica": True, "replica_after": REPLICA_AFTER},
    "database first, read after 1": {"replica": True, "replica_after": 1},
    "sql": {"replica": False, "replica_after": 0},
}

_CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
from datetime import UTC, datetime
from langchain_hindsight.recall.retriever import HindsightRetriever
from langchain_hindsight.store.backend.postgres import PostgresBackend
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.store.replica.lexical import lexical_scheme
from tests.fakes import NgramEmbeddings

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

imported = time.perf_counter() - t0
c0, t0 = cpu(), time.perf_counter()
store = MemoryStore(backend=PostgresBackend({url!r}, lexical=lexical_scheme(), **{options!r}),
                    embeddings=NgramEmbeddings({dim}))
retriever = HindsightRetriever(store=store, k={k}, low_similarity_threshold=0.0)
opened = time.perf_counter() - t0
queries = {queries!r}
now = datetime(2026, 11, 1, tzinfo=UTC)
recalls, paths, first = [], [], None
for q in queries:
    t1 = time.perf_counter()
    found = retriever.recall(q, now=now)
    recalls.append((time.perf_counter() - t1) * 1000)
    paths.append("replica" if store.namespace in store._replica.synced else "database")
    first = first or [m.memory.content for m in found]
c1, t1 = cpu(), time.perf_counter()
store.close()
store.backend.close()
closed = time.perf_counter() - t1
print(json.dumps({{"import_s": imported, "open_ms": opened * 1000, "recall_ms": recalls, "paths": paths,
                  "close_ms": closed * 1000, "cpu_s": cpu() - c0, "cpu_recalls_s": c1 - c0,
                  "wall_s": time.perf_counter() - t0, "first": first}}))
"""


def child(url: str, options: dict[str, Any], queries: list[str]) -> dict[str, Any]:
    """One fresh process: open the store, recall ``queries`` in turn, close; what it measured."""
    script = _CHILD.format(root=str(ROOT.parent), url=url, options=options, dim=DIM, k=K, queries=queries)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        raise RuntimeError(f"the measured process failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def fill(server: Server, size: int, n_queries: int) -> tuple[str, list[str], dict[str, Any]]:
    """A database of ``size`` memories, its HNSW index built and statistics current; the queries; what it cost."""
    texts, queries = CORPORA["mixed"](size, n_queries)
    emb = NgramEmbeddings(DIM)
    url = server.database()
    info: dict[str, Any] = {}
    rng = random.Random(size)
    t0 = time.perf_counter()
    with MemoryStore(backend=PostgresBackend(url, lexical=lexical_scheme(), replica=False), embeddings=emb) as store:
        for start in range(0, size, 2000):
            chunk = texts[start : start + 2000]
            bulk_write(store, synthetic_units(chunk, start, rng), emb.embed_documents(chunk))
        info["fill_s"] = round(time.perf_counter() - t0, 1)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE hindsight.records")
            conn.execute("VACUUM ANALYZE hindsight.postings")
        t0 = time.perf_counter()
        store.search_by_vector(emb.embed_query(queries[0]), k=K)  # builds the HNSW index (dedupe would, too)
        info["index_build_s"] = round(time.perf_counter() - t0, 1)
        store.backend.close()
    return url, queries, info


def compare(url: str, queries: list[str]) -> dict[str, Any]:
    """``hybrid_search`` candidates from the database (no replica read) and from a read replica, per query."""
    emb = NgramEmbeddings(DIM)
    backends = [PostgresBackend(url, lexical=lexical_scheme(), replica_after=a) for a in (0, 10**9)]
    same = same_sims = 0
    max_gap = 0.0
    differs: list[dict[str, Any]] = []
    try:
        with (
            MemoryStore(backend=backends[0], embeddings=emb) as replica,
            MemoryStore(backend=backends[1], embeddings=emb) as first,
        ):
            for q in queries:
                vector = emb.embed_query(q)
                want, want_lexical = replica.hybrid_search(q, vector, k=3 * K, normalize=True)
                got, got_lexical = first.hybrid_search(q, vector, k=3 * K, normalize=True)
                if list(got) == list(want) and list(got_lexical) == list(want_lexical):
                    same += 1
                # the same similarities in the same places: what differs is which of equal ones came first
                # (the first k are the dense arm, in order; the rest are lexical matches it did not return)
                a = [s for _, s in list(want.values())[: 3 * K]]
                b = [s for _, s in list(got.values())[: 3 * K]]
                tied = len(a) == len(b) and all(abs(x - y) <= 1e-6 for x, y in zip(a, b, strict=True))
                same_sims += tied and list(got_lexical) == list(want_lexical)
                if list(got) != list(want) and not tied:
                    differs.append(
                        {
                            "query": q,
                            "lexical_same": list(got_lexical) == list(want_lexical),
                            "replica": [(i[-6:], round(s, 7)) for i, (_, s) in want.items()],
                            "database": [(i[-6:], round(s, 7)) for i, (_, s) in got.items()],
                        }
                    )
                for i in set(got) & set(want):
                    max_gap = max(max_gap, abs(got[i][1] - want[i][1]))
            assert first._replica.synced == {}
    finally:
        for b in backends:
            b.close()
    return {
        "queries": len(queries),
        "identical": same,
        "same_similarities": same_sims,
        "max_sim_diff": max_gap,
        "differs": differs,
    }


def _p(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def markdown(r: dict[str, Any]) -> str:
    one = r["one_recall"]
    lines = [
        "# Postgres: the first recall in a fresh process",
        "",
        f"{r['machine']}; {r['postgres']}; {r['size']:,} memories (the `mixed` zh/en corpus, {DIM}-d vectors), "
        f"k={K}, `HindsightRetriever.recall` in a fresh Python process per measurement, the modes alternating. "
        f"`replica first`: `replica_after=0`, how every process recalled before (the first search reads the "
        f"namespace's replica whole); `database first`: the default `replica_after={r['replica_after']}` (the "
        "database answers the first recalls in one statement each, and the recall that reaches the count starts "
        "reading the replica in a thread); `read after 1`: the read started by the first recall; `sql`: "
        "`replica=False`. CPU: the process's user + sys time, every thread, from after the imports to after "
        f"`close()` (the database server's is not in it). Load average {r['load_avg']}.",
        "",
        f"## One recall, then close ({one['runs']} processes per mode)",
        "",
        "| mode | first recall p50 (min–max) | open + recall + close p50 | CPU p50 | close p50 | ÷ replica first (recall / CPU) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    base = one["modes"]["replica first"]
    for name, m in one["modes"].items():
        ratio = f"{m['first_ms_p50'] / base['first_ms_p50']:.3f}x / {m['cpu_s_p50'] / base['cpu_s_p50']:.2f}x"
        lines.append(
            f"| {name} | {m['first_ms_p50']:.1f} ms ({m['first_ms_min']:.1f}–{m['first_ms_max']:.1f}) "
            f"| {m['wall_ms_p50']:.0f} ms | {m['cpu_s_p50']:.2f} s | {m['close_ms_p50']:.1f} ms | {ratio} |"
        )
    many = r["many_recalls"]
    lines += [
        "",
        f"## Many recalls in one process ({many['recalls']})",
        "",
        "| mode | answered by the database | recall p50 / p95 while the database answers | p50 / p95 while the "
        "replica is read | p50 / p95 from the replica | all recalls + close: wall / CPU |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, m in many["modes"].items():

        def cell(part: dict[str, float] | None) -> str:
            return "–" if not part else f"{part['p50']:.1f} / {part['p95']:.1f} ms ({part['n']})"

        lines.append(
            f"| {name} | {m['database_recalls']} | {cell(m.get('database'))} | {cell(m.get('reading'))} "
            f"| {cell(m.get('replica'))} | {m['wall_s']:.2f} s / {m['cpu_s']:.2f} s |"
        )
    c = r["compare"]
    lines += [
        "",
        '(`(n)`: how many recalls; "while the replica is read": recalls answered by the database after the read '
        "started, before it was taken in; a replica-first process's first recall, which reads it, is in its "
        '"from the replica" column.)',
        "",
        f"Same answers: on {c['queries']} queries, `hybrid_search` (k={3 * K}, normalised) from the database "
        f"before the replica is read gave the read replica's candidates and lexical scores in the same order "
        f"for {c['identical']}; the same lexical matches and the same similarity at every rank of the dense arm "
        f"(within 1e-6) for {c['same_similarities']}: the others differ only in which of equally similar memories "
        "comes first (numpy's and pgvector's float32 sums differ by up to "
        f"{c['max_sim_diff']:.1e}), and so in which lexical matches are added beside them."
        + (f" Queries that differ otherwise: {len(c['differs'])} (listed in the JSON)." if c["differs"] else ""),
        "",
        f"Fill: {r['fill']['fill_s']} s bulk, HNSW index {r['fill']['index_build_s']} s (once per database).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--recalls", type=int, default=300)
    parser.add_argument("--compare", type=int, default=50)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = Server()
    version = server.version()
    load = os.getloadavg()[0]
    try:
        url, queries, info = fill(server, args.size, max(args.recalls, args.compare))
        print(f"filled {args.size}: {info}", flush=True)
        one: dict[str, list[dict[str, Any]]] = {name: [] for name in MODES}
        for run in range(args.runs):
            for name, options in MODES.items():
                one[name].append(child(url, options, [queries[run]]))
                print(f"  one recall, {name}: {one[name][-1]['recall_ms'][0]:.1f} ms", flush=True)
        many: dict[str, dict[str, Any]] = {}
        for name, options in MODES.items():
            many[name] = child(url, options, queries[: args.recalls])
            print(f"  {args.recalls} recalls, {name}: {many[name]['wall_s']:.2f} s", flush=True)
        compared = compare(url, queries[: args.compare])
        print(f"  compare: {compared}", flush=True)
    finally:
        server.close()
    results = {
        "measured_at": datetime.now(UTC).isoformat(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared)",
        "postgres": version,
        "size": args.size,
        "replica_after": REPLICA_AFTER,
        "fill": info,
        "load_avg": f"{load:.1f} → {os.getloadavg()[0]:.1f}",
        "one_recall": {"runs": args.runs, "modes": {n: _one(rs) for n, rs in one.items()}, "raw": _raw(one)},
        "many_recalls": {
            "recalls": args.recalls,
            "modes": {n: _many(m, MODES[n]["replica_after"]) for n, m in many.items()},
        },
        "compare": compared,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "postgres_first_recall.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    (OUT / "postgres_first_recall.md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))


def _raw(one: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, float]]]:
    """Each one-recall process's own numbers (its recall, wall, CPU and close time)."""
    keep = ("open_ms", "close_ms", "cpu_s", "wall_s")
    return {
        name: [{"recall_ms": round(r["recall_ms"][0], 1), **{k: round(r[k], 3) for k in keep}} for r in runs]
        for name, runs in one.items()
    }


def _one(runs: list[dict[str, Any]]) -> dict[str, float]:
    first = [r["recall_ms"][0] for r in runs]
    return {
        "first_ms_p50": statistics.median(first),
        "first_ms_min": min(first),
        "first_ms_max": max(first),
        "wall_ms_p50": statistics.median(r["wall_s"] * 1000 for r in runs),
        "cpu_s_p50": statistics.median(r["cpu_s"] for r in runs),
        "close_ms_p50": statistics.median(r["close_ms"] for r in runs),
        "open_ms_p50": statistics.median(r["open_ms"] for r in runs),
    }


def _many(m: dict[str, Any], after: int) -> dict[str, Any]:
    """Recall times split by what answered: the database before the read started, while it ran, the replica."""
    times, paths = m["recall_ms"], m["paths"]
    parts: dict[str, list[float]] = {"database": [], "reading": [], "replica": []}
    for i, (t, p) in enumerate(zip(times, paths, strict=True)):
        if p == "replica":
            parts["replica"].append(t)
        elif after and i >= after:  # the after-th recall (index after - 1) started the read
            parts["reading"].append(t)
        else:
            parts["database"].append(t)
    out: dict[str, Any] = {
        "database_recalls": sum(p == "database" for p in paths),
        "wall_s": m["wall_s"],
        "cpu_s": m["cpu_s"],
        "recall_ms": [round(t, 1) for t in times],
        "paths": "".join("r" if p == "replica" else "d" for p in paths),  # d: the database answered, r: the replica
    }
    for name, values in parts.items():
        if values:
            out[name] = {"p50": statistics.median(values), "p95": _p(values, 0.95), "n": len(values)}
    return out


if __name__ == "__main__":
    main()
