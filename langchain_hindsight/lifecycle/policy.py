"""The numbers of the memory lifecycle (:class:`LifecyclePolicy`) and the reports of its operations.

Re-exported by :mod:`langchain_hindsight.lifecycle.maintenance`; the review
(:mod:`langchain_hindsight.lifecycle._review`) and the maintenance both build on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from langchain_hindsight._checks import check_int, check_number, refuse_unknown_keywords
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.types import MemoryUnit
from langchain_hindsight.writes import MERGE_THRESHOLD

__all__ = [
    "ArchiveReport",
    "DecayReport",
    "LifecyclePolicy",
    "MaintenanceReport",
    "MergeReport",
    "Progress",
    "ReviewReport",
]

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called during long operations (the CLI prints it to stderr)."""


@refuse_unknown_keywords
@dataclass(frozen=True, slots=True)
class LifecyclePolicy:
    """The numbers of the memory lifecycle; every one is configurable.

    Attributes:
        decay_factor: Confidence multiplier per full idle period (0.9).
        decay_period_days: Length of one idle period (30).
        decay_floor: Decay never lowers confidence below this (0: no floor).
        archive_below: Active units with confidence below this (0.3)...
        archive_idle_days: ...and not accessed for more than this many days are archived (60).
        merge_threshold: Active units that make the same statement (equal after
            normalising case, whitespace and punctuation) merge when at least this
            cosine-similar (:data:`~langchain_hindsight.writes.MERGE_THRESHOLD`, 0.95, the
            store's default too). Different statements never merge, however similar.
        merge_scope: ``"task_type"`` merges only units of the same task type and
            kind (a weekly-report lesson never absorbs a monthly one);
            ``"namespace"`` merges across them; ``None`` follows the store's
            ``conflict_scope``.
        review_window_days: Default window of :meth:`Lifecycle.review` (7).
        review_min_runs: A review needs at least this many runs (and a rule
            pattern at least this many runs of one task type) (3).
        review_share: A rule pattern must hold in at least this share of a task
            type's runs (0.6).
        review_max_runs: At most this many runs go into the one review prompt (50).
        review_confidence: Confidence of a rule-made review unit (0.6).
        review_confidence_cap: An LLM-made review unit never starts above this (0.75).
    """

    decay_factor: float = 0.9
    decay_period_days: float = 30.0
    decay_floor: float = 0.0
    archive_below: float = 0.3
    archive_idle_days: float = 60.0
    merge_threshold: float = MERGE_THRESHOLD
    merge_scope: Literal["task_type", "namespace"] | None = None
    review_window_days: float = 7.0
    review_min_runs: int = 3
    review_share: float = 0.6
    review_max_runs: int = 50
    review_confidence: float = 0.6
    review_confidence_cap: float = 0.75

    def __post_init__(self) -> None:
        owner = "LifecyclePolicy"
        check_number(f"{owner}.decay_factor", self.decay_factor, 0.0, 1.0)
        check_number(f"{owner}.decay_period_days", self.decay_period_days, 0.0, 36_500.0, open_low=True)
        check_number(f"{owner}.decay_floor", self.decay_floor, 0.0, 1.0)
        check_number(f"{owner}.archive_below", self.archive_below, 0.0, 1.0)
        check_number(f"{owner}.archive_idle_days", self.archive_idle_days, 0.0, 36_500.0)
        check_number(f"{owner}.merge_threshold", self.merge_threshold, 0.0, 1.0, open_low=True)
        check_number(f"{owner}.review_window_days", self.review_window_days, 0.0, 36_500.0, open_low=True)
        check_number(f"{owner}.review_share", self.review_share, 0.0, 1.0, open_low=True)
        check_number(f"{owner}.review_confidence", self.review_confidence, 0.0, 1.0)
        check_number(f"{owner}.review_confidence_cap", self.review_confidence_cap, 0.0, 1.0)
        for name in ("review_min_runs", "review_max_runs"):
            value = getattr(self, name)
            check_int(f"{owner}.{name}", value)
        if self.merge_scope not in (None, "task_type", "namespace"):
            raise ConfigurationError(f"{owner}.merge_scope must be 'task_type', 'namespace' or None")


@dataclass(frozen=True, slots=True)
class DecayReport:
    """What :meth:`Lifecycle.decay` did."""

    namespace: str
    examined: int
    decayed: int
    """Units whose confidence was lowered."""
    periods: int
    """Idle periods charged in total (one unit idle 90 days counts 3)."""


@dataclass(frozen=True, slots=True)
class ArchiveReport:
    """What :meth:`Lifecycle.archive_stale` did."""

    namespace: str
    examined: int
    archived: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class MergeReport:
    """What :meth:`Lifecycle.merge_duplicates` did."""

    namespace: str
    examined: int
    merged: dict[str, list[str]] = field(default_factory=dict)
    """Keeper id → ids folded into it (and archived: ``Lifecycle.unmerge(keeper_id)`` brings them back)."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Keeper id → why its group folded, with the evidence and confidence before and after (also logged)."""

    @property
    def removed(self) -> int:
        """Units the merge took out of the active set (into the archive)."""
        return sum(len(v) for v in self.merged.values())


@dataclass(frozen=True, slots=True)
class ReviewReport:
    """What :meth:`Lifecycle.review` did."""

    namespace: str
    runs: int
    """Runs in the review window."""
    created: list[MemoryUnit] = field(default_factory=list)
    """Review units stored (as returned by the store: merged or superseding)."""
    used_model: bool = False
    skipped: str | None = None
    """Why nothing was reviewed (``"too few runs"``, ``"not due"``), else ``None``."""
    review_id: str | None = None
    """Journal id of this review (``kind="review"``)."""


@dataclass(frozen=True, slots=True)
class MaintenanceReport:
    """What :meth:`Lifecycle.maintain` did."""

    decay: DecayReport
    archive: ArchiveReport
    merge: MergeReport
    review: ReviewReport | None = None
