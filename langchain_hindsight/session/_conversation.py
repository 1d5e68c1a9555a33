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

A correction attaches to the **task** it corrects: the last task the user gave in the
thread, not a follow-up question, a request for more, an acknowledgement or an earlier
correction that came after it (:func:`turn_role`). After ``生成本周的销售周报`` → answer →
``有误差的数据怎么处理？`` → answer → ``不对，金额要用含税价``, the correction is filed under
``生成本周的销售周报``; after ``生成本周的销售周报`` → ``再生成一份月报`` → ``不对，…``, under the
monthly report (a follow-up that is itself a new task is a task). A thread none of whose
turns reads as a task attaches to its first turn.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from langchain_hindsight._text import clip_text
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.prompts import Locale
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.session._feedback_model import FeedbackModelClassifier
from langchain_hindsight.session._feedback_rules import (
    CORRECTION_PATTERNS,
    FeedbackDetection,
    classify_turn,
    compile_openers,
    may_restate,
)
from langchain_hindsight.taxonomy import FALLBACK_TASK_TYPE, infer_task_type
from langchain_hindsight.types import Served

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = [
    "DELIVERABLE_PATTERN",
    "TASK_VERB_PATTERN",
    "CorrectionDetector",
    "TurnRole",
    "corrected_run",
    "detect_correction",
    "previous_run",
    "task_run",
    "turn_role",
]

logger = logging.getLogger(__name__)

_LOG_CHARS = 120
"""Turns and tasks are clipped to this many characters in the logs."""

TurnRole = Literal["task", "follow_up", "chat", "correction"]
"""What a human turn is in its thread: a task, a follow-up on the task (a question, a request for
more, added information), a chat turn (an acknowledgement), or a correction."""

TASK_VERB_PATTERN = (
    r"生成|制作|做(?:一|个|份|张|下)|写(?:一|个|份|篇|封|下)?|起草|撰写|编写|整理|发(?:送|给|到)|寄|翻译|总结|汇总|分析|"
    r"清洗|查询|统计|创建|新建|安排|预约|预订|导出|出(?:一|个|份)|画|绘制|计算|准备|提交|修复|修改|设计|规划|部署|"
    r"上传|下载|订(?:一|个|张)|"
    r"\b(?:generate|write|draft|create|make|prepare|produce|compile|send|email|mail|translate|summari[sz]e|"
    r"analy[sz]e|clean|query|schedule|book|export|build|plot|draw|compute|calculate|submit|file|do the same|fix|plan|"
    r"design|deploy|upload|download|order|set up|organi[sz]e|convert|rewrite)\b"
)
"""Verbs that ask for a piece of work (zh and en): with a task type or a deliverable, a new task."""

DELIVERABLE_PATTERN = (
    r"报告|报表|周报|月报|日报|年报|季报|文档|邮件|方案|计划|总结|摘要|诗|文章|表格|图表|PPT|幻灯片|合同|纪要|"
    r"\b(?:report|summary|document|doc|email|e-mail|mail|plan|proposal|poem|article|table|chart|slides?|deck|"
    r"contract|minutes|memo|letter|invoice|spreadsheet)s?\b"
)
"""Things a task produces (zh and en)."""

_TASK_VERB = re.compile(TASK_VERB_PATTERN, re.IGNORECASE)
_DELIVERABLE = re.compile(DELIVERABLE_PATTERN, re.IGNORECASE)
_NEW_ONE = re.compile(
    r"再(?:来|做|写|生成|出|发|给我)?(?:一|个|份|张|篇|封)|另(?:一|外一)(?:份|个|篇|封)|\b(?:another|a new|a second)\b",
    re.IGNORECASE,
)
"""A turn that asks for another deliverable ("再生成一份月报", "another report") names a new task."""
_HOW_QUESTION = re.compile(
    r"怎么|怎样|如何|为什么|为何|什么|哪|是否|是不是|要不要|需不需要|多少|"
    r"^\W*(?:how|why|what|which|where|when|who|whether|is|are|was|were|do|does|did|should|shall)\b",
    re.IGNORECASE,
)
"""A question that asks about something (how, why, whether) rather than asking for work."""
_POLITE = re.compile(
    r"能不能|能否|可不可以|可以|麻烦|请|帮我|帮忙|\b(?:can|could|would|will) you\b|\bplease\b", re.IGNORECASE
)
_NEXT = re.compile(r"[,，]\s*(?:now|next|then|and)\b|[，,]\s*(?:接下来|然后|再|现在)", re.IGNORECASE)
"""After an acknowledgement, a turn that goes on to new work ("Great, now do the same for July")."""
_SHORT_CHAT = 8
"""A turn with no task in it, at most this many characters: a chat turn ("你好", "hi there")."""


def turn_role(turn: str, detector: CorrectionDetector) -> tuple[TurnRole, str]:
    """What ``turn`` is in its thread, and the rule that said so (rules only, no model call).

    * ``correction`` — the detector's rules call it a correction ("不对，金额要用含税价").
    * ``chat`` — an acknowledgement ("好的，谢谢", "Thanks!"), or a short turn with no task in it.
    * ``task`` — the turn asks for a piece of work: a task verb with a task type or a deliverable
      ("生成本周的销售周报", "再生成一份月报", "Draft the monthly report"), also as a polite
      question ("能不能再做一份月报？", "Could you write a poem about autumn?"); or a
      statement that names a task type and its deliverable ("本周的销售周报").
    * ``follow_up`` — a question about the task ("有误差的数据怎么处理？", "周报里退款要算吗？",
      "How should rounding work?"), a request for more ("Actually, could you also add a chart?",
      "另外按门店拆分"), or information the user adds ("数据在 sales.csv 里").

    Example:
        >>> d = CorrectionDetector()
        >>> [turn_role(t, d)[0] for t in ("生成本周的销售周报", "有误差的数据怎么处理？", "再生成一份月报",
        ...                               "不对，金额要用含税价", "好的，谢谢")]
        ['task', 'follow_up', 'task', 'correction', 'chat']
        >>> [turn_role(t, d)[0] for t in ("Draft the weekly sales report", "How should we round the totals?",
        ...                               "Could you also add a chart?", "Now write the monthly report", "Thanks!")]
        ['task', 'follow_up', 'follow_up', 'task', 'chat']
    """
    text = " ".join(turn.split()) if isinstance(turn, str) else ""
    if not text:
        return "chat", "empty"
    rules = detector.classify_rules(text)
    if rules.is_correction:
        return "correction", rules.rule
    verb = _TASK_VERB.search(text)
    if rules.kind == "acknowledgement" and not (verb and _NEXT.search(text)):
        return "chat", "acknowledgement"
    typed = infer_task_type(text) != FALLBACK_TASK_TYPE
    deliverable = bool(_DELIVERABLE.search(text))
    asks_for_work = bool(verb) and (typed or deliverable)
    if rules.kind == "question":
        if asks_for_work and _POLITE.search(text) and not _HOW_QUESTION.search(text):
            return "task", "polite-request"
        return "follow_up", "question"
    if rules.kind == "request":
        if asks_for_work and (_NEW_ONE.search(text) or not _mentions_addition(text)):
            return "task", "new-deliverable"
        return "follow_up", "request"
    if asks_for_work or (_NEW_ONE.search(text) and deliverable):
        return "task", "task-verb"
    if typed and deliverable:
        return "task", "task-type"
    if verb:
        return "task", "task-verb"
    if len(text) <= _SHORT_CHAT:
        return "chat", "short"
    return "follow_up", "information"


_ADDITION = re.compile(r"\b(?:also|add|as well|too|additionally|include)\b|加上?|添加|补充|也|顺便|另外", re.IGNORECASE)


def _mentions_addition(text: str) -> bool:
    """Whether a request asks to add to the previous answer ("also add a chart", "加一列")."""
    return bool(_ADDITION.search(text))


def task_run(
    detector: CorrectionDetector, journal: RunJournal, run_id: str, thread_id: str | None, namespace: str
) -> tuple[RunRecord, list[RunRecord]] | None:
    """The run of the last task the user gave in the thread, and the newer runs passed over to find it.

    Walks the thread's finished runs newest first and stops at the first whose turn is a
    ``task`` (:func:`turn_role`); a thread with none attaches to its first run. ``None``
    without a thread or a previous run.
    """
    if not thread_id:
        return None
    runs = journal.thread_runs(thread_id, namespace=namespace, exclude=[run_id])
    if not runs:
        return None
    for i, run in enumerate(runs):
        if turn_role(run.task, detector)[0] == "task":
            return run, runs[:i]
    return runs[-1], runs[:-1]


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

    def classify_rules(self, turn: str) -> FeedbackDetection:
        """What ``turn`` is by the rules alone (no context, no model call)."""
        return classify_turn(turn, self._openers)

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
    found = task_run(detector, journal, served.run_id, served.thread_id, served.namespace)
    target, passed = found if found is not None else (last, [])
    previous = corrected_run(
        journal,
        served.task,
        served.run_id,
        served.thread_id,
        served.namespace,
        previous=target,
        correction=detection.correction,
    )
    logger.info(
        "turn %r corrects run %s (task %r): kind=%s, rule=%s, correction=%r%s%s",
        turn,
        target.run_id,
        clip_text(target.task, _LOG_CHARS, "…")[0],
        detection.kind,
        detection.rule,
        detection.correction,
        (
            f"; the last task of the thread, past {len(passed)} later turn(s) that are no task "
            f"({', '.join(repr(clip_text(r.task, 40, '…')[0]) for r in passed)})"
            if passed
            else ""
        ),
        "" if previous is not None else "; already applied to that run, not again",
    )
    return None if previous is None else (previous, detection)
