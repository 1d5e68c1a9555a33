"""A memory's versions compared in the console: the shared word diff (:mod:`langchain_hindsight._diff`) as HTML.

What changed is wrapped in ``<del>`` and ``<ins>``; every piece of text is escaped.
"""

from __future__ import annotations

from markupsafe import Markup, escape

from langchain_hindsight._diff import changes

__all__ = ["word_diff"]

_TAGS = {"removed": "del", "added": "ins"}


def word_diff(old: str, new: str) -> Markup:
    """``new`` with the text removed from ``old`` in ``<del>`` and the added text in ``<ins>``.

    Example:
        >>> str(word_diff("按月统计", "按周统计"))
        '按<del>月</del><ins>周</ins>统计'
    """
    return Markup(
        "".join(
            str(escape(text)) if kind == "equal" else f"<{_TAGS[kind]}>{escape(text)}</{_TAGS[kind]}>"
            for kind, text in changes(old, new)
        )
    )
