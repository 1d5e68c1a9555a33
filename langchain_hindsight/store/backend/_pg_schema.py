"""The Postgres backend's schema: its tables, its versioned migrations, and how a database is brought up to date.

:func:`migrate` applies the missing :data:`MIGRATIONS` under an advisory lock (one process migrates, the others wait
and find it done) and refuses a database written by a newer package. ``backend/postgres.py`` says what tables hold.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from langchain_hindsight.errors import BackendError

__all__ = ["MIGRATIONS", "SCHEMA", "SCHEMA_VERSION", "migrate", "set_meta"]

logger = logging.getLogger(__name__)

SCHEMA = "hindsight"
"""The Postgres schema that holds every table of this backend."""

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE TABLE hindsight.collections ("
        " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
        " name text NOT NULL UNIQUE,"
        " metadata jsonb NOT NULL DEFAULT '{}',"
        " dimension integer)",
        "CREATE TABLE hindsight.records ("
        " collection_id bigint NOT NULL REFERENCES hindsight.collections (id) ON DELETE CASCADE,"
        " id text NOT NULL,"
        " seq bigint GENERATED ALWAYS AS IDENTITY,"
        " embedding vector NOT NULL,"
        " document text,"
        " metadata jsonb NOT NULL DEFAULT '{}',"
        " lex_len integer,"
        " PRIMARY KEY (collection_id, id))",
        "CREATE TABLE hindsight.postings ("
        " collection_id bigint NOT NULL,"
        " term bigint NOT NULL,"
        " id text NOT NULL,"
        " tf integer NOT NULL,"
        " len integer NOT NULL,"
        " PRIMARY KEY (collection_id, term, id) INCLUDE (tf, len),"  # index-only scans of a term's postings
        " FOREIGN KEY (collection_id, id) REFERENCES hindsight.records (collection_id, id) ON DELETE CASCADE)",
        "CREATE INDEX postings_record ON hindsight.postings (collection_id, id)",
        # vectors stay in the row (not TOASTed): a scan then costs what it reads, and the planner
        # prefers the HNSW index over a sequential scan that would detoast every vector
        "ALTER TABLE hindsight.records ALTER COLUMN embedding SET STORAGE MAIN",
        "CREATE INDEX records_order ON hindsight.records (collection_id, seq)",
        "CREATE INDEX records_metadata ON hindsight.records USING gin (metadata jsonb_path_ops)",
    ),
    2: (
        # the lexical arm's corpus statistics, kept by the database in the writing transaction, so a
        # query reads one row instead of counting the collection
        "CREATE TABLE hindsight.lexical_stats ("
        " collection_id bigint PRIMARY KEY, n bigint NOT NULL DEFAULT 0, total bigint NOT NULL DEFAULT 0)",
        "INSERT INTO hindsight.lexical_stats"
        " SELECT collection_id, count(*), sum(lex_len) FROM hindsight.records"
        " WHERE lex_len IS NOT NULL GROUP BY collection_id",
        "CREATE FUNCTION hindsight.count_lexical() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN"
        " IF TG_OP <> 'INSERT' THEN"
        " INSERT INTO hindsight.lexical_stats AS s"
        " SELECT collection_id, -count(*), -sum(lex_len) FROM old_rows WHERE lex_len IS NOT NULL"
        " GROUP BY collection_id ORDER BY collection_id"
        " ON CONFLICT (collection_id) DO UPDATE SET n = s.n + EXCLUDED.n, total = s.total + EXCLUDED.total;"
        " END IF;"
        " IF TG_OP <> 'DELETE' THEN"
        " INSERT INTO hindsight.lexical_stats AS s"
        " SELECT collection_id, count(*), sum(lex_len) FROM new_rows WHERE lex_len IS NOT NULL"
        " GROUP BY collection_id ORDER BY collection_id"
        " ON CONFLICT (collection_id) DO UPDATE SET n = s.n + EXCLUDED.n, total = s.total + EXCLUDED.total;"
        " END IF;"
        " RETURN NULL;"
        " END $$",
        "CREATE TRIGGER records_lexical_insert AFTER INSERT ON hindsight.records"
        " REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hindsight.count_lexical()",
        "CREATE TRIGGER records_lexical_update AFTER UPDATE ON hindsight.records"
        " REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows"
        " FOR EACH STATEMENT EXECUTE FUNCTION hindsight.count_lexical()",
        "CREATE TRIGGER records_lexical_delete AFTER DELETE ON hindsight.records"
        " REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION hindsight.count_lexical()",
        "DROP INDEX IF EXISTS hindsight.records_lexical_stats",  # version 1's, which counted the corpus
        # a collection's HNSW index is built by its first dense query (one bulk build after a bulk load);
        # version 1 built it at the first write
        "ALTER TABLE hindsight.collections ADD COLUMN indexed boolean NOT NULL DEFAULT false",
        "UPDATE hindsight.collections SET indexed = dimension IS NOT NULL",
    ),
    4: (
        # version 3's change feed (for an in-process replica; recall now reads the database itself) is
        # dropped where a database still has it, and no longer made
        "DROP TRIGGER IF EXISTS records_rev ON hindsight.records",
        "DROP TRIGGER IF EXISTS records_tombstone ON hindsight.records",
        "DROP FUNCTION IF EXISTS hindsight.record_rev(), hindsight.tombstone(), hindsight.write_rev(bigint)",
        "DROP TABLE IF EXISTS hindsight.tombstones",
        "ALTER TABLE hindsight.records DROP COLUMN IF EXISTS rev",
        "ALTER TABLE hindsight.collections DROP COLUMN IF EXISTS rev, DROP COLUMN IF EXISTS rev_xact,"
        " DROP COLUMN IF EXISTS pruned_rev",
        # postings name their record by its number (seq) instead of its text id: half the index, and the
        # lexical arm sums a record's terms grouped by an integer
        "DROP INDEX hindsight.records_order",
        "CREATE UNIQUE INDEX records_order ON hindsight.records (collection_id, seq)",
        "CREATE TABLE hindsight.postings_by_seq ("
        " collection_id bigint NOT NULL,"
        " term bigint NOT NULL,"
        " seq bigint NOT NULL,"
        " tf integer NOT NULL,"
        " len integer NOT NULL,"
        " CONSTRAINT postings_key PRIMARY KEY (collection_id, term, seq) INCLUDE (tf, len),"
        " FOREIGN KEY (collection_id, seq) REFERENCES hindsight.records (collection_id, seq) ON DELETE CASCADE)",
        "INSERT INTO hindsight.postings_by_seq"
        " SELECT p.collection_id, p.term, r.seq, p.tf, p.len FROM hindsight.postings p"
        " JOIN hindsight.records r ON r.collection_id = p.collection_id AND r.id = p.id",
        "DROP TABLE hindsight.postings",
        "ALTER TABLE hindsight.postings_by_seq RENAME TO postings",
        "CREATE INDEX postings_record ON hindsight.postings (collection_id, seq)",
        # each term's document frequency, kept by the database in the writing transaction (as lexical_stats
        # keeps the corpus size), so the lexical arm reads a row per query term instead of counting postings
        "CREATE TABLE hindsight.lexical_terms ("
        " collection_id bigint NOT NULL, term bigint NOT NULL, df bigint NOT NULL,"
        " PRIMARY KEY (collection_id, term))",
        "INSERT INTO hindsight.lexical_terms"
        " SELECT collection_id, term, count(*) FROM hindsight.postings GROUP BY collection_id, term",
        "CREATE FUNCTION hindsight.count_terms() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN"
        " IF TG_OP = 'INSERT' THEN"
        " INSERT INTO hindsight.lexical_terms AS t"
        " SELECT collection_id, term, count(*) FROM new_rows GROUP BY collection_id, term"
        " ORDER BY collection_id, term"
        " ON CONFLICT (collection_id, term) DO UPDATE SET df = t.df + EXCLUDED.df;"
        " ELSE"
        # a delete of records reaches here (the cascade) before records' own triggers lock lexical_stats:
        # take that lock first, as every insert and update does, so two writers never wait in a cycle
        " PERFORM 1 FROM hindsight.lexical_stats"
        " WHERE collection_id IN (SELECT DISTINCT collection_id FROM old_rows) ORDER BY collection_id FOR UPDATE;"
        " UPDATE hindsight.lexical_terms t SET df = t.df - o.n"
        " FROM (SELECT collection_id, term, count(*) AS n FROM old_rows GROUP BY collection_id, term) o"
        " WHERE t.collection_id = o.collection_id AND t.term = o.term;"
        " DELETE FROM hindsight.lexical_terms t USING (SELECT DISTINCT collection_id, term FROM old_rows) o"
        " WHERE t.collection_id = o.collection_id AND t.term = o.term AND t.df <= 0;"
        " END IF;"
        " RETURN NULL;"
        " END $$",
        "CREATE TRIGGER postings_terms_insert AFTER INSERT ON hindsight.postings"
        " REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hindsight.count_terms()",
        "CREATE TRIGGER postings_terms_delete AFTER DELETE ON hindsight.postings"
        " REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION hindsight.count_terms()",
    ),
}
"""Schema migrations by version: each step's statements run in one transaction with the version bump (version 3's
are gone, see version 4)."""
SCHEMA_VERSION = max(MIGRATIONS)
"""The schema version this code writes."""

_MIGRATION_LOCK = 0x68696E64  # advisory lock key of schema migrations ("hind")


def migrate(conn: Any, psycopg: Any, signature: str, retokenise: Callable[[Any], None]) -> None:
    """Create or upgrade the schema in ``conn``'s transaction, under an advisory lock.

    ``psycopg`` is the module (its error classes). When the database holds another tokenizer ``signature``,
    ``retokenise(conn)`` recomputes every record's lexical terms.

    Raises:
        BackendError: pgvector is missing and cannot be created, or the database holds a newer schema.
    """
    conn.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATION_LOCK])
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as e:
            raise BackendError(
                "the database lacks the pgvector extension and this role may not create it: "
                f"run CREATE EXTENSION vector as a superuser ({e})"
            ) from e
    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    conn.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA}.meta (key text PRIMARY KEY, value text NOT NULL)")
    row = conn.execute(f"SELECT value FROM {SCHEMA}.meta WHERE key = 'schema_version'").fetchone()
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise BackendError(
            f"the database holds hindsight schema version {version}, newer than this package's "
            f"{SCHEMA_VERSION}: upgrade langchain-hindsight"
        )
    for target, statements in MIGRATIONS.items():
        if target <= version:
            continue
        for statement in statements:
            conn.execute(statement)
        set_meta(conn, "schema_version", str(target))
        logger.info("hindsight schema migrated to version %d", target)
    row = conn.execute(f"SELECT value FROM {SCHEMA}.meta WHERE key = 'lexical_signature'").fetchone()
    if row is None or row[0] != signature:
        if row is not None:
            logger.warning("the tokenizer changed: recomputing the lexical terms of every record")
        retokenise(conn)
        set_meta(conn, "lexical_signature", signature)


def set_meta(conn: Any, key: str, value: str) -> None:
    """Set ``key`` of the ``meta`` table to ``value`` (in ``conn``'s transaction)."""
    conn.execute(
        f"INSERT INTO {SCHEMA}.meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        [key, value],
    )
