"""The write path of ``MemoryStore``: prepare, plan (dedupe, merge, supersede), write.

Planning is pure: :func:`plan_add` walks the incoming units in order and decides,
from each one's nearest active neighbour (stored or earlier in the batch), whether
it is merged into it (seed §5.3), supersedes it (seed §3.4) or is simply new,
under the provenance rules (a less trusted source never replaces a more trusted
one). :func:`write_plan` then makes the Chroma calls in crash-safe order: new
units first (a superseding one marked ``pending``), demotions and merges second,
marks cleared last; ``MemoryStore._repair`` finishes a write a crash interrupted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_hindsight._codec import PENDING_SUPERSEDE, unit_from_record, unit_to_metadata
from langchain_hindsight._collections import Collection, Role, check_namespace
from langchain_hindsight._policy import TRUST_ORDER, TRUSTED_SOURCES, ConfidencePolicy, settle_claims, trust
from langchain_hindsight._safety import SUSPICIOUS_TAG, looks_like_instruction
from langchain_hindsight.errors import ConfigurationError, HindsightError, InvalidMemoryError, StoreError
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import DEFAULT_INITIAL_CONFIDENCE, MemoryUnit

__all__ = [
    "WritePlan",
    "check_encodable",
    "check_source_change",
    "check_unit",
    "demote",
    "merge_units",
    "nearest",
    "plan_add",
    "prepare",
    "query_neighbours",
    "write_plan",
    "write_updates",
]

# Records are logged under the public module's name, as before the split: logging config keeps applying.
logger = logging.getLogger("langchain_hindsight.store")

_NEIGHBOURS = 5

Scope = Literal["task_type", "namespace"]
Pending = dict[str, tuple[MemoryUnit, list[float]]]
Neighbours = Callable[[MemoryUnit, list[float]], Any]
"""``(unit, vector) -> `` a raw single-vector ``col.query`` result of stored candidates, or ``None``."""


def check_unit(value: object, what: str = "unit") -> MemoryUnit:
    """``value`` if it is a :class:`MemoryUnit`, else a :class:`ConfigurationError`."""
    if not isinstance(value, MemoryUnit):
        raise ConfigurationError(f"{what} must be a MemoryUnit, got {type(value).__name__}")
    return value


def check_encodable(unit: MemoryUnit) -> MemoryUnit:
    """Refuse text Chroma cannot store (lone surrogates, e.g. from a JSON escape in LLM output), naming the field."""
    for name, value in unit.to_dict().items():
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidMemoryError(f"invalid memory unit: {name}: is not valid Unicode text ({e.reason})") from e
    return unit


def prepare(
    unit: object,
    namespace: str | None,
    *,
    default_namespace: str,
    vocabulary: TaskTypeVocabulary,
    policy: ConfidencePolicy,
) -> MemoryUnit:
    """``unit`` as it will be stored: checked, task type normalised, namespace and confidence settled.

    A unit that names no namespace gets ``default_namespace``; its claimed
    confidence is capped by source, and an instruction-like text from an
    untrusted source is tagged ``suspicious`` and capped lower.
    """
    unit = settle_claims(check_encodable(check_unit(unit)))
    changes: dict[str, Any] = {"task_type": vocabulary.normalize(unit.task_type)}
    if namespace is not None:
        changes["namespace"] = check_namespace(namespace)
    elif "namespace" not in unit.model_fields_set:
        # A unit that names no namespace belongs to this store's, never to a shared "default".
        changes["namespace"] = default_namespace
    confidence = unit.score_confidence
    if "confidence" not in unit.model_fields_set and unit.source in policy.initial:
        # A unit created without an explicit confidence gets this store's policy default.
        confidence = policy.initial[unit.source]
    if unit.source in policy.ceiling:
        confidence = min(confidence, policy.ceiling[unit.source])  # claimed, not earned: access_count earns nothing
    if unit.source not in TRUSTED_SOURCES and (
        SUSPICIOUS_TAG in unit.tags or looks_like_instruction(f"{unit.content}\n{unit.task_description}")
    ):
        logger.warning(
            "memory %s from %s reads like an instruction: tagged %r", unit.memory_id, unit.source, SUSPICIOUS_TAG
        )
        changes["tags"] = list(dict.fromkeys([*unit.tags, SUSPICIOUS_TAG]))
        confidence = min(confidence, policy.suspicious_cap)
    if confidence != unit.confidence:
        changes["confidence"] = confidence
    return unit.evolve(**changes)


def check_source_change(current: MemoryUnit, source: object) -> None:
    """Provenance is fixed on add: an update may lower a unit's source, never raise it."""
    if source in TRUST_ORDER and trust(str(source)) < trust(current.source):
        raise ConfigurationError(
            f"source cannot be raised from {current.source!r} to {source!r}: provenance is fixed when a "
            "unit is added (add a new unit with the trusted source instead)"
        )


def demote(unit: MemoryUnit, policy: ConfidencePolicy) -> MemoryUnit:
    """``unit`` superseded by a newer one: status ``superseded``, confidence × ``supersede_factor``."""
    return unit.evolve(status="superseded", confidence=round(unit.score_confidence * policy.supersede_factor, 6))


def merge_units(existing: MemoryUnit, incoming: MemoryUnit) -> MemoryUnit:
    """``existing`` after absorbing its near-duplicate ``incoming``."""
    if trust(incoming.source) > trust(existing.source):
        # A less trusted echo corroborates nothing: record it, change nothing else.
        return existing.evolve(
            merged_from=list(dict.fromkeys([*existing.merged_from, incoming.memory_id, *incoming.merged_from]))
        )
    return existing.evolve(
        confidence=max(existing.score_confidence, incoming.score_confidence),
        access_count=existing.access_count + incoming.access_count,
        tags=[*existing.tags, *incoming.tags],
        last_accessed_at=max(existing.last_accessed_at, incoming.last_accessed_at),
        merged_from=list(dict.fromkeys([*existing.merged_from, incoming.memory_id, *incoming.merged_from])),
        # Provenance: a user's word outranks an inference; never lower it.
        source=min((existing.source, incoming.source), key=list(DEFAULT_INITIAL_CONFIDENCE).index),
    )


def query_neighbours(col: Collection, unit: MemoryUnit, vector: list[float], scope: Scope) -> Any:
    """The stored active units nearest to ``vector`` in ``unit``'s scope (raw query result; ``None`` if empty)."""
    clauses: list[dict[str, Any]] = [{"status": "active"}]
    if scope == "task_type":
        clauses += [{"task_type": unit.task_type}, {"kind": unit.kind}]
    if not col.count():
        return None
    return col.query(
        query_embeddings=[vector],
        n_results=_NEIGHBOURS,
        where={"$and": clauses} if len(clauses) > 1 else clauses[0],
        include=["documents", "metadatas", "distances"],
    )


def nearest(
    unit: MemoryUnit,
    vector: list[float],
    stored: Any,
    pending: Pending,
    changed: dict[str, MemoryUnit],
    scope: Scope,
) -> tuple[MemoryUnit | None, float]:
    """The most similar active unit in scope, among ``stored`` (a query result) and ``pending`` ones.

    A stored unit already rewritten in this batch is judged by its ``changed`` version.
    """
    best: MemoryUnit | None = None
    best_sim = -1.0
    if stored is not None:
        for j, memory_id in enumerate(stored["ids"][0]):
            if memory_id == unit.memory_id:
                continue
            candidate = changed.get(memory_id) or unit_from_record(
                memory_id, stored["documents"][0][j], stored["metadatas"][0][j]
            )
            sim = 1.0 - float(stored["distances"][0][j])
            if candidate.status == "active" and sim > best_sim:
                best, best_sim = candidate, sim
    for other, other_vec in pending.values():
        if other.status != "active" or other.memory_id == unit.memory_id:
            continue
        if scope == "task_type" and (other.task_type, other.kind) != (unit.task_type, unit.kind):
            continue
        sim = sum(a * b for a, b in zip(vector, other_vec, strict=True))
        if sim > best_sim:
            best, best_sim = other, sim
    return best, best_sim


@dataclass(slots=True)
class WritePlan:
    """What one batch of adds writes to a namespace's memories collection."""

    new: Pending = field(default_factory=dict)
    """Units (with vectors) to upsert, in batch order; includes demotions/merges of earlier batch units."""
    changed: dict[str, MemoryUnit] = field(default_factory=dict)
    """Already stored units to rewrite (merged into or demoted)."""
    superseding: set[str] = field(default_factory=set)
    """New units whose predecessor is an already stored unit (written marked ``pending``)."""
    results: list[MemoryUnit] = field(default_factory=list)
    """What is stored for each incoming unit, aligned with the input."""


def plan_add(
    units: Sequence[MemoryUnit],
    vectors: Sequence[list[float]],
    *,
    dedupe: bool,
    neighbours: Neighbours,
    merge_threshold: float | None,
    conflict_threshold: float | None,
    scope: Scope,
    policy: ConfidencePolicy,
) -> WritePlan:
    """Decide, unit by unit, between merge, supersede and plain insert (``neighbours`` is asked once per unit)."""
    plan = WritePlan()
    new, changed = plan.new, plan.changed
    results: list[MemoryUnit] = []
    for unit, vector in zip(units, vectors, strict=True):
        if not dedupe:
            new[unit.memory_id] = (unit, vector)
            results.append(unit)
            continue
        match, similarity = nearest(unit, vector, neighbours(unit, vector), new, changed, scope)
        identical = match is not None and " ".join(match.content.split()) == " ".join(unit.content.split())
        duplicate = match is not None and (identical or (merge_threshold is not None and similarity >= merge_threshold))
        conflict = (
            match is not None and not duplicate and conflict_threshold is not None and similarity > conflict_threshold
        )
        # Provenance: a less trusted unit never replaces a more trusted one (both stay, ranked by
        # source); a more trusted near-duplicate with other wording replaces a less trusted one.
        if match is not None and duplicate and not identical and trust(unit.source) < trust(match.source):
            duplicate, conflict = False, True
        if match is not None and conflict and trust(unit.source) > trust(match.source):
            conflict = False
        if match is not None and duplicate:
            merged = merge_units(match, unit)
            if match.memory_id in new:
                new[match.memory_id] = (merged, new[match.memory_id][1])
            else:
                changed[match.memory_id] = merged
            results.append(merged)
            continue
        if match is not None and conflict:
            unit = unit.evolve(supersedes=match.memory_id)
            demoted = demote(match, policy)
            if match.memory_id in new:
                new[match.memory_id] = (demoted, new[match.memory_id][1])
            else:
                changed[match.memory_id] = demoted
                plan.superseding.add(unit.memory_id)
        new[unit.memory_id] = (unit, vector)
        results.append(unit)
    # Final values for units written in this batch (a later unit may have merged into an earlier one).
    plan.results = [new[u.memory_id][0] if u.memory_id in new else changed.get(u.memory_id, u) for u in results]
    return plan


def write_plan(col: Collection, plan: WritePlan, client: Any) -> None:
    """Write ``plan`` to ``col``: upserts (in ``client``-sized batches), then rewrites, then clear the marks."""
    new, changed, superseding = plan.new, plan.changed, plan.superseding
    try:
        if new:
            ids = list(new)
            batch = client.get_max_batch_size()
            for start in range(0, len(ids), batch):
                chunk = ids[start : start + batch]
                col.upsert(
                    ids=chunk,
                    embeddings=[new[i][1] for i in chunk],
                    documents=[new[i][0].content for i in chunk],
                    metadatas=[
                        unit_to_metadata(new[i][0], pending=PENDING_SUPERSEDE if i in superseding else "")
                        for i in chunk
                    ],
                )
        # Second step (merges, demotions); a crash before the marks are cleared is finished by _repair.
        if changed:
            col.update(ids=list(changed), metadatas=[unit_to_metadata(u) for u in changed.values()])
        live = [i for i in superseding if i in new]
        if live:
            col.update(ids=live, metadatas=[{"pending": ""} for _ in live])
    except HindsightError:
        raise
    except Exception as e:
        raise StoreError(f"chroma write failed: {e}") from e


def write_updates(
    col: Collection, role: Role, units: Sequence[MemoryUnit], embed: Callable[[list[str]], list[list[float]]]
) -> list[MemoryUnit]:
    """Rewrite the units of ``units`` that live in ``col`` (re-embedding changed content); return them."""
    rows = col.get(ids=[u.memory_id for u in units], include=["documents"])
    docs = dict(zip(rows["ids"], rows["documents"] or [], strict=True))
    batch = [u for u in units if u.memory_id in docs]
    if not batch:
        return []
    if role == "archive" and any(u.status != "archived" for u in batch):
        raise ConfigurationError("use restore() to bring an archived unit back")
    if role == "memories" and any(u.status == "archived" for u in batch):
        raise ConfigurationError("use archive() to archive a unit")
    reembed = [u for u in batch if u.content != docs[u.memory_id]]
    try:
        if reembed:
            col.update(
                ids=[u.memory_id for u in reembed],
                embeddings=embed([u.content for u in reembed]),
                documents=[u.content for u in reembed],
                metadatas=[unit_to_metadata(u) for u in reembed],
            )
        same = [u for u in batch if u.content == docs[u.memory_id]]
        if same:
            col.update(ids=[u.memory_id for u in same], metadatas=[unit_to_metadata(u) for u in same])
    except Exception as e:
        raise StoreError(f"chroma update failed: {e}") from e
    return batch
