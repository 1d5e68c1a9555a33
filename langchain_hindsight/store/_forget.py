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

import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_hindsight.errors import HindsightError, StoreError
from langchain_hindsight.store import _scrub
from langchain_hindsight.store._codec import unit_to_metadata
from langchain_hindsight.store._collections import ROLES, records

if TYPE_CHECKING:
    from langchain_hindsight.store.memory_store import MemoryStore

__all__ = [
    "FORGET_INTENT",
    "NO_SCRUB",
    "clear_intent",
    "delete_ids",
    "drop_collections",
    "finish_interrupted_scrub",
    "record_intent",
    "scrub",
]

# Records are logged under the public module's name, as before the split: logging config keeps applying.
logger = logging.getLogger("langchain_hindsight.store.memory_store")

NO_SCRUB = (
    "scrub needs a store that owns an embedded directory (MemoryStore(persist_directory=...)); for a Chroma "
    "server, stop it, open its --path with MemoryStore(persist_directory=...) and call scrub() there"
)


FORGET_INTENT = ".hindsight.forget-pending"
"""JSON file listing forgets in progress; written durably before the first delete, finished on reopen."""


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_intents(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except ValueError:  # a torn write of the intent itself: nothing was deleted yet under it
        logger.warning("ignoring an unreadable forget intent in %s", path.parent)
        return []
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


def record_intent(store: MemoryStore, ns: str, ids: list[str] | None, scrub: bool) -> None:
    """Durably note "forget ``ids`` of ``ns`` (``None``: the namespace)" before anything is deleted.

    A crash at any later point (kill -9 between Chroma's deletes and the scrub)
    is finished when the directory is opened again: the deletes are repeated
    (they are idempotent), references and journal entries cleaned, and the
    directory scrubbed. Stores without a directory (a Chroma server) have no
    place for the note; their forget is the server's delete.
    """
    if store.persist_directory is None:
        return
    path = store.persist_directory / FORGET_INTENT
    entries = [*_read_intents(path), {"namespace": ns, "ids": ids, "scrub": scrub}]
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(entries, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def clear_intent(store: MemoryStore) -> None:
    """Remove the forget intent (the forget finished, or failed with an error the caller received)."""
    if store.persist_directory is not None:
        (store.persist_directory / FORGET_INTENT).unlink(missing_ok=True)


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
    feedback: dict[str, list[str]] = {}  # run id -> contents of forgotten user_feedback units made in it
    for role in ROLES:
        col = store._collection(ns, role, create=False)
        if col is None:
            continue
        present = col.get(ids=ids, include=[])["ids"]
        for u in records(col, ids=present) if present else []:
            if u.source == "user_feedback" and u.run_id:
                feedback.setdefault(u.run_id, []).append(u.content)
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
    if journal is not None:  # the run journal names the ids it served and produced, and holds the comments
        from langchain_hindsight.store.journal import RunJournal

        if RunJournal(store, namespace=ns).scrub(ids, namespace=ns, feedback=feedback):
            touched.append(journal.name)
    if deleted or touched:
        # A Chroma delete is logical, and a unit may have lived in another collection before (archived,
        # then restored; older journal versions): rebuild every collection of the namespace.
        for role in ("memories", "archive", "journal"):
            col = store._collection(ns, role, create=False)
            if col is not None and col.name not in touched:
                touched.append(col.name)
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
        clear_intent(store)  # a scrub of everything also finishes any forget noted before it
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
    intents = _read_intents(store.persist_directory / FORGET_INTENT)
    if intents:
        logger.warning("finishing %d interrupted forget(s) in %s", len(intents), store.persist_directory)
        try:
            with store._lock:
                for intent in intents:
                    ns, ids = str(intent.get("namespace")), intent.get("ids")
                    if ids is None:
                        drop_collections(store.client, ns)
                        store._collections.clear()
                    else:
                        delete_ids(store, ns, [str(i) for i in ids])
        except HindsightError:
            raise
        except Exception as e:
            raise StoreError(f"could not finish an interrupted forget: {e}") from e
        if not any(intent.get("scrub") for intent in intents):
            clear_intent(store)
    marker = store.persist_directory / _scrub.SCRUB_MARKER
    if interrupted or marker.exists() or (store.persist_directory / FORGET_INTENT).exists():
        logger.warning("finishing an interrupted scrub of %s", store.persist_directory)
        scrub(store, None)
