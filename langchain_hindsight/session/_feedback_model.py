"""The optional model call of the correction detector: one bounded, validated classification.

Asked only where the rules are unsure (:attr:`FeedbackDetection.certain` is ``False``:
a contrast, a "should be", a softener, or the previous task's words with another
value decided it), so a thread pays for no model call on an ordinary turn. The prompt
(:data:`~langchain_hindsight.prompts.FEEDBACK_PROMPT_ZH` / ``_EN``) carries the turn and the
previous task, both clipped; the answer must be a JSON object whose ``kind`` is one of
the five labels. A failed call or any other answer keeps the rules' result, warned once.
The corrected statement stays the user's own words (the rules' cleaning of the turn): the
model only decides *whether* the turn is a correction, never rewrites it.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, get_args

from langchain_core.messages import HumanMessage

from langchain_hindsight._json import parse_json_text, response_text
from langchain_hindsight._text import clip_text
from langchain_hindsight.prompts import Locale, get_feedback_prompt
from langchain_hindsight.session._feedback_rules import FeedbackDetection, FeedbackKind, cleaned_statement

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["FeedbackModelClassifier", "parse_feedback_kind"]

logger = logging.getLogger(__name__)

TURN_CHARS = 500
"""The turn is clipped to this many characters in the prompt."""
TASK_CHARS = 300
"""The previous task is clipped to this many characters in the prompt."""
_ANSWER_CHARS = 400
"""An answer longer than this is not the tiny JSON object asked for."""
_KINDS: frozenset[str] = frozenset(get_args(FeedbackKind))


def parse_feedback_kind(response: Any) -> FeedbackKind | None:
    r"""The ``kind`` of a model answer ``{"kind": "..."}``, or ``None`` if the answer is anything else.

    Example:
        >>> parse_feedback_kind('{"kind": "question"}'), parse_feedback_kind('```json\n{"kind": "Correction"}\n```')
        ('question', 'correction')
        >>> parse_feedback_kind("correction"), parse_feedback_kind('{"kind": "maybe"}'), parse_feedback_kind(42)
        (None, None, None)
    """
    content = response_text(response)
    if not isinstance(content, str) or len(content) > _ANSWER_CHARS:
        return None
    value, ok = parse_json_text(content)
    if not ok or not isinstance(value, dict) or set(value) - {"kind", "reason"}:
        return None
    kind = value.get("kind")
    if not isinstance(kind, str) or kind.strip().lower() not in _KINDS:
        return None
    out: FeedbackKind = kind.strip().lower()  # type: ignore[assignment]  # checked against the labels above
    return out


class FeedbackModelClassifier:
    """Asks a chat model whether a turn corrects the previous answer (one call, validated, with a fallback).

    Args:
        model: Any LangChain chat model.
        locale: Language of the prompt.
    """

    def __init__(self, model: BaseChatModel, *, locale: Locale = "zh") -> None:
        self.model = model
        self.prompt = get_feedback_prompt(locale)
        self._lock = threading.Lock()
        self._warned = False

    def classify(self, turn: str, *, previous_task: str | None, rules: FeedbackDetection) -> FeedbackDetection:
        """The model's verdict on ``turn``; ``rules`` (the rules' result) if the call fails or answers garbage."""
        prompt = self.prompt.format(
            previous_task=clip_text(" ".join((previous_task or "-").split()), TASK_CHARS, "…")[0],
            turn=clip_text(" ".join(turn.split()), TURN_CHARS, "…")[0],
        )
        try:
            response = self.model.invoke([HumanMessage(content=prompt)])
        except Exception as e:  # noqa: BLE001 - a model failure must not lose the turn: the rules decide
            return self._fall_back(rules, f"the model call failed: {type(e).__name__}: {e}")
        kind = parse_feedback_kind(response)
        if kind is None:
            return self._fall_back(rules, f"unusable answer: {str(response_text(response))[:200]!r}")
        if kind == "correction":
            return FeedbackDetection(True, "correction", "model:correction", cleaned_statement(turn))
        return FeedbackDetection(False, kind, f"model:{kind}")

    def _fall_back(self, rules: FeedbackDetection, why: str) -> FeedbackDetection:
        with self._lock:
            first, self._warned = not self._warned, True
        (logger.warning if first else logger.debug)(
            "feedback model fell back to the rules (%s, %s): %s", rules.kind, rules.rule, why
        )
        return rules
