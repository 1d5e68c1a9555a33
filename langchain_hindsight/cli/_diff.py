"""What changed between two versions of a memory: a word-level diff, wrapped to the terminal, never cut.

``hindsight history`` shows each version of a supersede chain whole, and for every
newer version what changed against the one it replaced, in ``git diff --word-diff``'s
notation: ``[-removed-]`` and ``{+added+}``. Words are Latin words, numbers and
identifiers (``pandas.read_csv``, ``utf-8-sig``) as one token each; Chinese (and
Japanese, Korean) has no spaces, so each CJK character is a token of its own and
neighbouring changed characters are shown as one change (``周[-日-]{+五+}``, not a
change per character). Lines are wrapped at the terminal's width, counted in columns
(a CJK character takes two); nothing is ever cut or elided.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence

__all__ = ["ADDED", "REMOVED", "tokens", "word_diff", "wrap"]

REMOVED = ("[-", "-]")
"""How removed words are marked (as ``git diff --word-diff``)."""
ADDED = ("{+", "+}")
"""How added words are marked."""

_TOKEN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"  # one CJK character
    r"|[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+(?:[.\-'_/:][^\W_]+)*"  # a word
    r"|\s+"  # a run of spaces
    r"|[^\w\s]",  # one punctuation mark
)


def tokens(text: str) -> list[str]:
    """``text`` as diff tokens; joined again they give back ``text`` exactly.

    Example:
        >>> tokens("用户偏好使用Java编写后端")
        ['用', '户', '偏', '好', '使', '用', 'Java', '编', '写', '后', '端']
        >>> tokens("Use pandas.read_csv(encoding='utf-8-sig')")[:3]
        ['Use', ' ', 'pandas.read_csv']
    """
    return _TOKEN.findall(text)


def word_diff(old: str, new: str) -> str:
    """``new`` with what changed from ``old`` marked: ``[-removed-]`` and ``{+added+}``.

    Example:
        >>> word_diff("用户偏好使用Java编写后端代码", "用户偏好使用Python编写后端代码")
        '用户偏好使用[-Java-]{+Python+}编写后端代码'
        >>> word_diff("Send the weekly report to Li", "Send the weekly report to Zhang as a PDF")
        'Send the weekly report to [-Li-]{+Zhang as a PDF+}'
        >>> word_diff("周报只统计本周一到周日", "周报统计本周一到周五")
        '周报[-只-]统计本周一到周[-日-]{+五+}'
    """
    a, b = tokens(old), tokens(new)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append("".join(a[i1:i2]))
            continue
        if i2 > i1:
            out.append(f"{REMOVED[0]}{''.join(a[i1:i2])}{REMOVED[1]}")
        if j2 > j1:
            out.append(f"{ADDED[0]}{''.join(b[j1:j2])}{ADDED[1]}")
    return "".join(out)


_WRAP_TOKEN = re.compile(r"\[-|-\]|\{\+|\+\}|" + _TOKEN.pattern)
"""Diff tokens, with the change markers kept whole (a line never breaks inside ``[-`` or ``+}``)."""


def _cols(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def wrap(text: str, width: int, indent: str = "  ") -> list[str]:
    """``text`` as lines of at most ``width`` columns (with ``indent``), breaking between words or CJK characters.

    A Latin word longer than a line is broken inside (never cut); spaces at a break are dropped,
    nothing else is. Newlines in ``text`` start new lines.

    Example:
        >>> wrap("用户偏好使用Python编写后端代码", 16)
        ['  用户偏好使用', '  Python编写后端', '  代码']
    """
    room = max(width - _cols(indent), 8)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line, used = "", 0
        for token in _WRAP_TOKEN.findall(paragraph):
            if token.isspace():
                if line:
                    line, used = line + token, used + _cols(token)
                continue
            pieces: Sequence[str] = [token] if _cols(token) <= room else list(token)
            for piece in pieces:
                w = _cols(piece)
                if used + w > room and line.strip():
                    lines.append(indent + line.rstrip())
                    line, used = "", 0
                line, used = line + piece, used + w
        lines.append(indent + line.rstrip())
    return lines
