"""What the console's pages show, read through the library's own API (no page reaches into storage).

:class:`Console` holds the open store, the identity the console acts as and a
cache of each namespace's listing (its own actions update the units they touched;
on a store other processes may write — a Chroma server — a listing is re-read after
``LISTING_SECONDS``). Every read checks the
identity's read grant; :meth:`Console.writable` says whether actions are shown.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from langchain_hindsight._statements import lesson_key
from langchain_hindsight.errors import AccessDeniedError, MemoryNotFoundError
from langchain_hindsight.hindsight import Hindsight
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.lifecycle import MemoryUsage, active_with_vectors
from langchain_hindsight.lifecycle.maintenance import Lifecycle
from langchain_hindsight.recall.engine import RecallSettings, recall
from langchain_hindsight.recall.explain import RunExplanation, explain_run
from langchain_hindsight.recall.ranking import served_mask
from langchain_hindsight.runs import RunFeedback, RunRecord
from langchain_hindsight.sharing.principals import Principal
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit, ScoredMemory, utcnow

__all__ = [
    "LISTING_SECONDS",
    "USAGE_BARS",
    "Console",
    "Correction",
    "MemoryPage",
    "NearDuplicate",
    "ReviewItem",
    "SearchRow",
    "usage_bars",
]

logger = logging.getLogger(__name__)

LISTING_SECONDS = 30.0
"""On a store others may write (a Chroma server), a cached listing is re-read after this many seconds."""

FACTOR_ORDER = ("similarity", "task_type", "confidence", "recency", "access", "source", "dense", "lexical")
"""Score factors in the order the search shows them (``floor_margin`` has its own column)."""

LOW_CONFIDENCE = 0.4
"""Active memories below this confidence are in the review queue."""

NEAR_DUPLICATE = 0.9
"""Cosine at or above which two active memories that say different things are merge candidates."""

USAGE_BARS: tuple[tuple[str, ...], ...] = (("successes", "unknown", "failures"), ("used", "set_aside"))
"""The bars of a memory's usage, each a stack of :class:`MemoryUsage` count fields, scaled to ``shown``.

The first: how the runs it was served in ended. The second: whether the agent used it or set it aside
(the credit work's signals); a field :class:`MemoryUsage` does not have is left out, so the bar appears
when the fields do."""

SCORE_TERMS = ("similarity", "task_type", "confidence", "access", "source")
"""The additive terms of a score (``recall.scoring.TERMS``): the stacked bar's segments."""

_NEAR_DUPLICATE_SCAN = 2000
"""Near-duplicates are looked for among the most recent this many active memories of a namespace."""


@dataclass(frozen=True)
class SearchRow:
    """One recall result as the search shows it."""

    scored: ScoredMemory
    factors: list[tuple[str, float]]
    floor_margin: float | None
    served: bool

    @property
    def segments(self) -> list[tuple[str, float]]:
        """The score's additive terms times the time factor (they add up to the score), for the stacked bar."""
        return score_segments(self.scored.breakdown)


def score_segments(breakdown: dict[str, float]) -> list[tuple[str, float]]:
    """``(term, contribution)`` of each additive score term (× the time factor: the sum is the score)."""
    factor = float(breakdown.get("time_factor", 1.0))
    return [(name, max(0.0, float(breakdown[name]) * factor)) for name in SCORE_TERMS if name in breakdown]


def usage_bars(usage: Any) -> list[list[tuple[str, int]]]:
    """The :data:`USAGE_BARS` of one :class:`MemoryUsage` (or ``None``): ``[(field, count), …]`` per bar present.

    Example:
        >>> from types import SimpleNamespace
        >>> usage_bars(SimpleNamespace(successes=1, unknown=0, failures=2))
        [[('successes', 1), ('unknown', 0), ('failures', 2)]]
    """
    if usage is None:
        return []
    found = []
    for fields in USAGE_BARS:
        if all(hasattr(usage, f) for f in fields):
            found.append([(f, int(getattr(usage, f) or 0)) for f in fields])
    return found


@dataclass(frozen=True)
class ReviewItem:
    """One item of the review queue: why it is there, and what it is about."""

    kind: str
    """``never`` (served often, never a success), ``doubtful``, ``pair`` (near-duplicates) or ``correction``."""
    key: str
    """Stable id of the item (memory id, pair of ids, run id and feedback index)."""
    unit: MemoryUnit | None = None
    other: MemoryUnit | None = None
    usage: MemoryUsage | None = None
    similarity: float | None = None
    correction: Correction | None = None


@dataclass(frozen=True)
class MemoryPage:
    """One memory with its history, the runs it was served in and the feedback those runs received."""

    unit: MemoryUnit
    history: list[MemoryUnit]
    runs: list[tuple[RunRecord, int]]
    """Runs that were served it, newest first, with the rank it had."""
    feedback: list[tuple[RunRecord, RunFeedback]]
    """Feedback entries of those runs, and entries of any run whose effects name this memory."""
    superseded_predecessor: MemoryUnit | None
    """The version this one superseded, while it is still ``superseded`` (a revert brings it back)."""
    archived_merged: list[str]
    """Ids folded into this one that are still in the archive (an unmerge brings them back)."""


@dataclass(frozen=True)
class NearDuplicate:
    """Two active memories close in meaning that do not make the same statement."""

    a: MemoryUnit
    b: MemoryUnit
    similarity: float


@dataclass(frozen=True)
class Correction:
    """A feedback recognised in the conversation: the turn, the rule that fired, and what it did."""

    record: RunRecord
    index: int
    entry: RunFeedback


@dataclass
class _ReviewParts:
    """The costly side of the review queue: the usage report and the near-duplicate scan."""

    usage: list[MemoryUsage]
    pairs: list[NearDuplicate]
    corrections: list[Correction]
    at: float = field(default_factory=time.monotonic)


@dataclass
class _Listing:
    units: list[MemoryUnit]
    at: float = field(default_factory=time.monotonic)


class Console:
    """The console's view of one store, as the operator or as one principal.

    Args:
        store: The open store (the caller closes it).
        principal: Act as this agent identity (its grants decide what is read and written);
            ``None``: the operator, who sees and may change every namespace.
        namespace: The namespace pages open on (default: the principal's own, else the store's).
    """

    def __init__(self, store: MemoryStore, *, principal: Principal | None = None, namespace: str | None = None) -> None:
        self.store = store
        self.principal = principal
        self.default_namespace = namespace or (principal.namespace if principal else store.namespace)
        self.check_read(self.default_namespace)
        self.hindsight = Hindsight(store=store, principal=principal)
        self._listings: dict[str, _Listing] = {}
        self._review: dict[str, _ReviewParts] = {}
        self._queues: dict[str, list[ReviewItem]] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ access
    @property
    def read_only(self) -> bool:
        """No action at all: a principal without write grants."""
        return self.principal is not None and not self.principal.write

    def writable(self, namespace: str) -> bool:
        """Whether actions on ``namespace`` are allowed (and shown)."""
        if self.principal is None:
            return True
        return not self.read_only and self.principal.can_write(namespace)

    def check_read(self, namespace: str) -> None:
        """Raise :class:`AccessDeniedError` unless the identity may read ``namespace``."""
        if self.principal is not None:
            self.principal.check("read", namespace)

    def check_write(self, namespace: str) -> None:
        """Raise :class:`AccessDeniedError` unless actions on ``namespace`` are allowed."""
        if not self.writable(namespace):
            who = self.principal.name if self.principal else "operator"
            raise AccessDeniedError(f"{who!r} has no write grant on namespace {namespace!r} (a read-only console)")

    def namespaces(self) -> list[str]:
        """The namespaces this identity may read that the store holds (the default one always)."""
        present = self.store.namespaces()
        if self.principal is not None:
            present = [ns for ns in self.principal.readable if ns in present]
        return list(dict.fromkeys([self.default_namespace, *present]))

    def journal(self, namespace: str) -> RunJournal:
        """The run journal of ``namespace``."""
        return RunJournal(self.store, namespace=namespace)

    # ------------------------------------------------------------------ memories
    def units(self, namespace: str) -> list[MemoryUnit]:
        """Every memory of ``namespace`` (all statuses), newest first; cached until an action changes it."""
        self.check_read(namespace)
        with self._lock:
            cached = self._listings.get(namespace)
            expired = cached is not None and not self.store.backend.single_writer
            if cached is None or (expired and time.monotonic() - cached.at > LISTING_SECONDS):
                cached = _Listing(self.store.list_units(namespace=namespace))
                self._listings[namespace] = cached
            return cached.units

    def warm(self) -> threading.Thread:
        """Read the default namespace's listing and review queue in a background thread (the first page is quick)."""

        def run() -> None:
            try:
                self.units(self.default_namespace)
                self.queue(self.default_namespace)  # its size is in every page's navigation
            except Exception:  # the page that needs it reads it again and reports the error
                logger.warning("could not read the listing of %r ahead of time", self.default_namespace, exc_info=True)

        thread = threading.Thread(target=run, name="hindsight-ui-warm", daemon=True)
        thread.start()
        return thread

    def invalidate(self, namespace: str) -> None:
        """Forget the cached listing of ``namespace`` (the next page reads it again)."""
        with self._lock:
            self._listings.pop(namespace, None)
            self._review.pop(namespace, None)
            self._queues.pop(namespace, None)

    def forget_review(self, namespace: str) -> None:
        """Read the journal's side of the review queue again on the next page (after a feedback changed it)."""
        with self._lock:
            self._review.pop(namespace, None)
            self._queues.pop(namespace, None)

    def refresh(self, namespace: str, memory_ids: Iterable[str]) -> None:
        """Bring the cached listing up to date for ``memory_ids`` after a write (deleted ones dropped).

        Reads only those units, so the page after an action costs no full re-read.
        """
        ids = set(memory_ids)
        with self._lock:
            self._queues.pop(namespace, None)  # assembled again from the kept parts and the updated listing
            cached = self._listings.get(namespace)
            if cached is None or not ids:
                return
            fresh = {u.memory_id: u for u in self.store.get_many(sorted(ids), namespace=namespace)}
            kept = [fresh.pop(u.memory_id, u) for u in cached.units if u.memory_id not in ids or u.memory_id in fresh]
            units = [*kept, *fresh.values()]
            units.sort(key=lambda u: (u.created_at, u.memory_id), reverse=True)
            cached.units = units

    def listing(
        self,
        namespace: str,
        *,
        task_type: str = "",
        source: str = "",
        status: str = "",
        min_confidence: float | None = None,
        max_confidence: float | None = None,
        page: int = 1,
        per_page: int = 50,
    ) -> tuple[list[MemoryUnit], int]:
        """One page of the filtered listing and the number of matches."""
        units = self.units(namespace)
        wanted_type = self.store.vocabulary.resolve(task_type) if task_type else ""
        found = [
            u
            for u in units
            if (not wanted_type or u.task_type == wanted_type)
            and (not source or u.source == source)
            and (not status or u.status == status)
            and (min_confidence is None or u.score_confidence >= min_confidence)
            and (max_confidence is None or u.score_confidence <= max_confidence)
        ]
        start = (max(1, page) - 1) * per_page
        return found[start : start + per_page], len(found)

    def facets(self, namespace: str) -> dict[str, list[str]]:
        """The task types, sources and statuses present in ``namespace`` (for the filter menus)."""
        units = self.units(namespace)
        return {
            "task_type": sorted({u.task_type for u in units}),
            "source": sorted({u.source for u in units}),
            "status": sorted({u.status for u in units}),
        }

    def search(
        self, namespace: str, query: str, *, k: int = 10, task_type: str | None = None
    ) -> tuple[list[SearchRow], str | None, str | None]:
        """The real recall for ``query`` with no floor applied, each result marked served or not.

        Returns:
            The rows, the task type scored against and how it was chosen.
        """
        self.check_read(namespace)
        result = recall(self.store, RecallSettings(k=k, min_relevance=None), query, task_type=task_type,
                        namespace=namespace).result  # fmt: skip
        rows = []
        served = served_mask(result.memories, RecallSettings().min_relevance)  # the default's one home
        for m, shown in zip(result.memories, served, strict=True):
            factors = [(name, float(m.breakdown[name])) for name in FACTOR_ORDER if name in m.breakdown]
            factors += [
                (name, float(v))
                for name, v in m.breakdown.items()
                if name not in FACTOR_ORDER and name != "floor_margin"
            ]
            margin = m.breakdown.get("floor_margin")
            rows.append(SearchRow(m, factors, margin, shown))
        return rows, result.task_type, result.task_type_source

    def memory(self, namespace: str, memory_id: str) -> MemoryPage:
        """Everything the memory page shows.

        Raises:
            MemoryNotFoundError: no such memory in ``namespace``.
        """
        self.check_read(namespace)
        unit = self.store.get(memory_id, namespace=namespace)
        history = self.store.history(memory_id, namespace=namespace)
        runs: list[tuple[RunRecord, int]] = []
        feedback: list[tuple[RunRecord, RunFeedback]] = []
        for record in self.journal(namespace).iter_runs(namespace=namespace, kind=None):
            rank = next((s.rank for s in record.served if s.memory_id == memory_id), None)
            if rank is not None:
                runs.append((record, rank))
            for entry in record.feedback:
                named = any(e.memory_id == memory_id for e in entry.effects or [])
                if rank is not None or named:
                    feedback.append((record, entry))
        runs.sort(key=lambda r: r[0].started_at, reverse=True)
        feedback.sort(key=lambda f: f[1].at, reverse=True)
        predecessor = None
        if unit.supersedes:
            try:
                before = self.store.get(unit.supersedes, namespace=namespace)
            except MemoryNotFoundError:
                before = None
            predecessor = before if before is not None and before.status == "superseded" else None
        merged = [u.memory_id for u in self.store.get_many(unit.merged_from, namespace=namespace)
                  if u.status == "archived"] if unit.merged_from else []  # fmt: skip
        return MemoryPage(unit, history, runs, feedback, predecessor, merged)

    def forget_preview(self, namespace: str, memory_id: str) -> tuple[MemoryUnit, int, list[str]]:
        """What forgetting ``memory_id`` erases: the unit, how many run records name it, units that refer to it."""
        page = self.memory(namespace, memory_id)
        referring = [
            u.memory_id
            for u in self.units(namespace)
            if u.memory_id != memory_id and (u.supersedes == memory_id or memory_id in u.merged_from)
        ]
        named = {r.run_id for r, _ in page.runs} | {r.run_id for r, _ in page.feedback}
        named |= {r.run_id for r in self.journal(namespace).iter_runs(namespace=namespace, kind=None)
                  if memory_id in r.produced}  # fmt: skip
        return page.unit, len(named), referring

    def confidence_history(self, page: MemoryPage) -> list[tuple[datetime, float]]:
        """The memory's confidence over time, from the journal: at creation, after each journaled change, now.

        Each feedback effect on this memory records its confidence before and after;
        the creation point is the first effect's "before" (or the current value when
        nothing changed it).
        """
        unit = page.unit
        changes = sorted(
            (entry.at, e)
            for _, entry in page.feedback
            for e in entry.effects or []
            if e.memory_id == unit.memory_id and e.after is not None and e.after.confidence is not None
        )
        first = next((e.before.confidence for _, e in changes if e.before is not None), None)
        points = [(unit.created_at, float(first if first is not None else unit.score_confidence))]
        points += [(at, float(e.after.confidence)) for at, e in changes if e.after and e.after.confidence is not None]
        if abs(points[-1][1] - unit.score_confidence) > 1e-9 or len(points) == 1:
            points.append((utcnow(), unit.score_confidence))
        return points

    def usage_of(self, namespace: str, memory_id: str) -> MemoryUsage | None:
        """How often ``memory_id`` was served and how those runs ended (``None``: never served)."""
        return next((m for m in self._parts(namespace).usage if m.memory_id == memory_id), None)

    def _parts(self, namespace: str) -> _ReviewParts:
        """The usage report, near-duplicate pairs and corrections of ``namespace``, computed once.

        Kept across the console's own actions (the queue checks each item against the
        listing they keep up to date); read again after ``LISTING_SECONDS`` on a store
        others may write, and after a feedback is undone (:meth:`forget_review`).
        """
        self.check_read(namespace)
        with self._lock:
            cached = self._review.get(namespace)
        stale = cached is not None and not self.store.backend.single_writer
        if cached is None or (stale and time.monotonic() - cached.at > LISTING_SECONDS):
            report = Lifecycle(self.store).usage_report(namespace=namespace, min_shown=1)
            cached = _ReviewParts(report.memories, self.near_duplicates(namespace), self.corrections(namespace))
            with self._lock:
                self._review[namespace] = cached
        return cached

    def queue(self, namespace: str) -> list[ReviewItem]:
        """The review queue as one list; an item the console's own action handled is gone at once.

        Each item once: never-successful active memories, doubtful ones (low confidence or
        suspicious), near-duplicate pairs both still active, and corrections detected in
        chat whose verdict is still in force (an undone one has been handled).
        """
        parts = self._parts(namespace)
        with self._lock:
            assembled = self._queues.get(namespace)
        if assembled is not None and self._review.get(namespace) is parts:
            return assembled
        units = {u.memory_id: u for u in self.units(namespace)}
        active = {mid for mid, u in units.items() if u.status == "active"}
        items: list[ReviewItem] = []
        seen: set[str] = set()
        for m in self.never_successful(namespace):
            if m.memory_id in active:
                items.append(ReviewItem("never", m.memory_id, unit=units[m.memory_id], usage=m))
                seen.add(m.memory_id)
        for unit in self.doubtful(namespace):
            if unit.memory_id not in seen:
                items.append(ReviewItem("doubtful", unit.memory_id, unit=unit))
                seen.add(unit.memory_id)
        for pair in parts.pairs:
            a, b = pair.a.memory_id, pair.b.memory_id
            if a in active and b in active:
                items.append(ReviewItem("pair", f"{a}+{b}", unit=units[a], other=units[b], similarity=pair.similarity))
        for c in parts.corrections:
            if c.entry.undone_at is None and self.undoable(c.record) == c.index:
                items.append(ReviewItem("correction", f"{c.record.run_id}#{c.index}", correction=c))
        with self._lock:
            self._queues[namespace] = items
        return items

    # ------------------------------------------------------------------ runs
    def runs(self, namespace: str, *, limit: int = 100) -> list[RunRecord]:
        """The newest runs and reviews of ``namespace``."""
        self.check_read(namespace)
        return self.journal(namespace).list_runs(namespace=namespace, kind=None, limit=limit)

    def explain(self, namespace: str, run_id: str) -> RunExplanation:
        """:func:`~langchain_hindsight.recall.explain.explain_run` for the run page.

        Raises:
            RunNotFoundError: no such run in ``namespace``.
        """
        self.check_read(namespace)
        return explain_run(self.journal(namespace), run_id, namespace=namespace)

    @staticmethod
    def undoable(record: RunRecord) -> int | None:
        """Index of the newest verdict still in force (what ``undo_feedback`` would revert), or ``None``."""
        for i in range(len(record.feedback) - 1, -1, -1):
            entry = record.feedback[i]
            if entry.kind == "verdict" and entry.undone_at is None:
                return i
        return None

    # ------------------------------------------------------------------ review queue
    def never_successful(self, namespace: str, *, min_shown: int = 3) -> list[MemoryUsage]:
        """Memories served at least ``min_shown`` times and never followed by a successful run.

        The usage report's own rule (``shown >= min_shown`` and no success), on the cached report.
        """
        return [m for m in self.usage(namespace) if m.shown >= min_shown and m.successes == 0]

    def usage(self, namespace: str) -> list[MemoryUsage]:
        """Every served memory with its outcomes, most shown first (the usage report, cached: see ``_parts``)."""
        return self._parts(namespace).usage

    def doubtful(self, namespace: str, *, limit: int = 50) -> list[MemoryUnit]:
        """Active memories below :data:`LOW_CONFIDENCE` or tagged ``suspicious``, least confident first."""
        found = [
            u
            for u in self.units(namespace)
            if u.status == "active" and (u.score_confidence < LOW_CONFIDENCE or "suspicious" in u.tags)
        ]
        return sorted(found, key=lambda u: u.score_confidence)[:limit]

    def near_duplicates(self, namespace: str, *, limit: int = 30) -> list[NearDuplicate]:
        """Pairs of active memories at cosine ≥ :data:`NEAR_DUPLICATE` that are different statements.

        The merge pass folds only the same statement; these are for a person to judge.
        Only the most recent ``_NEAR_DUPLICATE_SCAN`` active memories are compared.
        """
        self.check_read(namespace)
        units, vectors = active_with_vectors(self.store, namespace)
        if len(units) < 2:
            return []
        order = sorted(range(len(units)), key=lambda i: units[i].created_at, reverse=True)[:_NEAR_DUPLICATE_SCAN]
        units = [units[i] for i in order]
        vectors = vectors[np.asarray(order)]
        sims = vectors @ vectors.T
        np.fill_diagonal(sims, -1.0)
        rows, cols = np.nonzero(np.triu(sims >= NEAR_DUPLICATE, k=1))
        pairs = sorted(zip(rows.tolist(), cols.tolist(), strict=True), key=lambda rc: -float(sims[rc]))
        found = []
        for i, j in pairs:
            if lesson_key(units[i]) == lesson_key(units[j]):
                continue  # the merge pass folds those itself (run-specific values such as 第N周 masked)
            found.append(NearDuplicate(units[i], units[j], float(sims[i, j])))
            if len(found) >= limit:
                break
        return found

    def corrections(self, namespace: str, *, limit: int = 30) -> list[Correction]:
        """Feedback recognised in the conversation (``RunFeedback.rule`` set), newest first."""
        self.check_read(namespace)
        found = [
            Correction(record, i, entry)
            for record in self.journal(namespace).iter_runs(namespace=namespace)
            for i, entry in enumerate(record.feedback)
            if entry.kind == "verdict" and entry.rule
        ]
        return sorted(found, key=lambda c: c.entry.at, reverse=True)[:limit]

    # ------------------------------------------------------------------ plots
    def confidences(self, namespace: str) -> list[float]:
        """Confidence of every active memory."""
        return [u.score_confidence for u in self.units(namespace) if u.status == "active"]

    def timeline(self, namespace: str, *, days: int = 30) -> tuple[list[str], list[int], list[int]]:
        """Per day of the last ``days`` with runs: memories served, and successful runs (as the user judged them)."""
        self.check_read(namespace)
        since = utcnow() - timedelta(days=days)
        serves: Counter[str] = Counter()
        wins: Counter[str] = Counter()
        for record in self.journal(namespace).iter_runs(namespace=namespace, since=since):
            day = record.started_at.date().isoformat()
            serves[day] += len(record.served)
            wins[day] += record.judged_outcome == "success"
        labels = sorted(set(serves) | set(wins))
        return labels, [serves[d] for d in labels], [wins[d] for d in labels]

    @staticmethod
    def success_rates(usage: list[MemoryUsage], *, top: int = 15) -> list[tuple[str, float, str]]:
        """``(memory id, success rate, "s/n")`` of the ``top`` memories served most."""
        rows = []
        for m in usage[:top]:
            rate = m.successes / m.shown if m.shown else 0.0
            rows.append((m.memory_id, rate if math.isfinite(rate) else 0.0, f"{m.successes}/{m.shown}"))
        return rows

    def close(self) -> None:
        """Release the bundle (the store stays open: the caller owns it)."""
        self.hindsight.close()

    def describe(self) -> dict[str, Any]:
        """Who the console acts as (for the page header)."""
        p = self.principal
        return {"principal": p.name if p else None, "read_only": self.read_only}
