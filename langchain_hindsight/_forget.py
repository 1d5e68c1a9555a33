"""Hard delete for ``MemoryStore.forget``/``scrub``: records, references, then the bytes.

:func:`delete_ids` removes units and every reference to them (a successor's
``supersedes``, a merge's ``merged_from``, the run journal);
:func:`drop_collections` removes a whole namespace. A Chroma delete leaves the
bytes in ``chroma.sqlite3`` and the HNSW files, so :func:`scrub` then rebuilds
the touched collections and erases what is left (see ``_scrub``), resumably:
:func:`finish_interrupted_scrub` completes a scrub a crash cut short.

These functions orchestrate several steps of one store and take it whole.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from langchain_hindsight import _scrub
from langchain_hindsight._codec import unit_to_metadata
from langchain_hindsight._collections import ROLES, records
from langchain_hindsight.errors import HindsightError, StoreError

if TYPE_CHECKING:
    from langchain_hindsight.store import MemoryStore

__all__ = ["NO_SCRUB", "delete_ids", "drop_collections", "finish_interrupted_scrub", "scrub"]

# Records are logged under the public module's name, as before the split: logging config keeps applying.
logger = logging.getLogger("langchain_hindsight.store")

NO_SCRUB = (
    "scrub needs a store that owns an embedded directory (MemoryStore(persist_directory=...)); for a Chroma "
    "server, stop it, open its --path with MemoryStore(persist_directory=...) and call scrub() there"
)


def drop_collections(client: Any, ns: str) -> int:
    """Drop every collection of ``client`` that belongs to ``ns`` (any role, leftovers included); count its units."""
    deleted = 0
    for col in client.list_collections():
        meta = col.metadata or {}
        if meta.get("hindsight_namespace") != ns or "hindsight_role" not in meta:
            continue
        if meta["hindsight_role"] in ROLES and not col.name.endswith(_scrub.REBUILD_SUFFIX):
            deleted += col.count()
        client.delete_collection(col.name)
    return deleted


def delete_ids(store: MemoryStore, ns: str, ids: list[str]) -> tuple[int, list[str]]:
    """Delete ``ids`` and every reference to them; return (count, names of collections touched)."""
    deleted = 0
    touched: list[str] = []
    gone = set(ids)
    for role in ROLES:
        col = store._collection(ns, role, create=False)
        if col is None:
            continue
        present = col.get(ids=ids, include=[])["ids"]
        if present:
            col.delete(ids=present)
            deleted += len(present)
            touched.append(col.name)
        # References: a successor's ``supersedes`` and a merge's ``merged_from`` name the id.
        referring = records(col, where={"supersedes": {"$in": ids}})
        referring += [u for u in records(col, where={"merged_from": {"$ne": "[]"}}) if gone & set(u.merged_from)]
        cleaned = {
            u.memory_id: u.evolve(
                supersedes=None if u.supersedes in gone else u.supersedes,
                merged_from=[m for m in u.merged_from if m not in gone],
            )
            for u in referring
        }
        if cleaned:
            col.update(ids=list(cleaned), metadatas=[unit_to_metadata(u) for u in cleaned.values()])
            if col.name not in touched:
                touched.append(col.name)
            if role == "memories":
                store._reindex(ns, upserts=list(cleaned.values()))
    store._reindex(ns, deletes=ids)
    journal = store._collection(ns, "journal", create=False)
    if journal is not None:  # the run journal names the ids it served and produced
        from langchain_hindsight.journal import RunJournal

        if RunJournal(store, namespace=ns).scrub(ids, namespace=ns):
            touched.append(journal.name)
    return deleted, touched


def scrub(store: MemoryStore, rebuild: list[str] | None) -> None:
    """Rebuild ``rebuild`` (names; ``None``: every hindsight collection), then erase files.

    The store's client is closed for the erase and replaced by a fresh one.
    """
    assert store.persist_directory is not None
    marker = store.persist_directory / _scrub.SCRUB_MARKER
    try:
        with marker.open("w") as fh:  # durable before any step: a crash resumes on reopen
            os.fsync(fh.fileno())
        if rebuild is None:
            rebuild = [c.name for c in store.client.list_collections() if "hindsight_role" in (c.metadata or {})]
        for name in rebuild:
            _scrub.rebuild_collection(store.client, store.client.get_collection(name, embedding_function=None))
        store._collections.clear()
        store.client.close()
        try:
            removed = _scrub.erase_files(store.persist_directory)
        finally:
            store.client = store._open_client()
        logger.debug(
            "scrubbed %s: rebuilt %d collection(s), removed %d segment dir(s)",
            marker.parent,
            len(rebuild),
            len(removed),
        )
        marker.unlink()
    except HindsightError:
        raise
    except Exception as e:
        raise StoreError(f"scrub of {store.persist_directory} failed: {e}") from e


def finish_interrupted_scrub(store: MemoryStore) -> None:
    """Complete a scrub that a crash interrupted (a rebuild left half-done or the marker still present)."""
    assert store.persist_directory is not None
    try:
        interrupted = _scrub.recover_rebuilds(store.client)
    except Exception as e:
        raise StoreError(f"could not recover an interrupted scrub: {e}") from e
    if interrupted or (store.persist_directory / _scrub.SCRUB_MARKER).exists():
        logger.warning("finishing an interrupted scrub of %s", store.persist_directory)
        scrub(store, None)
