"""A PostgreSQL :class:`~langchain_hindsight.store.backend.base.Backend`: many writers, many machines, one database.

What keeps writers apart is the database, not a lock file (docs/storage.md, "PostgreSQL"): a write plan is one
transaction under an advisory lock on its namespace (:meth:`PostgresBackend.atomic`), and recall is one statement
(:meth:`PostgresRecords.hybrid_query`) that sees every write committed before it began. The dense arm is pgvector's
HNSW cosine index (one partial index per collection, built by its first dense query); the lexical arm is BM25 in SQL
over ``postings`` of the store's own tokens (:class:`~langchain_hindsight.store.backend.base.LexicalScheme`), so the
scores equal the in-process index's, with corpus statistics that triggers keep in the writing transaction. Tables
and migrations: :mod:`._pg_schema`. Hard delete: :meth:`PostgresBackend.erase`.

Example:
    >>> store = MemoryStore(database_url="postgresql://user@db/hindsight")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import random
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import numpy as np

from langchain_hindsight.errors import BackendError, ConfigurationError, HindsightError
from langchain_hindsight.store.backend._pg_connect import (
    CONNECT_TIMEOUT,
    POOL_WAIT,
    connect_kwargs,
    describe,
    probe,
    redact,
)
from langchain_hindsight.store.backend._pg_filter import SqlFilter
from langchain_hindsight.store.backend._pg_schema import SCHEMA, migrate, set_meta
from langchain_hindsight.store.backend.base import (
    Backend,
    HybridRows,
    Include,
    LexicalScheme,
    Metadata,
    Records,
    Rows,
    Vector,
    bm25_idf,
    check_n_results,
    check_write,
)

__all__ = ["PostgresBackend", "PostgresRecords"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

_ERASE_OWED = "erase_owed"
"""``meta`` key of the note that deleted rows wait for :meth:`PostgresBackend.erase` (see ``owe_erase``)."""

_RETRIES = 8
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
"""The namespace lock of a write plan (see :meth:`PostgresBackend.atomic`), released at commit or rollback."""
_COLLECTIONS = "SELECT id, name, metadata, dimension, indexed FROM hindsight.collections"
_LOOKED_UP = 8
"""The most collection names one key's plan reads with its lock."""
_EF_SEARCH = 100
"""HNSW candidate list of every pooled session (``hnsw.ef_search``); a deeper query widens it for itself."""
_WORK_MEM_MB = 64
"""Each pooled session's ``work_mem``: the lexical arm's postings and per-record sums (about 80,000 postings a
query at 100k memories) stay in memory instead of spilling to temporary files (the server default is 4 MB)."""
_NEAREST_BY_INDEX = "SET LOCAL enable_sort = off"
"""Set in the transaction of a filtered nearest-neighbour query (a write plan's dedupe): the planner cannot estimate
a ``jsonb`` filter, so it expects a handful of matches and sorts them all by distance, reading every record of the
collection (~90 ms a query at 10k memories, growing with the store). Without a sort, the only plan is the HNSW index
scan, which with iterative scans filters as it walks the graph and stops at ``n_results`` matches."""
_SCAN_BUDGET = 400
"""Index entries a filtered HNSW scan visits at most (``hnsw.max_scan_tuples``; pgvector's default is 20,000). A
common scope fills ``n_results`` within a few dozen; one the scan cannot fill by then (a task type with few units,
such as a new one) is answered exactly from the metadata index instead. Walking the whole graph for it made one
``add()`` take 124 ms (p95) beyond its embedding at 10k memories and 435 ms at 100k; budgeted, 20 ms and 24 ms
(``benchmarks/postgres_scale.py``)."""
_FIELDS = {"documents": "document", "metadatas": "metadata", "embeddings": "vector_send(embedding)"}
"""The column each included field reads, in this order (a vector in the binary form of :func:`_vector_dumper`)."""
_MAX_CONNECTIONS = 8
"""Most connections the pool opens (one per concurrent call); it keeps one open."""
_BUILD_MEMORY_MB = 1024
"""The most ``maintenance_work_mem`` an HNSW index build asks for (the graph of 100k 896-d vectors needs ~600 MB)."""


def _transient(e: BaseException) -> bool:
    """A failure that a retry of the whole transaction can cure (serialization failure, deadlock)."""
    return getattr(e, "sqlstate", None) in ("40001", "40P01")


class _VectorParam:
    """A vector sent as a query parameter in pgvector's binary form (see :func:`_vector_dumper`).

    psycopg would send a list of floats as a text array, quoting each one in Python (~9 ms at 896 dimensions).
    """

    __slots__ = ("values",)

    def __init__(self, values: Vector | Any) -> None:
        self.values = np.asarray(values, dtype=">f4").reshape(-1)


def _vector_dumper(psycopg: Any) -> type:
    """The psycopg dumper of :class:`_VectorParam`: pgvector's binary input (``uint16`` dimension,
    ``uint16`` unused, big-endian ``float4`` values), sent untyped so the statement's ``::vector`` cast types it.
    """  # noqa: D205

    class VectorDumper(psycopg.adapt.Dumper):  # type: ignore[misc,name-defined]
        format = psycopg.pq.Format.BINARY

        def dump(self, obj: _VectorParam) -> bytes:
            return struct.pack(">HH", obj.values.size, 0) + obj.values.tobytes()

    return VectorDumper


class PostgresRecords(Records):
    """One collection: the rows of ``hindsight.records`` with its ``collection_id``."""

    def __init__(self, backend: PostgresBackend, row: Sequence[Any]) -> None:
        """``row``: the collection's row of ``hindsight.collections`` (:data:`_COLLECTIONS`)."""
        self._backend = backend
        self._cid = int(row[0])
        self._name: str = row[1]
        self._metadata = dict(row[2])
        self._dim: int | None = row[3]
        self._indexed = bool(row[4])

    @property
    def name(self) -> str:
        """The collection's name."""
        return self._name

    @property
    def instance(self) -> str:
        """The collection's row id (a collection created again under the same name has another)."""
        return str(self._cid)

    @property
    def metadata(self) -> dict[str, Any]:
        """The collection's metadata (a copy, as read when the collection was opened or last modified)."""
        return dict(self._metadata)

    # ------------------------------------------------------------------ reads
    def _columns(self, include: Sequence[Include]) -> str:
        return ", ".join(["id", *(column for field, column in _FIELDS.items() if field in include)])

    def _rows_out(self, rows: list[tuple[Any, ...]], include: Sequence[Include]) -> Rows:
        out: Rows = {"ids": [r[0] for r in rows], "documents": None, "metadatas": None, "embeddings": None}
        for j, field in enumerate([field for field in _FIELDS if field in include], 1):
            out[field] = [r[j] for r in rows]
        if out["metadatas"] is not None:
            out["metadatas"] = [dict(m) for m in out["metadatas"]]
        if out["embeddings"] is not None:
            vectors = [np.frombuffer(v, dtype=">f4", offset=4).astype(np.float32) for v in out["embeddings"]]
            out["embeddings"] = np.stack(vectors) if rows else np.zeros((0, self._dim or 0), np.float32)
        return out

    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
        include: Sequence[Include] = ("documents", "metadatas"),
        limit: int | None = None,
        offset: int | None = None,
    ) -> Rows:
        """See :meth:`Records.get` (insertion order; with ``ids``, their order)."""
        f = SqlFilter(self._backend.psycopg)
        clauses = [f"collection_id = {self._cid}"]
        order = "seq"
        if ids is not None:
            wanted = list(dict.fromkeys(ids))
            if not wanted:
                return self._rows_out([], include)
            f.params.append(wanted)
            clauses.append("id = ANY(%s::text[])")
            order = "array_position(%s::text[], id)"
        clauses += [f.where(where), f.document(where_document)]
        params = [*f.params, wanted] if ids is not None else f.params
        sql = f"SELECT {self._columns(include)} FROM hindsight.records WHERE {' AND '.join(clauses)} ORDER BY {order}"
        if limit is not None:
            sql += " LIMIT %s"
            params.append(int(limit))
        if offset:
            sql += " OFFSET %s"
            params.append(int(offset))
        rows = self._backend.run(lambda conn: conn.execute(sql, params, binary=True).fetchall(), "get")
        return self._rows_out(rows, include)

    def query(
        self,
        *,
        query_embeddings: Sequence[Vector],
        n_results: int,
        where: Mapping[str, Any] | None = None,
        include: Sequence[Include] = ("documents", "metadatas", "distances"),
    ) -> Rows:
        """See :meth:`Records.query` (pgvector's HNSW cosine index; iterative scans under a filter)."""
        check_n_results(n_results)
        dim = self.dimension()
        f = SqlFilter(self._backend.psycopg)
        clause = f.where(where)
        sql = _nearest_sql(self._cid, dim, self._columns(include), clause)
        filtered = clause != "TRUE"

        vectors = [self._probe(q, dim) for q in query_embeddings]

        def run(conn: Any) -> list[list[tuple[Any, ...]]]:
            if n_results > _EF_SEARCH:  # the session's candidate list is shorter than asked: widen it
                conn.execute(f"SET LOCAL hnsw.ef_search = {int(n_results)}")
            if not dim:
                return [[] for _ in vectors]
            if not filtered:
                return [conn.execute(sql, [v, *f.params, n_results], binary=True).fetchall() for v in vectors]
            # a filter: the HNSW scan, never a sort of every matching record (see _NEAREST_BY_INDEX), up to its budget
            with conn.pipeline():
                conn.execute(_NEAREST_BY_INDEX)
                conn.execute(f"SET LOCAL hnsw.max_scan_tuples = {_SCAN_BUDGET}")
                cursors = [conn.execute(sql, [v, *f.params, n_results], binary=True) for v in vectors]
                conn.execute("SET LOCAL enable_sort TO DEFAULT")  # for the plan's later statements
                conn.execute("SET LOCAL hnsw.max_scan_tuples TO DEFAULT")
            found = [cur.fetchall() for cur in cursors]
            short = [i for i, rows in enumerate(found) if len(rows) < n_results]
            if short:  # a scope the scan could not fill within its budget: its exact nearest
                by_scope = _nearest_sql(self._cid, dim, self._columns(include), clause, exact=True)
                with conn.pipeline():
                    conn.execute("SET LOCAL enable_indexscan = off")  # its rows through the metadata index, then sorted
                    exact = {i: conn.execute(by_scope, [vectors[i], *f.params, n_results], binary=True) for i in short}
                    conn.execute("SET LOCAL enable_indexscan TO DEFAULT")
                for i, cur in exact.items():
                    found[i] = cur.fetchall()
            return found

        found = self._backend.run(run, "query", write=n_results > _EF_SEARCH or filtered)
        shaped = [self._rows_out([r[:-1] for r in rows], include) for rows in found]
        out: Rows = {key: [s[key] for s in shaped] for key in ("ids", "documents", "metadatas", "embeddings")}
        out["distances"] = [[float(r[-1]) for r in rows] for rows in found]
        return {key: column if key == "ids" or key in include else None for key, column in out.items()}

    def _lexical_ctes(self, query: str, k: int, normalize: bool) -> tuple[str, dict[str, Any], list[int]]:
        """The lexical arm as SQL common table expressions, their parameters and the query's term keys.

        ``stats`` is the corpus size and total length, ``df`` each query term's document frequency, ``lex`` the ``k``
        best ``(id, score)``. ``best`` sums each record's terms grouped by its number (``seq``) and keeps the records
        scoring at least the ``k``-th best score; only those are named, so ties at the cut are broken by id.
        """
        scheme = self._backend.lexical
        terms = [_term_key(w) for w in sorted(set(scheme.query_terms(query)))]
        cid = self._cid
        sql = (
            "stats AS (SELECT coalesce(max(n), 0)::float8 AS n, coalesce(max(total), 0)::float8 AS total"
            f" FROM hindsight.lexical_stats WHERE collection_id = {cid}),"
            " df AS MATERIALIZED (SELECT term, df::float8 AS df FROM hindsight.lexical_terms"
            f" WHERE collection_id = {cid} AND term = ANY(%(terms)s::bigint[])),"
            " idf AS MATERIALIZED (SELECT term, ln(1.0 + (s.n + %(prior)s - df.df + 0.5) / (df.df + 0.5)) AS idf,"
            " %(k1)s * (1.0 - %(b)s) AS base, %(k1)s * %(b)s / (CASE WHEN s.total > 0 THEN s.total / s.n ELSE 1.0 END)"
            " AS per_len FROM df CROSS JOIN stats s),"
            " best AS MATERIALIZED (SELECT m.seq,"
            " sum(i.idf * m.tf * (%(k1)s + 1.0) / (m.tf + (i.base + i.per_len * m.len))) AS score"
            f" FROM idf i JOIN hindsight.postings m ON m.collection_id = {cid} AND m.term = i.term"
            " GROUP BY m.seq ORDER BY score DESC FETCH FIRST %(k)s ROWS WITH TIES),"
            " lex AS (SELECT r.id, b.score FROM best b JOIN hindsight.records r ON r.seq = b.seq"
            # the records by number, as one array: read by key, whatever the planner guesses of the ties
            f" WHERE r.collection_id = {cid} AND r.seq = ANY(ARRAY(SELECT seq FROM best))"
            ' ORDER BY b.score DESC, r.id COLLATE "C" LIMIT %(k)s)'
        )
        prior = float(scheme.prior_documents if normalize else 0)
        return sql, {"terms": terms, "prior": prior, "k1": scheme.k1, "b": scheme.b, "k": k}, terms

    def _lexical_scores(
        self, scored: list[tuple[str, float]], rows: list[Any], terms: list[int], normalize: bool
    ) -> list[tuple[str, float]]:
        """``scored`` (best first), normalised as the in-process index does: a share of the query's idf mass.

        ``rows`` end with the corpus size and the query terms' document frequencies (as both statements return them).
        """
        if not normalize or not scored:
            return scored
        corpus = float(rows[0][-2]) + self._backend.lexical.prior_documents
        mass = sum(bm25_idf(corpus, float((rows[0][-1] or {}).get(str(t), 0.0))) for t in terms)
        if mass <= 0:
            return scored
        return [(i, min(1.0, score / mass)) for i, score in scored]

    def lexical_search(self, query: str, k: int, *, normalize: bool = False) -> list[tuple[str, float]]:
        """BM25 over the collection's lexically indexed records, computed by the database (see the module doc)."""
        if k <= 0:
            return []
        ctes, params, terms = self._lexical_ctes(query, k, normalize)
        if not terms:
            return []
        sql = (
            f"WITH {ctes} SELECT id, score, (SELECT n FROM stats), (SELECT json_object_agg(term, df) FROM df)"
            ' FROM lex ORDER BY score DESC, id COLLATE "C"'
        )
        rows = self._backend.run(lambda conn: conn.execute(sql, params).fetchall(), "lexical search")
        return self._lexical_scores([(r[0], float(r[1])) for r in rows], rows, terms, normalize)

    def hybrid_query(self, query: str, vector: Vector, *, k: int, nearest: int, normalize: bool = False) -> HybridRows:
        """See :meth:`Records.hybrid_query`: both arms and every candidate's record in one SQL statement.

        The arms are :meth:`query`'s HNSW scan (without a filter) and :meth:`lexical_search`'s BM25; the statement
        then reads each candidate's document, metadata and inner product with ``vector``.
        """
        dim = self.dimension() if k > 0 and nearest > 0 else None
        if dim is None:  # nothing asked, or nothing stored yet
            return HybridRows([], [], {})
        probe = self._probe(vector, dim)
        ctes, params, terms = self._lexical_ctes(query, k, normalize)
        cast = f"::vector({dim})"
        sql = (
            f"WITH {ctes}, dense AS MATERIALIZED (SELECT id, embedding{cast} <=> %(v)s{cast} AS distance"
            f" FROM hindsight.records WHERE collection_id = {self._cid} ORDER BY distance LIMIT %(n)s),"
            " candidates AS (SELECT id FROM dense UNION SELECT id FROM lex)"
            " SELECT r.id, r.document, r.metadata, d.distance, -(r.embedding" + cast + " <#> %(v)s" + cast + "),"
            " l.score, (SELECT n FROM stats), (SELECT json_object_agg(term, df) FROM df)"
            f" FROM candidates c JOIN hindsight.records r ON r.collection_id = {self._cid} AND r.id = c.id"
            " LEFT JOIN dense d ON d.id = c.id LEFT JOIN lex l ON l.id = c.id"
        )
        params.update(v=probe, n=nearest)

        def run(conn: Any) -> list[tuple[Any, ...]]:
            if nearest > _EF_SEARCH:  # the session's candidate list is shorter than asked: widen it
                conn.execute(f"SET LOCAL hnsw.ef_search = {int(nearest)}")
            return conn.execute(sql, params, binary=True).fetchall()  # type: ignore[no-any-return]

        rows = self._backend.run(run, "hybrid query", write=nearest > _EF_SEARCH)
        dense = sorted(((r[0], float(r[3])) for r in rows if r[3] is not None), key=lambda x: (x[1], x[0]))
        records = {r[0]: (r[1], dict(r[2]), float(r[4])) for r in rows}
        scored = [(r[0], float(r[5])) for r in rows if r[5] is not None]
        scored.sort(key=lambda x: (-x[1], x[0].encode()))  # ties by id, COLLATE "C"
        return HybridRows(dense, self._lexical_scores(scored, rows, terms, normalize), records)

    def _probe(self, vector: Vector, dim: int | None) -> _VectorParam:
        """``vector`` as a query parameter, checked against the collection's vector length ``dim`` (if known)."""
        probe = _VectorParam(vector)
        if dim and probe.values.size != dim:
            raise BackendError(
                f"collection {self._name!r} holds {dim}-dimensional vectors, got {probe.values.size} dimensions"
            )
        return probe

    def dimension(self) -> int | None:
        """The collection's vector length (``None`` before its first write), its HNSW index built if missing.

        The first dense query builds the index, not the first write: a bulk load then costs one build (pgvector
        builds a graph several times faster than it inserts into one); later writes insert. Inside a write plan the
        query reads every record instead and the build waits for the plan's commit (:meth:`PostgresBackend.atomic`):
        a build locks the whole records table against every namespace's writes until its transaction ends, and two
        plans building at once deadlock.
        """
        if self._dim is not None and self._indexed:
            return self._dim

        row = self._backend.one(
            "read collection", "SELECT dimension, indexed FROM hindsight.collections WHERE id = %s", [self._cid]
        )
        if row is None or row[0] is None:
            return None
        dim = self._dim = int(row[0])
        if not row[1]:
            if self._backend.build_after_plan(self):  # inside a write plan: built after its commit
                return dim
            self._backend.run(lambda conn: self._build_index(conn, dim), "build the vector index", write=True)
        self._indexed = True
        return self._dim

    def _build_index(self, conn: Any, dim: int) -> None:
        """Build the collection's HNSW index in one pass (with room to hold the graph in memory) if still missing."""
        locked = conn.execute(  # another process may be building it: wait, then look again
            "SELECT indexed FROM hindsight.collections WHERE id = %s FOR UPDATE", [self._cid]
        ).fetchone()
        if locked is None or locked[0]:
            return
        (n,) = conn.execute("SELECT count(*) FROM hindsight.records WHERE collection_id = %s", [self._cid]).fetchone()
        need_mb = int(n * (dim * 4 + 256) * 1.5 / 2**20) + 64  # vectors + neighbour lists, with slack
        conn.execute(f"SET LOCAL maintenance_work_mem = '{min(max(need_mb, 64), _BUILD_MEMORY_MB)}MB'")
        t0 = time.perf_counter()
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS records_hnsw_{self._cid} ON hindsight.records"
            f" USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE collection_id = {self._cid}"
        )
        conn.execute("UPDATE hindsight.collections SET indexed = true WHERE id = %s", [self._cid])
        took = time.perf_counter() - t0
        logger.info("built the vector index of collection %r (%d records) in %.1f s", self._name, n, took)

    # ------------------------------------------------------------------ writes
    def _ensure_dimension(self, conn: Any, dim: int) -> None:
        """Record the collection's vector length at its first write (and check it at every later one)."""
        if self._dim is None:
            row = conn.execute(
                "SELECT dimension FROM hindsight.collections WHERE id = %s FOR UPDATE", [self._cid]
            ).fetchone()
            if row is None:
                raise BackendError(f"collection {self._name!r} does not exist (dropped by another process?)")
            if row[0] is None:  # its HNSW index is built by the first dense query (see dimension)
                conn.execute("UPDATE hindsight.collections SET dimension = %s WHERE id = %s", [dim, self._cid])
                row = (dim,)
            self._dim = int(row[0])
        if dim != self._dim:
            raise BackendError(f"collection {self._name!r} holds {self._dim}-dimensional vectors, got {dim} dimensions")

    def _rows(self, records: list[tuple[str, _VectorParam | None, str | None, dict[str, Any]]]) -> tuple[Any, Any]:
        """The records as rows of :data:`_UPSERT`/:data:`_UPDATE` (a ``None`` vector keeps the stored), and postings."""
        jsonb = self._backend.psycopg.types.json.Jsonb
        postings = {i: _lexical(self._backend.lexical, document, metadata) for i, _, document, metadata in records}
        return [(v, d, jsonb(m), postings[i][0], self._cid, i) for i, v, d, m in records], postings

    def _write(self, conn: Any, sql: str, rows: list[tuple[Any, ...]], postings: Mapping[str, Any]) -> None:
        """``sql`` for each of ``rows`` and the records' postings, in one round trip (see :meth:`_rows`)."""
        for row in rows:
            if row[0] is not None:
                self._ensure_dimension(conn, row[0].values.size)
        if rows:
            with conn.pipeline(), conn.cursor() as cur:
                cur.executemany(sql, rows)
                _write_postings(conn, self._cid, postings)

    def _write_columns(
        self,
        ids: Sequence[str],
        embeddings: Sequence[Vector] | Any | None,
        documents: Sequence[str] | None,
        metadatas: Sequence[Metadata] | None,
        *,
        whole: bool,
    ) -> None:
        """See :meth:`Records._write_columns`: one transaction.

        An upsert keeps a re-written record's place in the order; an update locks the stored rows it changes.
        """
        ids = check_write(self._name, ids, embeddings, documents, metadatas)
        if not ids:
            return
        metas: Sequence[Metadata] = [{}] * len(ids) if metadatas is None else metadatas
        if whole:
            docs: Sequence[str | None] = [None] * len(ids) if documents is None else documents
            vectors = cast(Sequence[Vector], embeddings)  # an upsert's are required
            rows, postings = self._rows(
                [(i, _VectorParam(v), d, dict(m)) for i, v, d, m in zip(ids, vectors, docs, metas, strict=True)]
            )
            self._backend.run(lambda conn: self._write(conn, _UPSERT, rows, postings), "upsert", write=True)
            return
        probes = [None] * len(ids) if embeddings is None else [_VectorParam(v) for v in embeddings]

        def write(conn: Any) -> None:
            sql = (
                "SELECT id, document, metadata FROM hindsight.records"
                " WHERE collection_id = %s AND id = ANY(%s::text[]) ORDER BY id FOR UPDATE"
            )
            found = {r[0]: (r[1], r[2]) for r in conn.execute(sql, [self._cid, ids]).fetchall()}
            rows, postings = self._rows(
                [
                    (i, v, found[i][0] if documents is None else documents[j], {**found[i][1], **metas[j]})
                    for j, (i, v) in enumerate(zip(ids, probes, strict=True))
                    if i in found
                ]
            )
            self._write(conn, _UPDATE, rows, postings)

        self._backend.run(write, "update", write=True)

    def delete(self, *, ids: Sequence[str]) -> None:
        """See :meth:`Records.delete` (the rows are dead at once; their bytes go at the next erase)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return
        sql = "DELETE FROM hindsight.records WHERE collection_id = %s AND id = ANY(%s::text[])"
        self._backend.run(lambda conn: conn.execute(sql, [self._cid, wanted]), "delete", write=True)

    def count(self) -> int:
        """See :meth:`Records.count`."""
        sql = "SELECT count(*) FROM hindsight.records WHERE collection_id = %s"
        return int(self._backend.one("count", sql, [self._cid])[0])

    def modify(self, *, name: str | None = None, metadata: Metadata | None = None) -> None:
        """See :meth:`Records.modify`."""
        jsonb = self._backend.psycopg.types.json.Jsonb

        def write(conn: Any) -> None:
            if name is not None and name != self._name:
                if conn.execute("SELECT 1 FROM hindsight.collections WHERE name = %s", [name]).fetchone():
                    raise BackendError(f"collection {name!r} already exists")
                conn.execute("UPDATE hindsight.collections SET name = %s WHERE id = %s", [name, self._cid])
            if metadata is not None:
                conn.execute(
                    "UPDATE hindsight.collections SET metadata = %s WHERE id = %s", [jsonb(dict(metadata)), self._cid]
                )

        self._backend.run(write, "modify", write=True)
        if name is not None:
            self._name = name
        if metadata is not None:
            self._metadata = dict(metadata)


_UPSERT = (
    "INSERT INTO hindsight.records (embedding, document, metadata, lex_len, collection_id, id)"
    " VALUES (%s::vector, %s, %s, %s, %s, %s) ON CONFLICT (collection_id, id) DO UPDATE SET"
    " embedding = EXCLUDED.embedding, document = EXCLUDED.document, metadata = EXCLUDED.metadata,"
    " lex_len = EXCLUDED.lex_len"
)
_UPDATE = (
    "UPDATE hindsight.records SET embedding = coalesce(%s::vector, embedding), document = %s, metadata = %s,"
    " lex_len = %s WHERE collection_id = %s AND id = %s"
)


def _nearest_sql(cid: int, dim: int | None, columns: str, clause: str, *, exact: bool = False) -> str:
    """The statement of :meth:`PostgresRecords.query`: ``columns`` and the distance of the ``n`` records of
    collection ``cid`` nearest to a vector (parameters: the vector, the filter's, ``n``) that match ``clause``.

    ``exact``: the form that reads the filter's rows through the metadata index (``collection_id + 0`` keeps the
    planner from reading every record of the collection through its own index instead), for a small scope.
    """  # noqa: D205
    cast = f"::vector({dim})"
    collection = f"collection_id + 0 = {cid}" if exact else f"collection_id = {cid}"
    return (
        f"WITH hits AS MATERIALIZED (SELECT {columns}, embedding{cast} <=> %s{cast} AS distance"
        f" FROM hindsight.records WHERE {collection} AND {clause}"
        " ORDER BY distance LIMIT %s) SELECT * FROM hits ORDER BY distance, id"
    )


def _configure(conn: Any, *, dumper: type) -> None:
    """Every pooled session's settings (iterative index scans: a filtered query still finds ``n_results`` matches)."""
    conn.adapters.register_dumper(_VectorParam, dumper)
    conn.execute(f"SET work_mem = '{_WORK_MEM_MB}MB'")
    conn.execute(f"SET hnsw.ef_search = {_EF_SEARCH}")
    conn.execute("SET hnsw.iterative_scan = relaxed_order")


def _lexical(
    scheme: LexicalScheme, document: str | None, metadata: Mapping[str, Any]
) -> tuple[int | None, list[tuple[int, int]]]:
    """A record's token count and its postings ``(term key, count)`` (``None, []``: not lexically indexed)."""
    tokens = scheme.record_tokens(document, metadata)
    if tokens is None:
        return None, []
    return len(tokens), list(Counter(_term_key(t) for t in tokens).items())


def _write_postings(conn: Any, cid: int, postings: Mapping[str, tuple[int | None, list[tuple[int, int]]]]) -> None:
    """Replace the postings of the records of collection ``cid`` that ``postings`` names: one statement each way.

    A posting names its record by number (``seq``), read from the record's row in the same statement.
    """
    conn.execute(
        "DELETE FROM hindsight.postings p USING hindsight.records r"
        " WHERE r.collection_id = %(cid)s AND r.id = ANY(%(ids)s::text[])"
        " AND p.collection_id = %(cid)s AND p.seq = r.seq",
        {"cid": cid, "ids": list(postings)},
    )
    rows = [(i, term, tf, length) for i, (length, counted) in postings.items() for term, tf in counted]
    if not rows:
        return
    ids, terms, tfs, lens = (list(c) for c in zip(*rows, strict=True))
    conn.execute(
        "INSERT INTO hindsight.postings (collection_id, term, seq, tf, len)"
        " SELECT %(cid)s, v.term, r.seq, v.tf, v.len"
        " FROM unnest(%(ids)s::text[], %(terms)s::bigint[], %(tfs)s::int[], %(lens)s::int[])"
        " AS v(id, term, tf, len)"
        " JOIN hindsight.records r ON r.collection_id = %(cid)s AND r.id = v.id",
        {"cid": cid, "ids": ids, "terms": terms, "tfs": tfs, "lens": lens},
    )


def _term_key(term: str) -> int:
    """A lexical term's 64-bit key in ``postings.term`` (a hash: compact, compared as an integer)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest(), "big", signed=True)


class PostgresBackend(Backend):
    """Collections in a PostgreSQL database with pgvector (see the module docstring).

    Args:
        url: A libpq connection string or URL (``postgresql://user:pass@host:5432/db``).
        lexical: How records become lexical terms and queries become query terms (the store's
            tokenizer; ``MemoryStore(database_url=...)`` passes its own). Required: every
            process writing one database must index the same terms.
        connect_timeout: Seconds a new connection waits for the server (default ``_pg_connect.CONNECT_TIMEOUT``,
            5; a ``connect_timeout`` in the URL wins). A free pooled connection is waited for at least 10 s.

    Raises:
        ConfigurationError: psycopg is not installed, or ``url`` is not a Postgres URL.
        DatabaseConnectionError: the first connection failed (the message names host, port, database, user).
        BackendError: the server lacks pgvector, or holds a newer schema.
    """

    lexical: LexicalScheme

    def __init__(self, url: str, *, lexical: LexicalScheme, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://", "host=", "dbname=")):
            shown = redact(url, url) if isinstance(url, str) else type(url).__name__
            raise ConfigurationError(f"database_url must be a postgresql:// URL, got {shown!r}")
        if not isinstance(lexical, LexicalScheme):
            raise ConfigurationError("lexical must be a LexicalScheme (MemoryStore(database_url=...) passes one)")
        try:
            import psycopg
            import psycopg_pool
        except ImportError as e:  # pragma: no cover - depends on the installed extras
            raise ConfigurationError(
                "a Postgres database needs psycopg 3 and psycopg-pool: pip install 'langchain-hindsight[postgres]'"
            ) from e
        self.psycopg: Any = psycopg
        self.lexical = lexical
        self._url = url
        self._local = threading.local()
        self._looked_up: dict[str, list[str]] = {}
        """Per :meth:`atomic` key, the collections its last plan looked up (read with its lock by the next)."""
        self._closed = False
        probe(self.psycopg, url, connect_timeout)  # one plain connection first: a wrong URL fails fast and quietly
        try:
            self._pool = psycopg_pool.ConnectionPool(
                url,
                min_size=1,
                max_size=_MAX_CONNECTIONS,
                timeout=max(connect_timeout, POOL_WAIT),
                kwargs=connect_kwargs(url, connect_timeout),
                configure=functools.partial(_configure, dumper=_vector_dumper(self.psycopg)),
                name="hindsight",
                open=False,
            )
            self._pool.open(wait=True, timeout=max(connect_timeout, POOL_WAIT))
        except Exception as e:
            raise BackendError(f"cannot connect to the Postgres {describe(url)}: {redact(str(e), url)}") from e
        try:  # create or upgrade the schema, re-tokenising when the tokenizer changed
            self._retrying(
                lambda conn: migrate(conn, self.psycopg, lexical.signature, self._retokenise), "schema migration"
            )
        except BaseException:
            self._pool.close()
            raise

    # ------------------------------------------------------------------ connections and transactions
    def run(self, fn: Callable[[Any], _T], what: str, *, write: bool = False) -> _T:
        """``fn(connection)``: inside the current :meth:`atomic` transaction, else on a pooled connection.

        Outside :meth:`atomic`, a ``write`` runs in a transaction of its own (retried after a serialization failure
        or deadlock); a read runs as it is (autocommit: one round trip). A dropped connection is retried once.
        Failures raise :class:`BackendError` (chained).
        """
        if (conn := getattr(self._local, "conn", None)) is not None:
            if write:  # it may change a collection: the plan's later look-ups read the database again
                self._local.read = None
            try:
                return fn(conn)
            except self.psycopg.Error as e:
                if _transient(e):
                    raise  # the enclosing atomic() retries the whole plan
                raise BackendError(f"postgres {what} failed: {e}") from e
        return self._retrying(fn, what, write=write)

    def one(self, what: str, sql: str, params: Sequence[Any]) -> Any:
        """The first row (or ``None``) of the read ``sql``, run as :meth:`run` runs a read."""
        return self.run(lambda conn: conn.execute(sql, params).fetchone(), what)

    def _retrying(self, fn: Callable[[Any], _T], what: str, *, write: bool = True) -> _T:
        """``fn(connection)`` on a pooled connection, in a transaction if ``write``, retried as :meth:`run` says."""
        if self._closed:
            raise BackendError("the Postgres backend is closed")
        for attempt in range(_RETRIES):
            try:
                with self._pool.connection() as conn, conn.transaction() if write else contextlib.nullcontext():
                    return fn(conn)
            except HindsightError:
                raise
            except self.psycopg.Error as e:  # the pool's PoolTimeout and PoolClosed too (OperationalErrors)
                # a connection the server closed (restart, idle timeout): the pool discards it, a retry gets another
                dropped = isinstance(e, self.psycopg.OperationalError) and e.sqlstate in (None, "57P01")
                if (_transient(e) or (attempt == 0 and dropped)) and attempt + 1 < _RETRIES:
                    logger.info("postgres %s: %s; retrying (attempt %d)", what, e.sqlstate, attempt + 2)
                    time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
                    continue
                raise BackendError(f"postgres {what} failed: {e}") from e
        raise BackendError(f"postgres {what} failed after {_RETRIES} attempts")  # pragma: no cover

    def atomic(self, key: str, fn: Callable[[], _T]) -> _T:
        """``fn()`` with every backend call inside it in one transaction, serialised with others on ``key``.

        A transaction-scoped advisory lock on ``key`` (the namespace) makes two processes' plans on it run one after
        the other; a serialization failure or deadlock re-runs ``fn`` from the start (it re-reads what it planned
        on). Nested calls join the outer transaction and take their own key's lock too. The lock is held until the
        commit, so round trips are kept few: the transaction's start, the lock and the collections the last plan on
        ``key`` looked up (:meth:`get_collection`, which the store asks under the lock whether another process
        replaced them) are one round trip, and those look-ups are then answered from it. A vector index its queries
        found missing is built after the commit (see :meth:`PostgresRecords.dimension`).
        """
        if (conn := getattr(self._local, "conn", None)) is not None:
            conn.execute(_LOCK, [key])
            return fn()
        deferred: list[PostgresRecords] = []
        self._local.unindexed = deferred
        try:
            result = self._retrying(lambda conn: self._plan(conn, key, fn), f"write plan on {key!r}", write=False)
        finally:
            self._local.unindexed = None
        for col in dict.fromkeys(deferred):  # the vector indexes the plan's queries found missing, each on its own
            try:
                col.dimension()
            except BackendError as e:  # the write is committed: a later search builds the index
                logger.warning("write plan on %r: building the vector index of %r failed: %s", key, col.name, e)
        return result

    def build_after_plan(self, col: PostgresRecords) -> bool:
        """Inside a write plan, keep ``col`` to build its vector index after the commit (:meth:`atomic`), else False."""
        deferred = getattr(self._local, "unindexed", None)
        if deferred is not None:
            deferred.append(col)
        return deferred is not None

    def _plan(self, conn: Any, key: str, fn: Callable[[], _T]) -> _T:
        """One try of :meth:`atomic`: begin, lock and read the collections in one round trip, ``fn()``, commit."""
        names = self._looked_up.get(key, [])
        with conn.pipeline():
            conn.execute("BEGIN")
            conn.execute(_LOCK, [key])
            found = conn.execute(_COLLECTIONS + " WHERE name = ANY(%s::text[])", [names]) if names else None
        self._local.read = dict.fromkeys(names)
        self._local.read.update((row[1], row) for row in (found.fetchall() if found is not None else ()))
        self._local.asked = []
        self._local.conn = conn
        try:
            result = fn()
            try:
                conn.execute("COMMIT")
            except self.psycopg.Error as e:  # only a refused commit is re-run: a lost reply may hide a commit
                if _transient(e):
                    raise
                raise BackendError(f"postgres commit of the write plan on {key!r} failed: {e}") from e
        except BaseException:
            if not conn.closed:
                with contextlib.suppress(self.psycopg.Error):
                    conn.execute("ROLLBACK")
            raise
        finally:
            self._local.conn = None
            self._local.read = None
        self._looked_up[key] = list(dict.fromkeys(self._local.asked))[:_LOOKED_UP]
        return result

    # ------------------------------------------------------------------ schema
    def _retokenise(self, conn: Any) -> None:
        """Recompute every record's lexical postings (the tokenizer changed)."""
        rows = conn.execute(f"SELECT collection_id, id, document, metadata FROM {SCHEMA}.records").fetchall()
        by_collection: dict[int, dict[str, tuple[int | None, list[tuple[int, int]]]]] = {}
        for cid, memory_id, document, metadata in rows:
            by_collection.setdefault(cid, {})[memory_id] = _lexical(self.lexical, document, metadata)
        for cid, postings in by_collection.items():
            _write_postings(conn, cid, postings)
            conn.execute(
                f"UPDATE {SCHEMA}.records r SET lex_len = v.len FROM unnest(%s::text[], %s::int[]) AS v(id, len)"
                " WHERE r.collection_id = %s AND r.id = v.id",
                [list(postings), [p[0] for p in postings.values()], cid],
            )

    # ------------------------------------------------------------------ collections
    def get_collection(self, name: str) -> PostgresRecords | None:
        """See :meth:`Backend.get_collection`."""
        read: dict[str, Any] = {}
        if getattr(self._local, "conn", None) is not None:  # inside a write plan (atomic)
            self._local.asked.append(name)
            read = self._local.read or {}
        row = read[name] if name in read else self.one("get_collection", _COLLECTIONS + " WHERE name = %s", [name])
        return None if row is None else PostgresRecords(self, row)

    def create_collection(self, name: str, metadata: Metadata, *, like: Records | None = None) -> PostgresRecords:
        """See :meth:`Backend.create_collection` (``like`` changes nothing: every collection is HNSW cosine)."""
        jsonb = self.psycopg.types.json.Jsonb

        def create(conn: Any) -> tuple[Any, ...]:
            row = conn.execute(
                f"INSERT INTO {SCHEMA}.collections (name, metadata) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING"
                " RETURNING id, name, metadata, dimension, indexed",
                [name, jsonb(dict(metadata))],
            ).fetchone()
            if row is None:
                raise BackendError(f"collection {name!r} already exists")
            return tuple(row)

        return PostgresRecords(self, self.run(create, "create_collection", write=True))

    def list_collections(self) -> list[Records]:
        """See :meth:`Backend.list_collections`."""
        rows = self.run(lambda conn: conn.execute(_COLLECTIONS + " ORDER BY id").fetchall(), "list_collections")
        return [PostgresRecords(self, r) for r in rows]

    def delete_collection(self, name: str) -> None:
        """See :meth:`Backend.delete_collection` (its records and its HNSW index go with it)."""

        def drop(conn: Any) -> None:
            row = conn.execute(f"DELETE FROM {SCHEMA}.collections WHERE name = %s RETURNING id", [name]).fetchone()
            if row is None:
                raise BackendError(f"collection {name!r} does not exist")
            conn.execute(f"DROP INDEX IF EXISTS {SCHEMA}.records_hnsw_{int(row[0])}")
            conn.execute(f"DELETE FROM {SCHEMA}.lexical_stats WHERE collection_id = %s", [row[0]])
            conn.execute(f"DELETE FROM {SCHEMA}.lexical_terms WHERE collection_id = %s", [row[0]])

        self.run(drop, "delete_collection", write=True)

    # ------------------------------------------------------------------ properties
    @property
    def single_writer(self) -> bool:
        """False: any number of processes and hosts write the same database."""
        return False

    @property
    def can_erase(self) -> bool:
        """True: :meth:`erase` rewrites the tables and drops the WAL that held deleted rows."""
        return True

    def erase(self, rebuild: Sequence[str] | None) -> None:
        """Physically erase deleted rows: ``VACUUM FULL`` the tables, then drop the WAL that held them.

        ``VACUUM FULL`` writes new files of live rows (others wait for its lock); then WAL recycling is turned off and
        the WAL switched and checkpointed twice, so the segments that held the rows are unlinked, not reused. That
        needs a superuser (or ``pg_checkpoint`` and grants); else a warning says what is left. ``rebuild`` is ignored:
        every collection lives in one table, rewritten whole.
        """
        if self._closed:
            raise BackendError("the Postgres backend is closed")
        try:
            with self.psycopg.connect(self._url, autocommit=True) as conn:
                owed = conn.execute(f"SELECT value FROM {SCHEMA}.meta WHERE key = %s", [_ERASE_OWED]).fetchone()
                for table in ("records", "postings", "collections"):
                    conn.execute(f"VACUUM (FULL, ANALYZE) {SCHEMA}.{table}")
                try:
                    superuser = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
                    if superuser and superuser[0]:
                        recycle = conn.execute("SHOW wal_recycle").fetchone()
                        if recycle and recycle[0] != "off":
                            conn.execute("ALTER SYSTEM SET wal_recycle = off")
                            conn.execute("SELECT pg_reload_conf()")
                            time.sleep(0.05)  # the checkpointer reads the reloaded setting
                    for _ in range(2):
                        conn.execute("SELECT pg_switch_wal()")
                        conn.execute("CHECKPOINT")
                except self.psycopg.Error as e:
                    logger.warning(
                        "postgres erase: the table was rewritten, but this role cannot checkpoint or switch WAL "
                        "(%s): deleted rows stay in WAL segments until the server recycles them",
                        e,
                    )
                if owed is not None:  # paid; a forget that noted its erase after we began keeps its own note
                    conn.execute(f"DELETE FROM {SCHEMA}.meta WHERE key = %s AND value = %s", [_ERASE_OWED, owed[0]])
        except self.psycopg.Error as e:
            raise BackendError(f"postgres erase failed: {e}") from e

    def owe_erase(self) -> None:
        """See :meth:`Backend.owe_erase`: a row of ``meta`` that commits with the deletes; :meth:`erase` clears it."""
        self.run(
            lambda conn: set_meta(conn, _ERASE_OWED, f"{time.time_ns()}-{os.getpid()}"),
            "note an erase owed",
            write=True,
        )

    def recover_interrupted(self) -> bool:
        """Finish an erase a killed process owed (its note is still in the database); True if there was one."""
        if self.one("read the erase note", f"SELECT value FROM {SCHEMA}.meta WHERE key = %s", [_ERASE_OWED]) is None:
            return False
        logger.warning("postgres: a forget was interrupted before its erase; erasing the deleted rows now")
        self.erase(None)
        return True

    def close(self) -> None:
        """Close the connection pool (idempotent)."""
        if not self._closed:
            self._closed = True
            self._pool.close()
