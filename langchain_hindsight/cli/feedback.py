"""``hindsight undo-feedback RUN_ID``: revert exactly what a user's feedback on a run did to memory.

The run's journal entry says, per memory, what the feedback changed and why (see
:mod:`langchain_hindsight.session._verdict`); the undo puts those states back, makes a
superseded memory active again, archives the correction unit the feedback created
(restorable with ``hindsight restore``) and journals itself. An operator command:
it changes memories, so ``--principal`` is refused like ``maintain``'s.
"""

from __future__ import annotations

import argparse

from langchain_hindsight.cli._output import clip, emit_json, safe, table
from langchain_hindsight.cli._store import open_store
from langchain_hindsight.errors import RunNotFoundError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.runs import FeedbackEffect
from langchain_hindsight.session import revert_feedback

__all__ = ["undo_feedback"]


def _conf(effect: FeedbackEffect) -> str:
    def one(state: object) -> str:
        value = getattr(state, "confidence", None)
        return "-" if value is None else f"{value:.2f}"

    return f"{one(effect.before)} → {one(effect.after)}"


def _status(effect: FeedbackEffect) -> str:
    return f"{getattr(effect.before, 'status', '-')} → {getattr(effect.after, 'status', '-')}"


def undo_feedback(args: argparse.Namespace) -> int:
    """``hindsight undo-feedback RUN_ID``: undo the run's newest feedback, print what was reverted."""
    with open_store(args) as store:
        journal = RunJournal(store)
        try:
            record = journal.get(args.run_id)
        except RunNotFoundError as e:
            elsewhere = [ns for ns in journal.locate(args.run_id) if ns != store.namespace]
            if elsewhere:
                raise RunNotFoundError(f"{e}; it is in namespace {', '.join(elsewhere)}: pass --namespace") from e
            raise
        run, done = revert_feedback(store, journal, record)
    if args.json:
        emit_json({"run_id": run.run_id, "namespace": run.namespace, "credit": run.credit, "effects": done})
        return 0
    print(f"undid the feedback on run {safe(run.run_id)} (namespace {safe(run.namespace)}): {len(done)} memories")
    if done:
        rows = [(e.memory_id, e.action, _conf(e), _status(e), clip(e.reason, 60)) for e in done]
        print(table(["memory_id", "action", "confidence", "status", "reason"], rows))
    return 0
