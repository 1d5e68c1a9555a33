"""The console's actions, each through the library's own write path, logged at INFO with its reason.

=================  ===================================================  ===========================
action             write path                                           undo
=================  ===================================================  ===========================
confirm            ``store.supersede`` by a ``manual`` copy             :func:`revert`
edit               ``store.supersede`` by a new version (same source)   :func:`revert`
revert             ``store.update`` (predecessor active again) +        confirm/edit again
                   ``store.archive`` (this version, restorable)
merge              ``Lifecycle.merge_pair`` (the merge pass's own       :func:`unmerge`
                   fold: the other one archived)                        (``Lifecycle.unmerge``)
unmerge            ``Lifecycle.unmerge``                                merge again
forget             ``store.forget`` (``ScopedMemory.forget`` for a      none: a hard delete
                   principal: its published copies too)                 (a confirmation page first)
restore            ``store.restore``                                    archive
undo feedback      ``Hindsight.undo_feedback`` (journaled)              none in the library
=================  ===================================================  ===========================

"Confirm" raises a memory to trusted the only way provenance allows: the store
never raises a unit's ``source`` in place (``update`` refuses it), so the reviewer's
confirmation is a new unit with source ``manual`` (a person's own statement) that
supersedes the old one, keeping it in the history. Every function checks the
identity's write grant, returns the message the page shows and brings the
console's listing of the namespace up to date for the units it touched.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from langchain_hindsight._trust import SOURCE_TRUST
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.lifecycle.maintenance import Lifecycle
from langchain_hindsight.sharing.access import ScopedMemory
from langchain_hindsight.types import MemoryUnit
from langchain_hindsight.ui.views import Console

__all__ = ["confirm", "edit", "forget", "merge", "restore", "revert", "undo_feedback", "unmerge"]

logger = logging.getLogger(__name__)

CONFIRMED_TAG = "confirmed"
"""Tag of a version a reviewer confirmed in the console."""

_SUSPICIOUS = "suspicious"


def _successor(unit: MemoryUnit, **changes: object) -> MemoryUnit:
    """A new unit carrying ``unit``'s lesson and context (a fresh id), with ``changes``."""
    data = unit.model_dump(
        include={
            "task_type",
            "task_description",
            "content",
            "context",
            "confidence",
            "source",
            "tags",
            "kind",
            "run_id",
        }
    )
    data.update(changes)
    return MemoryUnit(**data)


def _active(console: Console, namespace: str, memory_id: str) -> MemoryUnit:
    console.check_write(namespace)
    unit = console.store.get(memory_id, namespace=namespace)
    if unit.status != "active":
        raise ConfigurationError(f"{memory_id} is {unit.status}: only an active memory can be changed this way")
    return unit


def confirm(console: Console, t: Mapping[str, str], namespace: str, memory_id: str) -> str:
    """Raise ``memory_id`` to trusted: a ``manual`` copy (``suspicious`` dropped) supersedes it."""
    unit = _active(console, namespace, memory_id)
    confidence = max(unit.score_confidence, SOURCE_TRUST["manual"].initial_confidence)
    tags = [tag for tag in unit.tags if tag != _SUSPICIOUS] + ([] if CONFIRMED_TAG in unit.tags else [CONFIRMED_TAG])
    new = _successor(unit, source="manual", confidence=confidence, tags=tags)
    reason = f"confirmed by a reviewer in the console (source {unit.source} → manual)"
    result = console.store.supersede([memory_id], new, reason=reason, namespace=namespace)
    console.refresh(namespace, [memory_id, result.unit.memory_id])
    logger.info("console confirm in %r: %s → %s (%s)", namespace, memory_id, result.unit.memory_id, reason)
    return t["done_confirm"].format(
        old=memory_id, new=result.unit.memory_id, conf=f"{result.unit.score_confidence:.2f}"
    )


def edit(console: Console, t: Mapping[str, str], namespace: str, memory_id: str, content: str) -> str:
    """Store ``content`` as a new version that supersedes ``memory_id`` (same source and confidence)."""
    unit = _active(console, namespace, memory_id)
    if not content.strip():
        raise ConfigurationError("the new text is empty")
    if content.strip() == unit.content.strip():
        raise ConfigurationError("the new text is the same as the current one")
    new = _successor(unit, content=content.strip(), confidence=unit.score_confidence)
    reason = "edited by a reviewer in the console"
    result = console.store.supersede([memory_id], new, reason=reason, namespace=namespace)
    console.refresh(namespace, [memory_id, result.unit.memory_id])
    logger.info("console edit in %r: %s → %s (%s)", namespace, memory_id, result.unit.memory_id, reason)
    return t["done_edit"].format(old=memory_id, new=result.unit.memory_id)


def revert(console: Console, t: Mapping[str, str], namespace: str, memory_id: str) -> str:
    """Undo a confirm or edit: the version ``memory_id`` superseded is active again, ``memory_id`` archived.

    The predecessor's confidence comes back as it was before the supersede
    demoted it (÷ the store's ``supersede_factor``).
    """
    unit = _active(console, namespace, memory_id)
    if not unit.supersedes:
        raise ConfigurationError(f"{memory_id} supersedes nothing")
    old = console.store.get(unit.supersedes, namespace=namespace)
    if old.status != "superseded":
        raise ConfigurationError(f"{old.memory_id} is {old.status}, not superseded: nothing to revert")
    factor = console.store.policy.supersede_factor
    confidence = min(1.0, round(old.score_confidence / factor, 6)) if factor > 0 else old.score_confidence
    console.store.update(old.memory_id, namespace=namespace, status="active", confidence=confidence)
    console.store.archive([memory_id], namespace=namespace)
    console.refresh(namespace, [old.memory_id, memory_id])
    logger.info(
        "console revert in %r: %s active again (confidence %.2f), %s archived (undo of a confirm/edit)",
        namespace,
        old.memory_id,
        confidence,
        memory_id,
    )
    return t["done_revert"].format(old=old.memory_id, new=memory_id, conf=f"{confidence:.2f}")


def merge(console: Console, t: Mapping[str, str], namespace: str, first: str, second: str) -> str:
    """Fold one of two active memories into the other as the merge pass does (``Lifecycle.merge_pair``)."""
    _active(console, namespace, first)
    _active(console, namespace, second)
    keeper, other, reason = Lifecycle(console.store).merge_pair(
        first, second, namespace=namespace, reason="merged by a reviewer in the console"
    )
    console.refresh(namespace, [keeper.memory_id, other.memory_id])
    return t["done_merge"].format(other=other.memory_id, keeper=keeper.memory_id, reason=reason)


def unmerge(console: Console, t: Mapping[str, str], namespace: str, memory_id: str) -> str:
    """``Lifecycle.unmerge``: the units folded into ``memory_id`` come back, tagged ``kept-apart``."""
    console.check_write(namespace)
    restored = Lifecycle(console.store).unmerge(memory_id, namespace=namespace)
    console.refresh(namespace, [memory_id, *(u.memory_id for u in restored)])
    if not restored:
        return t["done_unmerge_none"].format(keeper=memory_id)
    return t["done_unmerge"].format(keeper=memory_id, ids=", ".join(u.memory_id for u in restored))


def forget(console: Console, t: Mapping[str, str], namespace: str, memory_id: str) -> str:
    """Hard-delete ``memory_id`` (every copy, references, journal mentions; erased from disk when embedded)."""
    console.check_write(namespace)
    console.store.get(memory_id, namespace=namespace)  # MemoryNotFoundError before anything is deleted
    referring = [
        u.memory_id for u in console.units(namespace) if u.supersedes == memory_id or memory_id in u.merged_from
    ]
    if console.principal is None:
        n = console.store.forget(memory_id, namespace=namespace)
    else:
        n = ScopedMemory(console.store, console.principal).forget(memory_id)
        for other in console.principal.write:  # its published copies went too
            console.invalidate(other)
    console.refresh(namespace, [memory_id, *referring])
    logger.info("console forget in %r: %s hard-deleted (%d units) by a reviewer", namespace, memory_id, n)
    return t["done_forget"].format(memory_id=memory_id, n=n)


def restore(console: Console, t: Mapping[str, str], namespace: str, memory_id: str) -> str:
    """``store.restore``: an archived memory is active again."""
    console.check_write(namespace)
    restored = console.store.restore([memory_id], namespace=namespace)
    console.refresh(namespace, [memory_id])
    if not restored:
        return t["done_restore_none"].format(memory_id=memory_id)
    logger.info("console restore in %r: %s restored from the archive by a reviewer", namespace, memory_id)
    return t["done_restore"].format(memory_id=memory_id)


def undo_feedback(console: Console, t: Mapping[str, str], namespace: str, run_id: str) -> str:
    """``Hindsight.undo_feedback``: revert exactly what the run's newest feedback did (journaled)."""
    console.check_write(namespace)
    record = console.hindsight.undo_feedback(run_id, namespace=namespace)
    last = record.feedback[-1] if record.feedback else None
    undone = record.feedback[last.undoes] if last is not None and last.undoes is not None else None
    touched = [e.memory_id for entry in (last, undone) if entry is not None for e in entry.effects or []]
    console.refresh(namespace, touched)
    effects = "; ".join(f"{e.memory_id} {e.action}" for e in (last.effects or [])) if last else ""
    logger.info("console undo of the newest feedback of run %s in %r: %s", run_id, namespace, effects or "no effect")
    return t["done_undo"].format(run_id=run_id, effects=effects or "–")
