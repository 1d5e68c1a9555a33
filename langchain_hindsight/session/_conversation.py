"""Feedback typed in the conversation: a human turn that corrects the previous answer.

In a thread (a LangGraph ``thread_id``, a checkpointed agent), "不对，周报只统计本周一到周日"
or "No, the week starts on Monday" is not a new task: it is the user's verdict on the
previous run. The patterns are data (:data:`CORRECTION_PATTERNS`), Chinese and English,
anchored at the start of the turn so that a task that merely *mentions* an error
("修复这个错误") is not taken for a correction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_hindsight.store.journal import RunJournal, RunRecord

__all__ = ["CORRECTION_PATTERNS", "CorrectionDetector", "corrected_run"]

CORRECTION_PATTERNS: tuple[str, ...] = (
    # Chinese: the turn opens by saying the previous answer was wrong.
    r"不对",
    r"不是这样",
    r"不是的",
    r"错了",
    r"搞错了",
    r"你错了",
    r"弄错了",
    r"不正确",
    r"有误",
    # English: "No," needs punctuation after it so "No problem" / "No need to…" are not corrections.
    r"no[,，.!！:;—-]",
    r"nope\b",
    r"that'?s (?:wrong|not right|incorrect|not correct|not what i (?:asked|meant|wanted))",
    r"that is (?:wrong|not right|incorrect|not correct)",
    r"(?:this|it) is (?:wrong|incorrect)",
    r"wrong\b",
    r"incorrect\b",
    r"actually,",
    r"not quite\b",
)
"""Regular expressions (case-insensitive) matched at the start of a human turn, after
leading whitespace and polite openers are skipped."""

_OPENERS = re.compile(r"^(?:[\s\"'“”‘’「」]|嗯+[，,\s]*|呃+[，,\s]*|hmm+[,\s]*|well[,\s]+|sorry[,\s]+)*", re.IGNORECASE)


class CorrectionDetector:
    """Tells whether a human turn corrects the previous answer.

    Example:
        >>> detect = CorrectionDetector()
        >>> detect("不对，周报只统计本周一到周日"), detect("No, weeks start on Monday"), detect("生成周报")
        (True, True, False)
        >>> detect("No problem, thanks"), detect("修复这个错误")
        (False, False)

    Args:
        patterns: Regular expressions matched at the start of the turn; default
            :data:`CORRECTION_PATTERNS`.
    """

    def __init__(self, patterns: Sequence[str] = CORRECTION_PATTERNS) -> None:
        self.patterns = tuple(patterns)
        self._regex = re.compile("|".join(f"(?:{p})" for p in self.patterns), re.IGNORECASE) if self.patterns else None

    def __call__(self, text: str) -> bool:
        """``True`` when ``text`` opens by saying the previous answer was wrong."""
        if self._regex is None or not isinstance(text, str):
            return False
        head = _OPENERS.sub("", text, count=1)
        return self._regex.match(head) is not None


def corrected_run(
    journal: RunJournal, turn: str, run_id: str, thread_id: str | None, namespace: str
) -> RunRecord | None:
    """The previous run of the thread that the correcting ``turn`` is a verdict on, if any.

    ``None`` without a thread, without a previous run, or when this very turn was
    already applied to it (e.g. the same turn served twice).
    """
    if not thread_id:
        return None
    previous = journal.last_in_thread(thread_id, namespace=namespace, exclude=[run_id])
    if previous is None:
        return None
    text = turn.strip()
    if any(f.rejected and f.text == text for f in previous.feedback):
        return None
    return previous
