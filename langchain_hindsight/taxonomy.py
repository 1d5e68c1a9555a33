"""The task-type vocabulary (seed pitfall 3: one spelling per task type).

Free-form labels from an LLM or a caller (``"data-clean"``, ``"清洗数据"``,
``"Data Cleaning"``) are folded onto one canonical label so that task-type
matching in recall works. Labels that match nothing map to
:data:`FALLBACK_TASK_TYPE` (``"general"``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from langchain_hindsight.errors import ConfigurationError

__all__ = [
    "DEFAULT_TASK_TYPES",
    "FALLBACK_TASK_TYPE",
    "TaskTypeVocabulary",
    "normalize_task_type",
]

FALLBACK_TASK_TYPE = "general"
"""The label every unknown task type maps to."""

DEFAULT_TASK_TYPES: Mapping[str, tuple[str, ...]] = {
    "data_cleaning": ("data clean", "clean data", "cleaning", "数据清洗", "清洗数据", "清洗", "数据清理"),
    "data_analysis": ("analysis", "analyze data", "analyse data", "data analytics", "数据分析", "分析数据"),
    "weekly_report": ("weekly", "week report", "weekly summary", "周报", "生成周报", "写周报"),
    "monthly_report": ("monthly", "month report", "monthly summary", "月报", "生成月报", "写月报"),
    "code_generation": ("coding", "code gen", "codegen", "write code", "programming", "代码生成", "写代码", "编程"),
    "api_call": ("api", "http request", "rest call", "接口调用", "调用接口", "api调用"),
    "web_search": ("search", "web lookup", "internet search", "网页搜索", "搜索", "网络搜索"),
    "file_operation": ("file", "file ops", "file io", "file handling", "文件操作", "文件处理"),
    "database_query": ("sql", "db query", "query database", "数据库查询", "sql查询"),
    "document_writing": ("writing", "write document", "documentation", "文档撰写", "写文档"),
    "translation": ("translate", "翻译"),
    "summarization": ("summary", "summarize", "summarise", "总结", "摘要"),
    "scheduling": ("calendar", "meeting", "日程", "安排会议"),
    "customer_support": ("support", "customer service", "客服", "客户支持"),
    FALLBACK_TASK_TYPE: ("other", "unknown", "misc", "通用", "其他"),
}
"""Canonical task types and their accepted spellings. Extend with
:class:`TaskTypeVocabulary` rather than editing this mapping."""

_LABEL_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_SEPARATORS = re.compile(r"[\s\-./:]+")


def _fold(label: str) -> str:
    """Lower-case, trim and turn separators into underscores."""
    return _SEPARATORS.sub("_", label.strip().lower()).strip("_")


class TaskTypeVocabulary:
    """A closed set of task-type labels with aliases.

    Args:
        task_types: Canonical label → aliases. Defaults to :data:`DEFAULT_TASK_TYPES`.
        fallback: The label unknown inputs map to; added to the vocabulary if missing.

    Example:
        >>> vocab = TaskTypeVocabulary()
        >>> vocab.normalize("data-clean"), vocab.normalize("清洗数据"), vocab.normalize("??")
        ('data_cleaning', 'data_cleaning', 'general')
    """

    def __init__(
        self,
        task_types: Mapping[str, Iterable[str]] | None = None,
        *,
        fallback: str = FALLBACK_TASK_TYPE,
    ) -> None:
        source = DEFAULT_TASK_TYPES if task_types is None else task_types
        if not isinstance(source, Mapping) or not source:
            raise ConfigurationError("task_types must be a non-empty mapping of label -> aliases")
        canonical: dict[str, str] = {}
        for label, aliases in source.items():
            if not isinstance(label, str) or not _LABEL_RE.match(label):
                raise ConfigurationError(f"task type label {label!r} must be lower_snake_case ASCII, 1-64 characters")
            if isinstance(aliases, str):
                raise ConfigurationError(f"aliases of {label!r} must be a list of strings, not a string")
            canonical[label] = label
            for alias in aliases:
                if not isinstance(alias, str) or not alias.strip():
                    raise ConfigurationError(f"alias {alias!r} of {label!r} must be a non-empty string")
                canonical[_fold(alias)] = label
        if not isinstance(fallback, str) or not _LABEL_RE.match(fallback):
            raise ConfigurationError(f"fallback {fallback!r} must be lower_snake_case ASCII")
        canonical.setdefault(fallback, fallback)
        self._lookup = canonical
        self._labels = tuple(dict.fromkeys([*source.keys(), fallback]))
        self.fallback = fallback

    @property
    def labels(self) -> tuple[str, ...]:
        """The canonical labels, in definition order."""
        return self._labels

    def __contains__(self, label: object) -> bool:
        return isinstance(label, str) and label in self._labels

    def normalize(self, label: str | None) -> str:
        """Map a free-form label onto the vocabulary.

        Exact labels and aliases match after case-folding and separator folding;
        otherwise a label that starts or ends with a known one (``data_cleaning_v2``)
        or contains a Chinese alias (``帮我清洗数据``) matches; else the fallback.
        """
        if label is None:
            return self.fallback
        if not isinstance(label, str):
            raise ConfigurationError(f"task_type must be a string, got {type(label).__name__}")
        folded = _fold(label)
        if not folded:
            return self.fallback
        hit = self._lookup.get(folded)
        if hit is not None:
            return hit
        # Longest alias first so "weekly_report_draft" does not match a shorter alias.
        for alias in sorted(self._lookup, key=len, reverse=True):
            if len(alias) < 2:
                continue
            if folded.startswith(alias + "_") or folded.endswith("_" + alias):
                return self._lookup[alias]
            if not alias.isascii() and alias in folded:
                return self._lookup[alias]
        return self.fallback


_DEFAULT_VOCABULARY = TaskTypeVocabulary()


def normalize_task_type(label: str | None, vocabulary: TaskTypeVocabulary | None = None) -> str:
    """Normalise ``label`` with ``vocabulary`` (the default vocabulary when ``None``)."""
    return (vocabulary or _DEFAULT_VOCABULARY).normalize(label)
