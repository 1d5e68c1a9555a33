"""The weighted recall score (seed §2.4, §4.4) as a pure function.

``score = (w_sim·similarity + w_type·[task type matches] + w_conf·confidence
+ min(access_count / access_scale, access_cap) + w_source·source_prior)
× max(time_floor, 1 − days_since_created / time_horizon_days)``

The defaults are the seed's numbers (0.5 / 0.2 / 0.2 / access ≤ 0.1, time factor
``max(0.5, 1 − days/365)`` multiplying the sum) plus a small source term
(seed §2.4: a user's correction outranks an agent's inference; tool output ranks
lowest). Every number is configurable through :class:`ScoringWeights`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from langchain_hindsight._trust import DEFAULT_SOURCE_PRIOR
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.types import MemoryUnit, ScoredMemory, utcnow

__all__ = ["DEFAULT_SOURCE_PRIOR", "ScoringWeights", "score_memory", "time_factor"]

_SECONDS_PER_DAY = 86_400


def _check_number(name: str, value: object, *, low: float = 0.0, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigurationError(f"ScoringWeights.{name} must be a finite number, got {value!r}")
    if not low <= value <= high:
        raise ConfigurationError(f"ScoringWeights.{name} must be in [{low}, {high}], got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class ScoringWeights:
    """Weights of the recall score. Defaults are the seed's (§4.4).

    Attributes:
        similarity: Weight of the query relevance in [0, 1] (fused dense + lexical).
        task_type: Added when the memory's task type equals the requested one.
        confidence: Weight of the memory's confidence.
        access_scale: Access heat is ``min(access_count / access_scale, access_cap)``.
        access_cap: Upper bound of the access heat.
        source: Weight of the source prior (:data:`DEFAULT_SOURCE_PRIOR`); 0 disables.
        source_prior: Trust per source in [0, 1]; unknown sources count 0.5.
        time_floor: Lowest time factor (old memories keep this share of their score).
        time_horizon_days: Days after which the time factor reaches ``time_floor``
            (linear before that: ``1 - days / time_horizon_days``).

    Example:
        >>> w = ScoringWeights(task_type=0.3)
        >>> w.similarity, w.task_type
        (0.5, 0.3)
    """

    similarity: float = 0.5
    task_type: float = 0.2
    confidence: float = 0.2
    access_scale: float = 10.0
    access_cap: float = 0.1
    source: float = 0.1
    source_prior: Mapping[str, float] = field(default_factory=lambda: DEFAULT_SOURCE_PRIOR)
    time_floor: float = 0.5
    time_horizon_days: float = 365.0

    def __post_init__(self) -> None:
        for name in ("similarity", "task_type", "confidence", "access_cap", "source"):
            _check_number(name, getattr(self, name))
        _check_number("time_floor", self.time_floor, high=1.0)
        for name in ("access_scale", "time_horizon_days"):
            if _check_number(name, getattr(self, name)) <= 0:
                raise ConfigurationError(f"ScoringWeights.{name} must be > 0")
        if not isinstance(self.source_prior, Mapping):
            raise ConfigurationError("ScoringWeights.source_prior must be a mapping of source -> weight")
        for key, value in self.source_prior.items():
            _check_number(f"source_prior[{key!r}]", value, high=1.0)


def time_factor(created_at: datetime, now: datetime, *, weights: ScoringWeights | None = None) -> float:
    """``max(time_floor, 1 - days_since_created / time_horizon_days)`` with whole days, as in seed §4.4.

    A ``created_at`` in the future counts as zero days old.
    """
    w = weights or ScoringWeights()
    days = max(0, int((now - created_at).total_seconds() // _SECONDS_PER_DAY))
    return max(w.time_floor, 1.0 - days / w.time_horizon_days)


def score_memory(
    memory: MemoryUnit,
    similarity: float,
    *,
    task_type: str | None = None,
    now: datetime | None = None,
    weights: ScoringWeights | None = None,
    extra: Mapping[str, float] | None = None,
) -> ScoredMemory:
    """Score one memory for a query; the result carries every factor.

    Args:
        memory: The candidate unit.
        similarity: Its relevance to the query in [0, 1] (clamped).
        task_type: The task type of the current task; ``None`` gives no bonus.
        now: The clock (aware datetime); defaults to the current UTC time.
        weights: The weights; defaults to the seed's.
        extra: Further diagnostic numbers to put in the breakdown (e.g. the
            dense cosine and the BM25 score); they do not change the score.

    Returns:
        A :class:`ScoredMemory` whose ``breakdown`` has ``similarity``,
        ``task_type``, ``confidence``, ``access``, ``source`` (the weighted
        terms), ``time_factor`` and ``score``.

    Example:
        >>> from datetime import UTC, datetime
        >>> u = MemoryUnit(task_type="weekly_report", content="Weekly: last 7 days.",
        ...                confidence=0.8, created_at=datetime(2026, 1, 1, tzinfo=UTC))
        >>> s = score_memory(u, 0.9, task_type="weekly_report", now=datetime(2026, 1, 1, tzinfo=UTC))
        >>> round(s.score, 3)  # 0.45 + 0.2 + 0.16 + 0 + 0.05, time factor 1
        0.86
    """
    w = weights or ScoringWeights()
    when = now or utcnow()
    if when.tzinfo is None:
        raise ConfigurationError("now must be timezone-aware")
    sim = min(1.0, max(0.0, float(similarity))) if math.isfinite(similarity) else 0.0
    terms = {
        "similarity": w.similarity * sim,
        "task_type": w.task_type if task_type is not None and memory.task_type == task_type else 0.0,
        "confidence": w.confidence * memory.score_confidence,
        "access": min(memory.access_count / w.access_scale, w.access_cap),
        "source": w.source * w.source_prior.get(memory.source, 0.5),
    }
    factor = time_factor(memory.created_at, when, weights=w)
    total = sum(terms.values()) * factor
    breakdown = {**terms, "time_factor": factor, "score": total}
    if extra:
        breakdown.update({k: float(v) for k, v in extra.items() if k not in breakdown})
    return ScoredMemory(memory=memory, score=total, similarity=sim, breakdown=breakdown)
