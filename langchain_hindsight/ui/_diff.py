"""A word-level diff between two versions of a memory, CJK-aware (each Han character is a word).

Latin words, numbers and punctuation runs are tokens of their own; Chinese,
Japanese and Korean text has no spaces, so each ideograph is one token. The
result is HTML with ``<del>`` and ``<ins>`` around what changed (escaped).
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from markupsafe import Markup, escape

__all__ = ["tokens", "word_diff"]

_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]|[^\W_]+|\s+|[^\w\s]+|_+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """The diff's tokens of ``text`` (joined, they give ``text`` back).

    Example:
        >>> tokens("周报 uses ISO-8601")
        ['周', '报', ' ', 'uses', ' ', 'ISO', '-', '8601']
    """
    return _TOKEN.findall(text)


def word_diff(old: str, new: str) -> Markup:
    """``new`` with the tokens removed from ``old`` in ``<del>`` and the added ones in ``<ins>``.

    Example:
        >>> str(word_diff("按月统计", "按周统计"))
        '按<del>月</del><ins>周</ins>统计'
    """
    a, b = tokens(old), tokens(new)
    out: list[str] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(str(escape("".join(a[i1:i2]))))
            continue
        if i2 > i1:
            out.append(f"<del>{escape(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{escape(''.join(b[j1:j2]))}</ins>")
    return Markup("".join(out))
