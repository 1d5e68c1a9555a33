"""What ``hindsight stats`` counts, read straight from a closed embedded Chroma directory's ``chroma.sqlite3``.

Counting through Chroma costs a second before the first record is read (``import chromadb`` alone is
~1 s). Every record's metadata lives in Chroma's SQLite file, so :func:`count_closed` reads the counts
there with the standard library's :mod:`sqlite3`: no chromadb, no numpy, nothing written.

It reads another library's private format, so it answers only when every guard holds, and returns
``None`` (the caller then opens the store and counts through Chroma; the reason is logged at DEBUG) when
one does not:

* **the format is the one tested**: the installed chromadb is a version this reader was tested with
  (:data:`TESTED_CHROMADB`, read from its ``dist-info`` without importing it), the file's ``migrations``
  table holds exactly the migrations of that version (:data:`KNOWN_MIGRATIONS`: name and hash, so a
  Chroma upgrade that changes the schema falls back), its journal mode is ``delete`` with no journal
  beside it, and every value read has the shape that version writes (one typed column, no array);
* **nothing written is unapplied**: Chroma writes each change to its log (``embeddings_queue``) and
  applies it to the collection's metadata segment; for every collection counted, the segment's
  ``max_seq_id`` is at least the log's largest ``seq_id`` for the collection's topic;
* **opening the store would not change the counts**: no intent file of a forget, scrub or import a
  killed process left (``_directory``: the store's open finishes them), no collection of an interrupted
  scrub rebuild or re-embedding (:data:`~langchain_hindsight.store.backend._scrub.REBUILD_SUFFIX`, the
  ``_naming`` reembed suffix and markers: the open completes them), no record of a counted memories or
  archive collection with a two-step write mark (a non-empty ``pending``: the first read of the
  namespace repairs it). Records are never migrated on open (a record of another schema is counted as
  the store counts it: by its stored values);
* **the namespaces are the store's**: listed as ``_collections.namespaces`` lists them (a collection's
  role and namespace tags), each counted through its canonical collection names
  (``_naming.collection_name``), whose namespace tag must match (else the store refuses it, and so
  the caller reports that error by opening it);
* **one consistent read**: one read transaction on a connection opened read-only (``mode=ro``), by a
  caller holding the directory's lock (as ``hindsight stats`` holds it for its quick path); any
  :class:`sqlite3.Error` falls back.

The values are what ``MemoryStore.count_by`` gives: ``str`` of the stored value (string, int, float or
bool), ``""`` when the record has none; the runs are the journal collection's records.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.store._directory import DATA_FILE, unfinished_intents
from langchain_hindsight.store._naming import (
    ALL_ROLES,
    NAMESPACE_KEY,
    REEMBED_COMPLETE,
    REEMBED_OF,
    REEMBED_SUFFIX,
    ROLE_KEY,
    ROLES,
    check_namespace,
    collection_name,
)
from langchain_hindsight.store.backend._scrub import REBUILD_SUFFIX

__all__ = ["KNOWN_MIGRATIONS", "PENDING_KEY", "TESTED_CHROMADB", "ClosedCounts", "count_closed", "installed_chromadb"]

logger = logging.getLogger(__name__)

TESTED_CHROMADB = frozenset({"1.5.9"})
"""chromadb versions whose file this reader was tested against (the differential tests of
``tests/integration_tests/store/backend/test_chroma_file.py``); any other version falls back."""

KNOWN_MIGRATIONS = frozenset(
    {
        ("sysdb", 1, "00001-collections.sqlite.sql", "38352d725ad1c16074fac420b22b4633"),
        ("sysdb", 2, "00002-segments.sqlite.sql", "2913cb6a503055a95f625448037e8912"),
        ("sysdb", 3, "00003-collection-dimension.sqlite.sql", "42d22d0574d31d419c2a0e7f625c93aa"),
        ("sysdb", 4, "00004-tenants-databases.sqlite.sql", "048867ce8fcdefe4023c7110e4433591"),
        ("sysdb", 5, "00005-remove-topic.sqlite.sql", "b1367c826b8fba5f96f27befdc1d42d2"),
        ("sysdb", 6, "00006-collection-segment-metadata.sqlite.sql", "4eea7468935bf25d4604a0fed2366116"),
        ("sysdb", 7, "00007-collection-config.sqlite.sql", "1c7e63bba346a42a18b6ab7f1c989bed"),
        ("sysdb", 8, "00008-maintenance-log.sqlite.sql", "0a0e7e93111a01789addf64961c6127c"),
        ("sysdb", 9, "00009-segment-collection-not-null.sqlite.sql", "054355aef9e63702bf54ea29e61563f1"),
        ("sysdb", 10, "00010-collection-schema.sqlite.sql", "5c3a5ac4b79df76799b4721827ed5e1d"),
        ("metadb", 1, "00001-embedding-metadata.sqlite.sql", "2b4cf52c4bb2676e21d6860a4409f856"),
        ("metadb", 2, "00002-embedding-metadata.sqlite.sql", "12a570f7121b3a8ce750a2a7c36da20f"),
        ("metadb", 3, "00003-full-text-tokenize.sqlite.sql", "f97ad6334aeaa8f419f01110b648b97a"),
        ("metadb", 4, "00004-metadata-indices.sqlite.sql", "fb36603a45ee2cd0254cef3ef86585e8"),
        ("metadb", 5, "00005-max-seq-id-int.sqlite.sql", "0e9de46758761b373ce682925edcc326"),
        ("metadb", 6, "00006-metadata-array-support.sqlite.sql", "e026f01ea92c1baa1493f4ad5ca7cfe7"),
        ("embeddings_queue", 1, "00001-embeddings.sqlite.sql", "d3755dfd232be8e8301f4d7fcfb3a486"),
        ("embeddings_queue", 2, "00002-embeddings-queue-config.sqlite.sql", "8fbfe4ffb3e57f1d8bfdc58510a82e85"),
    }
)
"""``(dir, version, filename, hash)`` of every migration a chromadb 1.5.9 file holds: exactly these, or fall back."""

PENDING_KEY = "pending"
"""The record metadata key of a two-step write's mark (``_codec.unit_to_metadata``; ``""`` once complete)."""

_METADATA_SEGMENT = "urn:chroma:segment/metadata/sqlite"
_TOPIC = "persistent://default/default/"
"""How chromadb 1.5.9 names a collection's topic in its log: this prefix and the collection's id."""


class _UnsafeError(Exception):
    """A guard did not hold: the file is not answered from (the message says why)."""


@dataclass(frozen=True)
class ClosedCounts:
    """What :func:`count_closed` read.

    Attributes:
        namespaces: Every namespace of the store, sorted (as ``MemoryStore.namespaces`` lists them).
        counts: For each namespace counted, how many of its units (memories and archive) have each
            tuple of values of the fields asked for (``MemoryStore.count_by``'s answer).
        runs: For each namespace counted, how many run records its journal holds.
    """

    namespaces: list[str]
    counts: dict[str, dict[tuple[str, ...], int]]
    runs: dict[str, int]


def count_closed(
    directory: str | Path, fields: Sequence[str], namespaces: Sequence[str] | None = None
) -> ClosedCounts | None:
    """Count the units of the closed embedded store at ``directory`` by ``fields``, from its SQLite file alone.

    The caller holds the directory's lock (no store has it open). Nothing is written, in the file or
    beside it.

    Args:
        directory: The store directory.
        fields: Metadata keys to count by (``status``, ``task_type``, ...), in the tuples' order.
        namespaces: The namespaces to count (``None``: every one the store has); one the store does not
            have counts as empty, as ``MemoryStore.count_by`` counts it.

    Returns:
        The counts, or ``None`` when a guard (see the module docstring) does not hold: the caller opens
        the store and counts through it.
    """
    path = Path(directory).absolute()  # a file URI names an absolute path
    try:
        _check_directory(path)
        with closing(sqlite3.connect(f"{(path / DATA_FILE).as_uri()}?mode=ro", uri=True, timeout=1.0)) as con:
            con.isolation_level = None
            con.execute("BEGIN")  # one read transaction: every query below reads the same state
            try:
                return _FileReader(con).count(fields, namespaces)
            finally:
                con.execute("ROLLBACK")
    except _UnsafeError as e:
        logger.debug("counting %s through Chroma: %s", path, e)
    except (sqlite3.Error, OSError, ValueError):
        logger.debug("counting %s through Chroma: its SQLite file could not be read", path, exc_info=True)
    return None


def _check_directory(path: Path) -> None:
    version = installed_chromadb()
    if version not in TESTED_CHROMADB:
        raise _UnsafeError(
            f"chromadb {version} is not a version this reader was tested with ({sorted(TESTED_CHROMADB)})"
        )
    if not (path / DATA_FILE).is_file():
        raise _UnsafeError(f"no {DATA_FILE}")
    for name in (f"{DATA_FILE}-journal", f"{DATA_FILE}-wal"):
        if (path / name).exists():
            raise _UnsafeError(f"{name} is present (a write the database has not finished or rolled back)")
    for name in unfinished_intents(path):
        raise _UnsafeError(f"{name} is present (opening the store finishes what a killed process began)")


def installed_chromadb() -> str | None:
    """The version of the chromadb Python would import, from its ``dist-info`` (without importing it); else ``None``.

    :mod:`importlib.metadata` would take longer to import than the rest of ``hindsight stats`` does.
    """
    spec = find_spec("chromadb")
    if spec is None or not spec.submodule_search_locations:
        return None
    site = Path(next(iter(spec.submodule_search_locations))).parent
    found = sorted(site.glob("chromadb-*.dist-info"))
    if len(found) != 1:
        return None
    try:
        with (found[0] / "METADATA").open(encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("Version:"):
                    return line.removeprefix("Version:").strip()
                if not line.strip():
                    break
    except OSError:
        return None
    return None


def _value(row: Sequence[Any], what: str) -> object:
    """The one value of a ``(str, int, float, bool)`` column group (``None``: no value); two or more is unknown."""
    text, integer, real, flag = row
    present = [v for v in (text, integer, real, flag) if v is not None]
    if len(present) > 1:
        raise _UnsafeError(f"{what} holds a value in more than one typed column")
    if text is not None:
        if not isinstance(text, str):
            raise _UnsafeError(f"{what} holds a text value of type {type(text).__name__}")
        return text
    if integer is not None:
        if not isinstance(integer, int):
            raise _UnsafeError(f"{what} holds an int value of type {type(integer).__name__}")
        return integer
    if real is not None:
        if not isinstance(real, float):
            raise _UnsafeError(f"{what} holds a float value of type {type(real).__name__}")
        return real
    if flag is not None:
        if flag not in (0, 1):
            raise _UnsafeError(f"{what} holds a bool value {flag!r}")
        return bool(flag)
    return None


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


class _FileReader:
    """The queries, on one connection inside one read transaction."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.con.execute(sql, tuple(params)).fetchall()]

    def count(self, fields: Sequence[str], asked: Sequence[str] | None) -> ClosedCounts:
        self.check_format()
        collections = self.collections()
        names = {name: cid for cid, (name, _) in collections.items()}
        for name, meta in collections.values():
            if name.endswith((REBUILD_SUFFIX, REEMBED_SUFFIX)) or REEMBED_OF in meta or REEMBED_COMPLETE in meta:
                raise _UnsafeError(
                    f"collection {name!r} is an interrupted rebuild or re-embedding (opening finishes it)"
                )
        listed = sorted(
            {
                ns
                for _, meta in collections.values()
                if meta.get(ROLE_KEY) in ALL_ROLES and isinstance(ns := meta.get(NAMESPACE_KEY), str)
            }
        )
        wanted = listed if asked is None else list(asked)
        plan: dict[str, dict[str, str]] = {}  # namespace -> role -> collection id
        for ns in wanted:
            try:
                check_namespace(ns)
            except ConfigurationError as e:
                raise _UnsafeError(f"namespace {ns!r} is not valid (the store refuses it): {e}") from e
            plan[ns] = {}
            for role in ALL_ROLES:
                cid = names.get(collection_name(ns, role))
                if cid is None:
                    continue
                if collections[cid][1].get(NAMESPACE_KEY) != ns:
                    raise _UnsafeError(f"collection {collections[cid][0]!r} is not tagged with namespace {ns!r}")
                plan[ns][role] = cid
        segments = self.segments({cid for roles in plan.values() for cid in roles.values()})
        counts: dict[str, dict[tuple[str, ...], int]] = {}
        runs: dict[str, int] = {}
        for ns, roles in plan.items():
            units = [segments[roles[r]] for r in ROLES if r in roles]
            counts[ns] = self.value_counts(units, fields)
            journal = roles.get("journal")
            runs[ns] = 0 if journal is None else self.record_count(segments[journal])
        return ClosedCounts(listed, counts, runs)

    # ------------------------------------------------------------------ the format
    def check_format(self) -> None:
        found = set(self.rows("SELECT dir, version, filename, hash FROM migrations"))
        if found != KNOWN_MIGRATIONS:
            raise _UnsafeError(
                f"the file's migrations differ from the tested ones (unknown: {sorted(found - KNOWN_MIGRATIONS)}, "
                f"missing: {sorted(KNOWN_MIGRATIONS - found)})"
            )
        mode = self.rows("PRAGMA journal_mode")
        if mode != [("delete",)]:
            raise _UnsafeError(f"journal mode {mode!r}, not the tested 'delete'")

    def collections(self) -> dict[str, tuple[str, dict[str, object]]]:
        """``{collection id: (name, metadata)}`` of the default database (what the store's client lists)."""
        db = self.rows(
            "SELECT id FROM databases WHERE name = 'default_database' AND tenant_id = 'default_tenant'",
        )
        if len(db) != 1:
            raise _UnsafeError("no single default database")
        found: dict[str, tuple[str, dict[str, object]]] = {
            str(cid): (str(name), {})
            for cid, name in self.rows("SELECT id, name FROM collections WHERE database_id = ?", db[0])
        }
        for cid, key, *values in self.rows(
            "SELECT m.collection_id, m.key, m.str_value, m.int_value, m.float_value, m.bool_value "
            "FROM collection_metadata m JOIN collections c ON c.id = m.collection_id WHERE c.database_id = ?",
            db[0],
        ):
            found[str(cid)][1][str(key)] = _value(values, f"metadata {key!r} of collection {cid}")
        return found

    def segments(self, collection_ids: set[str]) -> dict[str, str]:
        """The metadata segment of each collection, once every write the log holds for it is applied there."""
        ids = sorted(collection_ids)
        if not ids:
            return {}
        segments: dict[str, list[str]] = {}
        for sid, cid in self.rows(
            f"SELECT id, collection FROM segments WHERE type = ? AND scope = 'METADATA' "
            f"AND collection IN ({_placeholders(len(ids))})",
            [_METADATA_SEGMENT, *ids],
        ):
            segments.setdefault(str(cid), []).append(str(sid))
        applied = dict(self.rows("SELECT segment_id, seq_id FROM max_seq_id"))
        logged: dict[str, object] = {}
        for topic, seq in self.rows("SELECT topic, MAX(seq_id) FROM embeddings_queue GROUP BY topic"):
            if not isinstance(topic, str) or not topic.startswith(_TOPIC):
                raise _UnsafeError(f"the log names a topic of an unknown form: {topic!r}")
            logged[topic.removeprefix(_TOPIC)] = seq
        out: dict[str, str] = {}
        for cid in ids:
            found = segments.get(cid, [])
            if len(found) != 1:
                raise _UnsafeError(f"collection {cid} has {len(found)} metadata segments, not one")
            sid = found[0]
            done, last = applied.get(sid, 0), logged.get(cid, 0)
            if not isinstance(done, int) or not isinstance(last, int):
                raise _UnsafeError(f"sequence numbers of collection {cid} are not integers")
            if done < last:
                raise _UnsafeError(f"collection {cid} has writes in the log not yet applied ({done} < {last})")
            out[cid] = sid
        return out

    # ------------------------------------------------------------------ the records
    def _records(self, segment_ids: Sequence[str], keys: Sequence[str]) -> Iterator[tuple[list[Any], int]]:
        """The records of ``segment_ids`` grouped by their values of ``keys`` (``None``: no such key): each
        group's values and how many records hold them.
        """  # noqa: D205
        joins = "".join(
            f" LEFT JOIN embedding_metadata m{i} ON m{i}.id = e.id AND m{i}.key = ?" for i in range(len(keys))
        )
        columns = ", ".join(
            f"m{i}.key, m{i}.string_value, m{i}.int_value, m{i}.float_value, m{i}.bool_value" for i in range(len(keys))
        )
        sql = (
            f"SELECT {columns}, COUNT(*) FROM embeddings e{joins} "
            f"WHERE e.segment_id IN ({_placeholders(len(segment_ids))}) GROUP BY {columns}"
        )
        for *row, n in self.con.execute(sql, (*keys, *segment_ids)):
            values: list[Any] = []
            for i, key in enumerate(keys):
                has, *typed = row[5 * i : 5 * i + 5]
                value = _value(typed, f"{key!r} of a record") if has is not None else None
                if has is not None and value is None:
                    raise _UnsafeError(f"a record holds {key!r} without a value")
                values.append(value)
            yield values, int(n)

    def value_counts(self, segment_ids: Sequence[str], fields: Sequence[str]) -> dict[tuple[str, ...], int]:
        """``count_by(*fields)`` over the records of ``segment_ids``, unless one carries a two-step write mark."""
        if not segment_ids:
            return {}
        keys = [*fields, PENDING_KEY]
        hit = self.rows(
            f"SELECT a.key FROM embedding_metadata_array a JOIN embeddings e ON e.id = a.id "
            f"WHERE e.segment_id IN ({_placeholders(len(segment_ids))}) AND a.key IN ({_placeholders(len(keys))}) "
            "LIMIT 1",
            [*segment_ids, *keys],
        )
        if hit:
            raise _UnsafeError(f"a record holds a list under {hit[0][0]!r}")
        counts: dict[tuple[str, ...], int] = {}
        for (*values, mark), n in self._records(segment_ids, keys):
            if mark is not None and mark != "":
                raise _UnsafeError(f"a record carries the two-step write mark {mark!r} (opening the store repairs it)")
            key = tuple("" if v is None else str(v) for v in values)
            counts[key] = counts.get(key, 0) + n
        return dict(sorted(counts.items()))

    def record_count(self, segment_id: str) -> int:
        ((n,),) = self.rows("SELECT COUNT(*) FROM embeddings WHERE segment_id = ?", [segment_id])
        return int(n)
