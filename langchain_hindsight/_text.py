"""Text clipping: the one way the package shortens a text (prompts, trajectories, review lines).

Head and tail are kept, and a marker records the cut in the text itself, so a
clipped error message still shows how it ended.
"""

from __future__ import annotations

from langchain_hindsight.prompts import REFLECTION_ZH

__all__ = ["clip_text"]


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
