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

import re
import unicodedata
from collections.abc import Sequence

from langchain_hindsight._diff import TOKEN_PATTERN, changes

__all__ = ["ADDED", "REMOVED", "word_diff", "wrap"]

REMOVED = ("[-", "-]")
"""How removed words are marked (as ``git diff --word-diff``)."""
ADDED = ("{+", "+}")
"""How added words are marked."""


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
    marks = {"removed": REMOVED, "added": ADDED}
    return "".join(
        text if kind == "equal" else f"{marks[kind][0]}{text}{marks[kind][1]}" for kind, text in changes(old, new)
    )


_WRAP_TOKEN = re.compile(r"\[-|-\]|\{\+|\+\}|" + TOKEN_PATTERN)
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
