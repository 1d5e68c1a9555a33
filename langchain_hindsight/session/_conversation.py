"""Feedback typed in the conversation: a human turn that corrects the previous answer.

In a thread (a LangGraph ``thread_id``, a checkpointed agent), "不对，周报只统计本周一到周日"
or "No, the week starts on Monday" is not a new task: it is the user's verdict on the
previous run. A follow-up question that opens with the same characters
("不对外公开的门店数据也要统计进周报吗？", "错了的订单要从周报里剔除吗？"), a request for
more ("Actually, could you also add a chart?") or an acknowledgement ("No problem") is not.
:class:`CorrectionDetector` decides by the rules of
:mod:`langchain_hindsight.session._feedback_rules` (patterns are data,
:data:`CORRECTION_PATTERNS`), over the turn and the task of the run it answers; with a
chat model it asks the model where the rules are unsure
(:mod:`langchain_hindsight.session._feedback_model`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from langchain_hindsight._text import clip_text
from langchain_hindsight.prompts import Locale
from langchain_hindsight.session._feedback_model import FeedbackModelClassifier
from langchain_hindsight.session._feedback_rules import (
    CORRECTION_PATTERNS,
    FeedbackDetection,
    classify_turn,
    compile_openers,
    may_restate,
)
from langchain_hindsight.store.journal import RunJournal
from langchain_hindsight.store.runs import RunRecord
from langchain_hindsight.types import Served

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["CorrectionDetector", "corrected_run", "detect_correction", "previous_run"]

logger = logging.getLogger(__name__)

_LOG_CHARS = 120
"""Turns and tasks are clipped to this many characters in the logs."""


class CorrectionDetector:
    """Tells whether a human turn corrects the previous answer, and why.

    Example:
        >>> detect = CorrectionDetector()
        >>> detect("不对，周报只统计本周一到周日"), detect("No, weeks start on Monday"), detect("生成周报")
        (True, True, False)
        >>> detect("No problem, thanks"), detect("修复这个错误"), detect("不对外公开的门店数据也要统计进周报吗？")
        (False, False, False)
        >>> d = detect.classify("错了，周报要发给张经理而不是李经理", previous_task="把周报发给李经理")
        >>> d.is_correction, d.kind, d.rule, d.correction
        (True, 'correction', 'opener:错了', '周报要发给张经理而不是李经理')
        >>> detect.classify("Actually, could you also add a chart?").kind
        'request'

    Args:
        patterns: Verdicts that open a correcting turn (regular expressions, matched at the
            start of the turn and followed by a boundary); default :data:`CORRECTION_PATTERNS`.
        model: A chat model asked (one bounded call) when the rules are unsure; ``None``: rules only.
        locale: Language of the model's prompt.

    Raises:
        ConfigurationError: a pattern is not a valid regular expression.
    """

    def __init__(
        self,
        patterns: Sequence[str] = CORRECTION_PATTERNS,
        *,
        model: BaseChatModel | None = None,
        locale: Locale = "zh",
    ) -> None:
        self.patterns = tuple(patterns)
        self._openers = compile_openers(self.patterns)
        self.model: FeedbackModelClassifier | None = (
            FeedbackModelClassifier(model, locale=locale) if model is not None else None
        )

    def classify(self, turn: str, *, previous_task: str | None = None) -> FeedbackDetection:
        """What ``turn`` is, relative to the run it answers (whose task is ``previous_task``).

        The rules decide; when they are unsure (:attr:`FeedbackDetection.certain` is ``False``)
        and a model is configured, the model's validated answer decides instead (a failed
        call or a garbage answer keeps the rules' result).
        """
        if not isinstance(turn, str):
            return FeedbackDetection(False, "other", "not-text")
        rules = classify_turn(turn, self._openers, previous_task=previous_task)
        if self.model is None or rules.certain:
            return rules
        return self.model.classify(turn, previous_task=previous_task, rules=rules)

    def wants_context(self, turn: str) -> bool:
        """Whether classifying ``turn`` needs the previous run (and its task).

        Yes when the rules say correction, when the previous task could make it one (a short
        turn naming a value), or when the model would be asked (the rules are unsure). A turn
        the rules reject for certain ("有误差的数据怎么处理？", "Actually, could you also add
        a chart?") needs no journal lookup.
        """
        if not isinstance(turn, str) or not turn.strip():
            return False
        rules = classify_turn(turn, self._openers)
        return rules.is_correction or (self.model is not None and not rules.certain) or may_restate(turn)

    def __call__(self, text: str) -> bool:
        """``True`` when ``text`` corrects the previous answer (the rules only, no context)."""
        if not isinstance(text, str):
            return False
        return classify_turn(text, self._openers).is_correction


def previous_run(journal: RunJournal, run_id: str, thread_id: str | None, namespace: str) -> RunRecord | None:
    """The newest finished run of the thread before ``run_id`` (``None`` without a thread or a run)."""
    if not thread_id:
        return None
    return journal.last_in_thread(thread_id, namespace=namespace, exclude=[run_id])


def corrected_run(
    journal: RunJournal,
    turn: str,
    run_id: str,
    thread_id: str | None,
    namespace: str,
    *,
    previous: RunRecord | None = None,
    correction: str | None = None,
) -> RunRecord | None:
    """The previous run of the thread that the correcting ``turn`` is a verdict on, if any.

    ``None`` without a thread, without a previous run, or when this very turn was
    already applied to it (e.g. the same turn served twice): its text, or its cleaned
    ``correction``, is already a rejection in the run's feedback (a bare verdict, with no
    statement, is recognised by its empty text and a detection rule).

    Args:
        journal: The run journal.
        turn: The correcting turn.
        run_id: The run the turn starts (never its own target).
        thread_id: The conversation thread.
        namespace: The namespace of the thread's runs.
        previous: The previous run, when the caller already looked it up.
        correction: The cleaned statement the turn's feedback is recorded with.
    """
    if previous is None:
        previous = previous_run(journal, run_id, thread_id, namespace)
    if previous is None or not thread_id:
        return None
    texts = {turn.strip(), (correction or "").strip()}
    for f in previous.feedback:
        if f.rejected and (f.text in texts - {""} or (not correction and not f.text and f.rule)):
            return None
    return previous


def detect_correction(
    detector: CorrectionDetector, journal: RunJournal, served: Served
) -> tuple[RunRecord, FeedbackDetection] | None:
    """The run a served turn corrects and the detection that says so, or ``None``.

    Looks up the previous run of the turn's thread (only when the turn may be a correction:
    :meth:`CorrectionDetector.wants_context`), classifies the turn against that run's task,
    and logs the decision: a correction at INFO (the turn and the task clipped, the run
    it answers, the kind and the rule that fired), anything else at DEBUG. ``None`` without a
    thread or a previous run, for a turn that is not a correction, and for a correction
    already applied to that run (:func:`corrected_run`).
    """
    if not served.thread_id or not served.task.strip():
        return None
    turn = clip_text(" ".join(served.task.split()), _LOG_CHARS, "…")[0]
    if not detector.wants_context(served.task):
        rules = detector.classify(served.task)
        logger.debug("turn %r: not a correction (kind=%s, rule=%s)", turn, rules.kind, rules.rule)
        return None
    last = previous_run(journal, served.run_id, served.thread_id, served.namespace)
    if last is None:
        return None
    detection = detector.classify(served.task, previous_task=last.task)
    if not detection.is_correction:
        logger.debug(
            "turn %r answers run %s: not a correction (kind=%s, rule=%s)",
            turn,
            last.run_id,
            detection.kind,
            detection.rule,
        )
        return None
    previous = corrected_run(
        journal,
        served.task,
        served.run_id,
        served.thread_id,
        served.namespace,
        previous=last,
        correction=detection.correction,
    )
    logger.info(
        "turn %r corrects run %s (task %r): kind=%s, rule=%s, correction=%r%s",
        turn,
        last.run_id,
        clip_text(last.task, _LOG_CHARS, "…")[0],
        detection.kind,
        detection.rule,
        detection.correction,
        "" if previous is not None else "; already applied to that run, not again",
    )
    return None if previous is None else (previous, detection)
