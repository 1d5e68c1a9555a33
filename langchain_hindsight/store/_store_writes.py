"""The write methods of ``MemoryStore`` (it binds these functions): each one read, plan, apply.

A write checks and prepares its units outside any lock (``writes.prepare``), embeds them, creates the
collection it writes, then runs one write plan (``StoreCore.atomic``; a database may re-run it, so it reads
everything it decides on inside): read, decide (``writes``, pure), write (``apply``), tell the replica.
A judge other than the rules is asked before the plan, outside its locks (:func:`_add_planner`).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np

from langchain_hindsight._checks import is_int
from langchain_hindsight.confidence import feedback_reason
from langchain_hindsight.errors import ConfigurationError, MemoryNotFoundError, StoreError
from langchain_hindsight.store._codec import unit_from_record
from langchain_hindsight.store._collections import Collection, records
from langchain_hindsight.store._core import StoreCore, backend_errors, check_ids
from langchain_hindsight.store._naming import Role
from langchain_hindsight.store.apply import delete_units, move_units, place_units, write_plan, write_updates
from langchain_hindsight.store.replica.records import Mirror
from langchain_hindsight.types import MemoryStatus, MemoryUnit, utcnow
from langchain_hindsight.writes import (
    NEIGHBOURS,
    Neighbour,
    RuleWriteJudge,
    Target,
    WriteDecision,
    WriteJudge,
    WritePlan,
    WriteResult,
    check_premise,
    check_unit,
    check_update,
    fresh_ids_for_taken,
    plan_add,
    plan_feedback,
    plan_successor,
    plan_supersede,
    prepare,
)

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

_R = TypeVar("_R")

Planner = Callable[[str, Collection, list[MemoryUnit], list[list[float]]], WritePlan]
"""Plans new units (their ids free) from what it reads in the namespace's collection: ``plan_add`` or a successor."""
PlannerOf = Callable[[str, list[MemoryUnit], list[list[float]]], Planner]
"""The :data:`Planner` of one batch of a namespace's new units (and their vectors), made before its write plan runs."""

EMBED_BATCH = 256
"""Texts per embedding call on the write path (each call batches further inside the embedder)."""

_QUERY_BATCH = 1000  # query vectors per backend call when looking up a batch's stored neighbours
_MIRROR_WINDOW = 64  # the mirror's nearest units a neighbour lookup reads for its scope before it reads every row
_UNIT_LENGTH_TOLERANCE = 1e-3  # how far from 1 a vector's length may be for the mirror's dot product to be its cosine
_CHAIN_STEPS = 256  # successors followed at most to a chain's active head (a cycle or a fork cannot loop)
_DID = {"added": "added as {id}", "merged": "merged into {id}", "superseded": "superseded {related}; stored as {id}"}


def add(
    store: StoreCore, unit: MemoryUnit, *, namespace: str | None = None, dedupe: bool = True, if_absent: bool = False
) -> WriteResult:
    """Store ``unit``; return what the write did (:class:`~langchain_hindsight.writes.WriteResult`).

    With ``dedupe`` (default) the rules of :mod:`~langchain_hindsight.writes` decide whether it is
    ``"added"``, ``"merged"`` into the same statement or ``"superseded"`` one. ``namespace`` overrides
    ``unit.namespace``. Logged at INFO. ``if_absent=True`` stores ``unit`` under its own id or not at all
    (a key's first version, as ``HindsightStore.put`` writes it): an id already stored, or a ``supersedes``
    naming a unit that is gone or already continued, means another writer was first.

    Example:
        >>> store.add(MemoryUnit(content="客户甲公司希望通过邮件联系。")).action  # doctest: +SKIP
        'added'

    Raises:
        ConfigurationError: ``unit`` is not a :class:`MemoryUnit`.
        UninformativeMemoryError: its content carries no information (``"ok"``, ``"好的"``, emoji only);
            an :class:`~langchain_hindsight.errors.InvalidMemoryError`. Nothing was changed.
        StoreError: the backend failed; nothing was changed.
        WriteConflictError: ``if_absent`` and another writer was first; nothing was changed.
    """
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
    """Store many units with one batch embedding; one :class:`WriteResult` per unit, aligned with ``units``.

    A unit may merge into, or supersede, an earlier unit of the same batch. ``dedupe=False`` stores
    every unit as given (bulk import; an id already stored still gets a fresh one). Every unit is
    checked before anything is written: one uninformative unit (``UninformativeMemoryError``) refuses
    the batch. ``if_absent``: as :meth:`add`, for every unit.
    """
    units = _check_units(units)
    for name, flag in (("dedupe", dedupe), ("if_absent", if_absent)):
        if not isinstance(flag, bool):
            raise ConfigurationError(f"{name} must be a bool, got {flag!r}")
    planner = functools.partial(_add_planner, store, dedupe)
    # dedupe plans a namespace's whole batch at once (a unit may merge into an earlier one); a bulk import streams
    return _write_new(store, units, namespace, planner, step=0 if dedupe else EMBED_BATCH, if_absent=if_absent)


def _check_units(units: object) -> list[MemoryUnit]:
    if isinstance(units, MemoryUnit) or not isinstance(units, Sequence):
        raise ConfigurationError("units must be a sequence of MemoryUnit")
    return [check_unit(u) for u in units]  # a wrong type is reported before anything about a unit's content


def _write_new(
    store: StoreCore, units: list[MemoryUnit], namespace: str | None, planner: PlannerOf, *, step: int, if_absent: bool
) -> list[WriteResult]:
    """Prepare ``units``, then per namespace (in batches of ``step``; 0: all at once) embed and write them."""
    prepared = [prepare(u, namespace, store) for u in units]
    by_ns: dict[str, list[int]] = {}
    for i, u in enumerate(prepared):
        by_ns.setdefault(u.namespace, []).append(i)
    results: dict[int, WriteResult] = {}
    for ns, idx in by_ns.items():
        size = step or len(idx)
        for start in range(0, len(idx), size):
            chunk = idx[start : start + size]
            batch = [prepared[i] for i in chunk]
            vectors = embed_batched(store, [u.content for u in batch])
            plan = functools.partial(_new_units_plan, store, ns, batch, vectors, planner(ns, batch, vectors), if_absent)
            results |= dict(zip(chunk, _run(store, ns, "memories", plan), strict=True))
    return [results[i] for i in range(len(prepared))]


def _run(store: StoreCore, ns: str, role: Role, plan: Callable[[], _R]) -> _R:
    """Run ``plan``, after creating the collection it writes outside its transaction (a retry re-runs only the plan)."""
    with store.lock:
        store.collection(ns, role, create=True)
        return store.atomic(ns, plan)


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


def _taken(store: StoreCore, col: Collection, ns: str, ids: list[str]) -> set[str]:
    """Which of ``ids`` are stored in ``ns`` (memories ``col`` or the archive): a write never overwrites them."""
    archive = store.collection(ns, "archive", create=False)
    return set(col.exists(ids)) | (set(archive.exists(ids)) if archive is not None else set())


def _new_units_plan(
    store: StoreCore, ns: str, units: list[MemoryUnit], vectors: list[list[float]], planner: Planner, if_absent: bool
) -> list[WriteResult]:
    col = store.vector_collection(ns)
    taken = _taken(store, col, ns, [u.memory_id for u in units])
    if if_absent:  # what the write was planned on, read inside its plan (else another writer was first)
        continued = sorted({u.supersedes for u in units if u.supersedes})
        stored = _taken(store, col, ns, continued) if continued else set()
        ahead = records(col, where={"supersedes": {"$in": continued}}) if continued else []
        check_premise(ns, taken, continued, stored, ahead)
    units = fresh_ids_for_taken(units, taken)
    plan = planner(ns, col, units, vectors)
    write_plan(col, plan, store.backend.max_batch_size)
    store.replica.reindex(ns, upserts=[*(u for u, _ in plan.new.values()), *plan.changed.values()])
    for unit, r in zip(units, plan.results, strict=True):
        what = _DID[r.action].format(id=r.memory_id, related=", ".join(r.related_ids))
        logger.info("write %s in %r: %s (%s)", unit.memory_id, ns, what, r.reason)
    return plan.results


@dataclass(slots=True)
class _AskOnce:
    """A write judge that asks ``asked`` each question once: the new unit, and each neighbour's every field.

    ``confirming`` (the write plan's turn): a question not asked before is logged (what the judge sees changed).
    """

    asked: WriteJudge
    answers: dict[str, WriteDecision] = field(default_factory=dict)
    confirming: bool = False

    def judge(self, unit: MemoryUnit, neighbours: Sequence[Neighbour]) -> WriteDecision:
        question = json.dumps([unit.to_dict(), [[n.unit.to_dict(), n.similarity, n.contradicts] for n in neighbours]])
        if question not in self.answers:
            if self.confirming:
                why = "its neighbours changed since the write judge was asked outside the lock, so it was asked again"
                logger.info("write %s in %r: %s", unit.memory_id, unit.namespace, why)
            self.answers[question] = self.asked.judge(unit, neighbours)
        return self.answers[question]


def _add_planner(
    store: StoreCore, dedupe: bool, ns: str, units: list[MemoryUnit], vectors: list[list[float]]
) -> Planner:
    """:func:`plan_add` (of ``writes``) on the stored neighbours; a judge other than the rules (a model) is asked first.

    That pre-pass reads and decides as the plan will, without its locks (recall and other writers do not wait for the
    model) and writing nothing; the plan reads and decides again, asking only a question not asked before.
    """
    asked = None  # the store's own judge is other threads' too: it is wrapped, not replaced
    if dedupe and store.conflict_threshold is not None and type(store.judge) is not RuleWriteJudge:
        asked = _AskOnce(store.judge)

    def planner(ns: str, col: Collection | None, batch: list[MemoryUnit], at: list[list[float]]) -> WritePlan:
        with store.lock:  # the read only, as a recall holds it
            near = _neighbours(store, ns, col, batch, at) if dedupe else []
        return plan_add(batch, at, near, store, dedupe=dedupe, judge=asked)

    if asked is not None:
        planner(ns, store.memories(ns), units, vectors)
        asked.confirming = True
    return planner


def _neighbours(
    store: StoreCore, ns: str, col: Collection | None, units: list[MemoryUnit], vectors: list[list[float]]
) -> list[list[Neighbour]]:
    """Each unit's :data:`~langchain_hindsight.writes.NEIGHBOURS` stored active units nearest in its scope.

    Read from the namespace's held recall mirror when nothing else writes the data (an embedded store); else, and
    for a unit the mirror cannot answer, one batched backend query per scope (task type and kind, or the namespace).
    """
    out: list[list[Neighbour]] = [[] for _ in units]
    if col is None:  # none to look up
        return out
    mirror = store.replica.held_mirror(ns, load=False) if store.backend.single_writer else None
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, u in enumerate(units):
        groups.setdefault((u.task_type, u.kind) if store.conflict_scope == "task_type" else (), []).append(i)
    for key, idx in groups.items():
        if mirror is not None:
            found = {i: _mirror_neighbours(mirror, vectors[i], key) for i in idx}
            for i, neighbours in found.items():
                out[i] = neighbours or []
            idx = [i for i in idx if found[i] is None]  # the mirror could not answer: ask the backend
        active: dict[str, Any] = {"status": "active"}
        where = {"$and": [active, {"task_type": key[0]}, {"kind": key[1]}]} if key else active
        for start in range(0, len(idx), _QUERY_BATCH):
            chunk = idx[start : start + _QUERY_BATCH]
            res = col.query(
                query_embeddings=[vectors[i] for i in chunk],
                n_results=NEIGHBOURS,
                where=where,
                include=["documents", "metadatas", "distances"],
            )
            for j, i in enumerate(chunk):
                rows = zip(res["ids"][j], res["documents"][j], res["metadatas"][j], res["distances"][j], strict=True)
                out[i] = [Neighbour(unit_from_record(m, d, md), 1.0 - float(dist)) for m, d, md, dist in rows]
    return out


def _mirror_neighbours(mirror: Mirror, vector: Sequence[float], scope: tuple[str, ...]) -> list[Neighbour] | None:
    """The :data:`NEIGHBOURS` active units nearest ``vector`` in ``scope``, by the mirror's exact cosine.

    ``None`` when the mirror cannot answer: ``vector`` is not unit length (the dot product is the cosine only then).
    A scope the window of nearest units does not fill (a task type with few units) is read from every mirrored row.
    """
    if abs(float(np.linalg.norm(np.asarray(vector, dtype=np.float64))) - 1.0) > _UNIT_LENGTH_TOLERANCE:
        return None
    nearest = mirror.nearest(vector, _MIRROR_WINDOW)
    found: list[Neighbour] = []
    for memory_id, similarity in nearest:
        unit = mirror.unit(memory_id)
        if not scope or (unit.task_type, unit.kind) == scope:
            found.append(Neighbour(unit, similarity))
            if len(found) == NEIGHBOURS:
                return found
    if len(nearest) < _MIRROR_WINDOW:  # the window held every active unit: all were seen
        return found
    near = mirror.nearest(vector, NEIGHBOURS, {"task_type": scope[0], "kind": scope[1]})
    return [Neighbour(mirror.unit(memory_id), similarity) for memory_id, similarity in near]


@backend_errors
def supersede(
    store: StoreCore, memory_ids: Sequence[str] | str, unit: MemoryUnit, *, reason: str, namespace: str | None = None
) -> WriteResult:
    """Store ``unit`` as the successor of the active units ``memory_ids`` (e.g. a user's correction).

    The caller has decided the relation, so no judge is asked and nothing is merged: ``unit`` names the
    first of them in ``supersedes`` and each becomes ``superseded`` (confidence × ``supersede_factor``).
    One another process superseded since the caller read it is followed to the newest version of its
    chain (``writes.plan_supersede``; ``result.reason`` says so). Logged at INFO with ``reason``.

    Returns:
        ``"superseded"``, ``related_ids`` the ids demoted, ``previous`` their state before.

    Raises:
        MemoryNotFoundError: none of ``memory_ids`` has an active version in the namespace.
        ConfigurationError: no ``reason``, or ``unit`` is less trusted than one it would replace.
    """
    ids = check_ids(memory_ids)
    if not ids:
        raise ConfigurationError("supersede needs at least one memory id")
    if not isinstance(reason, str) or not reason.strip():
        raise ConfigurationError("supersede needs a reason (it is logged and shown in history)")

    def planner(ns: str, col: Collection, units: list[MemoryUnit], vectors: list[list[float]]) -> WritePlan:
        """Re-read the targets (each followed to the active head of its supersede chain) and re-plan on them."""
        now = {u.memory_id: u for u in store.get_many(ids, namespace=ns)}
        targets: list[Target] = []
        for i in ids:
            head, seen = now.get(i), {i}
            while head is not None and head.status == "superseded" and len(seen) < _CHAIN_STEPS:
                successors = [u for u in records(col, where={"supersedes": head.memory_id}) if u.memory_id not in seen]
                if not successors:  # a superseded head without a successor: no active version
                    break
                active = [u for u in successors if u.status == "active"]
                head = (active or sorted(successors, key=lambda u: u.created_at))[-1]
                seen.add(head.memory_id)
            targets.append(Target(i, now.get(i), head if head is not None and head.status == "active" else None))
        planned = plan_supersede(targets, ns, source=units[0].source)
        return plan_successor(units[0], vectors[0], planned, store.policy, reason)

    return _write_new(store, [check_unit(unit)], namespace, lambda *_: planner, step=0, if_absent=False)[0]


@backend_errors
def update(store: StoreCore, memory_id: str, /, *, namespace: str | None = None, **changes: Any) -> MemoryUnit:
    """Change fields of a stored unit (a ``content`` change re-embeds); return the stored result.

    Raises:
        MemoryNotFoundError: no such unit.
        InvalidMemoryError: the changed unit would be invalid, or its new content carries
            no information (``UninformativeMemoryError``); nothing is written.
    """
    if {"memory_id", "namespace"} & set(changes):
        raise ConfigurationError("memory_id and namespace cannot be changed; add a new unit instead")
    ns = store.namespace_or_default(namespace)
    if "task_type" in changes:  # resolve refuses a non-string
        changes["task_type"] = store.vocabulary.resolve(changes["task_type"])

    def plan() -> MemoryUnit:  # read, check and write as one plan (one transaction on a database)
        return _update_plan(store, [check_update(store.get(memory_id, namespace=ns), changes)], ns)[0]

    return store.atomic(ns, plan)


@backend_errors
def update_many(store: StoreCore, units: Sequence[MemoryUnit], *, namespace: str | None = None) -> list[MemoryUnit]:
    """Write new versions of existing units in one batch (re-embedding only changed content).

    Units keep their collection: :meth:`archive` and :meth:`restore` move them.

    Raises:
        MemoryNotFoundError: one of the units does not exist (nothing is written).
    """
    units = _check_units(units)
    ns = store.namespace_or_default(namespace)
    if any(u.namespace != ns for u in units):
        raise ConfigurationError(f"every unit must belong to namespace {ns!r}")
    if not units:
        return []
    return store.atomic(ns, functools.partial(_update_plan, store, units, ns))


def _check_stays(role: Role, units: list[MemoryUnit]) -> list[MemoryUnit]:
    """``units``, found in the ``role`` collection, if an update leaves each there (moving is archive/restore)."""
    if role == "archive" and any(u.status != "archived" for u in units):
        raise ConfigurationError("use restore() to bring an archived unit back")
    if role == "memories" and any(u.status == "archived" for u in units):
        raise ConfigurationError("use archive() to archive a unit")
    return units


def _update_plan(store: StoreCore, units: list[MemoryUnit], ns: str) -> list[MemoryUnit]:
    found: list[tuple[Role, Collection, list[MemoryUnit], dict[str, str]]] = []
    for role, col in store.collections_of(ns):
        rows = col.get(ids=[u.memory_id for u in units], include=["documents"])
        documents = dict(zip(rows["ids"], rows["documents"] or [], strict=True))
        if batch := _check_stays(role, [u for u in units if u.memory_id in documents]):
            found.append((role, col, batch, documents))
    written = [u for _, _, batch, _ in found for u in batch]
    if missing := {u.memory_id for u in units} - {u.memory_id for u in written}:
        raise MemoryNotFoundError(f"no memory {sorted(missing)[0]!r} in namespace {ns!r}")
    for role, col, batch, documents in found:
        write_updates(col, batch, documents, functools.partial(_embed_into, store, ns, role))
        if role == "memories":
            store.replica.reindex(ns, upserts=batch)
    order = {u.memory_id: i for i, u in enumerate(units)}
    return sorted(written, key=lambda u: order[u.memory_id])


def _embed_into(store: StoreCore, ns: str, role: Role, texts: list[str]) -> list[list[float]]:
    store.vector_collection(ns, role)  # new vectors go only where this store's embedder is recorded
    return embed_batched(store, texts)


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
    """Apply the outcome of a task that used these memories (success raises confidence, failure lowers it).

    Each gets one more access now and its confidence moved by the store's :class:`ConfidencePolicy`:
    ``success`` True or False, ``rejected=True`` (the user said it is wrong), ``success=None`` only the
    access. ``repeats`` counts a memory's earlier credits for the same task (from the run journal), which
    diminish a success's. Unknown ids are skipped with a warning; every credit and debit is logged at
    INFO, old → new, with ``reason`` (e.g. ``"success of run r1"``) and how the policy applied it.

    Example:
        >>> store.record_feedback([unit.memory_id], success=True, repeats={unit.memory_id: 1})  # doctest: +SKIP

    Returns:
        The updated units.
    """
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
    ns = store.namespace_or_default(namespace)

    def plan() -> tuple[list[MemoryUnit], list[MemoryUnit]]:  # read the units, write their credited versions
        current = store.get_many(ids, namespace=ns)
        if len(current) != len(ids):
            gone = sorted(set(ids) - {u.memory_id for u in current})
            logger.warning("feedback skipped for %d unknown memory id(s): %s", len(gone), gone[:5])
        for u in (u for u in current if u.status != "active"):  # a credit stays with the version that earned it
            logger.info("feedback on %s in %r recorded against that version (it is %s now)", u.memory_id, ns, u.status)
        credited = plan_feedback(
            current, when=when, success=success, rejected=rejected, repeats=counts, policy=store.policy
        )
        return current, _update_plan(store, credited, ns) if credited else []

    current, written = store.atomic(ns, plan)
    if success is not None or rejected:
        for old, new in zip(current, written, strict=True):
            n = counts.get(old.memory_id, 0)
            why = feedback_reason(store.policy, success=success, rejected=rejected, repeats=n, reason=reason)
            before, after = old.score_confidence, new.score_confidence
            logger.info("confidence of %s in %r: %.4f → %.4f (%s)", old.memory_id, ns, before, after, why)
    return written


@backend_errors
def share(
    store: StoreCore, memory_ids: Sequence[str] | str, *, to_namespace: str, namespace: str | None = None
) -> list[MemoryUnit]:
    """Copy units into another namespace: the one explicit way a memory crosses namespaces.

    Agents share experience by copying chosen units into a namespace they all read (e.g. ``"shared"``).
    The copy keeps id, content, provenance and counters, is active, goes through the target's write
    rules, and is independent afterwards (forgetting the original does not forget it).

    Example:
        >>> store.share([unit.memory_id], namespace="alice", to_namespace="shared")  # doctest: +SKIP

    Returns:
        What is now stored in ``to_namespace`` for each unit found (missing ids are skipped).

    Raises:
        ConfigurationError: ``to_namespace`` equals the source namespace or is invalid.
    """
    ids = check_ids(memory_ids)
    src = store.namespace_or_default(namespace)
    dst = store.namespace_or_default(to_namespace)
    if src == dst:
        raise ConfigurationError(f"to_namespace must differ from the source namespace {src!r}")
    # not under store.lock: the copies' write asks its judge outside the lock (add_many) and re-reads inside its plan
    copies = [
        u.evolve(namespace=dst, status="active", supersedes=None, merged_from=[])
        for u in store.get_many(ids, namespace=src)
    ]
    return [r.unit for r in add_many(store, copies, namespace=dst)] if copies else []


@backend_errors
def archive(store: StoreCore, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
    """Move units to the namespace's cold collection (excluded from recall, restorable)."""
    return _move(store, memory_ids, namespace, "memories", "archive")


@backend_errors
def restore(store: StoreCore, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
    """Bring archived units back as active units."""
    return _move(store, memory_ids, namespace, "archive", "memories")


def _move(
    store: StoreCore, memory_ids: Sequence[str], namespace: str | None, src_role: Role, dst_role: Role
) -> list[MemoryUnit]:
    ids, ns = check_ids(memory_ids), store.namespace_or_default(namespace)
    status: MemoryStatus = "archived" if dst_role == "archive" else "active"

    def plan() -> list[MemoryUnit]:
        src = store.collection(ns, src_role, create=False)  # the current one: another process may have replaced it
        if src is None:
            return []
        dst = store.collection(ns, dst_role, create=False)
        assert dst is not None  # created before the plan
        moved = move_units(src, dst, ids, status)
        _reindex_into(store, ns, dst_role, moved)
        return moved

    if not ids or store.collection(ns, src_role, create=False) is None:
        return []
    return _run(store, ns, dst_role, plan)


def _reindex_into(store: StoreCore, ns: str, role: Role, units: list[MemoryUnit]) -> None:
    """``units`` now live in ``role``: the replica, which holds active and superseded units, follows."""
    if units and role == "archive":
        store.replica.reindex(ns, deletes=[u.memory_id for u in units])
    elif units:
        store.replica.reindex(ns, upserts=units)


@backend_errors
def discard(store: StoreCore, memory_ids: Sequence[str], *, namespace: str | None = None) -> int:
    """Delete units *without* cleaning references to them; return how many existed.

    A merge pass's folded units stay in the keeper's ``merged_from`` as provenance; :meth:`forget` removes every trace.
    """
    ids = check_ids(memory_ids) if memory_ids else []
    ns = store.namespace_or_default(namespace)

    def plan() -> int:
        col = store.collection(ns, create=False)  # the current one: another process may have replaced it
        if col is None:
            return 0
        present = col.exists(ids)
        delete_units(col, present, store.backend.max_batch_size)
        store.replica.reindex(ns, deletes=present)
        return len(present)

    if store.collection(ns, create=False) is None or not ids:
        return 0
    return store.atomic(ns, plan)


def write_exact(store: StoreCore, units: list[MemoryUnit], vectors: list[list[float]]) -> dict[str, int]:
    """Write ``units`` exactly as given (import, restore): each into its collection, out of the other one.

    The vectors must be this store's embedder's: the target collection's recorded embedder is checked.

    Returns:
        Units written per namespace.
    """
    groups: dict[tuple[str, Role], list[int]] = {}
    for i, u in enumerate(units):
        groups.setdefault((u.namespace, "archive" if u.status == "archived" else "memories"), []).append(i)
    per_ns: dict[str, int] = {}
    for (ns, into), idx in groups.items():
        batch = [units[i] for i in idx]
        _run(store, ns, into, functools.partial(_write_group, store, ns, into, batch, [vectors[i] for i in idx]))
        per_ns[ns] = per_ns.get(ns, 0) + len(batch)
    return per_ns


def _write_group(store: StoreCore, ns: str, into: Role, batch: list[MemoryUnit], vectors: list[list[float]]) -> None:
    """One plan of :func:`write_exact` (on a database the upsert and the delete commit together)."""
    other = store.collection(ns, "memories" if into == "archive" else "archive", create=False)
    place_units(store.vector_collection(ns, into), other, batch, vectors)
    _reindex_into(store, ns, into, batch)
