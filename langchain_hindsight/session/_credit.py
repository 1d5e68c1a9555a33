"""What a run's outcome and a user's verdict do to its memories, and what reflection produced from it.

Store-and-journal steps of :class:`~langchain_hindsight.session.loop.HindsightSession`
(the session adds the error policy). A success credits the served memories once
and the journal records the exact confidence change, so a later rejection takes
back exactly that credit (see :mod:`~langchain_hindsight.session._verdict`); a
failure lowers them. The credit is
bounded (:func:`credit`): each earlier credit a memory got for the same task within
the policy's ``repeat_window`` — counted from the journal's ``credit`` records —
diminishes it by ``repeat_factor``. The units reflection stores from a run (at once
or in the background) are journaled as its ``produced``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from langchain_hindsight._trust import USER_SOURCES
from langchain_hindsight.capture import OUTCOME_REASON_KEY
from langchain_hindsight.errors import RunNotFoundError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.reflection.background import BackgroundReflector
from langchain_hindsight.runs import MemoryUse, RunRecord
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit, ScoredMemory, Served, Trajectory

__all__ = [
    "apply_outcome",
    "credit",
    "earlier_credits",
    "journal_produced",
    "run_record",
    "served_from_items",
    "start_run",
    "submit_background",
    "undo_change",
    "undo_credit",
]

logger = logging.getLogger(__name__)


def start_run(journal: RunJournal, served: Served) -> RunRecord:
    """Journal the start of a served run: its task, task type, thread and what it was served."""
    return journal.start(
        served.run_id,
        task=served.task,
        task_type=served.task_type,
        namespace=served.namespace,
        served=served.memories,
        withheld=served.withheld,
        thread_id=served.thread_id,
    )


def run_record(journal: RunJournal, served: Served) -> RunRecord:
    """The run's journal record, started now when no adapter started it."""
    try:
        return journal.get(served.run_id, namespace=served.namespace)
    except RunNotFoundError:
        return start_run(journal, served)


def earlier_credits(store: MemoryStore, journal: RunJournal, record: RunRecord, ids: list[str]) -> dict[str, int]:
    """How many other runs of the same task credited each of ``ids`` within the policy's ``repeat_window``.

    Derived from the journal, nothing stored on the units: a run counts when it
    started within ``repeat_window`` of ``record`` (either side), its task has the
    same ``ConfidencePolicy.task_key``, and its recorded
    ``credit`` (what it currently adds) holds the memory with a positive change. An
    undone credit (a rejected run) no longer counts.
    """
    policy = store.policy
    window = policy.repeat_window
    if not ids or not window:
        return {}
    key, wanted = policy.task_key(record.task), set(ids)
    counts: dict[str, int] = {}
    for run in journal.iter_runs(
        namespace=record.namespace, since=record.started_at - window, until=record.started_at + window
    ):
        if run.run_id == record.run_id or not run.credit or policy.task_key(run.task) != key:
            continue
        for mid, change in run.credit.items():
            if mid in wanted and change > 0:
                counts[mid] = counts.get(mid, 0) + 1
    return counts


def credit(
    store: MemoryStore,
    ids: list[str],
    namespace: str,
    *,
    journal: RunJournal | None = None,
    record: RunRecord | None = None,
) -> tuple[list[MemoryUnit], dict[str, float]]:
    """Apply success credit to ``ids``; returns the updated units and the confidence change of each.

    With the run's ``journal`` and ``record`` the credit is bounded: each earlier
    credit for the same task within the policy's ``repeat_window``
    (:func:`earlier_credits`) multiplies it by ``repeat_factor``, and the log names the run.
    Without them every credit is the full ``success_delta`` (a bare store call).
    """
    repeats: dict[str, int] = {}
    if journal is not None and record is not None:
        repeats = earlier_credits(store, journal, record, ids)
        if record.debit:  # an explicit success verdict on a run the rules took as a failure
            undo_change(store, record.debit, namespace, why=f"failure of run {record.run_id} overruled")
            journal.set_debit(record.run_id, None, namespace=record.namespace)
    reason = f"success of run {record.run_id}" if record is not None else "success"
    before = {u.memory_id: u.score_confidence for u in store.get_many(ids, namespace=namespace)}
    updated = store.record_feedback(ids, success=True, namespace=namespace, repeats=repeats, reason=reason)
    return updated, {u.memory_id: u.score_confidence - before.get(u.memory_id, u.score_confidence) for u in updated}


def undo_credit(store: MemoryStore, given: Mapping[str, float], namespace: str) -> None:
    """Take back exactly the confidence a success credit added."""
    undo_change(store, given, namespace, why="credit taken back")


def undo_change(store: MemoryStore, given: Mapping[str, float], namespace: str, *, why: str) -> None:
    """Take back exactly the confidence change ``given`` (a credit, or a debit), logged with ``why``."""
    units = store.get_many(list(given), namespace=namespace)
    changed = [
        u.evolve(confidence=min(1.0, max(0.0, u.score_confidence - given[u.memory_id])))
        for u in units
        if given.get(u.memory_id)
    ]
    if changed:
        store.update_many(changed, namespace=namespace)
        old = {u.memory_id: u.score_confidence for u in units}
        for u in changed:
            logger.info(
                "confidence of %s in %r: %.4f → %.4f (%s)",
                u.memory_id,
                namespace,
                old[u.memory_id],
                u.score_confidence,
                why,
            )


def apply_outcome(
    store: MemoryStore,
    journal: RunJournal,
    record: RunRecord,
    trajectory: Trajectory,
    *,
    ids: list[str],
    to_memories: bool,
    uses: Sequence[MemoryUse] | None = None,
) -> None:
    """Apply the run's outcome to the served memories the run *used* (credit once), and journal its end.

    Exposure is not use: only the memories ``uses`` marks ``used`` (the agent followed
    them, or said it applied them) are credited by a success or debited by a failure;
    a memory the agent set aside, or one with no sign of use, keeps its confidence (its
    access is still recorded). A failure never debits a person's own words (sources
    ``user_feedback`` and ``manual``): an unexplained failure never outweighs them.
    ``uses`` is journaled as the run's retrieval feedback (``RunRecord.uses``).

    Args:
        store: The memory store.
        journal: The run journal holding ``record``.
        record: The run's journal record.
        trajectory: The finished run.
        ids: The served memories the outcome may apply to (``record.served_ids``, or a subset of them).
        to_memories: ``False`` only journals the end (``SessionConfig.apply_outcome``).
        uses: What the agent did with each served memory (:func:`~langchain_hindsight.session._use.judge_uses`);
            ``None``: not judged, so nothing counts as used.
    """
    ns = record.namespace
    given: dict[str, float] | None = None
    taken: dict[str, float] | None = None
    used = {u.memory_id for u in uses or [] if u.verdict == "used"}
    chosen = [i for i in ids if i in used]
    if to_memories and ids:
        if trajectory.outcome == "failure" and chosen:
            own = {u.memory_id for u in store.get_many(chosen, namespace=ns) if u.source in USER_SOURCES}
            for mid in own:
                logger.info(
                    "run %s failed: %s is a person's own words, not debited by an unexplained failure",
                    record.run_id,
                    mid,
                )
            chosen = [i for i in chosen if i not in own]
        rest = [i for i in ids if i not in chosen]
        if chosen and trajectory.outcome == "success":
            if record.credit is None:
                given = credit(store, chosen, ns, journal=journal, record=record)[1]
        elif chosen and trajectory.outcome == "failure":
            why = trajectory.metadata.get(OUTCOME_REASON_KEY) or trajectory.error or "the run failed"
            if record.debit is None:
                before = {u.memory_id: u.score_confidence for u in store.get_many(chosen, namespace=ns)}
                after = store.record_feedback(
                    chosen, success=False, namespace=ns, reason=f"failure of run {record.run_id}: {why}"
                )
                taken = {u.memory_id: u.score_confidence - before[u.memory_id] for u in after if u.memory_id in before}
        else:
            rest = ids
        if rest:
            store.record_feedback(rest, success=None, namespace=ns)  # shown, not used: only the access counts
            if trajectory.outcome in ("success", "failure"):
                logger.info(
                    "run %s (%s): %d served memories not credited or debited (not used by the agent: %s)",
                    record.run_id,
                    trajectory.outcome,
                    len(rest),
                    ", ".join(rest),
                )
    for use in uses or []:
        if use.verdict == "set_aside":
            logger.info(
                "run %s: memory %s set aside by the agent, neither credited nor debited (%s)",
                record.run_id,
                use.memory_id,
                use.evidence,
            )
    journal.finish(trajectory.run_id, outcome=trajectory.outcome, task_type=trajectory.task_type, namespace=ns)
    if uses is not None:
        journal.set_uses(trajectory.run_id, uses, namespace=ns)
    if given is not None:
        journal.set_credit(trajectory.run_id, given, namespace=ns)
    if taken:
        journal.set_debit(trajectory.run_id, taken, namespace=ns)


def served_from_items(store: MemoryStore, items: list[Mapping[str, Any]], namespace: str) -> list[ScoredMemory]:
    """What a retriever served inside a captured run (``TrajectoryRecorder`` metadata), as recall results.

    Each keeps the score breakdown the retriever computed (the recorder carries it), so
    ``RunJournal.explain`` shows the factors of an LCEL run as it does an adapter's.
    """
    if not items:
        return []
    units = {u.memory_id: u for u in store.get_many([str(i["memory_id"]) for i in items], namespace=namespace)}
    return [
        ScoredMemory(
            memory=units[mid],
            score=float(i.get("score") or 0.0),
            similarity=float(i.get("similarity") or 0.0),
            breakdown=_breakdown(i.get("breakdown")),
            query_task_type=i["query_task_type"] if isinstance(i.get("query_task_type"), str) else None,
        )
        for i in items
        if (mid := str(i["memory_id"])) in units
    ]


def _breakdown(value: object) -> dict[str, float]:
    """A recorded breakdown as ``{factor: float}`` (a record without one, or with junk in it, gives ``{}``)."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): float(v) for k, v in value.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def journal_produced(journal: RunJournal, trajectory: Trajectory, produced: list[MemoryUnit]) -> None:
    """Journal the units reflection stored from ``trajectory`` as the run's ``produced``."""
    if produced:
        journal.add_produced(trajectory.run_id, [u.memory_id for u in produced], namespace=trajectory.namespace)


def submit_background(
    background: BackgroundReflector, journal: RunJournal, trajectory: Trajectory
) -> Future[list[MemoryUnit]]:
    """Queue ``trajectory`` for background reflection; what it stores is journaled when it is done."""
    future = background.submit(trajectory)

    def done(f: Future[list[MemoryUnit]]) -> None:
        if f.cancelled() or f.exception() is not None:
            return  # the background reflector logs its own failures
        try:
            journal_produced(journal, trajectory, f.result())
        except Exception:  # a worker thread: nobody to raise to
            logger.warning("could not journal produced memories of run %s", trajectory.run_id, exc_info=True)

    future.add_done_callback(done)
    return future
