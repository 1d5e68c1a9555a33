"""Physical erasure for an embedded Chroma directory: what makes ``forget`` a hard delete.

Deleting a record through Chroma's API is only logical. Measured on chromadb 1.5.9:

* the HNSW index marks the vector deleted but keeps its bytes in ``data_level0.bin``;
* ``chroma.sqlite3`` keeps the document text and metadata in freed pages, in the
  write-ahead ``embeddings_queue`` until the vector segment catches up, and as
  trigrams in the FTS5 index until it is merged;
* ``delete_collection`` removes the rows but leaves the segment directory (with
  every vector) on disk;
* hnswlib allocates its element buffer without zeroing it and writes the whole
  capacity to ``data_level0.bin``: the unused slots hold whatever the process's
  heap held before, which can include the text of a memory just deleted.

So erasing means: rebuild each affected collection (copy the live records into a
fresh collection, drop the old one), then with the client closed merge the FTS
index, ``VACUUM`` with ``secure_delete``, and remove segment directories that no
collection owns. A marker file makes the whole procedure resumable after a crash.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import sqlite3
import struct
import uuid
from pathlib import Path
from typing import Any

from langchain_hindsight.errors import StoreError
from langchain_hindsight.store._directory import zero_tail

__all__ = ["REBUILD_SUFFIX", "erase_files", "rebuild_collection", "recover_rebuilds", "wipe_unused_index_space"]

logger = logging.getLogger(__name__)

REBUILD_SUFFIX = "-rebuild"
"""Suffix of the temporary collection a rebuild copies into (canonical names end in a hex digest)."""
_SQLITE = "chroma.sqlite3"
_FTS = "embedding_fulltext_search"
_COLUMNS = ("embeddings", "documents", "metadatas")


def rebuild_collection(client: Any, col: Any) -> None:
    """Replace ``col`` by a fresh copy of its live records (same name, metadata and configuration).

    Copy first, drop second, rename third: until the old collection is dropped it
    stays authoritative; after that the complete copy is. :func:`recover_rebuilds`
    finishes or discards an interrupted rebuild.

    Raises:
        StoreError: the copy is incomplete (the original is left untouched).
    """
    name = col.name
    metadata = dict(col.metadata or {})
    tmp_name = name + REBUILD_SUFFIX
    if tmp_name in {c.name for c in client.list_collections()}:
        client.delete_collection(tmp_name)
    tmp = client.create_collection(
        tmp_name, metadata=metadata or None, configuration=col.configuration, embedding_function=None
    )
    batch = max(1, min(int(client.get_max_batch_size()), 2000))
    for offset in itertools.count(0, batch):
        rows = col.get(include=list(_COLUMNS), limit=batch, offset=offset)
        if rows["ids"]:
            tmp.add(ids=rows["ids"], **{c: rows[c] for c in _COLUMNS})
        if len(rows["ids"]) < batch:
            break
    if tmp.count() != col.count():
        client.delete_collection(tmp_name)
        raise StoreError(f"rebuild of collection {name!r} copied {tmp.count()} of {col.count()} records")
    client.delete_collection(name)
    tmp.modify(name=name)


def recover_rebuilds(client: Any) -> bool:
    """Finish or discard rebuilds a crash interrupted; True if there were any."""
    names = {c.name for c in client.list_collections()}
    interrupted = sorted(n for n in names if n.endswith(REBUILD_SUFFIX))
    for tmp_name in interrupted:
        base = tmp_name.removesuffix(REBUILD_SUFFIX)
        if base in names:  # the copy may be partial; the original is intact
            logger.warning("discarding an interrupted rebuild of collection %r", base)
            client.delete_collection(tmp_name)
        else:  # the original was dropped after a complete copy: finish the rename
            logger.warning("completing an interrupted rebuild of collection %r", base)
            client.get_collection(tmp_name, embedding_function=None).modify(name=base)
    return bool(interrupted)


def erase_files(directory: Path) -> list[str]:
    """Scrub an embedded Chroma directory whose client is closed; return removed segment dirs.

    Merges the FTS5 index (dropping deleted trigrams), rewrites the database with
    ``VACUUM`` under ``secure_delete`` (no freed page keeps old bytes) and removes,
    after zero-filling, every segment directory that no live segment owns.

    Raises:
        StoreError: the database could not be scrubbed.
    """
    db = directory / _SQLITE
    if not db.exists():
        return []
    try:
        con = sqlite3.connect(str(db), isolation_level=None, timeout=30)
        try:
            con.execute("PRAGMA secure_delete=ON")
            has_fts = con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (_FTS,)).fetchone()
            if has_fts:
                con.execute(f"INSERT INTO {_FTS}({_FTS}) VALUES('optimize')")
            live = {str(row[0]) for row in con.execute("SELECT id FROM segments")}
            con.execute("VACUUM")
        finally:
            con.close()
    except sqlite3.Error as e:
        raise StoreError(f"could not scrub {db}: {e}") from e
    removed = []
    for child in directory.iterdir():
        if child.is_dir() and _is_uuid(child.name) and child.name not in live:
            _zero_and_remove(child)
            removed.append(child.name)
    wipe_unused_index_space(directory)
    return removed


def wipe_unused_index_space(directory: Path) -> None:
    """Zero the unused slots of every HNSW segment file under ``directory`` (client closed).

    ``header.bin`` (chroma-hnswlib, version 1) starts with ``int32 version, u64
    offset_level0, u64 max_elements, u64 cur_element_count, u64
    size_data_per_element``. Slots at and beyond ``cur_element_count`` in
    ``data_level0.bin`` (and their 4-byte entries in ``length.bin``) are never
    read by hnswlib; they are overwritten with zeros. Files of another layout are
    left alone.
    """
    for header in directory.glob("*/header.bin"):
        raw = header.read_bytes()
        if len(raw) < 36:
            continue
        version, _offset, max_elements, count, per_element = struct.unpack_from("<iQQQQ", raw)
        if version != 1 or per_element <= 0 or count > max_elements:
            logger.debug("unknown HNSW header layout in %s: not wiped", header)
            continue
        for name, width in (("data_level0.bin", per_element), ("length.bin", 4)):
            path = header.parent / name
            if path.exists() and path.stat().st_size % width == 0:
                zero_tail(path, count * width)


def _is_uuid(name: str) -> bool:
    try:
        uuid.UUID(name)
    except ValueError:
        return False
    return True


def _zero_and_remove(directory: Path) -> None:
    """Overwrite every file with zeros, then delete the tree (best effort against file recovery)."""
    for root, _dirs, files in os.walk(directory):
        for fname in files:
            zero_tail(Path(root) / fname, 0)
    shutil.rmtree(directory)
