"""The optional relevance check: one bounded call to the chat model asks which of the top candidates may apply.

The default floor (:data:`~langchain_hindsight.recall.ranking.AUTO_FLOOR`) serves a ranking whenever
any of it has evidence, because a cosine cannot tell a relevant memory from a noisy neighbour and
recall must not be lost. When silence for unrelated tasks matters more than one model call per
recall, ``relevance_check`` (off by default) asks the configured chat model, once per recall:

* **bounded**: at most :data:`CHECK_MAX_CANDIDATES` candidates (the served ``k``), the task cut to
  :data:`CHECK_MAX_TASK_CHARS` and each memory to :data:`CHECK_MAX_MEMORY_CHARS` characters, only
  :data:`CHECK_MAX_ANSWER` characters of the answer read;
* **validated**: the answer must be the numbers of the memories that may apply (``1,3``) or a word
  for none (``无`` / ``none`` / ``0``); anything else (a number out of range, prose) is no verdict;
* **cached**: the verdict for the same task and the same candidates is remembered
  (:data:`CHECK_CACHE_SIZE` entries, per check);
* **falls back to serving**: no verdict, an exception, a timeout of the model: everything the floor
  served is served, and a warning is logged;
* **journaled**: every memory served after a check carries ``relevance_check = 1`` in its breakdown
  (the run journal stores the breakdown of what it served), and the ids the model set aside are kept
  in the run's record (:attr:`~langchain_hindsight.runs.RunRecord.withheld`) and logged at INFO with
  the task.

A check is a callable ``(task, memory texts) -> list[bool] | None`` (:data:`RelevanceCheck`); a chat
model is wrapped by :func:`model_relevance_check` with ``RELEVANCE_CHECK_PROMPT_*`` from
:mod:`langchain_hindsight.prompts`. Importing this module does not import
``langchain_core.language_models`` (only a given chat model needs it).
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from langchain_hindsight.prompts import RELEVANCE_CHECK_PROMPT_EN, RELEVANCE_CHECK_PROMPT_ZH, Locale
from langchain_hindsight.recall.task_type import answer_text
from langchain_hindsight.types import ScoredMemory

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = [
    "CHECK_CACHE_SIZE",
    "CHECK_MAX_ANSWER",
    "CHECK_MAX_CANDIDATES",
    "CHECK_MAX_MEMORY_CHARS",
    "CHECK_MAX_TASK_CHARS",
    "RelevanceCheck",
    "apply_relevance_check",
    "as_relevance_check",
    "model_relevance_check",
    "parse_verdict",
]

logger = logging.getLogger(__name__)

RelevanceCheck = Callable[[str, Sequence[str]], "Sequence[bool] | None"]
"""``(task, memory texts) -> one bool per memory (it may apply) | None (no verdict: serve all)``."""

CHECK_MAX_CANDIDATES = 10
"""The check sees at most this many candidates (the best first); the rest are served unchecked."""
CHECK_MAX_TASK_CHARS = 2000
"""The check sees at most this much of the task."""
CHECK_MAX_MEMORY_CHARS = 300
"""The check sees at most this much of each memory."""
CHECK_MAX_ANSWER = 200
"""Only this much of the model's answer is read."""
CHECK_CACHE_SIZE = 256
"""Verdicts a model check remembers (task + candidates → verdict), oldest dropped first."""

_NONE_WORDS = frozenset({"无", "没有", "都没有", "都不", "none", "no", "0", "n/a", "nothing"})


def parse_verdict(answer: object, count: int) -> list[bool] | None:
    """The model's answer as one bool per candidate, or ``None`` when it is no valid verdict.

    Example:
        >>> parse_verdict("1, 3", 3), parse_verdict("无", 2), parse_verdict("4", 3), parse_verdict("maybe", 2)
        ([True, False, True], [False, False], None, None)
    """
    if not isinstance(answer, str):
        return None
    text = answer[:CHECK_MAX_ANSWER].strip().strip("`'\"。.，,：: ").lower()
    if text in _NONE_WORDS:
        return [False] * count
    if not re.fullmatch(r"[\d\s,，、和and#第条号]+", text):
        return None
    picked = {int(n) for n in re.findall(r"\d+", text)}
    if not picked or not picked <= set(range(1, count + 1)):
        return None
    return [i + 1 in picked for i in range(count)]


def model_relevance_check(model: BaseChatModel, locale: Locale) -> RelevanceCheck:
    """A :data:`RelevanceCheck` that asks ``model`` once with the ``locale``'s prompt, remembering its verdicts.

    Errors of the model propagate (the engine falls back to serving).
    """
    from langchain_core.messages import HumanMessage  # a chat model was given: LangChain's messages are loaded

    prompt = RELEVANCE_CHECK_PROMPT_ZH if locale == "zh" else RELEVANCE_CHECK_PROMPT_EN
    cache: OrderedDict[tuple[str, tuple[str, ...]], list[bool] | None] = OrderedDict()
    lock = threading.Lock()

    def check(task: str, memories: Sequence[str]) -> list[bool] | None:
        key = (task, tuple(memories))
        with lock:
            if key in cache:
                cache.move_to_end(key)
                return cache[key]
        lines = "\n".join(f"{i}. {text}" for i, text in enumerate(memories, start=1))
        message = HumanMessage(content=prompt.format(task=task, memories=lines))
        verdict = parse_verdict(answer_text(model.invoke([message]).content), len(memories))
        if verdict is not None:  # no verdict is not remembered: the next recall asks again
            with lock:
                cache[key] = verdict
                while len(cache) > CHECK_CACHE_SIZE:
                    cache.popitem(last=False)
        return verdict

    return check


def as_relevance_check(hook: RelevanceCheck | BaseChatModel | None, locale: Locale) -> RelevanceCheck | None:
    """The ``relevance_check`` option as a callable (a chat model is wrapped by :func:`model_relevance_check`)."""
    if hook is None:
        return None
    from langchain_core.language_models import BaseChatModel  # only when a hook is given (costs ~0.3 s)

    if isinstance(hook, BaseChatModel):
        return model_relevance_check(hook, locale)
    return hook


def apply_relevance_check(
    check: RelevanceCheck, task: str, memories: list[ScoredMemory]
) -> tuple[list[ScoredMemory], list[str]]:
    """``memories`` less those the check says cannot apply, and the ids it set aside.

    All of them are kept (and none set aside) when the check gives no verdict or fails. The check sees
    the first :data:`CHECK_MAX_CANDIDATES`, clipped; each memory served after a verdict carries
    ``relevance_check = 1.0`` in its breakdown (checked and kept) or ``0.0`` (beyond the bound, served
    unchecked). When the check keeps none of those it saw, nothing is served and every memory is set
    aside, the unchecked ones included.
    """
    if not memories:
        return memories, []
    asked = memories[:CHECK_MAX_CANDIDATES]
    texts = [_clip(m.memory.content, CHECK_MAX_MEMORY_CHARS) for m in asked]
    try:
        verdict = check(_clip(task, CHECK_MAX_TASK_CHARS), texts)
        valid = verdict is not None and len(verdict) == len(asked) and all(isinstance(v, bool) for v in verdict)
    except Exception:  # a failing check must never cost the recall: serve what the floor served
        logger.warning("relevance check failed; serving the %d memories the floor served", len(memories), exc_info=True)
        return memories, []
    if not valid or verdict is None:
        logger.warning("relevance check gave no valid verdict (%r); serving what the floor served", verdict)
        return memories, []
    kept = [_mark(m, 1.0) for m, ok in zip(asked, verdict, strict=True) if ok]
    if kept:
        withheld = [m.memory.memory_id for m, ok in zip(asked, verdict, strict=True) if not ok]
        served = kept + [_mark(m, 0.0) for m in memories[CHECK_MAX_CANDIDATES:]]
    else:
        withheld, served = [m.memory.memory_id for m in memories], []
    if withheld:
        logger.info("relevance check set aside %d of %d for %r: %s", len(withheld), len(memories), task[:80], withheld)
    return served, withheld


def _clip(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters (a cut one ends with ``…``)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _mark(scored: ScoredMemory, value: float) -> ScoredMemory:
    return scored.model_copy(update={"breakdown": {**scored.breakdown, "relevance_check": value}})
