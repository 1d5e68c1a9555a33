"""Writes that re-plan: what a write does when another process changed what it read first (pure).

A write that supersedes, credits or debits a unit was decided on the unit as its caller
read it (the memory a run was shown, the head of a LangGraph key). Between that read and
the write another process may have replaced the unit. The write plan re-reads the unit
inside its transaction (Postgres: under the namespace's advisory lock; embedded Chroma:
under the directory's single-writer lock, so nothing changes in between) and
:func:`plan_supersede` decides again on what it finds:

* still active: it is superseded, as asked;
* superseded by another writer: the newest version of its chain (the active head) is
  superseded instead. The newer statement wins, as everywhere in the store (a
  contradiction supersedes), and nothing is lost: the other writer's version stays in
  ``history()`` and the :class:`~langchain_hindsight.store.writes.WriteResult` says which
  unit was finally replaced and why;
* archived or forgotten by another writer (no active version left): skipped; when no
  target is left the write raises :class:`~langchain_hindsight.errors.MemoryNotFoundError`
  and writes nothing, so a caller with its own plan (``HindsightStore.put``) re-reads and
  plans again (bounded; :class:`~langchain_hindsight.errors.WriteConflictError` after).

Credits and debits are not moved along a chain: feedback on a unit that another writer
superseded meanwhile is recorded against the version the run was shown (it earned or lost
the credit; crediting the newer text would credit a statement the run never saw), and
logged as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_hindsight.errors import MemoryNotFoundError
from langchain_hindsight.types import MemoryUnit

__all__ = ["REPLAN_ATTEMPTS", "SupersedeTargets", "Target", "plan_supersede"]

REPLAN_ATTEMPTS = 8
"""How many times a caller's read-plan-write loop re-reads and re-plans before it raises ``WriteConflictError``."""


@dataclass(frozen=True, slots=True)
class Target:
    """One unit a write asked to supersede, as the write plan finds it now.

    Attributes:
        requested: The id the caller asked for.
        now: That unit as stored now (``None``: forgotten).
        head: The active head of its supersede chain (``now`` itself when active; ``None``: no active version).
    """

    requested: str
    now: MemoryUnit | None
    head: MemoryUnit | None


@dataclass(frozen=True, slots=True)
class SupersedeTargets:
    """What a supersede replaces after re-planning, and why (one note per target that moved)."""

    replace: tuple[MemoryUnit, ...]
    notes: tuple[str, ...] = ()


def plan_supersede(targets: Sequence[Target], namespace: str) -> SupersedeTargets:
    """The units a supersede replaces, given its targets as they are now (see the module docstring).

    Raises:
        MemoryNotFoundError: no target has an active version (nothing is written).
    """
    replace: dict[str, MemoryUnit] = {}
    notes: list[str] = []
    for t in targets:
        if t.head is None:
            state = "forgotten" if t.now is None else t.now.status
            notes.append(f"{t.requested} is {state} and has no active version: skipped")
            continue
        if t.head.memory_id != t.requested:
            notes.append(
                f"{t.requested} was superseded by another write first: its newest version "
                f"{t.head.memory_id} is superseded instead"
            )
        replace.setdefault(t.head.memory_id, t.head)
    if not replace:
        asked = [t.requested for t in targets][:5]
        why = f" ({'; '.join(notes)})" if notes else ""
        raise MemoryNotFoundError(f"no active memory among {asked} in namespace {namespace!r}{why}")
    return SupersedeTargets(tuple(replace.values()), tuple(notes))
