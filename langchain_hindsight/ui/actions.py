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
identity's write grant, returns a :class:`Done` (the message the page shows, in
the reader's language and naming memories by their words; the page to land on,
where the result is; the undo to offer) and brings the console's listing of the
namespace up to date for the units it touched. A refusal is a :class:`Refused`
whose message is a string key (rendered in the reader's language).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from langchain_hindsight._trust import SOURCE_TRUST
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.lifecycle.maintenance import Lifecycle
from langchain_hindsight.sharing.access import ScopedMemory
from langchain_hindsight.types import MemoryUnit
from langchain_hindsight.ui.views import Console

__all__ = [
    "Done",
    "Refused",
    "confirm",
    "edit",
    "forget",
    "merge",
    "restore",
    "revert",
    "short",
    "undo_feedback",
    "unmerge",
    "words",
]

logger = logging.getLogger(__name__)

CONFIRMED_TAG = "confirmed"
"""Tag of a version a reviewer confirmed in the console."""

_SUSPICIOUS = "suspicious"

_WORDS = 40
"""A memory is named in messages by its first this many characters."""


class Refused(ConfigurationError):  # noqa: N818 - a refusal, not a failure
    """An action that cannot apply: nothing changed. ``key`` names its sentence in ``strings``.

    Args:
        key: The key of the sentence (formatted with ``params``).
        **params: The sentence's fields.
    """

    def __init__(self, key: str, **params: str) -> None:
        super().__init__(f"{key}: {params}")
        self.key = key
        self.params = params


@dataclass(frozen=True)
class Done:
    """What an action did: the sentence to show, where its result is, and how to undo it."""

    message: str
    land: str | None = None
    """The path of the result (the new version, the merged memory), relative to the session's prefix."""
    undo: dict[str, str] = field(default_factory=dict)
    """The form that undoes it: ``action`` and its fields (empty: no undo)."""


def short(text: str, limit: int = _WORDS) -> str:
    """The first ``limit`` characters of ``text`` on one line (``…`` when cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def words(unit: MemoryUnit) -> str:
    """How a message names a memory: its first words."""
    return short(unit.content)


def _page(memory_id: str) -> str:
    return f"/memories/{memory_id}"


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
        raise Refused("refused_not_active", words=words(unit))
    return unit


def confirm(console: Console, t: Mapping[str, str], namespace: str, memory_id: str) -> Done:
    """Raise ``memory_id`` to trusted: a ``manual`` copy (``suspicious`` dropped) supersedes it."""
    unit = _active(console, namespace, memory_id)
    confidence = max(unit.score_confidence, SOURCE_TRUST["manual"].initial_confidence)
    tags = [tag for tag in unit.tags if tag != _SUSPICIOUS] + ([] if CONFIRMED_TAG in unit.tags else [CONFIRMED_TAG])
    new = _successor(unit, source="manual", confidence=confidence, tags=tags)
    reason = f"confirmed by a reviewer in the console (source {unit.source} → manual)"
    result = console.store.supersede([memory_id], new, reason=reason, namespace=namespace)
    console.refresh(namespace, [memory_id, result.unit.memory_id])
    logger.info("console confirm in %r: %s → %s (%s)", namespace, memory_id, result.unit.memory_id, reason)
    new_id = result.unit.memory_id
    said = t["done_confirm"].format(words=words(unit), conf=f"{result.unit.score_confidence:.2f}")
    return Done(said, _page(new_id), {"action": "revert", "memory_id": new_id})


def edit(console: Console, t: Mapping[str, str], namespace: str, memory_id: str, content: str) -> Done:
    """Store ``content`` as a new version that supersedes ``memory_id`` (same source and confidence)."""
    unit = _active(console, namespace, memory_id)
    if not content.strip():
        raise Refused("refused_empty")
    if content.strip() == unit.content.strip():
        raise Refused("refused_same_text")
    new = _successor(unit, content=content.strip(), confidence=unit.score_confidence)
    reason = "edited by a reviewer in the console"
    result = console.store.supersede([memory_id], new, reason=reason, namespace=namespace)
    console.refresh(namespace, [memory_id, result.unit.memory_id])
    logger.info("console edit in %r: %s → %s (%s)", namespace, memory_id, result.unit.memory_id, reason)
    new_id = result.unit.memory_id
    return Done(
        t["done_edit"].format(words=words(result.unit)), _page(new_id), {"action": "revert", "memory_id": new_id}
    )


def revert(console: Console, t: Mapping[str, str], namespace: str, memory_id: str) -> Done:
    """Undo a confirm or edit: the version ``memory_id`` superseded is active again, ``memory_id`` archived.

    The predecessor's confidence comes back as it was before the supersede
    demoted it (÷ the store's ``supersede_factor``).
    """
    unit = _active(console, namespace, memory_id)
    if not unit.supersedes:
        raise Refused("refused_supersedes_nothing", words=words(unit))
    old = console.store.get(unit.supersedes, namespace=namespace)
    if old.status != "superseded":
        raise Refused("refused_nothing_to_revert", words=words(old))
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
    return Done(t["done_revert"].format(words=words(old), conf=f"{confidence:.2f}"), _page(old.memory_id))


def merge(console: Console, t: Mapping[str, str], namespace: str, first: str, second: str) -> Done:
    """Fold one of two active memories into the other as the merge pass does (``Lifecycle.merge_pair``)."""
    if not second:
        raise Refused("refused_merge_other")
    if second == first:
        raise Refused("refused_merge_self")
    _active(console, namespace, first)
    _active(console, namespace, second)
    keeper, other, _reason = Lifecycle(console.store).merge_pair(
        first, second, namespace=namespace, reason="merged by a reviewer in the console"
    )
    console.refresh(namespace, [keeper.memory_id, other.memory_id])
    said = t["done_merge"].format(other=words(other), keeper=words(keeper), evidence=keeper.evidence)
    return Done(said, _page(keeper.memory_id), {"action": "unmerge", "memory_id": keeper.memory_id})


def unmerge(console: Console, t: Mapping[str, str], namespace: str, memory_id: str) -> Done:
    """``Lifecycle.unmerge``: the units folded into ``memory_id`` come back, tagged ``kept-apart``."""
    console.check_write(namespace)
    restored = Lifecycle(console.store).unmerge(memory_id, namespace=namespace)
    console.refresh(namespace, [memory_id, *(u.memory_id for u in restored)])
    keeper = console.store.get(memory_id, namespace=namespace)
    if not restored:
        return Done(t["done_unmerge_none"].format(keeper=words(keeper)), _page(memory_id))
    sep = "、" if t["lang"] == "zh" else "; "
    said = t["done_unmerge"].format(keeper=words(keeper), ids=sep.join(f"“{words(u)}”" for u in restored))
    return Done(said, _page(memory_id))


def forget(console: Console, t: Mapping[str, str], namespace: str, memory_id: str) -> Done:
    """Hard-delete ``memory_id`` (every copy, references, journal mentions; erased from disk when embedded)."""
    console.check_write(namespace)
    unit = console.store.get(memory_id, namespace=namespace)  # MemoryNotFoundError before anything is deleted
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
    return Done(t["done_forget"].format(words=words(unit), n=n), "/memories")


def restore(console: Console, t: Mapping[str, str], namespace: str, memory_id: str) -> Done:
    """``store.restore``: an archived memory is active again."""
    console.check_write(namespace)
    unit = console.store.get(memory_id, namespace=namespace)
    restored = console.store.restore([memory_id], namespace=namespace)
    console.refresh(namespace, [memory_id])
    if not restored:
        return Done(t["done_restore_none"].format(words=words(unit)), _page(memory_id))
    logger.info("console restore in %r: %s restored from the archive by a reviewer", namespace, memory_id)
    return Done(t["done_restore"].format(words=words(unit)), _page(memory_id))


def undo_feedback(console: Console, t: Mapping[str, str], namespace: str, run_id: str) -> Done:
    """``Hindsight.undo_feedback``: revert exactly what the run's newest feedback did (journaled)."""
    console.check_write(namespace)
    record = console.hindsight.undo_feedback(run_id, namespace=namespace)
    last = record.feedback[-1] if record.feedback else None
    undone = record.feedback[last.undoes] if last is not None and last.undoes is not None else None
    touched = [e.memory_id for entry in (last, undone) if entry is not None for e in entry.effects or []]
    console.refresh(namespace, touched)
    console.forget_review(namespace)  # the correction is handled: the queue reads the journal again
    effects = "; ".join(f"{e.memory_id} {e.action}" for e in (last.effects or [])) if last else ""
    logger.info("console undo of the newest feedback of run %s in %r: %s", run_id, namespace, effects or "no effect")
    n = len(last.effects or []) if last else 0
    return Done(t["done_undo"].format(run_id=run_id, n=n), f"/runs/{run_id}")
