"""The write methods of ``MemoryStore``: add (dedupe, merge, supersede), update, feedback, share, archive."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langchain_hindsight._safety import SUSPICIOUS_TAG
from langchain_hindsight.errors import ConfigurationError, MemoryNotFoundError, StoreError
from langchain_hindsight.store._codec import unit_to_metadata
from langchain_hindsight.store._collections import ROLES, Collection, Role
from langchain_hindsight.store._core import StoreCore, backend_errors, check_ids
from langchain_hindsight.store._policy import feedback_reason, fresh_ids_for_taken, trust
from langchain_hindsight.store._repair import move_units
from langchain_hindsight.store._write import (
    WritePlan,
    check_informative,
    check_source_change,
    check_unit,
    demote,
    plan_add,
    prepare,
    query_neighbours,
    write_plan,
    write_updates,
)
from langchain_hindsight.store.writes import WriteResult
from langchain_hindsight.types import MemoryStatus, MemoryUnit, utcnow

__all__ = ["EMBED_BATCH", "WriteMixin"]

logger = logging.getLogger(__name__)

EMBED_BATCH = 256
"""Texts per embedding call on the write path (each call batches further inside the embedder)."""


class WriteMixin(StoreCore):
    """Writes of units (part of :class:`~langchain_hindsight.store.memory_store.MemoryStore`)."""

    def _prepare(self, unit: MemoryUnit, namespace: str | None) -> MemoryUnit:
        return prepare(
            unit, namespace, default_namespace=self.namespace, vocabulary=self.vocabulary, policy=self.policy
        )

    def add(self, unit: MemoryUnit, *, namespace: str | None = None, dedupe: bool = True) -> WriteResult:
        """Store ``unit``; return what the write did (:class:`~langchain_hindsight.store.writes.WriteResult`).

        With ``dedupe`` (default): an active unit in scope that makes the same
        statement (after normalising case, whitespace and punctuation) absorbs it
        (``"merged"``; ``result.unit`` is that unit, keeping the newest time).
        A different statement is never merged on similarity alone: when active
        units are more than ``conflict_threshold`` similar, the store's ``judge``
        decides; the default keeps both (``"added"``, ``related_ids`` naming the
        similar units), an LLM judge may also merge a reworded duplicate or
        supersede an outdated unit (``"superseded"``). ``namespace`` overrides
        ``unit.namespace``. Each write is logged at INFO.

        Example:
            >>> store.add(MemoryUnit(content="客户甲公司希望通过邮件联系。")).action  # doctest: +SKIP
            'added'

        Raises:
            ConfigurationError: ``unit`` is not a :class:`MemoryUnit`.
            UninformativeMemoryError: its content carries no information (``"ok"``, ``"好的"``, emoji only);
                an :class:`~langchain_hindsight.errors.InvalidMemoryError`. Nothing was changed.
            StoreError: the backend failed; nothing was changed.
        """
        return self.add_many([unit], namespace=namespace, dedupe=dedupe)[0]

    @backend_errors
    def add_many(
        self, units: Sequence[MemoryUnit], *, namespace: str | None = None, dedupe: bool = True
    ) -> list[WriteResult]:
        """Store many units with one batch embedding; one :class:`WriteResult` per unit, aligned with ``units``.

        A unit may merge into, or supersede, an earlier unit of the same batch.
        ``dedupe=False`` stores every unit as given (bulk import); an id that
        already exists is then overwritten. Every unit is checked before anything
        is written: one uninformative unit (``UninformativeMemoryError``) refuses the batch.
        """
        if isinstance(units, MemoryUnit) or not isinstance(units, Sequence):
            raise ConfigurationError("units must be a sequence of MemoryUnit")
        if not isinstance(dedupe, bool):
            raise ConfigurationError(f"dedupe must be a bool, got {dedupe!r}")
        for u in units:
            check_unit(u)  # a wrong type is reported before anything about a unit's content
        prepared = [self._prepare(u, namespace) for u in units]
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
                vectors = self._embed_batched([u.content for u in batch])
                with self._lock:
                    self._collection(ns)  # created outside the plan's transaction (a retry re-runs only the plan)
                    plan = functools.partial(self._add_namespace, ns, batch, vectors, dedupe)
                    stored = self._atomic(ns, plan)
                for i, result in zip(chunk, stored, strict=True):
                    results[i] = result
        return [r for r in results if r is not None]

    def _embed_batched(self, texts: list[str]) -> list[list[float]]:
        """``texts`` embedded in calls of at most :data:`EMBED_BATCH` texts (bounded memory, steady progress)."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            chunk = texts[start : start + EMBED_BATCH]
            got = self.embeddings.embed_documents(chunk)
            if len(got) != len(chunk):
                raise StoreError("the embedder returned a different number of vectors than texts")
            vectors.extend(got)
        return vectors

    def _add_namespace(
        self, ns: str, units: list[MemoryUnit], vectors: list[list[float]], dedupe: bool
    ) -> list[WriteResult]:
        col = self._vectors(self._collection(ns))
        assert col is not None
        ids = [u.memory_id for u in units]
        taken = set(col.exists(ids))  # add never overwrites a stored id (either collection)
        archive = self._collection(ns, "archive", create=False)
        if archive is not None:
            taken |= set(archive.exists(ids))
        units = fresh_ids_for_taken(units, taken)
        stored = query_neighbours(col, units, vectors, self.conflict_scope) if dedupe else None
        plan = plan_add(
            units,
            vectors,
            dedupe=dedupe,
            stored=stored,
            merge_threshold=self.merge_threshold,
            conflict_threshold=self.conflict_threshold,
            scope=self.conflict_scope,
            policy=self.policy,
            judge=self.judge,
        )
        write_plan(col, plan, self.backend.max_batch_size)
        self._reindex(ns, upserts=[*(u for u, _ in plan.new.values()), *plan.changed.values()])
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
        self, memory_ids: Sequence[str] | str, unit: MemoryUnit, *, reason: str, namespace: str | None = None
    ) -> WriteResult:
        """Store ``unit`` as the successor of the active units ``memory_ids`` (e.g. a user's correction).

        The caller has decided the relation (say, the correction contradicts them),
        so no judge is asked and nothing is merged: ``unit`` is stored as new with
        ``supersedes`` naming the first of them, and each of them becomes
        ``superseded`` (confidence × ``supersede_factor``), in the crash-safe order
        of every supersede (the new unit marked ``pending`` until the demotions are
        written; a crash in between is finished at the next open for the first of
        them, the others then stay active, as before the write). ``history(unit id)``
        then shows the chain. Logged at INFO with ``reason``.

        Returns:
            ``"superseded"``, ``related_ids`` the ids demoted, ``previous`` their state before.

        Raises:
            MemoryNotFoundError: none of ``memory_ids`` is an active unit of the namespace.
            ConfigurationError: no ``reason``, or ``unit`` is less trusted than one it would replace.
        """
        ids = check_ids(memory_ids)
        if not ids:
            raise ConfigurationError("supersede needs at least one memory id")
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigurationError("supersede needs a reason (it is logged and shown in history)")
        prepared = self._prepare(check_unit(unit), namespace)
        ns = prepared.namespace
        vector = self._embed_batched([prepared.content])[0]
        with self._lock:
            self._collection(ns)
            old, new = self._atomic(ns, functools.partial(self._supersede_plan, ids, prepared, vector, ns))
        related = tuple(u.memory_id for u in old)
        logger.info("write %s in %r: superseded %s (%s)", new.memory_id, ns, ", ".join(related), reason)
        return WriteResult("superseded", new, related, reason, tuple(old))

    def _supersede_plan(
        self, ids: list[str], prepared: MemoryUnit, vector: list[float], ns: str
    ) -> tuple[list[MemoryUnit], MemoryUnit]:
        """Plan and write a supersede (see :meth:`supersede`); returns the demoted units and the new one."""
        old = [u for u in self.get_many(ids, namespace=ns) if u.status == "active"]
        if not old:
            raise MemoryNotFoundError(f"no active memory among {ids[:5]} in namespace {ns!r}")
        weaker = [u.memory_id for u in old if trust(prepared.source) > trust(u.source)]
        if weaker:
            raise ConfigurationError(
                f"a {prepared.source} unit never replaces a more trusted one ({', '.join(weaker)})"
            )
        col = self._vectors(self._collection(ns))
        assert col is not None
        taken = set(col.exists([prepared.memory_id]))
        archive = self._collection(ns, "archive", create=False)
        if archive is not None:
            taken |= set(archive.exists([prepared.memory_id]))
        new = fresh_ids_for_taken([prepared], taken)[0].evolve(supersedes=old[0].memory_id)
        plan = WritePlan()
        plan.new[new.memory_id] = (new, vector)
        plan.changed.update((u.memory_id, demote(u, self.policy)) for u in old)
        plan.superseding.add(new.memory_id)
        write_plan(col, plan, self.backend.max_batch_size)
        self._reindex(ns, upserts=[new, *plan.changed.values()])
        return old, new

    @backend_errors
    def update(self, memory_id: str, /, *, namespace: str | None = None, **changes: Any) -> MemoryUnit:
        """Change fields of a stored unit; return the stored result.

        Metadata changes are written without re-embedding; a ``content`` change
        re-embeds. ``memory_id`` and ``namespace`` cannot change.

        Raises:
            MemoryNotFoundError: no such unit.
            InvalidMemoryError: the changed unit would be invalid, or its new content carries
                no information (``UninformativeMemoryError``); nothing is written.
        """
        if {"memory_id", "namespace"} & set(changes):
            raise ConfigurationError("memory_id and namespace cannot be changed; add a new unit instead")
        ns = self._ns(namespace)
        if "task_type" in changes:
            if not isinstance(changes["task_type"], str):
                raise ConfigurationError(f"task_type must be a string, got {type(changes['task_type']).__name__}")
            changes["task_type"] = self.vocabulary.normalize(changes["task_type"])

        def plan() -> MemoryUnit:  # read, check and write as one plan (one transaction on a database)
            current = self.get(memory_id, namespace=ns)
            check_source_change(current, changes.get("source", current.source))
            if "content" in changes:
                check_informative(current.evolve(content=changes["content"]))
            return self.update_many([current.evolve(**changes)], namespace=ns)[0]

        with self._lock:
            return self._atomic(ns, plan)

    @backend_errors
    def update_many(self, units: Sequence[MemoryUnit], *, namespace: str | None = None) -> list[MemoryUnit]:
        """Write new versions of existing units in one batch (re-embedding only changed content).

        Units keep their collection; use :meth:`archive`/:meth:`restore` to change
        between active/superseded and archived.

        Raises:
            MemoryNotFoundError: one of the units does not exist (nothing is written).
        """
        if isinstance(units, MemoryUnit) or not isinstance(units, Sequence):
            raise ConfigurationError("units must be a sequence of MemoryUnit")
        units = [check_unit(u) for u in units]
        ns = self._ns(namespace)
        if any(u.namespace != ns for u in units):
            raise ConfigurationError(f"every unit must belong to namespace {ns!r}")
        if not units:
            return []
        with self._lock:
            return self._atomic(ns, functools.partial(self._update_plan, units, ns))

    def _update_plan(self, units: list[MemoryUnit], ns: str) -> list[MemoryUnit]:
        """Write :meth:`update_many`'s new versions (one plan)."""
        written: list[MemoryUnit] = []
        for role in ROLES:
            col = self._collection(ns, role, create=False)
            if col is None:
                continue
            batch = write_updates(col, role, units, functools.partial(self._embed_into, col))
            if not batch:
                continue
            if role == "memories":
                self._reindex(ns, upserts=batch)
            written.extend(batch)
        missing = {u.memory_id for u in units} - {u.memory_id for u in written}
        if missing:
            raise MemoryNotFoundError(f"no memory {sorted(missing)[0]!r} in namespace {ns!r}")
        order = {u.memory_id: i for i, u in enumerate(units)}
        return sorted(written, key=lambda u: order[u.memory_id])

    @backend_errors
    def record_feedback(
        self,
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

        ``success=True``: access count +1, last access now, confidence
        +``success_delta`` (capped), diminished by ``repeat_factor`` for each
        earlier credit ``repeats`` counts for the memory (the session counts them
        from the run journal: same task within ``repeat_window``); a unit tagged
        ``suspicious`` is never credited above ``suspicious_cap``.
        ``success=False``: access +1, confidence −``failure_delta`` (floored).
        ``rejected=True`` (the user said the memory is wrong): confidence ×
        ``rejection_factor``. ``success=None``: only the access is recorded. Ids
        that no longer exist are skipped with a warning. Every credit and debit
        is logged at INFO with the memory id, old → new confidence and the reason
        (``reason``, e.g. ``"success of run r1"``, plus how the policy applied it).

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
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in counts.values()):
            raise ConfigurationError(f"repeats must map memory ids to non-negative ints, got {repeats!r}")
        if reason is not None and not isinstance(reason, str):
            raise ConfigurationError(f"reason must be a string or None, got {type(reason).__name__}")
        if now is not None and not isinstance(now, datetime):
            raise ConfigurationError(f"now must be a datetime or None, got {type(now).__name__}")
        when = utcnow() if now is None else now if now.tzinfo else now.replace(tzinfo=UTC)
        ns = self._ns(namespace)
        with self._lock:
            current, written = self._atomic(
                ns, functools.partial(self._feedback_plan, ids, ns, when, success, rejected, counts)
            )
        if success is not None or rejected:
            for old, new in zip(current, written, strict=True):
                why = feedback_reason(
                    self.policy, success=success, rejected=rejected, repeats=counts.get(old.memory_id, 0), reason=reason
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
        self, ids: list[str], ns: str, when: datetime, success: bool | None, rejected: bool, counts: dict[str, int]
    ) -> tuple[list[MemoryUnit], list[MemoryUnit]]:
        """Read the units and write their credited versions (one plan of :meth:`record_feedback`)."""
        current = self.get_many(ids, namespace=ns)
        if len(current) != len(ids):
            gone = sorted(set(ids) - {u.memory_id for u in current})
            logger.warning("feedback skipped for %d unknown memory id(s): %s", len(gone), gone[:5])
        updated = [
            u.evolve(
                access_count=u.access_count + 1,
                last_accessed_at=max(u.last_accessed_at, when),
                confidence=self._credited(u, success=success, rejected=rejected, repeats=counts.get(u.memory_id, 0)),
            )
            for u in current
        ]
        written = self.update_many(updated, namespace=ns)
        return current, written

    def _credited(self, unit: MemoryUnit, *, success: bool | None, rejected: bool, repeats: int) -> float:
        """The policy's new confidence for ``unit``; a credit never lifts a ``suspicious`` unit over the cap."""
        confidence = self.policy.apply(unit.score_confidence, success=success, rejected=rejected, repeats=repeats)
        if success is True and not rejected and SUSPICIOUS_TAG in unit.tags:
            capped = max(unit.score_confidence, self.policy.suspicious_cap)
            if confidence > capped:
                logger.info("memory %s is suspicious: its credit stops at %.2f", unit.memory_id, capped)
                confidence = capped
        return confidence

    @backend_errors
    def share(
        self, memory_ids: Sequence[str] | str, *, to_namespace: str, namespace: str | None = None
    ) -> list[MemoryUnit]:
        """Copy units into another namespace: the one explicit way a memory crosses namespaces.

        Namespaces never see each other's units; agents share experience by
        copying chosen units into a namespace they all read (e.g. ``"shared"``).
        The copy keeps id, content, provenance and counters, is active, and goes
        through the target's write rules (the same statement there absorbs it). It is
        independent afterwards: forgetting the original does not forget the copy
        (``forget(memory_id, namespace=to_namespace)`` does).

        Example:
            >>> store.share([unit.memory_id], namespace="alice", to_namespace="shared")  # doctest: +SKIP

        Returns:
            What is now stored in ``to_namespace`` for each unit found (missing ids are skipped).

        Raises:
            ConfigurationError: ``to_namespace`` equals the source namespace or is invalid.
        """
        ids = check_ids(memory_ids)
        src = self._ns(namespace)
        dst = self._ns(to_namespace)
        if src == dst:
            raise ConfigurationError(f"to_namespace must differ from the source namespace {src!r}")
        with self._lock:
            copies = [
                u.evolve(namespace=dst, status="active", supersedes=None, merged_from=[])
                for u in self.get_many(ids, namespace=src)
            ]
            return [r.unit for r in self.add_many(copies, namespace=dst)] if copies else []

    @backend_errors
    def archive(self, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
        """Move units to the namespace's cold collection (excluded from recall, restorable)."""
        return self._move(check_ids(memory_ids), self._ns(namespace), "memories", "archive")

    @backend_errors
    def restore(self, memory_ids: Sequence[str], *, namespace: str | None = None) -> list[MemoryUnit]:
        """Bring archived units back as active units."""
        return self._move(check_ids(memory_ids), self._ns(namespace), "archive", "memories")

    def _move(self, ids: list[str], ns: str, src_role: Role, dst_role: Role) -> list[MemoryUnit]:
        if not ids:
            return []
        with self._lock:
            src = self._collection(ns, src_role, create=False)
            if src is None:
                return []
            self._collection(ns, dst_role)  # created outside the plan's transaction
            return self._atomic(ns, functools.partial(self._move_plan, ids, ns, src, dst_role))

    def _move_plan(self, ids: list[str], ns: str, src: Collection, dst_role: Role) -> list[MemoryUnit]:
        """Move ``ids`` from ``src`` to the ``dst_role`` collection (one plan of :meth:`_move`)."""
        status: MemoryStatus = "archived" if dst_role == "archive" else "active"
        moved = move_units(src, functools.partial(self._collection, ns, dst_role), ids, status)
        if not moved:
            return []
        if dst_role == "archive":
            self._reindex(ns, deletes=[u.memory_id for u in moved])
        else:
            self._reindex(ns, upserts=moved)
        return moved

    @backend_errors
    def discard(self, memory_ids: Sequence[str], *, namespace: str | None = None) -> int:
        """Delete units *without* cleaning references to them; return how many existed.

        For units folded into another by a merge pass: their ids stay in the
        keeper's ``merged_from`` as provenance. To remove every trace of a unit,
        use :meth:`forget` instead.
        """
        ids = check_ids(memory_ids) if memory_ids else []
        ns = self._ns(namespace)
        with self._lock:
            col = self._collection(ns, create=False)
            if col is None or not ids:
                return 0

            def plan() -> int:
                present = col.exists(ids)
                step = self.backend.max_batch_size
                for start in range(0, len(present), step):
                    col.delete(ids=present[start : start + step])
                self._reindex(ns, deletes=present)
                return len(present)

            return self._atomic(ns, plan)

    def _write_exact(self, units: list[MemoryUnit], vectors: list[list[float]]) -> dict[str, int]:
        """Write ``units`` exactly as given (import, restore): each into its collection, out of the other one.

        Returns:
            Units written per namespace.
        """
        groups: dict[tuple[str, bool], list[int]] = {}
        for i, u in enumerate(units):
            groups.setdefault((u.namespace, u.status == "archived"), []).append(i)
        per_ns: dict[str, int] = {}
        with self._lock:
            for (ns, archived), idx in groups.items():
                target = self._collection(ns, "archive" if archived else "memories")
                assert target is not None  # create=True always returns a collection
                other = self._collection(ns, "memories" if archived else "archive", create=False)
                batch = [units[i] for i in idx]
                ids = [u.memory_id for u in batch]
                target.upsert(
                    ids=ids,
                    embeddings=[vectors[i] for i in idx],
                    documents=[u.content for u in batch],
                    metadatas=[unit_to_metadata(u) for u in batch],
                )
                stale = other.exists(ids) if other is not None else []
                if other is not None and stale:  # an id lives in one collection only
                    other.delete(ids=stale)
                if archived:
                    self._reindex(ns, deletes=ids)
                else:
                    self._reindex(ns, upserts=batch)
                per_ns[ns] = per_ns.get(ns, 0) + len(batch)
        return per_ns
