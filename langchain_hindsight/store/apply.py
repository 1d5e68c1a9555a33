"""Writing a plan in crash-safe order: ``pending`` marks, and their repair.

A write that touches two records cannot be atomic in Chroma, so it marks the record it writes first
and clears the mark last: a supersede (:func:`write_plan`) writes the new unit marked
``pending=supersede``, demotes the old unit, then clears the mark; a move between memories and archive
(:func:`move_units`) writes the destination copy marked ``pending=move``, deletes the source copy, then
clears the mark. A marked record found when a namespace is first opened means a process died in
between; :func:`repair_namespace` does the remaining steps (only marked records are touched, so a unit
restored on purpose stays restored).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_hindsight.confidence import ConfidencePolicy
from langchain_hindsight.errors import StoreError
from langchain_hindsight.store._codec import PENDING_MOVE, PENDING_SUPERSEDE, unit_to_metadata
from langchain_hindsight.store._collections import Collection, records, units_of
from langchain_hindsight.store._naming import ROLES, Role
from langchain_hindsight.types import MemoryStatus, MemoryUnit
from langchain_hindsight.writes import WritePlan, demote

__all__ = ["delete_units", "move_units", "place_units", "repair_namespace", "write_plan", "write_updates"]

logger = logging.getLogger(__name__)


def repair_namespace(
    open_collection: Callable[[Role], Collection | None], namespace: str, policy: ConfidencePolicy
) -> list[str]:
    """Finish the interrupted two-step writes of ``namespace``; return the ids it rewrote.

    ``open_collection(role)`` returns the namespace's collection, or ``None`` if it does not exist.
    """
    touched: list[str] = []
    try:
        for role in ROLES:
            col = open_collection(role)
            if col is None:
                continue
            rows = col.get(where={"pending": {"$in": [PENDING_SUPERSEDE, PENDING_MOVE]}}, include=["metadatas"])
            marks = {i: m or {} for i, m in zip(rows["ids"], rows["metadatas"] or [], strict=True)}
            if not marks:
                continue
            targets = sorted(
                {str(m["supersedes"]) for m in marks.values() if m.get("pending") == PENDING_SUPERSEDE} - {""}
            )
            found = records(col, ids=targets) if targets else []
            if stale := [demote(u, policy) for u in found if u.status == "active"]:
                col.update(ids=[u.memory_id for u in stale], metadatas=[unit_to_metadata(u) for u in stale])
            moved = [i for i, m in marks.items() if m.get("pending") == PENDING_MOVE]
            other = open_collection("archive" if role == "memories" else "memories")
            if moved and other is not None:
                other.delete(ids=moved)
            _clear(col, list(marks))
            touched += [*marks, *(u.memory_id for u in stale)]
            logger.warning("completed %d interrupted write(s) in namespace %r", len(marks), namespace)
    except StoreError as e:
        raise type(e)(f"could not repair namespace {namespace!r}: {e}") from e
    return touched


def move_units(src: Collection, dst: Collection, ids: Sequence[str], status: MemoryStatus) -> list[MemoryUnit]:
    """Move ``ids`` from ``src`` to ``dst`` with ``status``; return the moved units."""
    rows = src.get(ids=ids, include=["documents", "metadatas", "embeddings"])
    if not rows["ids"]:
        return []
    moved = [u.evolve(status=status) for u in units_of(rows)]
    _upsert(dst, moved, rows["embeddings"], [PENDING_MOVE] * len(moved))  # copy, delete, clear: repair completes it
    src.delete(ids=[u.memory_id for u in moved])
    _clear(dst, [u.memory_id for u in moved])
    return moved


def place_units(
    dst: Collection, other: Collection | None, units: Sequence[MemoryUnit], vectors: list[list[float]]
) -> None:
    """Upsert ``units`` into ``dst`` exactly as given and delete them from ``other``: one place per id."""
    _upsert(dst, units, vectors, [None] * len(units))
    if other is not None and (stale := other.exists([u.memory_id for u in units])):
        other.delete(ids=stale)


def delete_units(col: Collection, ids: list[str], batch: int) -> None:
    """Delete ``ids`` from ``col``, ``batch`` records per call."""
    for start in range(0, len(ids), batch):
        col.delete(ids=ids[start : start + batch])


def write_plan(col: Collection, plan: WritePlan, batch: int) -> None:
    """Write ``plan`` to ``col``: upserts (``batch`` records per call), then rewrites, then clear the marks."""
    ids = list(plan.new)
    for start in range(0, len(ids), batch):
        chunk = ids[start : start + batch]
        marks = [PENDING_SUPERSEDE if i in plan.superseding else "" for i in chunk]
        _upsert(col, [plan.new[i][0] for i in chunk], [plan.new[i][1] for i in chunk], marks)
    # Second step (merges, demotions); a crash before the marks are cleared is finished by repair_namespace.
    if plan.changed:
        col.update(ids=list(plan.changed), metadatas=[unit_to_metadata(u) for u in plan.changed.values()])
    _clear(col, [i for i in plan.superseding if i in plan.new])


def _upsert(col: Collection, units: Sequence[MemoryUnit], vectors: Any, pending: Sequence[str | None]) -> None:
    metadatas = [unit_to_metadata(u, pending=mark) for u, mark in zip(units, pending, strict=True)]
    col.upsert(
        ids=[u.memory_id for u in units], embeddings=vectors, documents=[u.content for u in units], metadatas=metadatas
    )


def _clear(col: Collection, ids: list[str]) -> None:
    """Clear the ``pending`` marks of ``ids``: the write they began is complete."""
    if ids:
        col.update(ids=ids, metadatas=[{"pending": ""} for _ in ids])


def write_updates(
    col: Collection,
    units: Sequence[MemoryUnit],
    documents: Mapping[str, str],
    embed: Callable[[list[str]], list[list[float]]],
) -> None:
    """Rewrite ``units`` in ``col``, re-embedding those whose content differs from their stored ``documents``."""
    if reembed := [u for u in units if u.content != documents[u.memory_id]]:
        col.update(
            ids=[u.memory_id for u in reembed],
            embeddings=embed([u.content for u in reembed]),
            documents=[u.content for u in reembed],
            metadatas=[unit_to_metadata(u) for u in reembed],
        )
    if same := [u for u in units if u.content == documents[u.memory_id]]:
        col.update(ids=[u.memory_id for u in same], metadatas=[unit_to_metadata(u) for u in same])
