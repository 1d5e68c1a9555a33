"""Memory lifecycle: confidence decay, archiving, duplicate merge, periodic review, usage report.

Every full 30 days without access multiplies confidence by 0.9. Units below
0.3 confidence and idle over 60 days move to the cold (archive) collection;
duplicates merge into one (only the same statement, never merely similar
content; for rule-made lessons, the same statement once file names, paths and
ids are masked), their evidence adding up, the folded units archived so
:meth:`Lifecycle.unmerge` can bring them back. A periodic review distils cross-task patterns from the run journal,
and a usage report finds memories that are often recalled but never help.

Every operation takes an injectable ``now`` and a ``namespace``, and returns a
small typed report. All are safe to repeat: decay remembers how much idle time
it has already charged (``MemoryUnit.decayed_through``), a repeated merge finds
nothing new, a repeated review does not store a pattern twice.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np

from langchain_hindsight._checks import check_number, refuse_unknown_keywords
from langchain_hindsight.errors import ConfigurationError, MemoryNotFoundError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.lifecycle._merge import (
    KEPT_APART_TAG,
    active_with_vectors,
    archive_folded,
    duplicate_groups,
    fold,
    fold_reason,
    masked_only,
    priority,
    star_clusters,
    unfold,
)
from langchain_hindsight.lifecycle._review import run_review
from langchain_hindsight.lifecycle._usage import UsageReport, build_usage_report
from langchain_hindsight.lifecycle.policy import (
    ArchiveReport,
    DecayReport,
    LifecyclePolicy,
    MaintenanceReport,
    MergeReport,
    Progress,
    ReviewReport,
)
from langchain_hindsight.prompts import Locale, get_templates
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit, utcnow

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["Lifecycle"]

logger = logging.getLogger(__name__)

_WRITE_BATCH = 1000
_READ_BATCH = 5000


@refuse_unknown_keywords
class Lifecycle:
    """Decay, archive, merge and review the memories of a store.

    Example:
        .. code-block:: python

            from datetime import UTC, datetime
            from langchain_hindsight import Lifecycle, MemoryStore

            with MemoryStore("./memory_db") as store:
                report = Lifecycle(store).maintain(now=datetime.now(UTC))
                print(report.decay.decayed, report.archive.archived, report.merge.removed)

    Concurrency: each operation holds the store's lock for its read-modify-write,
    so it is safe against other threads of the process. Through a Chroma server,
    feedback written by *another process* while an operation runs can be lost
    for the units that operation rewrites; schedule maintenance off-peak.

    Args:
        store: The store to maintain.
        policy: The numbers (default: :class:`LifecyclePolicy`).
        model: A LangChain chat model for :meth:`review`; ``None`` uses rules.
        journal: The run journal :meth:`review` and :meth:`usage_report` read;
            default ``RunJournal(store)``.
        locale: Language of review units and prompt (``"zh"`` default, ``"en"``).
        progress: Optional callback ``(stage, done, total)`` for long operations.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        policy: LifecyclePolicy | None = None,
        model: BaseChatModel | None = None,
        journal: RunJournal | None = None,
        locale: Locale = "zh",
        progress: Progress | None = None,
    ) -> None:
        if policy is not None and not isinstance(policy, LifecyclePolicy):
            raise ConfigurationError(f"policy must be a LifecyclePolicy, got {type(policy).__name__}")
        get_templates(locale)  # validates
        self.store = store
        self.policy = policy or LifecyclePolicy()
        self.model = model
        if journal is None:
            journal = RunJournal(store)
        self.journal = journal
        self.locale: Locale = locale
        self.progress = progress

    def _report(self, stage: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)

    def _now(self, now: datetime | None) -> datetime:
        if now is not None and not isinstance(now, datetime):
            raise ConfigurationError(f"now must be a datetime, got {type(now).__name__}")
        when = now or utcnow()
        if when.tzinfo is None:
            raise ConfigurationError("now must be timezone-aware (e.g. datetime.now(UTC))")
        if not 1970 <= when.year <= 9000:
            raise ConfigurationError(f"now must be between the years 1970 and 9000, got {when.isoformat()}")
        return when

    def _write(self, stage: str, units: list[MemoryUnit], ns: str) -> None:
        for start in range(0, len(units), _WRITE_BATCH):
            self.store.update_many(units[start : start + _WRITE_BATCH], namespace=ns)
            self._report(stage, min(start + _WRITE_BATCH, len(units)), len(units))

    # ------------------------------------------------------------------ decay
    def decayed(self, unit: MemoryUnit, now: datetime) -> MemoryUnit | None:
        """``unit`` with the idle periods not yet charged applied, or ``None`` when there are none.

        The idle clock starts at the later of the last access and the previous
        decay marker, so repeating a decay (or running it daily) never charges
        the same period twice, and an access restarts the clock. The marker
        advances by whole periods only: a partial period is charged once it is full.

        Example:
            .. code-block:: python

                u = MemoryUnit(content="x", confidence=0.8, last_accessed_at=datetime(2026, 1, 1, tzinfo=UTC))
                Lifecycle(store).decayed(u, datetime(2026, 7, 1, tzinfo=UTC)).confidence  # 0.8 * 0.9**6 = 0.425
        """
        charged = self._charge(unit, now)
        return None if charged is None else charged[0]

    def _charge(self, unit: MemoryUnit, now: datetime) -> tuple[MemoryUnit, int] | None:
        p = self.policy
        period = timedelta(days=p.decay_period_days)
        start = unit.last_accessed_at
        if unit.decayed_through is not None and unit.decayed_through > start:
            start = unit.decayed_through
        periods = (now - start) // period if now > start else 0
        if periods <= 0:
            return None
        before = unit.score_confidence
        after = before if before <= p.decay_floor else max(p.decay_floor, before * p.decay_factor**periods)
        return unit.evolve(confidence=round(after, 6), decayed_through=start + periods * period), periods

    def decay(self, *, now: datetime | None = None, namespace: str | None = None) -> DecayReport:
        """Multiply the confidence of idle units by ``decay_factor`` per full idle period.

        Applies to active and superseded units (archived ones are cold).
        Idempotent: running it twice with the same ``now`` changes nothing the second time.
        """
        when = self._now(now)
        ns = self.store.namespace_or_default(namespace)
        with self.store.lock:
            units = [
                *self.store.iter_units(namespace=ns, status="active", batch_size=_READ_BATCH),
                *self.store.iter_units(namespace=ns, status="superseded", batch_size=_READ_BATCH),
            ]
            return self._apply_decay(units, when, ns)[0]

    def _apply_decay(self, units: list[MemoryUnit], when: datetime, ns: str) -> tuple[DecayReport, list[MemoryUnit]]:
        """Decay ``units`` (already read) and write the changed ones; also return them."""
        periods = 0
        changed: list[MemoryUnit] = []
        for unit in units:
            charged = self._charge(unit, when)
            if charged is not None:
                changed.append(charged[0])
                periods += charged[1]
        self._write("decay", changed, ns)
        logger.info("decay in %r: %d of %d units lowered", ns, len(changed), len(units))
        return DecayReport(namespace=ns, examined=len(units), decayed=len(changed), periods=periods), changed

    # ------------------------------------------------------------------ archive
    def archive_stale(self, *, now: datetime | None = None, namespace: str | None = None) -> ArchiveReport:
        """Move active units below ``archive_below`` idle for over ``archive_idle_days`` to cold storage.

        Archived units are excluded from recall and kept whole; ``store.restore(ids)`` brings them back.
        """
        when = self._now(now)
        ns = self.store.namespace_or_default(namespace)
        with self.store.lock:
            active = list(self.store.iter_units(namespace=ns, status="active", batch_size=_READ_BATCH))
            return self._apply_archive(active, when, ns)

    def _apply_archive(self, active: list[MemoryUnit], when: datetime, ns: str) -> ArchiveReport:
        p = self.policy
        cutoff = when - timedelta(days=p.archive_idle_days)
        stale = [u.memory_id for u in active if u.score_confidence < p.archive_below and u.last_accessed_at < cutoff]
        for start in range(0, len(stale), _WRITE_BATCH):
            self.store.archive(stale[start : start + _WRITE_BATCH], namespace=ns)
            self._report("archive", min(start + _WRITE_BATCH, len(stale)), len(stale))
        logger.info("archive in %r: %d of %d active units archived", ns, len(stale), len(active))
        return ArchiveReport(namespace=ns, examined=len(active), archived=stale)

    # ------------------------------------------------------------------ merge
    def merge_duplicates(self, *, namespace: str | None = None) -> MergeReport:
        """Fold active units that make the same statement (and are at least ``merge_threshold`` similar) into one.

        Each group keeps its most trusted, then most confident unit (ties: more
        accesses, older, smaller id) with the highest confidence grown by the
        evidence folded in (see :func:`~langchain_hindsight.confidence.corroborated`),
        ``evidence`` added up, the summed access counts, the union of tags, the
        newest creation and access times and the most trusted source;
        ``merged_from`` records the folded ids, which are archived whole (not
        served; :meth:`unmerge` brings them back). A unit is only folded into a
        keeper it is itself similar to (no chaining through intermediaries). Exact:
        all pairs among units with the same statement within each task type (or
        the whole namespace, see ``merge_scope``) in blocked matrix products over
        the stored vectors (nothing is re-embedded).

        Rule-made lessons that differ only in run-specific parts (the file name of
        the task they were learned on, an id, a date, a position in the input, an
        ordinal naming the run's object such as ``第3周`` / ``week 3``) are one
        statement (:func:`~langchain_hindsight._statements.lesson_key`): they
        fold whatever their similarity, and the keeper's text is masked the same way.
        A person's facts never fold on a masked key (``10 per day`` ≠ ``500 per day``).
        Each fold is logged at INFO with its reason (also in ``MergeReport.reasons``).
        """
        ns = self.store.namespace_or_default(namespace)
        with self.store.lock:
            units, vectors = active_with_vectors(self.store, ns, self.progress)
            return self._apply_merge(units, vectors, ns)

    def _apply_merge(self, units: list[MemoryUnit], vectors: np.ndarray, ns: str) -> MergeReport:
        scope = self.policy.merge_scope or getattr(self.store, "conflict_scope", "task_type")
        merged: dict[str, list[str]] = {}
        reasons: dict[str, str] = {}
        keepers: list[MemoryUnit] = []
        done = 0
        for idx in duplicate_groups(units, by_task_type=scope == "task_type"):  # same statement only
            members = [units[i] for i in idx]
            masked = masked_only(members)
            if masked:  # the mask is the test: their vectors differ by the file names it removed
                ranked = sorted(members, key=priority)
                clusters = [(ranked[0], ranked[1:])]
            else:
                clusters = star_clusters(members, vectors[np.asarray(idx)], self.policy.merge_threshold)
            for keeper, folded in clusters:
                after = fold(keeper, folded, self.store.policy)
                merged[keeper.memory_id] = [u.memory_id for u in folded]
                reasons[keeper.memory_id] = fold_reason(keeper, after, folded, masked=masked)
                keepers.append(after)
                logger.info(
                    "merge in %r: %s folded into %s: %s",
                    ns,
                    ", ".join(merged[keeper.memory_id]),
                    keeper.memory_id,
                    reasons[keeper.memory_id],
                )
            done += len(idx)
            self._report("merge", done, len(units))
        self._report("merge", len(units), len(units))
        if keepers:
            self._write("merge write", keepers, ns)
            archive_folded(self.store, ns, [i for ids in merged.values() for i in ids])
        logger.info("merge in %r: %d units folded into %d", ns, sum(map(len, merged.values())), len(merged))
        return MergeReport(namespace=ns, examined=len(units), merged=merged, reasons=reasons)

    def merge_pair(
        self, first: str, second: str, *, namespace: str | None = None, reason: str
    ) -> tuple[MemoryUnit, MemoryUnit, str]:
        """Fold one of two active memories into the other, as the merge pass would (a reviewer's merge).

        The keeper is the one the pass would keep (its priority); the other is archived,
        its evidence and accesses added to the keeper. Undo with :meth:`unmerge` on the
        keeper. Logged at INFO with ``reason``.

        Returns:
            ``(keeper as now stored, the folded unit as it was, the full reason)``.

        Raises:
            ConfigurationError: the two ids are the same.
            MemoryNotFoundError: either is not an active memory of the namespace.
        """
        if first == second:
            raise ConfigurationError("a memory cannot be merged with itself")
        ns = self.store.namespace_or_default(namespace)
        with self.store.lock:
            pair = [self.store.get(i, namespace=ns) for i in (first, second)]
            for unit in pair:
                if unit.status != "active":
                    raise MemoryNotFoundError(f"{unit.memory_id} is {unit.status}, not an active memory of {ns!r}")
            keeper, other = sorted(pair, key=priority)
            after = fold(keeper, [other], self.store.policy)
            full = f"{reason}; " + fold_reason(keeper, after, [other], masked=False).split(": ", 1)[1]
            self.store.update_many([after], namespace=ns)
            archive_folded(self.store, ns, [other.memory_id])
        logger.info("merge in %r: %s folded into %s: %s", ns, other.memory_id, keeper.memory_id, full)
        return after, other, full

    def unmerge(self, memory_id: str, *, namespace: str | None = None) -> list[MemoryUnit]:
        """Undo the merge pass's folds into ``memory_id``: the folded units come back active, as they were.

        The units the pass archived into ``memory_id`` (its ``merged_from``, those
        still in the archive) are restored and tagged ``kept-apart`` (later passes
        leave them apart); the keeper gives back their evidence and accesses, their
        ids leave its ``merged_from`` and the confidence step their evidence gave
        is reversed. A duplicate merged on *write* was never stored on its own and
        has nothing to restore. Logged at INFO.

        Returns:
            The restored units (empty when nothing was folded into ``memory_id``).

        Raises:
            MemoryNotFoundError: ``memory_id`` does not exist.
        """
        ns = self.store.namespace_or_default(namespace)
        with self.store.lock:
            keeper = self.store.get(memory_id, namespace=ns)
            folded = [u for u in self.store.get_many(keeper.merged_from, namespace=ns) if u.status == "archived"]
            if not folded:
                return []
            restored = self.store.restore([u.memory_id for u in folded], namespace=ns)
            apart = [u.evolve(tags=[*u.tags, KEPT_APART_TAG]) for u in restored]
            after = unfold(keeper, folded)
            self.store.update_many([after, *apart], namespace=ns)
        logger.info(
            "unmerge in %r: %s restored from %s (evidence %d → %d, confidence %.2f → %.2f)",
            ns,
            ", ".join(u.memory_id for u in apart),
            memory_id,
            keeper.evidence,
            after.evidence,
            keeper.score_confidence,
            after.score_confidence,
        )
        return apart

    # ------------------------------------------------------------------ review
    def review(
        self,
        *,
        window_days: float | None = None,
        now: datetime | None = None,
        namespace: str | None = None,
    ) -> ReviewReport:
        """Distil cross-task patterns from the runs of the last ``window_days`` into ``source="review"`` units.

        With a model: one LLM call per review (at most ``review_max_runs`` runs
        in the prompt). Without: rules — a tag or tool shared by at least
        ``review_share`` of one task type's runs (e.g. "4 of the last 5
        data_cleaning tasks involved missing values"), and task types that
        failed at least half the time. The review is journalled (``kind="review"``).

        Raises:
            ReflectionError: the model call failed or its answer was not valid JSON.
        """
        when = self._now(now)
        days = self.policy.review_window_days if window_days is None else window_days
        check_number("review.window_days", days, 0.0, 36_500.0, open_low=True)
        return run_review(
            self.store,
            self.journal,
            self.model,
            self.policy,
            self.locale,
            window_days=float(days),
            now=when,
            namespace=self.store.namespace_or_default(namespace),
        )

    def review_if_due(
        self, *, every_days: float = 7.0, now: datetime | None = None, namespace: str | None = None
    ) -> ReviewReport:
        """Run :meth:`review` over the last ``every_days`` unless a review ran less than ``every_days`` ago.

        Call it from any scheduler (cron with ``hindsight review --if-due``, a
        LangGraph cron job, APScheduler); the journal remembers the last review.
        """
        when = self._now(now)
        check_number("review_if_due.every_days", every_days, 0.0, 36_500.0, open_low=True)
        ns = self.store.namespace_or_default(namespace)
        last = self.journal.last_started_at(namespace=ns, kind="review")
        if last is not None and when - last < timedelta(days=every_days):
            return ReviewReport(namespace=ns, runs=0, skipped="not due")
        return self.review(window_days=every_days, now=when, namespace=ns)

    # ------------------------------------------------------------------ all at once
    def maintain(
        self, *, now: datetime | None = None, namespace: str | None = None, review: bool = False
    ) -> MaintenanceReport:
        """Decay, then archive, then merge (and review when asked). Safe to run as often as you like.

        Reads the namespace once (units and vectors) and feeds each step the
        result of the previous one, so it costs about one full scan plus the writes.
        """
        when = self._now(now)
        ns = self.store.namespace_or_default(namespace)
        with self.store.lock:
            active, vectors = active_with_vectors(self.store, ns, self.progress)
            superseded = list(self.store.iter_units(namespace=ns, status="superseded", batch_size=_READ_BATCH))
            decay, changed = self._apply_decay([*active, *superseded], when, ns)
            latest = {u.memory_id: u for u in changed}
            active = [latest.get(u.memory_id, u) for u in active]
            archive = self._apply_archive(active, when, ns)
            gone = set(archive.archived)
            keep = [i for i, u in enumerate(active) if u.memory_id not in gone]
            merge = self._apply_merge([active[i] for i in keep], vectors[keep] if keep else vectors[:0], ns)
        reviewed = self.review(now=when, namespace=ns) if review else None
        return MaintenanceReport(decay=decay, archive=archive, merge=merge, review=reviewed)

    # ------------------------------------------------------------------ usage report
    def usage_report(
        self,
        *,
        namespace: str | None = None,
        since: datetime | None = None,
        now: datetime | None = None,
        min_shown: int = 3,
        low_similarity: float = 0.6,
    ) -> UsageReport:
        """Which memories help, from the journal of runs in ``[since, now)``.

        Finds memories often recalled (at least ``min_shown`` times) but never
        followed by a successful run, recalls below ``low_similarity``,
        supersede chains, and counts per task type. See :class:`UsageReport`.
        """
        if since is not None and (not isinstance(since, datetime) or since.tzinfo is None):
            raise ConfigurationError(f"since must be a timezone-aware datetime, got {since!r}")
        return build_usage_report(
            self.store,
            self.journal,
            namespace=self.store.namespace_or_default(namespace),
            since=since,
            until=self._now(now),
            min_shown=min_shown,
            low_similarity=low_similarity,
        )
