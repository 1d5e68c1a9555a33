"""What changed between two texts, word by word: the one diff ``hindsight history`` and the console draw.

Latin words, numbers and identifiers (``pandas.read_csv``, ``utf-8-sig``) are one token
each; Chinese (and Japanese, Korean) has no spaces, so each CJK character is a token of
its own, and neighbouring changed characters come out as one change. Each front end
marks the changes its own way (the CLI as ``[-removed-]{+added+}``, the console as
``<del>``/``<ins>``).
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

__all__ = ["TOKEN_PATTERN", "Change", "changes", "tokens"]

TOKEN_PATTERN = (
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"  # one CJK character
    r"|[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+(?:[.\-'_/:][^\W_]+)*"  # a word
    r"|\s+"  # a run of spaces
    r"|[^\w\s]"  # one punctuation mark
)
"""One diff token (a CJK character, a word or identifier, a run of spaces, a punctuation mark)."""
_TOKEN = re.compile(TOKEN_PATTERN)

Change = tuple[Literal["equal", "removed", "added"], str]
"""One run of the diff: its kind and its text."""


def tokens(text: str) -> list[str]:
    """``text`` as diff tokens; joined again they give back ``text`` exactly.

    Example:
        >>> tokens("用户偏好使用Java编写后端")
        ['用', '户', '偏', '好', '使', '用', 'Java', '编', '写', '后', '端']
        >>> tokens("Use pandas.read_csv(encoding='utf-8-sig')")[:3]
        ['Use', ' ', 'pandas.read_csv']
    """
    return _TOKEN.findall(text)


def changes(old: str, new: str) -> list[Change]:
    """The runs that turn ``old`` into ``new``: kept, removed and added text, in reading order.

    Example:
        >>> changes("按月统计", "按周统计")
        [('equal', '按'), ('removed', '月'), ('added', '周'), ('equal', '统计')]
    """
    a, b = tokens(old), tokens(new)
    out: list[Change] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("equal", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("removed", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(("added", "".join(b[j1:j2])))
    return out
