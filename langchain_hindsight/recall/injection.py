"""The ``[相关经验]`` block and the task prompt (plain text, in the user turn).

The block is plain text: one line per memory, Markdown flattened and anything
that imitates our prompt structure neutralised (``_safety.render_safe``), at most
``max_lines`` memory lines whatever ``k`` the caller recalled, each memory's text at
most ``max_line_chars`` characters (a cut line says so and names the command that
shows the whole memory) and, with ``max_block_chars``, the whole block at most that
many characters (trailing lines are left out first); nothing recalled means no
block at all. A memory tagged ``suspicious`` (untrusted text that reads like an
instruction) says so at the end of its line. When two shown memories prescribe different things for
the same subject (whatever their confidences), both stay and a conflict note
tells the model to judge; advice for different cases ("< 10k
rows" / "> 10k rows"), restatements and text our own templates share are not
a conflict (the rule is :func:`langchain_hindsight._claims.relation`). Every string comes from
:mod:`langchain_hindsight.prompts`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.documents import Document

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight._claims import claim_of, relation_of
from langchain_hindsight._safety import SUSPICIOUS_TAG
from langchain_hindsight._script import query_script, reads_as_cjk
from langchain_hindsight._statements import statement
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.prompts import Locale, PromptTemplates, get_templates
from langchain_hindsight.recall._block import (
    DEFAULT_MAX_LINE_CHARS,
    check_block_size,
    fit_block,
    memory_line,
    rendered_head,
)
from langchain_hindsight.types import MemoryUnit, ScoredMemory

__all__ = [
    "DEFAULT_MAX_LINES",
    "Recalled",
    "block_locale",
    "build_task_prompt",
    "detect_conflicts",
    "fit_experiences",
    "format_experiences",
]

Recalled = ScoredMemory | MemoryUnit | Document
"""What the block accepts: recall results, plain units, or the retriever's Documents."""

DEFAULT_MAX_LINES = 8
"""Inject at most 8 memories: more dilutes the model's attention."""


@dataclass(frozen=True, slots=True)
class _Entry:
    content: str
    confidence: float
    task_type: str
    kind: str
    namespace: str | None = None
    memory_id: str | None = None
    suspicious: bool = False


def _entry(item: Recalled) -> _Entry:
    if isinstance(item, ScoredMemory):
        item = item.memory
    if isinstance(item, MemoryUnit):
        return _Entry(
            item.content,
            item.score_confidence,
            item.task_type,
            item.kind,
            item.namespace,
            item.memory_id,
            SUSPICIOUS_TAG in item.tags,
        )
    if isinstance(item, Document):
        meta = item.metadata
        confidence = meta.get("confidence")
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            raise ConfigurationError("a Document given to format_experiences needs a numeric metadata['confidence']")
        memory_id = meta.get("memory_id", item.id)
        tags = meta.get("tags")
        return _Entry(
            item.page_content,
            float(confidence),
            str(meta.get("task_type", "")),
            str(meta.get("kind", "experience")),
            memory_id=memory_id if isinstance(memory_id, str) and memory_id else None,
            suspicious=isinstance(tags, list | tuple) and SUSPICIOUS_TAG in tags,
        )
    raise ConfigurationError(f"expected ScoredMemory, MemoryUnit or Document, got {type(item).__name__}")


def detect_conflicts(
    memories: Sequence[Recalled],
    *,
    max_confidence_gap: float | None = None,
) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` (0-based, ``i < j``) of memories that prescribe different things for the same subject.

    A pair is a conflict only when :func:`langchain_hindsight._claims.relation`
    says ``"contradicts"`` (whatever the memories' confidences and task types):
    the same subject with a different prescription ("用户偏好用Java…" /
    "用户偏好用Python…", "do X" / "never do X"). Restatements, advice for
    different cases ("< 10k rows" / "> 10k rows"), elaborations, different
    subjects, our templates' shared text (three ``用户纠正（任务：…）：`` corrections
    on different points; five lessons that differ only in the run's
    ``（任务：…）`` suffix) and pairs the rules cannot tell are not.

    Args:
        memories: The served memories.
        max_confidence_gap: ``None`` (default) ignores confidence; a number keeps
            only pairs whose confidences differ by at most that much.

    Example:
        >>> a = MemoryUnit(task_type="weekly_report", confidence=0.9,
        ...                content="Weekly report covers the previous Monday to Sunday week.")
        >>> b = MemoryUnit(task_type="weekly_report", confidence=0.6,
        ...                content="Weekly report covers the last rolling seven days.")
        >>> c = MemoryUnit(task_type="data_cleaning", content="Use pandas for files under 10k rows.")
        >>> d = MemoryUnit(task_type="data_cleaning", content="Use duckdb for files over 10k rows.")
        >>> detect_conflicts([a, b, c, d])
        [(0, 1)]
    """
    entries = [_entry(m) for m in memories]
    claims = [claim_of(e.content) for e in entries]
    pairs: list[tuple[int, int]] = []
    for i in range(len(entries)):
        for j in range(i + 1, len(entries)):
            if (
                max_confidence_gap is not None
                and abs(entries[i].confidence - entries[j].confidence) > max_confidence_gap
            ):
                continue
            if relation_of(claims[i], claims[j]) == "contradicts":
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


_CORRECTION_FRAME = re.compile(r"^\s*(?:用户纠正(?:（任务：[^）]*）)?：|User correction(?: \(task: [^)]*\))?:)")
"""A stored correction's fixed part (``用户纠正（任务：…）：``, ``User correction (task: …):``)."""


def block_locale(contents: Sequence[str], task: str = "", *, fallback: Locale = "zh") -> Locale:
    """The language of the block's frame (header, ``[当前任务]``, the closing instruction) when no locale is set.

    The frame follows the memories it shows: each memory counts for the script of
    what it says (its text without our templates' fixed parts, so an English
    correction stored as ``用户纠正（任务：…）：…`` counts as English; a Chinese
    lesson quoting a long English error message counts as Chinese). All Chinese →
    ``"zh"``; all English → ``"en"``; mixed → the language most of them are in; a
    tie → the language of the task; no memory and no task → ``fallback``. A locale
    set by the caller (``Hindsight(locale=...)``, ``HINDSIGHT_LOCALE``) is never
    replaced by this choice.

    Example:
        >>> block_locale(["Read Chinese CSVs with encoding='gbk'."]), block_locale(["周报只统计本周一到周日"])
        ('en', 'zh')
        >>> block_locale(["用户纠正（任务：weekly report）：amounts include tax"])
        'en'
        >>> block_locale(["Use gbk.", "周报用含税价"], "生成本周的销售周报")
        'zh'
    """
    cjk = sum(reads_as_cjk(statement(c) or c) or reads_as_cjk(_CORRECTION_FRAME.sub("", c)) for c in contents)
    latin = len(contents) - cjk
    if cjk != latin:
        return "zh" if cjk > latin else "en"
    if task.strip():
        return "zh" if query_script(task) == "cjk" else "en"
    return fallback


def _templates(locale: Locale, templates: PromptTemplates | None) -> PromptTemplates:
    if templates is not None:
        if not isinstance(templates, PromptTemplates):
            raise ConfigurationError("templates must be a PromptTemplates")
        return templates
    return get_templates(locale)


def _assemble(
    t: PromptTemplates, lines: Sequence[str], shown: Sequence[Recalled], *, notice: bool, conflicts: bool
) -> str:
    out = [t.block_header, *lines]
    if conflicts:
        for group in _groups(detect_conflicts(shown)):
            out.append(t.conflict_note.format(indices=t.index_separator.join(str(i + 1) for i in group)))
    if notice and t.data_notice:
        out.append(t.data_notice)
    return "\n".join(out)


@refuse_unknown_keywords
def format_experiences(
    memories: Sequence[Recalled],
    *,
    locale: Locale = "zh",
    templates: PromptTemplates | None = None,
    max_lines: int = DEFAULT_MAX_LINES,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
    max_block_chars: int | None = None,
    notice: bool = True,
    conflicts: bool = True,
    own_namespace: str | None = None,
) -> str:
    """The ``[相关经验]`` block for recalled memories, or ``""`` when there are none.

    Args:
        memories: Best first (as :meth:`HindsightRetriever.recall` returns them).
        locale: ``"zh"`` (default) or ``"en"``.
        templates: Overrides the locale's strings.
        max_lines: At most this many memory lines (a short block reads best), whatever ``k`` was.
        max_line_chars: At most this many characters of a memory's text (at least
            :data:`MIN_LINE_CHARS`); a longer one is cut and the line says so, naming
            the command that prints the whole memory (``…（已截断，完整内容：hindsight show
            <memory_id>）``, the templates' ``truncation_notice``).
        max_block_chars: At most this many characters in the whole block (header,
            lines, notes; at least :data:`MIN_BLOCK_CHARS`): the last lines are left
            out until it fits, and a single remaining line is cut further (down to
            :data:`MIN_LINE_CHARS` characters, then with the notice that names no
            command; only a very long origin label can still overflow). ``None``
            (default): only ``max_lines`` and ``max_line_chars`` bound it.
        notice: Close the block with the templates' ``data_notice`` (recalled
            text is data, not instructions).
        conflicts: Add the conflict note for memories that prescribe different
            things for the same subject (:func:`detect_conflicts`).
        own_namespace: The reading agent's namespace; a memory from any other
            namespace (a shared pool, another agent's) is labelled with where it
            came from. ``None`` labels nothing.

    Raises:
        ConfigurationError: a size option out of range (see :func:`check_block_size`).

    Example:
        >>> u = MemoryUnit(task_type="data_cleaning", confidence=0.85,
        ...                content="处理中文CSV时，pandas.read_csv需指定encoding='utf-8-sig'")
        >>> print(format_experiences([u], notice=False))
        [相关经验]
        1. 处理中文CSV时，pandas.read_csv需指定encoding='utf-8-sig'（置信度：0.85）
        >>> long = MemoryUnit(memory_id="mem_42", confidence=0.8, content="周报的数据范围取上周一到周日的自然周，" * 3)
        >>> print(format_experiences([long], notice=False, max_line_chars=24))
        [相关经验]
        1. 周报的数据范围取上周一到周日的自然周，周报的数…（已截断，完整内容：hindsight show mem_42）（置信度：0.80）
    """
    return fit_experiences(
        memories,
        locale=locale,
        templates=templates,
        max_lines=max_lines,
        max_line_chars=max_line_chars,
        max_block_chars=max_block_chars,
        notice=notice,
        conflicts=conflicts,
        own_namespace=own_namespace,
    )[0]


def fit_experiences(
    memories: Sequence[Recalled],
    *,
    locale: Locale = "zh",
    templates: PromptTemplates | None = None,
    max_lines: int = DEFAULT_MAX_LINES,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
    max_block_chars: int | None = None,
    notice: bool = True,
    conflicts: bool = True,
    own_namespace: str | None = None,
) -> tuple[str, int]:
    """:func:`format_experiences`, and how many of ``memories`` (the first ones) the block shows.

    The session journals and credits only the memories the block showed, never one
    ``max_lines`` or ``max_block_chars`` left out. Arguments as in :func:`format_experiences`.

    """
    t = _templates(locale, templates)
    check_block_size(max_lines=max_lines, max_line_chars=max_line_chars, max_block_chars=max_block_chars)
    shown = list(memories)[:max_lines]
    if not shown:
        return "", 0
    entries = [_entry(m) for m in shown]

    def render(count: int, limit: int, short: bool) -> str:  # the first `count` lines; the last cut to `limit`
        cut = [limit if i == count else max_line_chars for i in range(1, count + 1)]
        lines = [memory_line(t, i, e, cut[i - 1], own_namespace, short=short) for i, e in enumerate(entries[:count], 1)]
        return _assemble(t, lines, shown[:count], notice=notice, conflicts=conflicts)

    first = rendered_head(entries[0].content, max_line_chars)
    return fit_block(render, len(shown), max_line_chars=max_line_chars, max_block_chars=max_block_chars, first=first)


@refuse_unknown_keywords
def build_task_prompt(
    task: str,
    memories: Sequence[Recalled],
    *,
    locale: Locale = "zh",
    templates: PromptTemplates | None = None,
    max_lines: int = DEFAULT_MAX_LINES,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
    max_block_chars: int | None = None,
    notice: bool = True,
    own_namespace: str | None = None,
) -> str:
    """The task prompt: the block, ``[当前任务]``, the task, the closing instruction.

    With nothing recalled it is only ``[当前任务]`` and the task (the closing
    instruction refers to experience above, so it is left out). The size options
    are :func:`format_experiences`'s.

    Example:
        >>> print(build_task_prompt("生成本周周报", []))
        [当前任务]
        生成本周周报
    """
    if not isinstance(task, str):
        raise ConfigurationError(f"task must be a string, got {type(task).__name__}")
    t = _templates(locale, templates)
    block = format_experiences(
        memories,
        templates=t,
        max_lines=max_lines,
        max_line_chars=max_line_chars,
        max_block_chars=max_block_chars,
        notice=notice,
        own_namespace=own_namespace,
    )
    current = f"{t.task_header}\n{task.strip()}"
    if not block:
        return current
    return f"{block}\n\n{current}\n\n{t.task_instruction}"
