"""How a :class:`MemoryUnit` is laid out in a Chroma record.

Each fact is stored exactly once: ``content`` is the record's document, every other field one metadata key (lists
and dicts as JSON strings, timestamps as integer microseconds so they round-trip exactly and can be range-filtered).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_hindsight.errors import StoreError
from langchain_hindsight.types import MemoryUnit

__all__ = [
    "PENDING_MOVE",
    "PENDING_SUPERSEDE",
    "SCHEMA_VERSION",
    "from_datetime_us",
    "to_datetime_us",
    "unit_from_record",
    "unit_to_metadata",
]

SCHEMA_VERSION = 1

PENDING_SUPERSEDE = "supersede"
"""``pending`` marker of a new unit whose superseded predecessor is not demoted yet."""
PENDING_MOVE = "move"
"""``pending`` marker of a unit copied between memories and archive whose source copy still exists."""


def to_datetime_us(value: datetime) -> int:
    """Aware datetime → integer microseconds since the epoch (exact)."""
    return (value - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def from_datetime_us(value: int) -> datetime:
    """Inverse of :func:`to_datetime_us`."""
    seconds, micros = divmod(int(value), 1_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=micros)


def unit_to_metadata(unit: MemoryUnit, *, pending: str | None = None) -> dict[str, str | int | float | bool]:
    """The Chroma metadata for ``unit`` (everything except ``content`` and ``memory_id``).

    ``pending`` marks the first half of a two-step write (``apply.repair_namespace``), not a field of the unit;
    ``None`` leaves the key out, so a metadata update (Chroma merges keys) keeps the record's marker.
    """
    meta: dict[str, str | int | float | bool] = {
        "schema": SCHEMA_VERSION,
        "task_type": unit.task_type,
        "task_description": unit.task_description,
        "context": unit.context.model_dump_json(),
        "confidence": unit.score_confidence,
        "source": unit.source,
        "created_at_us": to_datetime_us(unit.created_at),
        "last_accessed_at_us": to_datetime_us(unit.last_accessed_at),
        "access_count": unit.access_count,
        "tags": json.dumps(unit.tags, ensure_ascii=False),
        "supersedes": unit.supersedes or "",
        "kind": unit.kind,
        "status": unit.status,
        "namespace": unit.namespace,
        "merged_from": json.dumps(unit.merged_from, ensure_ascii=False),
        "evidence": unit.evidence,
        "run_id": unit.run_id or "",
        "decayed_through_us": -1 if unit.decayed_through is None else to_datetime_us(unit.decayed_through),
    }
    if pending is not None:
        meta["pending"] = pending
    return meta


def unit_from_record(memory_id: str, document: str | None, metadata: Mapping[str, Any] | None) -> MemoryUnit:
    """Rebuild a unit from one Chroma record (:class:`StoreError`: not written by this package, or corrupt)."""
    if document is None or not metadata or metadata.get("schema") != SCHEMA_VERSION:
        raise StoreError(f"record {memory_id!r} is not a langchain-hindsight memory (schema mismatch)")
    try:
        return MemoryUnit(
            memory_id=memory_id,
            content=document,
            task_type=metadata["task_type"],
            task_description=metadata["task_description"],
            context=json.loads(metadata["context"]),
            confidence=metadata["confidence"],
            source=metadata["source"],
            created_at=from_datetime_us(metadata["created_at_us"]),
            last_accessed_at=from_datetime_us(metadata["last_accessed_at_us"]),
            access_count=metadata["access_count"],
            tags=json.loads(metadata["tags"]),
            supersedes=metadata["supersedes"] or None,
            kind=metadata["kind"],
            status=metadata["status"],
            namespace=metadata["namespace"],
            merged_from=json.loads(metadata["merged_from"]),
            evidence=metadata.get("evidence", 1),  # records older than the field: learned once
            run_id=metadata["run_id"] or None,
            # -1 (or absent, in records older than the field) means None
            decayed_through=None if (us := int(metadata.get("decayed_through_us", -1))) < 0 else from_datetime_us(us),
        )
    except (KeyError, ValueError, TypeError) as e:
        raise StoreError(f"record {memory_id!r} is corrupt: {e}") from e
