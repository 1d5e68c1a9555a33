"""What a run's outcome and a user's verdict do to its memories, and what reflection produced from it.

Store-and-journal steps of :class:`~langchain_hindsight.session.loop.HindsightSession`
(the session adds the error policy). A success credits the served memories once
and the journal records the exact confidence change, so a later rejection takes
back exactly that credit (see :mod:`~langchain_hindsight.session._verdict`); a
failure lowers them. The units reflection stores from a run (at once or in the
background) are journaled as its ``produced``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

from langchain_hindsight.errors import RunNotFoundError
from langchain_hindsight.reflection.background import BackgroundReflector
from langchain_hindsight.session.config import Served
from langchain_hindsight.store.journal import RunJournal, RunRecord
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit, ScoredMemory, Trajectory

__all__ = [
    "apply_outcome",
    "credit",
    "journal_produced",
    "run_record",
    "served_from_items",
    "start_run",
    "submit_background",
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
        thread_id=served.thread_id,
    )


def run_record(journal: RunJournal, served: Served) -> RunRecord:
    """The run's journal record, started now when no adapter started it."""
    try:
        return journal.get(served.run_id, namespace=served.namespace)
    except RunNotFoundError:
        return start_run(journal, served)


def credit(store: MemoryStore, ids: list[str], namespace: str) -> tuple[list[MemoryUnit], dict[str, float]]:
    """Apply success credit to ``ids``; returns the updated units and the confidence change of each."""
    before = {u.memory_id: u.score_confidence for u in store.get_many(ids, namespace=namespace)}
    updated = store.record_feedback(ids, success=True, namespace=namespace)
    return updated, {u.memory_id: u.score_confidence - before.get(u.memory_id, u.score_confidence) for u in updated}


def undo_credit(store: MemoryStore, given: Mapping[str, float], namespace: str) -> None:
    """Take back exactly the confidence a success credit added."""
    units = store.get_many(list(given), namespace=namespace)
    changed = [
        u.evolve(confidence=min(1.0, max(0.0, u.score_confidence - given[u.memory_id])))
        for u in units
        if given.get(u.memory_id)
    ]
    if changed:
        store.update_many(changed, namespace=namespace)


def apply_outcome(
    store: MemoryStore,
    journal: RunJournal,
    record: RunRecord,
    trajectory: Trajectory,
    *,
    ids: list[str],
    to_memories: bool,
) -> None:
    """Apply the run's outcome to what the journal says it was served (credit once), and journal its end.

    Args:
        store: The memory store.
        journal: The run journal holding ``record``.
        record: The run's journal record.
        trajectory: The finished run.
        ids: The served memories the outcome applies to (``record.served_ids``, or a subset of them).
        to_memories: ``False`` only journals the end (``SessionConfig.apply_outcome``).
    """
    ns = record.namespace
    given: dict[str, float] | None = None
    if to_memories and ids:
        if trajectory.outcome == "success":
            if record.credit is None:
                given = credit(store, ids, ns)[1]
        else:
            success = False if trajectory.outcome == "failure" else None
            store.record_feedback(ids, success=success, namespace=ns)
    journal.finish(trajectory.run_id, outcome=trajectory.outcome, task_type=trajectory.task_type, namespace=ns)
    if given is not None:
        journal.set_credit(trajectory.run_id, given, namespace=ns)


def served_from_items(store: MemoryStore, items: list[Mapping[str, Any]], namespace: str) -> list[ScoredMemory]:
    """What a retriever served inside a captured run (``TrajectoryRecorder`` metadata), as recall results."""
    if not items:
        return []
    units = {u.memory_id: u for u in store.get_many([str(i["memory_id"]) for i in items], namespace=namespace)}
    return [
        ScoredMemory(
            memory=units[mid], score=float(i.get("score") or 0.0), similarity=float(i.get("similarity") or 0.0)
        )
        for i in items
        if (mid := str(i["memory_id"])) in units
    ]


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
