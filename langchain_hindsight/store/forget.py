"""Hard delete for ``MemoryStore``: ``forget`` and ``scrub``; records, references, run records, then the bytes.

A backend's delete is logical (Chroma leaves the bytes in ``chroma.sqlite3`` and the HNSW files), so
a forget ends with the backend's erase; a durable intent file and a scrub marker let the next open
finish a forget or a scrub a crash cut short.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_hindsight.errors import ConfigurationError, HindsightError, StoreError
from langchain_hindsight.store._codec import unit_to_metadata
from langchain_hindsight.store._collections import records
from langchain_hindsight.store._core import StoreCore, backend_errors, check_ids
from langchain_hindsight.store._directory import Intent
from langchain_hindsight.store._naming import ALL_ROLES, REEMBED_SUFFIX, ROLES, collection_name
from langchain_hindsight.store.backend import REBUILD_SUFFIX

__all__ = ["NO_SCRUB", "finish_interrupted_scrub", "forget", "scrub", "scrub_collections"]

logger = logging.getLogger(__name__)

NO_SCRUB = (
    "scrub needs a store that owns an embedded directory (MemoryStore(persist_directory=...)); for a Chroma "
    "server, stop it, open its --path with MemoryStore(persist_directory=...) and call scrub() there"
)


def _drop_collections(store: StoreCore, ns: str) -> int:
    """Drop every collection of ``ns`` (any role, leftovers included) and the store's state of it; count its units."""
    deleted = 0
    for col in store.backend.list_collections():
        meta = col.metadata
        if meta.get("hindsight_namespace") != ns or "hindsight_role" not in meta:
            continue
        if meta["hindsight_role"] in ROLES and not col.name.endswith(REBUILD_SUFFIX):
            deleted += col.count()
        store.backend.delete_collection(col.name)
    store.dropped(ns)
    return deleted


@backend_errors
def forget(
    store: StoreCore,
    memory_id: str | Sequence[str] | None = None,
    *,
    namespace: str | None = None,
    scrub: bool | None = None,
    successors: bool = False,
) -> int:
    """Hard-delete units (every copy, archive included), or a whole namespace; return how many units were deleted.

    ``forget("mem_...")`` deletes those ids in ``namespace``: the records in memories and archive, the
    lexical index entries, and every reference to them in other units (``supersedes``, ``merged_from``)
    and in the run journal. ``forget(namespace="alice")`` deletes every collection of that namespace.
    With ``scrub`` the bytes are then physically erased (see :meth:`scrub`).

    Example:
        >>> n = store.forget(unit.memory_id)  # doctest: +SKIP

    Args:
        store: The store (``self``: this is :meth:`MemoryStore.forget`).
        memory_id: One id or a sequence of ids; ``None`` with an explicit ``namespace`` forgets the whole namespace.
        namespace: Namespace to delete from (default: the store's).
        scrub: ``None``: scrub when the backend can erase (an embedded directory this store holds; memory).
            ``False``: defer (call :meth:`scrub` later, e.g. after a batch).
        successors: Also forget every later version of ``memory_id`` (the units that supersede it, and
            theirs), as found inside the write: a version another process wrote since the caller read the
            chain is forgotten too (``HindsightStore`` deletes a key this way).

    Raises:
        ConfigurationError: bad arguments, or ``scrub=True`` on a store whose backend cannot erase (a server
            or an injected client).
    """
    if scrub is not None and not isinstance(scrub, bool):
        raise ConfigurationError(f"scrub must be True, False or None, got {scrub!r}")
    if not isinstance(successors, bool):
        raise ConfigurationError(f"successors must be a bool, got {successors!r}")
    if scrub and not store.backend.can_erase:
        raise ConfigurationError(NO_SCRUB)
    do_scrub = store.backend.can_erase if scrub is None else scrub
    ns = store.namespace_or_default(namespace)
    ids = None if memory_id is None else check_ids(memory_id)
    if ids is None and namespace is None:
        raise ConfigurationError("forget() needs a memory id or an explicit namespace")
    if ids == []:
        return 0
    directory = store.persist_directory

    def plan() -> tuple[int, list[str]]:
        done = (_drop_collections(store, ns), []) if ids is None else _delete_ids(store, ns, ids, successors)
        if do_scrub and directory is None:  # no intent file: note the owed erase in the same write plan
            store.backend.owe_erase()
        return done

    with store.lock:
        store.ensure_open()
        if directory is not None:
            # Durable before the first delete: a crash at any later point (kill -9 between the deletes and
            # the scrub) is finished when the directory is opened again (finish_interrupted_scrub).
            noted = [*_forgets_noted(directory), {"namespace": ns, "ids": ids, "scrub": do_scrub}]
            Intent.FORGET.write(directory, json.dumps(noted).encode("utf-8"))
        try:
            deleted, rebuild = store.atomic(ns, plan)
            if do_scrub and (deleted or rebuild):
                scrub_collections(store, rebuild)
        finally:
            if directory is not None:  # done, or failed with an error the caller receives
                Intent.FORGET.clear(directory)
        return deleted


@backend_errors
def scrub(store: StoreCore) -> None:
    """Physically erase every deleted record from the store's directory.

    Rebuilds every collection from its live records (dropping the HNSW files that still hold deleted vectors),
    merges the full-text index, rewrites ``chroma.sqlite3`` with ``VACUUM`` under ``secure_delete``, removes
    orphaned segment files, and erases every derived file the clean-close stamp does not vouch for (it may hold
    text another process, such as a Chroma server on this directory, forgot). Costs a full copy of the store;
    resumable: a crash mid-way is finished when the directory is reopened. In memory nothing is left to erase.

    Example:
        >>> store.forget(ids, scrub=False); store.scrub()  # doctest: +SKIP

    Raises:
        ConfigurationError: the backend cannot erase (a server or an injected client). For a Chroma server,
            stop it, open the directory with ``MemoryStore(persist_directory=...)`` and scrub there.
        StoreError: the backend failed.
    """
    if not store.backend.can_erase:
        raise ConfigurationError(NO_SCRUB)
    with store.lock:
        store.ensure_open()
        scrub_collections(store, None)
        store.replica.erase_unvouched()  # snapshots never loaded may hold text forgotten by another process


_CHAIN_STEPS = 256
"""At most this many rounds of successors are followed forward (a cycle in ``supersedes`` cannot loop)."""


def _with_successors(store: StoreCore, ns: str, ids: list[str]) -> list[str]:
    """``ids`` and every later version of them (units whose ``supersedes`` chain leads back to one), read now."""
    found = list(dict.fromkeys(ids))
    frontier = found
    for _ in range(_CHAIN_STEPS):
        where = {"supersedes": {"$in": frontier}}
        later = [u.memory_id for _, col in store.collections_of(ns) for u in records(col, where=where)]
        frontier = [i for i in dict.fromkeys(later) if i not in found]
        if not frontier:
            break
        found += frontier
    return found


def _delete_ids(store: StoreCore, ns: str, ids: list[str], successors: bool = False) -> tuple[int, list[str]]:
    """Delete ``ids`` (with ``successors``, their later versions too) and every reference to them.

    Returns the count deleted and the collections to rebuild: every one of the namespace once anything changed.
    """
    if successors:  # read inside the write plan: a version another process added since the caller read goes too
        more = _with_successors(store, ns, ids)
        if len(more) > len(ids):
            logger.info("forget in %r: also forgetting %d later version(s) %s", ns, len(more) - len(ids),
                        more[len(ids):][:5])  # fmt: skip
        ids = more
    deleted = 0
    changed = False
    gone = set(ids)
    feedback: dict[str, list[str]] = {}  # run id -> contents of forgotten user_feedback units made in it
    for role, col in store.collections_of(ns):
        rows = col.get(ids=ids, include=["documents", "metadatas"])
        for doc, meta in zip(rows["documents"] or [], rows["metadatas"] or [], strict=True):
            if meta and meta.get("source") == "user_feedback" and meta.get("run_id"):
                feedback.setdefault(str(meta["run_id"]), []).append(doc or "")
        if rows["ids"]:
            col.delete(ids=list(rows["ids"]))
            deleted += len(rows["ids"])
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
            changed = True
            if role == "memories":
                store.replica.reindex(ns, upserts=list(cleaned.values()))
    store.replica.reindex(ns, deletes=ids)
    # The run records name the ids they served and produced, and hold the comments: scrubbed in storage.
    changed = store.run_records.scrub(ns, ids, feedback) > 0 or changed
    sides = []  # the copy a killed `hindsight reembed` left holds the units' text too (a re-run syncs the rest)
    for role in ROLES:
        side = store.backend.get_collection(collection_name(ns, role) + REEMBED_SUFFIX)
        if side is not None and (copied := side.exists(ids)):
            side.delete(ids=copied)
            sides.append(side.name)
    if not (deleted or changed or sides):
        return 0, []
    # A delete is logical, and a unit may have lived in another collection before (archived,
    # then restored; older journal versions): rebuild every collection of the namespace.
    return deleted, [*(col.name for _, col in store.collections_of(ns, ALL_ROLES)), *sides]


def scrub_collections(store: StoreCore, rebuild: list[str] | None) -> None:
    """Rebuild ``rebuild`` (names; ``None``: every hindsight collection), then erase files (resumably)."""
    directory = store.persist_directory
    if directory is None:  # nothing on disk (memory): the backend's deletes leave nothing behind
        store.backend.erase(rebuild)
        return
    try:
        Intent.SCRUB.write(directory)  # durable before any step: a crash resumes on reopen
        store.reopen_collections()
        store.backend.erase(rebuild)
        Intent.SCRUB.clear(directory)
        Intent.FORGET.clear(directory)  # a scrub of everything also finishes any forget noted before it
    except HindsightError:
        raise
    except OSError as e:
        raise StoreError(f"scrub of {directory} failed: {e}") from e


def _forgets_noted(directory: Path) -> list[dict[str, Any]]:
    """The forgets noted in ``directory`` and not finished (oldest first); an unreadable note is no note."""
    raw = Intent.FORGET.read(directory)
    try:
        data = json.loads(raw) if raw is not None else []
    except (ValueError, RecursionError):  # a torn (or garbled) write of the intent itself: nothing deleted under it
        logger.warning("ignoring an unreadable forget intent in %s", directory)
        return []
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


def finish_interrupted_scrub(store: StoreCore) -> None:
    """Complete a forget or scrub that a crash interrupted (a rebuild half-done, a marker or intent left).

    A backend without a directory (Postgres) keeps its note in the database: ``recover_interrupted`` finishes it.
    """
    directory = store.persist_directory
    if directory is None:
        if store.backend.can_erase and store.backend.recover_interrupted():
            logger.warning("finished an erase a killed process owed")
        return
    interrupted = store.backend.recover_interrupted()
    intents = _forgets_noted(directory)
    if intents:
        logger.warning("finishing %d interrupted forget(s) in %s", len(intents), directory)
        with store.lock:
            for intent in intents:
                ns, ids = str(intent.get("namespace")), intent.get("ids")
                if ids is None:
                    _drop_collections(store, ns)
                else:
                    _delete_ids(store, ns, [str(i) for i in ids])
        if not any(intent.get("scrub") for intent in intents):
            Intent.FORGET.clear(directory)
    if interrupted or Intent.SCRUB.pending(directory) or Intent.FORGET.pending(directory):
        logger.warning("finishing an interrupted scrub of %s", directory)
        scrub_collections(store, None)
