"""How confidence moves and which sources outrank which (a user's word over an inference).

:class:`ConfidencePolicy` is public through ``langchain_hindsight.store.memory_store``; the
provenance order (:func:`trust`) is what the write path consults when two units
from different sources meet.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from langchain_hindsight._trust import (
    DEFAULT_CONFIDENCE_CEILING,
    DEFAULT_INITIAL_CONFIDENCE,
    TRUST_ORDER,
    TRUSTED_SOURCES,
    UNTRUSTED_SOURCES,
    trust_rank,
)
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.types import MemoryUnit, new_memory_id, utcnow

__all__ = [
    "DEFAULT_CONFIDENCE_CEILING",
    "TRUSTED_SOURCES",
    "TRUST_ORDER",
    "ConfidencePolicy",
    "clamp_future",
    "fresh_ids_for_taken",
    "settle_claims",
    "trust",
]

logger = logging.getLogger(__name__)

trust = trust_rank
"""Rank of a source: 0 is the most trusted (see ``langchain_hindsight._trust``)."""


def clamp_future(unit: MemoryUnit, *, now: datetime | None = None) -> MemoryUnit:
    """``unit`` with ``created_at``/``last_accessed_at``/``decayed_through`` beyond now clamped to now.

    A future stamp would exempt a unit from decay (and archive) forever; the
    clock belongs to the store, whatever the unit claims (also on import).
    """
    now = now or utcnow()
    changes = {
        name: now
        for name in ("created_at", "last_accessed_at", "decayed_through")
        if getattr(unit, name) is not None and getattr(unit, name) > now
    }
    if not changes:
        return unit
    logger.info("memory %s: future timestamps clamped to now: %s", unit.memory_id, sorted(changes))
    return unit.evolve(**changes)


def settle_claims(unit: MemoryUnit, *, now: datetime | None = None) -> MemoryUnit:
    """``unit`` with the system-owned fields it may not claim on arrival settled.

    The store owns ``access_count``, ``supersedes``, ``merged_from``,
    ``status`` and the clock. On ``add`` (and ``share``) no unit may be
    stamped in the future (``created_at``/``last_accessed_at`` beyond now are
    clamped to now, so a future stamp cannot dodge decay), ``access_count`` is
    bounded by ``MAX_ACCESS_COUNT`` (the model refuses more) and earns no
    confidence (the per-source cap applies whatever count is claimed), and a
    unit whose text came from a tool (``source="tool_output"``) arrives unused,
    active, replacing nothing and merged from nothing (learned once: ``evidence`` 1). Feedback, merges and
    supersession then set these fields through the store's own operations.
    """
    unit = clamp_future(unit, now=now)
    changes: dict[str, object] = {}
    if unit.source in UNTRUSTED_SOURCES:
        if unit.access_count:
            changes["access_count"] = 0
        if unit.supersedes is not None:
            changes["supersedes"] = None
        if unit.merged_from:
            changes["merged_from"] = []
        if unit.evidence != 1:
            changes["evidence"] = 1
        if unit.status != "active":
            changes["status"] = "active"
    if not changes:
        return unit
    logger.info(
        "memory %s from %s: system-owned fields reset on arrival: %s", unit.memory_id, unit.source, sorted(changes)
    )
    return unit.evolve(**changes)


@dataclass(frozen=True, slots=True)
class ConfidencePolicy:
    """How confidence moves with outcomes, rejections and supersedes. Every number is configurable.

    Attributes:
        success_delta: Added on a successful reuse.
        success_cap: Success never raises confidence above this.
        failure_delta: Subtracted when a task that used the memory failed.
        failure_floor: Failure never lowers confidence below this.
        rejection_factor: Multiplier when the user explicitly rejects the memory.
        supersede_factor: Multiplier applied to a unit that a newer one supersedes.
        initial: Initial confidence by source, used when a unit has none.
        ceiling: Highest confidence a unit not yet confirmed by feedback
            (``access_count == 0``) may claim on arrival, by source; sources not
            listed are uncapped. An LLM or a tool cannot make its own output
            outrank corroborated memories by claiming ``confidence=1.0``.
        suspicious_cap: Confidence cap for a unit from an untrusted source whose
            text reads like an instruction or imitates prompt structure (it is
            also tagged ``suspicious``; see ``_safety.looks_like_instruction``).
    """

    success_delta: float = 0.05
    success_cap: float = 0.95
    failure_delta: float = 0.1
    failure_floor: float = 0.1
    rejection_factor: float = 0.5
    supersede_factor: float = 0.5
    initial: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_INITIAL_CONFIDENCE))
    ceiling: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_CONFIDENCE_CEILING))
    suspicious_cap: float = 0.3

    def __post_init__(self) -> None:
        for name in ("success_delta", "success_cap", "failure_delta", "failure_floor", "suspicious_cap"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise ConfigurationError(f"ConfidencePolicy.{name} must be in [0, 1], got {value!r}")
        for name in ("rejection_factor", "supersede_factor"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise ConfigurationError(f"ConfidencePolicy.{name} must be in [0, 1], got {value!r}")
        for name in ("initial", "ceiling"):
            table = getattr(self, name)
            unknown = set(table) - set(DEFAULT_INITIAL_CONFIDENCE)
            if unknown:
                raise ConfigurationError(f"ConfidencePolicy.{name} has unknown sources: {sorted(unknown)}")
            bad = {
                k: v
                for k, v in table.items()
                if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1
            }
            if bad:
                raise ConfigurationError(f"ConfidencePolicy.{name} values must be in [0, 1], got {bad}")

    def apply(self, confidence: float, *, success: bool | None, rejected: bool) -> float:
        """The confidence after one piece of feedback."""
        if rejected:
            confidence *= self.rejection_factor
        elif success is True:
            confidence = max(confidence, min(self.success_cap, confidence + self.success_delta))
        elif success is False:
            confidence = min(confidence, max(self.failure_floor, confidence - self.failure_delta))
        return round(confidence, 6)


def fresh_ids_for_taken(units: list[MemoryUnit], taken: set[str]) -> list[MemoryUnit]:
    """``units`` with a new id for each whose id is already stored (or repeated in the batch).

    ``add`` and ``share`` never overwrite a stored unit by naming its id: the
    incoming unit is added under a fresh id and then goes through dedup like
    any other (a less trusted duplicate cannot rewrite a more trusted unit).
    Changing a stored unit is ``MemoryStore.update``, which checks provenance.
    """
    out: list[MemoryUnit] = []
    seen = set(taken)
    for unit in units:
        if unit.memory_id in seen:
            fresh = new_memory_id()
            logger.warning("memory id %s is already stored: the incoming unit is added as %s", unit.memory_id, fresh)
            unit = unit.evolve(memory_id=fresh)
        seen.add(unit.memory_id)
        out.append(unit)
    return out
