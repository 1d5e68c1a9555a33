"""How confidence moves: with feedback (:class:`ConfidencePolicy`) and with evidence (a lesson learned again).

Why credit is bounded: each earlier credit a memory got for the *same task* (:meth:`~ConfidencePolicy.task_key`)
within ``repeat_window`` multiplies a success's credit by ``repeat_factor`` (+0.05, +0.0125, +0.003, ...: at
most +0.0667 a task a day), so "ok" repeated to the same task cannot reach the cap, while distinct tasks earn
the full credit. The count is derived from the run journal, never stored on the unit.

Why evidence is bounded: a lesson learned again (``MemoryUnit.evidence`` counts the learnings) is more credible,
but only up to its source's ceiling (:func:`corroborated`), whether a write merges it (``writes.merge_units``)
or the merge pass folds stored duplicates (``lifecycle._merge.fold``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import timedelta

from langchain_hindsight._checks import check_number, is_int, refuse_unknown_keywords
from langchain_hindsight._safety import SUSPICIOUS_TAG
from langchain_hindsight._trust import DEFAULT_CONFIDENCE_CEILING, DEFAULT_INITIAL_CONFIDENCE, SOURCE_TRUST
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.types import MemoryUnit

__all__ = ["EVIDENCE_GAIN", "ConfidencePolicy", "corroborated", "evidence_cap", "feedback_reason", "uncorroborated"]

_PUNCT = re.compile(r"[\W_]+", re.UNICODE)


@refuse_unknown_keywords
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
        ceiling: Highest confidence a unit not yet confirmed by feedback (``access_count == 0``) may claim on
            arrival, by source; sources not listed are uncapped. An LLM or a tool cannot make its own output
            outrank corroborated memories by claiming ``confidence=1.0``.
        suspicious_cap: Confidence cap for a unit from an untrusted source whose text reads like an instruction
            or imitates prompt structure (it is also tagged ``suspicious``; see ``_safety.looks_like_instruction``).
        repeat_factor: Multiplier on ``success_delta`` for each credit the memory already got for the same task
            within ``repeat_window`` (``0``: a repeat earns nothing; ``1``: no bound, the seed's rule).
        repeat_window: How close (either side of the run's start) an earlier credit for the same task must be
            to count as a repeat.
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
    repeat_factor: float = 0.25
    repeat_window: timedelta = timedelta(days=1)

    def __post_init__(self) -> None:
        if not isinstance(self.repeat_window, timedelta) or self.repeat_window < timedelta(0):
            raise ConfigurationError(
                f"ConfidencePolicy.repeat_window must be a non-negative timedelta, got {self.repeat_window!r}"
            )
        for name in ("success_delta", "success_cap", "failure_delta", "failure_floor", "suspicious_cap",
                     "rejection_factor", "supersede_factor", "repeat_factor"):  # fmt: skip
            check_number(f"ConfidencePolicy.{name}", getattr(self, name), 0.0, 1.0)
        for name in ("initial", "ceiling"):
            table = getattr(self, name)
            if unknown := set(table) - set(DEFAULT_INITIAL_CONFIDENCE):
                raise ConfigurationError(f"ConfidencePolicy.{name} has unknown sources: {sorted(unknown)}")
            for source, value in table.items():
                check_number(f"ConfidencePolicy.{name}[{source!r}]", value, 0.0, 1.0)

    def success_credit(self, repeats: int = 0) -> float:
        """The credit of a success that is the ``repeats``-th repeat of a task (0: the first).

        Example:
            >>> p = ConfidencePolicy()
            >>> p.success_credit(0), p.success_credit(1), p.success_credit(2)
            (0.05, 0.0125, 0.003125)
        """
        if not is_int(repeats, 0):
            raise ConfigurationError(f"repeats must be a non-negative int, got {repeats!r}")
        return round(self.success_delta * self.repeat_factor**repeats, 6)

    @staticmethod
    def task_key(task: str) -> str:
        """The key under which two runs count as the same task: case, width, spaces and punctuation ignored.

        Example:
            >>> ConfidencePolicy.task_key("生成本周的销售周报。") == ConfidencePolicy.task_key(" 生成本周的 销售周报 ")
            True
            >>> ConfidencePolicy.task_key("Summarise sales.csv!") == ConfidencePolicy.task_key("summarise SALES csv")
            True
        """
        return _PUNCT.sub("", unicodedata.normalize("NFKC", task).casefold())

    def apply(self, confidence: float, *, success: bool | None, rejected: bool, repeats: int = 0) -> float:
        """The confidence after one piece of feedback (``repeats``: see :meth:`success_credit`)."""
        if rejected:
            confidence *= self.rejection_factor
        elif success is True:
            confidence = max(confidence, min(self.success_cap, confidence + self.success_credit(repeats)))
        elif success is False:
            confidence = min(confidence, max(self.failure_floor, confidence - self.failure_delta))
        return round(confidence, 6)


def feedback_reason(
    policy: ConfidencePolicy, *, success: bool | None, rejected: bool, repeats: int = 0, reason: str | None = None
) -> str:
    """Why a confidence moved, as the store logs it (``reason`` is the caller's, e.g. ``"success of run r1"``).

    Example:
        >>> feedback_reason(ConfidencePolicy(), success=True, rejected=False, repeats=1, reason="success of run r2")
        'success of run r2; diminished ×0.25: 1 earlier credit for the same task within 24 h'
    """
    if rejected:
        return f"{reason or 'rejected by the user'} (× {policy.rejection_factor:g})"
    if success is False:
        return f"{reason or 'failure'} (−{policy.failure_delta:g}, floor {policy.failure_floor:g})"
    if not repeats:
        return reason or "success"
    factor, plural = policy.repeat_factor**repeats, "s" if repeats > 1 else ""
    return (
        f"{reason or 'success'}; diminished ×{factor:.3g}: {repeats} earlier credit{plural} for the same task "
        f"within {policy.repeat_window.total_seconds() / 3600:g} h"
    )


EVIDENCE_GAIN = 0.25
"""Share of the gap to the source's ceiling that each further learning of a lesson closes (see :func:`corroborated`)."""


def corroborated(confidence: float, source: str, added: int, *, ceiling: float | None = None) -> float:
    """``confidence`` after a lesson from ``source`` was learned ``added`` more times.

    Each further learning closes :data:`EVIDENCE_GAIN` of the gap to the source's ceiling (``_trust``: 0.9 for a
    rule, 0.5 for a lesson quoting a tool's text; ``ceiling`` lowers it, e.g. a store's own policy): diminishing
    steps, never above it. A confidence already at or above it (earned by feedback) is left as it is.

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

    A ``suspicious`` unit never gains by repetition: an injection repeated is not corroborated.
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
