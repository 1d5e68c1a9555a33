"""Serve-time task-type resolution: the task type a recall scores against, and where it comes from.

A task type given by the caller wins (normalised with the store's vocabulary). Otherwise the
keyword rules of :class:`~langchain_hindsight.taxonomy.TaskTypeVocabulary` classify the query,
and only when they recognise nothing an optional classifier hook is asked: a callable
``(text, labels) -> label | None`` (:data:`TaskClassifier`) or a chat model, asked once with
``TASK_TYPE_PROMPT_*``. An answer counts only when it names a label of the vocabulary
(:func:`pick_label`); anything else falls back to the rules' answer.

Pure functions: the retriever owns the once-per-retriever warning when a classifier fails.
Importing this module does not import ``langchain_core.language_models``: only
:func:`as_classifier` and :func:`model_classifier` need it, when a hook is given.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from langchain_hindsight.prompts import TASK_TYPE_PROMPT_EN, TASK_TYPE_PROMPT_ZH, Locale
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import TaskTypeSource

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = [
    "CLASSIFY_MAX_ANSWER",
    "CLASSIFY_MAX_CHARS",
    "TaskClassifier",
    "answer_text",
    "as_classifier",
    "model_classifier",
    "pick_label",
    "resolve_task_type",
]

TaskClassifier = Callable[[str, Sequence[str]], "str | None"]
"""A task-type classifier hook: ``(task text, allowed labels) -> label or None``."""

CLASSIFY_MAX_CHARS = 2000
"""The model classifier sees at most this much of the task text."""
CLASSIFY_MAX_ANSWER = 200
"""Only this much of the model's answer is read."""


def answer_text(content: object) -> str:
    """A chat model's message content as plain text (a list of content parts joined by spaces)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content if isinstance(p, str | dict)
        )
    return str(content)


def pick_label(answer: str | None, vocabulary: TaskTypeVocabulary) -> str | None:
    """A classifier's answer as a label of ``vocabulary``, or ``None`` when it names none."""
    if not isinstance(answer, str):
        return None
    text = answer[:CLASSIFY_MAX_ANSWER].strip().strip("`'\"。.，, ").lower()
    if text in vocabulary:
        return text
    for label in sorted(vocabulary.labels, key=len, reverse=True):
        if re.search(rf"(?<![a-z0-9_]){re.escape(label)}(?![a-z0-9_])", text):
            return label
    label = vocabulary.normalize(text) if text else vocabulary.fallback
    return None if label == vocabulary.fallback else label


def model_classifier(model: BaseChatModel, locale: Locale) -> TaskClassifier:
    """A :data:`TaskClassifier` that asks ``model`` once with the ``locale``'s task-type prompt.

    The task is cut to :data:`CLASSIFY_MAX_CHARS` characters and the answer to
    :data:`CLASSIFY_MAX_ANSWER`; errors of the model propagate to the caller.
    """
    from langchain_core.messages import HumanMessage  # a chat model was given: LangChain's messages are loaded

    prompt = TASK_TYPE_PROMPT_ZH if locale == "zh" else TASK_TYPE_PROMPT_EN

    def classify(text: str, labels: Sequence[str]) -> str | None:
        message = HumanMessage(content=prompt.format(task_types=", ".join(labels), task=text[:CLASSIFY_MAX_CHARS]))
        return answer_text(model.invoke([message]).content)[:CLASSIFY_MAX_ANSWER]

    return classify


def as_classifier(hook: TaskClassifier | BaseChatModel | None, locale: Locale) -> TaskClassifier | None:
    """The classifier hook as a callable (a chat model is wrapped by :func:`model_classifier`)."""
    if hook is None:
        return None
    # here, not at the top: importing language_models costs ~0.3 s, and the recall engine
    # (which ``hindsight search`` runs) imports this module without needing it
    from langchain_core.language_models import BaseChatModel

    if isinstance(hook, BaseChatModel):
        return model_classifier(hook, locale)
    return hook


def resolve_task_type(
    query: str,
    fixed: str | None,
    vocabulary: TaskTypeVocabulary,
    *,
    infer: bool,
    classify: Callable[[str], str | None] | None,
) -> tuple[str | None, TaskTypeSource | None]:
    """The task type to score ``query`` against, and its :data:`~langchain_hindsight.types.TaskTypeSource`.

    Args:
        query: The task text.
        fixed: The caller's task type, already normalised; wins when given (``"fixed"``).
        vocabulary: The store's task-type vocabulary (keyword rules and labels).
        infer: ``False`` turns inference off: ``(None, None)`` when nothing is fixed.
        classify: Asked (``query -> label | None``) only when the rules recognise nothing
            in a non-blank query; ``None`` when there is no classifier.

    Example:
        >>> from langchain_hindsight.taxonomy import TaskTypeVocabulary
        >>> resolve_task_type("生成本周的销售周报", None, TaskTypeVocabulary(), infer=True, classify=None)
        ('weekly_report', 'inferred')
    """
    if fixed is not None:
        return fixed, "fixed"
    if not infer:
        return None, None
    inferred = vocabulary.infer(query)
    if inferred != vocabulary.fallback or classify is None or not query.strip():
        return inferred, "inferred"
    label = classify(query)
    return (label, "model") if label is not None else (inferred, "inferred")
