"""The ``[相关经验]`` block and the task prompt (plain text, in the user turn).

The block is plain text: one line per memory, Markdown flattened and anything
that imitates our prompt structure neutralised (``_safety.render_safe``), at most
``max_lines`` memory lines whatever ``k`` the caller recalled, each memory's text at
most ``max_line_chars`` characters (a cut line says so and names the command that
shows the whole memory) and, with ``max_block_chars``, the whole block at most that
many characters (trailing lines are left out first); nothing recalled means no
block at all. When two shown memories prescribe different things for
the same subject (whatever their confidences), both stay and a conflict note
tells the model to judge; advice for different cases ("< 10k
rows" / "> 10k rows") is not a conflict. Every string comes from
:mod:`langchain_hindsight.prompts`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from langchain_core.documents import Document

from langchain_hindsight._safety import render_safe
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.prompts import Locale, PromptTemplates, get_templates
from langchain_hindsight.recall._block import (
    DEFAULT_MAX_LINE_CHARS,
    MIN_BLOCK_CHARS,
    MIN_LINE_CHARS,
    check_block_size,
    fit_block,
    memory_line,
)
from langchain_hindsight.store._lexical import tokenize
from langchain_hindsight.types import MemoryUnit, ScoredMemory

__all__ = [
    "DEFAULT_MAX_LINES",
    "DEFAULT_MAX_LINE_CHARS",
    "MIN_BLOCK_CHARS",
    "MIN_LINE_CHARS",
    "Recalled",
    "build_task_prompt",
    "check_block_size",
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


def _entry(item: Recalled) -> _Entry:
    if isinstance(item, ScoredMemory):
        item = item.memory
    if isinstance(item, MemoryUnit):
        return _Entry(item.content, item.score_confidence, item.task_type, item.kind, item.namespace, item.memory_id)
    if isinstance(item, Document):
        meta = item.metadata
        confidence = meta.get("confidence")
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            raise ConfigurationError("a Document given to format_experiences needs a numeric metadata['confidence']")
        memory_id = meta.get("memory_id", item.id)
        return _Entry(
            item.page_content,
            float(confidence),
            str(meta.get("task_type", "")),
            str(meta.get("kind", "experience")),
            memory_id=memory_id if isinstance(memory_id, str) and memory_id else None,
        )
    raise ConfigurationError(f"expected ScoredMemory, MemoryUnit or Document, got {type(item).__name__}")


def _topic_tokens(text: str) -> set[str]:
    """Content tokens without single CJK characters (too common to signal a topic).

    Literals such as ``YYYY-MM-DD``, ``utf-8`` or ``UTC+8`` also count whole, so two
    formats made of the same pieces still differ.
    """
    tokens = {t for t in tokenize(text) if not (len(t) == 1 and not t.isascii())}
    tokens.update(m.group().lower() for m in _LITERAL.finditer(text))
    return tokens


_LITERAL = re.compile(r"[A-Za-z0-9]+(?:[-/+:][A-Za-z0-9]+)+")


def _overlap(a: set[str], b: set[str]) -> float:
    """Overlap coefficient ``|a ∩ b| / min(|a|, |b|)``."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


# ---------------------------------------------------------------- conflict rules (data, not scattered ifs)
_CLAUSE_END = r"[,;:，；：。]"
_NUMBER = r"[\d一二两三四五六七八九十百千万亿][\d.,一二两三四五六七八九十百千万亿]*"
_CONDITION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # a leading clause that scopes the advice: "If …,", "When …,", "For weekdays,", "On Windows,"
        r"^\s*(?:if|when|whenever|unless|once|for|on|in|under|over|after|before|while)\b[^,;:，；：。]{1,80}[,;:，；：]",
        # an inline clause: "… when the API returns 429", "… for files under 10k rows"
        r"\b(?:if|when|whenever|unless|for)\b[^,;:，；：。]{1,60}",
        # 如果… / 当… / 对于… / 遇到… at the start of the sentence or after a clause break
        r"(?:^|(?<=[，,；;。]))\s*(?:如果|若|假如|要是|当|对于|针对|遇到)[^，,；;。]{1,30}",
        # "…时" / "…的时候" clauses (not 小时, 同时, 实时, 超时, 时间 …)
        r"(?:^|(?<=[，,；;。]))[^，,；;。]{1,30}?(?<![小同及实按准临定适历超])(?:的时候|时)(?![间区刻长段效])",
    )
)
"""Spans that say *when* a piece of advice applies; two memories whose spans differ are complementary."""

_COMPARISON_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"\b(?:under|over|above|below|less than|more than|fewer than|greater than|at least|at most|up to|"
        rf"larger than|smaller than|bigger than|older than|newer than|exceeding|beyond|within)\s+"
        rf"(?:the\s+)?(?:last\s+|past\s+)?{_NUMBER}\s*[a-z%]*",
        rf"(?:少于|小于|低于|不足|不到|超过|大于|高于|多于|不少于|不超过|至少|最多|以内)\s*{_NUMBER}\s*[^\s，,。；;\d]{{0,3}}",
        rf"{_NUMBER}\s*[^\s，,。；;\d]{{0,3}}?(?:以上|以下|以内|之内|以前|之前|以后|之后|以外)",
    )
)
"""Thresholds ("under 10k rows", "超过1万行", "7天以前"): a threshold on one side only still scopes that advice."""

_NEGATION = re.compile(
    r"\b(?:not|never|don'?t|doesn'?t|avoid|no longer|instead of)\b"
    r"|不要|不需要|不用|不能|不可|不必|无需|别|禁止|避免|切勿|勿",
    re.IGNORECASE,
)
"""Markers that turn a prescription around ("do X" vs "never do X")."""

_PREFIX_PARTICLES = frozenset("的了地得之")
_PREFIX_MIN = 3.0
"""Two memories that open with the same 3 words (or 4 Chinese characters) talk about the same subject."""
_EARLY_DIVERGENCE = 0.25
"""Two memories that part ways within their first quarter name different subjects
("客户甲公司…" / "客户乙公司…", "Amounts keep…" / "Percentages keep…")."""


class _Claim:
    """One memory as the conflict rule sees it.

    The topic and opening are always needed; when it applies and what it
    prescribes are computed only for pairs on the same subject.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.topic = frozenset(_topic_tokens(text))
        self.sequence = _sequence(text)

    @cached_property
    def _split(self) -> tuple[frozenset[str], bool, frozenset[str], bool]:
        text = self.text
        spans: list[tuple[int, int]] = []
        for pattern in (*_CONDITION_PATTERNS, *_COMPARISON_PATTERNS):
            spans.extend(m.span() for m in pattern.finditer(text) if m.end() > m.start())
        has_threshold = any(p.search(text) for p in _COMPARISON_PATTERNS)
        conditions: list[str] = []
        advice: list[str] = []
        position = 0
        for start, end in sorted(spans):
            if end <= position:
                continue
            start = max(start, position)
            advice.append(text[position:start])
            conditions.append(text[start:end])
            position = end
        advice.append(text[position:])
        condition_text, advice_text = " ".join(conditions), " ".join(advice)
        return (
            frozenset(_topic_tokens(condition_text)),
            has_threshold,
            frozenset(_topic_tokens(advice_text)),
            bool(_NEGATION.search(advice_text)),
        )

    @property
    def conditions(self) -> frozenset[str]:
        """Tokens of the spans that say when the advice applies."""
        return self._split[0]

    @property
    def has_threshold(self) -> bool:
        """Whether a threshold ("under 10k rows") limits the advice."""
        return self._split[1]

    @property
    def advice(self) -> frozenset[str]:
        """Tokens of what it prescribes (the text outside the condition spans)."""
        return self._split[2]

    @property
    def negated(self) -> bool:
        """Whether the prescription is negated ("never", "不要")."""
        return self._split[3]


def _sequence(text: str) -> tuple[str, ...]:
    """Ordered content units: English word stems and single Chinese characters (particles dropped)."""
    out: list[str] = []
    for token in _SEQUENCE_RE.findall(text.lower()):
        if token.isascii():
            out.extend(tokenize(token))
        else:
            out.extend(c for c in token if c not in _PREFIX_PARTICLES)
    return tuple(out)


_SEQUENCE_RE = re.compile(r"[a-z0-9_]+(?:[.'-][a-z0-9_]+)*|[\u3400-\u4dbf\u4e00-\u9fff]+")


def _shared_opening(a: Sequence[str], b: Sequence[str]) -> tuple[int, float]:
    """The common opening: its length in units, and in words (a Chinese character counts 3/4 of a word)."""
    count, words = 0, 0.0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
        words += 1.0 if x.isascii() else 0.75
    return count, words


def _conflict(a: _Claim, b: _Claim, *, min_topic_overlap: float, max_same_overlap: float) -> bool:
    """The rule of :func:`detect_conflicts` for one pair."""
    opening, opening_words = _shared_opening(a.sequence, b.sequence)
    same_subject = _overlap(set(a.topic), set(b.topic)) >= min_topic_overlap or opening_words >= _PREFIX_MIN
    if not same_subject:
        return False
    # complementary: the two apply in different cases ("< 10k rows" / "> 10k rows", "Windows" / "macOS")
    if a.conditions != b.conditions and ((a.conditions and b.conditions) or a.has_threshold != b.has_threshold):
        return False
    if a.negated != b.negated:
        return True  # "do X" against "never do X"
    shorter = min(len(a.sequence), len(b.sequence))
    if shorter and opening < shorter and opening / shorter < _EARLY_DIVERGENCE:
        return False  # different subjects with similar advice
    union = a.topic | b.topic
    if union and len(a.topic & b.topic) / len(union) >= max_same_overlap:
        return False  # a restatement
    return bool(a.advice - b.topic) and bool(b.advice - a.topic)  # each prescribes something the other does not


def detect_conflicts(
    memories: Sequence[Recalled],
    *,
    max_confidence_gap: float | None = None,
    min_topic_overlap: float = 0.45,
    max_same_overlap: float = 0.9,
) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` (0-based, ``i < j``) of memories that prescribe different things for the same subject.

    The rule, whatever the memories' confidences and task types:

    * **same subject** — their content tokens (Chinese character bigrams, English
      word stems) overlap by at least ``min_topic_overlap`` (overlap coefficient
      ``|A∩B| / min(|A|, |B|)``), or they open with the same three words / four
      Chinese characters ("Weekly report covers …", "周报发给…");
    * **not complementary** — advice scoped to different cases is not a conflict:
      both have a condition ("when …", "for …", "如果…", "…时") and the conditions
      differ, or only one is limited by a threshold ("under 10k rows", "超过1万行");
    * **different prescription** — one negates what the other prescribes ("不要用
      滚动窗口" / "用滚动窗口"), or each says something the other does not (a
      restatement, token Jaccard ≥ ``max_same_overlap``, or an elaboration that only
      adds to the other, is not a conflict).

    Two additive tips that share a long opening and differ only in what they add
    ("读取CSV时指定dtype…" / "读取CSV时指定parse_dates…") are told apart only when a
    condition separates them; the note then asks the model to judge, which is harmless.

    Args:
        memories: The served memories.
        max_confidence_gap: ``None`` (default) ignores confidence; a number keeps
            only pairs whose confidences differ by at most that much.
        min_topic_overlap: See the same-subject rule.
        max_same_overlap: Token Jaccard at or above which two memories restate each other.

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
    claims = [_Claim(e.content) for e in entries]
    pairs: list[tuple[int, int]] = []
    for i in range(len(entries)):
        for j in range(i + 1, len(entries)):
            if (
                max_confidence_gap is not None
                and abs(entries[i].confidence - entries[j].confidence) > max_confidence_gap
            ):
                continue
            if _conflict(claims[i], claims[j], min_topic_overlap=min_topic_overlap, max_same_overlap=max_same_overlap):
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

    first = render_safe(entries[0].content)
    return fit_block(render, len(shown), max_line_chars=max_line_chars, max_block_chars=max_block_chars, first=first)


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
