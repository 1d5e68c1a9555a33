"""Interim ``relation(a, b)`` for branch ``verdict`` only: helper "claims" owns this module and its real rules.

A word/character-bigram overlap: two statements sharing at least two content
words (or CJK bigrams) and not identical are taken as ``contradicts``. It exists
so the verdict code and tests run before the real module lands on ``main``; the
merge of ``main`` replaces this file with that module.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["Relation", "relation"]

Relation = Literal["same", "contradicts", "compatible", "unrelated", "unsure"]


def _grams(text: str) -> set[str]:
    cjk = re.findall(r"[\u4e00-\u9fff]+", text)
    grams = {run[i : i + 2] for run in cjk for i in range(len(run) - 1)}
    words = {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}
    return grams | words


def relation(a: str, b: str) -> Relation:
    """``same``, ``contradicts`` (two shared content words) or ``unrelated``.

    Example:
        >>> relation("周报只统计本周一到周日", "周报按最近7天滚动窗口统计销售额。")
        'contradicts'
    """
    if a.strip() == b.strip():
        return "same"
    return "contradicts" if len(_grams(a) & _grams(b)) >= 2 else "unrelated"
