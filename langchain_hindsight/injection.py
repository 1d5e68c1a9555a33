"""The ``[相关经验]`` block and the task prompt (seed §3.3, §4.4; pitfalls 2 and 4).

The block is plain text: one line per memory, Markdown flattened and anything
that imitates our prompt structure neutralised (``_safety.render_safe``), at most
``max_lines`` memory lines whatever ``k`` the caller recalled. When two shown
memories disagree with close confidence, both stay and a conflict note tells the
model to judge (seed §3.4, §5.2). Every string comes from
:mod:`langchain_hindsight.prompts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.documents import Document

from langchain_hindsight._lexical import tokenize
from langchain_hindsight._safety import render_safe
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.prompts import Locale, PromptTemplates, get_templates
from langchain_hindsight.types import MemoryUnit, ScoredMemory

__all__ = ["Recalled", "build_task_prompt", "detect_conflicts", "format_experiences"]

Recalled = ScoredMemory | MemoryUnit | Document
"""What the block accepts: recall results, plain units, or the retriever's Documents."""

DEFAULT_MAX_LINES = 8
"""Seed §3.3: inject 5-8 memories; more dilutes the model's attention."""


@dataclass(frozen=True, slots=True)
class _Entry:
    content: str
    confidence: float
    task_type: str
    kind: str


def _entry(item: Recalled) -> _Entry:
    if isinstance(item, ScoredMemory):
        item = item.memory
    if isinstance(item, MemoryUnit):
        return _Entry(item.content, item.score_confidence, item.task_type, item.kind)
    if isinstance(item, Document):
        meta = item.metadata
        confidence = meta.get("confidence")
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            raise ConfigurationError("a Document given to format_experiences needs a numeric metadata['confidence']")
        return _Entry(
            item.page_content,
            float(confidence),
            str(meta.get("task_type", "")),
            str(meta.get("kind", "experience")),
        )
    raise ConfigurationError(f"expected ScoredMemory, MemoryUnit or Document, got {type(item).__name__}")


def _topic_tokens(text: str) -> set[str]:
    """Content tokens without single CJK characters (too common to signal a topic)."""
    return {t for t in tokenize(text) if not (len(t) == 1 and not t.isascii())}


def _overlap(a: set[str], b: set[str]) -> float:
    """Overlap coefficient ``|a ∩ b| / min(|a|, |b|)``."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def detect_conflicts(
    memories: Sequence[Recalled],
    *,
    max_confidence_gap: float = 0.1,
    min_topic_overlap: float = 0.45,
    max_same_overlap: float = 0.9,
) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` (0-based, ``i < j``) of memories that disagree with close confidence.

    The rule (seed §3.4, §5.2): same task type and kind; ``|Δconfidence| ≤
    max_confidence_gap``; the same topic — their content tokens (Chinese
    character bigrams, English word stems) overlap by at least
    ``min_topic_overlap`` (overlap coefficient ``|A∩B| / min(|A|, |B|)``); and
    different advice — not a restatement (token Jaccard below
    ``max_same_overlap``). On the 296 same-task-type pairs of complementary tips
    in ``benchmarks/data/recall_memories.jsonl`` the overlap is at most 0.31; on
    contradicting pairs ("prefers Java" / "prefers Python", two date ranges for
    the weekly report) it is 0.5-1.0, hence the default 0.45.

    Example:
        >>> a = MemoryUnit(task_type="weekly_report", confidence=0.8,
        ...                content="Weekly report covers the previous Monday to Sunday week.")
        >>> b = MemoryUnit(task_type="weekly_report", confidence=0.75,
        ...                content="Weekly report covers the last rolling seven days.")
        >>> detect_conflicts([a, b])
        [(0, 1)]
    """
    entries = [_entry(m) for m in memories]
    tokens = [_topic_tokens(e.content) for e in entries]
    pairs: list[tuple[int, int]] = []
    for i, a in enumerate(entries):
        for j in range(i + 1, len(entries)):
            b = entries[j]
            if (a.task_type, a.kind) != (b.task_type, b.kind) or abs(a.confidence - b.confidence) > max_confidence_gap:
                continue
            same_topic = _overlap(tokens[i], tokens[j]) >= min_topic_overlap
            union = tokens[i] | tokens[j]
            jaccard = len(tokens[i] & tokens[j]) / len(union) if union else 1.0
            if same_topic and jaccard < max_same_overlap:
                pairs.append((i, j))
    return pairs


def _groups(pairs: Sequence[tuple[int, int]]) -> list[list[int]]:
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for i, j in pairs:
        parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for x in sorted(parent):
        groups.setdefault(root(x), []).append(x)
    return sorted(groups.values())


def _templates(locale: Locale, templates: PromptTemplates | None) -> PromptTemplates:
    if templates is not None:
        if not isinstance(templates, PromptTemplates):
            raise ConfigurationError("templates must be a PromptTemplates")
        return templates
    return get_templates(locale)


def format_experiences(
    memories: Sequence[Recalled],
    *,
    locale: Locale = "zh",
    templates: PromptTemplates | None = None,
    max_lines: int = DEFAULT_MAX_LINES,
    max_line_chars: int = 300,
    notice: bool = True,
    conflicts: bool = True,
) -> str:
    """The ``[相关经验]`` block for recalled memories, or ``""`` when there are none.

    Args:
        memories: Best first (as :meth:`HindsightRetriever.recall` returns them).
        locale: ``"zh"`` (default, the seed's format) or ``"en"``.
        templates: Overrides the locale's strings.
        max_lines: At most this many memory lines (seed §3.3: 5-8), whatever ``k`` was.
        max_line_chars: Longer memory text is cut and ends with an ellipsis.
        notice: Close the block with the templates' ``data_notice`` (recalled
            text is data, not instructions).
        conflicts: Add the conflict note for disagreeing memories (:func:`detect_conflicts`).

    Example:
        >>> u = MemoryUnit(task_type="data_cleaning", confidence=0.85,
        ...                content="处理中文CSV时，pandas.read_csv需指定encoding='utf-8-sig'")
        >>> print(format_experiences([u], notice=False))
        [相关经验]
        1. 处理中文CSV时，pandas.read_csv需指定encoding='utf-8-sig'（置信度：0.85）
    """
    t = _templates(locale, templates)
    if isinstance(max_lines, bool) or not isinstance(max_lines, int) or max_lines < 1:
        raise ConfigurationError(f"max_lines must be a positive int, got {max_lines!r}")
    if isinstance(max_line_chars, bool) or not isinstance(max_line_chars, int) or max_line_chars < 20:
        raise ConfigurationError(f"max_line_chars must be an int >= 20, got {max_line_chars!r}")
    shown = list(memories)[:max_lines]
    if not shown:
        return ""
    entries = [_entry(m) for m in shown]
    lines = [t.block_header]
    for index, entry in enumerate(entries, 1):
        text = render_safe(entry.content)
        if len(text) > max_line_chars:
            text = text[: max_line_chars - len(t.line_ellipsis)].rstrip() + t.line_ellipsis
        lines.append(t.block_line.format(index=index, content=text, confidence=entry.confidence))
    if conflicts:
        for group in _groups(detect_conflicts(shown)):
            lines.append(t.conflict_note.format(indices=t.index_separator.join(str(i + 1) for i in group)))
    if notice and t.data_notice:
        lines.append(t.data_notice)
    return "\n".join(lines)


def build_task_prompt(
    task: str,
    memories: Sequence[Recalled],
    *,
    locale: Locale = "zh",
    templates: PromptTemplates | None = None,
    max_lines: int = DEFAULT_MAX_LINES,
    notice: bool = True,
) -> str:
    """The seed's task prompt: the block, ``[当前任务]``, the task, the closing instruction.

    With nothing recalled it is only ``[当前任务]`` and the task (the closing
    instruction refers to experience above, so it is left out).

    Example:
        >>> print(build_task_prompt("生成本周周报", []))
        [当前任务]
        生成本周周报
    """
    if not isinstance(task, str):
        raise ConfigurationError(f"task must be a string, got {type(task).__name__}")
    t = _templates(locale, templates)
    block = format_experiences(memories, templates=t, max_lines=max_lines, notice=notice)
    current = f"{t.task_header}\n{task.strip()}"
    if not block:
        return current
    return f"{block}\n\n{current}\n\n{t.task_instruction}"
