"""Hard delete for ``MemoryStore``: ``forget`` and ``scrub``, records, references, run journal, then the bytes.

:meth:`ForgetMixin.forget` removes units and every reference to them (a
successor's ``supersedes``, a merge's ``merged_from``, the run records that
served or produced them, the comments that became them), or a whole namespace.
The run records are scrubbed through the storage layer's
:class:`~langchain_hindsight.store._runs.RunRecords`, never through the journal's
API above the store. A Chroma delete leaves the bytes in ``chroma.sqlite3`` and
the HNSW files, so the backend then erases them (``backend.erase``), resumably:
a durable intent file and a scrub marker let the next open finish a forget or a
scrub a crash cut short.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_hindsight.errors import ConfigurationError, HindsightError, StoreError
from langchain_hindsight.store._codec import unit_to_metadata
from langchain_hindsight.store._collections import ROLES, Collection, records
from langchain_hindsight.store._core import StoreCore, backend_errors, check_ids
from langchain_hindsight.store.backend import Backend, _scrub
from langchain_hindsight.types import MemoryUnit

__all__ = ["FORGET_INTENT", "NO_SCRUB", "ForgetMixin", "drop_collections"]

logger = logging.getLogger(__name__)

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
    except (ValueError, RecursionError):  # a torn (or garbled) write of the intent itself: nothing deleted under it
        logger.warning("ignoring an unreadable forget intent in %s", path.parent)
        return []
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


def _record_intent(directory: Path | None, ns: str, ids: list[str] | None, scrub: bool) -> None:
    """Durably note "forget ``ids`` of ``ns`` (``None``: the namespace)" before anything is deleted.

    A crash at any later point (kill -9 between the deletes and the scrub) is
    finished when the directory is opened again: the deletes are repeated (they
    are idempotent), references and run records cleaned, and the directory
    scrubbed. A backend without a directory has no place for the note.
    """
    if directory is None:
        return
    path = directory / FORGET_INTENT
    entries = [*_read_intents(path), {"namespace": ns, "ids": ids, "scrub": scrub}]
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(entries, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _clear_intent(directory: Path | None) -> None:
    if directory is not None:
        (directory / FORGET_INTENT).unlink(missing_ok=True)


def drop_collections(backend: Backend, ns: str) -> int:
    """Drop every collection of ``backend`` that belongs to ``ns`` (any role, leftovers included); count its units."""
    deleted = 0
    for col in backend.list_collections():
        meta = col.metadata
        if meta.get("hindsight_namespace") != ns or "hindsight_role" not in meta:
            continue
        if meta["hindsight_role"] in ROLES and not col.name.endswith(_scrub.REBUILD_SUFFIX):
            deleted += col.count()
        backend.delete_collection(col.name)
    return deleted


class ForgetMixin(StoreCore):
    """Hard delete and physical erasure (part of :class:`~langchain_hindsight.store.memory_store.MemoryStore`)."""

    @backend_errors
    def forget(
        self,
        memory_id: str | Sequence[str] | None = None,
        *,
        namespace: str | None = None,
        scrub: bool | None = None,
    ) -> int:
        """Hard-delete units (every copy, archive included), or a whole namespace.

        ``forget("mem_...")`` deletes those ids in ``namespace``: the record
        (vector, document, metadata) in memories and archive, the lexical index
        entry, and every reference to the id in other units (``supersedes``,
        ``merged_from``) and in the run journal. ``forget(namespace="alice")``
        deletes every collection of that namespace.

        With ``scrub`` (the default for an embedded store) the bytes are then
        physically erased from the directory (see :meth:`scrub`); a Chroma API
        delete alone leaves them in ``chroma.sqlite3`` and the HNSW files.

        Example:
            >>> n = store.forget(unit.memory_id)  # doctest: +SKIP

        Args:
            memory_id: One id or a sequence of ids; ``None`` with an explicit
                ``namespace`` forgets the whole namespace.
            namespace: Namespace to delete from (default: the store's).
            scrub: ``None``: scrub when the backend can erase (an embedded
                directory this store holds; memory). ``False``: defer (call
                :meth:`scrub` later, e.g. after a batch).

        Returns:
            How many units were deleted.

        Raises:
            ConfigurationError: bad arguments, or ``scrub=True`` on a store whose
                backend cannot erase (a server or an injected client).
        """
        if scrub is not None and not isinstance(scrub, bool):
            raise ConfigurationError(f"scrub must be True, False or None, got {scrub!r}")
        if scrub and not self.backend.can_erase:
            raise ConfigurationError(NO_SCRUB)
        do_scrub = self.backend.can_erase if scrub is None else scrub
        ns = self._ns(namespace)
        ids = None if memory_id is None else check_ids(memory_id)
        if ids is None and namespace is None:
            raise ConfigurationError("forget() needs a memory id or an explicit namespace")
        if ids == []:
            return 0
        with self._lock:
            self._ensure_open()
            rebuild: list[str] = []
            _record_intent(self.persist_directory, ns, ids, do_scrub)  # durable before the first delete
            try:
                if ids is None:
                    deleted = self._atomic(ns, functools.partial(self._drop_namespace, ns))
                else:
                    deleted, rebuild = self._atomic(ns, functools.partial(self._delete_ids, ns, ids))
                if do_scrub and (deleted or rebuild):
                    self._scrub(rebuild)
            finally:
                _clear_intent(self.persist_directory)  # done, or failed with an error the caller receives
            return deleted

    delete = forget

    @backend_errors
    def scrub(self) -> None:
        """Physically erase every deleted record from the store's directory.

        Rebuilds every collection from its live records (dropping the HNSW files
        that still hold deleted vectors), merges the full-text index, rewrites
        ``chroma.sqlite3`` with ``VACUUM`` under ``secure_delete`` and removes
        orphaned segment files. Costs a full copy of the store; :meth:`forget`
        does it for the collections it touched unless told ``scrub=False``.
        Resumable: a crash mid-way is finished when the directory is reopened.
        On the in-memory backend there is nothing left to erase.

        Example:
            >>> store.forget(ids, scrub=False); store.scrub()  # doctest: +SKIP

        Raises:
            ConfigurationError: the backend cannot erase (a server or an injected
                client). For a Chroma server, stop it, open the directory with
                ``MemoryStore(persist_directory=...)`` and scrub there.
            StoreError: the backend failed.
        """
        if not self.backend.can_erase:
            raise ConfigurationError(NO_SCRUB)
        with self._lock:
            self._ensure_open()
            self._scrub(None)

    # ------------------------------------------------------------------ internals
    def _drop_namespace(self, ns: str) -> int:
        """Drop every collection that belongs to ``ns`` (any role, leftovers included)."""
        deleted = drop_collections(self.backend, ns)
        for key in [k for k in self._collections if k[0] == ns]:
            del self._collections[key]
        self._lexical.pop(ns, None)
        self._mirrors.pop(ns, None)
        self._mirror_off.discard(ns)
        self._open_counts.pop(ns, None)
        self._units.clear(ns)
        self._snapshot_dropped.discard(ns)
        self._drop_snapshot(ns)
        self._feeds.pop(ns, None)
        self._repaired.discard(ns)
        return deleted

    def _delete_ids(self, ns: str, ids: list[str]) -> tuple[int, list[str]]:
        """Delete ``ids`` and every reference to them; return (count, names of collections touched)."""
        deleted = 0
        touched: list[str] = []
        gone = set(ids)
        feedback: dict[str, list[str]] = {}  # run id -> contents of forgotten user_feedback units made in it
        for role in ROLES:
            col = self._collection(ns, role, create=False)
            if col is None:
                continue
            rows = col.get(ids=ids, include=["documents", "metadatas"])
            for doc, meta in zip(rows["documents"] or [], rows["metadatas"] or [], strict=True):
                if (meta or {}).get("source") == "user_feedback" and (meta or {}).get("run_id"):
                    feedback.setdefault(str(meta["run_id"]), []).append(doc or "")
            present = list(rows["ids"])
            if present:
                col.delete(ids=present)
                deleted += len(present)
                touched.append(col.name)
            # References: a successor's ``supersedes`` and a merge's ``merged_from`` name the id.
            referring = self._referring(col, ids, gone)
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
                    self._reindex(ns, upserts=list(cleaned.values()))
        self._reindex(ns, deletes=ids)
        # The run records name the ids they served and produced, and hold the comments: scrubbed in storage.
        if self.run_records.scrub(ns, ids, feedback):
            journal = self._collection(ns, "journal", create=False)
            if journal is not None:
                touched.append(journal.name)
        if deleted or touched:
            # A delete is logical, and a unit may have lived in another collection before (archived,
            # then restored; older journal versions): rebuild every collection of the namespace.
            for role in ("memories", "archive", "journal"):
                col = self._collection(ns, role, create=False)  # type: ignore[arg-type]
                if col is not None and col.name not in touched:
                    touched.append(col.name)
        return deleted, touched

    @staticmethod
    def _referring(col: Collection, ids: list[str], gone: set[str]) -> list[MemoryUnit]:
        found = records(col, where={"supersedes": {"$in": ids}})
        return found + [u for u in records(col, where={"merged_from": {"$ne": "[]"}}) if gone & set(u.merged_from)]

    def _scrub(self, rebuild: list[str] | None) -> None:
        """Rebuild ``rebuild`` (names; ``None``: every hindsight collection), then erase files (resumably)."""
        directory = self.persist_directory
        if directory is None:  # nothing on disk (memory): the backend's deletes leave nothing behind
            self.backend.erase(rebuild)
            return
        marker = directory / _scrub.SCRUB_MARKER
        try:
            with marker.open("w") as fh:  # durable before any step: a crash resumes on reopen
                os.fsync(fh.fileno())
            self._collections.clear()
            self.backend.erase(rebuild)
            marker.unlink()
            _clear_intent(directory)  # a scrub of everything also finishes any forget noted before it
        except HindsightError:
            raise
        except OSError as e:
            raise StoreError(f"scrub of {directory} failed: {e}") from e

    def _finish_interrupted_scrub(self) -> None:
        """Complete a forget or scrub that a crash interrupted (a rebuild half-done, a marker or intent left)."""
        directory = self.persist_directory
        if directory is None:
            return
        interrupted = self.backend.recover_interrupted()
        intents = _read_intents(directory / FORGET_INTENT)
        if intents:
            logger.warning("finishing %d interrupted forget(s) in %s", len(intents), directory)
            with self._lock:
                for intent in intents:
                    ns, ids = str(intent.get("namespace")), intent.get("ids")
                    if ids is None:
                        drop_collections(self.backend, ns)
                        self._collections.clear()
                    else:
                        self._delete_ids(ns, [str(i) for i in ids])
            if not any(intent.get("scrub") for intent in intents):
                _clear_intent(directory)
        marker = directory / _scrub.SCRUB_MARKER
        if interrupted or marker.exists() or (directory / FORGET_INTENT).exists():
            logger.warning("finishing an interrupted scrub of %s", directory)
            self._scrub(None)
