"""Small text helpers every layer shares.

:func:`clip_text` is the one way the package shortens a text (prompts,
trajectories, review lines): head and tail are kept, and a marker records the
cut in the text itself, so a clipped error message still shows how it ended.
:func:`clean_feedback` reads the correction out of a user's feedback (used when
it becomes a memory, and when forgetting that memory erases the comment).
"""

from __future__ import annotations

import re

from langchain_hindsight.prompts import REFLECTION_ZH

__all__ = ["clean_feedback", "clip_text"]

_ACK = re.compile(
    r"^(?:好的?|好滴|谢谢(?:你)?|多谢|感谢|可以|没问题|很好|不错|收到|ok(?:ay)?|thanks?(?: you)?|thx|great|good|nice|"
    r"perfect|cool|fine|yes|yep|👍)[\s!！。.~～]*$",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"^(?:不对|不是这样|不是|错了|不正确|不行|no|nope|wrong|incorrect|that'?s (?:wrong|not right|incorrect))"
    r"(?=[\s,，。.!！:：;；]|$)[\s,，。.!！:：;；]*",
    re.IGNORECASE,
)


def clip_text(text: str, limit: int, marker: str = REFLECTION_ZH.truncation_marker) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` characters, keeping head and tail; returns ``(text, was_cut)``.

    Two thirds of ``limit`` come from the head, the rest from the tail. The
    marker (``{cut}`` = characters removed) records the cut in the text itself;
    a marker without ``{cut}`` (``"…"``) is inserted as is.

    Example:
        >>> clip_text("a" * 50 + "b" * 50, 20, " [{cut} cut] ")
        ('aaaaaaaaaaaaa [80 cut] bbbbbbb', True)
        >>> clip_text("生成本周的销售周报并发送给经理", 9, "…")
        ('生成本周的销…给经理', True)
        >>> clip_text("short", 10)
        ('short', False)
    """
    if len(text) <= limit:
        return text, False
    head = (limit * 2) // 3
    tail = limit - head
    cut = len(text) - head - tail
    return text[:head] + marker.format(cut=cut) + (text[-tail:] if tail else ""), True


def clean_feedback(text: str) -> str | None:
    """The correction in a piece of user feedback, or ``None`` for a bare acknowledgement.

    Example:
        >>> clean_feedback("不对，应该用utf-8-sig"), clean_feedback("No, you should use gbk."), clean_feedback("谢谢！")
        ('应该用utf-8-sig', 'you should use gbk.', None)
    """
    text = " ".join(text.split())
    if not text or _ACK.match(text):
        return None
    stripped = _NEGATION.sub("", text, count=1).strip()
    return stripped or text
