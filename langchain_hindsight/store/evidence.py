"""How far evidence lifts a lesson: the same lesson learned again is more credible, within bounds.

Shared by the write path (``decide.merge_units``: a re-learned lesson merges) and the merge pass
(``lifecycle._merge.fold``: stored duplicates fold); ``MemoryUnit.evidence`` counts the learnings.
"""

from __future__ import annotations

from langchain_hindsight._safety import SUSPICIOUS_TAG
from langchain_hindsight._trust import SOURCE_TRUST
from langchain_hindsight.store._policy import ConfidencePolicy
from langchain_hindsight.types import MemoryUnit

__all__ = ["EVIDENCE_GAIN", "corroborated", "evidence_cap", "uncorroborated"]

EVIDENCE_GAIN = 0.25
"""Share of the gap to the source's ceiling that each further learning of a lesson closes (see :func:`corroborated`)."""


def corroborated(confidence: float, source: str, added: int, *, ceiling: float | None = None) -> float:
    """``confidence`` after a lesson from ``source`` was learned ``added`` more times.

    Each further learning closes :data:`EVIDENCE_GAIN` of the gap to the source's ceiling
    (``langchain_hindsight._trust``: 0.9 for a rule, 0.5 for a lesson quoting a tool's text;
    ``ceiling`` lowers it, e.g. a store's own policy): diminishing steps, never above the ceiling.
    A confidence already at or above it (earned by feedback) is left as it is.

    Example:
        >>> corroborated(0.7, "rule", 4)  # a rule lesson learned five times: 0.9 - 0.2 * 0.75**4
        0.836719
        >>> corroborated(0.4, "tool_output", 4), corroborated(0.95, "rule", 3)
        (0.468359, 0.95)
    """
    cap = SOURCE_TRUST[source].ceiling  # type: ignore[index]
    if ceiling is not None:
        cap = min(cap, ceiling)
    if added <= 0 or confidence >= cap:
        return confidence
    return round(cap - (cap - confidence) * (1.0 - EVIDENCE_GAIN) ** added, 6)


def evidence_cap(unit: MemoryUnit, policy: ConfidencePolicy | None) -> float | None:
    """How high evidence may lift ``unit`` under ``policy``: its source's ceiling, the suspicious cap if tagged.

    A unit tagged ``suspicious`` (instruction-like text from an untrusted source)
    never gains by repetition: an injection repeated is not corroborated.
    """
    if SUSPICIOUS_TAG in unit.tags:
        return min(unit.score_confidence, policy.suspicious_cap) if policy is not None else unit.score_confidence
    return None if policy is None else policy.ceiling.get(unit.source)


def uncorroborated(confidence: float, source: str, removed: int) -> float:
    """The inverse of :func:`corroborated`: ``confidence`` before ``removed`` learnings were added (for an undo).

    Exact up to the rounding to six decimals both apply.

    Example:
        >>> round(uncorroborated(corroborated(0.4, "tool_output", 4), "tool_output", 4), 4)
        0.4
    """
    cap = SOURCE_TRUST[source].ceiling  # type: ignore[index]
    if removed <= 0 or confidence >= cap:
        return confidence
    return round(max(0.0, cap - (cap - confidence) / (1.0 - EVIDENCE_GAIN) ** removed), 6)
