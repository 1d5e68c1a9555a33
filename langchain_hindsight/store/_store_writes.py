"""The write methods of ``MemoryStore``: add (dedupe, merge, supersede), update, feedback, share, archive."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langchain_hindsight._checks import is_int
from langchain_hindsight._safety import SUSPICIOUS_TAG
from langchain_hindsight.errors import ConfigurationError, MemoryNotFoundError, StoreError, WriteConflictError
from langchain_hindsight.store._codec import unit_to_metadata
from langchain_hindsight.store._collections import Collection, records
from langchain_hindsight.store._core import StoreCore, backend_errors, check_ids
from langchain_hindsight.store._naming import ROLES, Role
from langchain_hindsight.store._policy import feedback_reason, fresh_ids_for_taken, trust
from langchain_hindsight.store.apply import move_units, write_plan, write_updates
from langchain_hindsight.store.decide import (
    WritePlan,
    check_informative,
    check_source_change,
    check_unit,
    demote,
    plan_add,
    prepare,
    query_neighbours,
)
from langchain_hindsight.store.replan import Target, plan_supersede
from langchain_hindsight.store.writes import WriteResult
from langchain_hindsight.types import MemoryStatus, MemoryUnit, utcnow

__all__ = [
    "EMBED_BATCH",
    "add",
    "add_many",
    "archive",
    "discard",
    "embed_batched",
    "record_feedback",
    "restore",
    "share",
    "supersede",
    "update",
    "update_many",
    "write_exact",
]

logger = logging.getLogger(__name__)

EMBED_BATCH = 256
"""Texts per embedding call on the write path (each call batches further inside the embedder)."""


def _prepare(store: StoreCore, unit: MemoryUnit, namespace: str | None) -> MemoryUnit:
    return prepare(unit, namespace, default_namespace=store.namespace, vocabulary=store.vocabulary, policy=store.policy)


def add(
    store: StoreCore, unit: MemoryUnit, *, namespace: str | None = None, dedupe: bool = True, if_absent: bool = False
) -> WriteResult:
    """The body of :meth:`MemoryStore.add` (see there)."""
    return add_many(store, [unit], namespace=namespace, dedupe=dedupe, if_absent=if_absent)[0]


@backend_errors
def add_many(
    store: StoreCore,
    units: Sequence[MemoryUnit],
    *,
    namespace: str | None = None,
    dedupe: bool = True,
    if_absent: bool = False,
) -> list[WriteResult]:
    """The body of :meth:`MemoryStore.add_many` (see there); ``if_absent``: a stored id is a conflict, not renamed."""
    if isinstance(units, MemoryUnit) or not isinstance(units, Sequence):
        raise ConfigurationError("units must be a sequence of MemoryUnit")
    if not isinstance(dedupe, bool):
        raise ConfigurationError(f"dedupe must be a bool, got {dedupe!r}")
    if not isinstance(if_absent, bool):
        raise ConfigurationError(f"if_absent must be a bool, got {if_absent!r}")
    for u in units:
        check_unit(u)  # a wrong type is reported before anything about a unit's content
    prepared = [_prepare(store, u, namespace) for u in units]
    if not prepared:
        return []
    by_ns: dict[str, list[int]] = {}
    for i, u in enumerate(prepared):
        by_ns.setdefault(u.namespace, []).append(i)
    results: list[WriteResult | None] = [None] * len(prepared)
    for ns, idx in by_ns.items():
        # dedupe plans the whole batch at once (a unit may merge into an earlier one); a bulk import streams
        step = len(idx) if dedupe else EMBED_BATCH
        for start in range(0, len(idx), step):
            chunk = idx[start : start + step]
            batch = [prepared[i] for i in chunk]
            vectors = embed_batched(store, [u.content for u in batch])
            with store._lock:
                store._collection(ns)  # created outside the plan's transaction (a retry re-runs only the plan)
                plan = functools.partial(_add_namespace, store, ns, batch, vectors, dedupe, if_absent)
                stored = store._atomic(ns, plan)
            for i, result in zip(chunk, stored, strict=True):
                results[i] = result
    return [r for r in results if r is not None]


def check_premise(
    col: Collection, archive: Collection | None, units: list[MemoryUnit], taken: set[str], ns: str
) -> None:
    """What an ``if_absent`` add was planned on still holds, read inside its write plan; else nothing is written.

    Its ids are free, and a unit that continues another (``supersedes``) continues one that is
    still stored and that no active unit continues already (another writer's version).

    Raises:
        WriteConflictError: another writer changed that first.
    """
    if taken:
        raise WriteConflictError(
            f"memory {sorted(taken)[0]!r} is already stored in namespace {ns!r} (another writer created it first); "
            "nothing was written"
        )
    continued = sorted({u.supersedes for u in units if u.supersedes})
    if not continued:
        return
    present = set(col.exists(continued)) | (set(archive.exists(continued)) if archive is not None else set())
    if gone := [i for i in continued if i not in present]:
        raise WriteConflictError(
            f"memory {gone[0]!r} in namespace {ns!r}, which this write continues, was forgotten by another writer; "
            "nothing was written"
        )
    ahead = [u for u in records(col, where={"supersedes": {"$in": continued}}) if u.status == "active"]
    if ahead:
        raise WriteConflictError(
            f"memory {ahead[0].supersedes!r} in namespace {ns!r} was continued by another writer first "
            f"({ahead[0].memory_id}); nothing was written"
        )


def embed_batched(store: StoreCore, texts: list[str]) -> list[list[float]]:
    """``texts`` embedded in calls of at most :data:`EMBED_BATCH` texts (bounded memory, steady progress)."""
    vectors: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        chunk = texts[start : start + EMBED_BATCH]
        got = store.embeddings.embed_documents(chunk)
        if len(got) != len(chunk):
            raise StoreError("the embedder returned a different number of vectors than texts")
        vectors.extend(got)
    return vectors


def _add_namespace(
    store: StoreCore, ns: str, units: list[MemoryUnit], vectors: list[list[float]], dedupe: bool, if_absent: bool
) -> list[WriteResult]:
    col = store._vectors(store._collection(ns))
    assert col is not None
    ids = [u.memory_id for u in units]
    taken = set(col.exists(ids))  # add never overwrites a stored id (either collection)
    archive = store._collection(ns, "archive", create=False)
    if archive is not None:
        taken |= set(archive.exists(ids))
    if if_absent:
        check_premise(col, archive, units, taken, ns)
    units = fresh_ids_for_taken(units, taken)
    stored = query_neighbours(col, units, vectors, store.conflict_scope) if dedupe else None
    plan = plan_add(
        units,
        vectors,
        dedupe=dedupe,
        stored=stored,
        merge_threshold=store.merge_threshold,
        conflict_threshold=store.conflict_threshold,
        scope=store.conflict_scope,
        policy=store.policy,
        judge=store.judge,
    )
    write_plan(col, plan, store.backend.max_batch_size)
    store._replica.reindex(ns, upserts=[*(u for u, _ in plan.new.values()), *plan.changed.values()])
    for unit, result in zip(units, plan.results, strict=True):
        if result.action == "added":
            what = f"added as {result.memory_id}"
        elif result.action == "merged":
            what = f"merged into {result.memory_id}"
        else:
            what = f"superseded {', '.join(result.related_ids)}; stored as {result.memory_id}"
        logger.info("write %s in %r: %s (%s)", unit.memory_id, ns, what, result.reason)
    return plan.results


@backend_errors
def supersede(
    store: StoreCore, memory_ids: Sequence[str] | str, unit: MemoryUnit, *, reason: str, namespace: str | None = None
) -> WriteResult:
    """The body of :meth:`MemoryStore.supersede` (see there)."""
    ids = check_ids(memory_ids)
    if not ids:
        raise ConfigurationError("supersede needs at least one memory id")
    if not isinstance(reason, str) or not reason.strip():
        raise ConfigurationError("supersede needs a reason (it is logged and shown in history)")
    prepared = _prepare(store, check_unit(unit), namespace)
    ns = prepared.namespace
    vector = embed_batched(store, [prepared.content])[0]
    with store._lock:
        store._collection(ns)  # created outside the plan's transaction
        old, new, notes = store._atomic(ns, functools.partial(_supersede_plan, store, ids, prepared, vector, ns))
    related = tuple(u.memory_id for u in old)
    why = f"{reason} (re-planned: {'; '.join(notes)})" if notes else reason
    logger.info("write %s in %r: superseded %s (%s)", new.memory_id, ns, ", ".join(related), why)
    return WriteResult("superseded", new, related, why, tuple(old))


_CHAIN_STEPS = 256
"""At most this many successors are followed to a chain's active head (a cycle or a fork cannot loop)."""


def read_targets(store: StoreCore, ids: list[str], ns: str) -> list[Target]:
    """Each of ``ids`` as stored now, with the active head of its supersede chain (the read of a re-plan)."""
    now = {u.memory_id: u for u in store.get_many(ids, namespace=ns)}
    col = store._collection(ns, create=False)
    targets: list[Target] = []
    for i in ids:
        unit = now.get(i)
        head = unit
        seen = {i}
        while head is not None and head.status == "superseded" and col is not None and len(seen) < _CHAIN_STEPS:
            successors = [u for u in records(col, where={"supersedes": head.memory_id}) if u.memory_id not in seen]
            if not successors:
                head = None
                break
            active = [u for u in successors if u.status == "active"]
            head = (active or sorted(successors, key=lambda u: u.created_at))[-1]
            seen.add(head.memory_id)
        targets.append(Target(i, unit, head if head is not None and head.status == "active" else None))
    return targets


def _supersede_plan(
    store: StoreCore, ids: list[str], prepared: MemoryUnit, vector: list[float], ns: str
) -> tuple[list[MemoryUnit], MemoryUnit, tuple[str, ...]]:
    """Re-read, re-plan and write a supersede (see :func:`supersede`): the demoted units, the new one, the notes.

    Runs inside the namespace's write plan, so what it reads here is what it writes over:
    a target another process superseded since the caller read it is followed to the
    newest version of its chain (``replan.plan_supersede``).
    """
    planned = plan_supersede(read_targets(store, ids, ns), ns)
    old = list(planned.replace)
    weaker = [u.memory_id for u in old if trust(prepared.source) > trust(u.source)]
    if weaker:
        raise ConfigurationError(f"a {prepared.source} unit never replaces a more trusted one ({', '.join(weaker)})")
    col = store._vectors(store._collection(ns))
    assert col is not None
    taken = set(col.exists([prepared.memory_id]))
    archive = store._collection(ns, "archive", create=False)
    if archive is not None:
        taken |= set(archive.exists([prepared.memory_id]))
    new = fresh_ids_for_taken([prepared], taken)[0].evolve(supersedes=old[0].memory_id)
    plan = WritePlan()
    plan.new[new.memory_id] = (new, vector)
    plan.changed.update((u.memory_id, demote(u, store.policy)) for u in old)
    plan.superseding.add(new.memory_id)
    write_plan(col, plan, store.backend.max_batch_size)
    store._replica.reindex(ns, upserts=[new, *plan.changed.values()])
    if planned.notes:
        logger.info("supersede in %r re-planned: %s", ns, "; ".join(planned.notes))
    return old, new, planned.notes


@backend_errors
def update(store: StoreCore, memory_id: str, /, *, namespace: str | None = None, **changes: Any) -> MemoryUnit:
    """The body of :meth:`MemoryStore.update` (see there)."""
    if {"memory_id", "namespace"} & set(changes):
        raise ConfigurationError("memory_id and namespace cannot be changed; add a new unit instead")
    ns = store._ns(namespace)
    if "task_type" in changes:
        if not isinstance(changes["task_type"], str):
            raise ConfigurationError(f"task_type must be a string, got {type(changes['task_type']).__name__}")
        changes["task_type"] = store.vocabulary.resolve(changes["task_type"])

    def plan() -> MemoryUnit:  # read, check and write as one plan (one transaction on a database)
        current = store.get(memory_id, namespace=ns)
        check_source_change(current, changes.get("source", current.source))
        if "content" in changes:
            check_informative(current.evolve(content=changes["content"]))
        return update_many(store, [current.evolve(**changes)], namespace=ns)[0]

    with store._lock:
        return store._atomic(ns, plan)


@backend_errors
def update_many(store: StoreCore, units: Sequence[MemoryUnit], *, namespace: str | None = None) -> list[MemoryUnit]:
    """The body of :meth:`MemoryStore.update_many` (see there)."""
    if isinstance(units, MemoryUnit) or not isinstance(units, Sequence):
        raise ConfigurationError("units must be a sequence of MemoryUnit")
    units = [check_unit(u) for u in units]
    ns = store._ns(namespace)
    if any(u.namespace != ns for u in units):
        raise ConfigurationError(f"every unit must belong to namespace {ns!r}")
    if not units:
        return []
    with store._lock:
        return store._atomic(ns, functools.partial(_update_plan, store, units, ns))


def _update_plan(store: StoreCore, units: list[MemoryUnit], ns: str) -> list[MemoryUnit]:
    """Write :func:`update_many`'s new versions (one plan)."""
    written: list[MemoryUnit] = []
    for role in ROLES:
        col = store._collection(ns, role, create=False)
        if col is None:
            continue
        batch = write_updates(col, role, units, functools.partial(store._embed_into, col))
        if not batch:
            continue
        if role == "memories":
            store._replica.reindex(ns, upserts=batch)
        written.extend(batch)
    missing = {u.memory_id for u in units} - {u.memory_id for u in written}
    if missing:
        raise MemoryNotFoundError(f"no memory {sorted(missing)[0]!r} in namespace {ns!r}")
    order = {u.memory_id: i for i, u in enumerate(units)}
    return sorted(written, key=lambda u: order[u.memory_id])


@backend_errors
def record_feedback(
    store: StoreCore,
    memory_ids: Sequence[str] | str,
    *,
    success: bool | None = None,
    rejected: bool = False,
    namespace: str | None = None,
    now: datetime | None = None,
    repeats: Mapping[str, int] | None = None,
    reason: str | None = None,
) -> list[MemoryUnit]:
    """The body of :meth:`MemoryStore.record_feedback` (see there)."""
    ids = check_ids(memory_ids)
    if success is not None and not isinstance(success, bool):
        raise ConfigurationError(f"success must be True, False or None, got {success!r}")
    if not isinstance(rejected, bool):
        raise ConfigurationError(f"rejected must be a bool, got {rejected!r}")
    counts = dict(repeats or {})
    if not all(is_int(n, 0) for n in counts.values()):
        raise ConfigurationError(f"repeats must map memory ids to non-negative ints, got {repeats!r}")
    if reason is not None and not isinstance(reason, str):
        raise ConfigurationError(f"reason must be a string or None, got {type(reason).__name__}")
    if now is not None and not isinstance(now, datetime):
        raise ConfigurationError(f"now must be a datetime or None, got {type(now).__name__}")
    when = utcnow() if now is None else now if now.tzinfo else now.replace(tzinfo=UTC)
    ns = store._ns(namespace)
    with store._lock:
        current, written = store._atomic(
            ns, functools.partial(_feedback_plan, store, ids, ns, when, success, rejected, counts)
        )
    if success is not None or rejected:
        for old, new in zip(current, written, strict=True):
            why = feedback_reason(
                store.policy, success=success, rejected=rejected, repeats=counts.get(old.memory_id, 0), reason=reason
            )
            logger.info(
                "confidence of %s in %r: %.4f → %.4f (%s)",
                old.memory_id,
                ns,
                old.score_confidence,
                new.score_confidence,
                why,
            )
    return written


def _feedback_plan(
    store: StoreCore,
    ids: list[str],
    ns: str,
    when: datetime,
    success: bool | None,
    rejected: bool,
    counts: dict[str, int],
) -> tuple[list[MemoryUnit], list[MemoryUnit]]:
    """Read the units and write their credited versions (one plan of :func:`record_feedback`)."""
    current = store.get_many(ids, namespace=ns)
    if len(current) != len(ids):
        gone = sorted(set(ids) - {u.memory_id for u in current})
        logger.warning("feedback skipped for %d unknown memory id(s): %s", len(gone), gone[:5])
    for u in current:  # see replan: a credit stays with the version that earned it
        if u.status != "active":
            logger.info("feedback on %s in %r recorded against that version (it is %s now)", u.memory_id, ns, u.status)
    updated = [
        u.evolve(
            access_count=u.access_count + 1,
            last_accessed_at=max(u.last_accessed_at, when),
            confidence=_credited(store, u, success=success, rejected=rejected, repeats=counts.get(u.memory_id, 0)),
        )
        for u in current
    ]
    written = update_many(store, updated, namespace=ns)
    return current, written


def _credited(store: StoreCore, unit: MemoryUnit, *, success: bool | None, rejected: bool, repeats: int) -> float:
    """The policy's new confidence for ``unit``; a credit never lifts a ``suspicious`` unit over the cap."""
    confidence = store.policy.apply(unit.score_confidence, success=success, rejected=rejected, repeats=repeats)
    if success is True and not rejected and SUSPICIOUS_TAG in unit.tags:
        capped = max(unit.score_confidence, store.policy.suspicious_cap)
        if confidence > capped:
            logger.info("memory %s is suspicious: its credit stops at %.2f", unit.memory_id, capped)
            confidence = capped
    return confidence


@backend_errors
def share(
    store: StoreCore, memory_ids: Sequence[str] | str, *, to_namespace: str, namespace: str | None = None
) -> list[MemoryUnit]:
    """The body of :meth:`MemoryStore.share` (see there)."""
    ids = check_ids(memory_ids)
    src = store._ns(namespace)
    dst = store._ns(to_namespace)
    if src == dst:
        raise ConfigurationError(f"to_namespace must differ from the source namespace {src!r}")
    with store._lock:
        copies = [
            u.evolve(namespace=dst, status="active", supersedes=None, merged_from=[])
            for u in store.get_many(ids, namespace=src)
        ]
        return [r.unit for r in add_many(store, copies, namespace=dst)] if copies else []


@backend_errors
def archive(store: StoreCore, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
    """The body of :meth:`MemoryStore.archive` (see there)."""
    return _move(store, check_ids(memory_ids), store._ns(namespace), "memories", "archive")


@backend_errors
def restore(store: StoreCore, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
    """The body of :meth:`MemoryStore.restore` (see there)."""
    return _move(store, check_ids(memory_ids), store._ns(namespace), "archive", "memories")


def _move(store: StoreCore, ids: list[str], ns: str, src_role: Role, dst_role: Role) -> list[MemoryUnit]:
    if not ids:
        return []
    with store._lock:
        if store._collection(ns, src_role, create=False) is None:
            return []
        store._collection(ns, dst_role)  # created outside the plan's transaction
        return store._atomic(ns, functools.partial(_move_plan, store, ids, ns, src_role, dst_role))


def _move_plan(store: StoreCore, ids: list[str], ns: str, src_role: Role, dst_role: Role) -> list[MemoryUnit]:
    """Move ``ids`` from the ``src_role`` to the ``dst_role`` collection (one plan of :func:`_move`)."""
    src = store._collection(ns, src_role, create=False)  # the current one: another process may have replaced it
    if src is None:
        return []
    status: MemoryStatus = "archived" if dst_role == "archive" else "active"
    moved = move_units(src, functools.partial(store._collection, ns, dst_role), ids, status)
    if not moved:
        return []
    if dst_role == "archive":
        store._replica.reindex(ns, deletes=[u.memory_id for u in moved])
    else:
        store._replica.reindex(ns, upserts=moved)
    return moved


@backend_errors
def discard(store: StoreCore, memory_ids: Sequence[str], *, namespace: str | None = None) -> int:
    """The body of :meth:`MemoryStore.discard` (see there)."""
    ids = check_ids(memory_ids) if memory_ids else []
    ns = store._ns(namespace)
    with store._lock:
        if store._collection(ns, create=False) is None or not ids:
            return 0

        def plan() -> int:
            col = store._collection(ns, create=False)  # the current one: another process may have replaced it
            if col is None:
                return 0
            present = col.exists(ids)
            step = store.backend.max_batch_size
            for start in range(0, len(present), step):
                col.delete(ids=present[start : start + step])
            store._replica.reindex(ns, deletes=present)
            return len(present)

        return store._atomic(ns, plan)


def write_exact(store: StoreCore, units: list[MemoryUnit], vectors: list[list[float]]) -> dict[str, int]:
    """Write ``units`` exactly as given (import, restore): each into its collection, out of the other one.

    Returns:
        Units written per namespace.
    """
    groups: dict[tuple[str, bool], list[int]] = {}
    for i, u in enumerate(units):
        groups.setdefault((u.namespace, u.status == "archived"), []).append(i)
    per_ns: dict[str, int] = {}
    with store._lock:
        for (ns, archived), idx in groups.items():
            roles: tuple[Role, Role] = ("archive", "memories") if archived else ("memories", "archive")
            store._collection(ns, roles[0])  # created outside the plan's transaction
            batch = [units[i] for i in idx]
            ids = [u.memory_id for u in batch]
            store._atomic(  # one write plan: on a database the upsert and the delete commit together
                ns,
                functools.partial(_write_group, store, ns, roles, batch, [vectors[i] for i in idx]),
            )
            if archived:
                store._replica.reindex(ns, deletes=ids)
            else:
                store._replica.reindex(ns, upserts=batch)
            per_ns[ns] = per_ns.get(ns, 0) + len(batch)
    return per_ns


def _write_group(
    store: StoreCore, ns: str, roles: tuple[Role, Role], batch: list[MemoryUnit], vectors: list[list[float]]
) -> None:
    """The plan of :func:`write_exact` for one group: upsert ``batch`` into ``roles[0]``, delete it from ``roles[1]``.

    The vectors must be this store's embedder's: the target collection's recorded embedder is checked.
    """
    target = store._vectors(store._collection(ns, roles[0]))
    assert target is not None  # create=True always returns a collection
    other = store._collection(ns, roles[1], create=False)
    ids = [u.memory_id for u in batch]
    target.upsert(
        ids=ids,
        embeddings=vectors,
        documents=[u.content for u in batch],
        metadatas=[unit_to_metadata(u) for u in batch],
    )
    stale = other.exists(ids) if other is not None else []
    if other is not None and stale:  # an id lives in one collection only
        other.delete(ids=stale)
