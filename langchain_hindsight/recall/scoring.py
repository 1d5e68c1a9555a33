"""The weighted recall score as a pure function: similarity is one factor among several.

``score = (w_sim·similarity + w_type·[task type matches] + w_conf·confidence
+ min(access_count / access_scale, access_cap) + w_source·source_prior)
× max(time_floor, 1 − days_since_created / time_horizon_days)``

The defaults (0.5 / 0.2 / 0.2 / access ≤ 0.1, time factor
``max(0.5, 1 − days/365)`` multiplying the sum, days at timestamp resolution so
the newer of two same-day memories wins a tie) plus a small source term
(a user's correction outranks an agent's inference; tool output ranks
lowest). Every number is configurable through :class:`ScoringWeights`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from langchain_hindsight._checks import check_number, refuse_unknown_keywords
from langchain_hindsight._trust import DEFAULT_SOURCE_PRIOR
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.types import MemoryUnit, ScoredMemory, utcnow

__all__ = ["ScoreTable", "ScoringWeights", "score_many", "score_memory", "time_factor"]

_SECONDS_PER_DAY = 86_400


def _check_number(name: str, value: object, *, high: float = math.inf) -> float:
    return check_number(f"ScoringWeights.{name}", value, 0.0, high)


@refuse_unknown_keywords
@dataclass(frozen=True, slots=True)
class ScoringWeights:
    """Weights of the recall score. Every weight is configurable.

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
    """``max(time_floor, 1 - days_since_created / time_horizon_days)``, days at timestamp resolution.

    Days are fractional (12 hours is 0.5 days), so of two memories written the
    same day the newer scores higher, as it would a day later; a ``created_at``
    in the future counts as zero days old.

    Example:
        >>> from datetime import UTC, datetime
        >>> now = datetime(2026, 1, 2, tzinfo=UTC)
        >>> time_factor(datetime(2026, 1, 1, tzinfo=UTC), now) == 1 - 1 / 365
        True
        >>> time_factor(datetime(2026, 1, 1, 12, tzinfo=UTC), now) > time_factor(datetime(2026, 1, 1, tzinfo=UTC), now)
        True
    """
    w = weights or ScoringWeights()
    days = max(0.0, (now - created_at).total_seconds() / _SECONDS_PER_DAY)
    return max(w.time_floor, 1.0 - days / w.time_horizon_days)


@refuse_unknown_keywords
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
        weights: The weights (default: :class:`ScoringWeights`).
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


TERMS = ("similarity", "task_type", "confidence", "access", "source")
"""The weighted terms of the score, in the order they are summed."""


@dataclass(frozen=True, slots=True)
class ScoreTable:
    """The score of many candidates at once: one float64 array per factor, aligned with ``units``.

    Built by :func:`score_many`; :meth:`scored` turns one row into the same
    :class:`~langchain_hindsight.types.ScoredMemory` that :func:`score_memory` returns.

    Attributes:
        units: The candidates.
        similarity: Relevance clamped to [0, 1] (``ScoredMemory.similarity``).
        terms: The weighted terms (:data:`TERMS`), each an array.
        time_factor: The time factor per candidate.
        score: ``sum(terms) × time_factor`` per candidate.
    """

    units: Sequence[MemoryUnit]
    similarity: np.ndarray
    terms: Mapping[str, np.ndarray]
    time_factor: np.ndarray
    score: np.ndarray

    def scored(
        self, row: int, *, extra: Mapping[str, float] | None = None, query_task_type: str | None = None
    ) -> ScoredMemory:
        """Row ``row`` as a :class:`~langchain_hindsight.types.ScoredMemory` (breakdown as in :func:`score_memory`).

        Args:
            row: Index into :attr:`units`.
            extra: Diagnostic numbers added to the breakdown (never overriding a factor).
            query_task_type: Stored on the result (the task type the recall scored against).
        """
        breakdown = {name: float(self.terms[name][row]) for name in TERMS}
        breakdown["time_factor"] = float(self.time_factor[row])
        breakdown["score"] = float(self.score[row])
        if extra:
            breakdown.update({k: float(v) for k, v in extra.items() if k not in breakdown})
        return ScoredMemory(
            memory=self.units[row],
            score=breakdown["score"],
            similarity=float(self.similarity[row]),
            breakdown=breakdown,
            query_task_type=query_task_type,
        )


def score_many(
    units: Sequence[MemoryUnit],
    similarity: npt.ArrayLike,
    *,
    task_type: str | None = None,
    now: datetime | None = None,
    weights: ScoringWeights | None = None,
) -> ScoreTable:
    """:func:`score_memory` for many candidates at once, in numpy (equal results, to the last bit).

    One pass over the units reads the fields the score needs; the arithmetic
    then runs on arrays in the same order as :func:`score_memory`. Recall scores
    every candidate this way and builds a :class:`~langchain_hindsight.types.ScoredMemory`
    only for the few it returns (:meth:`ScoreTable.scored`).

    Args:
        units: The candidates.
        similarity: Relevance per candidate in [0, 1] (clamped; non-finite counts 0).
        task_type: The task type of the current task; ``None`` gives no bonus.
        now: The clock (aware datetime); defaults to the current UTC time.
        weights: The weights (default: :class:`ScoringWeights`).

    Raises:
        ConfigurationError: ``now`` is naive or ``similarity`` does not match ``units``.

    Example:
        >>> from datetime import UTC, datetime
        >>> u = MemoryUnit(task_type="weekly_report", content="Weekly: last 7 days.",
        ...                confidence=0.8, created_at=datetime(2026, 1, 1, tzinfo=UTC))
        >>> table = score_many([u], [0.9], task_type="weekly_report", now=datetime(2026, 1, 1, tzinfo=UTC))
        >>> round(float(table.score[0]), 3), table.scored(0).score == score_memory(
        ...     u, 0.9, task_type="weekly_report", now=datetime(2026, 1, 1, tzinfo=UTC)).score
        (0.86, True)
    """
    w = weights or ScoringWeights()
    when = now or utcnow()
    if when.tzinfo is None:
        raise ConfigurationError("now must be timezone-aware")
    raw = np.asarray(similarity, dtype=np.float64)
    if raw.shape != (len(units),):
        raise ConfigurationError("score_many: one similarity per unit is needed")
    sim = np.minimum(1.0, np.maximum(0.0, np.where(np.isfinite(raw), raw, 0.0)))
    prior = w.source_prior
    n = len(units)
    matches = np.zeros(n, dtype=bool)
    confidence = np.empty(n, dtype=np.float64)
    access = np.empty(n, dtype=np.float64)
    source = np.empty(n, dtype=np.float64)
    days = np.empty(n, dtype=np.float64)
    for j, unit in enumerate(units):
        matches[j] = task_type is not None and unit.task_type == task_type
        confidence[j] = unit.score_confidence
        access[j] = unit.access_count
        source[j] = prior.get(unit.source, 0.5)
        days[j] = max(0.0, (when - unit.created_at).total_seconds() / _SECONDS_PER_DAY)
    terms = {
        "similarity": w.similarity * sim,
        "task_type": np.where(matches, w.task_type, 0.0),
        "confidence": w.confidence * confidence,
        "access": np.minimum(access / w.access_scale, w.access_cap),
        "source": w.source * source,
    }
    factor = np.maximum(w.time_floor, 1.0 - days / w.time_horizon_days)
    total = terms["similarity"] + terms["task_type"] + terms["confidence"] + terms["access"] + terms["source"]
    return ScoreTable(units=units, similarity=sim, terms=terms, time_factor=factor, score=total * factor)
