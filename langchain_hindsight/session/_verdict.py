"""What a user's verdict on a run does to memory, journaled per memory with its reason, and its exact undo.

A correction (a comment with ``success`` not ``True``, or a conversation turn taken
as one) becomes a ``user_feedback`` unit that *supersedes* only the served memories
it contradicts — same subject, another prescription, as
:func:`langchain_hindsight._claims.relation` judges; ``unsure`` keeps both — never
everything the run was shown, never another correction on a different point. The
superseded memory is no longer served, so it cannot regain credit; the chain is
in ``store.history(new_id)``. ``success=False`` with no comment names nothing: the
failure debit, on what the run used only, never on a user's own correction. Each change is an
:class:`~langchain_hindsight.runs.FeedbackEffect` (state before and after,
reason) of the run's feedback entry; :func:`revert_feedback` undoes the newest
verdict in force from exactly those effects.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_hindsight._claims import relation
from langchain_hindsight._text import clean_feedback
from langchain_hindsight._trust import USER_SOURCES
from langchain_hindsight.errors import (
    ConfigurationError,
    FeedbackAlreadyUndoneError,
    FeedbackNotFoundError,
    InvalidMemoryError,
)
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.prompts import ReflectionTemplates, get_reflection_templates
from langchain_hindsight.reflection import feedback_unit
from langchain_hindsight.runs import EffectAction, FeedbackEffect, RunRecord, UnitState
from langchain_hindsight.session._credit import credit, undo_credit
from langchain_hindsight.session.config import FeedbackResult
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import MemoryUnit
from langchain_hindsight.writes import WriteResult

__all__ = [
    "Relation",
    "Verdict",
    "apply_verdict",
    "claim_of",
    "contradicted",
    "correction_unit",
    "judged_ids",
    "record_verdict",
    "revert_feedback",
]

logger = logging.getLogger(__name__)

Relation = Callable[[str, str], str]
"""``relation(a, b)``: ``"same"``, ``"contradicts"``, ``"compatible"``, ``"unrelated"`` or ``"unsure"``."""

REASON_CREDIT = "the user confirmed that run {run_id} succeeded: success credit"
REASON_UNCREDIT = "the user said run {run_id} failed: its success credit ({delta:+.4f}) taken back"
REASON_DEBIT = (
    "the user said run {run_id} failed, without saying what was wrong: failure debit "
    "(never applied to a user's own correction)"
)
REASON_CONTRADICTED = "contradicted by the user's correction {by} of run {run_id}: superseded"
REASON_CREATED = "the user's correction of run {run_id}"
REASON_MERGED = "the user's correction of run {run_id} restates it: merged ({reason})"
REASON_JUDGED = "superseded when the user's correction {by} of run {run_id} was written ({reason})"
REASON_UNDO = "undo of the feedback given at {at} on run {run_id} ({action})"
REASON_UNDO_ARCHIVED = "undo of the feedback given at {at} on run {run_id}: the correction it created is archived"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a user's verdict did to memory (journaled as the feedback entry's effects)."""

    effects: list[FeedbackEffect] = field(default_factory=list)
    updated: list[MemoryUnit] = field(default_factory=list)
    """Served memories whose confidence changed."""
    created: list[MemoryUnit] = field(default_factory=list)
    """The ``user_feedback`` unit that now carries the correction (new, or the one it merged into)."""
    superseded: list[str] = field(default_factory=list)
    """Ids the correction superseded (no longer served)."""
    credit_before: dict[str, float] | None = None
    credit_after: dict[str, float] | None = None
    debit_before: dict[str, float] | None = None
    debit_after: dict[str, float] | None = None


def _template_regex(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{task\}|\{text\})", template)
    body = "".join(
        "(?P<task>.*?)" if p == "{task}" else "(?P<text>.*)" if p == "{text}" else re.escape(p) for p in parts
    )
    return re.compile(f"^{body}$", re.DOTALL)


_CORRECTION_FORMS = tuple(
    _template_regex(t)
    for templates in (get_reflection_templates("zh"), get_reflection_templates("en"))
    for t in (templates.rule_user_feedback, templates.rule_user_feedback_no_task)
)


def claim_of(unit: MemoryUnit) -> str:
    """What ``unit`` asserts: a stored user correction without its ``用户纠正（任务：…）：`` frame, else its content.

    Example:
        >>> claim_of(MemoryUnit(content="用户纠正（任务：生成周报）：金额要用含税价", source="user_feedback"))
        '金额要用含税价'
    """
    if unit.source == "user_feedback":
        for form in _CORRECTION_FORMS:
            m = form.match(unit.content)
            if m:
                return m.group("text").strip()
    return unit.content


def contradicted(
    claim: str, served: Sequence[MemoryUnit], relation: Relation, *, exclude: str | None = None
) -> list[MemoryUnit]:
    """The active ``served`` memories that ``claim`` contradicts (same subject, another prescription).

    Only ``relation(...) == "contradicts"`` counts: ``unsure``, ``compatible`` and
    ``unrelated`` keep the memory as it is (a user's correction on another point included).
    """
    found: list[MemoryUnit] = []
    for u in served:
        if u.status != "active" or u.memory_id == exclude:
            continue
        verdict = relation(claim, claim_of(u))
        logger.debug("correction vs memory %s: %s", u.memory_id, verdict)
        if verdict == "contradicts":
            found.append(u)
    return found


def _effect(
    memory_id: str,
    action: EffectAction,
    reason: str,
    before: MemoryUnit | None,
    after: MemoryUnit | None,
    by: str | None = None,
) -> FeedbackEffect:
    return FeedbackEffect(
        memory_id=memory_id,
        action=action,
        reason=reason,
        before=None if before is None else UnitState.of(before),
        after=None if after is None else UnitState.of(after),
        by=by,
    )


def _write_correction(
    store: MemoryStore, unit: MemoryUnit, against: list[MemoryUnit], run_id: str, ns: str
) -> WriteResult:
    if against:
        reason = REASON_CONTRADICTED.format(by=unit.memory_id, run_id=run_id)
        return store.supersede([u.memory_id for u in against], unit, reason=reason, namespace=ns)
    return store.add(unit, namespace=ns)


def apply_verdict(
    store: MemoryStore,
    journal: RunJournal,
    record: RunRecord,
    success: bool | None,
    *,
    ids: list[str],
    correction: MemoryUnit | None = None,
    claim: str = "",
    relation: Relation | None = None,
) -> Verdict:
    """A user's verdict on a run, applied to memory: every change comes back as an effect with its reason.

    * ``success=False`` takes back exactly the success credit the run gave (the journal's ``credit``).
    * A ``correction`` (the ``user_feedback`` unit made from the user's comment, ``claim``
      its assertion) supersedes only the served memories ``relation`` says it
      contradicts; every other served memory (another correction included) is left
      as it is. Without such a memory it is stored through the normal write path.
    * ``success=False`` without a correction (no comment): the run failed but the user
      named nothing, so the served memories get the ordinary failure debit (not a
      rejection), except ``user_feedback`` ones: an unexplained failure never
      outweighs a user's own correction. A run that already ended as a failure was
      debited by its outcome: the verdict confirms it and debits nothing more.
    * ``success=True`` credits ``ids`` once per run.

    ``ids`` are the served memories the verdict applies to (``record.served_ids``, or a subset of them);
    the debit and the credit go to those the run *used* (:func:`judged_ids`), never to one the agent
    set aside nor, for a debit, to a person's own words (``user_feedback``, ``manual``).
    """
    ns, run_id = record.namespace, record.run_id
    judged = judged_ids(record, ids)
    given = record.credit or {}
    watched = list(dict.fromkeys([*ids, *given]))
    before = {u.memory_id: u for u in store.get_many(watched, namespace=ns)} if watched else {}
    actions: dict[str, tuple[EffectAction, list[str], str | None]] = {}

    def mark(memory_id: str, action: EffectAction, reason: str, by: str | None = None) -> None:
        _, reasons, _ = actions.get(memory_id, (action, [], None))
        actions[memory_id] = (action, [*reasons, reason], by)

    credit_after = record.credit
    if success is False and given:
        undo_credit(store, given, ns)
        credit_after = None
        for mid, delta in given.items():
            if delta and mid in before:
                mark(mid, "uncredited", REASON_UNCREDIT.format(run_id=run_id, delta=delta))
    effects: list[FeedbackEffect] = []
    created: list[MemoryUnit] = []
    superseded: list[str] = []
    result: WriteResult | None = None
    against: list[MemoryUnit] = []
    if correction is not None:
        current = store.get_many(ids, namespace=ns) if ids else []
        against = contradicted(claim, current, relation or (lambda a, b: "unsure"))
        try:
            result = _write_correction(store, correction, against, run_id, ns)
        except (InvalidMemoryError, ConfigurationError) as e:  # e.g. refused as content without information
            logger.warning("feedback on run %s: the correction was not stored (%s); nothing superseded", run_id, e)
    if result is not None:
        created = [result.unit]
        if result.action == "merged":
            old = result.previous[0] if result.previous else None
            reason = REASON_MERGED.format(run_id=run_id, reason=result.reason)
            effects.append(_effect(result.memory_id, "merged", reason, old, result.unit))
        else:
            reason = REASON_CREATED.format(run_id=run_id)
            effects.append(_effect(result.memory_id, "created", reason, None, result.unit))
        if result.action == "superseded":
            for old in result.previous:
                superseded.append(old.memory_id)
                reason = (
                    result.reason
                    if against
                    else REASON_JUDGED.format(by=result.memory_id, run_id=run_id, reason=result.reason)
                )
                before.setdefault(old.memory_id, old)
                mark(old.memory_id, "superseded", reason, by=result.memory_id)
                logger.info(
                    "feedback on run %s: memory %s superseded by %s (%s)",
                    run_id,
                    old.memory_id,
                    result.memory_id,
                    reason,
                )
    elif correction is None and success is False and judged and record.debit is None:  # else: the outcome debited it
        debit = [u for u in store.get_many(judged, namespace=ns) if u.source not in USER_SOURCES]
        if debit:
            reason = REASON_DEBIT.format(run_id=run_id)
            lowered = store.record_feedback([u.memory_id for u in debit], success=False, namespace=ns, reason=reason)
            was = {u.memory_id: u.score_confidence for u in debit}
            # journaled as the run's debit, so a later success verdict takes it back (see credit())
            taken = {u.memory_id: u.score_confidence - was[u.memory_id] for u in lowered}
            journal.set_debit(run_id, taken, namespace=ns)
            for u in lowered:
                mark(u.memory_id, "debited", reason)
    elif correction is None and success is True and judged and record.credit is None:
        credit_after = credit(store, judged, ns, journal=journal, record=record)[1]
        reason = REASON_CREDIT.format(run_id=run_id)
        if record.debit:
            reason += " (the outcome's failure debit taken back first)"
        for mid in credit_after:
            mark(mid, "credited", reason)
    if credit_after != record.credit:
        journal.set_credit(run_id, credit_after, namespace=ns)
    debit_after = journal.get(run_id, namespace=ns).debit
    after = {u.memory_id: u for u in store.get_many(list(actions), namespace=ns)} if actions else {}
    for mid, (action, reasons, successor) in actions.items():
        if mid in before and mid in after and (action != "uncredited" or before[mid] != after[mid]):
            effects.append(_effect(mid, action, "; ".join(reasons), before[mid], after[mid], successor))
            if action in ("debited", "uncredited"):
                logger.info("feedback on run %s: memory %s %s (%s)", run_id, mid, action, "; ".join(reasons))
    served = set(ids)
    # A correction merged into a memory this run was served is in ``effects`` but not in ``actions``.
    now = {**({result.unit.memory_id: result.unit} if result is not None else {}), **after}
    updated = [
        now[e.memory_id]
        for e in effects
        if e.memory_id in served
        and e.memory_id in now
        and e.before
        and e.after
        and e.before.confidence != e.after.confidence
    ]
    return Verdict(
        effects=effects,
        updated=updated,
        created=created,
        superseded=superseded,
        credit_before=record.credit,
        credit_after=credit_after,
        debit_before=record.debit,
        debit_after=debit_after,
    )


def judged_ids(record: RunRecord, ids: Sequence[str]) -> list[str]:
    """The ``ids`` a user's bare verdict on ``record`` credits or debits: those its agent used.

    When the run's uses were judged (it ended through the session), the ``used`` ones;
    when they were not (a run served and then judged by the user without the session
    seeing what the agent did), the user is the only judge: every served one but those
    the agent set aside.
    """
    used = record.used_ids
    aside = set(record.set_aside_ids)
    return [i for i in ids if (used is None or i in used) and i not in aside]


def _last_in_force(record: RunRecord) -> int:
    """The index of the run's newest verdict still in force.

    Raises:
        FeedbackNotFoundError: the run has no feedback, or its verdicts predate effect journaling.
        FeedbackAlreadyUndoneError: every verdict of the run was undone.
    """
    verdicts = [i for i, f in enumerate(record.feedback) if f.kind == "verdict"]
    if not verdicts:
        raise FeedbackNotFoundError(f"run {record.run_id!r} has no feedback to undo")
    live = [i for i in verdicts if record.feedback[i].undone_at is None]
    if not live:
        raise FeedbackAlreadyUndoneError(f"the feedback of run {record.run_id!r} is already undone: nothing changed")
    if record.feedback[live[-1]].effects is None:
        raise FeedbackNotFoundError(
            f"the feedback of run {record.run_id!r} was journaled before its effects were recorded: it cannot be "
            "undone exactly (change the memories with `hindsight show`/`restore` instead)"
        )
    return live[-1]


def _reverted(unit: MemoryUnit, effect: FeedbackEffect) -> MemoryUnit | None:
    """``unit`` with what ``effect`` changed put back (``None``: nothing to change).

    A field still as the feedback left it gets its old value back; a confidence
    that moved since (a later run's credit) gets the feedback's change reversed
    instead; other fields that moved since are left as they are.
    """
    if effect.before is None or effect.after is None:
        return None
    now, old, new = UnitState.of(unit).changes(), effect.before.changes(), effect.after.changes()
    changes = {k: old[k] for k in old if now[k] == new[k] and now[k] != old[k]}
    if now["confidence"] != new["confidence"] and None not in (old["confidence"], new["confidence"]):
        shifted = unit.score_confidence + float(old["confidence"]) - float(new["confidence"])
        changes["confidence"] = round(min(1.0, max(0.0, shifted)), 6)
    return unit.evolve(**changes) if changes else None


def revert_feedback(
    store: MemoryStore, journal: RunJournal, record: RunRecord
) -> tuple[RunRecord, list[FeedbackEffect]]:
    """Undo the run's newest verdict in force, exactly as its journal entry says it was applied.

    Memories it changed get their state back (confidence, status, counters); a
    memory it superseded is active again; the correction unit it created is
    *archived* (out of recall, restorable: the user's own undo wins over "never
    lose what was learned", and nothing is deleted); a unit it merged into gets
    its previous state. The run's credit is restored. The undo is journaled as an
    entry of its own (``kind="undo"``) with what it reverted.

    Raises:
        FeedbackNotFoundError: the run has no feedback to undo.
        FeedbackAlreadyUndoneError: its feedback is already undone.
    """
    ns, run_id = record.namespace, record.run_id
    index = _last_in_force(record)
    entry = record.feedback[index]
    at = entry.at.isoformat(timespec="seconds")
    effects = entry.effects or []
    current = {u.memory_id: u for u in store.get_many([e.memory_id for e in effects], namespace=ns)} if effects else {}
    restore: list[MemoryUnit] = []
    archive: list[str] = []
    done: list[FeedbackEffect] = []
    for e in effects:
        unit = current.get(e.memory_id)
        if unit is None:
            logger.warning("undo of run %s: memory %s no longer exists, skipped", run_id, e.memory_id)
            continue
        if e.action == "created":
            if unit.status != "archived":
                archive.append(unit.memory_id)
            continue
        if unit.status == "archived":
            logger.warning("undo of run %s: memory %s was archived since, left archived", run_id, e.memory_id)
            continue
        back = _reverted(unit, e)
        if back is not None:
            restore.append(back)
            reason = REASON_UNDO.format(at=at, run_id=run_id, action=e.action)
            done.append(_effect(e.memory_id, "restored", reason, unit, back))
    with store.lock:
        if archive:
            for moved in store.archive(archive, namespace=ns):
                reason = REASON_UNDO_ARCHIVED.format(at=at, run_id=run_id)
                done.append(_effect(moved.memory_id, "archived", reason, current[moved.memory_id], moved))
        if restore:
            store.update_many(restore, namespace=ns)
    for e in done:
        logger.info("undo of run %s: memory %s %s (%s)", run_id, e.memory_id, e.action, e.reason)
    logger.info("undid the feedback on run %s: %d memories reverted", run_id, len(done))
    credit_now, debit_now = record.credit, record.debit
    if credit_now == entry.credit_after:
        credit_now = entry.credit_before
    else:
        logger.warning("undo of run %s: its credit changed since the feedback, left as it is", run_id)
    if debit_now == entry.debit_after:
        debit_now = entry.debit_before
    else:
        logger.warning("undo of run %s: its debit changed since the feedback, left as it is", run_id)
    run = journal.add_undo(run_id, index, effects=done, credit=credit_now, debit=debit_now, namespace=ns)
    return run, done


def correction_unit(
    text: str, record: RunRecord, *, templates: ReflectionTemplates, vocabulary: TaskTypeVocabulary
) -> MemoryUnit | None:
    """The ``user_feedback`` unit a correcting comment on ``record`` becomes (``None`` for a bare acknowledgement)."""
    return feedback_unit(
        text,
        templates=templates,
        task=record.task,
        task_type=vocabulary.normalize(record.task_type or record.task),
        namespace=record.namespace,
        run_id=record.run_id,
    )


def record_verdict(
    store: MemoryStore,
    journal: RunJournal,
    record: RunRecord,
    success: bool | None,
    text: str,
    *,
    ids: list[str],
    correction: MemoryUnit | None,
    rule: str | None = None,
) -> FeedbackResult:
    """Apply a verdict (:func:`apply_verdict`, the relation of :mod:`langchain_hindsight._claims`) and journal it.

    The run's feedback entry gets the comment, the verdict, every effect and the
    credit and debit before and after, and the detection ``rule`` of a conversation
    turn; a created correction is journaled as ``produced``.
    """
    ns, run_id = record.namespace, record.run_id
    verdict = apply_verdict(
        store,
        journal,
        record,
        success,
        ids=ids,
        correction=correction,
        claim=clean_feedback(text) or text,
        relation=relation,
    )
    if verdict.created:
        journal.add_produced(run_id, [u.memory_id for u in verdict.created], namespace=ns)
    run = journal.add_feedback(
        run_id,
        text=text,
        success=success,
        rejected=success is False,
        namespace=ns,
        effects=verdict.effects,
        credit_before=verdict.credit_before,
        credit_after=verdict.credit_after,
        debit_before=verdict.debit_before,
        debit_after=verdict.debit_after,
        rule=rule,
    )
    logger.info(
        "feedback on run %s (success=%s, comment=%s): %d memories changed, %d superseded, %d created",
        run_id,
        success,
        bool(text),
        len(verdict.effects),
        len(verdict.superseded),
        len(verdict.created),
    )
    return FeedbackResult(run=run, updated=verdict.updated, created=verdict.created)
